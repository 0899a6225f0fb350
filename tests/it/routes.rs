//! Every backend route against the simulated platform, through Tower's real clients:
//! kube-rs watch caches, octocrab with conditional requests, reqwest to Backstage.

use std::collections::BTreeSet;
use std::time::Duration;

use reqwest::StatusCode;
use serde_json::{json, Value};

use crate::support::{eventually, Live, ReadJson as _};

/// The world stands still (speed 0), so what the routes say can be checked exactly.
async fn frozen() -> Live {
    Live::start(0.0).await.unwrap()
}

fn names(list: &Value, key: &str) -> BTreeSet<String> {
    list.as_array()
        .unwrap()
        .iter()
        .map(|v| v[key].as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test]
async fn live_runs_come_from_the_watch_cache() {
    let tower = frozen().await;
    let (status, body) = tower.get("/live-runs?app=orders-api").await.unwrap();
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["namespace"], "app-orders-api-cicd");
    assert_eq!(body["cluster"], "dev");
    let runs = body["pipelineRuns"].as_array().unwrap();
    assert!(!runs.is_empty(), "orders-api has build and deploy runs");
    assert!(
        runs.iter()
            .all(|r| r["kind"] == "PipelineRun"
                && r["metadata"]["namespace"] == "app-orders-api-cicd")
    );
    assert!(!body["taskRuns"].as_array().unwrap().is_empty());
    assert!(body.get("stale").is_none(), "every cluster answers: {body}");

    // An InfraService's runs live in infra-<name>-cicd.
    let (status, body) = tower.get("/live-runs?app=events-bus").await.unwrap();
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["namespace"], "infra-events-bus-cicd");

    for (path, code, field) in [
        ("/live-runs?app=Orders_API", StatusCode::BAD_REQUEST, "app"),
        ("/live-runs", StatusCode::BAD_REQUEST, "app"),
        (
            "/live-runs?app=orders-api&namespace=not%20a%20namespace",
            StatusCode::BAD_REQUEST,
            "namespace",
        ),
        ("/live-runs?app=no-such-app", StatusCode::NOT_FOUND, "app"),
    ] {
        let refusal = tower.refusal(path).await.unwrap();
        assert_eq!(refusal, (code, Some(field.to_owned())), "{path}");
    }
}

#[tokio::test]
async fn pull_requests_pending_requests_and_request_prs_come_from_github() {
    let tower = frozen().await;
    let (status, body) = tower
        .get("/pull-requests?owner=acme&repo=hangar-tenants")
        .await
        .unwrap();
    assert_eq!(status, StatusCode::OK, "{body}");
    let pulls = body["pullRequests"].as_array().unwrap().clone();
    let titles: BTreeSet<&str> = pulls.iter().map(|p| p["title"].as_str().unwrap()).collect();
    for title in [
        "Create Go orders-api",
        "Create SpringBoot ledger",
        "Create NodeJS shop",
    ] {
        assert!(titles.contains(title), "{title} in {titles:?}");
    }

    // Pending: open requests and those merged in the last 30 minutes (world time).
    let (status, body) = tower
        .get("/pending-requests?owner=acme&repo=hangar-tenants")
        .await
        .unwrap();
    assert_eq!(status, StatusCode::OK, "{body}");
    let now: chrono::DateTime<chrono::Utc> = body["now"].as_str().unwrap().parse().unwrap();
    let expected: BTreeSet<String> = pulls
        .iter()
        .filter(|p| p["title"].as_str().unwrap().starts_with("Create "))
        .filter(|p| {
            p["state"] == "open"
                || p["merged_at"].as_str().is_some_and(|at| {
                    let at: chrono::DateTime<chrono::Utc> = at.parse().unwrap();
                    now - at <= chrono::Duration::minutes(30)
                })
        })
        .map(|p| {
            p["title"]
                .as_str()
                .unwrap()
                .rsplit(' ')
                .next()
                .unwrap()
                .to_owned()
        })
        .collect();
    let pending = names(&body["requests"], "name");
    assert_eq!(pending, expected);
    assert!(
        pending.contains("shop") && pending.contains("ledger"),
        "{pending:?}"
    );
    assert!(!pending.contains("orders-api"), "merged two hours ago");

    let (status, body) = tower
        .get("/request-pr?owner=acme&repo=hangar-tenants&kind=Go&name=orders-api")
        .await
        .unwrap();
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["title"], "Create Go orders-api");
    assert_eq!(body["kind"], "Go");
    assert!(body["merged_at"].is_string());

    for (query, field, code) in [
        ("owner=acme", "repo", StatusCode::BAD_REQUEST),
        ("repo=hangar-tenants", "owner", StatusCode::BAD_REQUEST),
        ("owner=acme&repo=a%2Fb", "repo", StatusCode::BAD_REQUEST),
        (
            "owner=acme&repo=no-such-repo",
            "repo",
            StatusCode::NOT_FOUND,
        ),
    ] {
        let refusal = tower
            .refusal(&format!("/pull-requests?{query}"))
            .await
            .unwrap();
        assert_eq!(refusal, (code, Some(field.to_owned())), "{query}");
    }
    for (query, field, code) in [
        ("kind=Cobol&name=x", "kind", StatusCode::BAD_REQUEST),
        ("kind=Go&name=-x", "name", StatusCode::BAD_REQUEST),
        (
            "kind=Go&name=never-requested",
            "name",
            StatusCode::NOT_FOUND,
        ),
    ] {
        let refusal = tower
            .refusal(&format!(
                "/request-pr?owner=acme&repo=hangar-tenants&{query}"
            ))
            .await
            .unwrap();
        assert_eq!(refusal, (code, Some(field.to_owned())), "{query}");
    }

    // Only the configured owner's repositories of known services (or the tenants repo),
    // refused before GitHub is asked; letter case does not make a second cache entry.
    let asked = || tower.world.platform.github_requests().len();
    let before = asked();
    for (query, field) in [
        ("owner=someone-else&repo=hangar-tenants", "owner"),
        ("owner=acme&repo=private-payroll", "repo"),
        ("owner=acme&repo=gitops-no-such-service", "repo"),
    ] {
        for route in ["pull-requests", "pending-requests"] {
            let refusal = tower.refusal(&format!("/{route}?{query}")).await.unwrap();
            assert_eq!(
                refusal,
                (StatusCode::NOT_FOUND, Some(field.to_owned())),
                "{route}?{query}"
            );
        }
    }
    let refusal = tower
        .refusal("/config/cicd?app=no-such-service")
        .await
        .unwrap();
    assert_eq!(refusal, (StatusCode::NOT_FOUND, Some("app".to_owned())));
    assert_eq!(
        asked(),
        before,
        "GitHub was asked for what Tower may not read"
    );
    let (_, lower) = tower
        .get("/pull-requests?owner=acme&repo=hangar-tenants")
        .await
        .unwrap();
    let (status, upper) = tower
        .get("/pull-requests?owner=ACME&repo=Hangar-Tenants")
        .await
        .unwrap();
    assert_eq!(status, StatusCode::OK);
    assert_eq!(upper["repo"], "acme/hangar-tenants");
    assert_eq!(upper, lower);

    // Asking again within 45 s is served from Tower's cache: GitHub sees no new request.
    let before = tower.live.github().unwrap().counters();
    let (status, _) = tower
        .get("/pull-requests?owner=acme&repo=hangar-tenants")
        .await
        .unwrap();
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        tower.live.github().unwrap().counters().requests,
        before.requests
    );
}

