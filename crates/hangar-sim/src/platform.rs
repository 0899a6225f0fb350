//! The simulated platform: one store per cluster, the clock, the stories; served on loopback.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::net::{Ipv4Addr, SocketAddr};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use serde_json::Value;
use tokio::task::JoinHandle;

use crate::clock::Clock;
use crate::kube_api;
use crate::store::Store;
use crate::stories::Story;

/// Clusters, clock and stories.
#[derive(Debug)]
pub struct Platform {
    clusters: BTreeMap<String, Store>,
    clock: Clock,
    stories: Vec<Box<dyn Story>>,
    /// Faults the GitHub API answers with next (tests inject them).
    github_faults: std::sync::Mutex<std::collections::VecDeque<crate::github::Fault>>,
    /// Every request the GitHub API received: when (real time) and its path.
    github_log: std::sync::Mutex<Vec<(std::time::Instant, String)>>,
}

impl Platform {
    /// Makes the GitHub API answer its next `count` requests with `fault`.
    pub fn inject_github_fault(&self, fault: crate::github::Fault, count: usize) {
        let mut faults = self
            .github_faults
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        faults.extend(std::iter::repeat_n(fault, count));
    }

    pub(crate) fn next_github_fault(&self, path: &str) -> Option<crate::github::Fault> {
        self.github_log
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .push((std::time::Instant::now(), path.to_owned()));
        self.github_faults
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .pop_front()
    }

