//! Tower's objects at rest, filed by the services they belong to.
//!
//! An object is kept as the compact JSON of its trimmed [`Object`] ([`Stored`]): about 1 KB
//! where a tree of `serde_json::Value`s takes about 9. [`Filing`] — owned by whoever derives:
//! the deriver thread, or a fixed snapshot once — files objects by every service they belong
//! to ([`hangar::owners`]) as they change, and re-derives what a service's part feeds the
//! whole-fleet views (its fleet app, whether provisioning tracks it) only for the services a
//! change touched. Each derivation publishes a [`Filed`], from which one service's part is
//! parsed on demand ([`Filed::part`]); nothing holds every object parsed at once.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use chrono::{DateTime, Utc};
use rustc_hash::{FxHashMap, FxHashSet};
use serde::Deserialize;
use tower_shared::activity::{self, Activity};
use tower_shared::fleet::{fleet_apps, FleetApp};
use tower_shared::github::PullRequest;
use tower_shared::hangar;
use tower_shared::kube::{Object, ObjectMeta};
use tower_shared::provisioning;
use tower_shared::snapshot::Snapshot;

/// One object at rest: the JSON of its trimmed [`Object`].
#[derive(Debug, PartialEq, Eq)]
pub struct Stored {
    text: Box<str>,
}

/// An object's kind and metadata, read without building its spec and status.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Head {
    #[serde(default)]
    api_version: String,
    kind: String,
    metadata: ObjectMeta,
}

impl Stored {
    /// `object` at rest (trim it first: what is stored reaches every signed-in user).
    pub fn of(object: &Object) -> Self {
        // An `Object` is strings, maps and JSON values: writing it cannot fail.
        let text = serde_json::to_string(object).unwrap_or_default();
        Self {
            text: text.into_boxed_str(),
        }
    }

    /// The object again (`None` only if what was stored was not an object).
    pub fn object(&self) -> Option<Object> {
        serde_json::from_str(&self.text).ok()
    }

    /// The object with its metadata only (spec and status null): enough for
    /// [`hangar::owners`] and [`hangar::service_of`].
    fn head(&self) -> Option<Object> {
        let head: Head = serde_json::from_str(&self.text).ok()?;
        Some(Object {
            api_version: head.api_version,
            kind: head.kind,
            metadata: head.metadata,
            spec: serde_json::Value::Null,
            status: serde_json::Value::Null,
        })
    }
}

/// One service's part: its objects, each with the cluster it is on.
#[derive(Clone, Debug, Default)]
struct Part {
    objects: Vec<(u16, Arc<Stored>)>,
    /// How many of them are the service's by [`hangar::service_of`]: the service is known
    /// while any is.
    own: u32,
}

/// A service with an XR, and when the XR was made (`None`: not known).
type XrCreated = (Arc<str>, Option<DateTime<Utc>>);

/// The objects filed by service at one derivation: cheap to clone (parts are shared).
#[derive(Clone, Debug, Default)]
pub struct Filed {
    clusters: Arc<[String]>,
    parts: FxHashMap<Arc<str>, Arc<Part>>,
    /// The tenants repos the XRs name ([`hangar::source_info_repo`]), each once, sorted.
    tenants_repos: Arc<[String]>,
    /// Each service with an XR, and the XR's creation (`None`: not known).
    xrs: Arc<[XrCreated]>,
}

impl Filed {
    /// Whether some object is `service`'s by [`hangar::service_of`]
    /// ([`Snapshot::knows`]).
    pub fn knows(&self, service: &str) -> bool {
        self.parts.get(service).is_some_and(|p| p.own > 0)
    }

    /// The tenants repos (`owner/name`) the services' XRs name in their source-info.
    pub fn tenants_repos(&self) -> &[String] {
        &self.tenants_repos
    }

    /// The services whose XR provisioning still tracks at `now`
    /// ([`provisioning::is_tracked`]): those it may show, whatever it shows of them yet.
    pub fn tracked(&self, now: DateTime<Utc>) -> impl Iterator<Item = &Arc<str>> {
        self.xrs
            .iter()
            .filter(move |(_, created)| provisioning::is_tracked(*created, now))
            .map(|(service, _)| service)
    }