#[tokio::test]
async fn cicd_config_is_read_where_the_scaffold_wrote_it() {
    let tower = frozen().await;
    let (status, body) = tower.get("/config/cicd?app=orders-api").await.unwrap();
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["repo"], "acme/orders-api");
    assert_eq!(body["path"], ".glidepath/cicd.yaml");
    assert_eq!(body["environments"][0]["name"], "dev");
    assert_eq!(body["config"]["deploy"]["target"], "aws-ecs");
    assert_eq!(body["firstEnvironment"]["name"], "dev");
    assert_eq!(body["firstEnvironment"]["hasDeployStage"], true);

    let (status, body) = tower.get("/config/cicd?app=events-bus").await.unwrap();
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["repo"], "acme/gitops-infra-events-bus");

    // ledger's repositories were never created (missing provider credentials).
    for (path, code) in [
        ("/config/cicd?app=ledger", StatusCode::NOT_FOUND),
        ("/config/cicd?app=", StatusCode::BAD_REQUEST),
    ] {
        let refusal = tower.refusal(path).await.unwrap();
        assert_eq!(refusal, (code, Some("app".to_owned())), "{path}");
    }
}

/// `/api/provisioning/service` is one service's progress as `/api/provisioning` has it,
/// settled: a running step has no duration (the page ticks it), so while the clock moves and
/// nothing else does, the page's refetch is a 304.
#[tokio::test]
async fn one_services_provisioning_is_settled_and_unchanged_as_the_clock_ticks() {
    let tower = frozen().await;
    let (_, all) = tower.get("/api/provisioning").await.unwrap();
    let running = all["services"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| {
            s["steps"]
                .as_array()
                .unwrap()
                .iter()
                .any(|step| step["status"] == "running" && step["durationSec"].is_u64())
        })
        .expect("a service with a running step")
        .clone();
    let name = running["name"].as_str().unwrap();
    let path = format!("/api/provisioning/service?service={name}");
    let response = tower.client().get(tower.url(&path)).send().await.unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    let etag = response.headers()["etag"].clone();
    let one: Value = response.json().await.unwrap();
    assert_eq!(one["service"], name);
    let mut settled = running.clone();
    for step in settled["steps"].as_array_mut().unwrap() {
        if step["status"] == "running" {
            step["durationSec"] = Value::Null;
        }
    }
    assert_eq!(one["progress"], settled);

    // Three seconds on: the whole view's running durations move, this one does not.
    tower.advance_world(3);
    eventually(Duration::from_secs(10), "the durations moved", || async {
        let (_, now) = tower.get("/api/provisioning").await.ok()?;
        (now["now"] != all["now"]).then_some(())
    })
    .await
    .unwrap();
    assert_eq!(
        tower.revalidate(&path, &etag).await,
        StatusCode::NOT_MODIFIED
    );

    // A service Tower knows but is not provisioning: no progress; one it does not know: 404.
    let (_, fleet) = tower.get("/api/fleet").await.unwrap();
    let tracked = names(&all["services"], "name");
    let settled_app = fleet["apps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["name"].as_str().unwrap())
        .find(|a| !tracked.contains(*a))
        .expect("a fleet app not being provisioned");
    let (status, body) = tower
        .get(&format!("/api/provisioning/service?service={settled_app}"))
        .await
        .unwrap();
    assert_eq!(
        (status, &body["progress"]),
        (StatusCode::OK, &Value::Null),
        "{body}"
    );
    for (query, code) in [
        ("service=no-such-service", StatusCode::NOT_FOUND),
        ("service=Not_A_Label", StatusCode::BAD_REQUEST),
        ("", StatusCode::BAD_REQUEST),
    ] {
        let (status, body) = tower
            .get(&format!("/api/provisioning/service?{query}"))
            .await
            .unwrap();
        assert_eq!(
            (status, body["field"].as_str()),
            (code, Some("service")),
            "{query}"
        );
    }
}

#[tokio::test]
async fn provisioning_snapshot_readiness_metrics_and_openapi() {
    let tower = frozen().await;
    let (status, body) = tower.get("/api/provisioning").await.unwrap();
    assert_eq!(status, StatusCode::OK, "{body}");
    let services = names(&body["services"], "name");
    for name in ["orders-api", "ledger", "thumbnailer", "events-bus"] {
        assert!(services.contains(name), "{name} in {services:?}");
    }
    // shop's XR does not exist yet; its merged request PR is pending.
    let shop = body["services"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == "shop")
        .unwrap();
    assert_eq!(shop["group"], "pending");
    // GitHub answered, so the onboarding step does not wait for it.
    let orders = body["services"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == "orders-api")
        .unwrap();
    let onboarding = orders["steps"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["id"] == "onboarding-prs")
        .unwrap();
    assert_eq!(onboarding["status"], "done", "{onboarding}");

    // cicd.yaml is read from GitHub once the service is seen, and lands in the snapshot.
    let body = eventually(
        Duration::from_secs(10),
        "orders-api's cicd.yaml read",
        || async {
            let (status, body) = tower.get("/api/snapshot?service=orders-api").await.ok()?;
            assert_eq!(status, StatusCode::OK);
            body["cicd"]["orders-api"].is_string().then_some(body)
        },
    )
    .await
    .unwrap();
    assert!(body["clusters"]["dev"].as_array().unwrap().len() > 5);
    // The catalog is looked up with Tower's read token once the service is seen.
    let body = eventually(
        Duration::from_secs(10),
        "orders-api in the catalog",
        || async {
            let (_, body) = tower.get("/api/snapshot?service=orders-api").await.ok()?;
            body["catalog"]
                .as_array()
                .is_some_and(|c| !c.is_empty())
                .then_some(body)
        },
    )
    .await
    .unwrap();
    assert_eq!(body["catalog"][0]["metadata"]["name"], "orders-api");
    assert!(body["cicd"]["orders-api"]
        .as_str()
        .unwrap()
        .contains("aws-ecs"));

    let (status, body) = tower.get("/readyz").await.unwrap();
    assert_eq!(
        (status, body["ready"].as_bool()),
        (StatusCode::OK, Some(true))
    );
    // Readiness asks each client: an Argo CD that does not answer makes Tower not ready.
    let mut state = tower_backend::state::AppState::live(tower.live.clone());
    let dead = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    state.argocd = Some(std::sync::Arc::new(tower_backend::config::HttpService {
        url: format!("http://{dead}"),
        token: None,
        guest_sign_in: false,
        app_url: None,
    }));
    let router = tower_backend::app::router(
        state,
        &tower_backend::assets::Dist::open(&crate::support::dist().unwrap()).unwrap(),
    );
    // Anyone learns that Tower is not ready; only a caller who signed in learns why.
    let (status, body) =
        crate::support::call(&router, axum::http::Request::get("/readyz"), "").await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(body, json!({"ready": false}));
    let (status, body) = crate::support::call(
        &router,
        crate::support::get_with("/readyz", &tower.token),
        "",
    )
    .await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
    assert!(
        body["waiting"][0].as_str().unwrap().contains("Argo CD"),
        "{body}"
    );

    // Only the configured origins may frame Tower (the demo: itself and its Backstage); no
    // plugins, no <base>; no sniffing, no referrer — on pages and API answers alike.
    let backstage = format!("http://{}", tower.world.served.backstage);
    for path in ["/", "/api/provisioning"] {
        let response = tower.client().get(tower.url(path)).send().await.unwrap();
        let header = |name: &str| response.headers()[name].to_str().unwrap().to_owned();
        let policy = header("content-security-policy");
        assert!(
            policy.starts_with("default-src 'self'; script-src 'self' 'wasm-unsafe-eval' 'sha256-"),
            "{policy}"
        );
        assert!(
            policy.ends_with(&format!(
                "connect-src 'self'; form-action 'none'; object-src 'none'; base-uri 'none'; \
                 frame-ancestors 'self' {backstage}"
            )),
            "{policy}"
        );
        assert_eq!(header("x-content-type-options"), "nosniff");
        assert_eq!(header("referrer-policy"), "no-referrer");
    }
    // API and sign-in answers are kept by no cache; the page's own files are revalidated.
    for path in [
        "/api/provisioning",
        "/api/snapshot?service=orders-api",
        "/auth/guest",
        "/auth/config",
        "/api/no-such-route",
    ] {
        let response = tower.client().get(tower.url(path)).send().await.unwrap();
        assert_eq!(response.headers()["cache-control"], "no-store", "{path}");
    }
    let page = tower.client().get(tower.url("/")).send().await.unwrap();
    assert_eq!(page.headers()["cache-control"], "no-cache");

    let metrics = tower
        .client()
        .get(tower.url("/metrics"))
        .send()
        .await
        .unwrap();
    assert_eq!(metrics.status(), StatusCode::OK);
    let text = metrics.text().await.unwrap();
    assert!(
        text.contains("tower_cluster_synced{cluster=\"dev\"} 1"),
        "{text}"
    );
    assert!(
        text.contains("tower_cluster_stale{cluster=\"prod\"} 0"),
        "{text}"
    );
    assert!(
        text.contains("tower_http_requests_total{route=\"/readyz\",status=\"200\"} 1"),
        "{text}"
    );

    // The OpenAPI document lists exactly the routes the router serves.
    let (status, doc) = tower.get("/openapi.json").await.unwrap();
    assert_eq!(status, StatusCode::OK);
    let documented: BTreeSet<&str> = doc["paths"]
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    let served: BTreeSet<&str> = [
        "/api/fleet",
        "/api/activity",
        "/api/snapshot",
        "/api/deployments",
        "/api/releases",
        "/api/releases/promotion",
        "/api/releases/promote",
        "/api/releases/compare",
        "/api/access",
        "/api/argocd/sync",
        "/api/argocd/rollout-actions",
        "/api/argocd/rollout-action",
        "/api/runtime",
        "/api/runtime/log",
        "/api/dora",
        "/api/config",
        "/api/config/file",
        "/api/config/check",
        "/api/config/save",
        "/api/records",
        "/api/records/record",
        "/api/records/export",
        "/api/records/notes",
        "/api/pipelines",
        "/api/pipelines/run",
        "/api/provisioning",
        "/api/provisioning/service",
        "/api/pipelines/log",
        "/api/pulls",
        "/api/summary",
        "/api/events",
        "/webhooks/github",
        "/live-runs",
        "/pull-requests",
        "/pending-requests",
        "/request-pr",
        "/config/cicd",
        "/provisioning-history/runs",
        "/provisioning-history/typical",
        "/catalog/refresh",
        "/catalog/entity",
        "/healthz",
        "/readyz",
        "/metrics",
        "/openapi.json",
        "/auth/config",
        "/auth/guest",
    ]
    .into();
    assert_eq!(documented, served);
    let routes_rs =
        std::fs::read_to_string(crate::support::root().join("backend/src/routes/mod.rs")).unwrap();
    for path in served.iter().filter(|p| **p != "/healthz") {
        assert!(
            routes_rs.contains(&format!("\"{path}\"")),
            "{path} is routed in routes/mod.rs"
        );
    }
}

#[tokio::test]
async fn history_records_once_and_serves_typicals_in_sqlite() {
    history_records_once_and_serves_typicals(frozen().await).await;
}

#[tokio::test]
async fn history_records_once_and_serves_typicals_in_postgres() {
    let database = crate::support::postgres_database().await.unwrap();
    let tower = Live::start_with(0.0, Some(database)).await.unwrap();
    assert_eq!(
        tower.live.history().backend(),
        tower_backend::history::Backend::Postgres
    );
    history_records_once_and_serves_typicals(tower).await;
}

async fn history_records_once_and_serves_typicals(tower: Live) {
    let client = tower.client();
    let run = json!({"service": "billing", "kind": "NodeJS",
        "startedAt": "2026-11-30T09:00:00Z", "finishedAt": "2026-11-30T09:17:00Z",
        "steps": {"repositories": 60, "first-build": 400}});
    let post = |body: Value| {
        client
            .post(tower.url("/provisioning-history/runs"))
            .json(&body)
            .send()
    };
    let first = post(run.clone()).await.unwrap();
    assert_eq!(first.status(), StatusCode::CREATED);
    // Stored with who recorded it.
    let started = "2026-11-30T09:00:00Z".parse().unwrap();
    assert_eq!(
        tower
            .live
            .history()
            .recorded_by("billing", started)
            .await
            .unwrap()
            .as_deref(),
        Some("user:development/guest")
    );
    // A repeat (another browser) with other numbers gets the stored run back.
    let mut repeat = run.clone();
    repeat["steps"]["repositories"] = json!(999);
    let second = post(repeat).await.unwrap();
    assert_eq!(second.status(), StatusCode::OK);
    let stored: Value = second.json().await.unwrap();
    assert_eq!(stored["steps"]["repositories"], 60);

    // Times no real run has, around Tower's clock.
    let now = tower.world.clock().now();
    let at = |offset: chrono::TimeDelta| (now + offset).to_rfc3339();
    let hour = chrono::TimeDelta::hours(1);
    let implausible = [
        (at(-hour), at(hour), json!({}), "finishedAt"),
        (
            at(chrono::TimeDelta::days(-3700)),
            at(chrono::TimeDelta::days(-3699)),
            json!({}),
            "startedAt",
        ),
        (
            at(chrono::TimeDelta::days(-9)),
            at(-hour),
            json!({}),
            "finishedAt",
        ),
        (
            at(-hour),
            at(-hour / 2),
            json!({"first-build": 1801}),
            "steps.first-build",
        ),
    ];
    let implausible = implausible
        .into_iter()
        .map(|(started, finished, steps, field)| {
            let body = json!({"service": "x", "kind": "Go", "startedAt": started,
            "finishedAt": finished, "steps": steps});
            (body, field)
        });
    for (body, field) in implausible.chain([
        (
            json!({"kind": "NodeJS", "startedAt": "2026-11-30T09:00:00Z", "finishedAt": "2026-11-30T09:01:00Z"}),
            "service",
        ),
        (
            json!({"service": "Bad Name", "kind": "NodeJS", "startedAt": "2026-11-30T09:00:00Z", "finishedAt": "2026-11-30T09:01:00Z"}),
            "service",
        ),
        (
            json!({"service": "x", "kind": "Cobol", "startedAt": "2026-11-30T09:00:00Z", "finishedAt": "2026-11-30T09:01:00Z"}),
            "kind",
        ),
        (
            json!({"service": "x", "kind": "Go", "startedAt": "yesterday", "finishedAt": "2026-11-30T09:01:00Z"}),
            "startedAt",
        ),
        (
            json!({"service": "x", "kind": "Go", "startedAt": "2026-11-30T09:02:00Z", "finishedAt": "2026-11-30T09:01:00Z"}),
            "finishedAt",
        ),
        (
            json!({"service": "x", "kind": "Go", "startedAt": "2026-11-30T09:00:00Z", "finishedAt": "2026-11-30T09:01:00Z", "steps": {"repositories": -1}}),
            "steps.repositories",
        ),
        (
            json!({"service": "x", "kind": "Go", "startedAt": "2026-11-30T09:00:00Z", "finishedAt": "2026-11-30T09:01:00Z", "steps": {"coffee": 1}}),
            "steps.coffee",
        ),
    ]) {
        let response = post(body.clone()).await.unwrap();
        assert_eq!(response.status(), StatusCode::BAD_REQUEST, "{body}");
        let error: Value = response.json().await.unwrap();
        assert_eq!(error["field"], field, "{body}: {error}");
    }
    let response = client
        .post(tower.url("/provisioning-history/runs"))
        .header("content-type", "application/json")
        .body("not json")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::BAD_REQUEST);
    // Writes take JSON only (a cross-site form cannot post JSON without a preflight).
    let response = client
        .post(tower.url("/provisioning-history/runs"))
        .header("content-type", "application/x-www-form-urlencoded")
        .body(run.to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::UNSUPPORTED_MEDIA_TYPE);
    let error: Value = response.json().await.unwrap();
    assert_eq!(error["field"], "content-type");
    // Bodies are bounded.
    let response = client
        .post(tower.url("/provisioning-history/runs"))
        .header("content-type", "application/json")
        .body(format!("{{\"service\": \"{}\"}}", "x".repeat(100 * 1024)))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::PAYLOAD_TOO_LARGE);

    // Two more NodeJS runs make three: the measured median replaces the estimate.
    for (service, build) in [("billing-2", 300), ("billing-3", 500)] {
        let mut more = run.clone();
        more["service"] = json!(service);
        more["steps"]["first-build"] = json!(build);
        assert_eq!(post(more).await.unwrap().status(), StatusCode::CREATED);
    }
    let (status, body) = tower
        .get("/provisioning-history/typical?kind=NodeJS")
        .await
        .unwrap();
    assert_eq!(status, StatusCode::OK, "{body}");
    let build = body["steps"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["id"] == "first-build")
        .unwrap();
    assert_eq!(
        (build["seconds"].as_u64(), build["source"].as_str()),
        (Some(400), Some("measured"))
    );
    let request = body["steps"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["id"] == "request-pr-merged")
        .unwrap();
    assert_eq!(request["source"], "estimate");
    let refusal = tower
        .refusal("/provisioning-history/typical?kind=nodejs")
        .await
        .unwrap();
    assert_eq!(refusal, (StatusCode::BAD_REQUEST, Some("kind".to_owned())));

    let (status, body) = tower
        .get("/provisioning-history/runs?limit=2")
        .await
        .unwrap();
    assert_eq!(status, StatusCode::OK);
    assert_eq!(body["runs"].as_array().unwrap().len(), 2);
    for limit in ["0", "101", "ten"] {
        let refusal = tower
            .refusal(&format!("/provisioning-history/runs?limit={limit}"))
            .await
            .unwrap();
        assert_eq!(
            refusal,
            (StatusCode::BAD_REQUEST, Some("limit".to_owned())),
            "{limit}"
        );
    }
}

