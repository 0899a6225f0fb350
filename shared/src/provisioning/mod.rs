//! Provisioning progress (spec: `provisioning.md`): for every Hangar XR on the control-plane
//! cluster, and every pending request PR, the steps from request to running, each from the
//! signal the spec names.
//!
//! [`derive_provisioning`] is a pure function of a [`Snapshot`] (which carries `now` and the
//! observer's memory). To derive repeatedly as the clock ticks, build a [`World`] once per
//! snapshot and call [`derive`] with each `now`. [`remember`] is the observer's side: given what was derived, it
//! returns the memory to pass in next time. [`record_of`] turns a finished service into a
//! history record.
//!
//! Module map: [`model`] (output types), `index` ([`World`]: the snapshot filed for lookups),
//! `records` (compact per-object facts), `steps`
//! (one function per step), `typical` (typical durations); `cicd.yaml` is read by
//! [`crate::cicd`].

mod index;
pub mod model;
pub(crate) mod records;
mod steps;
mod typical;

use std::collections::BTreeMap;

use chrono::{DateTime, Duration, Utc};

use crate::snapshot::{Observation, RecordedRun, Snapshot};

pub use model::*;

pub use index::World;
pub use typical::{Typicals, MIN_SAMPLES, NEWEST_RUNS};

/// An XR older than this is no longer tracked.
pub const TRACKED_FOR: Duration = Duration::hours(24);
/// Built this long ago with nothing deployed (or an InfraService this old with no
/// environment) means stalled.
pub const STALLED_AFTER: Duration = Duration::hours(4);
/// A finished service stays on the strip this long.
pub const FINISHED_SHOWN_FOR: Duration = Duration::minutes(15);
/// A built app with no Rollout after this long gets a "what is missing" hint.
pub const ROLLOUT_HINT_AFTER: Duration = Duration::minutes(5);

/// Whether an XR created at `created_at` is still tracked at `now` (one whose creation is
/// not known is).
pub fn is_tracked(created_at: Option<DateTime<Utc>>, now: DateTime<Utc>) -> bool {
    created_at.is_none_or(|created| now - created <= TRACKED_FOR)
}

/// The services pending request PRs name at `now`: they are on the strip before any object
/// of theirs exists. With the services whose XR [`is_tracked`], the only ones [`derive`] can
/// show — a large world is derived from their parts alone.
pub fn requested(
    pull_requests: &[crate::github::PullRequest],
    now: DateTime<Utc>,
) -> impl Iterator<Item = &str> {
    pull_requests
        .iter()
        .filter(move |pr| crate::hangar::is_pending_request(pr, now))
        .filter_map(|pr| crate::hangar::parse_request_title(&pr.title).map(|t| t.name))
}

/// Derives the provisioning state of every tracked service, at `snapshot.now`.
///
/// Shorthand for [`derive`] on a fresh [`World`].
pub fn derive_provisioning(snapshot: &Snapshot) -> Provisioning {
    derive(&World::new(snapshot), snapshot.now)
}

/// Derives the provisioning state of every tracked service at `now`.
///
/// Total: odd or missing data gives "waiting"/"unknown" steps with a reason, never a panic.
/// The result does not depend on the order of objects in the snapshot.
pub fn derive(world: &World<'_>, now: DateTime<Utc>) -> Provisioning {
    let mut services = Vec::with_capacity(world.services.len());
    services.extend(
        world
            .services
            .iter()
            .filter_map(|service| steps::derive_service(world, service, now)),
    );
    services.extend(steps::pending_requests(world, now));
    services.sort_by(|a, b| a.group.cmp(&b.group).then_with(|| a.name.cmp(&b.name)));
    Provisioning { services }
}

/// The steps the observer remembers: the two whose end nothing but Tower's own first sight
/// can time (the catalog, a rollout turning healthy), and the request PR (its times must
/// outlive the PR lookup). Remembering nothing else keeps the memory — and the rebuilds a
/// change of it causes — to what the derivation reads.
pub const REMEMBERED: [StepId; 3] = [
    StepId::RequestPrMerged,
    StepId::Catalog,
    StepId::RunningHealthy,
];

