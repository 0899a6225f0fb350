//! `tower demo`'s HTTP surface through a real socket.

use reqwest::header::{ACCEPT_ENCODING, CACHE_CONTROL, CONTENT_ENCODING, CONTENT_TYPE};
use reqwest::StatusCode;
use tower_shared::argo::{HealthStatus, RolloutPhase};
use tower_shared::fleet::Fleet;

use crate::support::Demo;

#[tokio::test]
async fn api_serves_the_fleet_as_json() {
    let demo = Demo::start().await.unwrap();
    let response = demo
        .client()
        .await
        .unwrap()
        .get(format!("{}api/fleet", demo.url))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(response.headers()[CONTENT_TYPE], "application/json");
    let fleet: Fleet = response.json().await.unwrap();
    // Derived from the simulated world: the steady fleet across three environments, trouble
    // first, its paused canary paused in prod (the demo runs on the wall clock: at 20 % in
    // the canary's first ten minutes, at 40 % after them).
    assert_eq!(fleet.environments, ["dev", "staging", "prod"]);
    // The steady fleet Argo CD deploys, and every other service the demo knows: those on a
    // cloud target and those still provisioning.
    let argo = fleet
        .apps
        .iter()
        .filter(|a| a.cells.iter().any(|c| c.cloud.is_none()))
        .count();
    assert!((26..=30).contains(&argo), "{argo} apps Argo CD deploys");
    let others: std::collections::BTreeSet<&str> = fleet
        .apps
        .iter()
        .filter(|a| a.cells.iter().all(|c| c.cloud.is_some()))
        .map(|a| a.name.as_str())
        .collect();
    for name in ["orders-api", "thumbnailer", "events-bus", "ledger"] {
        assert!(
            others.contains(name),
            "{name} is not on the fleet: {others:?}"
        );
    }
    let trouble: Vec<_> = fleet
        .apps
        .iter()
        .map(tower_shared::fleet::app_attention)
        .collect();
    assert!(
        trouble.windows(2).all(|w| w[0] >= w[1]),
        "trouble first: {trouble:?}"
    );
    let name = crate::support::fleet_app(hangar_sim::stories::fleet::Role::PausedCanary).name;
    let canary = fleet.apps.iter().find(|a| a.name == name).unwrap();
    let prod = canary
        .cells
        .iter()
        .find(|c| c.environment == "prod")
        .unwrap();
    let rollout = prod.rollout.as_ref().unwrap();
    assert_eq!(rollout.phase, RolloutPhase::Paused);
    let weight = prod.arriving.as_ref().and_then(|a| a.weight);
    assert!(matches!(weight, Some(20 | 40)), "{weight:?}");
    assert_eq!(prod.health, HealthStatus::Suspended);
    let calm = &fleet.apps[fleet.apps.len() - 1];
    assert!(calm.cells.iter().all(|c| c.health == HealthStatus::Healthy));
    assert!(calm.cells.iter().all(|c| c.running.is_some()));
}

#[tokio::test]
async fn unknown_api_routes_get_a_json_404() {
    let demo = Demo::start().await.unwrap();
    let response = demo
        .client()
        .await
        .unwrap()
        .get(format!("{}api/no-such-thing", demo.url))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::NOT_FOUND);
    let body: serde_json::Value = response.json().await.unwrap();
    assert_eq!(body["path"], "/api/no-such-thing");
    assert!(body["error"]
        .as_str()
        .unwrap()
        .contains("no such API route"));
}

