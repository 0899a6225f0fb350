//! Dependencies misbehaving, with faults injected into the simulated platform.
//!
//! - GitHub: rate limits with and without `retry-after`, and a plain 403. Tower asks once,
//!   does not ask again inside the wait window (answering 503 with `Retry-After`), asks
//!   again after it, and tells the pages (`github` beside the data, and an event).
//! - Kubernetes: the control plane's API away for minutes while the world moves on: every
//!   read keeps answering from the watch cache marked stale, and Tower is fresh and caught
//!   up within one backoff period of its return. A hung API server (connections accepted,
//!   nothing answered) is marked stale within the probe's own deadline. A kind Tower has no
//!   RBAC grant for is read as absent: no stale mark, ready, no list loop.

use std::collections::BTreeSet;
use std::time::Duration;

use hangar_sim::github::Fault;
use reqwest::StatusCode;

use crate::support::{eventually, Live};

#[tokio::test]
async fn github_rate_limits_are_waited_out_not_hammered() {
    let tower = Live::start(0.0).await.unwrap();
    // GitOps infra repos of the fleet's apps: Tower's poller reads apps' source and GitOps
    // repos, never these, so the read below is the one that meets the fault (which then
    // refuses every request until it ends, as GitHub does).
    for (fault, wait, repo) in [
        (
            Fault::TooManyRequests { retry_after: 2 },
            2,
            "gitops-infra-billing",
        ),
        (
            Fault::RateLimitSpent { reset_in: 2 },
            2,
            "gitops-infra-checkout",
        ),
    ] {
        let path = format!("/pull-requests?owner=acme&repo={repo}");
        let asked = |since: std::time::Instant, about: Option<&str>| {
            let requests = tower.world.platform.github_requests();
            requests
                .iter()
                .filter(|(at, path)| *at >= since && about.is_none_or(|r| path.contains(r)))
                .count()
        };
        let about = format!("/{repo}/");
        let before = std::time::Instant::now();
        assert_eq!(asked(before - Duration::from_secs(3600), Some(&about)), 0);
        tower.world.platform.inject_github_fault(fault, &about);
        let response = tower.client().get(tower.url(&path)).send().await.unwrap();
        let limited_at = std::time::Instant::now();
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
        assert_eq!(
            asked(before, Some(&about)),
            1,
            "{fault:?}: one attempt, no retries"
        );

        // Inside the window Tower does not ask GitHub at all (the poller's request already
        // on its way when the limit was met may still arrive).
        for other in [
            "gitops-infra-orders-api",
            "gitops-orders-api",
            "hangar-tenants",
        ] {
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
        assert!(
            asked(limited_at, None) <= 1,
            "{fault:?}: asked inside the wait window: {:?}",
            tower
                .world
                .platform
                .github_requests()
                .iter()
                .filter(|(at, _)| *at >= limited_at)
                .collect::<Vec<_>>()
        );

        // After it (not before), Tower asks again and GitHub answers (this repo does not
        // exist: a 404, not a limit).
        let answered = eventually(
            Duration::from_secs(wait + 10),
            "asked after the window",
            || async {
                let response = tower.client().get(tower.url(&path)).send().await.ok()?;
                (response.status() != StatusCode::SERVICE_UNAVAILABLE)
                    .then(|| (response.status(), limited_at.elapsed()))
            },
        )
        .await
        .unwrap();
        assert!(
            answered.1 >= Duration::from_secs(wait - 1),
            "{fault:?}: answered {answered:?} after a {wait} s limit"
        );
        assert!(
            [StatusCode::OK, StatusCode::NOT_FOUND].contains(&answered.0),
            "{fault:?}: {answered:?}"
        );
    }

    // A 403 that is not a rate limit is an error, and does not stop other lookups.
    tower
        .world
        .platform
        .inject_github_fault(Fault::Forbidden, "/events-bus/");
    let response = tower
        .client()
        .get(tower.url("/pull-requests?owner=acme&repo=events-bus"))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::BAD_GATEWAY);
    // No access to one repo is not GitHub failing: the pages are not told so.
    assert_eq!(tower.live.github().unwrap().trouble(), None);
    let response = tower
        .client()
        .get(tower.url("/pull-requests?owner=acme&repo=gitops-thumbnailer"))
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
    tower.spend_github_rate_limit(12).await.unwrap();

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
    assert_eq!(event["trouble"]["state"], "rateLimited", "{event}");
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

/// How long the Kubernetes API stays away in the long outage test.
const OUTAGE: Duration = Duration::from_secs(120);

/// `(apiVersion, kind, namespace, name, resourceVersion)` of every object, limited to the
/// types in `types`.
type Versions = BTreeSet<(String, String, Option<String>, String, Option<String>)>;

fn tower_versions(tower: &Live, cluster: &str) -> Versions {
    tower.live.clusters().objects()[cluster]
        .iter()
        .map(|o| {
            (
                o.api_version.clone(),
                o.kind.clone(),
                o.metadata.namespace.clone(),
                o.metadata.name.clone(),
                o.metadata.resource_version.clone(),
            )
        })
        .collect()
}

fn simulator_versions(tower: &Live, cluster: &str, types: &BTreeSet<(String, String)>) -> Versions {
    let text = |v: &serde_json::Value| v.as_str().map(str::to_owned);
    tower
        .world
        .platform
        .store(cluster)
        .unwrap()
        .objects()
        .iter()
        .filter(|o| read(o))
        .filter_map(|o| {
            let meta = &o["metadata"];
            Some((
                text(&o["apiVersion"])?,
                text(&o["kind"])?,
                text(&meta["namespace"]),
                text(&meta["name"])?,
                text(&meta["resourceVersion"]),
            ))
        })
        .filter(|(api, kind, ..)| types.contains(&(api.clone(), kind.clone())))
        .collect()
}

/// Whether Tower reads `object`: some kinds it reads in one namespace only, some only with
/// a label (a Rollout's pods).
fn read(object: &serde_json::Value) -> bool {
    let kind = object["kind"].as_str().unwrap_or_default();
    let namespace = object["metadata"]["namespace"].as_str();
    tower_shared::hangar::WATCHED_KINDS
        .iter()
        .filter(|w| w.kind == kind)
        .any(|w| {
            (w.namespace.is_none() || w.namespace == namespace)
                && w.selector
                    .is_none_or(|label| object["metadata"]["labels"].get(label).is_some())
        })
}

#[tokio::test]
async fn a_kubernetes_api_down_for_minutes_costs_no_errors_and_recovers_within_a_backoff() {
    // The test moves the world (30 world seconds per second of outage, by hand), so the
    // cluster changes while Tower cannot see it.
    let tower = Live::start(0.0).await.unwrap();
    let cluster = tower.live.config().control_plane_cluster.clone();
    let types: BTreeSet<(String, String)> = tower_versions(&tower, &cluster)
        .into_iter()
        .map(|(api, kind, ..)| (api, kind))
        .collect();
    assert!(types.len() > 3, "Tower watches several types: {types:?}");
    let routes = [
        "/api/provisioning",
        "/api/snapshot?service=orders-api",
        "/live-runs?app=orders-api",
        "/api/fleet",
        "/provisioning-history/runs",
        "/metrics",
    ];
    let carries_health = |route: &str| {
        !matches!(
            route,
            "/api/fleet" | "/provisioning-history/runs" | "/metrics"
        )
    };

    assert!(tower.world.served.set_cluster_up(&cluster, false));
    let down = std::time::Instant::now();
    let (mut asked, mut errors, mut marked, mut unmarked_after_marking) = (0, 0, 0, 0);
    let mut first_marked = None;
    while down.elapsed() < OUTAGE {
        for route in routes {
            let response = tower.client().get(tower.url(route)).send().await.unwrap();
            asked += 1;
            let status = response.status();
            if status.is_server_error() {
                errors += 1;
                eprintln!(
                    "{route}: {status} {}",
                    response.text().await.unwrap_or_default()
                );
                continue;
            }
            if carries_health(route) {
                let body: serde_json::Value = response.json().await.unwrap();
                if body["stale"][0]["name"] == cluster.as_str() {
                    marked += 1;
                    first_marked.get_or_insert(down.elapsed());
                } else if first_marked.is_some() {
                    unmarked_after_marking += 1;
                }
            }
        }
        tower.advance_world(6);
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let first_marked = first_marked.expect("the cluster was marked stale");
    eprintln!(
        "outage {OUTAGE:?}: {asked} requests, {errors} 5xx, {marked} marked stale (first after {first_marked:?}), {unmarked_after_marking} unmarked after"
    );
    assert!(asked >= 500, "{asked} reads in {OUTAGE:?}");
    assert_eq!(errors, 0, "no 5xx while the cluster is away");
    assert_eq!(unmarked_after_marking, 0, "stale all the time it is away");
    // A refused port: the watches fail at once, the probe within its period.
    let bound = tower_backend::live::kube::PROBE_EVERY + Duration::from_secs(1);
    assert!(
        first_marked <= bound,
        "marked after {first_marked:?}, bound {bound:?}"
    );
    let (_, during) = tower.get("/live-runs?app=orders-api").await.unwrap();
    assert!(
        !during["pipelineRuns"].as_array().unwrap().is_empty(),
        "the last known runs are served: {during}"
    );
    // The world went on without Tower.
    assert_ne!(
        tower_versions(&tower, &cluster),
        simulator_versions(&tower, &cluster, &types),
        "the cluster changed while away"
    );

    assert!(tower.world.served.set_cluster_up(&cluster, true));
    let up = std::time::Instant::now();
    let recovered = eventually(Duration::from_secs(30), "fresh and caught up", || async {
        let (_, body) = tower.get("/api/provisioning").await.ok()?;
        let fresh = body.get("stale").is_none();
        let caught_up =
            tower_versions(&tower, &cluster) == simulator_versions(&tower, &cluster, &types);
        (fresh && caught_up).then(|| up.elapsed())
    })
    .await;
    let recovered = recovered.unwrap();
    eprintln!("fresh and caught up {recovered:?} after the API returned");
    // One watcher backoff period is at most 2 s (`RETRY_AT_MOST`), the `/version` probe's 3 s,
    // side by side; then the watchers list again and the deriver takes in an hour of the
    // world's changes (3.3 s of that on a loaded 2-core machine, beside a browser test).
    assert!(
        recovered <= Duration::from_secs(8),
        "recovery took {recovered:?}"
    );
}

/// The health Tower puts beside its data: the names of the clusters marked stale.
async fn stale_clusters(tower: &Live) -> Vec<String> {
    let (_, body) = tower.get("/api/provisioning").await.unwrap();
    body.get("stale")
        .and_then(|s| s.as_array())
        .map(|stale| {
            stale
                .iter()
                .filter_map(|c| c["name"].as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

#[tokio::test]
async fn a_kind_tower_has_no_grant_for_is_read_as_absent_not_as_a_stale_cluster() {
    use hangar_sim::kube_api::Forbidden;
    let control_plane = "dev";
    let denied = [
        // The tenants' Argo CD instance: Tower reads the platform's `argocd` namespace only,
        // so it never meets this rule.
        (
            control_plane,
            Forbidden {
                group: "argoproj.io".into(),
                plural: "applications".into(),
                namespace: Some("argocd-apps".into()),
            },
        ),
        // The GitHub provider's Repository objects, everywhere.
        (
            control_plane,
            Forbidden {
                group: "repo.github.m.upbound.io".into(),
                plural: "repositories".into(),
                namespace: None,
            },
        ),
    ];
    let tower = Live::start_denied(0.0, &denied).await.unwrap();
    assert_eq!(tower.live.config().control_plane_cluster, control_plane);
    // Ready (Live::start waited for it), and /readyz says so.
    let ready = tower
        .client()
        .get(tower.url("/readyz"))
        .send()
        .await
        .unwrap();
    assert_eq!(ready.status(), StatusCode::OK);
    assert!(stale_clusters(&tower).await.is_empty());
    // The platform has Repository objects; Tower holds none, and has its Applications.
    let held = &tower.live.clusters().objects()[control_plane];
    let served = tower.world.platform.store(control_plane).unwrap().objects();
    let kind_count = |kind: &str| served.iter().filter(|o| o["kind"] == kind).count();
    assert!(kind_count("Repository") > 0);
    assert_eq!(held.iter().filter(|o| o.kind == "Repository").count(), 0);
    assert!(held.iter().any(|o| o.kind == "Application"));
    // One refusal (the first list), and no loop of lists after it: the watcher waits
    // NO_GRANT_RETRY (10 minutes) before asking again. Its ordinary backoff would have asked
    // 3 more times in these 5 s.
    let forbidden = || tower.world.served.api_requests()[control_plane].forbidden;
    assert_eq!(forbidden(), 1);
    let lists = tower.world.served.api_requests()[control_plane].list;
    tokio::time::sleep(Duration::from_secs(5)).await;
    assert_eq!(forbidden(), 1, "Tower asked again for what it may not read");
    assert_eq!(tower.world.served.api_requests()[control_plane].list, lists);
    assert!(stale_clusters(&tower).await.is_empty());
}

#[tokio::test]
async fn a_hung_api_server_is_stale_within_the_probes_deadline_and_fresh_when_it_answers() {
    use tower_backend::live::kube::{PROBE_DEADLINE, PROBE_EVERY};
    let tower = Live::start(0.0).await.unwrap();
    let cluster = tower.live.config().control_plane_cluster.clone();
    assert!(stale_clusters(&tower).await.is_empty());
    tower.world.served.access(&cluster).unwrap().set_hung(true);
    let hung = std::time::Instant::now();
    // Not kube-rs' read timeout (295 s): Tower's probe, every 3 s with a 5 s deadline.
    let limit = PROBE_EVERY + PROBE_DEADLINE + Duration::from_secs(1);
    let marked = eventually(limit, "the hung cluster marked stale", || async {
        stale_clusters(&tower)
            .await
            .contains(&cluster)
            .then(|| hung.elapsed())
    })
    .await
    .unwrap();
    eprintln!("a hung API server was marked stale after {marked:?}");
    let (_, body) = tower.get("/api/provisioning").await.unwrap();
    assert_eq!(
        body["stale"][0]["error"], "the API server did not answer within 5 s",
        "{body}"
    );
    tower.world.served.access(&cluster).unwrap().set_hung(false);
    eventually(
        PROBE_EVERY + Duration::from_secs(2),
        "fresh again",
        || async { stale_clusters(&tower).await.is_empty().then_some(()) },
    )
    .await
    .unwrap();
}
