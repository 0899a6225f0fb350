//! Watch-based caches of every cluster Tower reads, shared by all viewers.
//!
//! One kube-rs [`watcher`] per cluster and resource type keeps a map of the objects, already
//! in Tower's own model, trimmed and at rest as compact JSON ([`Stored`]); every change is
//! also journalled ([`Moved`]) for the deriver's filing. Requests never LIST. The watcher
//! lists once at start, then watches from the last resource version (bookmarks keep it
//! current); a `410 Gone` makes it list again. A type the cluster does not serve (404) is left
//! out; so, for now, is one Tower has no grant for (403): the derivations fall back as they do
//! without the objects, the cluster is not stale, and the watcher asks again only after
//! [`NO_GRANT_RETRY`]. When a watch fails the cluster is marked stale — with the time of the
//! failure — and keeps serving its last objects. A cheap `/version` probe runs all the time
//! with its own deadline: a server that stops answering (even one that keeps connections
//! open and says nothing) is stale within [`PROBE_EVERY`] + [`PROBE_DEADLINE`], and an answer
//! clears the mark.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use chrono::{DateTime, Utc};
use futures::StreamExt as _;
use kube::api::{ApiResource, DynamicObject, GroupVersionKind};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::runtime::utils::Backoff;
use kube::runtime::{watcher, WatchStreamExt as _};
use tokio::sync::{broadcast, watch};
use tower_shared::api::{Change, ChangeSource, StaleCluster};
use tower_shared::hangar::{self, WatchedKind, WATCHED_KINDS};
use tower_shared::kube::Object;

use crate::clock::Clock;
use crate::config::Config;
use crate::filed::Stored;

/// How often each cluster's `/version` is asked.
pub const PROBE_EVERY: Duration = Duration::from_secs(3);

/// The longest a watcher waits between retries while its cluster is away.
pub const RETRY_AT_MOST: Duration = Duration::from_secs(2);
/// How long the probe waits for an answer before the cluster counts as stale.
pub const PROBE_DEADLINE: Duration = Duration::from_secs(5);
/// How long a watcher refused for lack of a grant (403) waits before asking again.
pub const NO_GRANT_RETRY: Duration = Duration::from_secs(10 * 60);

/// The API resource for a watched kind, for kube-rs' dynamic API.
fn api_resource(watched: &WatchedKind) -> ApiResource {
    ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk(watched.group, watched.version, watched.kind),
        watched.plural,
    )
}

/// How fresh one cluster's cache is (times on Tower's clock).
#[derive(Clone, Debug, PartialEq)]
pub struct ClusterStatus {
    pub name: String,
    /// Every served type has been listed once.
    pub synced: bool,
    /// A watch failed and the API has not answered since: the objects are the last known.
    pub stale: bool,
    /// When the cluster was last known to answer (the failure's start while stale).
    pub last_seen_at: Option<DateTime<Utc>>,
    /// The last failure, without credentials (kube errors carry none).
    pub error: Option<String>,
}

impl ClusterStatus {
    /// The health notice's line for a stale cluster.
    pub fn as_stale(&self) -> Option<StaleCluster> {
        self.stale.then(|| StaleCluster {
            name: self.name.clone(),
            last_seen_at: self.last_seen_at,
            error: self.error.clone(),
        })
    }
}

/// An object's place in its kind: `namespace/name`, or `name` when cluster-scoped (neither
/// holds a `/`). One allocation per cached object.
type Key = Box<str>;

#[derive(Debug, Default)]
struct TypeCache {
    objects: BTreeMap<Key, Arc<Stored>>,
    /// A list in progress (between `Init` and `InitDone`).
    listing: Option<BTreeMap<Key, Arc<Stored>>>,
    synced: bool,
    /// The cluster does not serve this type, or Tower has no grant to read it.
    absent: bool,
    last_error: Option<Stamp<String>>,
}

/// Something that happened to a cluster's cache: in which order (a counter, so a clock
/// that stands still still orders them), when on Tower's clock, and what.
#[derive(Clone, Debug)]
struct Stamp<T> {
    seq: u64,
    at: DateTime<Utc>,
    what: T,
}

#[derive(Debug, Default)]
struct ClusterCache {
    types: Vec<TypeCache>,
    last_ok: Option<Stamp<()>>,
    /// The probe's last failure (no answer within its deadline, or an error).
    probe_error: Option<Stamp<String>>,
    seq: u64,
}

