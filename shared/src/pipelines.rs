//! The Pipelines tab: a service's Tekton PipelineRuns — each with its commit, the image it
//! produced, what triggered it and how it went — and one run's graph of tasks (`runAfter`,
//! result references, `finally`), laid out in columns for the page to draw.
//!
//! Pure: everything comes from the snapshot; durations are the page's to tick.

use std::collections::{BTreeMap, BTreeSet};

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::evidence::built_images;
use crate::hangar::{self, ServiceKind};
use crate::kube::{array_at, at, str_at, time, ConditionStatus, Object};
use crate::links;
use crate::snapshot::Snapshot;
use crate::tekton::{task_references, PipelineRun, TaskRun};

/// Pipelines-as-Code's keys on the runs it creates (`pipelinesascode.tekton.dev/…`): short
/// values as labels, all as annotations.
const PAC: &str = "pipelinesascode.tekton.dev/";

/// How a run or one of its tasks went, in Tekton's terms.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Outcome {
    /// Waiting to start (`PipelineRunPending`; a TaskRun whose pod cannot be placed yet,
    /// `ExceededNodeResources` / `ExceededResourceQuota`; a task whose turn has not come).
    Pending,
    Running,
    /// Ending, waiting for tasks still running: failed (`PipelineRunStopping`), stopped or
    /// cancelled while its `finally` tasks run (`StoppedRunningFinally`,
    /// `CancelledRunningFinally`, `PipelineRunTimeoutRunningFinally`).
    Stopping,
    Succeeded,
    Failed,
    /// A task that failed but whose pipeline goes on (`onError: continue`): `FailureIgnored`.
    FailureIgnored,
    Cancelled,
    TimedOut,
    /// A task Tekton skipped (`status.skippedTasks`, with its reason).
    Skipped,
    /// A task that never ran and was not skipped: the run ended first.
    NotRun,
    /// A task the run says ran, whose TaskRun Tower does not see (pruned, or not yet read).
    Unknown,
}

impl Outcome {
    /// Every outcome a run (not a task) can have, for the page's filter.
    pub const OF_RUNS: [Self; 7] = [
        Self::Pending,
        Self::Running,
        Self::Stopping,
        Self::Succeeded,
        Self::Failed,
        Self::Cancelled,
        Self::TimedOut,
    ];

    /// The word the API and the page's filter use (`timed-out`).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Pending => "pending",
            Self::Running => "running",
            Self::Stopping => "stopping",
            Self::Succeeded => "succeeded",
            Self::Failed => "failed",
            Self::FailureIgnored => "failure-ignored",
            Self::Cancelled => "cancelled",
            Self::TimedOut => "timed-out",
            Self::Skipped => "skipped",
            Self::NotRun => "not-run",
            Self::Unknown => "unknown",
        }
    }

    pub fn parse(word: &str) -> Option<Self> {
        Self::OF_RUNS
            .into_iter()
            .chain([
                Self::FailureIgnored,
                Self::Skipped,
                Self::NotRun,
                Self::Unknown,
            ])
            .find(|o| o.as_str() == word)
    }

    /// Whether it has ended.
    pub fn is_final(self) -> bool {
        !matches!(self, Self::Pending | Self::Running | Self::Stopping)
    }

    /// Whether it failed (timed out included; a failure ignored is not).
    pub fn is_failure(self) -> bool {
        matches!(self, Self::Failed | Self::TimedOut)
    }
}

