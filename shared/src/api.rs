//! Every JSON answer of Tower's HTTP API, and the events of `/api/events`: the backend only
//! serialises these and the browser only deserialises them, so the two cannot drift
//! (`tests/it/tidy.rs` fails if a route declares its own answer type). Field names are a
//! public interface (`backend/openapi.yaml` documents them): keep them stable.
//!
//! Times are on Tower's clock (the simulated world's in `tower demo`); every answer carries
//! that clock's reading in the [`CLOCK_HEADER`], so a page can tell the server's `now` from
//! its own.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::cicd::FirstEnvironment;
use crate::github::PullRequest;
use crate::hangar::ServiceKind;
use crate::kube::Object;
use crate::provisioning::{GroupCounts, ServiceProgress, ServiceSummary, StepId, TypicalSource};
use crate::snapshot::{RecordedRun, Snapshot};
use crate::values::DiffLine;

use crate::served::WholeTab;
pub use crate::served::{GitHubTrouble, Health, StaleCluster};

/// The header every API answer carries: Tower's clock when it answered, and how fast that
/// clock runs against real time (`2026-11-30T10:00:00.250Z; rate=20`). A page reads it to
/// tell durations on the server's clock.
pub const CLOCK_HEADER: &str = "tower-clock";

/// A reading of Tower's clock (also what a simulated world's clock answers as JSON, for a
/// Tower told by it: `worldClock`).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct ClockReading {
    pub now: DateTime<Utc>,
    /// World seconds per real second: 1 for a real clock, the demo's speed, 0 when stopped.
    pub rate: f64,
}

impl ClockReading {
    /// The header's value.
    pub fn to_header(&self) -> String {
        format!(
            "{}; rate={}",
            self.now
                .to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
            self.rate
        )
    }

    /// Reads a header value written by [`ClockReading::to_header`]; `None` for anything else.
    pub fn parse_header(text: &str) -> Option<Self> {
        let (now, rate) = text.split_once(';')?;
        let now = DateTime::parse_from_rfc3339(now.trim())
            .ok()?
            .with_timezone(&Utc);
        let rate: f64 = rate.trim().strip_prefix("rate=")?.parse().ok()?;
        (rate.is_finite() && rate >= 0.0).then_some(Self { now, rate })
    }
}

/// Every error answer: what went wrong, and the request field it is about when there is one.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ErrorBody {
    pub error: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub field: Option<String>,
    /// The path asked for, when no route answers it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// What a schema found wrong with a config file, each with its field (`field` names the
    /// first).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub problems: Vec<crate::values::Problem>,
}

/// `GET /api/provisioning`: every tracked service's progress derived at `now`, with
/// durations (for other tools; pages read [`Summary`] and [`ServiceProvisioningAnswer`]).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ProvisioningAnswer {
    pub now: DateTime<Utc>,
    pub services: Vec<ServiceProgress>,
    #[serde(flatten)]
    pub health: Health,
}

/// `GET /api/pulls?service=NAME[&limit=&continue=]`: a page of the service's pull requests,
/// newest first ([`crate::pulls`]).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PullsAnswer {
    pub service: String,
    /// The repositories read (names, of the configured owner).
    pub repos: Vec<String>,
    /// Whether GitHub has answered: without it, no pull requests means "unknown".
    pub read: bool,
    /// How many pull requests in all (open, and closed in the last 30 days).
    pub total: usize,
    pub pulls: Vec<crate::pulls::PullView>,
    /// The next page's `continue`; `None` on the last page.
    pub next: Option<String>,
    #[serde(flatten)]
    pub health: Health,
}

/// `GET /api/provisioning/service?service=NAME`: one service's Provisioning tab, settled
/// ([`ServiceProgress::settled`]: a running step's time ticks on the page from its start), so
/// it changes only when a step, the group, an event or a created resource does. `progress`
/// is `None` when Tower is not tracking a provision of the service (it finished more than 15
/// minutes ago, or is older than a day).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ServiceProvisioningAnswer {
    pub service: String,
    pub progress: Option<ServiceProgress>,
    #[serde(flatten)]
    pub health: Health,
}

