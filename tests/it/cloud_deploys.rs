//! The cloud deploy derivation over the fixtures in `fixtures/cloud-deploys/`.

use tower_shared::cloud::{derive_cloud_deploys, Capability, CloudDeploys, CloudTarget};
use tower_shared::snapshot::Snapshot;
use tower_shared::tekton::RunStatus;

use crate::support::root;

/// The service each fixture is about.
const FIXTURES: &[(&str, &str)] = &[
    ("ecs-success", "orders-api"),
    ("ecs-failed", "orders-api"),
    ("ecs-in-progress", "orders-api"),
    ("ecs-failure-fixed", "orders-api"),
    ("ecs-malformed-config", "orders-api"),
    ("lambda", "thumbnailer"),
    ("lambda-target-from-task", "thumbnailer"),
    ("azure", "quotes-web"),
    ("kubernetes", "checkout-web"),
];

fn derive(fixture: &str) -> CloudDeploys {
    let service = FIXTURES
        .iter()
        .find(|(f, _)| *f == fixture)
        .map(|(_, s)| *s)
        .unwrap();
    let path = root().join(format!("fixtures/cloud-deploys/{fixture}.json"));
    let snapshot = Snapshot::from_json(&std::fs::read_to_string(path).unwrap()).unwrap();
    derive_cloud_deploys(&snapshot, service)
}

#[test]
fn every_fixture_matches_its_snapshot() {
    crate::support::fixtures_are_exactly("cloud-deploys", FIXTURES.iter().map(|(f, _)| *f));
    for (fixture, _) in FIXTURES {
        insta::assert_json_snapshot!(format!("cloud-{fixture}"), derive(fixture));
    }
}

#[test]
fn a_successful_ecs_deploy_links_the_console() {
    let d = derive("ecs-success");
    assert_eq!(d.capability, Capability::CloudRuntime);
    assert_eq!(d.target, Some(CloudTarget::AwsEcs));
    assert_eq!(d.resource.as_deref(), Some("orders-api"));
    assert_eq!(d.region.as_deref(), Some("eu-west-1"));
    assert!(d
        .console_url
        .unwrap()
        .starts_with("https://eu-west-1.console.aws.amazon.com/ecs/"));
    let last = d.last_success.unwrap();
    assert_eq!(last.commit.as_deref(), Some("4be1c2d"));
    assert_eq!(last.environment.as_deref(), Some("dev"));
    assert!(d.latest_failure.is_none() && d.in_progress.is_none());
    assert_eq!(d.history.len(), 2);
    assert!(
        d.history[0].started_at > d.history[1].started_at,
        "newest first"
    );
}

#[test]
fn an_unfixed_failure_names_the_cloud_task_and_tektons_message() {
    let d = derive("ecs-failed");
    let failure = d.latest_failure.unwrap();
    assert_eq!(failure.failed_task.as_deref(), Some("deploy-aws-ecs"));
    assert!(failure.message.unwrap().contains("did not stabilize"));
    // The older success is still what the cloud may be running.
    assert_eq!(d.last_success.unwrap().commit.as_deref(), Some("0c1d2e3"));
}

#[test]
fn a_newer_success_fixes_a_failure() {
    let d = derive("ecs-failure-fixed");
    assert!(d.latest_failure.is_none());
    assert_eq!(d.history[1].status, RunStatus::Failed);
}

#[test]
fn a_running_deploy_already_shows_target_and_resource() {
    let d = derive("ecs-in-progress");
    let running = d.in_progress.unwrap();
    assert_eq!(running.commit.as_deref(), Some("77aa9f0"));
    assert_eq!(running.finished_at, None);
    assert_eq!(d.history[0].run, running.run);
    assert_eq!(d.resource.as_deref(), Some("orders-api"));
}

#[test]
fn malformed_config_json_leaves_resource_and_region_unknown() {
    let d = derive("ecs-malformed-config");
    assert_eq!(d.target, Some(CloudTarget::AwsEcs));
    assert_eq!((d.resource, d.region, d.console_url), (None, None, None));
    assert!(d.last_success.is_some());
}

#[test]
fn lambda_and_azure() {
    let lambda = derive("lambda");
    assert_eq!(lambda.target, Some(CloudTarget::AwsLambda));
    assert_eq!(lambda.resource.as_deref(), Some("thumbnailer"));
    assert!(lambda
        .console_url
        .unwrap()
        .ends_with("#/functions/thumbnailer"));
    assert!(
        lambda.latest_failure.is_none(),
        "the second deploy fixed the first"
    );

    let old = derive("lambda-target-from-task");
    assert_eq!(old.target, Some(CloudTarget::AwsLambda));

    let azure = derive("azure");
    assert_eq!(azure.target, Some(CloudTarget::AzureContainerApps));
    assert_eq!(azure.resource.as_deref(), Some("quotes-web"));
    assert_eq!(azure.region.as_deref(), Some("westeurope"));
    assert_eq!(
        azure.last_success.unwrap().environment.as_deref(),
        Some("staging")
    );
    assert!(azure.console_url.unwrap().contains("portal.azure.com"));
}

#[test]
fn a_kubernetes_service_gets_the_k8s_runtime_tab() {
    let d = derive("kubernetes");
    assert_eq!(d.capability, Capability::K8sRuntime);
    assert_eq!(d.target, None);
    assert!(d.history.is_empty());
}