/// A run's or TaskRun's outcome from its `Succeeded` condition and reason, as Tekton
/// defines them (`docs/pipelineruns.md` "Monitoring execution status", `taskrun_types.go`,
/// `pipelinerun_types.go`) and `tkn` words them (`pkg/formatted`).
pub fn outcome(object: &Object) -> Outcome {
    let Some(condition) = object.condition("Succeeded") else {
        return if at(&object.status, &["startTime"]).is_some() {
            Outcome::Running
        } else {
            Outcome::Pending
        };
    };
    let reason = condition.reason.unwrap_or_default();
    match condition.status {
        ConditionStatus::True => Outcome::Succeeded,
        ConditionStatus::False => match reason {
            "Cancelled"
            | "PipelineRunCancelled"
            | "TaskRunCancelled"
            | "StoppedRunFinally"
            | "CancelledRunFinally" => Outcome::Cancelled,
            "PipelineRunTimeout" | "TaskRunTimeout" => Outcome::TimedOut,
            "FailureIgnored" => Outcome::FailureIgnored,
            _ => Outcome::Failed,
        },
        ConditionStatus::Unknown => match reason {
            "PipelineRunPending"
            | "TaskRunPending"
            | "Pending"
            | "ExceededNodeResources"
            | "ExceededResourceQuota" => Outcome::Pending,
            "PipelineRunStopping"
            | "StoppedRunningFinally"
            | "CancelledRunningFinally"
            | "PipelineRunTimeoutRunningFinally" => Outcome::Stopping,
            _ => Outcome::Running,
        },
    }
}

/// What started a run.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum Trigger {
    /// A pull request's event (opened, pushed to, `/retest`): its number and head branch.
    PullRequest { number: u64, branch: Option<String> },
    /// A push to `branch`.
    Push { branch: Option<String> },
    /// Another event Pipelines-as-Code names (`incoming`, …).
    Other { event: String },
    /// Not said: the run carries no Pipelines-as-Code keys.
    Unknown,
}

/// One run in the list.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RunSummary {
    pub name: String,
    /// The Pipeline (`tekton.dev/pipeline`); `None` when unlabelled.
    pub pipeline: Option<String>,
    pub outcome: Outcome,
    /// The `Succeeded` condition's reason and message, as Tekton wrote them.
    pub reason: Option<String>,
    pub message: Option<String>,
    /// `status.startTime`: `None` while it has not started (pending), as `tkn` shows.
    pub started_at: Option<DateTime<Utc>>,
    pub completed_at: Option<DateTime<Utc>>,
    /// When it was made (`metadata.creationTimestamp`): where a run not yet started sorts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created_at: Option<DateTime<Utc>>,
    /// The commit it ran for: Pipelines-as-Code's `sha`, else a `revision`/`git-revision`
    /// param that is a full commit id, else the commit its image's tag ends with (a prefix).
    pub commit: Option<String>,
    /// The commit's page on GitHub (github.com or the snapshot's `githubHost` only).
    pub commit_url: Option<String>,
    /// The commit's title, as Pipelines-as-Code recorded it (`sha-title`).
    pub commit_title: Option<String>,
    /// The image it produced (`*IMAGE_URL`/`IMAGES` results of the run or its TaskRuns),
    /// with its digest when one was published; for a cloud deploy run, the one it deploys
    /// ([`crate::cloud::deployed_image`]).
    pub image: Option<String>,
    pub trigger: Trigger,
    /// Who caused it (Pipelines-as-Code's `sender`).
    pub sender: Option<String>,
}

/// A task of a run, as a node of its graph.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskNode {
    /// The pipeline task's name (`runAfter` and result references use it).
    pub name: String,
    /// Its display name ("nickname") when the pipeline gives one.
    pub display_name: Option<String>,
    /// The TaskRun that ran it (`None` until it starts, or when skipped).
    pub task_run: Option<String>,
    /// Its pod (`status.podName`), where its steps' logs are.
    pub pod: Option<String>,
    /// A `finally` task: runs after all others, however they went.
    pub finally: bool,
    pub outcome: Outcome,
    pub reason: Option<String>,
    pub message: Option<String>,
    /// Why Tekton skipped it (`status.skippedTasks[].reason`, e.g. `When Expressions
    /// evaluated to false`).
    pub skipped_reason: Option<String>,
    pub started_at: Option<DateTime<Utc>>,
    pub completed_at: Option<DateTime<Utc>>,
    /// How many times it ran: 1, plus one per retry Tekton recorded (`status.retriesStatus`).
    /// A retried task is one node, its outcome the last attempt's.
    pub attempts: u32,
    /// Where to draw it: column (0 = runs first) and row within the column.
    pub column: u32,
    pub row: u32,
    pub steps: Vec<StepNode>,
}