impl ClusterCache {
    /// The newest failure since the cluster last answered, if any.
    fn failing(&self) -> Option<&Stamp<String>> {
        self.types
            .iter()
            .filter_map(|t| t.last_error.as_ref())
            .chain(self.probe_error.as_ref())
            .filter(|e| self.last_ok.as_ref().is_none_or(|ok| e.seq > ok.seq))
            .max_by_key(|e| e.seq)
    }

    fn stamp<T>(&mut self, at: DateTime<Utc>, what: T) -> Stamp<T> {
        self.seq += 1;
        Stamp {
            seq: self.seq,
            at,
            what,
        }
    }

    fn answered(&mut self, at: DateTime<Utc>) {
        self.last_ok = Some(self.stamp(at, ()));
    }
}

/// One object of a cluster going from `old` to `new` (either absent: added or deleted).
#[derive(Debug)]
pub struct Moved {
    pub cluster: Arc<str>,
    pub old: Option<Arc<Stored>>,
    pub new: Option<Arc<Stored>>,
}

#[derive(Debug)]
struct Shared {
    clock: Clock,
    clusters: BTreeMap<String, Mutex<ClusterCache>>,
    /// Each cluster's client, for what is read on request ([`hangar::READ_ON_REQUEST`]).
    clients: Clients,
    /// Every move since the deriver last took them ([`Clusters::take_moves`]).
    journal: Mutex<Vec<Moved>>,
    changes: broadcast::Sender<Change>,
    generation: watch::Sender<u64>,
}

/// Each cluster's client (shown by name only: a client has no `Debug`).
struct Clients(BTreeMap<String, kube::Client>);

impl std::fmt::Debug for Clients {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.0.keys()).finish()
    }
}

/// The caches of every configured cluster. Cheap to clone.
#[derive(Clone, Debug)]
pub struct Clusters {
    shared: Arc<Shared>,
}

impl Shared {
    /// Journals `moves` (old, new) of objects of `cluster` for the deriver.
    fn journal(
        &self,
        cluster: &Arc<str>,
        moves: impl IntoIterator<Item = (Option<Arc<Stored>>, Option<Arc<Stored>>)>,
    ) {
        self.journal
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .extend(moves.into_iter().map(|(old, new)| Moved {
                cluster: Arc::clone(cluster),
                old,
                new,
            }));
    }
}

/// Delays between a watcher's retries: 250 ms doubling to [`RETRY_AT_MOST`], so a cluster
/// that comes back is read again within seconds — by the time the probe (every
/// [`PROBE_EVERY`]) says it answers, its lists are under way.
#[derive(Debug)]
struct Retry(Duration);

impl Iterator for Retry {
    type Item = Duration;
    fn next(&mut self) -> Option<Duration> {
        let delay = self.0;
        self.0 = (self.0 * 2).min(RETRY_AT_MOST);
        Some(delay)
    }
}

impl Backoff for Retry {
    fn reset(&mut self) {
        self.0 = Duration::from_millis(250);
    }
}

