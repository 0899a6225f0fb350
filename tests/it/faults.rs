//! GitHub misbehaving, injected into the simulated GitHub: rate limits with and without
//! `retry-after`, and a plain 403. Tower asks once, does not ask again inside the wait
//! window (answering 503 with `Retry-After`, which the UI shows as "rate limited"), and asks
//! again after it.

use std::time::Duration;

use hangar_sim::github::Fault;
use reqwest::StatusCode;

use crate::support::Live;

#[tokio::test]
async fn github_rate_limits_are_waited_out_not_hammered() {
    let tower = Live::start(0.0).await.unwrap();
    for (fault, wait, repo) in [
        (Fault::TooManyRequests { retry_after: 2 }, 2, "orders-api"),
        (Fault::RateLimitSpent { reset_in: 2 }, 2, "thumbnailer"),
    ] {
        let path = format!("/pull-requests?owner=acme&repo={repo}");
        // Tower's own poller may be the one that meets the fault: either way, exactly one
        // request reaches GitHub until the window ends.
        let total = || tower.world.platform.github_requests().len();
        let before = total();
        tower.world.platform.inject_github_fault(fault, 1);
        let response = tower.client().get(tower.url(&path)).send().await.unwrap();
        assert_eq!(
            response.status(),
            StatusCode::SERVICE_UNAVAILABLE,
            "{fault:?}"
        );
        let retry_after: u64 = response.headers()["retry-after"]
            .to_str()
            .unwrap()
            .parse()
            .unwrap();
        assert!(
            (1..=wait + 1).contains(&retry_after),
            "{fault:?}: retry-after {retry_after}"
        );
        let body: serde_json::Value = response.json().await.unwrap();
        assert!(
            body["error"].as_str().unwrap().contains("rate limit"),
            "{body}"
        );
        assert_eq!(total() - before, 1, "{fault:?}: one attempt, no retries");

        // Inside the window Tower does not ask GitHub at all.
        for other in ["nobody-polls-this", "gitops-orders-api", "hangar-tenants"] {
            let response = tower
                .client()
                .get(tower.url(&format!("/pull-requests?owner=acme&repo={other}")))
                .send()
                .await
                .unwrap();
            // Cached answers are still served; uncached ones wait.
            assert!(
                [StatusCode::OK, StatusCode::SERVICE_UNAVAILABLE].contains(&response.status()),
                "{fault:?} {other}: {}",
                response.status()
            );
        }
        assert_eq!(
            total() - before,
            1,
            "{fault:?}: asked inside the wait window"
        );

        // After it, Tower asks again and answers.
        tokio::time::sleep(Duration::from_millis(wait * 1000 + 300)).await;
        let response = tower.client().get(tower.url(&path)).send().await.unwrap();
        assert_eq!(
            response.status(),
            StatusCode::OK,
            "{fault:?}: after the window"
        );
    }

    // A 403 that is not a rate limit is an error, and does not stop other lookups.
    tower
        .world
        .platform
        .inject_github_fault(Fault::Forbidden, 1);
    let response = tower
        .client()
        .get(tower.url("/pull-requests?owner=acme&repo=events-bus"))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::BAD_GATEWAY);
    let response = tower
        .client()
        .get(tower.url("/pull-requests?owner=acme&repo=events-bus-2"))
        .send()
        .await
        .unwrap();
    assert_ne!(response.status(), StatusCode::SERVICE_UNAVAILABLE);
}

/// Reads an SSE stream until an event named `name` whose data contains `needle` arrives.
async fn next_event(
    response: &mut reqwest::Response,
    seen: &mut String,
    name: &str,
    needle: &str,
    limit: Duration,
) -> Option<serde_json::Value> {
    tokio::time::timeout(limit, async {
        loop {
            let found = seen
                .split("\n\n")
                .filter_map(|event| {
                    let mut lines = event.lines();
                    let named = lines.next()? == format!("event: {name}");
                    let data = lines.find_map(|l| l.strip_prefix("data: "))?;
                    (named && data.contains(needle)).then(|| data.to_owned())
                })
                .next();
            if let Some(data) = found {
                // Consume what was matched so the next call waits for a new event.
                seen.clear();
                return serde_json::from_str(&data).ok();
            }
            let chunk = response.chunk().await.ok()??;
            seen.push_str(&String::from_utf8_lossy(&chunk));
        }
    })
    .await
    .ok()
    .flatten()
}

#[tokio::test]
async fn a_github_rate_limit_is_reported_with_the_data_not_instead_of_it() {
    let tower = Live::start(0.0).await.unwrap();
    let (_, before) = tower.get("/api/provisioning").await.unwrap();
    assert!(before.get("github").is_none(), "{before}");
    let services = before["services"].as_array().unwrap().len();
    assert!(services > 0);

    let mut events = tower
        .client()
        .get(tower.url("/api/events"))
        .send()
        .await
        .unwrap();
    let mut seen = String::new();
    // The limit, met by any lookup: here a repo nobody asked about yet.
    tower
        .world
        .platform
        .inject_github_fault(Fault::RateLimitSpent { reset_in: 12 }, 1);
    let response = tower
        .client()
        .get(tower.url("/pull-requests?owner=acme&repo=never-asked"))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::SERVICE_UNAVAILABLE);

    // Pages are told at once (the poller's next pass, every 5 s) …
    let event = next_event(
        &mut events,
        &mut seen,
        "github",
        "rateLimited",
        Duration::from_secs(8),
    )
    .await
    .unwrap_or_else(|| panic!("no github event: {seen}"));
    assert_eq!(event["state"], "rateLimited", "{event}");
    // … and every answer the pages read carries it beside the last known data.
    let (_, during) = tower.get("/api/provisioning").await.unwrap();
    assert_eq!(during["github"]["state"], "rateLimited", "{during}");
    // On Tower's clock, like the answer's `now` (the simulated world's here, frozen).
    let at = |v: &serde_json::Value| -> chrono::DateTime<chrono::Utc> {
        serde_json::from_value(v.clone()).unwrap()
    };
    let ahead = (at(&during["github"]["until"]) - at(&during["now"])).num_seconds();
    assert!((1..=12).contains(&ahead), "{during}: {ahead} s ahead");
    assert_eq!(during["services"].as_array().unwrap().len(), services);
    let (_, snapshot) = tower.get("/api/snapshot?service=orders-api").await.unwrap();
    assert_eq!(snapshot["github"]["state"], "rateLimited", "{snapshot}");
    assert!(snapshot["pullRequests"].is_array(), "last known PRs kept");

    // When the window ends the pages hear that too, and the answers are clear again.
    let event = next_event(
        &mut events,
        &mut seen,
        "github",
        "{}",
        Duration::from_secs(20),
    )
    .await
    .unwrap_or_else(|| panic!("no all-clear: {seen}"));
    assert_eq!(event, serde_json::json!({}));
    let (_, after) = tower.get("/api/provisioning").await.unwrap();
    assert!(after.get("github").is_none(), "{after}");
}