/// One step of a task: a container in its pod.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StepNode {
    pub name: String,
    /// Its container (`step-<name>`), whose log is the step's.
    pub container: String,
    pub outcome: Outcome,
    pub exit_code: Option<i64>,
    pub started_at: Option<DateTime<Utc>>,
    pub completed_at: Option<DateTime<Utc>>,
}

/// Why one task waits for another.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum EdgeKind {
    /// `runAfter`.
    RunAfter,
    /// It reads the other's results or status (`$(tasks.<name>.…)`).
    Reference,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Edge {
    pub from: String,
    pub to: String,
    pub kind: EdgeKind,
}

/// One run with its graph.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RunGraph {
    pub run: RunSummary,
    /// Tasks in the pipeline's order, then `finally` tasks.
    pub tasks: Vec<TaskNode>,
    pub edges: Vec<Edge>,
    /// How many columns and, in the tallest, rows the layout takes.
    pub columns: u32,
    pub rows: u32,
}

/// A service's runs: the list newest first and each run's graph.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Pipelines {
    pub service: String,
    /// The CI/CD namespace read (`app-<s>-cicd`, or `infra-<s>-cicd` for an InfraService).
    pub namespace: String,
    /// Newest first (by start, then name).
    pub runs: Vec<RunSummary>,
    /// Each run's graph, in `runs`' order.
    pub graphs: Vec<RunGraph>,
}

impl Pipelines {
    /// Every Pipeline the runs name, for the page's filter.
    pub fn pipeline_names(&self) -> Vec<String> {
        let names: BTreeSet<&str> = self
            .runs
            .iter()
            .filter_map(|r| r.pipeline.as_deref())
            .collect();
        names.into_iter().map(str::to_owned).collect()
    }

    pub fn graph(&self, run: &str) -> Option<&RunGraph> {
        self.graphs.iter().find(|g| g.run.name == run)
    }
}

/// `service`'s runs in its CI/CD namespace on the control plane.
pub fn derive(snapshot: &Snapshot, service: &str) -> Pipelines {
    let objects = snapshot.control_plane();
    let kind = objects
        .iter()
        .find(|o| hangar::is_xr(o) && o.name() == service)
        .and_then(|o| ServiceKind::from_kind(&o.kind));
    let namespace = hangar::cicd_namespace(service, kind);
    let in_namespace = || {
        objects
            .iter()
            .map(|o| &**o)
            .filter(|o| o.namespace() == Some(namespace.as_str()))
    };
    let mut task_runs: BTreeMap<&str, Vec<TaskRun<'_>>> = BTreeMap::new();
    for task in in_namespace().filter_map(TaskRun::new) {
        if let Some(run) = task.pipeline_run() {
            task_runs.entry(run).or_default().push(task);
        }
    }
    let enterprise = snapshot.github_host.as_deref();
    let mut graphs: Vec<RunGraph> = in_namespace()
        .filter_map(PipelineRun::new)
        .map(|run| {
            let tasks = task_runs.get(run.name()).map_or(&[][..], Vec::as_slice);
            graph(run, tasks, enterprise)
        })
        .collect();
    graphs.sort_by(|a, b| newest_first(&a.run, &b.run));
    Pipelines {
        service: service.to_owned(),
        namespace,
        runs: graphs.iter().map(|g| g.run.clone()).collect(),
        graphs,
    }
}

/// Whether a run of `pipeline` started by `trigger` built the default branch
/// ([`hangar::DEFAULT_BRANCH`]): Pipelines-as-Code says it ran for a push to it; or, a run
/// carrying no Pipelines-as-Code keys, it is of Hangar's [`hangar::BUILD_PIPELINE`], which
/// builds the default branch.
pub fn builds_default_branch(pipeline: Option<&str>, trigger: &Trigger) -> bool {
    match trigger {
        Trigger::Push { branch } => branch.as_deref() == Some(hangar::DEFAULT_BRANCH),
        Trigger::Unknown => pipeline == Some(hangar::BUILD_PIPELINE),
        Trigger::PullRequest { .. } | Trigger::Other { .. } => false,
    }
}