fn lock(cache: &Mutex<ClusterCache>) -> MutexGuard<'_, ClusterCache> {
    cache
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl Clusters {
    /// Connects to every cluster in `config` and starts watching; returns at once (the
    /// caches fill in the background; see [`Clusters::status`]).
    pub async fn start(config: &Config, clock: Clock) -> anyhow::Result<Self> {
        let mut clients = Vec::new();
        for cluster in &config.clusters {
            let client_config = match &cluster.context {
                Some(context) => {
                    let kubeconfig = match &config.kubeconfig {
                        Some(path) => Kubeconfig::read_from(path)?,
                        None => Kubeconfig::read()?,
                    };
                    let options = KubeConfigOptions {
                        context: Some(context.clone()),
                        ..KubeConfigOptions::default()
                    };
                    kube::Config::from_custom_kubeconfig(kubeconfig, &options)
                        .await
                        .map_err(|err| {
                            anyhow::anyhow!("cluster {}: context {context}: {err}", cluster.name)
                        })?
                }
                None => kube::Config::incluster()
                    .map_err(|err| anyhow::anyhow!("cluster {}: {err}", cluster.name))?,
            };
            let mut client_config = client_config;
            // Every call has a deadline; watches are bounded by their own timeoutSeconds.
            client_config.connect_timeout = Some(Duration::from_secs(5));
            clients.push((cluster.name.clone(), kube::Client::try_from(client_config)?));
        }
        Ok(Self::watch(clients, clock))
    }

    /// Starts the watchers for already-built clients, stamping on `clock`.
    pub fn watch(clients: Vec<(String, kube::Client)>, clock: Clock) -> Self {
        let clusters = clients
            .iter()
            .map(|(name, _)| {
                let cache = ClusterCache {
                    types: WATCHED_KINDS.iter().map(|_| TypeCache::default()).collect(),
                    last_ok: None,
                    probe_error: None,
                    seq: 0,
                };
                (name.clone(), Mutex::new(cache))
            })
            .collect();
        let shared = Arc::new(Shared {
            clock,
            clusters,
            clients: Clients(clients.iter().cloned().collect()),
            journal: Mutex::new(Vec::new()),
            changes: broadcast::channel(1024).0,
            generation: watch::channel(0).0,
        });
        for (name, client) in clients {
            for (index, watched) in WATCHED_KINDS.iter().enumerate() {
                tokio::spawn(run_watcher(
                    Arc::downgrade(&shared),
                    name.clone(),
                    client.clone(),
                    index,
                    *watched,
                ));
            }
            tokio::spawn(probe(Arc::downgrade(&shared), name, client));
        }
        Self { shared }
    }

    /// Every cluster's objects now, parsed (for tests and tools: the deriver files the
    /// moves instead).
    pub fn objects(&self) -> BTreeMap<String, Vec<Arc<Object>>> {
        self.shared
            .clusters
            .iter()
            .map(|(name, cache)| {
                let cache = lock(cache);
                let objects = cache
                    .types
                    .iter()
                    .flat_map(|t| t.objects.values())
                    .filter_map(|stored| stored.object().map(Arc::new))
                    .collect();
                (name.clone(), objects)
            })
            .collect()
    }

    /// The moves since the last call, oldest first.
    pub fn take_moves(&self) -> Vec<Moved> {
        std::mem::take(
            &mut self
                .shared
                .journal
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner),
        )
    }

    /// `cluster`'s client, for what Tower reads on request; `None` for a cluster not
    /// configured.
    pub fn client(&self, cluster: &str) -> Option<kube::Client> {
        self.shared.clients.0.get(cluster).cloned()
    }

    /// The clusters' names, in the order [`Clusters::objects`] has them.
    pub fn names(&self) -> Vec<String> {
        self.shared.clusters.keys().cloned().collect()
    }

    /// How many objects each cluster's cache holds.
    pub fn object_counts(&self) -> BTreeMap<String, usize> {
        self.shared
            .clusters
            .iter()
            .map(|(name, cache)| {
                let count = lock(cache).types.iter().map(|t| t.objects.len()).sum();
                (name.clone(), count)
            })
            .collect()
    }

    /// How fresh each cluster's cache is.
    pub fn status(&self) -> Vec<ClusterStatus> {
        self.shared
            .clusters
            .iter()
            .map(|(name, cache)| {
                let cache = lock(cache);
                let failing = cache.failing();
                let synced = cache.types.iter().all(|t| t.synced || t.absent);
                let last_seen_at = match failing {
                    Some(failure) => Some(cache.last_ok.as_ref().map_or(failure.at, |ok| ok.at)),
                    None => cache.last_ok.as_ref().map(|ok| ok.at),
                };
                ClusterStatus {
                    name: name.clone(),
                    synced,
                    stale: failing.is_some(),
                    last_seen_at,
                    error: failing.map(|failure| failure.what.clone()),
                }
            })
            .collect()
    }

    /// Object changes as the watchers see them (stale and fresh only bump the generation).
    pub fn changes(&self) -> broadcast::Receiver<Change> {
        self.shared.changes.subscribe()
    }

    /// Bumped after every change to any cache.
    pub fn generation(&self) -> watch::Receiver<u64> {
        self.shared.generation.subscribe()
    }
}

/// What a cache update means for the rest of Tower.
enum Update {
    /// Nothing anyone needs to hear about.
    Quiet,
    /// The cluster's freshness changed.
    Freshness,
    /// An object (or a whole type) changed.
    Object(Change),
}

