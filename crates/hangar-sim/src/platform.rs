//! The simulated platform: one store per cluster, the clock, the stories; served on loopback.

use std::collections::{BTreeMap, BTreeSet, HashMap};
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
use crate::store::{Key, Store};
use crate::stories::Story;

/// Clusters, clock and stories.
#[derive(Debug)]
pub struct Platform {
    clusters: BTreeMap<String, Store>,
    clock: Clock,
    stories: Vec<Box<dyn Story>>,
    /// Faults the GitHub API answers with next (tests inject them).
    github_faults: std::sync::Mutex<Vec<crate::github::Armed>>,
    /// Every commit made through the GitHub API: repo, branch, path.
    github_commits: std::sync::Mutex<Vec<(String, String, String)>>,
    /// Every request the GitHub API received: when (real time) and its path.
    github_log: std::sync::Mutex<Vec<(std::time::Instant, String)>>,
    /// Story pull requests merged or closed by hand (through the API), by repo and number.
    pr_overrides: std::sync::Mutex<BTreeMap<(String, u64), PrOverride>>,
    /// Objects set by hand (tests), by cluster and key: they replace a story's object of the
    /// same key, or add one.
    object_overrides: std::sync::Mutex<BTreeMap<(String, crate::store::Key), Value>>,
    /// Where GitHub delivers webhooks, and the secret it signs them with.
    webhook: std::sync::Mutex<Option<Webhook>>,
    /// Catalog entities registered by hand (a Location someone added), which hold their
    /// names before the ingestor's.
    registered: std::sync::Mutex<Vec<Value>>,
    /// What Backstage's guest stands for besides itself (its `ent`): as Backstage's
    /// `auth.providers.guest.ownershipEntityRefs` configures it.
    guest_owns: std::sync::Mutex<Vec<String>>,
    /// Names of entities the catalog shows nobody (a permission policy denying
    /// `catalog.entity.read` for them): their lookups answer 404.
    hidden: std::sync::Mutex<BTreeSet<String>>,
    /// What the stories said at the last tick beside their objects: the APIs read it
    /// instead of asking every story on every request.
    told: std::sync::RwLock<Arc<Told>>,
    /// What each story said when last asked, and until when that stands.
    memo: std::sync::Mutex<Memo>,
}

/// Each story's last answer, so a tick asks only the stories whose answer may have changed
/// ([`Story::unchanged_until`]) and brings the clusters to the objects those touch.
#[derive(Debug, Default)]
struct Memo {
    said: Vec<Option<Said>>,
    /// The stories that hold each object (several may, e.g. a shared namespace; the last
    /// one's object wins, as it would in one list of everything).
    holders: HashMap<(String, Key), BTreeSet<usize>>,
    /// The objects set by hand as of the last tick.
    overrides: BTreeMap<(String, Key), Value>,
}

/// What one story said at `at`, standing until `until`.
#[derive(Debug)]
struct Said {
    at: chrono::DateTime<chrono::Utc>,
    until: Option<chrono::DateTime<chrono::Utc>>,
    objects: HashMap<(String, Key), Value>,
    pulls: Vec<crate::stories::PullRequest>,
    files: Vec<crate::stories::RepoFile>,
    catalog: Vec<crate::stories::CatalogEntity>,
}

impl Said {
    fn stands_at(&self, now: chrono::DateTime<chrono::Utc>) -> bool {
        self.at <= now && self.until.is_some_and(|until| now < until)
    }

    /// The same pull requests, files and catalog as `other`.
    fn tells_as(&self, other: &Said) -> bool {
        self.pulls == other.pulls && self.files == other.files && self.catalog == other.catalog
    }
}

/// The stories' pull requests, files and catalog entities at one moment, filed for lookup.
#[derive(Debug, Default)]
struct Told {
    /// The clock's jumps when this was told (a hand-moved clock makes it old).
    jumps: u64,
    pulls: Vec<crate::stories::PullRequest>,
    pulls_by_repo: BTreeMap<String, Vec<usize>>,
    files: Vec<crate::stories::RepoFile>,
    file_repos: std::collections::BTreeSet<String>,
    catalog: Vec<crate::stories::CatalogEntity>,
}