#[tokio::test]
async fn catalog_refresh_uses_the_callers_backstage_token() {
    let tower = frozen().await;
    let client = tower.client();
    let token = tower.token.clone();
    let anonymous = reqwest::Client::new();
    let refresh = |token: Option<&str>| {
        let request = anonymous
            .post(tower.url("/catalog/refresh"))
            .json(&json!({}));
        match token {
            Some(token) => request.bearer_auth(token),
            None => request,
        }
        .send()
    };
    // Never on GET: 405 naming the method, and Backstage is not asked (the POST below is
    // the first trigger).
    let get = client
        .get(tower.url("/catalog/refresh"))
        .send()
        .await
        .unwrap();
    assert_eq!(get.status(), StatusCode::METHOD_NOT_ALLOWED);
    assert_eq!(get.json::<Value>().await.unwrap()["field"], "method");
    let first = refresh(Some(&token)).await.unwrap();
    assert_eq!(first.status(), StatusCode::OK);
    assert_eq!(first.json::<Value>().await.unwrap()["status"], "triggered");
    // While that run lasts, a second trigger is "already running" — an answer, not an error.
    let second = refresh(Some(&token)).await.unwrap();
    assert_eq!(second.status(), StatusCode::OK);
    assert_eq!(
        second.json::<Value>().await.unwrap()["status"],
        "already-running"
    );

    let missing = refresh(None).await.unwrap();
    assert_eq!(missing.status(), StatusCode::UNAUTHORIZED);
    assert_eq!(
        missing.json::<Value>().await.unwrap()["field"],
        "authorization"
    );
    let forged = refresh(Some("not-a-backstage-token")).await.unwrap();
    assert_eq!(forged.status(), StatusCode::UNAUTHORIZED);
    let text = forged.text().await.unwrap();
    assert!(
        !text.contains("not-a-backstage-token"),
        "errors never echo credentials: {text}"
    );

    // The catalog lookup: orders-api has been in the catalog for hours.
    let found: Value = client
        .get(tower.url("/catalog/entity?name=orders-api"))
        .bearer_auth(&token)
        .read_json()
        .await;
    assert_eq!(found["found"], true, "{found}");
    assert_eq!(found["entity"]["metadata"]["name"], "orders-api");
    let (status, body) = tower
        .get("/catalog/entity?name=never-heard-of-it")
        .await
        .unwrap();
    assert_eq!(
        (status, &body["found"]),
        (StatusCode::OK, &json!(false)),
        "{body}"
    );
}

