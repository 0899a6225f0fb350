//! What the tests that read the demo world rely on holds whatever instant the world starts
//! at: the world seen at many starts (spread over two days across a month's end, and at the
//! instants the suite was once red at) keeps its invariants. Every world test starts at
//! `support::test_start`, so this is what lets that instant be any one.
//!
//! - Each merged pull request of an app names its image once its build has had time to
//!   finish, and the build making it until then.
//! - The activity feed is newest first, within its 24 hours, and holds releases arriving.
//! - The fleet and the release matrix name the same release as live in each environment.

use chrono::{DateTime, Duration, Utc};
use hangar_sim::stories::fleet::BUILD_TAKES;
use proptest::prelude::*;
use proptest::test_runner::RngSeed;
use tower_shared::activity::{self, Kind};
use tower_shared::github::PullRequest;
use tower_shared::image;
use tower_shared::pipelines::Outcome;
use tower_shared::pulls::PrState;
use tower_shared::releases::CellState;
use tower_shared::snapshot::Snapshot;

use crate::support::{objects_of, test_start};

/// What Tower would read of the demo world (seed 1) started at `start`, as it starts:
/// every cluster's objects and every pull request.
fn world_at(start: DateTime<Utc>) -> Snapshot {
    let clock = hangar_sim::clock::Clock::new(start, 0.0);
    let platform = hangar_sim::platform::Platform::new(
        clock,
        &["dev", "prod"],
        hangar_sim::stories::demo_world(start, 1),
    );
    platform.tick();
    let mut snapshot = objects_of(&platform);
    let pulls = platform
        .pull_requests()
        .iter()
        .map(|pr| {
            let mut json = hangar_sim::github::pull_json(pr, false);
            json["repo"] = pr.repo.clone().into();
            serde_json::from_value::<PullRequest>(json).expect("GitHub's shape reads")
        })
        .collect();
    snapshot.pull_requests = Some(pulls);
    snapshot
}

/// The invariants at `start`; `Err` says which broke, and for what.
fn check(start: DateTime<Utc>) -> Result<(), String> {
    let world = world_at(start);
    let now = world.now;
    let fleet = tower_shared::fleet::derive_fleet(&world);
    let mut items = Vec::new();
    // The apps Argo CD deploys (those on a cloud target or still provisioning keep other
    // invariants, tested on their own).
    for app in fleet
        .apps
        .iter()
        .filter(|a| a.cells.iter().any(|c| c.cloud.is_none()))
    {
        let service = app.name.as_str();
        let part = world.for_service(service);

        // Each merge: its image once built, the build making it until then.
        let pulls = tower_shared::pulls::of(&part, service, now);
        for pr in pulls
            .pulls
            .iter()
            .filter(|p| p.source && p.state == PrState::Merged)
        {
            let merged = pr
                .ended_at
                .ok_or(format!("{service} #{}: merged when?", pr.number))?;
            let built_by = merged + Duration::seconds(BUILD_TAKES);
            let building = pr
                .build
                .as_ref()
                .is_some_and(|b| matches!(b.outcome, Outcome::Running | Outcome::Pending));
            let finished = now >= built_by;
            if pr.image.is_none() && (finished || !building) {
                let build = &pr.build;
                return Err(format!(
                    "{service} #{} merged at {merged}: no image ({build:?}; done: {finished})",
                    pr.number
                ));
            }
        }

        agree(&part, app)?;
        items.extend(activity::of_objects(&part, service));
    }
    items.extend(activity::of_pulls(
        world.pull_requests.as_deref().unwrap_or_default(),
    ));

    // The feed: newest first, within its day, releases arriving among them.
    let feed = activity::latest(&items, now);
    if feed.len() > activity::MOST || feed.len() < 10 {
        return Err(format!("{} items in the feed", feed.len()));
    }
    if let Some(pair) = feed.windows(2).find(|p| p[0].at < p[1].at) {
        return Err(format!("not newest first: {pair:?}"));
    }
    if let Some(item) = feed
        .iter()
        .find(|i| i.at > now || i.at < now - activity::WINDOW)
    {
        return Err(format!("outside the day before {now}: {item:?}"));
    }
    if !feed
        .iter()
        .any(|i| matches!(i.kind, Kind::Promoted | Kind::CanaryStarted))
    {
        return Err("no release arriving in the feed".to_owned());
    }
    Ok(())
}

