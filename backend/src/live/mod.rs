//! The live source: what Tower knows from the clusters (watch caches), GitHub (polled with
//! conditional requests), and its own history database, kept as one current [`Snapshot`]
//! and the provisioning derived from it.
//!
//! A deriver thread owns the derivation: it rebuilds the snapshot and its provisioning
//! index ([`World`]) when anything changes, and re-derives every second (durations move
//! with the clock) — so requests read a finished answer and never derive. It also keeps
//! the observer's memory (when steps were first seen running/done) and records every
//! provision it sees complete in the history, whether or not anyone has a page open.

pub mod backstage;
pub mod github;
pub mod kube;

use std::collections::{BTreeMap, HashSet};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use chrono::{DateTime, Utc};
use serde_json::value::RawValue;
use tokio::sync::{mpsc, watch};
use tower_shared::hangar;
use tower_shared::provisioning::{
    derive, record_of, remember, Group, Provisioning, ServiceKind, StepId, StepStatus, World,
};
use tower_shared::snapshot::{CatalogEntity, Observation, PullRequest, RecordedRun, Snapshot};

use self::github::GitHub;
use self::kube::Clusters;
use crate::config::Config;
use crate::history::History;

/// Tower's idea of "now": the system clock, or the simulated world's in `tower demo`.
pub type Clock = Arc<dyn Fn() -> DateTime<Utc> + Send + Sync>;

/// The system clock.
pub fn system_clock() -> Clock {
    Arc::new(Utc::now)
}

/// One derivation, ready to serve.
#[derive(Debug)]
pub struct Derived {
    /// The moment derived (the snapshot's own `now` is when it was built).
    pub now: DateTime<Utc>,
    pub snapshot: Arc<Snapshot>,
    pub provisioning: Arc<Provisioning>,
    /// The cluster caches' generation the snapshot was built from.
    pub generation: u64,
    /// Whether GitHub had answered when the snapshot was built.
    pub github_answered: bool,
    /// `provisioning.services` as JSON, serialised once.
    pub services_json: Arc<RawValue>,
    /// The `GET /api/provisioning` body while every cluster answers, built once.
    pub body: bytes::Bytes,
}

/// What was read from GitHub and the history database.
#[derive(Debug, Default)]
struct Remote {
    /// Pull requests by repository (`owner/name`), as last fetched.
    pulls: BTreeMap<String, Vec<PullRequest>>,
    /// GitHub has answered at least one lookup.
    github_answered: bool,
    /// Each service's `cicd.yaml` text, once read.
    cicd: BTreeMap<String, String>,
    /// The newest recorded runs (for typical durations).
    history: Vec<RecordedRun>,
    /// Catalog entities found so far, by name; `catalog_answered` once Backstage answered.
    catalog: BTreeMap<String, CatalogEntity>,
    catalog_answered: bool,
}

#[derive(Debug)]
struct Inner {
    config: Config,
    clusters: Clusters,
    github: Option<GitHub>,
    history: History,
    remote: Mutex<Remote>,
    derived: watch::Sender<Arc<Derived>>,
    /// GitHub's trouble as the poller last saw it (for `/api/events`).
    github_trouble: watch::Sender<Option<github::GitHubTrouble>>,
    poke: std::sync::mpsc::Sender<()>,
}

/// The live source. Cheap to clone.
#[derive(Clone)]
pub struct Live {
    inner: Arc<Inner>,
    clock: Clock,
}

impl std::fmt::Debug for Live {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Live")
            .field("inner", &self.inner)
            .finish_non_exhaustive()
    }
}

/// Opens the history database the config names (creating the data dir for SQLite).
pub async fn open_history(config: &Config) -> anyhow::Result<History> {
    if config.database_url.is_none() {
        std::fs::create_dir_all(&config.data_dir).map_err(|err| {
            anyhow::anyhow!("creating the data dir {}: {err}", config.data_dir.display())
        })?;
    }
    Ok(History::connect(&config.database_url()).await?)
}

/// Connects everything `config` lists and starts the live source.
pub async fn connect(config: Config, clock: Clock) -> anyhow::Result<Live> {
    let history = open_history(&config).await?;
    let clusters = Clusters::start(&config).await?;
    let github = config.github.as_ref().map(GitHub::new).transpose()?;
    Ok(Live::start(config, clusters, github, history, clock).await)
}

/// Who records runs the backend saw finish.
pub const RECORDED_BY_BACKEND: &str = "tower-backend";

