//! The Deployments tab served as a view.

use super::*;

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
