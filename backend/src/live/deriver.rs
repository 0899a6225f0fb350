//! The deriver thread: it owns the derivation, so requests read a finished answer and never
//! derive. It rebuilds the snapshot and its provisioning index ([`World`]) when anything
//! changes (filing the objects that moved and deriving again only the services they touched,
//! [`Filing`]), and re-derives every second (durations move with the clock). It keeps the
//! observer's memory (when steps were first seen running/done), hands every provision it
//! sees complete to the recorder, and — once the views are published — sends the changes
//! it took and any change of health to `/api/events`.

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};
use tokio::sync::mpsc;
use tower_shared::api::{Change, ClusterFreshness, GitHubState, Health};
use tower_shared::provisioning::{adopt, derive, record_of, remember, World};
use tower_shared::snapshot::{Observation, RecordedRun, Snapshot};

use super::{Live, LiveEvent, RECORDED_BY_BACKEND};
use crate::derived::{Derived, Inputs};
use crate::filed::Filing;
use crate::history::Sights;

/// How long a burst of changes may settle into one rebuild.
const SETTLE: Duration = Duration::from_millis(100);
/// Rebuilds take at most a fifth of the deriver's time: after a rebuild that took `t`, the
/// next waits until `5 t` has passed since it began. A small world (a rebuild in
/// milliseconds) shows every change at once; a busy large one (a change every few hundred
/// milliseconds, rebuilds of a tenth of a second) is rebuilt a couple of times a second
/// rather than on every change.
const REBUILD_SHARE: u32 = 5;
/// However long rebuilds take, a change waits no longer than this.
const LONGEST_GAP: Duration = Duration::from_secs(5);

/// How often the first sights other replicas shared are read again.
const SIGHTS_EVERY: Duration = Duration::from_secs(10);

/// Starts the deriver thread; returns where finished provisions arrive for recording and
/// where its new sights arrive for sharing.
pub(super) fn start(
    live: &Live,
    pokes: Receiver<()>,
) -> (
    mpsc::UnboundedReceiver<RecordedRun>,
    mpsc::UnboundedReceiver<Sights>,
) {
    let (records, recorder) = mpsc::unbounded_channel();
    let (sights, sharer) = mpsc::unbounded_channel();
    let deriver = live.clone();
    std::thread::Builder::new()
        .name("tower-deriver".to_owned())
        .spawn(move || deriver.derive_forever(&pokes, &records, &sights))
        .ok();
    (recorder, sharer)
}

impl Live {
    /// What the next derivation reads besides the objects (the deriver's [`Filing`] has
    /// those): every cluster by name, what GitHub and the catalog answered, the history and
    /// the observer's memory.
    fn build_base(
        &self,
        now: DateTime<Utc>,
        observed: &BTreeMap<String, BTreeMap<String, Observation>>,
    ) -> Snapshot {
        let mut snapshot = Snapshot::empty(now);
        snapshot.control_plane_cluster = self.inner.config.control_plane_cluster.clone();
        snapshot.github_host = self
            .inner
            .config
            .github
            .as_ref()
            .and_then(crate::config::GitHubConfig::enterprise_host);
        snapshot.clusters = self
            .inner
            .clusters
            .names()
            .into_iter()
            .map(|name| (name, Vec::new()))
            .collect();
        let remote = self.remote();
        snapshot.pull_requests = remote.github_answered.then(|| {
            remote
                .pulls
                .values()
                .flat_map(|p| p.iter())
                .map(|pr| {
                    let mut pr = pr.clone();
                    if let Some(details) = remote.details.get(&(pr.repo.clone(), pr.number)) {
                        details.fill(&mut pr);
                    }
                    pr
                })
                .collect()
        });
        snapshot.cicd = remote.cicd.clone();
        snapshot.compared = remote
            .compared
            .iter()
            .filter_map(|((service, base, head), commits)| {
                Some(tower_shared::github::Compared {
                    service: service.clone(),
                    base: base.clone(),
                    head: head.clone(),
                    commits: commits.clone()?,
                })
            })
            .collect();
        snapshot.catalog = remote
            .catalog_answered
            .then(|| remote.catalog.values().cloned().collect());
        // Looked up one service at a time: one not asked about yet is unknown to it.
        snapshot.catalog_asked = remote.catalog_answered.then(|| {
            remote
                .catalog
                .keys()
                .chain(&remote.catalog_missing)
                .cloned()
                .collect()
        });
        snapshot.history = remote.history.clone();
        snapshot.measured = remote.measured.clone();
        snapshot.observed = observed.clone();
        snapshot
    }

