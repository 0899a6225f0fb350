//! DORA's four keys over the routes and the command line: the demo fleet's aborted canary
//! counted as a failure prevented (not a change failure), each figure with what it counted,
//! the weeks of `fixtures/dora/` worked out by hand, and bad input refused by name.

use std::process::Command;
use std::time::Duration;

use hangar_sim::stories::fleet::Role;
use serde_json::Value;

use crate::support::{eventually, fleet_app, prod_rollout, root, tower_bin, Live};

#[tokio::test]
async fn the_fleet_counts_the_aborted_canary_as_a_failure_prevented_and_lists_what_it_counted() {
    let tower = Live::start(0.0).await.unwrap();
    let aborting = fleet_app(Role::AbortedCanary).name;
    // The world stands still: when its canary is still measuring, move it past the third
    // failed measurement, which aborts it (two minutes).
    let deployments = format!("/api/deployments?service={aborting}");
    let (_, body) = tower.get(&deployments).await.unwrap();
    if prod_rollout(&body)["aborted"] != true {
        tower.advance_world(180);
    }
    let canary: String = eventually(
        Duration::from_secs(30),
        "the aborting app's prod canary aborted",
        || async {
            let (_, body) = tower.get(&deployments).await.ok()?;
            let rollout = prod_rollout(&body);
            (rollout["aborted"] == true).then(|| {
                let image = rollout["canary"]["image"].as_str().unwrap_or_default();
                image.split('@').next().unwrap_or_default().to_owned()
            })
        },
    )
    .await
    .unwrap();

    let app: Value = eventually(Duration::from_secs(30), "its DORA figures", || async {
        let (_, body) = tower
            .get(&format!("/api/dora?service={aborting}"))
            .await
            .ok()?;
        (body["prevented"] == serde_json::json!([canary])).then_some(body)
    })
    .await
    .unwrap();
    assert_eq!(
        (app["service"].as_str(), app["days"].as_u64()),
        (Some(&*aborting), Some(7))
    );
    let rollouts = app["rollouts"].as_array().unwrap();
    let aborted: Vec<&Value> = rollouts
        .iter()
        .filter(|r| r["outcome"] == "aborted")
        .collect();
    assert_eq!(aborted.len(), 1, "{rollouts:?}");
    assert_eq!(aborted[0]["release"], canary.as_str());
    // The aborted one never went live; every release that went live is listed with when.
    assert_eq!(aborted[0]["liveAt"], Value::Null);
    let live: Vec<&str> = rollouts
        .iter()
        .filter(|r| r["liveAt"].is_string())
        .map(|r| r["release"].as_str().unwrap())
        .collect();
    let deployed: Vec<&str> = app["deployed"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r.as_str().unwrap())
        .collect();
    for release in &deployed {
        assert!(
            live.contains(release),
            "{release} deployed but not listed live"
        );
    }
    // Prod never took it: no change failed, nothing was restored.
    let went_live = deployed.len();
    assert!(went_live > 0, "{app}");
    assert_eq!(app["failed"], serde_json::json!([]), "{app}");
    assert_eq!(app["changeFailureRate"], 0.0, "{app}");
    assert_eq!(app["timeToRestore"], Value::Null, "{app}");
    let sentence = app["sentence"].as_str().unwrap();
    assert!(
        sentence.contains(&format!("0 of {went_live} rolled back (0 %)"))
            && sentence.ends_with("1 canary was stopped before it went live."),
        "{sentence}"
    );
    // Every change counted names its pull request, and its release went live in the week.
    for change in app["changes"].as_array().unwrap() {
        assert!(
            change["release"]
                .as_str()
                .is_some_and(|release| deployed.contains(&release)),
            "{change}"
        );
        assert!(
            change["url"].as_str().unwrap().contains("/pull/"),
            "{change}"
        );
    }

    // The fleet's: the same failure among every app's rollouts.
    let (status, fleet) = tower.get("/api/dora?days=7").await.unwrap();
    assert_eq!(status, 200, "{fleet}");
    assert_eq!(fleet["service"], Value::Null);
    assert!(fleet["prevented"]
        .as_array()
        .unwrap()
        .contains(&Value::from(canary.as_str())));
    let apps: std::collections::BTreeSet<&str> = fleet["rollouts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["service"].as_str().unwrap())
        .collect();
    assert!(apps.len() > 5, "{apps:?}");
    assert!(
        fleet["leadTime"]["medianSec"].as_i64().unwrap() > 0,
        "{fleet}"
    );

    // Unchanged, not sent again.
    let path = format!("/api/dora?service={aborting}");
    let response = tower.client().get(tower.url(&path)).send().await.unwrap();
    let etag = response.headers()["etag"].clone();
    assert_eq!(tower.revalidate(&path, &etag).await, 304);
}

/// The backend asks GitHub to compare each pair of an app's prod releases that went live one
/// after the other — once per pair, ever (a pair's answer never changes) — and counts the
/// changes each brought by ancestry.
#[tokio::test]
async fn the_backend_compares_consecutive_prod_releases_once_each() {
    let tower = Live::start(0.0).await.unwrap();
    let app = fleet_app(Role::AbortedCanary).name;
    let path = format!("/api/dora?service={app}&days=30");
    // The pairs, from the releases that went live, in the order prod took them.
    let (_, answer) = tower.get(&path).await.unwrap();
    let mut live: Vec<(&str, &str)> = answer["rollouts"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|r| Some((r["liveAt"].as_str()?, r["release"].as_str()?)))
        .collect();
    live.sort_unstable();
    let commits: Vec<&str> = live
        .iter()
        .filter_map(|(_, release)| tower_shared::image::commit(release))
        .collect();
    assert!(commits.len() > 1, "{answer}");
    let pairs: Vec<String> = commits
        .windows(2)
        .map(|pair| format!("/repos/acme/{app}/compare/{}...{}", pair[0], pair[1]))
        .collect();
    let asked = || -> Vec<String> {
        tower
            .world
            .platform
            .github_requests()
            .into_iter()
            .map(|(_, path)| path)
            .filter(|path| path.contains("/compare/"))
            .collect()
    };
    // (Eight apps' pairs looked at per 5 s poll, four asked: the fleet's 31 apps in turn.)
    eventually(Duration::from_secs(120), "every pair compared", || async {
        let asked = asked();
        pairs.iter().all(|pair| asked.contains(pair)).then_some(())
    })
    .await
    .unwrap();
    // Every change counted names the release that brought it; the answer is the same as
    // the comparisons say once they are in.
    let counted: Value = eventually(
        Duration::from_secs(30),
        "the figures by ancestry",
        || async {
            let (_, answer) = tower.get(&path).await.ok()?;
            let changes = answer["changes"].as_array()?;
            (!changes.is_empty() && changes.iter().all(|c| c["release"].is_string()))
                .then_some(answer)
        },
    )
    .await
    .unwrap();
    assert!(
        counted["leadTime"]["medianSec"].as_i64().unwrap() > 0,
        "{counted}"
    );
    let asked = asked();
    for pair in &pairs {
        assert_eq!(
            asked.iter().filter(|path| *path == pair).count(),
            1,
            "{pair} asked more than once"
        );
    }
}

#[tokio::test]
async fn bad_questions_are_refused_by_name() {
    let tower = Live::start(0.0).await.unwrap();
    for (query, status, field) in [
        ("days=0", 400, "days"),
        ("days=31", 400, "days"),
        ("days=week", 400, "days"),
        ("service=Not_A_Name", 400, "service"),
        ("service=no-such-app", 404, "service"),
    ] {
        let (got, body) = tower.get(&format!("/api/dora?{query}")).await.unwrap();
        assert_eq!(
            (got.as_u16(), body["field"].as_str()),
            (status, Some(field)),
            "{query}: {body}"
        );
    }
}

fn tower(args: &[&str]) -> (i32, Value, String) {
    let out = Command::new(tower_bin()).args(args).output().unwrap();
    let json = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    (out.status.code().unwrap_or(-1), json, stderr)
}

/// The weeks `shared::dora`'s unit tests work out by hand, through `tower dora`: the same
/// figures for the app and for the fleet it is the only app of. Minutes from the week's start:
/// - `week.json`: 1.0, 1.2 and 1.3 went live at 60, 2000 and 2060 (1.2 replaced an hour
///   later: no failure), 1.1's canary was stopped; lead times 10, 60 and 100 minutes;
/// - `week-rolled-back.json`: the same, and prod went back from 1.3 to 1.2: 1 of 3 failed;
/// - `two-changes.json`: the same with #41 (built as the stopped 1.1) and #45 (never built
///   on its own) brought by 1.2, as GitHub's comparison of 1.0 and 1.2 lists them: lead
///   times 10, 50, 60, 100 and 700 minutes.
#[test]
fn tower_dora_reads_snapshot_weeks_as_worked_out_by_hand() {
    let path = |name: &str| {
        root()
            .join("fixtures/dora")
            .join(name)
            .to_str()
            .unwrap()
            .to_owned()
    };
    // (file, median and p90 lead time in minutes, change failure rate, changes counted)
    let weeks = [
        ("week.json", 60, 100, 0.0, 3),
        ("week-rolled-back.json", 60, 100, 1.0 / 3.0, 3),
        ("two-changes.json", 60, 700, 0.0, 5),
    ];
    for (name, median, p90, rate, changes) in weeks {
        let week = path(name);
        for args in [
            vec![
                "dora",
                "--snapshot",
                &week,
                "--service",
                "shop",
                "--days",
                "7",
            ],
            vec!["dora", "--snapshot", &week],
        ] {
            let (code, answer, stderr) = tower(&args);
            assert_eq!(code, 0, "{args:?}: {stderr}");
            assert_eq!(answer["deployed"].as_array().unwrap().len(), 3, "{name}");
            assert_eq!(answer["leadTime"]["medianSec"], median * 60, "{name}");
            assert_eq!(answer["leadTime"]["p90Sec"], p90 * 60, "{name}");
            assert_eq!(answer["changeFailureRate"], rate, "{name}");
            assert_eq!(answer["prevented"].as_array().unwrap().len(), 1, "{name}");
            // No rollback's end is kept by the cluster: no restore time is made up.
            assert_eq!(answer["timeToRestore"], Value::Null, "{name}");
            assert_eq!(answer["rollouts"].as_array().unwrap().len(), 5, "{name}");
            assert_eq!(
                answer["changes"].as_array().unwrap().len(),
                changes,
                "{name}"
            );
            assert!(
                answer["sentence"]
                    .as_str()
                    .unwrap()
                    .starts_with("Over the last 7 days (history covers 6d 23h of them): "),
                "{answer}"
            );
        }
    }
    let week = path("week.json");
    let week = week.as_str();
    let (code, _, stderr) = tower(&["dora", "--snapshot", week, "--days", "31"]);
    assert_eq!(code, 2);
    assert!(stderr.contains("--days"), "{stderr}");
    let (code, _, stderr) = tower(&["dora", "--snapshot", week, "--service", "nobody"]);
    assert_ne!(code, 0);
    assert!(stderr.contains("no service called nobody"), "{stderr}");
}
