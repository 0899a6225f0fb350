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