/// The newest ended build of the default branch among `objects` (a service's CI/CD
/// namespace), when it failed or timed out: the branch does not build, so nothing new can
/// reach the first environment. `None` when the newest ended build succeeded or was
/// cancelled by a person, or there is none. Only that run is summarised.
pub fn failed_default_build<'o>(
    objects: impl IntoIterator<Item = &'o Object>,
) -> Option<RunSummary> {
    objects
        .into_iter()
        .filter_map(PipelineRun::new)
        .filter(|run| builds_default_branch(run.pipeline(), &trigger(run.object)))
        .map(|run| (run, outcome(run.object)))
        .filter(|(_, outcome)| outcome.is_final())
        .min_by(|(a, _), (b, _)| {
            newer_first((a.started_at(), a.name()), (b.started_at(), b.name()))
        })
        .filter(|(_, outcome)| outcome.is_failure())
        .map(|(run, _)| summary(run, &[], None))
}

impl RunSummary {
    /// The moment it sorts by: its start, else (not started yet) when it was made.
    pub fn sorted_at(&self) -> Option<DateTime<Utc>> {
        self.started_at.or(self.created_at)
    }
}

/// The list's order: newest first by start (a run not started by when it was made; unknown
/// last), then name.
pub fn newest_first(a: &RunSummary, b: &RunSummary) -> std::cmp::Ordering {
    newer_first((a.sorted_at(), &a.name), (b.sorted_at(), &b.name))
}

/// [`newest_first`] on a run's start and name.
fn newer_first(
    (a_start, a_name): (Option<DateTime<Utc>>, &str),
    (b_start, b_name): (Option<DateTime<Utc>>, &str),
) -> std::cmp::Ordering {
    b_start.cmp(&a_start).then_with(|| b_name.cmp(a_name))
}

fn pac<'a>(object: &'a Object, key: &str) -> Option<&'a str> {
    let key = format!("{PAC}{key}");
    object
        .label(&key)
        .or_else(|| object.annotation(&key))
        .filter(|v| !v.is_empty())
}

fn is_commit(text: &str) -> bool {
    text.len() == 40 && text.bytes().all(|b| b.is_ascii_hexdigit())
}

/// What started a run, as Pipelines-as-Code's keys on it say.
fn trigger(object: &Object) -> Trigger {
    match pac(object, "event-type") {
        Some("pull_request" | "retest-comment" | "ok-to-test-comment" | "pull_request_closed") => {
            match pac(object, "pull-request").and_then(|n| n.parse().ok()) {
                Some(number) => Trigger::PullRequest {
                    number,
                    branch: pac(object, "source-branch").map(str::to_owned),
                },
                None => Trigger::Other {
                    event: "pull_request".to_owned(),
                },
            }
        }
        Some("push") => Trigger::Push {
            branch: pac(object, "branch").map(|b| b.trim_start_matches("refs/heads/").to_owned()),
        },
        Some(event) => Trigger::Other {
            event: event.to_owned(),
        },
        None => Trigger::Unknown,
    }
}

fn summary(run: PipelineRun<'_>, tasks: &[TaskRun<'_>], enterprise: Option<&str>) -> RunSummary {
    let object = run.object;
    let condition = object.condition("Succeeded");
    let image = built_images(object)
        .into_iter()
        .chain(tasks.iter().flat_map(|t| built_images(t.object)))
        .next()
        .map(|(url, digest)| match digest {
            Some(d) if !url.contains('@') => format!("{url}@{d}"),
            _ => url.to_owned(),
        })
        .or_else(|| crate::cloud::deployed_image(tasks).map(str::to_owned));
    let commit = pac(object, "sha")
        .map(str::to_owned)
        .or_else(|| {
            ["revision", "git-revision"]
                .into_iter()
                .find_map(|p| crate::tekton::named_string(array_at(&object.spec, &["params"]), p))
                .filter(|v| is_commit(v))
                .map(str::to_owned)
        })
        // Else the commit its image's tag names, as the Deployments tab reads it.
        .or_else(|| {
            image
                .as_deref()
                .and_then(crate::image::commit)
                .map(str::to_owned)
        });
    let commit_url = commit.as_deref().and_then(|sha| {
        pac(object, "sha-url")
            .and_then(|u| links::github(u, enterprise))
            .or_else(|| {
                let repo = pac(object, "repo-url")?;
                links::github_commit(repo, sha, enterprise)
            })
            .map(links::Checked::into_string)
    });
    let trigger = trigger(object);
    RunSummary {
        name: run.name().to_owned(),
        pipeline: run.pipeline().map(str::to_owned),
        outcome: outcome(object),
        reason: condition.and_then(|c| c.reason).map(str::to_owned),
        message: condition.and_then(|c| c.message).map(str::to_owned),
        started_at: at(&object.status, &["startTime"]).and_then(time),
        completed_at: run.completed_at(),
        created_at: object.metadata.creation_timestamp,
        commit,
        commit_url,
        commit_title: pac(object, "sha-title").map(str::to_owned),
        image,
        trigger,
        sender: pac(object, "sender").map(str::to_owned),
    }
}