/// The fleet's cell, the matrix, the Deployments tab and the Runtime tab's pods agree on
/// what is live in each of `app`'s environments (one state: `shared::state`); `part` is its
/// service's part of the world.
pub fn agree(part: &Snapshot, app: &tower_shared::fleet::FleetApp) -> Result<(), String> {
    let service = app.name.as_str();
    let releases = tower_shared::releases::of_snapshot(part, service);
    let deployments = tower_shared::deployments::derive_deployments(part, service);
    let places = tower_shared::runtime::places(part, service);
    // (A cloud target's cells are its deploy runs': no Rollout, no matrix.)
    for cell in app.cells.iter().filter(|c| c.cloud.is_none()) {
        let stable = deployments
            .environments
            .iter()
            .flatten()
            .find(|e| e.name == cell.environment)
            .and_then(|e| e.rollout.as_ref()?.stable.as_ref()?.image.as_deref())
            .map(image::short);
        if stable.is_some() && stable != cell.running_tag() {
            return Err(format!(
                "{service} in {}: the fleet says {:?}, the Deployments tab {stable:?}",
                cell.environment,
                cell.running_tag()
            ));
        }
        let running = cell.running.as_deref();
        let pods: Vec<_> = places
            .iter()
            .filter(|p| p.environment == cell.environment)
            .flat_map(|p| &p.pods)
            .collect();
        let stable_pods = pods
            .iter()
            .filter(|pod| {
                let (Some(pod), Some(running)) = (pod.image.as_deref(), running) else {
                    return false;
                };
                image::without_digest(pod) == running
            })
            .count();
        // (A capture without pods tells nothing of them.)
        if running.is_some() && cell.rollout.is_some() && !pods.is_empty() && stable_pods == 0 {
            return Err(format!(
                "{service} in {}: no pod on the Runtime tab runs {running:?}",
                cell.environment
            ));
        }
        let live: Vec<&str> = releases
            .releases
            .iter()
            .filter(|r| {
                r.cells
                    .iter()
                    .any(|c| c.environment == cell.environment && c.state == CellState::Live)
            })
            .map(|r| image::short(&r.image))
            .collect();
        if live.len() > 1 || cell.running_tag() != live.first().copied() {
            return Err(format!(
                "{service} in {}: the fleet says {:?}, the matrix {live:?}",
                cell.environment,
                cell.running_tag()
            ));
        }
    }
    Ok(())
}

fn at(text: &str) -> DateTime<Utc> {
    text.parse().unwrap()
}

/// Every fixture, as captured: each service's cells agree with its tabs.
#[test]
fn every_fixture_says_one_version_per_service_and_environment() {
    let dirs: Vec<String> = std::fs::read_dir(crate::support::root().join("fixtures"))
        .unwrap()
        .map(|e| format!("fixtures/{}", e.unwrap().file_name().to_string_lossy()))
        .collect();
    let dirs: Vec<&str> = dirs.iter().map(String::as_str).collect();
    let fixtures = crate::support::fixture_snapshots(&dirs);
    assert!(fixtures.len() >= 50, "{} fixtures", fixtures.len());
    let mut cells = 0;
    for (name, snapshot) in &fixtures {
        for app in tower_shared::fleet::derive_fleet(snapshot).apps {
            cells += app.cells.len();
            if let Err(broken) = agree(&snapshot.for_service(&app.name), &app) {
                panic!("{name}: {broken}");
            }
        }
    }
    assert!(cells >= 20, "{cells} cells checked");
}

/// The suite's own start and the instants a run at the machine's clock once failed at.
#[test]
fn the_world_keeps_its_invariants_at_the_pinned_start_and_past_red_instants() {
    for start in [
        test_start(),
        at("2026-12-02T09:00:00Z"),
        at("2026-12-03T03:00:00Z"),
        at("2027-01-01T00:00:30Z"),
        at("2027-06-15T23:45:00Z"),
    ] {
        if let Err(broken) = check(start) {
            panic!("started at {start}: {broken}");
        }
    }
}

/// Two days from 2026-11-30 00:00 UTC: any second of the 30th, the month's end and the 1st.
const SPAN: i64 = 2 * 24 * 3_600;

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 32,
        // The same instants every run: a failure names its start, and
        // `TOWER_TEST_START=<it>` reruns the suite there.
        rng_seed: RngSeed::Fixed(41),
        failure_persistence: None,
        ..ProptestConfig::default()
    })]
    #[test]
    fn the_world_keeps_its_invariants_at_any_start(second in 0..SPAN) {
        let start = at("2026-11-30T00:00:00Z") + Duration::seconds(second);
        if let Err(broken) = check(start) {
            prop_assert!(false, "started at {start}: {broken}");
        }
    }
}
