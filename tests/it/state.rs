//! One truth per service and environment (`shared::state`), offline: `tower state` and
//! `tower fleet` print what the fleet and the tabs read, and name bad input.

use tower_shared::fleet::Fleet;
use tower_shared::state::ServiceState;

use crate::support::root;

fn tower(args: &[&str]) -> std::process::Output {
    std::process::Command::new(crate::support::tower_bin())
        .args(args)
        .output()
        .unwrap()
}

#[test]
fn tower_state_and_tower_fleet_print_the_one_state_the_fleet_reads() {
    let fixture = root().join("fixtures/releases/staging-canary.json");
    let fixture = fixture.to_str().unwrap();
    let state: ServiceState =
        crate::support::tower_prints(["state", "--service", "storefront", "--snapshot", fixture]);
    let environments: Vec<&str> = state
        .environments
        .iter()
        .map(|e| e.environment.as_str())
        .collect();
    assert_eq!(environments, ["dev", "staging", "prod"]);
    // Staging runs its stable version while the canary walks in, at its actual weight.
    let staging = &state.environments[1];
    let arriving = staging.arriving.as_ref().expect("staging's canary");
    assert_ne!(staging.running, arriving.image);
    assert_eq!(arriving.weight, Some(20));

    let fleet: Fleet =
        crate::support::tower_prints(["fleet", "--service", "storefront", "--snapshot", fixture]);
    assert_eq!(fleet.apps.len(), 1);
    assert_eq!(
        fleet.apps[0].cells, state.environments,
        "the fleet's cells are the state"
    );

    let out = tower(&["state", "--service", "ghost", "--snapshot", fixture]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("deploy ghost nowhere"));
    let out = tower(&["fleet", "--service", "ghost", "--snapshot", fixture]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("knows no service ghost"));
}

#[test]
fn the_fleet_lists_cloud_targets_and_services_still_provisioning() {
    let fixture = |name: &str| root().join("fixtures").join(name).display().to_string();
    // An ECS service whose newest deploy failed: its dev cell runs the version the last
    // success put there and fails with the deploy that did not fix it.
    let failed = fixture("cloud-deploys/ecs-failed.json");
    let fleet: Fleet = crate::support::tower_prints(["fleet", "--snapshot", &failed]);
    let cloud: Vec<_> = fleet
        .apps
        .iter()
        .flat_map(|a| &a.cells)
        .filter(|c| c.cloud.is_some())
        .collect();
    assert!(!cloud.is_empty(), "{fleet:?}");
    let cell = cloud[0];
    let said = cell.attention().expect("a failed deploy is trouble");
    assert_eq!(said.severity, tower_shared::fleet::Severity::Failing);
    assert!(
        said.reason.starts_with("Deploy of ") && said.reason.contains(" to AWS ECS failed"),
        "{said:?}"
    );
    // The same failure fixed by a newer success: calm, running the newer version.
    let fixed = fixture("cloud-deploys/ecs-failure-fixed.json");
    let fleet: Fleet = crate::support::tower_prints(["fleet", "--snapshot", &fixed]);
    let cell = fleet
        .apps
        .iter()
        .flat_map(|a| &a.cells)
        .find(|c| c.cloud.is_some())
        .expect("the ECS service's cell");
    assert_eq!(cell.attention(), None, "{cell:?}");
    assert!(cell.running.is_some(), "{cell:?}");

    // An InfraService stalled without its environment: a row of its own, amber, saying so.
    let stalled = fixture("provisioning/infraservice-stalled.json");
    let fleet: Fleet = crate::support::tower_prints(["fleet", "--snapshot", &stalled]);
    let row = fleet
        .apps
        .iter()
        .find(|a| a.kind == "InfraService")
        .unwrap_or_else(|| panic!("no InfraService row: {fleet:?}"));
    assert!(row.cells.is_empty());
    let said = row.provisioning.as_ref().expect("its provisioning");
    assert_eq!(said.severity, tower_shared::fleet::Severity::Attention);
    assert!(
        said.reason.starts_with("Provisioning stalled at "),
        "{said:?}"
    );
    assert!(tower_shared::fleet::needs_attention(row));
}
