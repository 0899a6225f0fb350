//! A derivation ready to serve: what it was derived from (the snapshot's base and the objects
//! filed by service), the provisioning at `now`, and every view as bytes ([`View`]). A view is made again only when its content changes, so
//! its ETag stays put while nothing it shows moves — and a page's refetch is a `304`.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use chrono::{DateTime, Utc};
use tower_shared::activity::{self, Activity};
use tower_shared::api::{
    ActivityAnswer, DeploymentsAnswer, Health, ProvisioningAnswer, SnapshotAnswer, Summary,
};
use tower_shared::deployments::derive_deployments;
use tower_shared::fleet::{assemble, Fleet, FleetApp};
use tower_shared::pipelines::Pipelines;
use tower_shared::provisioning::{summary, Provisioning};
use tower_shared::pulls::Pulls;
use tower_shared::snapshot::Snapshot;

use crate::filed::Filed;
use crate::views::View;

/// One derivation, ready to serve.
#[derive(Debug)]
pub struct Derived {
    /// The moment derived.
    pub now: DateTime<Utc>,
    /// What it was derived from but the objects — PRs, catalog, cicd.yaml, history, memory
    /// — with every cluster named and no objects (its own `now` is when it was read).
    pub base: Arc<Snapshot>,
    /// The objects, filed by service: a service's part is read from here ([`Derived::service`]).
    pub filed: Arc<Filed>,
    /// Every tracked service's progress at `now`, with the health notices.
    pub provisioning: Arc<ProvisioningAnswer>,
    pub health: Health,
    pub fleet: Arc<Fleet>,
    pub summary: Arc<Summary>,
    /// The newest of what the objects tell of the fleet's activity (kept while they stand).
    pub object_activity: Arc<Vec<Activity>>,
    /// The fleet's recent activity: the objects', the pull requests' and provisioning's.
    pub activity: Arc<ActivityAnswer>,
    pub views: Views,
    /// Moves when the snapshot or the health changes (not as the clock ticks): views made
    /// from them alone, such as one service's snapshot, are made again for a new version.
    pub version: u64,
    /// The cluster caches' generation the snapshot was read at (live only).
    pub generation: u64,
    /// Whether GitHub had answered when the snapshot was read (live only).
    pub github_answered: bool,
}

/// The views every page reads, as bytes.
#[derive(Clone, Debug)]
pub struct Views {
    /// `GET /api/fleet`.
    pub fleet: Arc<View>,
    /// `GET /api/summary`.
    pub summary: Arc<View>,
    /// `GET /api/activity`.
    pub activity: Arc<View>,
    /// `GET /api/provisioning` (changes every second while anything runs: its encodings
    /// are made on first demand).
    pub provisioning: Arc<View>,
}

/// What a derivation is made of.
#[derive(Debug)]
pub struct Inputs {
    pub base: Arc<Snapshot>,
    pub filed: Arc<Filed>,
    /// The fleet's apps when objects changed since `previous` (`None`: the previous fleet
    /// stands).
    pub fleet_apps: Option<Vec<FleetApp>>,
    /// The newest of what the objects tell of the fleet's activity when objects changed
    /// ([`crate::filed::Filing::activity`]; `None`: the previous stands).
    pub object_activity: Option<Vec<Activity>>,
    pub provisioning: Provisioning,
    pub now: DateTime<Utc>,
    pub health: Health,
    /// A fixed fleet (`tower serve --fleet-file`) instead of the derived one.
    pub fleet_file: Option<Arc<Fleet>>,
    pub generation: u64,
    pub github_answered: bool,
}

impl Derived {
    /// The derivation of `inputs`, reusing `previous`' views where their content is the
    /// same. The fleet is put together only when objects changed.
    pub fn next(previous: Option<&Derived>, inputs: Inputs) -> Self {
        let Inputs {
            base,
            filed,
            fleet_apps,
            object_activity,
            provisioning,
            now,
            health,
            fleet_file,
            generation,
            github_answered,
        } = inputs;
        let new_snapshot = previous.is_none_or(|p| !Arc::ptr_eq(&p.base, &base));
        let (fleet, fleet_view) = match (fleet_file, previous) {
            (Some(file), Some(p)) if Arc::ptr_eq(&file, &p.fleet) => {
                (file, Arc::clone(&p.views.fleet))
            }
            (Some(file), _) => {
                let view = Arc::new(View::ready(&*file));
                (file, view)
            }
            (None, Some(p)) if fleet_apps.is_none() => {
                (Arc::clone(&p.fleet), Arc::clone(&p.views.fleet))
            }
            (None, previous) => {
                let mut fleet = assemble(base.now, fleet_apps.unwrap_or_default());
                match previous {
                    // Same apps and cells: keep the view, and when it last changed.
                    Some(p) if same_fleet(&p.fleet, &mut fleet) => {
                        (Arc::clone(&p.fleet), Arc::clone(&p.views.fleet))
                    }
                    _ => {
                        let view = Arc::new(View::ready(&fleet));
                        (Arc::new(fleet), view)
                    }
                }
            }
        };
        let summary = summary(&provisioning.services, health.clone());
        let (summary, summary_view) = match previous {
            Some(p) if *p.summary == summary => {
                (Arc::clone(&p.summary), Arc::clone(&p.views.summary))
            }
            _ => {
                let view = Arc::new(View::ready(&summary));
                (Arc::new(summary), view)
            }
        };
        let object_activity = match (object_activity, previous) {
            (Some(new), _) => Arc::new(new),
            (None, Some(p)) => Arc::clone(&p.object_activity),
            (None, None) => Arc::default(),
        };
        let pulls = activity::of_pulls(base.pull_requests.as_deref().unwrap_or_default());
        let provisioned = activity::of_provisioning(&provisioning.services);
        let items = activity::latest(
            object_activity.iter().chain(&pulls).chain(&provisioned),
            now,
        );
        let (activity, activity_view) = match previous {
            Some(p) if p.activity.items == items => {
                (Arc::clone(&p.activity), Arc::clone(&p.views.activity))
            }
            _ => {
                let answer = ActivityAnswer { items };
                let view = Arc::new(View::ready(&answer));
                (Arc::new(answer), view)
            }
        };
        let version = match previous {
            Some(p) if !new_snapshot && p.health == health => p.version,
            Some(p) => p.version + 1,
            None => 0,
        };
        let answer = Arc::new(ProvisioningAnswer {
            now,
            services: provisioning.services,
            health: health.clone(),
        });
        // Remade every second while anything runs, read by few: serialised on demand, tagged
        // by what it is made of (this process, the version, the moment).
        let tag = format!("p{}-{version}-{}", *STARTED, now.timestamp_millis());
        let for_view = Arc::clone(&answer);
        let provisioning_view = Arc::new(View::deferred(&tag, move || {
            serde_json::to_vec(&*for_view).unwrap_or_default()
        }));
        Self {
            now,
            base,
            filed,
            provisioning: answer,
            health,
            fleet,
            summary,
            object_activity,
            activity,
            views: Views {
                fleet: fleet_view,
                summary: summary_view,
                activity: activity_view,
                provisioning: provisioning_view,
            },
            version,
            generation,
            github_answered,
        }
    }