    fn take_changes(&self) -> BTreeSet<Change> {
        std::mem::take(
            &mut *self
                .inner
                .pending
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner),
        )
    }

    fn derive_forever(
        &self,
        pokes: &Receiver<()>,
        records: &mpsc::UnboundedSender<RecordedRun>,
        sights: &mpsc::UnboundedSender<Sights>,
    ) {
        let mut observed = BTreeMap::new();
        let mut recorded: HashSet<(String, DateTime<Utc>)> = HashSet::new();
        let mut filing = Filing::new(
            self.inner.clusters.names(),
            &self.inner.config.control_plane_cluster,
        );
        let mut filed = Arc::new(filing.filed());
        let mut tenant_filed = super::tenant_apps::Filed::new();
        loop {
            let generation = *self.inner.clusters.generation().borrow();
            let github_answered = self.remote().github_answered;
            let mut changes = self.take_changes();
            let rebuild = std::time::Instant::now();
            // Only the services the moves touched are derived again.
            for moved in self.inner.clusters.take_moves() {
                filing.moved(&moved.cluster, moved.old.as_ref(), moved.new.as_ref());
            }
            let tenant_apps = self.remote().tenant_apps.clone();
            super::tenant_apps::file(
                &mut filing,
                &self.inner.config.control_plane_cluster,
                &tenant_apps,
                &mut tenant_filed,
            );
            let objects_moved = filing.refresh(self.now());
            if objects_moved {
                filed = Arc::new(filing.filed());
            }
            let base = Arc::new(self.build_base(self.now(), &observed));
            // The cells are judged again when objects moved or Prometheus' figures did.
            let measured_moved = self.derived().base.measured != base.measured;
            let mut fleet_apps = (objects_moved || measured_moved).then(|| {
                let mut apps = filing.fleet_apps();
                tower_shared::fleet::judge_objectives(&mut apps, &base);
                apps
            });
            let mut object_activity = objects_moved.then(|| filing.activity(base.now));
            let tracked = filing.provisioning_snapshot(&base);
            let world = World::new(&tracked);
            let mut first = true;
            let mut rebuilt_in = Duration::ZERO;
            loop {
                let now = self.now();
                let provisioning = derive(&world, now);
                for run in provisioning.services.iter().filter_map(record_of) {
                    if recorded.insert((run.service.clone(), run.started_at))
                        && records.send(run).is_err()
                    {
                        return;
                    }
                }
                let mut next = remember(&observed, &provisioning, now);
                let seen = newly_seen(&observed, &next);
                if let Some(first) = self.first_sights() {
                    let tracked = provisioning.services.iter().map(|s| &*s.name);
                    next = adopt(&first, next, tracked);
                }
                let health = self.health();
                let previous = self.derived();
                let derived = Derived::next(
                    Some(&previous),
                    Inputs {
                        base: Arc::clone(&base),
                        filed: Arc::clone(&filed),
                        fleet_apps: fleet_apps.take(),
                        object_activity: object_activity.take(),
                        provisioning,
                        now,
                        health: health.clone(),
                        fleet_file: None,
                        generation,
                        github_answered,
                    },
                );
                self.inner.derived.send_replace(Arc::new(derived));
                if std::mem::take(&mut first) {
                    use std::sync::atomic::Ordering::Relaxed;
                    rebuilt_in = rebuild.elapsed();
                    let took = u64::try_from(rebuilt_in.as_micros()).unwrap_or(u64::MAX);
                    self.inner.last_rebuild_micros.store(took, Relaxed);
                    self.inner.rebuilds.fetch_add(1, Relaxed);
                }
                // The views show the changes now: tell the pages.
                for change in std::mem::take(&mut changes) {
                    let _ = self.inner.events.send(LiveEvent::Change(change));
                }
                for event in health_events(&previous.health, &health) {
                    let _ = self.inner.events.send(event);
                }
                let memory_changed = next != observed;
                if !seen.is_empty() && sights.send(seen).is_err() {
                    return;
                }
                observed = next;
                if memory_changed {
                    break;
                }
                match pokes.recv_timeout(Duration::from_secs(1)) {
                    Ok(()) => {
                        let gap = (rebuilt_in * REBUILD_SHARE).min(LONGEST_GAP);
                        std::thread::sleep(SETTLE.max(gap.saturating_sub(rebuild.elapsed())));
                        while pokes.try_recv().is_ok() {}
                        // A poke that brought no change (the health moved, a poller found
                        // nothing new) needs no new snapshot unless the caches moved.
                        let moved = *self.inner.clusters.generation().borrow() != generation
                            || self.remote().github_answered != github_answered;
                        let sights_moved = self
                            .inner
                            .sights_moved
                            .swap(false, std::sync::atomic::Ordering::Relaxed);
                        if moved || sights_moved || !self.peek_changes_empty() {
                            break;
                        }
                    }
                    // A state judged by time (a timed pause ran out, a secret turned
                    // stale) is judged again.
                    Err(RecvTimeoutError::Timeout) => {
                        if filing.until().is_some_and(|until| until <= self.now()) {
                            break;
                        }
                    }
                    Err(RecvTimeoutError::Disconnected) => return,
                }
            }
        }
    }

    fn peek_changes_empty(&self) -> bool {
        self.inner
            .pending
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .is_empty()
    }

    /// The first sights the database last answered.
    fn first_sights(&self) -> Option<Arc<Sights>> {
        self.inner
            .first_sights
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    /// Shares the deriver's sights through the database and reads the other replicas'
    /// back — after each of its own, and every [`SIGHTS_EVERY`] — waking the deriver when
    /// they changed. Without the database, each replica keeps its own.
    pub(super) async fn share_sights(self, mut seen: mpsc::UnboundedReceiver<Sights>) {
        let mut ticker = tokio::time::interval(SIGHTS_EVERY);
        loop {
            let answer = tokio::select! {
                mine = seen.recv() => match mine {
                    Some(mine) => self.inner.history.share_sights(&mine).await,
                    None => return,
                },
                _ = ticker.tick() => self.inner.history.sights().await,
            };
            match answer {
                Ok(first) => {
                    let first = Arc::new(first);
                    let changed = {
                        let mut held = self
                            .inner
                            .first_sights
                            .lock()
                            .unwrap_or_else(std::sync::PoisonError::into_inner);
                        let changed = held.as_deref() != Some(&*first);
                        *held = Some(first);
                        changed
                    };
                    if changed {
                        use std::sync::atomic::Ordering::Relaxed;
                        self.inner.sights_moved.store(true, Relaxed);
                        self.poke();
                    }
                }
                Err(err) => tracing::warn!(error = %err, "sharing first sights"),
            }
        }
    }

    /// Records every finished provision the deriver hands over (idempotent on service +
    /// start, so several replicas record one) and reads the history again, whichever
    /// replica's record won.
    pub(super) async fn record_finished(self, mut runs: mpsc::UnboundedReceiver<RecordedRun>) {
        while let Some(run) = runs.recv().await {
            match self
                .inner
                .history
                .record(&run, RECORDED_BY_BACKEND, self.now(), None)
                .await
            {
                Ok((_, recorded)) => {
                    if recorded == crate::history::Recorded::Inserted {
                        tracing::info!(service = %run.service, kind = %run.kind, "recorded a finished provision");
                    }
                    // Stored either way — by this replica or, first, by another: the typical
                    // durations read from the history must count it on every replica.
                    self.reload_history(Some(&run.service)).await;
                }
                Err(err) => {
                    tracing::warn!(service = %run.service, error = %err, "recording a provision")
                }
            }
        }
    }
}

