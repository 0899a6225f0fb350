//! The live source: what Tower knows from the clusters (watch caches), GitHub (polled with
//! conditional requests, woken by webhooks), Backstage's catalog and its own history
//! database, kept as one current derivation ([`Derived`]) with every view ready as bytes.
//!
//! Module map:
//! - [`kube`] — one kube-rs watcher per cluster and kind, feeding Tower's object maps;
//! - [`github`] — GitHub through octocrab: ETags, a cache, rate limits;
//! - [`backstage`] — catalog lookups and the ingestor trigger;
//! - [`deriver`] — the thread that rebuilds the snapshot when anything changes, re-derives
//!   every second, records finished provisions, and then tells `/api/events` what changed;
//! - [`pollers`] — the GitHub and catalog pollers, and what they last read;
//! - [`objectives`] — Prometheus' figures for every environment's objectives;
//! - [`tenant_apps`] — the InfraServices' `<name>-dev` Applications, from the tenants' Argo CD;
//! - [`logs`] — a pod's container log read from its cluster on request.
//!
//! Every change (an object, a PR, a catalog entity, a history row) is noted with
//! [`Live::note`]; the deriver takes the notes, publishes the views that show them, and only
//! then sends them as events, so a page that fetches on an event gets the new answer.

pub mod backstage;
mod deriver;
pub mod github;
pub mod kube;
pub mod logs;
mod objectives;
mod pollers;
mod tenant_apps;

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use chrono::{DateTime, Utc};
use tokio::sync::{broadcast, watch, Notify};
use tower_shared::api::{Change, ChangeSource, ClusterFreshness, GitHubState, Health};
use tower_shared::hangar::{self, ServiceKind};
use tower_shared::provisioning::Provisioning;
use tower_shared::snapshot::Snapshot;

use self::github::GitHub;
use self::kube::{ClusterStatus, Clusters};
use self::pollers::Remote;
use crate::clock::Clock;
use crate::config::Config;
use crate::derived::{Derived, Inputs};
use crate::history::History;
use crate::tabs::Tabs;

/// Something `/api/events` tells pages, sent after the views that show it are published.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LiveEvent {
    Change(Change),
    Stale(ClusterFreshness),
    Fresh(ClusterFreshness),
    GitHub(GitHubState),
}

#[derive(Debug)]
struct Inner {
    config: Config,
    clock: Clock,
    clusters: Clusters,
    github: Option<GitHub>,
    history: History,
    remote: Mutex<Remote>,
    derived: watch::Sender<Arc<Derived>>,
    tabs: Tabs,
    /// Changes noted since the deriver last took them.
    pending: Mutex<BTreeSet<Change>>,
    /// How long the deriver's last rebuild took (snapshot, index, derivation, views), µs.
    last_rebuild_micros: std::sync::atomic::AtomicU64,
    rebuilds: std::sync::atomic::AtomicU64,
    events: broadcast::Sender<LiveEvent>,
    poke: std::sync::mpsc::Sender<()>,
    /// The first sights every replica shares, as the database last answered them (the
    /// deriver adopts them: [`tower_shared::provisioning::adopt`]); `None` until it answered.
    first_sights: Mutex<Option<Arc<crate::history::Sights>>>,
    /// Set when `first_sights` changed since the deriver last looked.
    sights_moved: std::sync::atomic::AtomicBool,
    /// Wakes the GitHub poller (a webhook said a repo changed).
    github_due: Notify,
    /// The step logs being streamed.
    logs: logs::Open,
    /// Prometheus, when the config names one (the Runtime tab's and the objectives').
    prometheus: Option<Arc<crate::prometheus::Prometheus>>,
}