#[tokio::test]
async fn frontend_assets_are_typed_compressed_and_cached() {
    let demo = Demo::start().await.unwrap();
    let client = demo.client().await.unwrap();
    let index = client.get(&demo.url).send().await.unwrap();
    assert_eq!(index.status(), StatusCode::OK);
    assert_eq!(index.headers()[CACHE_CONTROL], "no-cache");
    let html = index.text().await.unwrap();

    // The build's folder, named for its contents: `/app-<16 hex>/tower_bg.wasm`.
    let end = html
        .find("/tower_bg.wasm")
        .expect("index.html names the wasm")
        + "/tower_bg.wasm".len();
    let start = html[..end].rfind("app-").expect("the build's folder");
    let wasm_name = &html[start..end];
    let folder = &wasm_name[..wasm_name.find('/').unwrap()];
    // A tab's chunk is served alike: typed, compressed, cached for good.
    let chunk = std::fs::read_dir(crate::support::dist().unwrap().join(folder))
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .find(|name| name.starts_with("split_") && name.ends_with(".wasm"))
        .expect("a tab's chunk beside the main module");
    let chunk_name = format!("{folder}/{chunk}");

    for (name, accept, encoding) in [
        (wasm_name, "br", "br"),
        (wasm_name, "gzip", "gzip"),
        (chunk_name.as_str(), "br", "br"),
    ] {
        let wasm = client
            .get(format!("{}{name}", demo.url))
            .header(ACCEPT_ENCODING, accept)
            .send()
            .await
            .unwrap();
        assert_eq!(wasm.status(), StatusCode::OK, "{name}");
        assert_eq!(wasm.headers()[CONTENT_TYPE], "application/wasm");
        assert_eq!(wasm.headers()[CONTENT_ENCODING], encoding);
        assert_eq!(
            wasm.headers()[CACHE_CONTROL],
            "public, max-age=31536000, immutable"
        );
    }

    let deep_link = client
        .get(format!(
            "{}tower?view=provisioning&service=checkout-web",
            demo.url
        ))
        .send()
        .await
        .unwrap();
    assert_eq!(deep_link.status(), StatusCode::OK);
    assert_eq!(deep_link.text().await.unwrap(), html);

    let health = client
        .get(format!("{}healthz", demo.url))
        .send()
        .await
        .unwrap();
    assert_eq!(health.status(), StatusCode::OK);
}

#[tokio::test]
async fn snapshot_route_validates_the_service_name() {
    let demo = Demo::start_with(&["--speed", "0"]).await.unwrap();
    let client = demo.client().await.unwrap();
    let get = |query: &'static str| {
        client
            .get(format!("{}api/snapshot{query}", demo.url))
            .send()
    };

    let ok = get("?service=orders-api").await.unwrap();
    assert_eq!(ok.status(), StatusCode::OK);
    let snapshot: tower_shared::snapshot::Snapshot = ok.json().await.unwrap();
    let deploys = tower_shared::cloud::derive_cloud_deploys(&snapshot, "orders-api");
    assert_eq!(deploys.history.len(), 3);
    assert!(
        snapshot
            .cluster("dev")
            .iter()
            .all(|o| o.name() != "thumbnailer"),
        "only the asked-for service's objects"
    );

    for (query, status) in [
        ("", StatusCode::BAD_REQUEST),
        ("?service=Not_A_Name", StatusCode::BAD_REQUEST),
        ("?service=nobody", StatusCode::NOT_FOUND),
    ] {
        let response = get(query).await.unwrap();
        assert_eq!(response.status(), status, "{query}");
        let body: serde_json::Value = response.json().await.unwrap();
        assert_eq!(body["field"], "service", "{query}");
        assert!(
            body["error"].as_str().is_some_and(|e| !e.is_empty()),
            "{query}"
        );
    }
}

/// DNS rebinding: a web page re-points its own name at 127.0.0.1 and reads the demo (where
/// anyone is a caller) as same-origin. Its requests carry its name as `Host`, and are refused.
#[tokio::test]
async fn the_demo_answers_only_requests_addressed_to_loopback() {
    let demo = Demo::start().await.unwrap();
    let port = demo
        .url
        .trim_end_matches('/')
        .rsplit(':')
        .next()
        .unwrap()
        .to_owned();
    let client = demo.client().await.unwrap();
    for path in ["auth/guest", "api/fleet", ""] {
        let url = format!("{}{path}", demo.url);
        let rebound = client
            .get(&url)
            .header("host", format!("attacker.example:{port}"))
            .send()
            .await
            .unwrap();
        assert_eq!(rebound.status(), StatusCode::MISDIRECTED_REQUEST, "/{path}");
        let body: serde_json::Value = rebound.json().await.unwrap();
        assert_eq!(body["field"], "host", "/{path}");
        for host in [format!("localhost:{port}"), format!("127.0.0.1:{port}")] {
            let ok = client.get(&url).header("host", &host).send().await.unwrap();
            assert_eq!(ok.status(), StatusCode::OK, "/{path} as {host}");
        }
    }
}