fn record(shared: &Shared, cluster: &str, f: impl FnOnce(&mut ClusterCache) -> Update) {
    let Some(cache) = shared.clusters.get(cluster) else {
        return;
    };
    let update = f(&mut lock(cache));
    match update {
        Update::Quiet => {}
        Update::Freshness => shared.generation.send_modify(|g| *g += 1),
        Update::Object(change) => {
            shared.generation.send_modify(|g| *g += 1);
            // Nobody listening is fine.
            let _ = shared.changes.send(change);
        }
    }
}

/// A change to `object` (or to a whole type, `None`) of `cluster`.
fn object_change(
    cluster: &str,
    watched: &WatchedKind,
    action: &str,
    object: Option<&Object>,
) -> Change {
    Change {
        cluster: Some(cluster.to_owned()),
        kind: Some(watched.kind.to_owned()),
        action: Some(action.to_owned()),
        namespace: object.and_then(|o| o.metadata.namespace.clone()),
        name: object.map(|o| o.metadata.name.clone()),
        service: object.and_then(hangar::service_of).map(str::to_owned),
        ..Change::of(ChangeSource::Kubernetes, None)
    }
}

/// A watched object in Tower's model, trimmed: its key, its stored form and the object.
fn to_object(object: DynamicObject, watched: &WatchedKind) -> Option<(Key, Arc<Stored>, Object)> {
    let mut value = serde_json::to_value(object).ok()?;
    if let Some(map) = value.as_object_mut() {
        let api_version = if watched.group.is_empty() {
            watched.version.to_owned()
        } else {
            format!("{}/{}", watched.group, watched.version)
        };
        map.entry("apiVersion").or_insert(api_version.into());
        map.entry("kind").or_insert(watched.kind.into());
    }
    // Kept only as derivations read it: no env, args, Helm values or secret params.
    let object = tower_shared::trim::object(Object::from_value(value)?);
    let key = match &object.metadata.namespace {
        Some(namespace) => format!("{namespace}/{}", object.metadata.name),
        None => object.metadata.name.clone(),
    };
    Some((key.into_boxed_str(), Arc::new(Stored::of(&object)), object))
}

async fn run_watcher(
    shared: std::sync::Weak<Shared>,
    cluster: String,
    client: kube::Client,
    index: usize,
    watched: WatchedKind,
) {
    loop {
        let refused = watch_kind(&shared, &cluster, client.clone(), index, watched).await;
        if !refused {
            return;
        }
        tokio::time::sleep(NO_GRANT_RETRY).await;
    }
}