/// A pipeline task as the resolved spec (`status.pipelineSpec`) declares it.
struct Declared<'a> {
    name: &'a str,
    display_name: Option<&'a str>,
    finally: bool,
    /// Tasks it waits for, each once, with why.
    after: Vec<(&'a str, EdgeKind)>,
}

fn declared(run: &Object) -> Vec<Declared<'_>> {
    let mut out: Vec<Declared<'_>> = Vec::new();
    for (key, finally) in [("tasks", false), ("finally", true)] {
        for task in array_at(&run.status, &["pipelineSpec", key]) {
            let Some(name) = str_at(task, &["name"]) else {
                continue;
            };
            if out.iter().any(|d| d.name == name) {
                continue;
            }
            let mut after: Vec<(&str, EdgeKind)> = Vec::new();
            for before in array_at(task, &["runAfter"])
                .iter()
                .filter_map(Value::as_str)
            {
                if !after.iter().any(|(b, _)| *b == before) {
                    after.push((before, EdgeKind::RunAfter));
                }
            }
            for field in ["params", "when", "matrix"] {
                if let Some(value) = task.get(field) {
                    for before in task_references(value) {
                        if before != name && !after.iter().any(|(b, _)| *b == before) {
                            after.push((before, EdgeKind::Reference));
                        }
                    }
                }
            }
            out.push(Declared {
                name,
                display_name: str_at(task, &["displayName"]),
                finally,
                after,
            });
        }
    }
    out
}

