//! DORA's four keys over the routes and the command line: the demo fleet's aborted canary
//! counted as its one failure, each figure with what it counted, the week of
//! `fixtures/dora/week.json` worked out by hand, and bad input refused by name.

use std::process::Command;
use std::time::Duration;

use hangar_sim::stories::fleet::Role;
use serde_json::Value;

use crate::support::{eventually, fleet_app, prod_rollout, root, tower_bin, Live};

#[tokio::test]
async fn the_fleet_counts_the_aborted_canary_as_its_failure_and_lists_what_it_counted() {
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
        (body["failed"] == serde_json::json!([canary])).then_some(body)
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
    // The aborted one did not go live; every other ended one did, and each is listed.
    let live: Vec<&str> = rollouts
        .iter()
        .filter(|r| r["outcome"] == "live")
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
    let ended = app["ended"].as_u64().unwrap();
    let rate = app["changeFailureRate"].as_f64().unwrap();
    assert!((rate - 1.0 / ended as f64).abs() < 1e-9, "{app}");
    // Its time to restore: the canary's start to its abort (the third failed measurement
    // a minute after the second, 121 s in).
    let restore = &app["timeToRestore"];
    assert_eq!(restore["medianSec"], 121, "{app}");
    assert!(app["sentence"]
        .as_str()
        .unwrap()
        .contains(&format!("1 of {ended} rollouts that ended failed")));
    // Every change counted names its pull request, and its release went live in the week.
    for change in app["changes"].as_array().unwrap() {
        assert!(
            deployed.contains(&change["release"].as_str().unwrap()),
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
    assert!(fleet["failed"]
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

/// The week `shared::dora`'s unit test works out by hand, through `tower dora`: the same
/// figures for the app and for the fleet it is the only app of.
#[test]
fn tower_dora_reads_a_snapshot_week_as_worked_out_by_hand() {
    let week = root().join("fixtures/dora/week.json");
    let week = week.to_str().unwrap();
    for args in [
        vec!["dora", "--snapshot", week, "--service", "shop"],
        vec!["dora", "--snapshot", week],
    ] {
        let (code, answer, stderr) = tower(&args);
        assert_eq!(code, 0, "{args:?}: {stderr}");
        assert_eq!(answer["deployed"].as_array().unwrap().len(), 3);
        assert_eq!(answer["leadTime"]["medianSec"], 3600);
        assert_eq!(answer["leadTime"]["p90Sec"], 6000);
        assert_eq!(answer["changeFailureRate"], 0.5);
        assert_eq!(answer["timeToRestore"]["medianSec"], 1200);
        assert_eq!(answer["timeToRestore"]["p90Sec"], 3600);
        assert_eq!(answer["rollouts"].as_array().unwrap().len(), 5);
    }
    let (code, _, stderr) = tower(&["dora", "--snapshot", week, "--days", "31"]);
    assert_eq!(code, 2);
    assert!(stderr.contains("--days"), "{stderr}");
    let (code, _, stderr) = tower(&["dora", "--snapshot", week, "--service", "nobody"]);
    assert_ne!(code, 0);
    assert!(stderr.contains("no service called nobody"), "{stderr}");
}