/// `GET /api/summary`: what every page's masthead and the Services tab need — each tracked
/// service's steps without durations (the page ticks them from `startedAt`), the counts for
/// the badge, and the health notices. It changes only when something changes, not as the
/// clock ticks.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Summary {
    pub counts: GroupCounts,
    /// In the derivation's order: by group, then name.
    pub services: Vec<ServiceSummary>,
    #[serde(flatten)]
    pub health: Health,
}

impl Summary {
    /// The strip of `services` ([`crate::provisioning::summary`]) with the health notices.
    pub fn of(services: &[ServiceProgress], health: Health) -> Self {
        let (counts, services) = crate::provisioning::summary(services);
        Self {
            counts,
            services,
            health,
        }
    }
}

/// `GET /api/snapshot?service=NAME`: the objects the browser derives one service's views
/// from (see [`Snapshot::for_service`]), with the health notices.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SnapshotAnswer {
    #[serde(flatten)]
    pub snapshot: Snapshot,
    #[serde(flatten)]
    pub health: Health,
}

/// `GET /api/deployments?service=NAME`: the service's Deployments tab
/// ([`crate::deployments`]), with the health notices.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DeploymentsAnswer {
    #[serde(flatten)]
    pub deployments: crate::deployments::Deployments,
    #[serde(flatten)]
    pub health: Health,
}

impl WholeTab for DeploymentsAnswer {
    const ID: &'static str = "deployments";

    fn derive(part: &Snapshot, service: &str, health: &Health) -> Self {
        Self {
            deployments: crate::deployments::derive_deployments(part, service),
            health: health.clone(),
        }
    }
}

/// `GET /api/releases?service=NAME`: the service's release matrix ([`crate::releases`]),
/// with the health notices.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ReleasesAnswer {
    #[serde(flatten)]
    pub releases: crate::releases::Releases,
    #[serde(flatten)]
    pub health: Health,
}

impl WholeTab for ReleasesAnswer {
    const ID: &'static str = "releases";

    fn derive(part: &Snapshot, service: &str, health: &Health) -> Self {
        Self {
            releases: crate::releases::of_snapshot(part, service),
            health: health.clone(),
        }
    }
}

/// `GET /api/access?service=NAME`: whether the caller may act on the service through Tower
/// (promote, and later edit its config): its owner in the catalog, or a tool granted the
/// route. The answer is the caller's own, never shared.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Access {
    pub service: String,
    /// Who is asking (`user:default/ana`, `tool:release-bot`).
    pub subject: String,
    /// The service's owner in the catalog (`group:default/team-a`), when known.
    pub owner: Option<String>,
    pub may_promote: bool,
    /// Why not, in a sentence, when `may_promote` is false.
    pub why_not: Option<String>,
}

/// `GET /api/releases/promotion?service=&image=&environment=`: exactly what promoting the
/// release there will change, before anything is written.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PromotionPreview {
    pub service: String,
    pub image: String,
    pub environment: String,
    pub how: crate::cicd::Promotion,
    /// The GitOps repository (`owner/name`) and the file in it.
    pub repo: String,
    pub path: String,
    /// The branch it is written to: `main` for a commit, the proposal's branch for a pull
    /// request.
    pub branch: String,
    /// The file's blob sha as read now: send it back to promote, so a file changed since
    /// is refused rather than overwritten.
    pub seen: String,
    pub diff: Vec<DiffLine>,
    /// The file already names the image (promoted in Git, by Tower or by hand).
    pub already: bool,
    /// The open pull request already proposing it.
    pub pull: Option<crate::releases::PullRef>,
    pub access: Access,
}

/// `POST /api/releases/promote`'s body.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PromoteRequest {
    pub service: String,
    pub image: String,
    pub environment: String,
    /// The environment file's blob sha from the preview.
    pub seen: String,
}

