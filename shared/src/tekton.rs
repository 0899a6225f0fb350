//! Tekton `PipelineRun` and `TaskRun` (tekton.dev/v1), read from [`Object`]s.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::kube::{array_at, at, str_at, time, ConditionStatus, Object};

/// Where a run stands, from its `Succeeded` condition.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RunStatus {
    /// No condition yet, or `Unknown` (started, running, stopping, pending).
    Running,
    Succeeded,
    Failed,
}

pub fn run_status(object: &Object) -> RunStatus {
    match object.condition("Succeeded").map(|c| c.status) {
        Some(ConditionStatus::True) => RunStatus::Succeeded,
        Some(ConditionStatus::False) => RunStatus::Failed,
        Some(ConditionStatus::Unknown) | None => RunStatus::Running,
    }
}

/// A PipelineRun. Its status and labels are read once, when it is wrapped.
#[derive(Clone, Copy, Debug)]
pub struct PipelineRun<'a> {
    pub object: &'a Object,
    status: RunStatus,
    pipeline: Option<&'a str>,
}

impl<'a> PipelineRun<'a> {
    /// Wraps `object` if it is a Tekton PipelineRun.
    pub fn new(object: &'a Object) -> Option<Self> {
        (object.kind == "PipelineRun" && object.group() == "tekton.dev").then(|| Self {
            object,
            status: run_status(object),
            pipeline: object.label("tekton.dev/pipeline"),
        })
    }

    pub fn name(&self) -> &'a str {
        &self.object.metadata.name
    }

    /// The `tekton.dev/pipeline` label (the Pipeline's name).
    pub fn pipeline(&self) -> Option<&'a str> {
        self.pipeline
    }

    pub fn status(&self) -> RunStatus {
        self.status
    }

    /// `status.startTime`, else the object's creation.
    pub fn started_at(&self) -> Option<DateTime<Utc>> {
        at(&self.object.status, &["startTime"])
            .and_then(time)
            .or(self.object.metadata.creation_timestamp)
    }

    pub fn completed_at(&self) -> Option<DateTime<Utc>> {
        at(&self.object.status, &["completionTime"]).and_then(time)
    }

    /// The `Succeeded` condition's message, e.g. `Tasks Completed: 3 (Failed: 1, …)`.
    pub fn message(&self) -> Option<&'a str> {
        self.object.condition("Succeeded").and_then(|c| c.message)
    }

    /// Pipeline task names from the resolved spec (`status.pipelineSpec`): tasks, then finally.
    pub fn task_names(&self) -> impl Iterator<Item = &'a str> + 'a {
        let status = &self.object.status;
        ["tasks", "finally"]
            .into_iter()
            .flat_map(move |key| array_at(status, &["pipelineSpec", key]))
            .filter_map(|task| str_at(task, &["name"]))
    }
}

/// A TaskRun. Its status and labels are read once, when it is wrapped.
#[derive(Clone, Copy, Debug)]
pub struct TaskRun<'a> {
    pub object: &'a Object,
    status: RunStatus,
    pipeline_run: Option<&'a str>,
    pipeline_task: Option<&'a str>,
}

impl<'a> TaskRun<'a> {
    /// Wraps `object` if it is a Tekton TaskRun.
    pub fn new(object: &'a Object) -> Option<Self> {
        (object.kind == "TaskRun" && object.group() == "tekton.dev").then(|| Self {
            object,
            status: run_status(object),
            pipeline_run: object.label("tekton.dev/pipelineRun"),
            pipeline_task: object.label("tekton.dev/pipelineTask"),
        })
    }

    pub fn name(&self) -> &'a str {
        &self.object.metadata.name
    }

    /// The PipelineRun it belongs to (`tekton.dev/pipelineRun` label).
    pub fn pipeline_run(&self) -> Option<&'a str> {
        self.pipeline_run
    }

    /// Its task's name in the pipeline (`tekton.dev/pipelineTask` label).
    pub fn pipeline_task(&self) -> Option<&'a str> {
        self.pipeline_task
    }

    pub fn status(&self) -> RunStatus {
        self.status
    }

    pub fn message(&self) -> Option<&'a str> {
        self.object.condition("Succeeded").and_then(|c| c.message)
    }

    pub fn started_at(&self) -> Option<DateTime<Utc>> {
        at(&self.object.status, &["startTime"]).and_then(time)
    }

    pub fn completed_at(&self) -> Option<DateTime<Utc>> {
        at(&self.object.status, &["completionTime"]).and_then(time)
    }

    /// A string result published by the task (`status.results[name=…].value`).
    pub fn result(&self, name: &str) -> Option<&'a str> {
        named_string(array_at(&self.object.status, &["results"]), name)
    }

    /// A string parameter the task was given (`spec.params[name=…].value`).
    pub fn param(&self, name: &str) -> Option<&'a str> {
        named_string(array_at(&self.object.spec, &["params"]), name)
    }
}

