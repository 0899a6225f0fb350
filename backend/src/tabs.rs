//! One service's tabs, each made once per change of the snapshot: [`Tabs`] keeps every
//! per-service answer (`GET /api/deployments?service=`, `/api/releases`, `/api/runtime`, …)
//! for both sources — a snapshot file and the live clusters — and [`PerService`] says how
//! each is made from a [`Derived`].
//!
//! A tab served whole is a [`WholeTab`] in `tower_shared` (named by
//! `tower_shared::whole_tabs`, routed by [`crate::routes`]); nothing here changes for it
//! ([`Whole`]). Answers served in parts or keyed otherwise have their `impl PerService`
//! here. `ARCHITECTURE.md` has the whole recipe.

use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use chrono::{DateTime, Utc};
use tower_shared::api::{DoraAnswer, Health, LiveRuns, SnapshotAnswer};
use tower_shared::hangar::{self, ServiceKind};
use tower_shared::kube::Object;
use tower_shared::pipelines::Pipelines;
use tower_shared::pulls::Pulls;
use tower_shared::runtime::Runtime;
use tower_shared::served::WholeTab;
use tower_shared::snapshot::Snapshot;

use crate::derived::Derived;
use crate::views::View;

/// Every per-service answer, each made once per [`Derived::version`] on first demand: one
/// [`ServiceViews`] per answer type, made the first time it is asked for.
#[derive(Debug, Default)]
pub struct Tabs {
    views: Mutex<HashMap<TypeId, Arc<dyn Any + Send + Sync>>>,
}

impl Tabs {
    /// `A`'s view of `service` in `derived`; `None` when Tower knows nothing of it.
    pub fn view<A: PerService>(&self, derived: &Derived, service: &str) -> Option<Arc<View>> {
        self.views::<A>().get(derived, service)
    }

    /// `A`'s answer for `service` in `derived`; `None` when Tower knows nothing of it.
    pub fn answer<A: PerService>(&self, derived: &Derived, service: &str) -> Option<Arc<A>> {
        self.views::<A>().answer(derived, service)
    }

    fn views<A: PerService>(&self) -> Arc<ServiceViews<A>> {
        let views = Arc::clone(
            self.views
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .entry(TypeId::of::<A>())
                .or_insert_with(|| Arc::new(ServiceViews::<A>::default())),
        );
        views
            .downcast()
            .unwrap_or_else(|_| unreachable!("the views are filed under their answer's type"))
    }
}

/// How many services' snapshot views one version keeps: a caller asking for many names
/// that do not exist cannot make the cache grow without bound.
const SERVICES_KEPT: usize = 10_000;

/// An answer about one service, made from a derivation on first demand.
pub trait PerService: PartialEq + Send + Sync + Sized + 'static {
    /// The answer for `service`; `None` when Tower knows nothing of it.
    fn make(derived: &Derived, service: &str) -> Option<Self>;
    /// Whether `self` shows what `old` shows (then `old`'s bytes and ETag stand).
    fn shows_the_same(&mut self, old: &Self) -> bool {
        self == old
    }
    /// Its view (brotli made now) for answers served whole; `None` for answers routes
    /// serve only in parts.
    fn view(&self) -> Option<View>;
}

impl PerService for SnapshotAnswer {
    fn view(&self) -> Option<View> {
        Some(View::ready(self))
    }

    fn make(derived: &Derived, service: &str) -> Option<Self> {
        let snapshot = derived.service(service);
        // Read here: the browser derives from it without a YAML reader.
        (!snapshot.is_empty()).then(|| SnapshotAnswer {
            snapshot: snapshot.with_cicd_read(),
            health: derived.health.clone(),
        })
    }

    /// Unchanged but for the moment it was read.
    fn shows_the_same(&mut self, old: &Self) -> bool {
        let read_at = self.snapshot.now;
        self.snapshot.now = old.snapshot.now;
        let same = self == old;
        self.snapshot.now = read_at;
        same
    }
}

/// The Pipelines tab's runs and graphs: routes serve pages of it, not the whole.
impl PerService for Pipelines {
    fn make(derived: &Derived, service: &str) -> Option<Self> {
        derived
            .knows(service)
            .then(|| tower_shared::pipelines::derive(&derived.service(service), service))
    }

