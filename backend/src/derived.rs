//! A derivation ready to serve: what it was derived from (the snapshot's base and the objects
//! filed by service), the provisioning at `now`, and every view as bytes ([`View`]). A view is made again only when its content changes, so
//! its ETag stays put while nothing it shows moves — and a page's refetch is a `304`.

use std::sync::Arc;

use chrono::{DateTime, Utc};
use tower_shared::activity::{self, Activity};
use tower_shared::api::{ActivityAnswer, Health, ProvisioningAnswer, Summary};
use tower_shared::fleet::{assemble, Fleet, FleetApp};
use tower_shared::provisioning::Provisioning;
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
    /// The fleet's apps as the objects give them, before provisioning is put on it.
    pub fleet_apps: Arc<Vec<FleetApp>>,
    /// What provisioning put on the fleet, by service.
    pub provisioning_said: Vec<(Arc<str>, Option<tower_shared::fleet::Attention>)>,
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
        // What provisioning puts on the fleet (it moves with the clock: a service stalls).
        let provisioning_said: Vec<_> = provisioning
            .services
            .iter()
            .map(|s| (s.name.clone(), tower_shared::fleet::provisioning_said(s)))
            .filter(|(_, said)| said.is_some())
            .collect();
        let mut fleet_apps_now = previous.map_or_else(Arc::default, |p| Arc::clone(&p.fleet_apps));
        let (fleet, fleet_view) = match (fleet_file, previous) {
            (Some(file), Some(p)) if Arc::ptr_eq(&file, &p.fleet) => {
                (file, Arc::clone(&p.views.fleet))
            }
            (Some(file), _) => {
                let view = Arc::new(View::ready(&*file));
                (file, view)
            }
            // Nothing moved, and provisioning says what it said: the fleet stands.
            (None, Some(p)) if fleet_apps.is_none() && p.provisioning_said == provisioning_said => {
                (Arc::clone(&p.fleet), Arc::clone(&p.views.fleet))
            }
            (None, previous) => {
                let mut apps = match (fleet_apps, previous) {
                    (Some(apps), _) => apps,
                    (None, Some(p)) => p.fleet_apps.to_vec(),
                    (None, None) => Vec::new(),
                };
                fleet_apps_now = Arc::new(apps.clone());
                tower_shared::fleet::with_provisioning(&mut apps, &provisioning.services);
                let mut fleet = assemble(base.now, apps);
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
        let summary = Summary::of(&provisioning.services, health.clone());
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
            fleet_apps: fleet_apps_now,
            provisioning_said,
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

    /// Whether Tower knows `service` ([`Snapshot::knows`]).
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
