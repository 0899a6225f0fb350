//! The Pull requests tab: each stitched to its runs, image and environments.

use super::*;

/// `/api/pulls` stitches each pull request by commit: an open one to the runs of its head,
/// a merged one to the image its merge commit built and the environments running it — the
/// canary app's newest merge is the canary in prod. Pages by cursor; 304 when unchanged.
#[tokio::test]
async fn pull_requests_are_stitched_to_their_runs_images_and_environments() {
    use hangar_sim::stories::fleet::Role;
    let tower = frozen().await;
    let service = crate::support::busy_app();
    let path = format!("/api/pulls?service={service}&limit=100");
    let first = eventually(
        Duration::from_secs(15),
        "the busy app's PRs read",
        || async {
            let (status, body) = tower.get(&path).await.ok()?;
            assert_eq!(status, StatusCode::OK, "{body}");
            (body["read"] == true && body["total"].as_u64()? > 3).then_some(body)
        },
    )
    .await
    .unwrap();
    let pulls = first["pulls"].as_array().unwrap();
    assert_eq!(first["total"].as_u64().unwrap() as usize, pulls.len());
    let mut created: Vec<&str> = pulls
        .iter()
        .map(|p| p["createdAt"].as_str().unwrap())
        .collect();
    let sorted = {
        let mut s = created.clone();
        s.sort_by(|a, b| b.cmp(a));
        s
    };
    assert_eq!(created, sorted, "newest first");
    created.dedup();
    // The open PR's head is the newest pull-request run's commit.
    let open = pulls
        .iter()
        .find(|p| p["state"] == "open" && p["repo"] == format!("acme/{service}").as_str())
        .expect("an open PR on the source repo");
    let (_, runs) = tower
        .get(&format!(
            "/api/pipelines?service={service}&pipeline=pull-request&limit=1"
        ))
        .await
        .unwrap();
    assert_eq!(open["headSha"], runs["runs"][0]["commit"], "{open}");
    assert_eq!(open["checks"][0]["run"], runs["runs"][0]["name"], "{open}");
    assert!(open["branch"].as_str().unwrap().starts_with("feature-"));
    // Each merged PR: its build's image, running somewhere.
    let merged: Vec<&Value> = pulls
        .iter()
        .filter(|p| p["state"] == "merged" && p["repo"] == format!("acme/{service}").as_str())
        .collect();
    assert_eq!(merged.len(), 3, "the newest three releases");
    // A merge's build publishes its image once it has had time to finish; until then the
    // pull request names the build that is making it (the world may start mid-build).
    let merged_at = |pr: &Value| -> chrono::DateTime<chrono::Utc> {
        serde_json::from_value(pr["endedAt"].clone()).unwrap()
    };
    let mut building = None;
    for pr in &merged {
        assert_eq!(pr["build"]["pipeline"], "build", "{pr}");
        match pr["image"].as_str() {
            Some(image) => {
                assert!(image.contains(&format!("/{service}:")), "{image}");
                assert_eq!(pr["build"]["outcome"], "succeeded", "{pr}");
            }
            None => {
                let since = tower.world_now() - merged_at(pr);
                assert!(
                    pr["build"]["outcome"] == "running"
                        && since
                            < chrono::Duration::seconds(hangar_sim::stories::fleet::BUILD_TAKES),
                    "no image, and no build making it: {pr}"
                );
                assert!(
                    building.replace(pr["number"].clone()).is_none(),
                    "one build at a time"
                );
            }
        }
        assert_eq!(
            pr["checks"],
            json!([]),
            "a merge's head ran no pipeline here"
        );
    }
    assert!(
        building.is_some()
            || merged[0]["landed"]
                .as_array()
                .unwrap()
                .iter()
                .any(|l| l["environment"] == "dev"),
        "the newest merge runs in dev: {}",
        merged[0]
    );

    // Showing them had their reviews and checks read: GitHub's review decision, and the
    // checks besides Pipelines-as-Code's own (whose runs are the Tekton runs above).
    let shown = eventually(
        Duration::from_secs(15),
        "reviews and checks read",
        || async {
            let (_, body) = tower.get(&path).await.ok()?;
            let pulls = body["pulls"].as_array()?.clone();
            pulls
                .iter()
                .all(|p| !p["review"].is_null() && !p["githubChecks"].is_null())
                .then_some(pulls)
        },
    )
    .await
    .unwrap();
    let now = tower.world_now();
    for pr in &shown {
        let number = pr["number"].as_u64().unwrap();
        let created: chrono::DateTime<chrono::Utc> =
            serde_json::from_value(pr["createdAt"].clone()).unwrap();
        let minutes = (now - created).num_minutes();
        let merged = pr["state"] == "merged";
        let open = pr["state"] == "open" || pr["state"] == "draft";
        // The simulated reviewers' rule (hangar_sim::github): by the number, in time.
        let expected = match number % 4 {
            0 if minutes >= 25 => "approved",
            1 if merged => "approved",
            1 if minutes >= 10 => "changes-requested",
            2 if merged => "approved",
            2 if open => "review-required",
            3 if minutes >= 10 => "approved",
            _ => "unreviewed",
        };
        assert_eq!(pr["review"], expected, "{pr}");
        let checks: Vec<&str> = pr["githubChecks"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["name"].as_str().unwrap())
            .collect();
        assert_eq!(checks, ["commitlint", "dco"], "{pr}");
    }

    // Pages of ten: every PR once, in order.
    let mut seen = Vec::new();
    let mut page = format!("/api/pulls?service={service}&limit=10");
    for _ in 0..20 {
        let (_, body) = tower.get(&page).await.unwrap();
        for pr in body["pulls"].as_array().unwrap() {
            seen.push(format!("{}#{}", pr["repo"], pr["number"]));
        }
        match body["next"].as_str() {
            Some(next) => page = format!("/api/pulls?service={service}&limit=10&continue={next}"),
            None => break,
        }
    }
    let all: Vec<String> = pulls
        .iter()
        .map(|p| format!("{}#{}", p["repo"], p["number"]))
        .collect();
    assert_eq!(seen, all);

    // Unchanged: 304.
    let response = tower.client().get(tower.url(&path)).send().await.unwrap();
    let etag = response.headers()["etag"].clone();
    assert_eq!(
        tower.revalidate(&path, &etag).await,
        StatusCode::NOT_MODIFIED
    );
    // A webhook names the repo: Tower asks GitHub again, with the ETag, and an unchanged
    // repo answers 304 (no rate limit spent).
    let github = tower.live.github().unwrap();
    let before = github.counters();
    tower.live.github_changed(&format!("acme/{service}"));
    eventually(
        Duration::from_secs(10),
        "GitHub's 304 for the repo",
        || async { (github.counters().not_modified > before.not_modified).then_some(()) },
    )
    .await
    .unwrap();

    // The build still making its image, had the world started mid-build, publishes it.
    if let Some(number) = building {
        tower.advance_world(hangar_sim::stories::fleet::BUILD_TAKES);
        let path = format!("/api/pulls?service={service}&limit=100");
        let built = eventually(Duration::from_secs(15), "the build's image", || async {
            let (_, body) = tower.get(&path).await.ok()?;
            body["pulls"]
                .as_array()?
                .iter()
                .find(|p| p["number"] == number && p["repo"] == format!("acme/{service}").as_str())
                .filter(|p| p["image"].is_string())
                .cloned()
        })
        .await
        .unwrap();
        assert_eq!(built["build"]["outcome"], "succeeded", "{built}");
    }

    // The canary app a minute into its prod rollout: its newest merge is live in dev and
    // staging and the canary at 20 % in prod.
    let canary = crate::support::fleet_app(Role::CompletingCanary);
    let start = canary.prod_rollout_at(tower.world_now());
    tower.advance_world((start - tower.world_now()).num_seconds() + 60);
    let path = format!("/api/pulls?service={}", canary.name);
    let landed = eventually(
        Duration::from_secs(15),
        "the canary's merge in prod",
        || async {
            let (_, body) = tower.get(&path).await.ok()?;
            body["pulls"]
                .as_array()?
                .iter()
                .filter(|p| p["state"] == "merged")
                .find_map(|p| {
                    let landed = p["landed"].as_array()?;
                    // The new release's (the one before may still be walking in as the
                    // world catches up with the clock).
                    landed
                        .iter()
                        .any(|l| {
                            l["environment"] == "prod" && l["canary"] == true && l["weight"] == 20
                        })
                        .then(|| landed.clone())
                })
        },
    )
    .await
    .unwrap();
    let prod = landed.iter().find(|l| l["environment"] == "prod").unwrap();
    assert_eq!(prod["weight"], 20, "{landed:?}");
    assert!(
        landed
            .iter()
            .any(|l| l["environment"] == "dev" && l["canary"] == false),
        "{landed:?}"
    );

    for (query, code, field) in [
        (
            format!("service={service}&limit=0"),
            StatusCode::BAD_REQUEST,
            "limit",
        ),
        (
            format!("service={service}&continue=yesterday"),
            StatusCode::BAD_REQUEST,
            "continue",
        ),
        (
            "service=no-such-service".to_owned(),
            StatusCode::NOT_FOUND,
            "service",
        ),
        (
            "service=Bad_Name".to_owned(),
            StatusCode::BAD_REQUEST,
            "service",
        ),
    ] {
        let (status, body) = tower.get(&format!("/api/pulls?{query}")).await.unwrap();
        assert_eq!(
            (status, body["field"].as_str()),
            (code, Some(field)),
            "{query}: {body}"
        );
    }
}
