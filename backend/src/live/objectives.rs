//! The objectives' poller: what Prometheus answers for every environment the fleet shows,
//! asked for the figures a state's objectives are judged by ([`tower_shared::slo::JUDGED`])
//! whenever the fleet's places change, and every [`JUDGE_EVERY`] besides once Tower's clock
//! has moved a minute or more (a burn rate or a latency changes without any object
//! changing; a world standing still is not asked the same again). A service whose
//! figures changed is noted, so the deriver judges it again. When Prometheus does not
//! answer, the last figures stand.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tower_shared::api::{Change, ChangeSource};
use tower_shared::runtime::Readings;

use super::Live;
use crate::prometheus::Prometheus;

/// How often (real time) every environment's figures are asked again, at most.
pub const JUDGE_EVERY: Duration = Duration::from_secs(30);
/// How far Tower's clock must have moved since they were last asked.
const MOVED_ENOUGH: chrono::TimeDelta = chrono::TimeDelta::minutes(1);

/// Each fleet cell's (service, environment, namespace), sorted (the fleet's own order moves
/// with its troubles, the objectives' among them).
type Places = Vec<(String, String, String)>;

impl Live {
    pub(super) async fn poll_objectives(self, prometheus: Arc<Prometheus>) {
        let mut derived = self.inner.derived.subscribe();
        let mut asked: Option<(Places, Instant, chrono::DateTime<chrono::Utc>)> = None;
        loop {
            let places = places(&self.derived().fleet);
            let now = self.now();
            // Again when the places change, or when time has moved on (in Tower's clock: a
            // world standing still is not asked the same again).
            let due = asked.as_ref().is_none_or(|(before, at, world)| {
                *before != places || (at.elapsed() >= JUDGE_EVERY && now - *world >= MOVED_ENOUGH)
            });
            if due {
                self.judge(&prometheus, &places).await;
                asked = Some((places, Instant::now(), now));
            }
            // A new derivation comes every second at least; it may bring new places.
            if derived.changed().await.is_err() {
                return;
            }
        }
    }

    /// Asks Prometheus for `places` now and keeps what changed, noting its services.
    async fn judge(&self, prometheus: &Prometheus, places: &Places) {
        let namespaces: Vec<String> = places.iter().map(|(_, _, ns)| ns.clone()).collect();
        let answers = prometheus.judged(&namespaces, self.now()).await;
        let mut changed = std::collections::BTreeSet::new();
        {
            let mut remote = self.remote();
            let mut measured: BTreeMap<String, BTreeMap<String, Readings>> = BTreeMap::new();
            for ((service, environment, _), answer) in places.iter().zip(answers) {
                let before = remote
                    .measured
                    .get(service)
                    .and_then(|m| m.get(environment));
                // Not answered: the last figures stand.
                let Some(readings) = answer.or_else(|| before.cloned()) else {
                    continue;
                };
                if before != Some(&readings) {
                    changed.insert(service.clone());
                }
                measured
                    .entry(service.clone())
                    .or_default()
                    .insert(environment.clone(), readings);
            }
            remote.measured = measured;
            remote.judged = Some(places.clone());
        }
        for service in changed {
            self.note(Change::of(ChangeSource::Prometheus, Some(service)));
        }
    }
}

impl Live {
    /// Whether the current derivation's cells are judged by Prometheus' figures for the
    /// fleet it shows (answered or not): true without a Prometheus.
    pub fn objectives_judged(&self) -> bool {
        if self.inner.prometheus.is_none() {
            return true;
        }
        let derived = self.derived();
        let remote = self.remote();
        remote.judged.as_ref() == Some(&places(&derived.fleet))
            && remote.measured == derived.base.measured
    }
}

fn places(fleet: &tower_shared::fleet::Fleet) -> Places {
    let mut places: Places = fleet
        .apps
        .iter()
        .flat_map(|app| {
            app.cells.iter().filter_map(|cell| {
                Some((
                    app.name.clone(),
                    cell.environment.clone(),
                    cell.namespace.clone()?,
                ))
            })
        })
        .collect();
    places.sort_unstable();
    places
}