/// A pull request merged or closed by hand.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PrOverride {
    pub merged_at: Option<chrono::DateTime<chrono::Utc>>,
    pub closed_at: chrono::DateTime<chrono::Utc>,
}

/// A webhook the simulated GitHub delivers pull request events to, as GitHub does for an
/// organisation webhook: `X-GitHub-Event`, `X-GitHub-Delivery`, `X-Hub-Signature-256`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Webhook {
    pub url: String,
    pub secret: String,
}

fn locked<T>(mutex: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl Platform {
    /// Arms `fault` on the GitHub API: the first request whose path contains `trigger`
    /// meets it. A rate limit then refuses *every* request until it ends (real time), as
    /// GitHub does for a spent token; a 403 for lack of access answers every request
    /// about the trigger from then on.
    pub fn inject_github_fault(&self, fault: crate::github::Fault, trigger: &str) {
        locked(&self.github_faults).push(crate::github::Armed::new(fault, trigger));
    }

    /// Logs a request to the GitHub API and says which fault, if any, answers it.
    pub(crate) fn next_github_fault(
        &self,
        path: &str,
    ) -> Option<(crate::github::Fault, std::time::Duration)> {
        let now = std::time::Instant::now();
        locked(&self.github_log).push((now, path.to_owned()));
        let mut faults = locked(&self.github_faults);
        faults.retain(|armed| !armed.ended(now));
        let index = faults.iter().position(|armed| armed.meets(path, now))?;
        faults[index].answer(now)
    }

    /// Every commit made through the GitHub API so far: repo, branch, path.
    pub fn github_commits(&self) -> Vec<(String, String, String)> {
        locked(&self.github_commits).clone()
    }

    pub(crate) fn note_github_commit(&self, repo: &str, branch: &str, path: &str) {
        locked(&self.github_commits).push((repo.to_owned(), branch.to_owned(), path.to_owned()));
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
            github_commits: std::sync::Mutex::default(),
            pr_overrides: std::sync::Mutex::default(),
            object_overrides: std::sync::Mutex::default(),
            webhook: std::sync::Mutex::default(),
            registered: std::sync::Mutex::default(),
            hidden: std::sync::Mutex::default(),
            guest_owns: std::sync::Mutex::new(
                crate::backstage::GUEST_GROUPS
                    .iter()
                    .map(|g| (*g).to_owned())
                    .collect(),
            ),
            told: std::sync::RwLock::default(),
            memo: std::sync::Mutex::default(),
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

    /// What the stories say: as of the last tick, or now if the clock was moved by hand
    /// since (tests move it and ask at once).
    fn told(&self) -> Arc<Told> {
        let read = || {
            Arc::clone(
                &self
                    .told
                    .read()
                    .unwrap_or_else(std::sync::PoisonError::into_inner),
            )
        };
        let told = read();
        if told.jumps == self.clock.jumps() {
            return told;
        }
        self.tick();
        read()
    }

    /// Files every story's last pull requests, files and catalog entities for the APIs.
    fn tell(&self, memo: &Memo) {
        let mut told = Told {
            jumps: self.clock.jumps(),
            ..Told::default()
        };
        for said in memo.said.iter().flatten() {
            told.pulls.extend(said.pulls.iter().cloned());
            told.files.extend(said.files.iter().cloned());
            told.catalog.extend(said.catalog.iter().cloned());
        }
        for (i, pr) in told.pulls.iter().enumerate() {
            told.pulls_by_repo
                .entry(pr.repo.clone())
                .or_default()
                .push(i);
        }
        told.file_repos = told.files.iter().map(|f| f.repo.clone()).collect();
        *self
            .told
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Arc::new(told);
    }

    /// `pr` as merged or closed by hand, if it was.
    fn overridden(
        &self,
        mut pr: crate::stories::PullRequest,
        overrides: &BTreeMap<(String, u64), PrOverride>,
    ) -> crate::stories::PullRequest {
        if let Some(done) = overrides.get(&(pr.repo.clone(), pr.number)) {
            if pr.closed_at.is_none() {
                pr.merged_at = done.merged_at;
                pr.closed_at = Some(done.closed_at);
            }
        }
        pr
    }

    /// Every story's pull requests at the last tick, as merged or closed by hand.
    pub fn pull_requests(&self) -> Vec<crate::stories::PullRequest> {
        let overrides = locked(&self.pr_overrides).clone();
        self.told()
            .pulls
            .iter()
            .map(|pr| self.overridden(pr.clone(), &overrides))
            .collect()
    }

    /// The stories' pull requests of one repository (`owner/name`) at the last tick.
    pub fn pull_requests_of(&self, repo: &str) -> Vec<crate::stories::PullRequest> {
        let overrides = locked(&self.pr_overrides).clone();
        let told = self.told();
        told.pulls_by_repo
            .get(repo)
            .into_iter()
            .flatten()
            .map(|&i| self.overridden(told.pulls[i].clone(), &overrides))
            .collect()
    }

    /// Whether the stories have files in `repo` (`owner/name`).
    /// The paths of the stories' files in `repo` now.
    pub fn files_of(&self, repo: &str) -> Vec<String> {
        self.told()
            .files
            .iter()
            .filter(|f| f.repo == repo)
            .map(|f| f.path.clone())
            .collect()
    }

    pub fn has_files(&self, repo: &str) -> bool {
        self.told().file_repos.contains(repo)
    }

    /// Marks a story's pull request merged (or closed unmerged) at the clock's `now`, as a
    /// person pressing the button on GitHub does. Its story's own later changes to it no
    /// longer show.
    pub(crate) fn override_pull_request(&self, repo: &str, number: u64, merged: bool) {
        let now = self.clock.now();
        locked(&self.pr_overrides).insert(
            (repo.to_owned(), number),
            PrOverride {
                merged_at: merged.then_some(now),
                closed_at: now,
            },
        );
    }

    /// GitHub's compare of `base...head` in `repo`, as the story that knows both commits
    /// tells it (see [`Story::commits_between`]).
    pub(crate) fn commits_between(
        &self,
        repo: &str,
        base: &str,
        head: &str,
    ) -> Option<(
        Vec<crate::stories::RepoCommit>,
        Vec<crate::stories::RepoCommit>,
    )> {
        let now = self.clock.now();
        self.stories
            .iter()
            .find_map(|story| story.commits_between(repo, base, head, now))
    }

    /// Git took `content` as `path` of `repo` on `main` (a commit or a merge through the
    /// GitHub API): the story whose world follows it (Argo CD syncing an environment file)
    /// is asked again at once. `false` when no story follows that file: it is then only a
    /// file in the repository.
    pub(crate) fn written_to_main(&self, repo: &str, path: &str, content: &str) -> bool {
        let now = self.clock.now();
        self.retold_by(|story| story.written_to_main(repo, path, content, now))
    }

    /// Argo CD ran `action` on the Rollout `name` in `namespace` of `cluster`: the story
    /// holding it plays it (as the Rollouts controller would) and the cluster shows it at
    /// once. `false` when no story holds that Rollout.
    pub(crate) fn rollout_action(
        &self,
        cluster: &str,
        namespace: &str,
        name: &str,
        action: crate::stories::RolloutAction,
    ) -> bool {
        let now = self.clock.now();
        self.retold_by(|story| story.rollout_action(cluster, namespace, name, action, now))
    }

    /// Asks the first story that `took` something to tell its world again now.
    fn retold_by(&self, took: impl Fn(&dyn Story) -> bool) -> bool {
        let now = self.clock.now();
        let Some(i) = self.stories.iter().position(|story| took(story.as_ref())) else {
            return false;
        };
        if let Some(said) = locked(&self.memo).said.get_mut(i).and_then(Option::as_mut) {
            said.until = Some(now);
        }
        self.tick();
        true
    }

    /// Sets an object by hand on `cluster` (replacing a story's object of the same key until
    /// [`Platform::clear_object`]) and brings the cluster to it at once. `false` when the
    /// cluster is unknown or the object has no kind and name.
    pub fn set_object(&self, cluster: &str, object: Value) -> bool {
        let Some(key) = crate::store::key_of(&object) else {
            return false;
        };
        if !self.clusters.contains_key(cluster) {
            return false;
        }
        locked(&self.object_overrides).insert((cluster.to_owned(), key), object);
        self.tick();
        true
    }

    /// Where the GitHub API delivers webhooks from now on (`None`: nowhere).
    pub fn set_github_webhook(&self, webhook: Option<Webhook>) {
        *locked(&self.webhook) = webhook;
    }

    pub(crate) fn github_webhook(&self) -> Option<Webhook> {
        locked(&self.webhook).clone()
    }

    /// Every story's repository files at the last tick.
    pub fn files(&self) -> Vec<crate::stories::RepoFile> {
        self.told().files.clone()
    }

    /// The stories' file at `path` in `repo` (on `main`) at the last tick.
    pub fn file(&self, repo: &str, path: &str) -> Option<crate::stories::RepoFile> {
        self.told()
            .files
            .iter()
            .find(|f| f.repo == repo && f.path == path)
            .cloned()
    }

    /// From now on the catalog shows nobody the entities named `name`, as Backstage does
    /// for a user its permission policy denies `catalog.entity.read`.
    pub fn hide_entity(&self, name: &str) {
        locked(&self.hidden).insert(name.to_owned());
    }

    /// The first catalog entity that `wanted` picks: one registered by hand, else one the
    /// ingestor wrote at the last tick; never a hidden one ([`Platform::hide_entity`]).
    pub fn catalog_entity(
        &self,
        wanted: impl Fn(&crate::stories::CatalogEntity) -> bool,
    ) -> Option<crate::stories::CatalogEntity> {
        let hidden = locked(&self.hidden).clone();
        let wanted = |e: &crate::stories::CatalogEntity| {
            e.entity["metadata"]["name"]
                .as_str()
                .is_none_or(|name| !hidden.contains(name))
                && wanted(e)
        };
        let registered = locked(&self.registered)
            .iter()
            .map(|entity| crate::stories::CatalogEntity {
                entity: entity.clone(),
                readable_since: chrono::DateTime::<chrono::Utc>::MIN_UTC,
            })
            .find(|e| wanted(e));
        registered.or_else(|| self.told().catalog.iter().find(|e| wanted(e)).cloned())
    }

    /// What Backstage's guest stands for besides itself from now on (entity refs, e.g.
    /// `group:default/team-b`; default [`crate::backstage::GUEST_GROUPS`]).
    pub fn set_guest_owns(&self, refs: Vec<String>) {
        *locked(&self.guest_owns) = refs;
    }

    /// What Backstage's guest stands for besides itself.
    pub fn guest_owns(&self) -> Vec<String> {
        locked(&self.guest_owns).clone()
    }

    /// Registers `entity` in the catalog as someone adding a Location does (its
    /// `backstage.io/managed-by-location` is theirs, not the ingestor's): it holds its name
    /// from now on, as the first entity of a name does in Backstage.
    pub fn register_entity(&self, entity: Value) {
        locked(&self.registered).push(entity);
    }

    /// Every story's catalog entities at the last tick.
    pub fn catalog(&self) -> Vec<crate::stories::CatalogEntity> {
        self.told().catalog.clone()
    }

    /// Brings every cluster (and what GitHub and Backstage serve) to the world at the
    /// clock's `now`; returns how many objects changed. Asks only the stories whose last
    /// answer no longer stands, and touches only the objects their answers (and the objects
    /// set by hand) change.
    pub fn tick(&self) -> usize {
        let now = self.clock.now();
        let mut memo = locked(&self.memo);
        let memo = &mut *memo;
        memo.said.resize_with(self.stories.len(), || None);
        let mut touched: BTreeSet<(String, Key)> = BTreeSet::new();
        let mut retell = self.told_at_jumps() != Some(self.clock.jumps());
        for (i, story) in self.stories.iter().enumerate() {
            if memo.said[i]
                .as_ref()
                .is_some_and(|said| said.stands_at(now))
            {
                continue;
            }
            let mut objects = HashMap::new();
            for (cluster, object) in story.objects_at(now) {
                if !self.clusters.contains_key(&cluster) {
                    tracing::warn!(%cluster, "a story uses a cluster the platform does not have");
                    continue;
                }
                if let Some(key) = crate::store::key_of(&object) {
                    objects.insert((cluster, key), object);
                }
            }
            let said = Said {
                at: now,
                until: story.unchanged_until(now),
                objects,
                pulls: story.pull_requests_at(now),
                files: story.files_at(now),
                catalog: story.catalog_at(now),
            };
            let old = memo.said[i].take();
            retell |= old.as_ref().is_none_or(|old| !old.tells_as(&said));
            for (key, object) in &said.objects {
                if old.as_ref().and_then(|o| o.objects.get(key)) != Some(object) {
                    touched.insert(key.clone());
                }
                memo.holders.entry(key.clone()).or_default().insert(i);
            }
            for key in old.iter().flat_map(|o| o.objects.keys()) {
                if !said.objects.contains_key(key) {
                    touched.insert(key.clone());
                    if let Some(holders) = memo.holders.get_mut(key) {
                        holders.remove(&i);
                        if holders.is_empty() {
                            memo.holders.remove(key);
                        }
                    }
                }
            }
            memo.said[i] = Some(said);
        }
        let overrides = locked(&self.object_overrides).clone();
        for key in overrides.keys().chain(memo.overrides.keys()) {
            if overrides.get(key) != memo.overrides.get(key) {
                touched.insert(key.clone());
            }
        }
        memo.overrides = overrides;
        if retell {
            self.tell(memo);
        }
        let mut per_cluster: BTreeMap<String, Vec<(Key, Option<Value>)>> = BTreeMap::new();
        for (cluster, key) in touched {
            let at = (cluster, key);
            let object = memo.overrides.get(&at).cloned().or_else(|| {
                let holder = *memo.holders.get(&at)?.last()?;
                memo.said[holder].as_ref()?.objects.get(&at).cloned()
            });
            let (cluster, key) = at;
            per_cluster.entry(cluster).or_default().push((key, object));
        }
        per_cluster
            .into_iter()
            .filter_map(|(cluster, keys)| Some(self.clusters.get(&cluster)?.apply_keys(keys, now)))
            .sum()
    }

    /// The clock's jumps when the stories were last filed for the APIs.
    fn told_at_jumps(&self) -> Option<u64> {
        self.told.read().ok().map(|told| told.jumps)
    }

    /// How the app in `namespace` serves requests at `at`, as the story running it says.
    pub fn signals(
        &self,
        namespace: &str,
        at: chrono::DateTime<chrono::Utc>,
    ) -> Option<crate::stories::Signals> {
        self.stories.iter().find_map(|s| s.signals(namespace, at))
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
        let mut access = BTreeMap::new();
        let mut tasks = Vec::new();
        for (name, store) in &self.clusters {
            let (switch, up) = tokio::sync::watch::channel(true);
            let counts = Arc::new(kube_api::RequestCounts::default());
            counters.insert(name.clone(), Arc::clone(&counts));
            let rules = Arc::new(kube_api::Access::default());
            access.insert(name.clone(), Arc::clone(&rules));
            let app = kube_api::router(
                store.clone(),
                kube_api::Config {
                    up: Some(up.clone()),
                    counts,
                    access: rules,
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
        let github_api = crate::github::GitHub::new(Arc::clone(&self));
        let (github, task) =
            serve_on_loopback("the GitHub API", |_| Ok(github_api.clone().router())).await?;
        tasks.push(task);
        tasks.push(tokio::spawn(github_api.deliver_webhooks(tick_every)));
        // The argocd-apps instance runs on the control plane (the first cluster).
        let control_plane = self.clusters.values().next().cloned().unwrap_or_default();
        let argocd_requests = Arc::new(std::sync::atomic::AtomicU64::new(0));
        let counter = Arc::clone(&argocd_requests);
        let argocd_asked = crate::argocd::Asked::default();
        let asked = argocd_asked.clone();
        let (argocd, task) = serve_on_loopback("the Argo CD API", |_| {
            Ok(crate::argocd::router(
                crate::argocd::Instance::new(
                    Arc::clone(&self),
                    control_plane,
                    "argocd-apps",
                    asked,
                ),
                counter,
            ))
        })
        .await?;
        tasks.push(task);
        let (backstage, task) = serve_on_loopback("the Backstage API", |addr| {
            let base_url = format!("http://{addr}");
            Ok(crate::backstage::Backstage::new(Arc::clone(&self), base_url)?.router())
        })
        .await?;
        tasks.push(task);
        let (prometheus_switch, answering) = tokio::sync::watch::channel(true);
        let prometheus_requests = Arc::new(std::sync::atomic::AtomicU64::new(0));
        let measured = crate::prometheus::Prometheus::new(
            Arc::clone(&self),
            answering,
            Arc::clone(&prometheus_requests),
        );
        let (prometheus, task) =
            serve_on_loopback("the Prometheus API", |_| Ok(measured.router())).await?;
        tasks.push(task);
        let world_clock = self.clock.clone();
        let (clock, task) = serve_on_loopback("the world's clock", |_| {
            Ok(crate::clock::router(world_clock))
        })
        .await?;
        tasks.push(task);
        let platform = Arc::clone(&self);
        tasks.push(tokio::spawn(async move {
            let mut ticker = tokio::time::interval(tick_every);
            // A tick of a large world takes a good part of a second of CPU: off the async
            // workers, so the API servers (and a Tower sharing the runtime) keep answering.
            ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                ticker.tick().await;
                let platform = Arc::clone(&platform);
                if tokio::task::spawn_blocking(move || platform.tick())
                    .await
                    .is_err()
                {
                    tracing::error!("a tick of the simulated world panicked");
                }
            }
        }));
        Ok(Served {
            clusters: addresses,
            switches,
            counters,
            access,
            argocd_requests,
            argocd_asked,
            github,
            argocd,
            backstage,
            prometheus,
            prometheus_switch,
            prometheus_requests,
            clock,
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
    /// The Prometheus API's address (`/api/v1/query`, `/api/v1/query_range`).
    pub prometheus: SocketAddr,
    /// The world's clock (`GET /clock`: `{"now", "rate"}`).
    pub clock: SocketAddr,
    prometheus_switch: tokio::sync::watch::Sender<bool>,
    prometheus_requests: Arc<std::sync::atomic::AtomicU64>,
    /// Each cluster API's on/off switch.
    switches: BTreeMap<String, tokio::sync::watch::Sender<bool>>,
    counters: BTreeMap<String, Arc<kube_api::RequestCounts>>,
    access: BTreeMap<String, Arc<kube_api::Access>>,
    argocd_requests: Arc<std::sync::atomic::AtomicU64>,
    argocd_asked: crate::argocd::Asked,
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

    /// Switches Prometheus off (it takes requests and answers none, as a hung server does)
    /// or on again (the waiting requests are answered).
    pub fn set_prometheus_answering(&self, answering: bool) {
        self.prometheus_switch.send_replace(answering);
    }

    /// The requests Prometheus has taken.
    pub fn prometheus_requests(&self) -> u64 {
        self.prometheus_requests
            .load(std::sync::atomic::Ordering::Relaxed)
    }

    /// A cluster API's RBAC rules and hang switch; `None` for an unknown cluster.
    pub fn access(&self, cluster: &str) -> Option<&kube_api::Access> {
        self.access.get(cluster).map(|a| &**a)
    }

    /// Every sync Argo CD was asked for so far.
    pub fn argocd_syncs(&self) -> Vec<crate::argocd::Sync> {
        self.argocd_asked.syncs()
    }

    /// Every resource action Argo CD ran so far.
    pub fn argocd_actions(&self) -> Vec<crate::argocd::Ran> {
        self.argocd_asked.actions()
    }

    /// Requests the Argo CD API has answered so far.
    pub fn argocd_requests(&self) -> u64 {
        self.argocd_requests
            .load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Writes the clusters' APIs have refused so far, all clusters together.
    pub fn writes(&self) -> u64 {
        self.counters.values().map(|c| c.read().writes).sum()
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
