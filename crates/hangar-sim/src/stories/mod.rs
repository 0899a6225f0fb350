//! The world's stories. Each is a pure function from world time to the objects that exist
//! then, so the world can be replayed, jumped forward, or seen at any moment in a test.
//!
//! Module map: [`scenario`] (the demo's stories, put together), [`app`] (one app
//! provisioned from its request PR, or stuck), [`infra`] (an InfraService), [`fleet`] (the
//! steady fleet released again and again), [`objects`] (the objects stories are made of).

pub mod app;
pub mod fleet;
pub mod infra;
pub mod objects;
pub mod scenario;

use chrono::{DateTime, Duration, Utc};
use serde_json::Value;

/// Something happening in the simulated platform.
/// The Rollout actions Argo CD offers (its `argoproj.io/Rollout` resource actions) that a
/// story plays as the Rollouts controller would.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RolloutAction {
    Resume,
    PromoteFull,
    Abort,
    Retry,
}

impl RolloutAction {
    /// Argo CD's name for it.
    pub fn parse(name: &str) -> Option<Self> {
        match name {
            "resume" => Some(Self::Resume),
            "promote-full" => Some(Self::PromoteFull),
            "abort" => Some(Self::Abort),
            "retry" => Some(Self::Retry),
            _ => None,
        }
    }
}

/// What an app's requests look like at one moment (what its metrics would say): the share
/// that fail, the 95th and 99th percentile latencies in seconds, and how many come a second.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Signals {
    pub error_ratio: f64,
    pub latency_p95: f64,
    pub latency_p99: f64,
    pub requests_per_second: f64,
}

pub trait Story: Send + Sync + std::fmt::Debug {
    /// How the app in `namespace` serves requests at `at`, if this story runs it there
    /// (the simulated Prometheus reads it).
    fn signals(&self, _namespace: &str, _at: DateTime<Utc>) -> Option<Signals> {
        None
    }

    /// The objects this story has in the world at `now`, with the cluster each lives on.
    fn objects_at(&self, now: DateTime<Utc>) -> Vec<(String, Value)>;

    /// The pull requests this story has on GitHub at `now`, in their state then.
    fn pull_requests_at(&self, _now: DateTime<Utc>) -> Vec<PullRequest> {
        Vec::new()
    }

    /// The catalog entities this story's repositories describe at `now`, with the world
    /// time each became readable (its `catalog-info.yaml` written). Backstage shows one
    /// after the next ingestor run from then on.
    fn catalog_at(&self, _now: DateTime<Utc>) -> Vec<CatalogEntity> {
        Vec::new()
    }

    /// The files this story's repositories hold at `now` (on `main`).
    fn files_at(&self, _now: DateTime<Utc>) -> Vec<RepoFile> {
        Vec::new()
    }

    /// The commits of `repo` (`owner/name`) reachable from `head` but not from `base` (each a
    /// full sha or a prefix of one), oldest first — and, when `head` is the older one, those
    /// from `base` not in `head` as the second list — as GitHub's compare would find them at
    /// `now`. `None` when this story does not know both commits in that repository.
    fn commits_between(
        &self,
        _repo: &str,
        _base: &str,
        _head: &str,
        _now: DateTime<Utc>,
    ) -> Option<(Vec<RepoCommit>, Vec<RepoCommit>)> {
        None
    }

    /// Git took `content` as `path` of `repo` (`owner/name`) on `main` at `at` — a commit
    /// or a merged pull request. `true` when this story's world follows it (Argo CD syncing
    /// an environment file): the platform then asks the story again at once, and the file
    /// reads as the story says from then on.
    fn written_to_main(
        &self,
        _repo: &str,
        _path: &str,
        _content: &str,
        _at: DateTime<Utc>,
    ) -> bool {
        false
    }

    /// Argo CD ran `action` on the Rollout `name` in `namespace` of `cluster` at `at`: the
    /// story whose world holds that Rollout plays it from then on and says `true`; `false`
    /// when the Rollout is not this story's.
    fn rollout_action(
        &self,
        _cluster: &str,
        _namespace: &str,
        _name: &str,
        _action: RolloutAction,
        _at: DateTime<Utc>,
    ) -> bool {
        false
    }

    /// Until when everything this story says (objects, pull requests, files, catalog) stays
    /// what it says at `now`: the platform asks it again only from then on. `None` (the
    /// default): ask at every tick.
    fn unchanged_until(&self, _now: DateTime<Utc>) -> Option<DateTime<Utc>> {
        None
    }
}

/// A commit of a GitHub repository: what GitHub's compare lists of it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RepoCommit {
    pub sha: String,
    pub message: String,
    pub author: String,
    pub date: DateTime<Utc>,
    /// The files it changed: path, GitHub's status (`added`, `modified`, …) and patch.
    pub files: Vec<(String, &'static str, String)>,
}

/// A file in a GitHub repository.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RepoFile {
    /// `owner/name`.
    pub repo: String,
    pub path: String,
    pub content: String,
}

/// A Backstage entity a story's repository describes.
#[derive(Clone, Debug, PartialEq)]
pub struct CatalogEntity {
    pub entity: Value,
    /// When its descriptor became readable to the ingestor.
    pub readable_since: DateTime<Utc>,
}