fn graph(run: PipelineRun<'_>, tasks: &[TaskRun<'_>], enterprise: Option<&str>) -> RunGraph {
    let summary = summary(run, tasks, enterprise);
    let object = run.object;
    let mut declared = declared(object);
    // A TaskRun the spec does not declare (a spec Tower cannot read) still shows.
    for task in tasks {
        if let Some(name) = task.pipeline_task() {
            if !declared.iter().any(|d| d.name == name) {
                declared.push(Declared {
                    name,
                    display_name: None,
                    finally: task.object.label("tekton.dev/memberOf") == Some("finally"),
                    after: Vec::new(),
                });
            }
        }
    }
    let known: BTreeSet<&str> = declared.iter().map(|d| d.name).collect();
    let children = array_at(&object.status, &["childReferences"]);
    let skipped = array_at(&object.status, &["skippedTasks"]);
    let columns = columns(&declared, &known);
    let last_task_column = declared
        .iter()
        .filter(|d| !d.finally)
        .map(|d| columns[d.name])
        .max();
    let finally_column = last_task_column.map_or(0, |c| c + 1);
    let mut rows: BTreeMap<u32, u32> = BTreeMap::new();
    let mut nodes = Vec::with_capacity(declared.len());
    let mut edges = Vec::new();
    for d in &declared {
        let column = if d.finally {
            finally_column
        } else {
            columns[d.name]
        };
        let row = rows.entry(column).or_insert(0);
        let child = children
            .iter()
            .find(|c| str_at(c, &["pipelineTaskName"]) == Some(d.name));
        let task_run_name = child.and_then(|c| str_at(c, &["name"]));
        let task = tasks
            .iter()
            .find(|t| Some(t.name()) == task_run_name)
            .or_else(|| tasks.iter().find(|t| t.pipeline_task() == Some(d.name)));
        let skipped_reason = skipped
            .iter()
            .find(|s| str_at(s, &["name"]) == Some(d.name))
            .map(|s| str_at(s, &["reason"]).unwrap_or("skipped").to_owned());
        let node_outcome = match (task, &skipped_reason) {
            (Some(t), _) => outcome(t.object),
            (None, Some(_)) => Outcome::Skipped,
            (None, None) if task_run_name.is_some() => Outcome::Unknown,
            (None, None) if summary.outcome.is_final() => Outcome::NotRun,
            (None, None) => Outcome::Pending,
        };
        let condition = task.and_then(|t| t.object.condition("Succeeded"));
        nodes.push(TaskNode {
            name: d.name.to_owned(),
            display_name: d
                .display_name
                .or_else(|| child.and_then(|c| str_at(c, &["displayName"])))
                .map(str::to_owned),
            task_run: task.map(|t| t.name()).or(task_run_name).map(str::to_owned),
            pod: task
                .and_then(|t| str_at(&t.object.status, &["podName"]))
                .map(str::to_owned),
            finally: d.finally,
            outcome: node_outcome,
            reason: condition.and_then(|c| c.reason).map(str::to_owned),
            message: condition.and_then(|c| c.message).map(str::to_owned),
            skipped_reason,
            started_at: task.and_then(TaskRun::started_at),
            completed_at: task.and_then(TaskRun::completed_at),
            attempts: task.map_or(1, |t| {
                u32::try_from(array_at(&t.object.status, &["retriesStatus"]).len())
                    .unwrap_or(u32::MAX)
                    .saturating_add(1)
            }),
            column,
            row: *row,
            steps: task.map(|t| steps(t.object)).unwrap_or_default(),
        });
        *row += 1;
        for (before, kind) in &d.after {
            if known.contains(before) {
                edges.push(Edge {
                    from: (*before).to_owned(),
                    to: d.name.to_owned(),
                    kind: *kind,
                });
            }
        }
    }
    RunGraph {
        columns: nodes.iter().map(|n| n.column + 1).max().unwrap_or(0),
        rows: rows.values().copied().max().unwrap_or(0),
        run: summary,
        tasks: nodes,
        edges,
    }
}

/// Each task's column: one past the furthest of those it waits for (the longest path from
/// a task that waits for none). A cycle — which Tekton refuses — cannot loop: a task is
/// placed at most once per task in the pipeline.
fn columns<'a>(declared: &[Declared<'a>], known: &BTreeSet<&'a str>) -> BTreeMap<&'a str, u32> {
    let mut column: BTreeMap<&str, u32> = declared.iter().map(|d| (d.name, 0)).collect();
    let limit = u32::try_from(declared.len()).unwrap_or(u32::MAX);
    for _ in 0..declared.len() {
        let mut moved = false;
        for d in declared.iter().filter(|d| !d.finally) {
            let wanted = d
                .after
                .iter()
                .filter(|(b, _)| known.contains(b) && *b != d.name)
                .filter_map(|(b, _)| column.get(b))
                .map(|c| (c + 1).min(limit))
                .max()
                .unwrap_or(0);
            if wanted > column[d.name] {
                column.insert(d.name, wanted);
                moved = true;
            }
        }
        if !moved {
            break;
        }
    }
    column
}

/// A TaskRun's steps from `status.steps`.
fn steps(task: &Object) -> Vec<StepNode> {
    array_at(&task.status, &["steps"])
        .iter()
        .filter_map(|step| {
            let name = str_at(step, &["name"])?;
            let terminated = step.get("terminated").filter(|t| t.is_object());
            let running = step.get("running").filter(|t| t.is_object());
            let exit_code = terminated
                .and_then(|t| t.get("exitCode"))
                .and_then(Value::as_i64);
            // Tekton's `terminationReason`, and the container's own.
            let reasons = [
                str_at(step, &["terminationReason"]),
                terminated.and_then(|t| str_at(t, &["reason"])),
            ];
            let said = |words: &[&str]| reasons.iter().flatten().any(|r| words.contains(r));
            // A step its TaskRun ended (cancelled, or out of time) is terminated with exit
            // code 1 and the TaskRun's reason: it did not fail by itself.
            let outcome = match (terminated, running, exit_code) {
                (Some(_), _, _) if said(&["Skipped"]) => Outcome::Skipped,
                (Some(_), _, _) if said(&["TimeoutExceeded", "TaskRunTimeout"]) => {
                    Outcome::TimedOut
                }
                (Some(_), _, _) if said(&["Cancelled", "TaskRunCancelled"]) => Outcome::Cancelled,
                (Some(_), _, Some(0)) => Outcome::Succeeded,
                (Some(_), _, _) => Outcome::Failed,
                (None, Some(_), _) => Outcome::Running,
                (None, None, _) => Outcome::Pending,
            };
            let started = terminated
                .or(running)
                .and_then(|s| s.get("startedAt"))
                .and_then(time);
            Some(StepNode {
                name: name.to_owned(),
                container: str_at(step, &["container"])
                    .map_or_else(|| format!("step-{name}"), str::to_owned),
                outcome,
                exit_code,
                started_at: started,
                completed_at: terminated.and_then(|t| t.get("finishedAt")).and_then(time),
            })
        })
        .collect()
}