    /// The objects of `services`' parts on each cluster, parsed, each once (an object may
    /// be in several parts), in a fixed order (kind, namespace, name).
    fn objects<'s>(
        &self,
        services: impl IntoIterator<Item = &'s str>,
    ) -> BTreeMap<&str, Vec<Arc<Object>>> {
        let mut seen: FxHashSet<*const Stored> = FxHashSet::default();
        let mut by_cluster: BTreeMap<&str, Vec<Arc<Object>>> = BTreeMap::new();
        let entries = services
            .into_iter()
            .filter_map(|service| self.parts.get(service))
            .flat_map(|part| &part.objects);
        for (cluster, stored) in entries {
            if !seen.insert(Arc::as_ptr(stored)) {
                continue;
            }
            let (Some(name), Some(object)) =
                (self.clusters.get(usize::from(*cluster)), stored.object())
            else {
                continue;
            };
            by_cluster.entry(name).or_default().push(Arc::new(object));
        }
        for objects in by_cluster.values_mut() {
            objects.sort_by(|a, b| {
                (&a.kind, a.namespace(), a.name()).cmp(&(&b.kind, b.namespace(), b.name()))
            });
        }
        by_cluster
    }

    /// Each of `services`' parts for a derivation across the fleet, one at a time: its
    /// objects and its repositories' pull requests — grouped by repository once, not
    /// scanned again per service as [`Filed::part`] does — and nothing else of `base`.
    pub fn lean_parts<'a>(
        &'a self,
        base: &'a Snapshot,
        services: impl IntoIterator<Item = &'a str> + 'a,
    ) -> impl Iterator<Item = (&'a str, Snapshot)> + 'a {
        let mut by_repo: FxHashMap<&str, Vec<&PullRequest>> = FxHashMap::default();
        for pr in base.pull_requests.iter().flatten() {
            by_repo.entry(pr.repo_name()).or_default().push(pr);
        }
        services.into_iter().map(move |service| {
            let mut objects = self.objects([service]);
            let pull_requests = base.pull_requests.as_ref().map(|_| {
                hangar::repos(service, None)
                    .iter()
                    .flat_map(|repo| by_repo.get(repo.as_str()).into_iter().flatten())
                    .map(|pr| (*pr).clone())
                    .collect()
            });
            let part = Snapshot {
                control_plane_cluster: base.control_plane_cluster.clone(),
                clusters: base
                    .clusters
                    .keys()
                    .map(|c| (c.clone(), objects.remove(c.as_str()).unwrap_or_default()))
                    .collect(),
                pull_requests,
                github_host: base.github_host.clone(),
                compared: base
                    .compared
                    .iter()
                    .filter(|c| c.service == service)
                    .cloned()
                    .collect(),
                ..Snapshot::empty(base.now)
            };
            (service, part)
        })
    }

    /// `service`'s part of the world ([`Snapshot::narrowed`] of `base`, which holds
    /// everything but objects).
    pub fn part(&self, base: &Snapshot, service: &str) -> Snapshot {
        let mut objects = self.objects([service]);
        base.narrowed(service, |cluster| {
            objects.remove(cluster).unwrap_or_default()
        })
    }
}

/// What the whole-fleet views read of one known service's part, derived when it changes.
#[derive(Debug)]
struct Made {
    /// The service's app in the fleet (none before Argo CD deploys it).
    apps: Vec<FleetApp>,
    /// Its XR's creation when it has one on the control plane (`Some(None)`: not known).
    xr_created: Option<Option<DateTime<Utc>>>,
    /// What its objects tell of its recent activity ([`activity::of_objects`]).
    activity: Vec<Activity>,
    /// When its states' judgement changes by time alone ([`tower_shared::state::EnvState::until`]):
    /// it is made again then, whether or not its objects move.
    until: Option<DateTime<Utc>>,
    /// The tenants repo its XR names ([`hangar::source_info_repo`]).
    tenants_repo: Option<String>,
}