/// The observer's memory after seeing `derived` at `now`: when a [`REMEMBERED`] step was
/// first seen running and, after that, first seen done; and a pending request's PR times.
/// Services no longer tracked are forgotten.
pub fn remember(
    memory: &BTreeMap<String, BTreeMap<String, Observation>>,
    derived: &Provisioning,
    now: DateTime<Utc>,
) -> BTreeMap<String, BTreeMap<String, Observation>> {
    let mut next = BTreeMap::new();
    for service in &derived.services {
        let old = memory.get(&*service.name);
        let mut steps = BTreeMap::new();
        for step in service.steps.iter().filter(|s| REMEMBERED.contains(&s.id)) {
            let key = step.id.as_str();
            let mut seen = old.and_then(|m| m.get(key)).cloned().unwrap_or_default();
            if step.id == StepId::RequestPrMerged {
                seen.running_since = step.started_at.or(seen.running_since);
                seen.done_at = step.ended_at.or(seen.done_at);
            } else {
                match step.status {
                    StepStatus::Running if seen.running_since.is_none() => {
                        seen.running_since = Some(now);
                    }
                    StepStatus::Done if seen.running_since.is_some() && seen.done_at.is_none() => {
                        seen.done_at = Some(now);
                    }
                    _ => {}
                }
            }
            if seen != Observation::default() {
                steps.insert(key.to_owned(), seen);
            }
        }
        if !steps.is_empty() {
            next.insert(service.name.to_string(), steps);
        }
    }
    next
}

/// `memory` with what `first` (the sights every replica shares, the first of each kept)
/// says of the services `tracked`: a time `first` has wins over this replica's own, so
/// every replica shows the same; what it lacks stays as this replica saw it.
pub fn adopt<'a>(
    first: &BTreeMap<String, BTreeMap<String, Observation>>,
    mut memory: BTreeMap<String, BTreeMap<String, Observation>>,
    tracked: impl IntoIterator<Item = &'a str>,
) -> BTreeMap<String, BTreeMap<String, Observation>> {
    for service in tracked {
        let Some(steps) = first.get(service) else {
            continue;
        };
        let mine = memory.entry(service.to_owned()).or_default();
        for (step, sight) in steps {
            let seen = mine.entry(step.clone()).or_default();
            seen.running_since = sight.running_since.or(seen.running_since);
            seen.done_at = sight.done_at.or(seen.done_at);
        }
    }
    memory
}

/// The history record of a finished provision: its first known start, last known end and
/// the seconds of every step whose duration is known (unknown ones are left out, never 0).
pub fn record_of(service: &ServiceProgress) -> Option<RecordedRun> {
    if service.group != Group::Finished {
        return None;
    }
    let kind = service.kind?;
    let started_at = service.steps.iter().filter_map(|s| s.started_at).min()?;
    let finished_at = service.steps.iter().filter_map(|s| s.ended_at).max()?;
    let steps = service
        .steps
        .iter()
        .filter_map(|s| Some((s.id.as_str().to_owned(), s.duration_sec?)))
        .collect();
    Some(RecordedRun {
        service: service.name.to_string(),
        kind: kind.as_str().to_owned(),
        started_at,
        finished_at,
        steps,
    })
}