/// What a promotion did.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PromoteOutcome {
    /// This press committed the change.
    Committed,
    /// This press opened the pull request.
    PullRequestOpened,
    /// The pull request was already open (an earlier press, another tab or replica).
    PullRequestExisting,
    /// The file already names the image: nothing to do.
    AlreadyThere,
}

/// `POST /api/releases/promote`'s answer.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PromoteAnswer {
    pub outcome: PromoteOutcome,
    /// The commit made, for a commit.
    pub commit: Option<String>,
    pub pull: Option<crate::releases::PullRef>,
    /// What happened, in a sentence.
    pub message: String,
}

/// One config file of an app the Config tab edits: `env:<name>` for an environment's
/// values, `cicd` for the pipeline's `cicd.yaml`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ConfigFileRef {
    /// How routes name it: `env:prod`, `cicd`.
    pub id: String,
    pub kind: crate::values::FileKind,
    pub label: String,
    /// The repository (`owner/name`) and the file in it.
    pub repo: String,
    pub path: String,
}

/// `GET /api/config?service=NAME`: the app's environments (whose values files the tab
/// edits), and what the platform made for it (secrets, composed resources), derived once
/// per change.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ConfigAnswer {
    pub service: String,
    /// The app's environments in promotion order: each has its values file (`env:<name>`),
    /// besides the app's `cicd.yaml` (`cicd`).
    pub environments: Vec<String>,
    #[serde(flatten)]
    pub made: crate::config::Made,
    #[serde(flatten)]
    pub health: Health,
}

/// The Config tab's read-only half: the app's environments, secrets and composed resources.
impl WholeTab for ConfigAnswer {
    const ID: &'static str = "config";

    fn derive(part: &Snapshot, service: &str, health: &Health) -> Self {
        Self {
            service: service.to_owned(),
            environments: crate::config::environments(part, service),
            made: crate::config::derive(part, service),
            health: health.clone(),
        }
    }
}

/// `GET /api/runtime?service=`: where the app runs in each environment and how it meets
/// its objectives (`shared::runtime`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RuntimeAnswer {
    pub service: String,
    pub environments: Vec<RuntimeEnvironment>,
    /// Whether Prometheus answered the figures below.
    pub prometheus: PrometheusState,
    #[serde(flatten)]
    pub health: Health,
}

/// `GET /api/activity`: the fleet's recent activity, newest first ([`crate::activity`]).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ActivityAnswer {
    pub items: Vec<crate::activity::Activity>,
}

/// `GET /api/dora`: DORA's four keys for one app or the fleet over a window of days, with
/// what they counted ([`crate::dora::report`]).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DoraAnswer {
    /// The app asked about; `None`: the whole fleet.
    pub service: Option<String>,
    pub days: u32,
    #[serde(flatten)]
    pub report: crate::dora::Report,
    #[serde(flatten)]
    pub health: Health,
}

/// One environment of [`RuntimeAnswer`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RuntimeEnvironment {
    #[serde(flatten)]
    pub place: crate::runtime::Place,
    /// `None` when Tower has no Prometheus to ask.
    pub slo: Option<crate::runtime::Slo>,
    /// When Prometheus last answered for this environment (the figures are of then).
    pub measured_at: Option<DateTime<Utc>>,
}

/// How Prometheus answers Tower.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PrometheusState {
    pub state: PrometheusAnswers,
    /// Why not, in plain words.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// Since when it has not answered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub since: Option<DateTime<Utc>>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum PrometheusAnswers {
    Answering,
    /// Asked and not answered within the deadline, or refused: the figures shown are the
    /// last it gave.
    NotAnswering,
    /// Tower's config names no Prometheus.
    NotConfigured,
}

/// A pull request Tower opened to change a config file, still open.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ConfigPull {
    pub number: u64,
    pub url: Option<String>,
    pub title: String,
    pub branch: String,
}