#[tokio::test]
async fn events_stream_changes_as_the_world_moves() {
    let tower = Live::start(60.0).await.unwrap();
    let mut response = tower
        .client()
        .get(tower.url("/api/events"))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(response.headers()["content-type"], "text/event-stream");
    let mut seen = String::new();
    // A Kubernetes change naming its object and the service it belongs to.
    let kubernetes_change = |seen: &str| -> Option<Value> {
        seen.split("\n\n")
            .filter(|event| event.starts_with("event: change"))
            .filter_map(|event| event.lines().find_map(|l| l.strip_prefix("data: ")))
            .filter_map(|data| serde_json::from_str::<Value>(data).ok())
            .find(|change| change["source"] == "kubernetes" && change["service"].is_string())
    };
    let change = tokio::time::timeout(Duration::from_secs(20), async {
        while let Some(chunk) = response.chunk().await.unwrap() {
            seen.push_str(&String::from_utf8_lossy(&chunk));
            if let Some(change) = kubernetes_change(&seen) {
                return change;
            }
        }
        panic!("the stream ended: {seen}")
    })
    .await
    .unwrap_or_else(|_| panic!("no Kubernetes change event in 20 s: {seen}"));
    assert!(seen.starts_with("event: hello"), "{seen}");
    assert!(
        change["cluster"].is_string() && change["kind"].is_string() && change["name"].is_string(),
        "{change}"
    );
}