/// A Component entity as Backstage serves it for a Hangar service: written by Hangar's
/// ingestor, which names where it read the service (`cluster:dev/<name>`, as captured).
pub fn component(name: &str, component_type: &str, owner: &str) -> Value {
    serde_json::json!({
        "apiVersion": "backstage.io/v1alpha1",
        "kind": "Component",
        "metadata": {
            "namespace": "default",
            "name": name,
            "uid": crate::store::uid_of(&format!("backstage/component/{name}")),
            "annotations": {
                "backstage.io/managed-by-location": format!("cluster:dev/{name}"),
                "backstage.io/managed-by-origin-location": format!("cluster:dev/{name}"),
                "backstage.io/kubernetes-id": name,
                "github.com/project-slug": format!("acme/{name}"),
            },
        },
        "spec": {"type": component_type, "lifecycle": "experimental", "owner": owner},
        "relations": [{"type": "ownedBy", "targetRef": owner}],
    })
}

/// A pull request as the simulated GitHub knows it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PullRequest {
    /// `owner/name`.
    pub repo: String,
    pub number: u64,
    pub title: String,
    pub body: String,
    pub user: String,
    pub head_ref: String,
    pub base_ref: String,
    pub created_at: DateTime<Utc>,
    pub merged_at: Option<DateTime<Utc>>,
    pub closed_at: Option<DateTime<Utc>>,
    /// The commit at the head branch's tip (`None`: one made up from the branch's name).
    pub head_sha: Option<String>,
    /// Merged: the commit the merge made.
    pub merge_commit_sha: Option<String>,
    pub draft: bool,
    /// Its labels' names.
    pub labels: Vec<String>,
}

/// `count` applications, each at its own point of a typical provision: created at spread
/// moments over the 30 minutes before `start`, so every one is under way or finished
/// recently enough to be listed. For load tests and benchmarks.
pub fn crowd(start: DateTime<Utc>, count: usize) -> Vec<Box<dyn Story>> {
    const KINDS: [&str; 4] = ["NodeJS", "SpringBoot", "Python", "Go"];
    (0..count)
        .map(|i| {
            let ago = (i as i64 * 7_919) % (30 * 60);
            let story = app::AppStory::new(
                &format!("svc-{i:04}"),
                KINDS[i % KINDS.len()],
                start - Duration::seconds(ago),
            );
            Box::new(story) as Box<dyn Story>
        })
        .collect()
}

/// The demo's world, relative to when it starts:
/// - `shop` (NodeJS), created a minute in, goes all the way to running healthy in dev;
/// - `ledger` (SpringBoot) cannot get its source repository: the `provider-github-creds`
///   Secret is missing;
/// - `orders-api` (Go on AWS ECS), two hours old: a successful deploy, a failed one, and one
///   in progress as the demo starts;
/// - `thumbnailer` (LambdaFunction), 15 minutes old: its first deploy fails, the second works;
/// - `events-bus` (InfraService), 3 h 50 min old, still waiting for its environment file: it
///   counts as stalled 10 world minutes in;
/// - the steady fleet chosen by `seed`: about 30 apps released through dev, staging and
///   prod, a few of them playing each kind of prod rollout ([`fleet::Role`]), their builds
///   signed by Tekton Chains or not ([`fleet::Chains`]).
pub fn demo_world(start: DateTime<Utc>, seed: u64) -> Vec<Box<dyn Story>> {
    let mut ledger = app::AppStory::new("ledger", "SpringBoot", start - Duration::minutes(3));
    ledger.repo_error = Some(
        "connect failed: cannot get credentials: cannot get credentials secret: Secret \"provider-github-creds\" not found"
            .to_owned(),
    );
    let deploy = |at: i64, tag: &str, fails_with: Option<&str>| app::CloudDeploy {
        at,
        tag: tag.to_owned(),
        environment: "dev".to_owned(),
        fails_with: fails_with.map(str::to_owned),
    };
    let mut orders = app::AppStory::new("orders-api", "Go", start - Duration::hours(2));
    orders.deployment = app::Deployment::Cloud {
        target: "aws-ecs",
        config: serde_json::json!({"deploy": {"target": "aws-ecs", "ecs": {
            "cluster": "apps-dev", "service": "orders-api", "region": "eu-west-1"}}}),
        image: "123456789012.dkr.ecr.eu-west-1.amazonaws.com/orders-api".to_owned(),
        deploys: vec![
            deploy(1_000, "1.7.3-0c1d2e3", None),
            deploy(4_680, "1.8.0-4be1c2d", Some("\"step-deploy\" exited with code 1: Error: waiter ServicesStable failed: service orders-api did not stabilize within 10m (2 of 2 tasks stopped: CannotPullContainerError)")),
            deploy(7_140, "1.8.1-77aa9f0", None),
        ],
    };
    let mut thumbnailer = app::AppStory::new(
        "thumbnailer",
        "LambdaFunction",
        start - Duration::minutes(15),
    );
    thumbnailer.deployment = app::Deployment::Cloud {
        target: "aws-lambda",
        config: serde_json::json!({"deploy": {"target": "aws-lambda", "lambda": {
            "functionName": "thumbnailer", "region": "us-east-1"}}}),
        image: "123456789012.dkr.ecr.us-east-1.amazonaws.com/thumbnailer".to_owned(),
        deploys: vec![
            deploy(1_000, "0.3.0-a1b2c3d4", Some("\"step-update-function-code\" exited with code 254: An error occurred (AccessDeniedException) when calling the UpdateFunctionCode operation")),
            deploy(1_500, "0.3.0-a1b2c3d4", None),
        ],
    };
    let stories: Vec<Box<dyn Story>> = vec![
        Box::new(app::AppStory::new(
            "shop",
            "NodeJS",
            start + Duration::minutes(1),
        )),
        Box::new(ledger),
        Box::new(orders),
        Box::new(thumbnailer),
        Box::new(infra::InfraStory {
            name: "events-bus".to_owned(),
            created: start - Duration::minutes(230),
            environment_added: None,
        }),
    ];
    stories
        .into_iter()
        .chain(fleet::SteadyFleet::new(seed, start).into_stories())
        .collect()
}