/// The live source. Cheap to clone.
#[derive(Clone, Debug)]
pub struct Live {
    inner: Arc<Inner>,
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

/// Connects everything `config` lists and starts the live source, on `clock`.
pub async fn connect(config: Config, clock: Clock) -> anyhow::Result<Live> {
    let history = open_history(&config).await?;
    let clusters = Clusters::start(&config, clock.clone()).await?;
    let github = config
        .github
        .as_ref()
        .map(|g| GitHub::new(g, clock.clone()))
        .transpose()?;
    Ok(Live::start(config, clock, clusters, github, history).await)
}

/// Who records runs the backend saw finish.
pub const RECORDED_BY_BACKEND: &str = "tower-backend";

impl Live {
    /// Starts watching the clusters, polling GitHub and the catalog, and deriving. Returns
    /// at once.
    pub async fn start(
        config: Config,
        clock: Clock,
        clusters: Clusters,
        github: Option<GitHub>,
        history: History,
    ) -> Self {
        let now = clock.now();
        let first = Derived::next(
            None,
            Inputs {
                base: Arc::new(Snapshot::empty(now)),
                filed: Arc::default(),
                fleet_apps: Some(Vec::new()),
                object_activity: Some(Vec::new()),
                provisioning: Provisioning::default(),
                now,
                health: Health::default(),
                fleet_file: None,
                generation: 0,
                github_answered: false,
            },
        );
        let (poke, pokes) = std::sync::mpsc::channel();
        let config_prometheus = config
            .prometheus
            .clone()
            .map(|p| Arc::new(crate::prometheus::Prometheus::new(p)));
        let live = Self {
            inner: Arc::new(Inner {
                config,
                clock,
                clusters,
                github,
                history,
                remote: Mutex::default(),
                derived: watch::channel(Arc::new(first)).0,
                tabs: Tabs::default(),
                pending: Mutex::default(),
                last_rebuild_micros: std::sync::atomic::AtomicU64::new(0),
                rebuilds: std::sync::atomic::AtomicU64::new(0),
                events: broadcast::channel(4096).0,
                poke,
                first_sights: Mutex::default(),
                sights_moved: std::sync::atomic::AtomicBool::new(false),
                github_due: Notify::new(),
                logs: logs::Open::default(),
                prometheus: config_prometheus,
            }),
        };
        live.reload_history(None).await;
        tokio::spawn(live.clone().forward_cluster_changes());
        let (recorder, sights) = deriver::start(&live, pokes);
        tokio::spawn(live.clone().record_finished(recorder));
        tokio::spawn(live.clone().share_sights(sights));
        if live.inner.github.is_some() {
            tokio::spawn(live.clone().poll_github());
        }
        if let Some(prometheus) = live.inner.prometheus.clone() {
            tokio::spawn(live.clone().poll_objectives(prometheus));
        }
        if let Some(argocd) = live.inner.config.argocd.clone() {
            tokio::spawn(live.clone().poll_tenant_apps(argocd));
        }
        let reader = live.inner.config.backstage.as_ref().and_then(|b| {
            let token = b.token.clone()?;
            Some((
                backstage::Backstage::new(&b.url, crate::outbound::http_client()),
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

    /// Tower's clock.
    pub fn clock(&self) -> &Clock {
        &self.inner.clock
    }

    pub fn now(&self) -> DateTime<Utc> {
        self.inner.clock.now()
    }

    pub fn config(&self) -> &Config {
        &self.inner.config
    }

    /// The tenants repositories where service requests are read: those the XRs name
    /// (`terasky.backstage.io/source-info`) first, then each cluster's `tenantsRepo`
    /// ([`hangar::tenants_repos`]); only the GitHub owner's, as Tower reads no other.
    pub fn tenants_repos(&self) -> Vec<String> {
        let derived = self.derived();
        let owner = self.inner.github.as_ref().map(GitHub::owner);
        hangar::tenants_repos(
            derived.filed.tenants_repos(),
            self.inner.config.tenants_repos(),
        )
        .into_iter()
        .filter(|repo| {
            owner.is_none_or(|owner| {
                repo.split_once('/')
                    .is_some_and(|(o, _)| o.eq_ignore_ascii_case(owner))
            })
        })
        .collect()
    }

    /// Prometheus, when the config names one.
    pub fn prometheus(&self) -> Option<&Arc<crate::prometheus::Prometheus>> {
        self.inner.prometheus.as_ref()
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

    /// The latest derivation.
    pub fn derived(&self) -> Arc<Derived> {
        Arc::clone(&self.inner.derived.borrow())
    }

    /// Every new derivation.
    pub fn derivations(&self) -> watch::Receiver<Arc<Derived>> {
        self.inner.derived.subscribe()
    }

    /// Every service's tabs, made once per change of the snapshot.
    pub fn tabs(&self) -> &Tabs {
        &self.inner.tabs
    }

    /// Asks GitHub about `repo` at the next poll (its cached answer, if fresh, stands): a
    /// page is showing it.
    pub fn want_repo(&self, repo: &str) {
        if self.inner.github.is_some() && self.remote().due_repos.insert(repo.to_owned()) {
            self.inner.github_due.notify_one();
        }
    }

    /// Asks GitHub at the next poll for the reviews and checks of the pull requests a page
    /// shows (`(repo, number, head)`); fresh cached answers stand.
    pub fn want_pull_details(
        &self,
        pulls: impl IntoIterator<Item = (String, u64, Option<String>)>,
    ) {
        if self.inner.github.is_none() {
            return;
        }
        let mut added = false;
        {
            let mut remote = self.remote();
            for pull in pulls {
                added |= remote.due_details.insert(pull);
            }
        }
        if added {
            self.inner.github_due.notify_one();
        }
    }

    /// How many times the deriver rebuilt the snapshot, and how long the last rebuild took
    /// (reading the caches, indexing, deriving and making the views).
    pub fn rebuilds(&self) -> (u64, Duration) {
        use std::sync::atomic::Ordering::Relaxed;
        (
            self.inner.rebuilds.load(Relaxed),
            Duration::from_micros(self.inner.last_rebuild_micros.load(Relaxed)),
        )
    }

    /// What `/api/events` sends, as it happens.
    pub fn events(&self) -> broadcast::Receiver<LiveEvent> {
        self.inner.events.subscribe()
    }

    /// Clusters serving their last known data and GitHub's trouble, on Tower's clock.
    pub fn health(&self) -> Health {
        Health {
            stale: self
                .inner
                .clusters
                .status()
                .iter()
                .filter_map(ClusterStatus::as_stale)
                .collect(),
            github: self.inner.github.as_ref().and_then(GitHub::trouble),
        }
    }

    /// Notes that something Tower reads changed: the deriver derives again and then tells
    /// `/api/events`.
    pub fn note(&self, change: Change) {
        self.inner
            .pending
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .insert(change);
        self.poke();
    }

    /// Wakes the deriver.
    pub fn poke(&self) {
        // The deriver only stops with the process.
        let _ = self.inner.poke.send(());
    }

    /// GitHub says `repo` (`owner/name`) changed (a webhook): its cached answers are due and
    /// the poller asks at once.
    pub fn github_changed(&self, repo: &str) {
        if let Some(github) = &self.inner.github {
            github.expire_repo(repo);
            self.remote().due_repos.insert(repo.to_owned());
            self.inner.github_due.notify_one();
        }
    }

    /// Waits (up to `timeout`) until every cluster has been listed, GitHub has answered
    /// (when configured), and a derivation has read all of it. `false` on timeout.
    pub async fn wait_ready(&self, timeout: Duration) -> bool {
        let deadline = tokio::time::Instant::now() + timeout;
        let mut derived = self.inner.derived.subscribe();
        loop {
            let synced = self.inner.clusters.status().iter().all(|c| c.synced);
            let github_ok = self.inner.github.is_none() || self.remote().github_answered;
            if synced && github_ok {
                let wanted = *self.inner.clusters.generation().borrow();
                let current = derived.borrow_and_update().clone();
                if current.generation >= wanted
                    && (self.inner.github.is_none() || current.github_answered)
                    && self.objectives_judged()
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

    /// Reads the newest runs of each kind (typicals use 20 per kind, else of all kinds);
    /// `recorded` names the service whose run was just recorded, for the change event. When
    /// the database does not answer, the history read last is kept.
    pub async fn reload_history(&self, recorded: Option<&str>) {
        let kinds: Vec<Option<&str>> = ServiceKind::ALL
            .into_iter()
            .map(|k| Some(k.as_str()))
            .chain([None])
            .collect();
        match self.inner.history.typical_sample(&kinds).await {
            Ok(runs) => {
                self.remote().history = runs;
                self.note(Change::of(
                    ChangeSource::History,
                    recorded.map(str::to_owned),
                ));
            }
            Err(err) => tracing::warn!(error = %err, "reading the provisioning history"),
        }
    }
}