/// A Kubernetes object name (RFC 1123 subdomain), as run names are.
fn is_object_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 253
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'.')
}

/// Which runs a page shows.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Filter {
    pub pipeline: Option<String>,
    pub outcome: Option<Outcome>,
}

impl Filter {
    pub fn accepts(&self, run: &RunSummary) -> bool {
        self.pipeline
            .as_deref()
            .is_none_or(|p| run.pipeline.as_deref() == Some(p))
            && self.outcome.is_none_or(|o| run.outcome == o)
    }
}

/// Where a page of runs ends: the last run's moment ([`RunSummary::sorted_at`]) and name. The next page starts after
/// it in [`newest_first`] order, so runs added meanwhile do not shift it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Cursor {
    pub started_at: Option<DateTime<Utc>>,
    pub name: String,
}

impl Cursor {
    /// `<start in ms, or ->.<name>`: opaque to callers.
    pub fn encode(&self) -> String {
        let start = self
            .started_at
            .map_or_else(|| "-".to_owned(), |t| t.timestamp_millis().to_string());
        format!("{start}.{}", self.name)
    }

    pub fn decode(text: &str) -> Option<Self> {
        let (start, name) = text.split_once('.')?;
        let started_at = match start {
            "-" => None,
            ms => Some(DateTime::from_timestamp_millis(ms.parse().ok()?)?),
        };
        is_object_name(name).then(|| Self {
            started_at,
            name: name.to_owned(),
        })
    }

    fn of(run: &RunSummary) -> Self {
        Self {
            started_at: run.sorted_at(),
            name: run.name.clone(),
        }
    }

    /// Whether `run` comes after this cursor in [`newest_first`] order.
    fn precedes(&self, run: &RunSummary) -> bool {
        newer_first((self.started_at, &self.name), (run.sorted_at(), &run.name))
            == std::cmp::Ordering::Less
    }
}