    /// Served in pages and single runs, never whole.
    fn view(&self) -> Option<View> {
        None
    }
}

/// The Pull requests tab: routes serve pages of it.
impl PerService for Pulls {
    fn make(derived: &Derived, service: &str) -> Option<Self> {
        derived
            .knows(service)
            .then(|| tower_shared::pulls::of(&derived.service(service), service, derived.now))
    }

    /// Served in pages, never whole.
    fn view(&self) -> Option<View> {
        None
    }
}

/// A tab served whole ([`WholeTab`]), as [`Tabs`] keeps it: its answer, made from the
/// service's part of the snapshot.
#[derive(Debug, PartialEq)]
pub struct Whole<A>(pub A);

impl<A> std::ops::Deref for Whole<A> {
    type Target = A;

    fn deref(&self) -> &A {
        &self.0
    }
}

impl<A: WholeTab> PerService for Whole<A> {
    fn make(derived: &Derived, service: &str) -> Option<Self> {
        derived.knows(service).then(|| {
            Whole(A::derive(
                &derived.service(service),
                service,
                &derived.health,
            ))
        })
    }
    fn view(&self) -> Option<View> {
        Some(View::ready(&self.0))
    }
}

/// DORA's four keys of one app, or of the fleet, over some days: the key is
/// [`dora_key`]'s.
impl PerService for DoraAnswer {
    fn view(&self) -> Option<View> {
        Some(View::ready(self))
    }

    fn make(derived: &Derived, key: &str) -> Option<Self> {
        let (days, service) = key.split_once(':')?;
        let days = days.parse().ok()?;
        if service.is_empty() {
            let services: std::collections::BTreeSet<&str> =
                derived.fleet.apps.iter().map(|a| a.name.as_str()).collect();
            let parts = derived.filed.lean_parts(&derived.base, services);
            Some(dora_answer(None, days, parts, derived.now, &derived.health))
        } else {
            derived.knows(service).then(|| {
                let parts = [(service, derived.service(service))];
                dora_answer(Some(service), days, parts, derived.now, &derived.health)
            })
        }
    }
}

/// The key [`ServiceViews`] files a DORA answer under: the days, and the app (none: the
/// fleet).
pub fn dora_key(service: Option<&str>, days: u32) -> String {
    format!("{days}:{}", service.unwrap_or_default())
}

/// The DORA answer of `parts` (each service with its part of the snapshot) over the `days`
/// before `now`; `service` names the one app asked about.
pub fn dora_answer<'a>(
    service: Option<&str>,
    days: u32,
    parts: impl IntoIterator<Item = (&'a str, Snapshot)>,
    now: DateTime<Utc>,
    health: &Health,
) -> DoraAnswer {
    DoraAnswer {
        service: service.map(str::to_owned),
        days,
        report: tower_shared::dora::report(parts, days, now),
        health: health.clone(),
    }
}

/// The Runtime tab's places and objectives; Prometheus' figures are joined per request.
impl PerService for Runtime {
    fn make(derived: &Derived, service: &str) -> Option<Self> {
        derived
            .knows(service)
            .then(|| tower_shared::runtime::derive(&derived.service(service), service))
    }

    /// Served inside the Runtime answer, never alone.
    fn view(&self) -> Option<View> {
        None
    }
}

/// The key [`ServiceViews`] files an app's live runs under: the app, and the namespace asked
/// for (none: its CI/CD namespace).
pub fn live_runs_key(app: &str, namespace: Option<&str>) -> String {
    format!("{app}:{}", namespace.unwrap_or_default())
}

/// The app's Tekton PipelineRuns and TaskRuns in its CI/CD namespace (or the one asked
/// for), newest first; `None` when Tower knows neither the app nor any run there.
impl PerService for LiveRuns {
    fn view(&self) -> Option<View> {
        Some(View::ready(self))
    }