/// Watches one kind until Tower stops (`false`) or the cluster refuses it for lack of a grant
/// (`true`); a kind the cluster does not serve ends the watch for good (`false`).
async fn watch_kind(
    shared: &std::sync::Weak<Shared>,
    cluster: &str,
    client: kube::Client,
    index: usize,
    watched: WatchedKind,
) -> bool {
    let resource = api_resource(&watched);
    let api: kube::Api<DynamicObject> = match watched.namespace {
        Some(namespace) => kube::Api::namespaced_with(client, namespace, &resource),
        None => kube::Api::all_with(client, &resource),
    };
    let cluster = cluster.to_owned();
    let journal_name: Arc<str> = Arc::from(cluster.as_str());
    let config = match watched.selector {
        Some(labels) => watcher::Config::default().labels(labels),
        None => watcher::Config::default(),
    };
    let mut stream = watcher(api, config)
        .backoff(Retry(Duration::from_millis(250)))
        .boxed();
    while let Some(item) = stream.next().await {
        let Some(shared) = shared.upgrade() else {
            return false;
        };
        let now = shared.clock.now();
        match item {
            Ok(event) => record(&shared, &cluster, |cache| {
                let was_failing = cache.failing().is_some();
                cache.answered(now);
                let freshness = if was_failing {
                    Update::Freshness
                } else {
                    Update::Quiet
                };
                let types = &mut cache.types[index];
                match event {
                    watcher::Event::Init => {
                        types.listing = Some(BTreeMap::new());
                        freshness
                    }
                    watcher::Event::InitApply(object) => {
                        if let (Some(listing), Some((key, stored, _))) =
                            (types.listing.as_mut(), to_object(object, &watched))
                        {
                            listing.insert(key, stored);
                        }
                        freshness
                    }
                    watcher::Event::InitDone => {
                        let listed = types.listing.take().unwrap_or_default();
                        let old = std::mem::replace(&mut types.objects, listed);
                        shared.journal(
                            &journal_name,
                            old.into_values()
                                .map(|o| (Some(o), None))
                                .chain(types.objects.values().map(|n| (None, Some(Arc::clone(n))))),
                        );
                        types.synced = true;
                        Update::Object(object_change(&cluster, &watched, "resynced", None))
                    }
                    watcher::Event::Apply(object) => {
                        let Some((key, stored, object)) = to_object(object, &watched) else {
                            return freshness;
                        };
                        let change = object_change(&cluster, &watched, "applied", Some(&object));
                        let old = types.objects.insert(key, Arc::clone(&stored));
                        shared.journal(&journal_name, [(old, Some(stored))]);
                        Update::Object(change)
                    }
                    watcher::Event::Delete(object) => {
                        let Some((key, _, object)) = to_object(object, &watched) else {
                            return freshness;
                        };
                        if let Some(old) = types.objects.remove(&key) {
                            shared.journal(&journal_name, [(Some(old), None)]);
                        }
                        Update::Object(object_change(&cluster, &watched, "deleted", Some(&object)))
                    }
                }
            }),
            Err(err) if refused_with(&err, 404) => {
                record(&shared, &cluster, |cache| {
                    cache.types[index].absent = true;
                    Update::Quiet
                });
                tracing::debug!(%cluster, kind = watched.kind, "not served by this cluster");
                return false;
            }
            Err(err) if refused_with(&err, 403) => {
                // No grant: read as if there were none of these objects (the derivations fall
                // back), and say so once per attempt rather than marking the cluster stale.
                record(&shared, &cluster, |cache| {
                    let types = &mut cache.types[index];
                    types.absent = true;
                    types.listing = None;
                    let old = std::mem::take(&mut types.objects);
                    if old.is_empty() {
                        Update::Quiet
                    } else {
                        shared.journal(&journal_name, old.into_values().map(|o| (Some(o), None)));
                        Update::Object(object_change(&cluster, &watched, "resynced", None))
                    }
                });
                tracing::warn!(%cluster, kind = watched.kind, namespace = watched.namespace,
                    error = %err, retry_in_secs = NO_GRANT_RETRY.as_secs(),
                    "no grant to read this kind: reading without it");
                return true;
            }
            Err(err) => {
                tracing::warn!(%cluster, kind = watched.kind, error = %err, "watch failed");
                let message = err.to_string();
                record(&shared, &cluster, |cache| {
                    let failure = cache.stamp(now, message);
                    cache.types[index].last_error = Some(failure);
                    Update::Freshness
                });
            }
        }
    }
    false
}

/// Whether the API refused to list or watch with `code`.
fn refused_with(err: &watcher::Error, code: u16) -> bool {
    match err {
        watcher::Error::InitialListFailed(kube::Error::Api(status))
        | watcher::Error::WatchStartFailed(kube::Error::Api(status)) => status.code == code,
        _ => false,
    }
}

/// Asks the cluster's `/version` every [`PROBE_EVERY`], waiting at most [`PROBE_DEADLINE`]:
/// no answer marks the cluster stale (a hung server keeps its watches open and silent, so
/// they alone would not notice for minutes); an answer marks it fresh again (the watchers
/// resume from their resource versions on their next retry).
async fn probe(shared: std::sync::Weak<Shared>, cluster: String, client: kube::Client) {
    let mut ticker = tokio::time::interval(PROBE_EVERY);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        ticker.tick().await;
        let answer = tokio::time::timeout(PROBE_DEADLINE, client.apiserver_version()).await;
        let Some(strong) = shared.upgrade() else {
            return;
        };
        let now = strong.clock.now();
        let failure = match answer {
            Ok(Ok(_)) => None,
            Ok(Err(err)) => Some(err.to_string()),
            Err(_) => Some(format!(
                "the API server did not answer within {} s",
                PROBE_DEADLINE.as_secs()
            )),
        };
        record(&strong, &cluster, |cache| {
            let was_failing = cache.failing().is_some();
            match failure {
                None => cache.answered(now),
                Some(message) => {
                    // A failure already showing keeps its start (and its watcher's words).
                    if was_failing {
                        return Update::Quiet;
                    }
                    tracing::warn!(%cluster, error = %message, "the cluster's API is not answering");
                    cache.probe_error = Some(cache.stamp(now, message));
                }
            }
            if was_failing == cache.failing().is_some() {
                Update::Quiet
            } else {
                Update::Freshness
            }
        });
    }
}