/// One page of `runs` (newest first): up to `limit` runs `filter` accepts after `after`,
/// and the cursor of the next page when there are more.
pub fn page<'a>(
    runs: &'a [RunSummary],
    filter: &Filter,
    after: Option<&Cursor>,
    limit: usize,
) -> (Vec<&'a RunSummary>, Option<Cursor>) {
    let mut matching = runs
        .iter()
        .filter(|r| filter.accepts(r))
        .filter(|r| after.is_none_or(|c| c.precedes(r)));
    let page: Vec<&RunSummary> = matching.by_ref().take(limit).collect();
    let next = match (matching.next(), page.last()) {
        (Some(_), Some(last)) => Some(Cursor::of(last)),
        _ => None,
    };
    (page, next)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    /// A run or TaskRun whose `Succeeded` condition is `status` for `reason`.
    fn with_condition(kind: &str, status: &str, reason: &str) -> Object {
        Object::from_value(json!({
            "apiVersion": "tekton.dev/v1", "kind": kind,
            "metadata": {"name": "r", "namespace": "app-shop-cicd"},
            "status": {"startTime": "2026-11-30T10:00:00Z", "conditions": [
                {"type": "Succeeded", "status": status, "reason": reason}]}
        }))
        .unwrap()
    }

    /// Every reason Tekton documents for runs and TaskRun (docs/pipelineruns.md
    /// "Monitoring execution status", `taskrun_types.go`) to the outcome `tkn` shows.
    #[test]
    fn each_documented_reason_is_its_outcome() {
        // kind, the condition's status and reason, the outcome (its word).
        let table = "
            PipelineRun Unknown Started                          running
            PipelineRun Unknown Running                          running
            PipelineRun Unknown PipelineRunPending               pending
            PipelineRun Unknown PipelineRunStopping              stopping
            PipelineRun Unknown CancelledRunningFinally          stopping
            PipelineRun Unknown StoppedRunningFinally            stopping
            PipelineRun Unknown PipelineRunTimeoutRunningFinally stopping
            PipelineRun True    Succeeded                        succeeded
            PipelineRun True    Completed                        succeeded
            PipelineRun False   Failed                           failed
            PipelineRun False   Cancelled                        cancelled
            PipelineRun False   StoppedRunFinally                cancelled
            PipelineRun False   CancelledRunFinally              cancelled
            PipelineRun False   PipelineRunTimeout               timed-out
            PipelineRun False   PipelineValidationFailed         failed
            TaskRun     Unknown Pending                          pending
            TaskRun     Unknown TaskRunPending                   pending
            TaskRun     Unknown ExceededNodeResources            pending
            TaskRun     Unknown ExceededResourceQuota            pending
            TaskRun     Unknown ToBeRetried                      running
            TaskRun     False   TaskRunCancelled                 cancelled
            TaskRun     False   TaskRunTimeout                   timed-out
            TaskRun     False   FailureIgnored                   failure-ignored
            TaskRun     False   TaskRunImagePullFailed           failed
            TaskRun     False   StepOOM                          failed";
        for line in table.lines().filter(|l| !l.trim().is_empty()) {
            let [kind, status, reason, expected] = line.split_whitespace().collect::<Vec<_>>()[..]
            else {
                panic!("{line:?}");
            };
            assert_eq!(
                Some(outcome(&with_condition(kind, status, reason))),
                Outcome::parse(expected),
                "{kind} {status} {reason}"
            );
        }
        for o in Outcome::OF_RUNS {
            assert_eq!(Outcome::parse(o.as_str()), Some(o));
        }
        assert!(!Outcome::Stopping.is_final() && Outcome::FailureIgnored.is_final());
    }

    /// A step its TaskRun ended is cancelled or timed out (Tekton terminates it with exit code
    /// 1 and the TaskRun's reason); one that exited non-zero by itself failed.
    #[test]
    fn a_step_ended_by_its_task_run_is_not_a_failure() {
        let step = |terminated: serde_json::Value, termination: Option<&str>| {
            let mut step = json!({"name": "build", "terminated": terminated});
            if let Some(reason) = termination {
                step["terminationReason"] = json!(reason);
            }
            let task = Object::from_value(json!({
                "apiVersion": "tekton.dev/v1", "kind": "TaskRun",
                "metadata": {"name": "t"}, "status": {"steps": [step]}
            }))
            .unwrap();
            let read = steps(&task);
            (read[0].outcome, read[0].exit_code)
        };
        let ended = |reason: &str| json!({"exitCode": 1, "reason": reason});
        assert_eq!(
            step(ended("TaskRunCancelled"), None),
            (Outcome::Cancelled, Some(1))
        );
        assert_eq!(
            step(ended("TaskRunTimeout"), None),
            (Outcome::TimedOut, Some(1))
        );
        assert_eq!(
            step(ended("Error"), Some("TaskRunCancelled")),
            (Outcome::Cancelled, Some(1))
        );
        assert_eq!(
            step(ended("Error"), Some("TimeoutExceeded")),
            (Outcome::TimedOut, Some(1))
        );
        assert_eq!(step(ended("Error"), None), (Outcome::Failed, Some(1)));
        assert_eq!(
            step(json!({"exitCode": 254, "reason": "Error"}), None),
            (Outcome::Failed, Some(254))
        );
        assert_eq!(
            step(
                json!({"exitCode": 0, "reason": "Completed"}),
                Some("Skipped")
            ),
            (Outcome::Skipped, Some(0))
        );
    }
}
