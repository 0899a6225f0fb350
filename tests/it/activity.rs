//! The fleet's recent activity (`GET /api/activity`) against the simulated platform: newest
//! first within the last day, and a canary aborted through Tower's canary actions at the top
//! as soon as the Rollout says so.

use std::time::Duration;

use hangar_sim::stories::fleet::PAUSED_CANARY;
use serde_json::Value;

use crate::support::{eventually, Live};

fn at(item: &Value) -> chrono::DateTime<chrono::Utc> {
    item["at"].as_str().unwrap().parse().unwrap()
}

#[tokio::test]
async fn an_aborted_canary_tops_the_fleets_activity() {
    let tower = Live::start(0.0).await.unwrap();
    let asked = crate::canary_actions::abort_the_paused_canary(&tower).await;
    let is_abort = |i: &Value| i["kind"] == "canary-aborted" && i["service"] == PAUSED_CANARY;
    let activity: Value = eventually(
        Duration::from_secs(20),
        "the abort in the activity",
        || async {
            let (_, activity) = tower.get("/api/activity").await.ok()?;
            activity["items"]
                .as_array()?
                .iter()
                .any(is_abort)
                .then_some(activity)
        },
    )
    .await
    .unwrap();
    let items = activity["items"].as_array().unwrap();
    // The newest: only what happened the same second (another app's release arriving then,
    // by name) comes before it.
    let place = items.iter().position(is_abort).unwrap();
    let aborted = &items[place];
    assert!(
        items[..place].iter().all(|i| at(i) == at(aborted)),
        "{items:?}"
    );
    assert_eq!(
        (aborted["environment"].as_str(), aborted["tab"].as_str()),
        (Some("prod"), Some("deployments"))
    );
    assert_eq!(
        aborted["said"],
        format!("{PAUSED_CANARY}'s canary in prod was aborted: traffic is back on stable.")
    );
    // When the abort was asked (the world stood still since; the Rollout says it to the
    // second).
    assert_eq!(at(aborted).timestamp(), asked.timestamp());
    // Newest first, within the last day, at most fifty.
    let now = tower.world_now();
    assert!(items.len() <= 50 && items.len() > 10, "{}", items.len());
    for pair in items.windows(2) {
        assert!(at(&pair[0]) >= at(&pair[1]), "{pair:?}");
    }
    assert!(items
        .iter()
        .all(|i| at(i) <= now && at(i) >= now - chrono::Duration::hours(24)));
    // Releases arriving are there too: a fleet this size has some every day. Which kind
    // (reaching an environment that promotes at once, or starting a canary) the newest
    // fifty hold depends on the hour the world is seen at, so either will do.
    let kinds: std::collections::BTreeSet<&str> =
        items.iter().map(|i| i["kind"].as_str().unwrap()).collect();
    assert!(
        kinds.contains("promoted") || kinds.contains("canary-started"),
        "no release arriving in {kinds:?}"
    );

    // Unchanged, not sent again.
    let response = tower
        .client()
        .get(tower.url("/api/activity"))
        .send()
        .await
        .unwrap();
    let etag = response.headers()["etag"].clone();
    assert_eq!(tower.revalidate("/api/activity", &etag).await, 304);
}