/// The filing a deriver keeps: objects by service, and what each known service's part
/// feeds the fleet and provisioning, re-derived only for the services changes touched.
#[derive(Debug)]
pub struct Filing {
    filed: Filed,
    control_plane: String,
    made: FxHashMap<Arc<str>, Made>,
    /// Services whose part changed since the last [`Filing::refresh`].
    dirty: FxHashSet<Arc<str>>,
    /// Objects filed (each once, whatever the number of its owners).
    count: usize,
}

impl Filing {
    /// An empty filing for these clusters.
    pub fn new(clusters: Vec<String>, control_plane: &str) -> Self {
        Self {
            filed: Filed {
                clusters: clusters.into(),
                parts: FxHashMap::default(),
                tenants_repos: Arc::default(),
                xrs: Arc::default(),
            },
            control_plane: control_plane.to_owned(),
            made: FxHashMap::default(),
            dirty: FxHashSet::default(),
            count: 0,
        }
    }

    /// Every object of `snapshot` filed and derived, and the snapshot's base (every
    /// cluster named, no objects).
    pub fn of(mut snapshot: Snapshot) -> (Self, Snapshot) {
        let mut filing = Self::new(
            snapshot.clusters.keys().cloned().collect(),
            &snapshot.control_plane_cluster,
        );
        for (cluster, objects) in &mut snapshot.clusters {
            for object in std::mem::take(objects) {
                filing.moved(cluster, None, Some(&Arc::new(Stored::of(&object))));
            }
        }
        filing.refresh(snapshot.now);
        (filing, snapshot)
    }

    /// An object of `cluster` went from `old` to `new` (either absent: added or deleted).
    pub fn moved(&mut self, cluster: &str, old: Option<&Arc<Stored>>, new: Option<&Arc<Stored>>) {
        let Some(id) = self
            .filed
            .clusters
            .iter()
            .position(|c| c == cluster)
            .and_then(|i| u16::try_from(i).ok())
        else {
            return;
        };
        if let Some(old) = old {
            if let Some(head) = old.head() {
                self.count = self.count.saturating_sub(1);
                let own = hangar::service_of(&head);
                for owner in owners(&head) {
                    let key = self.key(owner);
                    let Some(part) = self.filed.parts.get_mut(owner) else {
                        continue;
                    };
                    let part = Arc::make_mut(part);
                    part.objects.retain(|(_, o)| !Arc::ptr_eq(o, old));
                    if own == Some(owner) {
                        part.own = part.own.saturating_sub(1);
                    }
                    if part.objects.is_empty() {
                        self.filed.parts.remove(owner);
                    }
                    self.dirty.insert(key);
                }
            }
        }
        if let Some(new) = new {
            if let Some(head) = new.head() {
                self.count += 1;
                let own = hangar::service_of(&head);
                for owner in owners(&head) {
                    let key = self.key(owner);
                    let part = Arc::make_mut(self.filed.parts.entry(Arc::clone(&key)).or_default());
                    part.objects.push((id, Arc::clone(new)));
                    if own == Some(owner) {
                        part.own += 1;
                    }
                    self.dirty.insert(key);
                }
            }
        }
    }

    /// The shared name of `owner` (one allocation per service, however many maps hold it).
    fn key(&self, owner: &str) -> Arc<str> {
        self.filed
            .parts
            .get_key_value(owner)
            .map(|(k, _)| Arc::clone(k))
            .or_else(|| self.made.get_key_value(owner).map(|(k, _)| Arc::clone(k)))
            .unwrap_or_else(|| Arc::from(owner))
    }

    /// Re-derives what the parts of the services changed since the last call feed the
    /// whole-fleet views, judged at `now` (a state's timed pause, a pod's grace), and those
    /// whose judgement time alone has changed by `now`; whether any was.
    pub fn refresh(&mut self, now: DateTime<Utc>) -> bool {
        let mut dirty = std::mem::take(&mut self.dirty);
        dirty.extend(
            self.made
                .iter()
                .filter(|(_, m)| m.until.is_some_and(|until| until <= now))
                .map(|(service, _)| Arc::clone(service)),
        );
        for service in &dirty {
            if !self.filed.knows(service) {
                self.made.remove(service);
                continue;
            }
            let made = self.make(service, now);
            self.made.insert(Arc::clone(service), made);
        }
        if !dirty.is_empty() {
            self.file_xrs();
        }
        !dirty.is_empty()
    }