impl Live {
    /// Starts watching the clusters, polling GitHub and deriving. Returns at once.
    pub async fn start(
        config: Config,
        clusters: Clusters,
        github: Option<GitHub>,
        history: History,
        clock: Clock,
    ) -> Self {
        let now = clock();
        let empty = Arc::new(Snapshot::empty(now));
        let first = Derived {
            now,
            generation: 0,
            github_answered: false,
            provisioning: Arc::new(Provisioning {
                services: Vec::new(),
            }),
            services_json: Arc::from(empty_list()),
            body: bytes::Bytes::new(),
            snapshot: empty,
        };
        let (poke, pokes) = std::sync::mpsc::channel();
        let inner = Arc::new(Inner {
            config,
            clusters,
            github,
            history,
            remote: Mutex::default(),
            derived: watch::channel(Arc::new(first)).0,
            github_trouble: watch::channel(None).0,
            poke,
        });
        let live = Self { inner, clock };
        live.reload_history().await;

        // Cluster changes wake the deriver.
        let mut generation = live.inner.clusters.generation();
        let poke = live.inner.poke.clone();
        tokio::spawn(async move {
            while generation.changed().await.is_ok() {
                if poke.send(()).is_err() {
                    return;
                }
            }
        });

        let (records, recorder) = mpsc::unbounded_channel();
        tokio::spawn(live.clone().record_finished(recorder));
        let deriver = live.clone();
        std::thread::Builder::new()
            .name("tower-deriver".to_owned())
            .spawn(move || deriver.derive_forever(&pokes, &records))
            .ok();
        if live.inner.github.is_some() {
            tokio::spawn(live.clone().poll_github());
        }
        let reader = live.inner.config.backstage.as_ref().and_then(|b| {
            let token = b.token.clone()?;
            Some((
                backstage::Backstage::new(&b.url, crate::app::http_client()),
                token,
            ))
        });
        if let Some((backstage, token)) = reader {
            tokio::spawn(live.clone().poll_catalog(backstage, token));
        }
        live
    }

    fn remote(&self) -> MutexGuard<'_, Remote> {
        self.inner
            .remote
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    pub fn now(&self) -> DateTime<Utc> {
        (self.clock)()
    }

    pub fn config(&self) -> &Config {
        &self.inner.config
    }

    pub fn clusters(&self) -> &Clusters {
        &self.inner.clusters
    }

    pub fn github(&self) -> Option<&GitHub> {
        self.inner.github.as_ref()
    }

    pub fn history(&self) -> &History {
        &self.inner.history
    }

    /// Changes of GitHub's trouble (rate limited, failing, well again), as the poller sees
    /// them.
    pub fn github_trouble(&self) -> watch::Receiver<Option<github::GitHubTrouble>> {
        self.inner.github_trouble.subscribe()
    }

    /// The latest derivation.
    pub fn derived(&self) -> Arc<Derived> {
        Arc::clone(&self.inner.derived.borrow())
    }

    /// Waits (up to `timeout`) until every cluster has been listed, GitHub has answered
    /// (when configured), and a derivation has read all of it. `false` on timeout.
    pub async fn wait_ready(&self, timeout: Duration) -> bool {
        let deadline = tokio::time::Instant::now() + timeout;
        let mut derived = self.inner.derived.subscribe();
        loop {
            let synced = self
                .inner
                .clusters
                .status(Utc::now())
                .iter()
                .all(|c| c.synced);
            let github_ok = self.inner.github.is_none() || self.remote().github_answered;
            if synced && github_ok {
                let wanted = *self.inner.clusters.generation().borrow();
                let current = derived.borrow_and_update().clone();
                if current.generation >= wanted
                    && (self.inner.github.is_none() || current.github_answered)
                {
                    return true;
                }
            }
            let wait = tokio::time::timeout_at(deadline, async {
                tokio::select! {
                    _ = derived.changed() => {}
                    () = tokio::time::sleep(Duration::from_millis(50)) => {}
                }
            });
            if wait.await.is_err() {
                return false;
            }
        }
    }

    /// Wakes the deriver (after something outside the watchers changed).
    pub fn poke(&self) {
        // The deriver only stops with the process.
        let _ = self.inner.poke.send(());
    }

    /// Reads the newest runs of each kind (typicals use 20 per kind, else of all kinds).
    /// When the database does not answer, the history read last is kept.
    pub async fn reload_history(&self) {
        let kinds: Vec<Option<&str>> = ServiceKind::ALL
            .into_iter()
            .map(|k| Some(k.as_str()))
            .chain([None])
            .collect();
        match self.inner.history.typical_sample(&kinds).await {
            Ok(runs) => {
                self.remote().history = runs;
                self.poke();
            }
            Err(err) => tracing::warn!(error = %err, "reading the provisioning history"),
        }
    }

