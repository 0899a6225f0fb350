//! The backend's filing (`tower_backend::filed`): objects at rest as compact JSON, filed by
//! service, the fleet and provisioning derived a service at a time. Whatever the order the
//! objects arrive and move in, it must say what deriving the whole snapshot says.

use std::collections::BTreeMap;
use std::sync::Arc;

use tower_backend::filed::{Filing, Stored};
use tower_shared::fleet::{assemble, derive_fleet};
use tower_shared::kube::Object;
use tower_shared::provisioning::derive_provisioning;
use tower_shared::snapshot::Snapshot;

use crate::support::{fixture_snapshots, simulated_worlds};

/// The fixture snapshots the filing is checked on, trimmed as Tower keeps objects.
fn fixtures() -> Vec<(String, Snapshot)> {
    fixture_snapshots(&[
        "fixtures/provisioning",
        "fixtures/cloud-deploys",
        "fixtures/deployments",
    ])
}

/// `snapshot`'s objects on each cluster in one order (a part keeps its own).
pub fn sorted(mut snapshot: Snapshot) -> Snapshot {
    for objects in snapshot.clusters.values_mut() {
        objects.sort_by(|a, b| {
            (&a.kind, a.namespace(), a.name()).cmp(&(&b.kind, b.namespace(), b.name()))
        });
    }
    snapshot
}

/// The filing of `whole` (whose base is `base`) says what deriving `whole` says.
fn assert_same(name: &str, filing: &Filing, base: &Snapshot, whole: &Snapshot) {
    assert_eq!(
        assemble(base.now, filing.fleet_apps()),
        derive_fleet(whole),
        "{name}: the fleet"
    );
    assert_eq!(
        derive_provisioning(&filing.provisioning_snapshot(base)),
        derive_provisioning(whole),
        "{name}: provisioning"
    );
    let filed = filing.filed();
    let services = whole.known_services();
    for service in &services {
        assert!(filed.knows(service), "{name}: {service} is known");
        assert_eq!(
            filed.part(base, service),
            sorted(whole.for_service(service)),
            "{name}: {service}'s part"
        );
    }
    // The fleet's DORA figures read each app's lean part (its objects and its repositories'
    // pull requests, grouped once): the same as from its whole part.
    let all: Vec<&str> = services.iter().map(|s| s.as_ref()).collect();
    let lean = tower_shared::dora::report(filed.lean_parts(base, all.iter().copied()), 7, base.now);
    let full =
        tower_shared::dora::report(all.iter().map(|s| (*s, filed.part(base, s))), 7, base.now);
    assert_eq!(lean, full, "{name}: the fleet's DORA figures");
    assert!(!filed.knows("nobody-by-this-name"));
    let objects: usize = whole.clusters.values().map(Vec::len).sum();
    assert_eq!(filing.count(), objects, "{name}: every object filed once");
}

#[test]
fn the_filing_derives_what_the_whole_snapshot_does() {
    let mut snapshots = fixtures();
    assert!(snapshots.len() > 30);
    for (i, world) in simulated_worlds(&[0, 20, 60, 180]).into_iter().enumerate() {
        snapshots.push((format!("the simulated world, moment {i}"), world.trimmed()));
    }
    for (name, whole) in snapshots {
        let (filing, base) = Filing::of(whole.clone());
        assert!(base.clusters.values().all(Vec::is_empty));
        assert_eq!(
            base.clusters.keys().collect::<Vec<_>>(),
            whole.clusters.keys().collect::<Vec<_>>()
        );
        assert_same(&name, &filing, &base, &whole);
    }
}

type Key = (String, String, Option<String>, String);

/// The objects of `snapshot` by cluster, kind, namespace and name.
fn keyed(snapshot: &Snapshot) -> BTreeMap<Key, Arc<Object>> {
    snapshot
        .clusters
        .iter()
        .flat_map(|(cluster, objects)| {
            objects.iter().map(move |o| {
                let key = (
                    cluster.clone(),
                    o.kind.clone(),
                    o.metadata.namespace.clone(),
                    o.name().to_owned(),
                );
                (key, Arc::clone(o))
            })
        })
        .collect()
}

#[test]
fn moves_keep_the_filing_what_a_fresh_one_would_be() {
    // As the deriver files the watch caches' journal: every object added, then each moment
    // the ones that changed (old and new), the ones deleted and the ones added.
    let worlds: Vec<Snapshot> = simulated_worlds(&[0, 10, 30, 90, 240])
        .into_iter()
        .map(Snapshot::trimmed)
        .collect();
    let first = &worlds[0];
    let mut filing = Filing::new(first.clusters.keys().cloned().collect(), "dev");
    let mut held: BTreeMap<Key, (Arc<Object>, Arc<Stored>)> = BTreeMap::new();
    let (mut changed, mut deleted, mut added) = (0, 0, 0);
    for (i, world) in worlds.iter().enumerate() {
        let now = keyed(world);
        held.retain(|key, (_, stored)| {
            let keep = now.contains_key(key);
            if !keep {
                filing.moved(&key.0, Some(stored), None);
                deleted += 1;
            }
            keep
        });
        for (key, object) in now {
            let stored = Arc::new(Stored::of(&object));
            match held.get(&key) {
                Some((old, _)) if *old == object => continue,
                Some((_, old)) => {
                    filing.moved(&key.0, Some(old), Some(&stored));
                    changed += 1;
                }
                None => {
                    filing.moved(&key.0, None, Some(&stored));
                    added += 1;
                }
            }
            held.insert(key, (object, stored));
        }
        assert!(filing.refresh(world.now), "moment {i}: something moved");
        assert!(
            !filing.refresh(world.now),
            "moment {i}: nothing left to derive"
        );
        let (_, base) = Filing::of(world.clone());
        assert_same(&format!("moment {i}"), &filing, &base, world);
    }
    assert!(
        changed > 100 && deleted > 0,
        "{changed} changed, {deleted} deleted, {added} added"
    );
}

#[test]
fn time_alone_judges_a_state_again() {
    // Nothing moves, the clock does: at the soonest moment a state's judgement changes by
    // time (a timed pause runs out, a pod's grace ends, a secret turns stale), the filing
    // makes that service again and says what deriving the whole world then says.
    let mut rejudged = 0;
    let mut worlds = fixtures();
    for (i, world) in simulated_worlds(&[0, 20, 60, 180]).into_iter().enumerate() {
        worlds.push((format!("the simulated world, moment {i}"), world.trimmed()));
    }
    for (name, whole) in worlds {
        let (mut filing, base) = Filing::of(whole.clone());
        assert!(!filing.refresh(base.now), "{name}: nothing is due yet");
        let Some(until) = filing.until() else {
            continue;
        };
        assert!(until > base.now, "{name}: due after now");
        let later = Snapshot {
            now: until,
            ..whole.clone()
        };
        assert!(filing.refresh(until), "{name}: judged again at {until}");
        assert_same(&name, &filing, &Snapshot { now: until, ..base }, &later);
        rejudged += 1;
    }
    assert!(rejudged >= 4, "{rejudged} worlds judged again");
}
