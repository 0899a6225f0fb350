//! Provisioning: one service settled, the snapshot, readiness, metrics and the OpenAPI document,
//! and provisioning history in SQLite and PostgreSQL.

use super::*;

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
        ingestor_location: None,
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
    // The tabs served whole are routed from the one list of them.
    struct Ids(Vec<String>);
    impl tower_shared::served::EachWholeTab for Ids {
        fn tab<A: tower_shared::served::WholeTab>(&mut self) {
            self.0.push(format!("/api/{}", A::ID));
        }
    }
    let mut whole = Ids(Vec::new());
    tower_shared::whole_tabs(&mut whole);
    let whole = whole.0;
    assert!(whole.iter().any(|p| p == "/api/deployments"), "{whole:?}");
    for path in &whole {
        let (status, body) = tower.get(&format!("{path}?service=nope")).await.unwrap();
        assert_eq!(status, StatusCode::NOT_FOUND, "{path}: {body}");
        assert_eq!(body["field"], "service", "{path}: {body}");
    }
    let mut served: BTreeSet<&str> = [
        "/api/fleet",
        "/api/activity",
        "/api/snapshot",
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
    let routes_rs =
        std::fs::read_to_string(crate::support::root().join("backend/src/routes/mod.rs")).unwrap();
    for path in served.iter().filter(|p| **p != "/healthz") {
        assert!(
            routes_rs.contains(&format!("\"{path}\"")),
            "{path} is routed in routes/mod.rs"
        );
    }
    served.extend(whole.iter().map(String::as_str));
    assert_eq!(documented, served);
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

    // A person records runs only of services Tower observes.
    let mut fake = run.clone();
    fake["service"] = json!("zz-fake-1");
    // (Of a kind of its own: the NodeJS typicals below stay those of observed services.)
    fake["kind"] = json!("Go");
    let refused = post(fake.clone()).await.unwrap();
    assert_eq!(refused.status(), StatusCode::NOT_FOUND);
    let error: Value = refused.json().await.unwrap();
    assert_eq!(error["field"], "service", "{error}");
    // A tool (a pipeline reporting provisions Tower cannot see) records it.
    let secret = "provision-reporter-token-0123456789";
    let router = tower.router_with_tool("tool:reporter", secret, &["/provisioning-history/*"]);
    let request = axum::http::Request::post("/provisioning-history/runs")
        .header("authorization", format!("Bearer {secret}"));
    let (status, stored) = crate::support::call(&router, request, &fake.to_string()).await;
    assert_eq!(status, StatusCode::CREATED, "{stored}");

    // Two more NodeJS runs, of services Tower observes, make three: the measured median
    // replaces the estimate.
    let others: Vec<String> =
        hangar_sim::stories::fleet::SteadyFleet::new(1, crate::support::test_start())
            .apps
            .into_iter()
            .map(|a| a.name)
            .filter(|name| name != "billing")
            .take(3)
            .collect();
    for (service, build) in others.iter().zip([300, 500]) {
        let mut more = run.clone();
        more["service"] = json!(service);
        more["steps"]["first-build"] = json!(build);
        assert_eq!(post(more).await.unwrap().status(), StatusCode::CREATED);
    }
    let typical_build = || async {
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
            .unwrap()
            .clone();
        (
            build["seconds"].as_u64(),
            build["source"].as_str().map(str::to_owned),
            body,
        )
    };
    let (seconds, source, body) = typical_build().await;
    assert_eq!((seconds, source.as_deref()), (Some(400), Some("measured")));

    // One service recorded again and again, each run a week long: it keeps five runs (a
    // sixth is refused), and the typical build reads two of them — the median moves to the
    // next run's 500 s, not to the loop's 600,000 s.
    let looped = &others[2];
    let start: chrono::DateTime<chrono::Utc> = "2026-11-20T00:00:00Z".parse().unwrap();
    for i in 0..6 {
        let started = start + chrono::TimeDelta::hours(i);
        let body = json!({"service": looped, "kind": "NodeJS",
            "startedAt": started.to_rfc3339(),
            "finishedAt": (started + chrono::TimeDelta::seconds(600_100)).to_rfc3339(),
            "steps": {"first-build": 600_000}});
        let answer = post(body).await.unwrap();
        if i < 5 {
            assert_eq!(answer.status(), StatusCode::CREATED, "run {i}");
        } else {
            assert_eq!(answer.status(), StatusCode::CONFLICT, "run {i}");
            let error: Value = answer.json().await.unwrap();
            assert_eq!(error["field"], "service", "{error}");
        }
    }
    let (seconds, _, _) = typical_build().await;
    assert_eq!(seconds, Some(500));
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