    /// The snapshot the next derivation reads: the watch caches, GitHub's answers, the
    /// history and the observer's memory.
    fn build_snapshot(
        &self,
        now: DateTime<Utc>,
        observed: &BTreeMap<String, BTreeMap<String, Observation>>,
    ) -> Snapshot {
        let mut snapshot = Snapshot::empty(now);
        snapshot.control_plane_cluster = self.inner.config.control_plane_cluster.clone();
        snapshot.clusters = self.inner.clusters.objects();
        let remote = self.remote();
        snapshot.pull_requests = remote
            .github_answered
            .then(|| remote.pulls.values().flatten().cloned().collect());
        snapshot.cicd = remote.cicd.clone();
        snapshot.catalog = remote
            .catalog_answered
            .then(|| remote.catalog.values().cloned().collect());
        snapshot.history = remote.history.clone();
        snapshot.observed = observed.clone();
        snapshot
    }

    fn derive_forever(
        &self,
        pokes: &std::sync::mpsc::Receiver<()>,
        records: &mpsc::UnboundedSender<RecordedRun>,
    ) {
        let mut observed = BTreeMap::new();
        let mut recorded: HashSet<(String, DateTime<Utc>)> = HashSet::new();
        loop {
            let generation = *self.inner.clusters.generation().borrow();
            let github_answered = self.remote().github_answered;
            let snapshot = Arc::new(self.build_snapshot(self.now(), &observed));
            let world = World::new(&snapshot);
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
                let next = remember(&observed, &provisioning, now);
                let json = serde_json::value::to_raw_value(&provisioning.services)
                    .unwrap_or_else(|_| empty_list());
                self.inner.derived.send_replace(Arc::new(Derived {
                    now,
                    generation,
                    github_answered,
                    snapshot: Arc::clone(&snapshot),
                    provisioning: Arc::new(provisioning),
                    body: provisioning_body(now, &json, &Health::default())
                        .unwrap_or_default()
                        .into(),
                    services_json: Arc::from(json),
                }));
                let memory_changed = next != observed;
                observed = next;
                if memory_changed {
                    break;
                }
                match pokes.recv_timeout(Duration::from_secs(1)) {
                    Ok(()) => {
                        // Let a burst of changes settle into one rebuild.
                        std::thread::sleep(Duration::from_millis(100));
                        while pokes.try_recv().is_ok() {}
                        break;
                    }
                    Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {}
                    Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => return,
                }
            }
        }
    }

    async fn record_finished(self, mut runs: mpsc::UnboundedReceiver<RecordedRun>) {
        while let Some(run) = runs.recv().await {
            match self
                .inner
                .history
                .record(&run, RECORDED_BY_BACKEND, Utc::now())
                .await
            {
                Ok((_, crate::history::Recorded::Inserted)) => {
                    tracing::info!(service = %run.service, kind = %run.kind, "recorded a finished provision");
                    self.reload_history().await;
                }
                Ok(_) => {}
                Err(err) => {
                    tracing::warn!(service = %run.service, error = %err, "recording a provision")
                }
            }
        }
    }

    /// Asks GitHub, every few seconds, for what is due: the tenants repos' PRs, and the
    /// onboarding repos of services still provisioning until both onboarding PRs merged;
    /// and reads each tracked service's `cicd.yaml` once. Each answer is reused for 45 s
    /// and re-asked conditionally, so an unchanged repo costs no rate limit.
    async fn poll_github(self) {
        let Some(github) = self.inner.github.clone() else {
            return;
        };
        let mut ticker = tokio::time::interval(Duration::from_secs(5));
        let mut derivations = self.inner.derived.subscribe();
        let mut known: Vec<Arc<str>> = Vec::new();
        loop {
            // Every 5 s, and at once when a service appears or goes.
            tokio::select! {
                _ = ticker.tick() => {}
                changed = derivations.changed() => {
                    if changed.is_err() {
                        return;
                    }
                    let names: Vec<Arc<str>> = derivations
                        .borrow_and_update()
                        .provisioning
                        .services
                        .iter()
                        .map(|s| Arc::clone(&s.name))
                        .collect();
                    if names == known {
                        continue;
                    }
                    known = names;
                }
            }
            let derived = self.derived();
            let mut repos = self.inner.config.tenants_repos();
            let mut cicd_wanted = Vec::new();
            for service in &derived.provisioning.services {
                if !self.remote().cicd.contains_key(&*service.name) {
                    cicd_wanted.push(service.name.to_string());
                }
                if service.group == Group::Finished {
                    continue;
                }
                let Some(kind) = service.kind else { continue };
                let onboarding_done = service
                    .steps
                    .iter()
                    .any(|s| s.id == StepId::OnboardingPrs && s.status == StepStatus::Done);
                if !kind.is_infra() && !onboarding_done {
                    repos.extend(
                        hangar::repos(&service.name, Some(kind))
                            .into_iter()
                            .map(|repo| format!("{}/{repo}", github.owner())),
                    );
                }
            }
            let mut changed = false;
            for repo in repos {
                match github.pull_requests(&repo).await {
                    Ok(pulls) => {
                        let mut remote = self.remote();
                        remote.github_answered = true;
                        if remote.pulls.get(&repo) != Some(&pulls) {
                            remote.pulls.insert(repo, pulls);
                            changed = true;
                        }
                    }
                    Err(err) if err.is_not_found() => {
                        // Not created yet: no pull requests, which is an answer too.
                        let mut remote = self.remote();
                        remote.github_answered = true;
                        changed |= remote.pulls.remove(&repo).is_some();
                    }
                    Err(err) => tracing::warn!(%repo, error = %err, "GitHub pull request lookup"),
                }
            }
            for service in cicd_wanted {
                let snapshot = Arc::clone(&derived.snapshot);
                let (repo, path) = hangar::cicd_location(&snapshot, github.owner(), &service);
                match github.file(&repo, &path).await {
                    Ok(Some(text)) => {
                        self.remote().cicd.insert(service, text);
                        changed = true;
                    }
                    Ok(None) => {}
                    Err(err) => tracing::warn!(%repo, %path, error = %err, "reading cicd.yaml"),
                }
            }
            if changed {
                self.poke();
            }
            let trouble = github.trouble();
            self.inner.github_trouble.send_if_modified(|seen| {
                let news = *seen != trouble;
                *seen = trouble;
                news
            });
        }
    }
}