/// The pipeline tasks `value` refers to (`$(tasks.<name>.results.…)`, `$(tasks.<name>.status)`),
/// at any depth of strings, arrays and objects; each as often as it is named.
pub fn task_references(value: &Value) -> Vec<&str> {
    const MARK: &str = "$(tasks.";
    let mut out = Vec::new();
    let mut pending = vec![value];
    while let Some(value) = pending.pop() {
        match value {
            Value::String(text) => {
                let mut rest = text.as_str();
                while let Some(at) = rest.find(MARK) {
                    rest = &rest[at + MARK.len()..];
                    let end = rest.find(['.', ')']).unwrap_or(rest.len());
                    if end > 0 && rest[end..].starts_with('.') {
                        out.push(&rest[..end]);
                    }
                }
            }
            Value::Array(items) => pending.extend(items),
            Value::Object(map) => pending.extend(map.values()),
            _ => {}
        }
    }
    out
}

/// In a Tekton `[{name, value}]` list, the value named `name` when it is a string (values
/// may also be arrays or objects, which this does not read).
pub(crate) fn named_string<'a>(list: &'a [Value], name: &str) -> Option<&'a str> {
    list.iter()
        .find(|entry| str_at(entry, &["name"]) == Some(name))
        .and_then(|entry| str_at(entry, &["value"]))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn object(value: Value) -> Object {
        Object::from_value(value).unwrap()
    }

    #[test]
    fn pipeline_run_reads_status_times_and_tasks() {
        let o = object(json!({
            "apiVersion": "tekton.dev/v1", "kind": "PipelineRun",
            "metadata": {"name": "build-x", "labels": {"tekton.dev/pipeline": "build"},
                         "creationTimestamp": "2025-05-04T02:00:10Z"},
            "status": {
                "conditions": [{"type": "Succeeded", "status": "Unknown", "reason": "Running"}],
                "pipelineSpec": {"tasks": [{"name": "fetch"}, {"name": "build"}], "finally": [{"name": "notify"}]}
            }
        }));
        let run = PipelineRun::new(&o).unwrap();
        assert_eq!(run.pipeline(), Some("build"));
        assert_eq!(run.status(), RunStatus::Running);
        assert_eq!(run.started_at(), o.metadata.creation_timestamp);
        assert_eq!(run.completed_at(), None);
        assert_eq!(
            run.task_names().collect::<Vec<_>>(),
            ["fetch", "build", "notify"]
        );
    }

    #[test]
    fn task_run_reads_string_results_and_params_only() {
        let o = object(json!({
            "apiVersion": "tekton.dev/v1", "kind": "TaskRun",
            "metadata": {"name": "t", "labels": {"tekton.dev/pipelineRun": "r", "tekton.dev/pipelineTask": "deploy-aws-ecs"}},
            "spec": {"params": [{"name": "env", "value": "prod"}, {"name": "tags", "value": ["a", "b"]}]},
            "status": {
                "conditions": [{"type": "Succeeded", "status": "False", "message": "\"step-deploy\" exited with code 1"}],
                "results": [{"name": "target", "type": "string", "value": "aws-ecs"}]
            }
        }));
        let task = TaskRun::new(&o).unwrap();
        assert_eq!(task.pipeline_run(), Some("r"));
        assert_eq!(task.pipeline_task(), Some("deploy-aws-ecs"));
        assert_eq!(task.status(), RunStatus::Failed);
        assert_eq!(task.param("env"), Some("prod"));
        assert_eq!(task.param("tags"), None);
        assert_eq!(task.result("target"), Some("aws-ecs"));
        assert_eq!(task.result("missing"), None);
    }

    #[test]
    fn other_kinds_are_not_runs() {
        let o = object(
            json!({"apiVersion": "argoproj.io/v1alpha1", "kind": "PipelineRun", "metadata": {"name": "x"}}),
        );
        assert!(PipelineRun::new(&o).is_none());
    }
}