    /// Puts what the services' XRs say — the tenants repos they name, when each was made —
    /// on the filing, once its services were made again.
    fn file_xrs(&mut self) {
        let named: BTreeSet<&String> = self
            .made
            .values()
            .filter_map(|m| m.tenants_repo.as_ref())
            .collect();
        self.filed.tenants_repos = named.into_iter().cloned().collect();
        let mut xrs: Vec<XrCreated> = self
            .made
            .iter()
            .filter_map(|(service, m)| Some((Arc::clone(service), m.xr_created?)))
            .collect();
        xrs.sort();
        self.filed.xrs = xrs.into();
    }

    fn make(&self, service: &str, now: DateTime<Utc>) -> Made {
        let objects = self.filed.objects([service]);
        let xrs = || {
            objects
                .get(self.control_plane.as_str())
                .into_iter()
                .flatten()
                .filter(|o| hangar::is_xr(o) && o.name() == service)
        };
        let tenants_repo = xrs().find_map(|o| hangar::source_info_repo(o));
        let xr_created = xrs()
            .map(|o| o.metadata.creation_timestamp)
            // Several XRs of one name: the one provisioning would track longest.
            .max_by_key(|created| created.map_or((1, None), |c| (0, Some(c))));
        let snapshot = Snapshot {
            control_plane_cluster: self.control_plane.clone(),
            clusters: objects
                .into_iter()
                .map(|(cluster, objects)| (cluster.to_owned(), objects))
                .collect(),
            ..Snapshot::empty(now)
        };
        let mut apps = fleet_apps(&snapshot);
        // An app is derived from its own service's part (an Application labelled for
        // another app sits in that app's part too).
        apps.retain(|a| a.name == service);
        Made {
            until: apps
                .iter()
                .flat_map(|a| &a.cells)
                .filter_map(|c| c.until)
                .min(),
            apps,
            xr_created,
            activity: activity::of_objects(&snapshot, service),
            tenants_repo,
        }
    }

    /// The soonest moment some service's judgement changes by time alone, if any will:
    /// [`Filing::refresh`] at or after it makes that service again.
    pub fn until(&self) -> Option<DateTime<Utc>> {
        self.made.values().filter_map(|m| m.until).min()
    }

    /// Every known service's fleet app (for [`tower_shared::fleet::assemble`]).
    pub fn fleet_apps(&self) -> Vec<FleetApp> {
        self.made
            .values()
            .flat_map(|m| m.apps.iter().cloned())
            .collect()
    }

    /// The newest of what every known service's objects tell of its activity at `now`
    /// ([`activity::latest`]).
    pub fn activity(&self, now: DateTime<Utc>) -> Vec<Activity> {
        activity::latest(self.made.values().flat_map(|m| &m.activity), now)
    }

    /// What provisioning derives from at `now`: `base` (everything but objects) with the
    /// objects of the only services it can show — those whose XR it still tracks and those
    /// pending request PRs name ([`provisioning::requested`]).
    pub fn provisioning_snapshot(&self, base: &Snapshot) -> Snapshot {
        let now = base.now;
        let mut services: BTreeSet<&str> = self
            .made
            .iter()
            .filter(|(_, m)| {
                m.xr_created
                    .is_some_and(|c| provisioning::is_tracked(c, now))
            })
            .map(|(s, _)| &**s)
            .collect();
        services.extend(provisioning::requested(
            base.pull_requests.as_deref().unwrap_or_default(),
            now,
        ));
        let mut objects = self.filed.objects(services);
        Snapshot {
            clusters: base
                .clusters
                .keys()
                .map(|c| (c.clone(), objects.remove(c.as_str()).unwrap_or_default()))
                .collect(),
            ..base.clone()
        }
    }

    /// The filing as it stands, to publish with a derivation.
    pub fn filed(&self) -> Filed {
        self.filed.clone()
    }

    /// How many objects are filed.
    pub fn count(&self) -> usize {
        self.count
    }
}

/// `object`'s owners, each once.
fn owners(object: &Object) -> Vec<&str> {
    let mut owners: Vec<&str> = hangar::owners(object).collect();
    owners.sort_unstable();
    owners.dedup();
    owners
}