impl Live {
    /// Every 5 s, looks up in the catalog (with Tower's read token) each listed service not
    /// found there yet, so the server-side derivation knows when the ingestor picked it up.
    async fn poll_catalog(self, backstage: backstage::Backstage, token: crate::config::Secret) {
        let mut ticker = tokio::time::interval(Duration::from_secs(5));
        loop {
            ticker.tick().await;
            let derived = self.derived();
            let wanted: Vec<Arc<str>> = derived
                .provisioning
                .services
                .iter()
                .filter(|s| s.kind.is_some() && !self.remote().catalog.contains_key(&*s.name))
                .map(|s| Arc::clone(&s.name))
                .collect();
            let mut changed = false;
            // The catalog counts as answering only after a full pass: a partial list would
            // say "not in the catalog" for services nobody asked about.
            let mut answered = true;
            for name in wanted {
                match backstage
                    .entity("component", "default", &name, token.expose())
                    .await
                {
                    Ok(found) => {
                        let entity =
                            found.and_then(|v| serde_json::from_value::<CatalogEntity>(v).ok());
                        if let Some(entity) = entity {
                            self.remote().catalog.insert(name.to_string(), entity);
                            changed = true;
                        }
                    }
                    Err(err) => {
                        tracing::warn!(service = %name, error = %err, "catalog lookup");
                        answered = false;
                        break;
                    }
                }
            }
            let mut remote = self.remote();
            if answered && !remote.catalog_answered {
                remote.catalog_answered = true;
                changed = true;
            }
            drop(remote);
            if changed {
                self.poke();
            }
        }
    }
}

/// Why some of what an answer shows may be old or missing, flattened into the answers the
/// pages read: `stale` (clusters serving their last known data) and `github` (rate limited
/// or failing). Both absent when all is well.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize)]
pub struct Health {
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub stale: Vec<kube::ClusterStatus>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub github: Option<github::GitHubTrouble>,
}

impl Health {
    /// Every cluster answers and GitHub does too.
    pub fn is_clear(&self) -> bool {
        self.stale.is_empty() && self.github.is_none()
    }
}

/// The `GET /api/provisioning` body: `{"now", "services", "stale"?, "github"?}`.
pub fn provisioning_body(
    now: DateTime<Utc>,
    services: &RawValue,
    health: &Health,
) -> serde_json::Result<Vec<u8>> {
    #[derive(serde::Serialize)]
    struct Body<'a> {
        now: DateTime<Utc>,
        services: &'a RawValue,
        #[serde(flatten)]
        health: &'a Health,
    }
    serde_json::to_vec(&Body {
        now,
        services,
        health,
    })
}

fn empty_list() -> Box<RawValue> {
    serde_json::value::to_raw_value(&[(); 0]).unwrap_or_default()
}