/// `GET /api/config/file?service=&file=`: one file as read from GitHub now — from the
/// branch of Tower's open pull request for it when there is one (a second save adds to
/// it), else from `main` — and its form.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ConfigFile {
    pub service: String,
    pub file: ConfigFileRef,
    /// Where the text was read: `main`, or the open pull request's branch.
    pub branch: String,
    /// The blob sha read (send it back to save); `None`: the file does not exist yet and
    /// `text` is a starter.
    pub seen: Option<String>,
    pub text: String,
    pub form: crate::values::Form,
    /// Tower's open pull request for this file, which a save updates.
    pub pull: Option<ConfigPull>,
    /// Every open config pull request Tower opened on the app's repositories.
    pub pulls: Vec<ConfigPull>,
    /// Whether the caller may save (open or update the pull request), and why not.
    pub access: Access,
}

/// `POST /api/config/check` and `POST /api/config/save`: the text as loaded (`base`), the
/// text as edited in the YAML view (`text`), the form's edits on top; a save also sends the
/// `seen` it was loaded at.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ConfigDraft {
    pub service: String,
    pub file: String,
    pub base: String,
    pub text: String,
    #[serde(default)]
    pub edits: Vec<crate::values::Edit>,
    #[serde(default)]
    pub seen: Option<String>,
}

/// `POST /api/config/check`'s answer: the text with the edits written in, its form and
/// problems, and its diff against `base`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ConfigChecked {
    pub text: String,
    pub form: crate::values::Form,
    pub diff: Vec<DiffLine>,
    /// Nothing differs from `base`.
    pub unchanged: bool,
}

/// `POST /api/config/save`'s answer.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ConfigSaved {
    /// `opened` (this save opened it), `updated` (it added a commit to Tower's open pull
    /// request), `unchanged` (the pull request already says this).
    pub outcome: String,
    pub pull: ConfigPull,
    pub message: String,
}

/// `POST /api/argocd/sync`'s body: ask Argo CD to sync the service's Application in an
/// environment (`force`: Argo CD's force sync, which replaces resources it cannot patch).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ArgoSyncRequest {
    pub service: String,
    pub environment: String,
    #[serde(default)]
    pub force: bool,
}

/// What Argo CD was asked for.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ArgoSyncAnswer {
    /// The Argo CD Application.
    pub application: String,
    pub force: bool,
    /// What happened, in a sentence.
    pub message: String,
}

/// `GET /api/argocd/rollout-actions?service=&environment=`: the canary actions Argo CD
/// offers on the service's Rollout there now, in Tower's words
/// ([`crate::rollout_actions::offered`], kept to what Argo CD lists enabled).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RolloutActionsAnswer {
    /// The Argo CD Application deploying it.
    pub application: String,
    pub rollout: String,
    /// The rollout's state these were offered for ([`crate::rollout_actions::seen`]); an
    /// action request carries it back.
    pub seen: String,
    pub actions: Vec<crate::rollout_actions::OfferedAction>,
}

/// `POST /api/argocd/rollout-action {service, environment, action, seen}`: run one of the
/// offered actions through Argo CD.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RolloutActionRequest {
    pub service: String,
    pub environment: String,
    pub action: crate::rollout_actions::RolloutAction,
    /// The state the action was offered for ([`RolloutActionsAnswer::seen`]).
    pub seen: String,
}

/// What Argo CD was asked to do.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RolloutActionAnswer {
    pub application: String,
    pub action: crate::rollout_actions::RolloutAction,
    /// What happened, in a sentence.
    pub message: String,
}

/// `GET /api/pipelines?service=NAME[&pipeline=&status=&limit=&continue=]`: a page of the
/// service's runs, newest first ([`crate::pipelines`]); `tower pipelines` prints them all.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PipelineRunsAnswer {
    pub service: String,
    pub namespace: String,
    /// Every Pipeline the service's runs name (for the filter), sorted.
    pub pipelines: Vec<String>,
    /// How many runs the filter accepts in all.
    pub total: usize,
    pub runs: Vec<crate::pipelines::RunSummary>,
    /// The `continue` of the next page; `None` on the last.
    pub next: Option<String>,
    #[serde(flatten)]
    pub health: Health,
}

