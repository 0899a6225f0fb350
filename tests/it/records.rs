//! A prod release's record drafted from what Tower reads of the simulated fleet: the
//! completing canary's release once it is live in prod — its transitions dev → staging →
//! prod with their times, every canary step passed, Argo CD synced and healthy, the
//! evidence Chains left, and the confidence score worked out from them.

use chrono::Duration;
use hangar_sim::stories::fleet::{Role, SteadyFleet};
use hangar_sim::stories::Story as _;
use tower_shared::records::{draft, limit_of, SCHEMA};
use tower_shared::snapshot::Snapshot;

/// What Tower would read of `fleet`'s world at `now`.
pub(crate) fn snapshot_at(fleet: &SteadyFleet, now: chrono::DateTime<chrono::Utc>) -> Snapshot {
    let mut clusters: std::collections::BTreeMap<String, Vec<serde_json::Value>> =
        std::collections::BTreeMap::new();
    for (cluster, object) in fleet.objects_at(now) {
        clusters.entry(cluster).or_default().push(object);
    }
    Snapshot::from_json(
        &serde_json::json!({"now": now, "controlPlaneCluster": "dev", "clusters": clusters})
            .to_string(),
    )
    .unwrap()
}

#[test]
fn a_release_live_in_prod_is_drafted_with_its_journey_gates_evidence_and_score() {
    let start: chrono::DateTime<chrono::Utc> = "2026-11-30T08:00:00Z".parse().unwrap();
    let fleet = SteadyFleet::new(1, start);
    let app = fleet.app(Role::CompletingCanary).unwrap();
    // Half an hour into its next prod rollout: the canary has walked 20 → 40 → 80 % and is
    // the stable version.
    let at = app.prod_rollout_at(start) + Duration::minutes(30);
    let image = app.prod_image(at);
    let snapshot = snapshot_at(&fleet, at);
    let service = app.name.as_str();
    let releases = tower_backend::derived::releases_of(&snapshot, service);
    let release = releases
        .releases
        .iter()
        .find(|r| r.image == image)
        .expect("the release in the matrix");
    let pipelines = tower_shared::pipelines::derive(&snapshot, service);
    let deployments = tower_shared::deployments::derive_deployments(&snapshot, service);
    let prod = deployments
        .environments
        .iter()
        .flatten()
        .find(|e| e.name == "prod");
    let record = draft(release, service, &pipelines, prod, None);

    assert_eq!(record.schema, SCHEMA);
    assert_eq!(record.image, image);
    let journey: Vec<(&str, Option<i64>)> = record
        .transitions
        .iter()
        .map(|t| (t.environment.as_str(), t.after_seconds))
        .collect();
    // Built, in dev 6 minutes later, staging an hour after, prod three hours after its build.
    assert_eq!(
        journey,
        [
            ("dev", Some(360)),
            ("staging", Some(3_600)),
            ("prod", Some(7_200))
        ]
    );
    let steps: Vec<(&str, Option<bool>)> = record
        .gates
        .iter()
        .filter(|g| g.name.starts_with("canary step"))
        .map(|g| (g.name.as_str(), g.passed))
        .collect();
    assert_eq!(steps.len(), 6, "{:?}", record.gates);
    assert!(
        steps.iter().all(|(_, passed)| *passed == Some(true)),
        "{steps:?}"
    );
    assert!(record
        .gates
        .iter()
        .any(|g| g.name == format!("Argo CD {service}-prod") && g.passed == Some(true)));
    assert_eq!(record.pulls, None, "not compared: said, not invented");
    // Chains signs this app's builds: all four pieces of evidence, read from prod.
    let evidence = record.evidence.as_ref().expect("evidence read in prod");
    assert_eq!(evidence.signing, tower_shared::evidence::Signing::Signed);
    assert!(evidence.provenance && evidence.signature && evidence.sbom && evidence.transparency);
    assert!(record
        .digest
        .as_deref()
        .is_some_and(|d| d.starts_with("sha256:")));

    // The score, from the same facts: soaked two hours in staging; no analysis; change
    // size unknown (not compared); no rollbacks.
    let factor = |name: &str| {
        record
            .confidence
            .factors
            .iter()
            .find(|f| f.name == name)
            .unwrap()
            .clone()
    };
    assert_eq!(factor("soak").read, "2h 00m in staging");
    assert!((factor("soak").value - 2.0 / 24.0).abs() < 1e-9);
    assert_eq!(factor("analysis").read, "no analysis ran");
    assert!(factor("change size").read.starts_with("unknown"));
    assert_eq!(factor("rollbacks").points, 10.0);
    assert_eq!(factor("evidence").points, 20.0);
    assert_eq!(factor("runs").read, "1 of 1 run passed");
    let sum: f64 = record.confidence.factors.iter().map(|f| f.points).sum();
    assert!((sum - record.confidence.score).abs() <= 0.05 + 1e-9);
    assert_eq!(limit_of("result[0] < 0.01"), Some(0.01));
    assert_eq!(limit_of("result[0] <= 5"), Some(5.0));
    assert_eq!(limit_of("result[0] > 0.99"), None);
}
