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
    assert!(String::from_utf8_lossy(&out.stderr).contains("deploy ghost nowhere"));
}