/// `GET /api/pipelines/run?service=NAME&run=RUN`: one run and its graph of tasks.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PipelineRunAnswer {
    pub service: String,
    #[serde(flatten)]
    pub graph: crate::pipelines::RunGraph,
    #[serde(flatten)]
    pub health: Health,
}

/// `GET /live-runs?app=NAME`: the app's Tekton runs, newest first.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LiveRuns {
    pub app: String,
    pub cluster: String,
    pub namespace: String,
    pub pipeline_runs: Vec<std::sync::Arc<Object>>,
    pub task_runs: Vec<std::sync::Arc<Object>>,
    /// Clusters serving their last known data (GitHub plays no part in runs).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub stale: Vec<StaleCluster>,
}

/// `GET /pull-requests?owner=&repo=`: every PR of a repo, newest first.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PullRequests {
    pub repo: String,
    pub pull_requests: Vec<PullRequest>,
}

/// A tenant request PR ("Create <Kind> <name>").
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RequestPr {
    /// `None` when the title names no kind.
    pub kind: Option<ServiceKind>,
    pub name: String,
    #[serde(flatten)]
    pub pull_request: PullRequest,
}

/// `GET /pending-requests?owner=&repo=`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PendingRequests {
    pub repo: String,
    pub now: DateTime<Utc>,
    pub requests: Vec<RequestPr>,
}

/// `GET /config/cicd?app=`: the app's `cicd.yaml`, parsed.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CicdConfig {
    pub app: String,
    pub repo: String,
    pub path: String,
    /// The whole file, parsed.
    pub config: Value,
    /// `deploy.environments` as written (absent when the file declares none).
    pub environments: Option<Value>,
    pub first_environment: FirstEnvironment,
}

/// `GET /provisioning-history/runs`: newest first.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RecordedRuns {
    pub runs: Vec<RecordedRun>,
}

/// `GET /provisioning-history/typical?kind=`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TypicalDurations {
    pub kind: ServiceKind,
    pub steps: Vec<TypicalStep>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TypicalStep {
    pub id: StepId,
    pub seconds: u64,
    pub source: TypicalSource,
}

/// `POST /catalog/refresh`: Backstage's answer.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CatalogRefresh {
    pub status: RefreshStatus,
    /// In words, for the page.
    pub message: String,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum RefreshStatus {
    Triggered,
    AlreadyRunning,
}

/// `GET /catalog/entity`: the entity as Backstage serves it, when there is one.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CatalogLookup {
    pub found: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub entity: Option<Value>,
}

/// `GET /auth/config`: how a page signs in.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AuthConfig {
    /// The Backstage origin allowed to hand the page its token by `postMessage`.
    pub backstage_origin: Option<String>,
    /// A page opened on its own signs in as Backstage's guest.
    pub guest_sign_in: bool,
    /// No token needed at all (a local file).
    #[serde(default)]
    pub open: bool,
    /// Who the authenticating proxy in front of Tower says the user is.
    #[serde(default)]
    pub proxy_user: Option<String>,
}

/// `GET /auth/guest`: Backstage's guest user token.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct GuestToken {
    pub token: String,
}

/// `GET /readyz`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Readiness {
    pub ready: bool,
    /// What Tower still waits for, in words.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub waiting: Vec<String>,
}

/// Where a change came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ChangeSource {
    Kubernetes,
    GitHub,
    Catalog,
    History,
    /// Prometheus' figures for a service's objectives.
    Prometheus,
}

/// One `change` event of `/api/events`: something Tower reads changed, and the views that
/// show it have been derived again (so fetching now gets the new answer).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Change {
    pub source: ChangeSource,
    /// The service it concerns, when Tower can tell (by the platform's rules).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub service: Option<String>,
    /// Kubernetes: the cluster, kind, and `applied`/`deleted`/`resynced` (a full list
    /// replaced the cache, so anything may have changed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub action: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// GitHub: the repository (`owner/name`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repo: Option<String>,
}