#[tokio::test]
async fn a_cluster_that_goes_away_is_served_stale_and_recovers() {
    let tower = frozen().await;
    let (_, before) = tower.get("/live-runs?app=orders-api").await.unwrap();
    assert!(tower.world.served.set_cluster_up("dev", false));

    // A refused port: the watches fail at once, the `/version` probe within its period.
    let probe = tower_backend::live::kube::PROBE_EVERY;
    let stale = eventually(
        probe + Duration::from_secs(1),
        "dev marked stale",
        || async {
            let (status, body) = tower.get("/live-runs?app=orders-api").await.ok()?;
            assert_eq!(status, StatusCode::OK, "still answering: {body}");
            body.get("stale").is_some().then_some(body)
        },
    )
    .await
    .unwrap();
    assert_eq!(
        stale["pipelineRuns"], before["pipelineRuns"],
        "the last known runs"
    );
    assert_eq!(stale["stale"][0]["name"], "dev");
    assert!(stale["stale"][0]["lastSeenAt"].is_string(), "{stale}");
    let (status, provisioning) = tower.get("/api/provisioning").await.unwrap();
    assert_eq!(status, StatusCode::OK);
    assert_eq!(provisioning["stale"][0]["name"], "dev");
    let text = tower
        .client()
        .get(tower.url("/metrics"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(
        text.contains("tower_cluster_stale{cluster=\"dev\"} 1"),
        "{text}"
    );

    assert!(tower.world.served.set_cluster_up("dev", true));
    // Fresh within one probe period and one watcher backoff (at most 3 s each, side by side),
    // with two seconds to list again.
    let fresh = eventually(
        probe + Duration::from_secs(2),
        "dev fresh again",
        || async {
            let (_, body) = tower.get("/live-runs?app=orders-api").await.ok()?;
            body.get("stale").is_none().then_some(body)
        },
    )
    .await
    .unwrap();
    assert_eq!(fresh["pipelineRuns"], before["pipelineRuns"]);
}

#[tokio::test]
async fn steady_state_needs_no_lists() {
    let tower = Live::start(20.0).await.unwrap();
    // Let the first lists and watches settle, then count.
    tokio::time::sleep(Duration::from_secs(1)).await;
    let before = tower.world.served.api_requests();
    tokio::time::sleep(Duration::from_secs(6)).await;
    let after = tower.world.served.api_requests();
    for (cluster, counts) in &after {
        assert_eq!(
            counts.list, before[cluster].list,
            "{cluster}: no LIST after start-up"
        );
    }
    // The world did move meanwhile, and Tower saw it through its watches.
    assert!(tower
        .live
        .clusters()
        .status()
        .iter()
        .all(|c| c.synced && !c.stale));
}

#[tokio::test]
async fn the_backend_records_a_finished_provision_itself() {
    // The world moves ten seconds per look: Tower sees every state of the shop story
    // (about 17 world minutes) however slow the machine, and a finished service stays
    // listed (15 world minutes) longer than the catalog poll (5 real seconds) takes.
    let tower = Live::start(0.0).await.unwrap();
    let run = eventually(Duration::from_secs(90), "shop recorded", || async {
        tower.advance_world(10);
        let (_, body) = tower
            .get("/provisioning-history/runs?limit=100")
            .await
            .ok()?;
        body["runs"]
            .as_array()?
            .iter()
            .find(|r| r["service"] == "shop")
            .cloned()
    })
    .await
    .unwrap();
    assert_eq!(run["kind"], "NodeJS");
    let started: chrono::DateTime<chrono::Utc> =
        run["startedAt"].as_str().unwrap().parse().unwrap();
    let finished: chrono::DateTime<chrono::Utc> =
        run["finishedAt"].as_str().unwrap().parse().unwrap();
    assert!(finished > started);
    // Steps whose duration is unknown are left out, never recorded as 0.
    assert!(run["steps"]
        .as_object()
        .unwrap()
        .values()
        .all(|s| s.as_u64().is_some()));
}

#[tokio::test]
async fn a_compacted_history_makes_the_caches_list_again() {
    let tower = frozen().await;
    let lists_before = tower.world.served.api_requests()["dev"].list;
    let (status, _) = tower.get("/live-runs?app=shop").await.unwrap();
    assert_eq!(status, StatusCode::NOT_FOUND, "shop's XR is a minute away");

    // The API server forgets its event history (as etcd compaction does) and the world
    // moves on: watches resuming from their versions get 410 Gone and must list again.
    tower.world.platform.store("dev").unwrap().compact();
    tower
        .world
        .platform
        .clock()
        .advance(chrono::Duration::minutes(20));

    eventually(
        Duration::from_secs(20),
        "shop seen after the re-list",
        || async {
            let (status, _) = tower.get("/live-runs?app=shop").await.ok()?;
            (status == StatusCode::OK).then_some(())
        },
    )
    .await
    .unwrap();
    assert!(
        tower.world.served.api_requests()["dev"].list > lists_before,
        "the 410 made the watchers list again"
    );
    let status = &tower.live.clusters().status();
    assert!(status.iter().all(|c| c.synced && !c.stale), "{status:?}");
}

#[tokio::test]
async fn a_tools_tower_token_is_never_passed_on_to_backstage() {
    let tower = frozen().await;
    // The same Tower, with a tool allowed on the catalog routes.
    let secret = "catalog-tool-token-0123456789";
    let router = tower.router_with_tool("tool:catalog", secret, &["/catalog/*"]);
    let send = |request: axum::http::request::Builder, body: &'static str| {
        crate::support::call(
            &router,
            request.header("authorization", format!("Bearer {secret}")),
            body,
        )
    };

    // A lookup uses Tower's own read token (Backstage would refuse the tool's).
    let (status, found) = send(
        axum::http::Request::get("/catalog/entity?name=orders-api"),
        "",
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{found}");
    assert_eq!(found["found"], true);
    // A refresh needs a Backstage user's own sign-in, which a tool has not.
    let (status, refused) = send(axum::http::Request::post("/catalog/refresh"), "{}").await;
    assert_eq!(status, StatusCode::UNAUTHORIZED, "{refused}");
    assert_eq!(refused["field"], "authorization");
    assert!(
        refused["error"]
            .as_str()
            .unwrap()
            .contains("own Backstage sign-in"),
        "{refused}"
    );
}

#[tokio::test]
async fn github_backed_reads_have_a_budget_per_caller() {
    use tower_backend::auth::{GITHUB_READS_PER_SECOND, GITHUB_READ_BURST};
    let tower = frozen().await;
    let tool = "prs-tool-token-0123456789";
    let router = tower.router_with_tool("tool:prs", tool, &["/pull-requests"]);
    let as_guest = |path: &str| {
        crate::support::call(&router, crate::support::get_with(path, &tower.token), "")
    };
    let started = std::time::Instant::now();
    let mut asked = 0;
    let refused = loop {
        asked += 1;
        let (status, body) = as_guest("/pull-requests?owner=acme&repo=hangar-tenants").await;
        if status == StatusCode::TOO_MANY_REQUESTS {
            break body;
        }
        assert_eq!(status, StatusCode::OK, "{body}");
        assert!(
            asked <= 1_000,
            "a thousand GitHub-backed reads and no refusal"
        );
    };
    // The burst, and whatever came back while asking: nothing more.
    let back = (started.elapsed().as_secs_f64() * GITHUB_READS_PER_SECOND).floor();
    assert!(
        f64::from(asked) > GITHUB_READ_BURST && f64::from(asked) <= GITHUB_READ_BURST + back + 1.0,
        "refused at read {asked}, {back} back"
    );
    assert_eq!(refused["field"], "authorization", "{refused}");
    assert!(
        refused["error"].as_str().unwrap().contains("try again in"),
        "{refused}"
    );
    // Every GitHub-backed route shares the budget; other routes and other callers do not.
    let (status, _) = as_guest("/config/cicd?app=orders-api").await;
    assert_eq!(status, StatusCode::TOO_MANY_REQUESTS);
    let (status, _) = as_guest("/api/fleet").await;
    assert_eq!(status, StatusCode::OK);
    let (status, body) = crate::support::call(
        &router,
        crate::support::get_with("/pull-requests?owner=acme&repo=hangar-tenants", tool),
        "",
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
}

#[tokio::test]
async fn github_webhooks_are_believed_only_when_signed() {
    use tower_backend::routes::webhooks::{sign, SIGNATURE_HEADER};
    let tower = frozen().await;
    let body = json!({"action": "closed", "number": 1,
                      "repository": {"full_name": "acme/never-polled"}})
    .to_string();
    let post = |signature: Option<String>, body: String| {
        let mut request = tower
            .client()
            .post(tower.url("/webhooks/github"))
            .header("content-type", "application/json")
            .header("x-github-event", "pull_request");
        if let Some(signature) = signature {
            request = request.header(SIGNATURE_HEADER, signature);
        }
        request.body(body).send()
    };
    let asked = || {
        tower
            .world
            .platform
            .github_requests()
            .iter()
            .filter(|(_, path)| path.starts_with("/repos/acme/never-polled/"))
            .count()
    };
    for (what, signature) in [
        ("no signature", None),
        (
            "another secret",
            Some(sign(b"not the secret", body.as_bytes())),
        ),
        ("not hex", Some("sha256=xyz".to_owned())),
    ] {
        let response = post(signature, body.clone()).await.unwrap();
        assert_eq!(response.status(), StatusCode::UNAUTHORIZED, "{what}");
        let answer: Value = response.json().await.unwrap();
        assert_eq!(answer["field"], SIGNATURE_HEADER, "{what}: {answer}");
    }
    // A signed body that was changed on the way is refused too.
    let signature = sign(
        tower_backend::demo::WEBHOOK_SECRET.as_bytes(),
        body.as_bytes(),
    );
    let tampered = body.replace("never-polled", "gitops-shop");
    let response = post(Some(signature.clone()), tampered).await.unwrap();
    assert_eq!(response.status(), StatusCode::UNAUTHORIZED);
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(asked(), 0, "an unsigned webhook made Tower ask GitHub");

    // Signed: accepted, and Tower asks GitHub about that repo at once.
    let response = post(Some(signature), body.clone()).await.unwrap();
    assert_eq!(response.status(), StatusCode::ACCEPTED);
    eventually(
        Duration::from_secs(3),
        "Tower asking about the repo",
        || async { (asked() > 0).then_some(()) },
    )
    .await
    .unwrap();
    let unsigned_ping = post(None, "{}".to_owned()).await.unwrap();
    assert_eq!(unsigned_ping.status(), StatusCode::UNAUTHORIZED);
}

#[tokio::test]
async fn a_method_a_route_does_not_take_is_a_405_whatever_its_content_type() {
    let tower = frozen().await;
    let client = tower.client();
    for (method, path, content_type) in [
        ("TRACE", "/api/fleet", None),
        ("PUT", "/catalog/refresh", None),
        ("DELETE", "/provisioning-history/runs", Some("text/plain")),
        (
            "POST",
            "/api/summary",
            Some("application/x-www-form-urlencoded"),
        ),
        ("PATCH", "/webhooks/github", Some("application/json")),
    ] {
        let mut request = client.request(method.parse().unwrap(), tower.url(path));
        if let Some(content_type) = content_type {
            request = request.header("content-type", content_type).body("x=1");
        }
        let response = request.send().await.unwrap();
        assert_eq!(
            response.status(),
            StatusCode::METHOD_NOT_ALLOWED,
            "{method} {path}"
        );
        let error: Value = response.json().await.unwrap();
        assert_eq!(error["field"], "method", "{method} {path}: {error}");
    }
    // A route that takes the method still wants JSON.
    let form = client
        .post(tower.url("/catalog/refresh"))
        .header("content-type", "application/x-www-form-urlencoded")
        .body("x=1")
        .send()
        .await
        .unwrap();
    assert_eq!(form.status(), StatusCode::UNSUPPORTED_MEDIA_TYPE);
    let not_an_object = client
        .post(tower.url("/catalog/refresh"))
        .header("content-type", "application/json")
        .body("[null, null]")
        .send()
        .await
        .unwrap();
    assert_eq!(not_an_object.status(), StatusCode::BAD_REQUEST);
}

/// Tower keeps objects trimmed as they enter its cache: the env, Helm values and pipeline
/// params the simulated platform fills with a marker never reach a signed-in user.
#[tokio::test]
async fn no_route_forwards_env_helm_values_or_secret_params() {
    use hangar_sim::stories::objects::SECRET_MARK;
    let tower = frozen().await;
    let served: usize = tower
        .world
        .platform
        .clusters()
        .map(|(_, store)| {
            store
                .objects()
                .iter()
                .filter(|o| o.to_string().contains(SECRET_MARK))
                .count()
        })
        .sum();
    assert!(
        served > 10,
        "the simulated objects carry the marker ({served})"
    );
    let (_, fleet) = tower.get("/api/fleet").await.unwrap();
    let apps: Vec<String> = fleet["apps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["name"].as_str().unwrap().to_owned())
        .collect();
    assert!(!apps.is_empty());
    let mut paths = vec!["/api/fleet".to_owned(), "/api/provisioning".to_owned()];
    for app in apps
        .iter()
        .chain(["shop".to_owned(), "orders-api".to_owned()].iter())
    {
        paths.push(format!("/api/snapshot?service={app}"));
        paths.push(format!("/live-runs?app={app}"));
    }
    for path in &paths {
        let (status, body) = tower.get(path).await.unwrap();
        // (shop's XR is not made yet in the frozen world: a 404 for it.)
        assert!(
            status == StatusCode::OK || status == StatusCode::NOT_FOUND,
            "{path}: {body}"
        );
        assert!(
            !body.to_string().contains(SECRET_MARK),
            "{path} forwards a secret"
        );
    }
    // Trimmed, not emptied: the snapshots still carry the Rollouts' images.
    let (_, snapshot) = tower
        .get(&format!("/api/snapshot?service={}", apps[0]))
        .await
        .unwrap();
    assert!(snapshot.to_string().contains("ghcr.io/acme/"), "{snapshot}");
}

/// `/readyz` is public: however many ask at once, one check runs (one Argo CD request) and
/// its answer is reused for `READINESS_FOR` (2 s).
#[tokio::test]
async fn readiness_is_checked_once_for_a_crowd_of_callers() {
    let tower = frozen().await;
    let anonymous = reqwest::Client::new();
    let before = tower.world.served.argocd_requests();
    let asks = (0..50).map(|_| {
        let request = anonymous.get(tower.url("/readyz")).send();
        async move { request.await.map(|r| r.status()) }
    });
    let statuses = futures::future::join_all(asks).await;
    assert!(
        statuses.iter().all(|s| matches!(s, Ok(StatusCode::OK))),
        "{statuses:?}"
    );
    let asked = tower.world.served.argocd_requests() - before;
    // A deriver or poller may ask Argo CD on its own meanwhile; /readyz adds one at most.
    assert!(asked <= 1, "50 /readyz calls made {asked} Argo CD requests");
}

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
    let tag = image.rsplit(':').next().unwrap();
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

/// `/api/deployments` serves the Deployments tab derived once per change: the fleet's paused
/// canary in plain words, a cloud service's deploys, 304 on a matching ETag.
#[tokio::test]
async fn deployments_are_served_as_a_view() {
    let tower = frozen().await;
    let canary = tower.paused_canary_at_40().await.unwrap();
    let path = format!("/api/deployments?service={canary}");
    let response = tower.client().get(tower.url(&path)).send().await.unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    let etag = response.headers()["etag"].clone();
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["capability"], "k8s-runtime");
    let prod = body["environments"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["name"] == "prod")
        .unwrap_or_else(|| panic!("no prod: {body}"));
    let rollout = &prod["rollout"];
    assert_eq!(rollout["phase"], "Paused", "{rollout}");
    assert_eq!(rollout["canaryWeight"], 40);
    let summary = rollout["summary"].as_str().unwrap();
    assert!(summary.contains("paused at 40% of traffic"), "{summary}");
    assert!(!summary.contains("Suspended"), "{summary}");
    assert_eq!(rollout["analysis"][0]["type"], "Background", "{rollout}");
    // The stable and canary ReplicaSets, found by pod hash: the previous release on 3
    // pods, the new one on 2.
    let (stable, canary) = (&rollout["stable"], &rollout["canary"]);
    assert!(
        stable["replicaSet"].is_string() && canary["replicaSet"].is_string(),
        "{rollout}"
    );
    assert_eq!(
        (&stable["replicas"], &stable["ready"]),
        (&json!(3), &json!(3))
    );
    assert_eq!(
        (&canary["replicas"], &canary["ready"]),
        (&json!(2), &json!(2))
    );
    assert_ne!(stable["image"], canary["image"]);
    // The same view again: 304.
    assert_eq!(
        tower.revalidate(&path, &etag).await,
        StatusCode::NOT_MODIFIED
    );

    let (status, cloud) = tower
        .get("/api/deployments?service=orders-api")
        .await
        .unwrap();
    assert_eq!(status, StatusCode::OK);
    assert_eq!(cloud["capability"], "cloud-runtime");
    assert_eq!(cloud["cloud"]["service"], "orders-api");
    assert!(cloud.get("environments").is_none());

    for (query, code) in [
        ("service=no-such-service", StatusCode::NOT_FOUND),
        ("service=Bad_Name", StatusCode::BAD_REQUEST),
    ] {
        let refusal = tower
            .refusal(&format!("/api/deployments?{query}"))
            .await
            .unwrap();
        assert_eq!(refusal, (code, Some("service".to_owned())), "{query}");
    }
}

/// `/api/pipelines` pages a busy app's 320 runs by cursor, filters them, answers 304 on a
/// matching ETag and names a bad parameter; `/api/pipelines/run` is one run's graph.
#[tokio::test]
async fn pipelines_are_paged_by_cursor_and_each_run_has_its_graph() {
    let tower = frozen().await;
    let (_, fleet) = tower.get("/api/fleet").await.unwrap();
    let mut busy = None;
    for app in fleet["apps"].as_array().unwrap() {
        let name = app["name"].as_str().unwrap();
        let (status, page) = tower
            .get(&format!("/api/pipelines?service={name}"))
            .await
            .unwrap();
        assert_eq!(status, StatusCode::OK, "{page}");
        if page["total"].as_u64().unwrap() >= 300 {
            busy = Some((name.to_owned(), page));
            break;
        }
    }
    let (service, first) = busy.expect("an app with 300 runs or more");
    assert_eq!(
        first["runs"].as_array().unwrap().len(),
        25,
        "a page is 25 runs"
    );
    assert_eq!(first["pipelines"], json!(["build", "pull-request"]));

    // Page by page with `next`, 100 at a time: every run once, newest first.
    let total = first["total"].as_u64().unwrap();
    let mut seen: Vec<(String, String)> = Vec::new();
    let mut path = format!("/api/pipelines?service={service}&limit=100");
    for _ in 0..10 {
        let (status, page) = tower.get(&path).await.unwrap();
        assert_eq!(status, StatusCode::OK, "{page}");
        for run in page["runs"].as_array().unwrap() {
            seen.push((
                run["startedAt"].as_str().unwrap().to_owned(),
                run["name"].as_str().unwrap().to_owned(),
            ));
        }
        match page["next"].as_str() {
            Some(next) => {
                path = format!("/api/pipelines?service={service}&limit=100&continue={next}")
            }
            None => break,
        }
    }
    assert_eq!(seen.len() as u64, total);
    let mut sorted = seen.clone();
    sorted.sort_by(|a, b| b.cmp(a));
    assert_eq!(seen, sorted, "newest first, nothing twice");

    // Filters: only failed pull-request runs.
    let (_, failed) = tower
        .get(&format!(
            "/api/pipelines?service={service}&pipeline=pull-request&status=failed&limit=100"
        ))
        .await
        .unwrap();
    let runs = failed["runs"].as_array().unwrap();
    assert!(!runs.is_empty());
    assert!(runs
        .iter()
        .all(|r| r["outcome"] == "failed" && r["pipeline"] == "pull-request"));
    assert_eq!(failed["total"].as_u64().unwrap(), runs.len() as u64);
    assert_eq!(runs[0]["trigger"]["kind"], "pull-request", "{}", runs[0]);

    // One failed run's graph: the failed task marked, tasks one after another.
    let name = runs[0]["name"].as_str().unwrap();
    let path = format!("/api/pipelines/run?service={service}&run={name}");
    let response = tower.client().get(tower.url(&path)).send().await.unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    let etag = response.headers()["etag"].clone();
    let graph: Value = response.json().await.unwrap();
    let tasks = graph["tasks"].as_array().unwrap();
    let outcomes: Vec<(&str, &str, u64)> = tasks
        .iter()
        .map(|t| {
            (
                t["name"].as_str().unwrap(),
                t["outcome"].as_str().unwrap(),
                t["column"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        outcomes,
        [
            ("fetch-source", "succeeded", 0),
            ("lint", "succeeded", 1),
            ("unit-tests", "failed", 2)
        ]
    );
    assert_eq!(
        tower.revalidate(&path, &etag).await,
        StatusCode::NOT_MODIFIED
    );

    for (query, code, field) in [
        (
            format!("service={service}&limit=0"),
            StatusCode::BAD_REQUEST,
            "limit",
        ),
        (
            format!("service={service}&limit=101"),
            StatusCode::BAD_REQUEST,
            "limit",
        ),
        (
            format!("service={service}&status=fine"),
            StatusCode::BAD_REQUEST,
            "status",
        ),
        (
            format!("service={service}&continue=yesterday"),
            StatusCode::BAD_REQUEST,
            "continue",
        ),
        (
            format!("service={service}&pipeline=Build"),
            StatusCode::BAD_REQUEST,
            "pipeline",
        ),
        (
            "service=no-such-service".to_owned(),
            StatusCode::NOT_FOUND,
            "service",
        ),
    ] {
        let (status, body) = tower.get(&format!("/api/pipelines?{query}")).await.unwrap();
        assert_eq!(
            (status, body["field"].as_str()),
            (code, Some(field)),
            "{query}: {body}"
        );
    }
    let (status, body) = tower
        .get(&format!(
            "/api/pipelines/run?service={service}&run={service}-pr-0"
        ))
        .await
        .unwrap();
    assert_eq!(
        (status, body["field"].as_str()),
        (StatusCode::NOT_FOUND, Some("run")),
        "{body}"
    );
}

/// `/api/pipelines/log` reads a step's log from the cluster when asked: a failed run's whole
/// log (100,000 test lines, the failure last), a pod long gone as 410, and a running step's
/// log followed as it grows — one stream upstream, closed within 5 s of the reader going.
#[tokio::test]
async fn a_step_log_is_read_on_request_and_followed_until_the_reader_goes() {
    let tower = frozen().await;
    let service = crate::support::busy_app();
    let (_, failed) = tower
        .get(&format!(
            "/api/pipelines?service={service}&pipeline=pull-request&status=failed&limit=100"
        ))
        .await
        .unwrap();
    let failed = failed["runs"].as_array().unwrap();
    let log = |run: &str, rest: &str| {
        format!(
            "/api/pipelines/log?service={service}&run={run}&task=unit-tests&step=unit-tests{rest}"
        )
    };

    // The newest failed run (at most 90 minutes old): its pod is there, its log whole.
    let newest = failed[0]["name"].as_str().unwrap();
    let response = tower
        .client()
        .get(tower.url(&log(newest, "")))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(
        response.headers()["content-type"],
        "text/plain; charset=utf-8"
    );
    assert_eq!(response.headers()["cache-control"], "no-store");
    let text = response.text().await.unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), hangar_sim::logs::TEST_LINES + 2);
    assert!(lines[0].contains("[unit-tests] starting"), "{}", lines[0]);
    assert!(lines[lines.len() - 2].ends_with("\x1b[31mFAILED\x1b[0m"));
    assert!(
        lines[lines.len() - 1].contains("(exit code 1)"),
        "{}",
        lines[lines.len() - 1]
    );

    // The oldest (two days back): Kubernetes removed its pod, and the log with it.
    let oldest = failed.last().unwrap()["name"].as_str().unwrap();
    let (status, body) = tower.get(&log(oldest, "")).await.unwrap();
    assert_eq!(
        (status, body["field"].as_str()),
        (StatusCode::GONE, Some("task")),
        "{body}"
    );
    assert!(
        body["error"].as_str().unwrap().contains("is gone"),
        "{body}"
    );

    // Bad or unknown parameters are named.
    for (query, code, field) in [
        (
            format!("service={service}&run={newest}&step=unit-tests"),
            StatusCode::BAD_REQUEST,
            "task",
        ),
        (
            format!("service={service}&run={newest}&task=unit-tests"),
            StatusCode::BAD_REQUEST,
            "step",
        ),
        (
            format!("service={service}&run={newest}&task=deploy&step=deploy"),
            StatusCode::NOT_FOUND,
            "task",
        ),
        (
            format!("service={service}&run={newest}&task=unit-tests&step=lint"),
            StatusCode::NOT_FOUND,
            "step",
        ),
        (
            format!("service={service}&run={newest}&task=unit-tests&step=unit-tests&follow=maybe"),
            StatusCode::BAD_REQUEST,
            "follow",
        ),
        (
            format!("service={service}&run=no-such-run&task=unit-tests&step=unit-tests"),
            StatusCode::NOT_FOUND,
            "run",
        ),
    ] {
        let (status, body) = tower
            .get(&format!("/api/pipelines/log?{query}"))
            .await
            .unwrap();
        assert_eq!(
            (status, body["field"].as_str()),
            (code, Some(field)),
            "{query}: {body}"
        );
    }

    // The next pull-request run, 170 s in: its unit tests have run 10 s and go on.
    let running = tower.next_pr_run(&service, 170).await.unwrap();
    let cluster = "dev";
    let streams = || tower.world.served.api_requests()[cluster];
    let before = streams();
    let mut response = tower
        .client()
        .get(tower.url(&log(&running, "&follow=true")))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    let mut read = String::new();
    read_lines(&mut response, &mut read, 1 + 12_500).await;
    assert_eq!(
        read.lines().count(),
        1 + 12_500,
        "the first line and 10 s of tests at 1,250 a second"
    );
    // Two more world seconds: 2,500 more tests arrive on the same stream.
    tower.advance_world(2);
    read_lines(&mut response, &mut read, 1 + 15_000).await;
    let during = streams();
    assert_eq!(
        during.log_streams - before.log_streams,
        1,
        "one stream upstream"
    );
    assert_eq!(during.log_streams_open, 1);
    let metrics = tower
        .client()
        .get(tower.url("/metrics"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(metrics.contains("tower_log_streams_open 1"), "{metrics}");

    // The reader goes: the upstream stream closes within 5 s.
    drop(response);
    crate::support::eventually(
        Duration::from_secs(5),
        "the upstream log stream closed",
        || async { (streams().log_streams_open == 0).then_some(()) },
    )
    .await
    .unwrap();
    assert_eq!(
        streams().log_streams - before.log_streams,
        1,
        "and no other opened"
    );
}

/// Reads `response` into `read` until it holds `lines` whole lines; each chunk within 5 s.
async fn read_lines(response: &mut reqwest::Response, read: &mut String, lines: usize) {
    while !read.ends_with('\n') || read.lines().count() < lines {
        let chunk = tokio::time::timeout(Duration::from_secs(5), response.chunk())
            .await
            .expect("more of the log within 5 s")
            .unwrap()
            .expect("the log goes on");
        read.push_str(std::str::from_utf8(&chunk).unwrap());
    }
}

/// Every tracked app's source and GitOps repos are read in turn, whether or not a page
/// shows them, so an app's later pull requests reach Tower without a webhook.
#[tokio::test]
async fn every_fleet_apps_repos_are_read_in_turn() {
    let tower = Live::start(0.0).await.unwrap();
    let (_, fleet) = tower.get("/api/fleet").await.unwrap();
    let repos: BTreeSet<String> = fleet["apps"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|app| {
            let kind = app["kind"]
                .as_str()
                .and_then(tower_shared::hangar::ServiceKind::from_kind);
            tower_shared::hangar::repos(app["name"].as_str().unwrap(), kind)
        })
        .collect();
    assert!(repos.len() > 40, "{repos:?}");
    // Eight repos every 5 s poll, and a poll or two to spare.
    let limit = Duration::from_secs(5 * (repos.len() as u64 / 8 + 3));
    eventually(limit, "every fleet app's repos read", || async {
        let asked: BTreeSet<String> = tower
            .world
            .platform
            .github_requests()
            .into_iter()
            .filter_map(|(_, path)| {
                let rest = path.strip_prefix("/repos/acme/")?;
                let (repo, tail) = rest.split_once('/')?;
                (tail == "pulls").then(|| repo.to_owned())
            })
            .collect();
        repos.is_subset(&asked).then_some(())
    })
    .await
    .unwrap();
}

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