/// The strip's view of a derivation (`api::Summary`): the counts per group and each
/// service's steps without durations — a running step keeps its start, so a page ticks the
/// time left itself. Equal derivations give equal summaries whatever the clock, so the
/// summary changes only when a step or a group does.
pub fn summary(services: &[ServiceProgress]) -> (GroupCounts, Vec<ServiceSummary>) {
    let mut counts = GroupCounts::default();
    for service in services {
        *match service.group {
            Group::Pending => &mut counts.pending,
            Group::InFlight => &mut counts.in_flight,
            Group::Stalled => &mut counts.stalled,
            Group::Finished => &mut counts.finished,
        } += 1;
    }
    let services = services
        .iter()
        .map(|service| ServiceSummary {
            name: service.name.to_string(),
            kind: service.kind,
            group: service.group,
            steps: service
                .steps
                .iter()
                .map(|step| StepSummary {
                    id: step.id,
                    title: step.title.to_string(),
                    status: step.status,
                    started_at: step
                        .started_at
                        .filter(|_| step.status == StepStatus::Running),
                    typical_sec: step.typical_sec,
                })
                .collect(),
        })
        .collect();
    (counts, services)
}

/// Seconds still to go, from typical durations: a running step's typical minus its time so
/// far (at least a minute while it runs over; all of it when its start is unknown), plus
/// every waiting step's typical. `None` when a step failed.
///
/// `steps` gives each step's status, typical seconds and seconds spent so far.
pub fn remaining_sec(
    steps: impl IntoIterator<Item = (StepStatus, u64, Option<u64>)>,
) -> Option<u64> {
    let mut total: u64 = 0;
    for (status, typical, spent) in steps {
        total = total.saturating_add(match status {
            StepStatus::Done => 0,
            StepStatus::Failed => return None,
            StepStatus::Running => typical.saturating_sub(spent.unwrap_or(0)).max(60),
            StepStatus::Waiting => typical,
        });
    }
    Some(total)
}

/// [`remaining_sec`] of a derived service.
pub fn service_remaining_sec(service: &ServiceProgress) -> Option<u64> {
    remaining_sec(
        service
            .steps
            .iter()
            .map(|s| (s.status, s.typical_sec, s.duration_sec)),
    )
}

/// [`remaining_sec`] of a service on the strip, at `now`.
pub fn summary_remaining_sec(service: &ServiceSummary, now: DateTime<Utc>) -> Option<u64> {
    remaining_sec(service.steps.iter().map(|s| {
        let spent = s
            .started_at
            .and_then(|at| u64::try_from((now - at).num_seconds()).ok());
        (s.status, s.typical_sec, spent)
    }))
}

#[cfg(test)]
mod sight_tests {
    use super::*;

    fn at(minute: u32) -> DateTime<Utc> {
        chrono::TimeZone::with_ymd_and_hms(&Utc, 2026, 12, 1, 9, minute, 0).unwrap()
    }

    fn sights(
        entries: &[(&str, &str, Option<u32>, Option<u32>)],
    ) -> BTreeMap<String, BTreeMap<String, Observation>> {
        let mut out: BTreeMap<String, BTreeMap<String, Observation>> = BTreeMap::new();
        for (service, step, running, done) in entries {
            out.entry((*service).to_owned()).or_default().insert(
                (*step).to_owned(),
                Observation {
                    running_since: running.map(at),
                    done_at: done.map(at),
                },
            );
        }
        out
    }

    #[test]
    fn the_first_sight_wins_and_untracked_services_stay_out() {
        let first = sights(&[
            ("shop", "catalog", Some(1), Some(5)),
            ("ledger", "catalog", Some(2), None),
            ("gone", "catalog", Some(0), Some(1)),
        ]);
        // This replica started late: it saw shop's catalog entry done later and never
        // running; it saw ledger's running later and its healthy rollout on its own.
        let mine = sights(&[
            ("shop", "catalog", None, Some(9)),
            ("ledger", "catalog", Some(7), None),
            ("ledger", "running-healthy", Some(8), None),
        ]);
        let adopted = adopt(&first, mine, ["shop", "ledger", "new"]);
        assert_eq!(
            adopted,
            sights(&[
                ("shop", "catalog", Some(1), Some(5)),
                ("ledger", "catalog", Some(2), None),
                ("ledger", "running-healthy", Some(8), None),
            ])
        );
    }
}