    /// Whether Tower knows `service` ([`tower_shared::hangar::is_known_service`]).
    pub fn knows(&self, service: &str) -> bool {
        self.filed.knows(service)
    }

    /// `service`'s part of what was derived ([`Snapshot::for_service`]), parsed now.
    pub fn service(&self, service: &str) -> Snapshot {
        self.filed.part(&self.base, service)
    }
}

/// When this process started (wall clock, ms): deferred views' tags never repeat across
/// restarts.
static STARTED: std::sync::LazyLock<i64> =
    std::sync::LazyLock::new(|| crate::clock::wall().timestamp_millis());

/// Whether `new` shows what `old` shows; if so `new` takes `old`'s `generatedAt`.
fn same_fleet(old: &Fleet, new: &mut Fleet) -> bool {
    let generated_at = new.generated_at;
    new.generated_at = old.generated_at;
    let same = old == new;
    if !same {
        new.generated_at = generated_at;
    }
    same
}

/// How many services' snapshot views one version keeps: a caller asking for many names
/// that do not exist cannot make the cache grow without bound.
const SERVICES_KEPT: usize = 10_000;

/// An answer about one service, made from a derivation on first demand.
pub trait PerService: PartialEq + serde::Serialize + Send + Sync + Sized + 'static {
    /// The answer for `service`; `None` when Tower knows nothing of it.
    fn make(derived: &Derived, service: &str) -> Option<Self>;
    /// Whether `self` shows what `old` shows (then `old`'s bytes and ETag stand).
    fn shows_the_same(&mut self, old: &Self) -> bool {
        self == old
    }
    /// Its view (brotli made now) for answers served whole; `None` for answers routes
    /// serve only in parts.
    fn view(&self) -> Option<View> {
        Some(View::ready(self))
    }
}

impl PerService for SnapshotAnswer {
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

impl PerService for DeploymentsAnswer {
    fn make(derived: &Derived, service: &str) -> Option<Self> {
        derived.knows(service).then(|| DeploymentsAnswer {
            deployments: derive_deployments(&derived.service(service), service),
            health: derived.health.clone(),
        })
    }
}

/// `service`'s release matrix from its part of the snapshot.
pub fn releases_of(snapshot: &Snapshot, service: &str) -> tower_shared::releases::Releases {
    tower_shared::releases::derive(
        service,
        &tower_shared::pipelines::derive(snapshot, service),
        &derive_deployments(snapshot, service),
        snapshot.pull_requests.as_deref().unwrap_or_default(),
        &tower_shared::releases::arrivals(snapshot, service),
        &snapshot.cicd_of(service).promotions,
    )
}

/// The Releases tab's matrix, from the same runs and deployments as their tabs.
impl PerService for tower_shared::api::ReleasesAnswer {
    fn make(derived: &Derived, service: &str) -> Option<Self> {
        derived.knows(service).then(|| {
            let snapshot = derived.service(service);
            Self {
                releases: releases_of(&snapshot, service),
                health: derived.health.clone(),
            }
        })
    }
}

/// The Config tab's read-only half: the app's environments, secrets and composed resources.
impl PerService for tower_shared::api::ConfigAnswer {
    fn make(derived: &Derived, service: &str) -> Option<Self> {
        derived.knows(service).then(|| {
            let snapshot = derived.service(service);
            Self {
                service: service.to_owned(),
                environments: tower_shared::config::environments(&snapshot, service),
                made: tower_shared::config::derive(&snapshot, service),
                health: derived.health.clone(),
            }
        })
    }
}

/// DORA's four keys of one app, or of the fleet, over some days: the key is
/// [`dora_key`]'s.
impl PerService for tower_shared::api::DoraAnswer {
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
) -> tower_shared::api::DoraAnswer {
    tower_shared::api::DoraAnswer {
        service: service.map(str::to_owned),
        days,
        report: tower_shared::dora::report(parts, days, now),
        health: health.clone(),
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
