//! The Deployments tab's derivation over the fixtures in `fixtures/deployments/`
//! (`tower deployments`): Argo CD per environment, the rollout read as `kubectl argo
//! rollouts` reads it, in plain words.

use proptest::prelude::*;
use tower_shared::deployments::{derive_deployments, Deployments, StepKind, StepStatus, Strategy};
use tower_shared::fleet::{RolloutPhase, Severity};
use tower_shared::snapshot::Snapshot;

use crate::support::root;

/// The service each fixture is about.
const FIXTURES: &[(&str, &str)] = &[
    ("paused-canary", "flight-api"),
    ("analysis-failed-aborted", "ledger"),
    ("blue-green-awaiting-promotion", "quotes-api"),
    ("spec-not-observed", "orders-api"),
    ("out-of-sync", "billing"),
    ("application-without-rollout", "search"),
    ("fully-promoted", "checkout"),
];

fn text(fixture: &str) -> String {
    std::fs::read_to_string(root().join(format!("fixtures/deployments/{fixture}.json"))).unwrap()
}

fn derive(fixture: &str) -> Deployments {
    let service = FIXTURES.iter().find(|(f, _)| *f == fixture).unwrap().1;
    derive_deployments(&Snapshot::from_json(&text(fixture)).unwrap(), service)
}

#[test]
fn every_fixture_matches_its_snapshot() {
    crate::support::fixtures_are_exactly("deployments", FIXTURES.iter().map(|(f, _)| *f));
    for (fixture, _) in FIXTURES {
        insta::assert_json_snapshot!(format!("deployments-{fixture}"), derive(fixture));
    }
}

#[test]
fn a_paused_canary_is_said_in_plain_words_with_its_ramp_split_and_analysis() {
    let d = derive("paused-canary");
    let envs = d.environments.unwrap();
    // cicd.yaml's order.
    let names: Vec<&str> = envs.iter().map(|e| e.name.as_str()).collect();
    assert_eq!(names, ["dev", "staging", "prod"]);
    let prod = &envs[2];
    assert_eq!(
        (prod.cluster.as_str(), prod.namespace.as_str()),
        ("prod", "app-flight-api-prod")
    );
    let argo = prod.argo.as_ref().unwrap();
    assert_eq!(
        argo.health.as_deref(),
        Some("Suspended"),
        "Argo CD's own word, kept"
    );
    let r = prod.rollout.as_ref().unwrap();
    assert_eq!(r.phase, RolloutPhase::Paused);
    assert!(!r.summary.contains("Suspended"), "{}", r.summary);
    assert!(
        r.summary.contains("paused at 40% of traffic"),
        "{}",
        r.summary
    );
    assert!(
        r.summary.contains("waiting for someone to promote it"),
        "{}",
        r.summary
    );
    assert!(
        r.summary
            .contains("error-rate (3 measurements, all passing)"),
        "{}",
        r.summary
    );
    assert_eq!(r.current_step, Some(3));
    let statuses: Vec<StepStatus> = r.steps.iter().map(|s| s.status).collect();
    use StepStatus::{Current, Done, Pending};
    assert_eq!(statuses, [Done, Done, Done, Current, Pending]);
    assert_eq!(r.steps[3].kind, StepKind::Pause);
    assert_eq!(r.steps[3].duration, Some(None), "a pause until promoted");
    assert_eq!(r.steps[1].duration, Some(Some("10m".to_owned())));
    assert_eq!((r.canary_weight, r.stable_weight), (Some(40), Some(60)));
    let (stable, canary) = (r.stable.as_ref().unwrap(), r.canary.as_ref().unwrap());
    assert_eq!(stable.replica_set.as_deref(), Some("flight-api-6b7a8c9d0"));
    assert!(stable.image.as_deref().unwrap().ends_with(":1.4.1-3c4d5e6"));
    assert_eq!(canary.replica_set.as_deref(), Some("flight-api-5c8d7e9f1"));
    assert_eq!((canary.replicas, canary.ready), (Some(2), Some(2)));
    // Only the current pod hash's analysis; values read as numbers, oldest first.
    assert_eq!(r.analysis.len(), 1);
    let values: Vec<Option<f64>> = r.analysis[0].metrics[0]
        .measurements
        .iter()
        .map(|m| m.value)
        .collect();
    assert_eq!(values, [Some(0.012), Some(0.009), Some(0.014)]);
    let attention = prod.attention.as_ref().unwrap();
    assert_eq!(
        (attention.severity, attention.reason.as_str()),
        (Severity::Attention, "Canary paused at 40% traffic")
    );
    assert!(envs[0].attention.is_none() && envs[1].attention.is_none());
}

#[test]
fn an_aborted_canary_names_the_metric_that_failed() {
    let envs = derive("analysis-failed-aborted").environments.unwrap();
    let prod = &envs[0];
    let r = prod.rollout.as_ref().unwrap();
    assert!(r.aborted);
    assert_eq!(r.phase, RolloutPhase::Degraded);
    assert!(r.summary.contains("aborted"), "{}", r.summary);
    assert!(
        r.summary
            .contains("the analysis metric error-rate failed (last value 0.12)"),
        "{}",
        r.summary
    );
    assert_eq!((r.canary_weight, r.stable_weight), (Some(0), Some(100)));
    let attention = prod.attention.as_ref().unwrap();
    assert_eq!(attention.severity, Severity::Failing);
    assert!(
        attention
            .reason
            .contains("analysis metric error-rate failed"),
        "{}",
        attention.reason
    );
}