impl Change {
    /// A change of `source` about `service`, with nothing else said.
    pub fn of(source: ChangeSource, service: Option<String>) -> Self {
        Self {
            source,
            service,
            cluster: None,
            kind: None,
            action: None,
            namespace: None,
            name: None,
            repo: None,
        }
    }
}

/// The `stale`/`fresh` events of `/api/events`: a cluster stopped or started answering.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ClusterFreshness {
    pub cluster: String,
    /// While stale: when it last answered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_seen_at: Option<DateTime<Utc>>,
}

/// The `github` event of `/api/events`: GitHub became rate limited or failing (its
/// trouble), or well again (`trouble` absent).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct GitHubState {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trouble: Option<GitHubTrouble>,
}

/// The `resync` event of `/api/events`: the stream fell behind; read everything again.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Resync {
    pub missed: u64,
}

/// The names of `/api/events`' events, each with its payload type above.
pub mod event {
    /// `{}`, first on every stream.
    pub const HELLO: &str = "hello";
    /// [`super::Change`].
    pub const CHANGE: &str = "change";
    /// [`super::ClusterFreshness`].
    pub const STALE: &str = "stale";
    /// [`super::ClusterFreshness`].
    pub const FRESH: &str = "fresh";
    /// [`super::GitHubState`].
    pub const GITHUB: &str = "github";
    /// [`super::Resync`].
    pub const RESYNC: &str = "resync";
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_clock_header_round_trips_and_refuses_anything_else() {
        let reading = ClockReading {
            now: "2026-11-30T10:00:00.250Z".parse().unwrap(),
            rate: 20.0,
        };
        let header = reading.to_header();
        assert_eq!(header, "2026-11-30T10:00:00.250Z; rate=20");
        assert_eq!(ClockReading::parse_header(&header), Some(reading));
        for bad in [
            "",
            "2026-11-30T10:00:00Z",
            "yesterday; rate=1",
            "2026-11-30T10:00:00Z; rate=-1",
            "2026-11-30T10:00:00Z; rate=NaN",
            "2026-11-30T10:00:00Z; speed=1",
        ] {
            assert_eq!(ClockReading::parse_header(bad), None, "{bad}");
        }
    }

    #[test]
    fn health_is_absent_when_all_is_well() {
        let answer = Summary::default();
        let text = serde_json::to_string(&answer).unwrap();
        assert!(
            !text.contains("stale") && !text.contains("github"),
            "{text}"
        );
        let trouble = Health {
            stale: Vec::new(),
            github: Some(GitHubTrouble::RateLimited {
                until: "2026-11-30T10:00:00Z".parse().unwrap(),
            }),
        };
        let text = serde_json::to_string(&trouble).unwrap();
        assert_eq!(
            text,
            r#"{"github":{"state":"rateLimited","until":"2026-11-30T10:00:00Z"}}"#
        );
        assert_eq!(serde_json::from_str::<Health>(&text).unwrap(), trouble);
    }
}

/// `GET /api/records/record`'s answer: one release record as Git has it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RecordAnswer {
    pub record: crate::records::Record,
    /// Its file in the app's GitOps repository (`glidepath/releases/<release>.yaml`).
    pub repo: String,
    pub path: String,
    /// Merged: the file's blob sha on `main`, which a human part is proposed against.
    pub seen: Option<String>,
    /// Not merged yet: the pull request proposing it (its human part waits for the merge).
    pub proposed: Option<crate::releases::PullRef>,
    /// Open pull requests writing its human part.
    pub notes: Vec<crate::releases::PullRef>,
    /// Whether the caller may propose its human part, and why not.
    pub access: Access,
}

/// `POST /api/records/notes`'s body: the human part of a merged record, proposed as a pull
/// request against its file as the caller read it (`seen`, its blob sha).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct NotesRequest {
    pub service: String,
    pub release: String,
    pub human: crate::records::HumanNotes,
    pub seen: String,
}

/// What proposing a human part did.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NotesAnswer {
    pub outcome: PromoteOutcome,
    pub pull: crate::releases::PullRef,
    pub message: String,
}
