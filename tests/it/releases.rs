//! The release matrix over the fixtures in `fixtures/releases/` (`tower releases`), captured
//! from the demo's `storefront` as it was promoted: waiting in dev for staging, walking into
//! staging as a canary, and with its pull request to prod open.

use proptest::prelude::*;
use tower_shared::cicd::Promotion;
use tower_shared::releases::{CellState, PullRef, Releases};
use tower_shared::snapshot::Snapshot;

use crate::support::root;

const SERVICE: &str = "storefront";
const FIXTURES: &[&str] = &[
    "waiting-for-staging",
    "staging-canary",
    "prod-pull-request-open",
];

fn text(fixture: &str) -> String {
    std::fs::read_to_string(root().join(format!("fixtures/releases/{fixture}.json"))).unwrap()
}

fn derive(fixture: &str) -> Releases {
    tower_shared::releases::of_snapshot(&Snapshot::from_json(&text(fixture)).unwrap(), SERVICE)
}

/// A release as read here: its tag, its states across the environments, where it goes next.
type Read = (String, Vec<CellState>, Option<(String, Promotion)>);

/// Each release's tag, its states across the environments, and where it goes next.
fn read(releases: &Releases) -> Vec<Read> {
    releases
        .releases
        .iter()
        .map(|r| {
            (
                format!(
                    "{}-{}",
                    r.version.as_deref().unwrap_or("?"),
                    r.short_sha.as_deref().unwrap_or("?")
                ),
                r.cells.iter().map(|c| c.state).collect(),
                r.next.as_ref().map(|n| (n.environment.clone(), n.how)),
            )
        })
        .collect()
}

#[test]
fn every_fixture_matches_its_snapshot() {
    crate::support::fixtures_are_exactly("releases", FIXTURES.iter().copied());
    for fixture in FIXTURES {
        insta::assert_json_snapshot!(format!("releases-{fixture}"), derive(fixture));
    }
}

#[test]
fn each_release_goes_to_one_place_next_and_an_open_pull_request_is_found() {
    use CellState::*;
    let waiting = derive("waiting-for-staging");
    assert_eq!(waiting.environments, ["dev", "staging", "prod"]);
    let staging = ("staging".to_owned(), Promotion::Commit);
    let prod = ("prod".to_owned(), Promotion::PullRequest);
    assert_eq!(
        read(&waiting),
        [
            (
                "1.312.0-986f4aa".to_owned(),
                vec![Live, NotYet, NotYet],
                Some(staging.clone())
            ),
            (
                "1.311.0-986f47a".to_owned(),
                vec![Superseded, Live, NotYet],
                Some(prod.clone())
            ),
            (
                "1.310.0-986f48a".to_owned(),
                vec![Superseded, Superseded, Live],
                None
            ),
        ]
    );

    // Walking into staging: a canary goes nowhere until it is the stable version there.
    let canary = derive("staging-canary");
    let newest = &canary.releases[0];
    assert_eq!(
        (newest.cells[1].state, newest.cells[1].weight),
        (Canary, Some(20))
    );
    assert_eq!(newest.next, None);
    assert!(
        newest.cells[1].arrived_at.is_some(),
        "the sync that brought it"
    );

    // Live in staging, its pull request to prod open: the cell points at it. A newer build
    // waits in dev for staging meanwhile.
    let open = derive("prod-pull-request-open");
    let rows = read(&open);
    // 1.311 ran in staging before 1.312 replaced it: its ReplicaSet, kept scaled to zero,
    // says since when; in dev nothing of it is kept.
    let before = &open.releases[2].cells;
    assert_eq!(before[1].state, Superseded);
    assert!(before[1].arrived_at.is_some(), "{before:?}");
    assert_eq!(before[0].arrived_at, None);
    assert_eq!(rows[0].2, Some(staging));
    assert_eq!(rows[1].0, "1.312.0-986f4aa");
    assert_eq!(rows[1].1, [Superseded, Live, NotYet]);
    let next = open.releases[1].next.as_ref().unwrap();
    assert_eq!(
        (next.environment.as_str(), next.how),
        ("prod", Promotion::PullRequest)
    );
    assert_eq!(
        next.pull,
        Some(PullRef {
            number: 1,
            url: Some("https://github.com/acme/gitops-storefront/pull/1".to_owned())
        })
    );
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(16))]
    #[test]
    fn the_matrix_never_depends_on_object_order(seed in any::<u64>(), which in 0..FIXTURES.len()) {
        let fixture = FIXTURES[which];
        let value: serde_json::Value = serde_json::from_str(&text(fixture)).unwrap();
        let shuffled = crate::provisioning_props::shuffled(&value, seed);
        let snapshot = Snapshot::from_json(&shuffled.to_string()).unwrap();
        prop_assert_eq!(tower_shared::releases::of_snapshot(&snapshot, SERVICE), derive(fixture));
    }
}