#[test]
fn blue_green_shows_active_and_preview_and_no_steps() {
    let envs = derive("blue-green-awaiting-promotion")
        .environments
        .unwrap();
    let r = envs[0].rollout.as_ref().unwrap();
    assert_eq!(r.strategy, Some(Strategy::BlueGreen));
    assert!(r.steps.is_empty());
    assert!(r
        .stable
        .as_ref()
        .unwrap()
        .image
        .as_deref()
        .unwrap()
        .ends_with(":1.4.1-3c4d5e6"));
    assert!(r
        .canary
        .as_ref()
        .unwrap()
        .image
        .as_deref()
        .unwrap()
        .ends_with(":1.4.2-9f2c1ab"));
    assert!(
        r.summary.contains("preview, waiting to be promoted"),
        "{}",
        r.summary
    );
    assert_eq!(r.pause_reason.as_deref(), Some("BlueGreenPause"));
    // No canary takes traffic: the fleet and the tab say a preview waits.
    let attention = envs[0].attention.as_ref().unwrap();
    assert_eq!(attention.reason, "Preview waiting for promotion");
}

#[test]
fn a_spec_not_yet_observed_is_progressing_whatever_the_phase_says() {
    let envs = derive("spec-not-observed").environments.unwrap();
    let r = envs[0].rollout.as_ref().unwrap();
    assert_eq!(r.phase, RolloutPhase::Progressing);
    assert!(
        r.summary.contains("has not picked it up yet"),
        "{}",
        r.summary
    );
}

#[test]
fn out_of_sync_no_rollout_and_fully_promoted() {
    let billing = derive("out-of-sync").environments.unwrap();
    let argo = billing[0].argo.as_ref().unwrap();
    assert_eq!(argo.sync.as_deref(), Some("OutOfSync"));
    assert!(argo.message.as_deref().unwrap().contains("kustomize build"));
    assert_eq!(
        billing[0].attention.as_ref().unwrap().reason,
        "Out of sync with Git"
    );

    let search = derive("application-without-rollout").environments.unwrap();
    assert_eq!(search.len(), 1);
    assert!(
        search[0].rollout.is_none(),
        "no Rollout yet is null, not invented"
    );
    assert_eq!(search[0].namespace, "app-search-dev");

    let checkout = derive("fully-promoted").environments.unwrap();
    for env in &checkout {
        let r = env.rollout.as_ref().unwrap();
        assert_eq!(r.phase, RolloutPhase::Healthy);
        assert!(
            r.canary.is_none(),
            "{}: the canary is the stable one",
            env.name
        );
        assert!(r.steps.iter().all(|s| s.status == StepStatus::Done));
        assert!(r.summary.starts_with("Fully promoted"), "{}", r.summary);
        assert!(env.attention.is_none());
    }
}

#[test]
fn a_cloud_service_gets_exactly_its_cloud_deploys() {
    let text =
        std::fs::read_to_string(root().join("fixtures/cloud-deploys/ecs-success.json")).unwrap();
    let snapshot = Snapshot::from_json(&text).unwrap();
    let d = derive_deployments(&snapshot, "orders-api");
    assert!(d.environments.is_none());
    assert_eq!(
        d.cloud.unwrap(),
        tower_shared::cloud::derive_cloud_deploys(&snapshot, "orders-api")
    );
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]
    #[test]
    fn the_answer_never_depends_on_object_order(seed in any::<u64>(), which in 0..FIXTURES.len()) {
        let (fixture, service) = FIXTURES[which];
        let value: serde_json::Value = serde_json::from_str(&text(fixture)).unwrap();
        let shuffled = crate::provisioning_props::shuffled(&value, seed);
        let snapshot = Snapshot::from_json(&shuffled.to_string()).unwrap();
        prop_assert_eq!(derive_deployments(&snapshot, service), derive(fixture));
    }
}

#[test]
fn tower_deployments_prints_the_tab_and_names_bad_input() {
    let out = std::process::Command::new(crate::support::tower_bin())
        .args(["deployments", "--service", "flight-api", "--snapshot"])
        .arg(root().join("fixtures/deployments/paused-canary.json"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let printed: Deployments = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(printed, derive("paused-canary"));

    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.json");
    std::fs::write(&bad, r#"{"now": "yesterday", "clusters": {}}"#).unwrap();
    let out = std::process::Command::new(crate::support::tower_bin())
        .args(["deployments", "--service", "flight-api", "--snapshot"])
        .arg(&bad)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("now"), "{stderr}");
    let out = std::process::Command::new(crate::support::tower_bin())
        .args([
            "deployments",
            "--service",
            "Not A Service",
            "--snapshot",
            "-",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
}

/// The tab and the fleet say the same of each environment: the tab adds only the name of an
/// analysis metric that failed.
#[test]
fn the_tab_and_the_fleet_agree() {
    for (fixture, service) in FIXTURES {
        let snapshot = Snapshot::from_json(&text(fixture)).unwrap();
        let fleet = tower_shared::fleet::derive_fleet(&snapshot);
        let Some(app) = fleet.apps.iter().find(|a| a.name == *service) else {
            continue;
        };
        let envs = derive_deployments(&snapshot, service).environments.unwrap();
        for cell in &app.cells {
            let env = envs.iter().find(|e| e.name == cell.environment).unwrap();
            let from_fleet = tower_shared::fleet::attention(cell).map(|a| a.reason);
            let from_tab = env.attention.as_ref().map(|a| {
                a.reason
                    .split("; analysis metric")
                    .next()
                    .unwrap()
                    .to_owned()
            });
            assert_eq!(from_tab, from_fleet, "{fixture} {}", cell.environment);
        }
    }
}