    fn make(derived: &Derived, key: &str) -> Option<Self> {
        let (app, given) = key.split_once(':')?;
        let snapshot = derived.service(app);
        let cluster = snapshot.control_plane_cluster.clone();
        let objects = snapshot.control_plane();
        let xr = objects
            .iter()
            .find(|o| hangar::is_xr(o) && o.metadata.name == app);
        let namespace = match given {
            "" => hangar::cicd_namespace(app, xr.and_then(|o| ServiceKind::from_kind(&o.kind))),
            given => given.to_owned(),
        };
        let runs = |kind: &str| -> Vec<Arc<Object>> {
            let mut runs: Vec<Arc<Object>> = objects
                .iter()
                .filter(|o| o.kind == kind && o.group() == "tekton.dev")
                .filter(|o| o.namespace() == Some(namespace.as_str()))
                .cloned()
                .collect();
            // Newest first.
            runs.sort_by(|a, b| {
                b.metadata
                    .creation_timestamp
                    .cmp(&a.metadata.creation_timestamp)
                    .then_with(|| a.metadata.name.cmp(&b.metadata.name))
            });
            runs
        };
        let pipeline_runs = runs("PipelineRun");
        let task_runs = runs("TaskRun");
        if xr.is_none() && pipeline_runs.is_empty() && task_runs.is_empty() {
            return None;
        }
        Some(LiveRuns {
            app: app.to_owned(),
            cluster,
            namespace,
            pipeline_runs,
            task_runs,
            stale: derived.health.stale.clone(),
        })
    }
}

/// Views of one service (`GET /api/snapshot?service=`, `GET /api/deployments?service=`): each
/// made once per [`Derived::version`] on first demand (a page asks for one service; nobody
/// asks for all), keeping the previous version's bytes — and ETag — when the service's
/// answer did not change.
#[derive(Debug)]
pub struct ServiceViews<A> {
    cache: Mutex<ServiceCache<A>>,
}

impl<A> Default for ServiceViews<A> {
    fn default() -> Self {
        Self {
            cache: Mutex::new(ServiceCache {
                version: None,
                current: HashMap::new(),
                previous: HashMap::new(),
            }),
        }
    }
}

/// A service's answer and its view.
type Made<A> = (Arc<A>, Option<Arc<View>>);
type Slot<A> = Arc<OnceLock<Option<Made<A>>>>;

#[derive(Debug)]
struct ServiceCache<A> {
    version: Option<u64>,
    current: HashMap<String, Slot<A>>,
    previous: HashMap<String, Made<A>>,
}

impl<A: PerService> ServiceViews<A> {
    /// `service`'s view in `derived`; `None` when Tower knows nothing of it.
    pub fn get(&self, derived: &Derived, service: &str) -> Option<Arc<View>> {
        self.made(derived, service).and_then(|(_, view)| view)
    }

    /// `service`'s answer in `derived`, for routes that serve parts of it.
    pub fn answer(&self, derived: &Derived, service: &str) -> Option<Arc<A>> {
        self.made(derived, service).map(|(answer, _)| answer)
    }

    fn made(&self, derived: &Derived, service: &str) -> Option<Made<A>> {
        let slot = {
            let mut cache = self.lock();
            if cache.version != Some(derived.version) {
                let made = std::mem::take(&mut cache.current)
                    .into_iter()
                    .filter_map(|(name, slot)| Some((name, slot.get()?.clone()?)))
                    .collect();
                cache.previous = made;
                cache.version = Some(derived.version);
            }
            match cache.current.get(service) {
                Some(slot) => Arc::clone(slot),
                None if cache.current.len() >= SERVICES_KEPT => Slot::default(),
                None => Arc::clone(cache.current.entry(service.to_owned()).or_default()),
            }
        };
        slot.get_or_init(|| self.make(derived, service)).clone()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, ServiceCache<A>> {
        self.cache
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn make(&self, derived: &Derived, service: &str) -> Option<Made<A>> {
        let mut answer = A::make(derived, service)?;
        if let Some((old, view)) = self.lock().previous.get(service) {
            if answer.shows_the_same(old) {
                return Some((Arc::clone(old), view.clone()));
            }
        }
        let view = answer.view().map(Arc::new);
        Some((Arc::new(answer), view))
    }
}