/// The sights in `next` that `old` does not hold as they are: what this replica has to
/// share (sharing only these keeps a busy platform's writes to what changed).
fn newly_seen(old: &Sights, next: &Sights) -> Sights {
    let mut seen = Sights::new();
    for (service, steps) in next {
        let before = old.get(service);
        for (step, sight) in steps {
            if before.and_then(|b| b.get(step)) != Some(sight) {
                seen.entry(service.clone())
                    .or_default()
                    .insert(step.clone(), sight.clone());
            }
        }
    }
    seen
}

/// What changed between two healths, as events: clusters going stale or fresh, GitHub's
/// trouble starting, changing or ending.
fn health_events(before: &Health, after: &Health) -> Vec<LiveEvent> {
    let mut events = Vec::new();
    for cluster in &after.stale {
        if !before.stale.iter().any(|c| c.name == cluster.name) {
            events.push(LiveEvent::Stale(ClusterFreshness {
                cluster: cluster.name.clone(),
                last_seen_at: cluster.last_seen_at,
            }));
        }
    }
    for cluster in &before.stale {
        if !after.stale.iter().any(|c| c.name == cluster.name) {
            events.push(LiveEvent::Fresh(ClusterFreshness {
                cluster: cluster.name.clone(),
                last_seen_at: None,
            }));
        }
    }
    if before.github != after.github {
        events.push(LiveEvent::GitHub(GitHubState {
            trouble: after.github.clone(),
        }));
    }
    events
}