    /// Every request the GitHub API received so far: when, and the path.
    pub fn github_requests(&self) -> Vec<(std::time::Instant, String)> {
        self.github_log
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    /// A platform with the named clusters (stories may only use these).
    pub fn new(clock: Clock, clusters: &[&str], stories: Vec<Box<dyn Story>>) -> Self {
        Self {
            github_faults: std::sync::Mutex::default(),
            github_log: std::sync::Mutex::default(),
            clusters: clusters
                .iter()
                .map(|c| ((*c).to_owned(), Store::new()))
                .collect(),
            clock,
            stories,
        }
    }

    pub fn clock(&self) -> &Clock {
        &self.clock
    }

    /// Every cluster by name.
    pub fn clusters(&self) -> impl Iterator<Item = (&str, &Store)> {
        self.clusters
            .iter()
            .map(|(name, store)| (name.as_str(), store))
    }

    pub fn store(&self, cluster: &str) -> Option<&Store> {
        self.clusters.get(cluster)
    }

    /// Every story's pull requests at the clock's `now`.
    pub fn pull_requests(&self) -> Vec<crate::stories::PullRequest> {
        let now = self.clock.now();
        self.stories
            .iter()
            .flat_map(|s| s.pull_requests_at(now))
            .collect()
    }

    /// Every story's repository files at the clock's `now`.
    pub fn files(&self) -> Vec<crate::stories::RepoFile> {
        let now = self.clock.now();
        self.stories.iter().flat_map(|s| s.files_at(now)).collect()
    }

    /// Every story's catalog entities at the clock's `now`.
    pub fn catalog(&self) -> Vec<crate::stories::CatalogEntity> {
        let now = self.clock.now();
        self.stories
            .iter()
            .flat_map(|s| s.catalog_at(now))
            .collect()
    }

    /// Brings every cluster to the world at the clock's `now`; returns how many objects changed.
    pub fn tick(&self) -> usize {
        let now = self.clock.now();
        let mut desired: BTreeMap<&str, Vec<Value>> = self
            .clusters
            .keys()
            .map(|c| (c.as_str(), Vec::new()))
            .collect();
        for story in &self.stories {
            for (cluster, object) in story.objects_at(now) {
                match desired.get_mut(cluster.as_str()) {
                    Some(objects) => objects.push(object),
                    None => {
                        tracing::warn!(%cluster, "a story uses a cluster the platform does not have")
                    }
                }
            }
        }
        desired
            .into_iter()
            .filter_map(|(cluster, objects)| Some(self.clusters.get(cluster)?.apply(objects, now)))
            .sum()
    }

    /// Serves every cluster's API on its own free port on 127.0.0.1 and ticks the world every
    /// `tick_every`. Stops when the returned [`Served`] is dropped.
    pub async fn serve(
        self: Arc<Self>,
        config: kube_api::Config,
        tick_every: Duration,
    ) -> anyhow::Result<Served> {
        let config = kube_api::Config {
            clock: Some(self.clock.clone()),
            ..config
        };
        self.tick();
        let mut addresses = BTreeMap::new();
        let mut switches = BTreeMap::new();
        let mut counters = BTreeMap::new();
        let mut tasks = Vec::new();
        for (name, store) in &self.clusters {
            let (switch, up) = tokio::sync::watch::channel(true);
            let counts = Arc::new(kube_api::RequestCounts::default());
            counters.insert(name.clone(), Arc::clone(&counts));
            let app = kube_api::router(
                store.clone(),
                kube_api::Config {
                    up: Some(up.clone()),
                    counts,
                    ..config.clone()
                },
            );
            let listener = tokio::net::TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
                .await
                .with_context(|| format!("binding the {name} cluster's API"))?;
            addresses.insert(name.clone(), listener.local_addr()?);
            switches.insert(name.clone(), switch);
            tasks.push(tokio::spawn(serve_switchable(listener, app, up)));
        }
        let (github, task) = serve_on_loopback("the GitHub API", |_| {
            Ok(crate::github::GitHub::new(Arc::clone(&self)).router())
        })
        .await?;
        tasks.push(task);
        // The argocd-apps instance runs on the control plane (the first cluster).
        let control_plane = self.clusters.values().next().cloned().unwrap_or_default();
        let (argocd, task) = serve_on_loopback("the Argo CD API", |_| {
            Ok(crate::argocd::router(control_plane, "argocd-apps"))
        })
        .await?;
        tasks.push(task);
        let (backstage, task) = serve_on_loopback("the Backstage API", |addr| {
            let base_url = format!("http://{addr}");
            Ok(crate::backstage::Backstage::new(Arc::clone(&self), base_url)?.router())
        })
        .await?;
        tasks.push(task);
        let platform = Arc::clone(&self);
        tasks.push(tokio::spawn(async move {
            let mut ticker = tokio::time::interval(tick_every);
            loop {
                ticker.tick().await;
                platform.tick();
            }
        }));
        Ok(Served {
            clusters: addresses,
            switches,
            counters,
            github,
            argocd,
            backstage,
            tasks,
        })
    }
}

/// Serves `what` on a free port of 127.0.0.1; `app` gets the address (e.g. for a token
/// issuer URL).
async fn serve_on_loopback(
    what: &str,
    app: impl FnOnce(SocketAddr) -> anyhow::Result<axum::Router>,
) -> anyhow::Result<(SocketAddr, JoinHandle<()>)> {
    let listener = tokio::net::TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
        .await
        .with_context(|| format!("binding {what}"))?;
    let addr = listener.local_addr()?;
    let app = app(addr)?;
    let what = what.to_owned();
    let task = tokio::spawn(async move {
        if let Err(err) = axum::serve(listener, app).await {
            tracing::error!(%err, server = %what, "a simulated server stopped");
        }
    });
    Ok((addr, task))
}

/// Serves a cluster's API while its switch is on: off stops accepting, closes idle
/// connections (watches end themselves) and frees the port; on binds the same address again.
async fn serve_switchable(
    listener: tokio::net::TcpListener,
    app: axum::Router,
    mut up: tokio::sync::watch::Receiver<bool>,
) {
    let Ok(addr) = listener.local_addr() else {
        return;
    };
    let mut listener = Some(listener);
    loop {
        let current = match listener.take() {
            Some(listener) => listener,
            None => {
                if up.wait_for(|up| *up).await.is_err() {
                    return;
                }
                match rebind(addr).await {
                    Some(listener) => listener,
                    None => {
                        tracing::error!(%addr, "could not bind a simulated cluster's address again");
                        return;
                    }
                }
            }
        };
        let mut down = up.clone();
        let stopped = async move {
            let _ = down.wait_for(|up| !*up).await;
        };
        if let Err(err) = axum::serve(current, app.clone())
            .with_graceful_shutdown(stopped)
            .await
        {
            tracing::error!(%err, "a simulated cluster's API stopped");
            return;
        }
    }
}

async fn rebind(addr: SocketAddr) -> Option<tokio::net::TcpListener> {
    for _ in 0..100 {
        if let Ok(listener) = tokio::net::TcpListener::bind(addr).await {
            return Some(listener);
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    None
}

/// The running platform's addresses; stops it when dropped.
#[derive(Debug)]
pub struct Served {
    /// Each cluster's API address.
    pub clusters: BTreeMap<String, SocketAddr>,
    /// The GitHub REST API's address.
    pub github: SocketAddr,
    /// The Argo CD API's address (the `argocd-apps` instance).
    pub argocd: SocketAddr,
    /// The Backstage backend's address (`/api/catalog`, `/api/auth`).
    pub backstage: SocketAddr,
    /// Each cluster API's on/off switch.
    switches: BTreeMap<String, tokio::sync::watch::Sender<bool>>,
    counters: BTreeMap<String, Arc<kube_api::RequestCounts>>,
    tasks: Vec<JoinHandle<()>>,
}

impl Served {
    /// A kubeconfig with one context per cluster (the first is current), no credentials.
    pub fn kubeconfig(&self) -> String {
        let mut text = String::from("apiVersion: v1\nkind: Config\nclusters:\n");
        for (name, addr) in &self.clusters {
            let _ = writeln!(
                text,
                "- name: {name}\n  cluster:\n    server: http://{addr}"
            );
        }
        text.push_str("contexts:\n");
        for name in self.clusters.keys() {
            let _ = writeln!(
                text,
                "- name: {name}\n  context:\n    cluster: {name}\n    user: tower-reader"
            );
        }
        let current = self.clusters.keys().next().map_or("", String::as_str);
        let _ = write!(
            text,
            "current-context: {current}\nusers:\n- name: tower-reader\n  user: {{}}\n"
        );
        text
    }

    pub fn write_kubeconfig(&self, path: &Path) -> anyhow::Result<()> {
        std::fs::write(path, self.kubeconfig())
            .with_context(|| format!("writing {}", path.display()))
    }

    /// Takes a cluster's API server down (connections refused, open watches ended) or
    /// brings it back on the same address. `false` for an unknown cluster.
    pub fn set_cluster_up(&self, cluster: &str, up: bool) -> bool {
        self.switches
            .get(cluster)
            .map(|switch| switch.send_replace(up))
            .is_some()
    }

    /// Requests each cluster's API has answered so far, by verb.
    pub fn api_requests(&self) -> BTreeMap<String, kube_api::Requests> {
        self.counters
            .iter()
            .map(|(name, counts)| (name.clone(), counts.read()))
            .collect()
    }

    pub fn url(&self, cluster: &str) -> Option<String> {
        self.clusters
            .get(cluster)
            .map(|addr| format!("http://{addr}"))
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        for task in &self.tasks {
            task.abort();
        }
    }
}
