//! The Deployments tab's derivation over the fixtures in `fixtures/deployments/`
//! (`tower deployments`): Argo CD per environment, the rollout read as `kubectl argo
//! rollouts` reads it, in plain words.

use proptest::prelude::*;
use tower_shared::argo::RolloutPhase;
use tower_shared::deployments::{derive_deployments, Deployments, StepKind, StepStatus, Strategy};
use tower_shared::evidence::Signing;
use tower_shared::fleet::Severity;
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
fn evidence_sits_beside_each_deployed_image_and_missing_evidence_is_said() {
    let envs = derive("paused-canary").environments.unwrap();
    let r = envs[2].rollout.as_ref().unwrap();
    // The canary's image: built by a signed TaskRun with provenance, a transparency log
    // entry and an SBOM.
    let canary = r.canary.as_ref().unwrap().evidence.as_ref().unwrap();
    assert_eq!(canary.signing, Signing::Signed);
    let build = canary.build.as_ref().unwrap();
    assert_eq!(
        (build.name.as_str(), build.pipeline_run.as_deref()),
        (
            "flight-api-build-142-build-image",
            Some("flight-api-build-142")
        )
    );
    let provenance = canary.provenance.as_ref().unwrap();
    assert_eq!(
        provenance.predicate_type.as_deref(),
        Some("https://slsa.dev/provenance/v1")
    );
    assert_eq!(
        provenance.builder.as_deref(),
        Some("https://tekton.dev/chains/v2")
    );
    assert_eq!(provenance.subject_matches, Some(true));
    let source = provenance.source.as_ref().unwrap();
    assert_eq!(
        source.url.as_deref(),
        Some("https://github.com/acme/flight-api/commit/9f2c1ab4e5d6c7b8a9f0e1d2c3b4a5f6e7d8c9b0")
    );
    assert_eq!(provenance.materials.len(), 2);
    let transparency = canary.transparency.as_ref().unwrap();
    assert_eq!(
        (transparency.log_index, transparency.url.as_deref()),
        (
            Some(123_456_789),
            Some("https://search.sigstore.dev/?logIndex=123456789")
        )
    );
    assert!(canary
        .signature
        .as_deref()
        .is_some_and(|k| k.starts_with("taskrun-")));
    assert!(canary.sbom.is_some());
    assert_eq!(
        canary.summary,
        "Signed by Tekton Chains (flight-api-build-142-build-image); provenance names commit 9f2c1ab; transparency log entry 123456789; SBOM published."
    );
    // The stable image: its own build is unsigned, and another tenant's run claiming to have
    // built and signed it does not count.
    let stable = r.stable.as_ref().unwrap().evidence.as_ref().unwrap();
    assert_eq!(stable.signing, Signing::Unsigned);
    assert_eq!(
        stable.build.as_ref().map(|b| b.name.as_str()),
        Some("flight-api-build-141-build-image")
    );
    assert_eq!(
        stable.summary,
        "Not signed: Tekton Chains has not signed flight-api-build-141-build-image; no provenance recorded; no transparency log entry; no SBOM published."
    );
    // An image no build in the CI/CD namespace names: said, not hidden.
    let elsewhere = derive("fully-promoted").environments.unwrap();
    let stable = elsewhere[0]
        .rollout
        .as_ref()
        .unwrap()
        .stable
        .as_ref()
        .unwrap();
    let evidence = stable.evidence.as_ref().unwrap();
    assert_eq!(
        (evidence.signing, evidence.build.as_ref()),
        (Signing::Unknown, None)
    );
    assert!(evidence
        .summary
        .starts_with("Tower found no build of this image"));
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
    let fixture = root().join("fixtures/deployments/paused-canary.json");
    let printed: Deployments = crate::support::tower_prints([
        "deployments".as_ref(),
        "--service".as_ref(),
        "flight-api".as_ref(),
        "--snapshot".as_ref(),
        fixture.as_os_str(),
    ]);
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

/// The simulated fleet at `now`, read by the Deployments derivation, for `service`'s prod.
fn simulated_prod(
    fleet: &hangar_sim::stories::fleet::SteadyFleet,
    service: &str,
    now: chrono::DateTime<chrono::Utc>,
) -> tower_shared::deployments::Environment {
    let snapshot = crate::records::snapshot_at(fleet, now);
    derive_deployments(&snapshot, service)
        .environments
        .unwrap()
        .into_iter()
        .find(|e| e.name == "prod")
        .expect("a prod environment")
}

#[test]
fn the_simulated_fleet_plays_every_kind_of_rollout_as_world_time_passes() {
    use hangar_sim::stories::fleet::{Chains, Role, SteadyFleet};
    let start: chrono::DateTime<chrono::Utc> = "2026-11-30T08:00:00Z".parse().unwrap();
    let fleet = SteadyFleet::new(1, start);
    let after = |role, seconds| {
        let app = fleet.app(role).expect("the fleet plays every role");
        let at = app.prod_rollout_at(start) + chrono::Duration::seconds(seconds);
        (app.name.clone(), simulated_prod(&fleet, &app.name, at))
    };
    let rollout = |env: &tower_shared::deployments::Environment| env.rollout.clone().unwrap();
    let canary_pods =
        |r: &tower_shared::deployments::RolloutView| r.canary.as_ref().and_then(|c| c.replicas);

    // The paused canary: 20 % for ten minutes, then paused at 40 % under its background
    // analysis, which gains a measurement every five minutes; the canary's pods follow.
    let (_, early) = after(Role::PausedCanary, 60);
    let r = rollout(&early);
    assert!(
        r.summary
            .contains("paused at 20% of traffic, for a pause of 10m that ends on its own"),
        "{}",
        r.summary
    );
    assert_eq!((r.canary_weight, canary_pods(&r)), (Some(20), Some(1)));
    let (_, later) = after(Role::PausedCanary, 660);
    let r = rollout(&later);
    assert!(
        r.summary
            .contains("paused at 40% of traffic, waiting for someone to promote it"),
        "{}",
        r.summary
    );
    assert_eq!((r.canary_weight, canary_pods(&r)), (Some(40), Some(2)));
    let measured =
        |r: &tower_shared::deployments::RolloutView| r.analysis[0].metrics[0].measurements.len();
    assert_eq!(measured(&r), 3);
    let (_, much_later) = after(Role::PausedCanary, 3_000);
    assert_eq!(measured(&rollout(&much_later)), 11);

    // The aborting canary: its step analysis fails every measurement; the third aborts it.
    let (_, measuring) = after(Role::AbortedCanary, 70);
    let r = rollout(&measuring);
    assert_eq!(
        (r.phase, r.canary_weight, r.aborted),
        (RolloutPhase::Progressing, Some(20), false)
    );
    assert_eq!(measured(&r), 2);
    let (_, aborted) = after(Role::AbortedCanary, 300);
    let r = rollout(&aborted);
    assert!(r.aborted && r.phase == RolloutPhase::Degraded);
    assert!(
        r.summary
            .contains("the analysis metric error-rate failed (last value"),
        "{}",
        r.summary
    );
    assert_eq!((r.canary_weight, canary_pods(&r)), (Some(0), Some(0)));
    assert_eq!(aborted.attention.unwrap().severity, Severity::Failing);

    // Blue-green: the preview waits for a promotion.
    let (_, preview) = after(Role::BlueGreen, 60);
    let r = rollout(&preview);
    assert_eq!(
        (r.strategy, r.phase),
        (Some(Strategy::BlueGreen), RolloutPhase::Paused)
    );
    assert_eq!(
        preview.attention.unwrap().reason,
        "Preview waiting for promotion"
    );

    // The completing canary walks 20 → 40 → 80 % and is promoted after 25 minutes.
    let weights: Vec<Option<u32>> = [60, 660, 1_260]
        .into_iter()
        .map(|s| rollout(&after(Role::CompletingCanary, s).1).canary_weight)
        .collect();
    assert_eq!(weights, [Some(20), Some(40), Some(80)]);
    let (_, done) = after(Role::CompletingCanary, 1_560);
    let r = rollout(&done);
    assert_eq!((r.phase, r.canary.is_none()), (RolloutPhase::Healthy, true));
    assert!(r.summary.starts_with("Fully promoted"), "{}", r.summary);
    assert!(done.attention.is_none());

    // Each app's builds are signed, unsigned or failed as its Chains says, and the
    // evidence finds the build of the image running in prod.
    let at = start + chrono::Duration::hours(5);
    // (The app held for promotions runs in prod a release older than the builds kept.)
    for app in fleet.apps.iter().filter(|a| a.held.is_none()) {
        let prod = simulated_prod(&fleet, &app.name, at);
        let stable = rollout(&prod).stable.unwrap();
        let evidence = stable.evidence.unwrap();
        assert!(
            evidence.build.is_some(),
            "{}: {}",
            app.name,
            evidence.summary
        );
        let expected = match app.chains {
            Chains::Signs => Signing::Signed,
            Chains::Absent => Signing::Unsigned,
            Chains::Fails => Signing::Failed,
        };
        assert_eq!(
            evidence.signing, expected,
            "{}: {}",
            app.name, evidence.summary
        );
        assert_eq!(evidence.provenance.is_some(), app.chains == Chains::Signs);
        if app.chains == Chains::Signs {
            let source = evidence.provenance.unwrap().source.unwrap();
            assert!(
                stable
                    .image
                    .as_deref()
                    .unwrap()
                    .ends_with(&source.commit.unwrap()[..7]),
                "the provenance names the commit the image is tagged with"
            );
        }
    }
}

#[test]
fn a_services_part_of_the_snapshot_derives_what_the_whole_does() {
    // The backend derives one service's tab from its part of what it filed
    // (`tower_backend::filed`: a pass over every object per service would not scale).
    for (fixture, service) in FIXTURES {
        let full = Snapshot::from_json(&text(fixture)).unwrap();
        let (filing, base) = tower_backend::filed::Filing::of(full.clone());
        let filed = filing.filed();
        assert!(filed.knows(service), "{fixture}");
        let part = filed.part(&base, service);
        assert_eq!(
            part,
            crate::filing::sorted(full.for_service(service)),
            "{fixture}"
        );
        assert!(
            part.clusters.values().map(Vec::len).sum::<usize>()
                < full.clusters.values().map(Vec::len).sum::<usize>()
                || *fixture != "paused-canary",
            "the paused canary's fixture holds another tenant's run, which is not flight-api's"
        );
        assert_eq!(
            derive_deployments(&part, service),
            derive_deployments(&full, service),
            "{fixture}"
        );
    }
}