#[test]
fn tower_releases_prints_the_matrix_and_names_bad_input() {
    let run = |args: &[&str], snapshot: &std::path::Path| {
        std::process::Command::new(crate::support::tower_bin())
            .args(args)
            .arg(snapshot)
            .output()
            .unwrap()
    };
    let fixture = root().join("fixtures/releases/prod-pull-request-open.json");
    let out = run(&["releases", "--service", SERVICE, "--snapshot"], &fixture);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let printed: Releases = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(printed, derive("prod-pull-request-open"));

    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.json");
    std::fs::write(&bad, r#"{"now": "yesterday", "clusters": {}}"#).unwrap();
    let out = run(&["releases", "--service", SERVICE, "--snapshot"], &bad);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("now"));
    let out = run(
        &["releases", "--service", "Not A Service", "--snapshot"],
        &fixture,
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("service"));
}

#[test]
fn tower_releases_offers_no_prod_while_staging_is_degraded_or_out_of_sync_and_says_both_weights() {
    let run = |snapshot: &std::path::Path| -> Releases {
        crate::support::tower_prints([
            "releases".as_ref(),
            "--service".as_ref(),
            SERVICE.as_ref(),
            "--snapshot".as_ref(),
            snapshot.as_os_str(),
        ])
    };
    // As captured, the release live in staging goes to prod next by a pull request.
    let going = |matrix: &Releases| {
        matrix
            .releases
            .iter()
            .find(|r| r.next.as_ref().is_some_and(|n| n.environment == "prod"))
            .map(|r| r.image.clone())
    };
    let fixture = root().join("fixtures/releases/prod-pull-request-open.json");
    let captured = run(&fixture);
    let image = going(&captured).expect("the captured world offers prod");
    let dir = tempfile::tempdir().unwrap();
    // The same world with staging's Application Degraded, then OutOfSync (its Rollout
    // still Healthy): Kargo's and GitOps Promoter's gate holds prod, and says why.
    for (path, word, why) in [
        (
            "health",
            "Degraded",
            "waits for staging: Argo CD says Degraded",
        ),
        (
            "sync",
            "OutOfSync",
            "waits for staging: Argo CD says OutOfSync",
        ),
    ] {
        let mut world: serde_json::Value =
            serde_json::from_str(&text("prod-pull-request-open")).unwrap();
        for cluster in world["clusters"].as_object_mut().unwrap().values_mut() {
            for object in cluster.as_array_mut().unwrap() {
                if object["kind"] == "Application"
                    && object["metadata"]["name"] == "storefront-staging"
                {
                    object["status"][path]["status"] = word.into();
                }
            }
        }
        let held = dir.path().join(format!("{word}.json"));
        std::fs::write(&held, world.to_string()).unwrap();
        let matrix = run(&held);
        assert_eq!(
            going(&matrix),
            None,
            "staging {word}: prod is still offered"
        );
        let row = matrix.releases.iter().find(|r| r.image == image).unwrap();
        let prod = row.cells.iter().find(|c| c.environment == "prod").unwrap();
        assert_eq!(
            (prod.state, prod.held.as_deref()),
            (CellState::NotYet, Some(why))
        );
    }
    // A canary's cell: the actual weight beside the one its steps set.
    let canary = run(&root().join("fixtures/releases/staging-canary.json"));
    let cell = canary
        .releases
        .iter()
        .flat_map(|r| &r.cells)
        .find(|c| c.state == CellState::Canary)
        .expect("the staging canary");
    assert_eq!((cell.weight, cell.desired_weight), (Some(20), Some(20)));
}