#[cfg(test)]
mod tests {
    use super::*;
    use tower_shared::api::{GitHubTrouble, StaleCluster};

    #[test]
    fn only_new_or_changed_sights_are_shared() {
        let at = |minute: i64| {
            Some(chrono::DateTime::<Utc>::UNIX_EPOCH + chrono::Duration::minutes(minute))
        };
        let sight = |running: i64, done: Option<i64>| Observation {
            running_since: at(running),
            done_at: done.and_then(at),
        };
        let memory = |entries: &[(&str, &str, Observation)]| {
            let mut out = Sights::new();
            for (service, step, seen) in entries {
                out.entry((*service).to_owned())
                    .or_default()
                    .insert((*step).to_owned(), seen.clone());
            }
            out
        };
        let old = memory(&[
            ("shop", "catalog", sight(1, None)),
            ("ledger", "catalog", sight(2, None)),
        ]);
        let next = memory(&[
            ("shop", "catalog", sight(1, Some(5))),
            ("ledger", "catalog", sight(2, None)),
            ("ledger", "running-healthy", sight(3, None)),
        ]);
        assert_eq!(
            newly_seen(&old, &next),
            memory(&[
                ("shop", "catalog", sight(1, Some(5))),
                ("ledger", "running-healthy", sight(3, None)),
            ])
        );
        assert!(newly_seen(&next, &next).is_empty());
    }

    #[test]
    fn health_changes_become_events() {
        let stale = |name: &str| StaleCluster {
            name: name.to_owned(),
            last_seen_at: None,
            error: None,
        };
        let before = Health {
            stale: vec![stale("dev")],
            github: None,
        };
        let after = Health {
            stale: vec![stale("prod")],
            github: Some(GitHubTrouble::Failing {
                error: "away".to_owned(),
            }),
        };
        let events = health_events(&before, &after);
        assert_eq!(events.len(), 3, "{events:?}");
        assert!(matches!(&events[0], LiveEvent::Stale(c) if c.cluster == "prod"));
        assert!(matches!(&events[1], LiveEvent::Fresh(c) if c.cluster == "dev"));
        assert!(matches!(&events[2], LiveEvent::GitHub(s) if s.trouble.is_some()));
        assert!(health_events(&after, &after).is_empty());
    }
}
