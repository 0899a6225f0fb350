//! The release matrix across environments, with one next step each.

use super::*;

/// `/api/releases` reads each release across the environments and offers one next step:
/// before the canary app's prod rollout its newest release is live in dev and staging and
/// goes to prod by a pull request; once the rollout starts it is the canary there and goes
/// nowhere else. 304 while nothing changes.
#[tokio::test]
async fn releases_read_across_environments_with_one_next_step() {
    use hangar_sim::stories::fleet::Role;
    let tower = frozen().await;
    let app = crate::support::fleet_app(Role::CompletingCanary);
    let start = app.prod_rollout_at(tower.world_now());
    tower.advance_world((start - tower.world_now()).num_seconds() - 600);
    let path = format!("/api/releases?service={}", app.name);
    let image = app.prod_image(start);
    let newest = |body: &Value| body["releases"][0].clone();
    let before = eventually(
        Duration::from_secs(10),
        "the release in staging",
        || async {
            let (_, body) = tower.get(&path).await.ok()?;
            (newest(&body)["image"] == image.as_str()
                && newest(&body)["cells"][1]["state"] == "live")
                .then_some(body)
        },
    )
    .await
    .unwrap();
    assert_eq!(before["environments"], json!(["dev", "staging", "prod"]));
    let row = newest(&before);
    let states: Vec<&str> = row["cells"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["state"].as_str().unwrap())
        .collect();
    assert_eq!(states, ["live", "live", "not-yet"], "{row}");
    // It arrived in dev, then staging, after its build: Argo CD's syncs that brought it.
    let at =
        |v: &Value| -> chrono::DateTime<chrono::Utc> { serde_json::from_value(v.clone()).unwrap() };
    let (built, dev, staging) = (
        at(&row["builtAt"]),
        at(&row["cells"][0]["arrivedAt"]),
        at(&row["cells"][1]["arrivedAt"]),
    );
    assert!(built < dev && dev < staging, "{row}");
    assert!(row["cells"][2]["arrivedAt"].is_null(), "{row}");
    assert_eq!(
        row["next"],
        json!({"environment": "prod", "how": "pull-request"})
    );
    assert!(row["run"].is_string() && row["commit"].is_string(), "{row}");
    let tag = tower_shared::image::tag(&image).unwrap();
    assert_eq!(
        format!(
            "{}-{}",
            row["version"].as_str().unwrap(),
            row["shortSha"].as_str().unwrap()
        ),
        tag
    );
    // The release before runs in prod; every older row goes nowhere.
    let live_in_prod = before["releases"]
        .as_array()
        .unwrap()
        .iter()
        .position(|r| r["cells"][2]["state"] == "live")
        .expect("a release live in prod");
    assert!(live_in_prod > 0);
    for older in &before["releases"].as_array().unwrap()[1..] {
        assert!(older["next"].is_null(), "{older}");
    }
    // Unchanged: 304.
    let response = tower.client().get(tower.url(&path)).send().await.unwrap();
    let etag = response.headers()["etag"].clone();
    assert_eq!(
        tower.revalidate(&path, &etag).await,
        StatusCode::NOT_MODIFIED
    );

    // The prod rollout starts: the canary at 20 %, nowhere further to go.
    tower.advance_world(660);
    let after = eventually(Duration::from_secs(10), "the canary in prod", || async {
        let (_, body) = tower.get(&path).await.ok()?;
        (newest(&body)["cells"][2]["state"] == "canary").then_some(body)
    })
    .await
    .unwrap();
    assert_eq!(newest(&after)["cells"][2]["weight"], 20, "{after}");
    assert!(newest(&after)["next"].is_null());

    let (status, body) = tower
        .get("/api/releases?service=no-such-service")
        .await
        .unwrap();
    assert_eq!(
        (status, body["field"].as_str()),
        (StatusCode::NOT_FOUND, Some("service"))
    );
}
