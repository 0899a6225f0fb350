//! Builders for objects in the shapes the real controllers write them.

use chrono::{DateTime, Utc};
use serde_json::{json, Value};

pub fn ts(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

/// A status condition (Crossplane, Tekton and Argo share this shape).
pub fn condition(
    type_: &str,
    status: bool,
    reason: &str,
    at: DateTime<Utc>,
    message: Option<&str>,
) -> Value {
    let mut c = json!({"type": type_, "status": if status { "True" } else { "False" }, "reason": reason,
                       "lastTransitionTime": ts(at)});
    if let Some(m) = message {
        c["message"] = json!(m);
    }
    c
}

pub fn unknown_condition(type_: &str, reason: &str, at: DateTime<Utc>, message: &str) -> Value {
    json!({"type": type_, "status": "Unknown", "reason": reason, "lastTransitionTime": ts(at), "message": message})
}

pub fn namespace(name: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": {"kubernetes.io/metadata.name": name}},
           "status": {"phase": "Active"}})
}

const GITHUB: &str = "repo.github.m.upbound.io/v1alpha1";

/// A provider-github Repository: Ready once created, or failing with the provider's error.
pub fn repository(
    composite: &str,
    name: &str,
    github_name: &str,
    created: Option<DateTime<Utc>>,
    since: DateTime<Utc>,
    error: Option<&str>,
) -> Value {
    let conditions = match (error, created) {
        (Some(message), _) => vec![
            condition("Ready", false, "Creating", since, None),
            condition("Synced", false, "ReconcileError", since, Some(message)),
        ],
        (None, Some(at)) => vec![
            condition("Ready", true, "Available", at, None),
            condition("Synced", true, "ReconcileSuccess", at, None),
        ],
        (None, None) => vec![
            condition("Synced", true, "ReconcileSuccess", since, None),
            condition("Ready", false, "Creating", since, None),
        ],
    };
    let mut o = json!({"apiVersion": GITHUB, "kind": "Repository",
        "metadata": {"name": name, "namespace": "tenants",
                     "annotations": {"crossplane.io/external-name": github_name},
                     "labels": {"crossplane.io/composite": composite}},
        "spec": {"forProvider": {"name": github_name, "visibility": "private", "autoInit": true}},
        "status": {"conditions": conditions}});
    if created.is_some() && error.is_none() {
        o["status"]["atProvider"] = json!({"fullName": format!("acme/{github_name}"),
            "htmlUrl": format!("https://github.com/acme/{github_name}"), "defaultBranch": "main",
            "visibility": "private", "name": github_name});
    }
    o
}

pub fn repository_file(
    composite: &str,
    name: &str,
    repo: &str,
    path: &str,
    created: Option<DateTime<Utc>>,
    since: DateTime<Utc>,
) -> Value {
    let conditions = match created {
        Some(at) => vec![
            condition("Ready", true, "Available", at, None),
            condition("Synced", true, "ReconcileSuccess", at, None),
        ],
        None => vec![
            condition("Synced", true, "ReconcileSuccess", since, None),
            condition("Ready", false, "Creating", since, None),
        ],
    };
    json!({"apiVersion": GITHUB, "kind": "RepositoryFile",
        "metadata": {"name": name, "namespace": "tenants",
                     "annotations": {"crossplane.io/external-name": format!("{repo}/{path}")},
                     "labels": {"crossplane.io/composite": composite}},
        "spec": {"forProvider": {"repository": repo, "file": path, "branch": "main",
                                 "commitMessage": format!("Add {path}"), "overwriteOnCreate": true}},
        "status": {"conditions": conditions}})
}

/// An Infisical Project as its Crossplane provider shows it, composed for `composite`:
/// object `name` in `namespace`, the project `infisical` (its name and slug) whose id in
/// Infisical is `id` (the external name), with `conditions`.
pub fn project(
    composite: &str,
    (name, namespace): (&str, &str),
    infisical: &str,
    id: &str,
    conditions: Vec<Value>,
) -> Value {
    json!({"apiVersion": "projects.project.infisical.m.hangar.io/v1alpha1", "kind": "Project",
        "metadata": {"name": name, "namespace": namespace,
                     "annotations": {"crossplane.io/external-name": id},
                     "labels": {"crossplane.io/composite": composite}},
        "spec": {"forProvider": {"name": infisical, "slug": infisical}},
        "status": {"conditions": conditions}})
}

/// The stages of a Tekton run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RunState {
    Running,
    Succeeded,
    Failed,
    Cancelled,
}

fn succeeded_condition(
    state: RunState,
    at: DateTime<Utc>,
    [running, done, failed, cancelled]: [&str; 4],
) -> Value {
    match state {
        RunState::Running => unknown_condition("Succeeded", "Running", at, running),
        RunState::Succeeded => condition("Succeeded", true, "Succeeded", at, Some(done)),
        RunState::Failed => condition("Succeeded", false, "Failed", at, Some(failed)),
        RunState::Cancelled => condition("Succeeded", false, "Cancelled", at, Some(cancelled)),
    }
}

/// Which run: its name, namespace and pipeline.
#[derive(Clone, Copy, Debug)]
pub struct RunRef<'a> {
    pub name: &'a str,
    pub namespace: &'a str,
    pub pipeline: &'a str,
}

/// A PipelineRun of `pipeline` with `tasks`, `finished` of them done.
pub fn pipeline_run(
    run: RunRef<'_>,
    started: DateTime<Utc>,
    tasks: &[&str],
    finished: usize,
    state: RunState,
    completed: Option<DateTime<Utc>>,
) -> Value {
    let RunRef {
        name,
        namespace,
        pipeline,
    } = run;
    let at = completed.unwrap_or(started);
    let running = format!(
        "Tasks Completed: {finished} (Failed: 0, Cancelled 0), Incomplete: {}, Skipped: 0",
        tasks.len() - finished
    );
    let done = format!(
        "Tasks Completed: {} (Failed: 0, Cancelled 0), Skipped: 0",
        tasks.len()
    );
    let failed = format!("Tasks Completed: {finished} (Failed: 1, Cancelled 0), Skipped: 0");
    let mut status = json!({
        "conditions": [succeeded_condition(state, at, [&running, &done, &failed,
            &format!("PipelineRun \"{name}\" was cancelled")])],
        "startTime": ts(started),
        // The tasks run one after another.
        "pipelineSpec": {"tasks": tasks.iter().enumerate().map(|(i, t)| match i.checked_sub(1) {
            Some(before) => json!({"name": t, "taskRef": {"name": t}, "runAfter": [tasks[before]]}),
            None => json!({"name": t, "taskRef": {"name": t}}),
        }).collect::<Vec<_>>()},
        "childReferences": tasks.iter().take(finished + 1).map(|t| json!({"apiVersion": "tekton.dev/v1", "kind": "TaskRun",
            "name": format!("{name}-{t}"), "pipelineTaskName": t})).collect::<Vec<_>>(),
    });
    if let (Some(done_at), false) = (completed, state == RunState::Running) {
        status["completionTime"] = json!(ts(done_at));
    }
    json!({"apiVersion": "tekton.dev/v1", "kind": "PipelineRun",
        "metadata": {"name": name, "namespace": namespace, "labels": {"tekton.dev/pipeline": pipeline,
                     "app.kubernetes.io/managed-by": "tekton-pipelines"}},
        // Pipelines pass credentials as params, as real ones do: Tower must not keep them.
        "spec": {"pipelineRef": {"name": pipeline}, "params": [{"name": "git-revision", "value": "main"},
                                                              {"name": "registry-token", "value": SECRET_MARK}],
                 "taskRunTemplate": {"serviceAccountName": "pipeline"}},
        "status": status})
}

/// A TaskRun of `run`'s task `task`.
pub fn task_run(
    run: RunRef<'_>,
    task: &str,
    started: DateTime<Utc>,
    state: RunState,
    completed: Option<DateTime<Utc>>,
    message: Option<&str>,
) -> Value {
    let RunRef {
        name: run,
        namespace,
        pipeline,
    } = run;
    let name = format!("{run}-{task}");
    let default_failure = format!("\"step-{task}\" exited with code 1: Error");
    let failed = message.unwrap_or(&default_failure);
    // Tekton's failure message names the step and its exit code (`pkg/pod/status.go`): the
    // step's own status says the same.
    let (step, exit_code) = failed_step(failed).unwrap_or((task, 1));
    let mut status = json!({
        "conditions": [succeeded_condition(state, completed.unwrap_or(started), ["Not all Steps in the Task have finished executing",
            "All Steps have completed executing", failed,
            "TaskRun cancelled as the PipelineRun it belongs to has been cancelled."])],
        "podName": format!("{name}-pod"), "startTime": ts(started),
        "steps": [{"name": step, "container": format!("step-{step}")}],
    });
    if state == RunState::Running {
        // Its one step runs from the start, as Tekton reports a running container.
        status["steps"][0]["running"] = json!({"startedAt": ts(started)});
    }
    if let (Some(done_at), false) = (completed, state == RunState::Running) {
        status["completionTime"] = json!(ts(done_at));
        // A cancelled TaskRun's running step is terminated by Tekton: exit code 1, its reason.
        let (exit, reason) = match state {
            RunState::Succeeded => (0, "Completed"),
            RunState::Cancelled => (1, "TaskRunCancelled"),
            _ => (exit_code, "Error"),
        };
        status["steps"][0]["terminated"] = json!({"exitCode": exit, "reason": reason,
            "startedAt": ts(started), "finishedAt": ts(done_at)});
        if state == RunState::Cancelled {
            status["steps"][0]["terminationReason"] = json!("TaskRunCancelled");
        }
    }
    json!({"apiVersion": "tekton.dev/v1", "kind": "TaskRun",
        "metadata": {"name": name, "namespace": namespace, "labels": {"tekton.dev/pipeline": pipeline,
            "tekton.dev/pipelineRun": run, "tekton.dev/pipelineTask": task, "tekton.dev/memberOf": "tasks",
            "tekton.dev/task": task}},
        "spec": {"serviceAccountName": "pipeline", "taskRef": {"kind": "Task", "name": task}, "timeout": "1h0m0s"},
        "status": status})
}

/// The step and exit code a Tekton failure message names: `"step-<s>" exited with code <n>…`.
fn failed_step(message: &str) -> Option<(&str, i64)> {
    let rest = message.strip_prefix("\"step-")?;
    let (step, rest) = rest.split_once('"')?;
    let code = rest.strip_prefix(" exited with code ")?;
    let digits = code
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(code.len());
    Some((step, code[..digits].parse().ok()?))
}

/// The pod a TaskRun runs in (`<taskrun>-pod`, one `step-<task>` container; a
/// `unit-tests` one logs as a test runner).
pub fn task_pod(task_run: &Value) -> Value {
    let meta = &task_run["metadata"];
    let status = &task_run["status"];
    let task = meta["labels"]["tekton.dev/pipelineTask"]
        .as_str()
        .unwrap_or("run");
    let container = status["steps"][0]["container"]
        .as_str()
        .map_or_else(|| format!("step-{task}"), str::to_owned);
    let terminated = &status["steps"][0]["terminated"];
    let (phase, state) = if terminated.is_object() {
        let failed = terminated["exitCode"].as_i64().unwrap_or(0) != 0;
        (
            if failed { "Failed" } else { "Succeeded" },
            json!({"terminated": terminated}),
        )
    } else {
        (
            "Running",
            json!({"running": {"startedAt": status["startTime"]}}),
        )
    };
    let mut labels = meta["labels"].clone();
    labels["tekton.dev/taskRun"] = meta["name"].clone();
    let mut pod = json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": format!("{}-pod", meta["name"].as_str().unwrap_or("task")),
                     "namespace": meta["namespace"], "labels": labels},
        "spec": {"containers": [{"name": container, "image": format!("ghcr.io/acme/tasks/{task}:1")}],
                 "restartPolicy": "Never"},
        "status": {"phase": phase, "startTime": status["startTime"],
                   "containerStatuses": [{"name": container, "ready": phase == "Running",
                                          "restartCount": 0, "state": state}]}});
    let mut annotations = serde_json::Map::new();
    if phase == "Failed" {
        if let Some(message) = status["conditions"][0]["message"].as_str() {
            annotations.insert("hangar-sim.io/failure".to_owned(), json!(message));
        }
    }
    // Unit tests print a line per test (see `crate::logs`).
    if task == "unit-tests" {
        annotations.insert("hangar-sim.io/log".to_owned(), json!("tests"));
    }
    if !annotations.is_empty() {
        pod["metadata"]["annotations"] = Value::Object(annotations);
    }
    pod
}

/// Text the simulated platform puts where real platforms keep secrets (containers' env, Helm
/// values, pipeline params): Tower must never hold or show it.
pub const SECRET_MARK: &str = "sim-secret-4f1c";

/// The pod template hash of [`rollout`]'s one ReplicaSet.
pub const ROLLOUT_HASH: &str = "6d4f8b7c9";

/// An Argo Rollout with a canary strategy, running `image` from one ReplicaSet
/// ([`ROLLOUT_HASH`], made by [`rollout_replicas`]).
#[allow(clippy::too_many_arguments)]
pub fn rollout(
    app: &str,
    env: &str,
    image: &str,
    phase: &str,
    desired: i64,
    available: i64,
    at: DateTime<Utc>,
    message: Option<&str>,
) -> Value {
    let healthy = phase == "Healthy";
    let mut status = json!({"phase": phase, "replicas": desired, "updatedReplicas": available,
        "readyReplicas": available, "observedGeneration": "1", "stableRS": ROLLOUT_HASH,
        "currentPodHash": ROLLOUT_HASH,
        "conditions": [
            {"type": "Available", "status": if available >= desired { "True" } else { "False" }, "reason": "AvailableReason",
             "message": "Rollout has minimum availability", "lastTransitionTime": ts(at), "lastUpdateTime": ts(at)},
            {"type": "Healthy", "status": if healthy { "True" } else { "False" },
             "reason": if healthy { "RolloutHealthy" } else { "RolloutHealthyFalse" },
             "message": if healthy { "Rollout is healthy" } else { "Rollout is not healthy" },
             "lastTransitionTime": ts(at), "lastUpdateTime": ts(at)}]});
    if available > 0 {
        status["availableReplicas"] = json!(available);
    }
    if let Some(m) = message {
        status["message"] = json!(m);
    }
    json!({"apiVersion": "argoproj.io/v1alpha1", "kind": "Rollout",
        "metadata": {"name": app, "namespace": format!("app-{app}-{env}"), "generation": 1},
        "spec": {"replicas": desired, "selector": {"matchLabels": {"app": app}},
                 "template": {"metadata": {"labels": {"app": app}}, "spec": {"containers": [{
                     "name": app, "image": image,
                     "args": ["--listen=:8080"],
                     "env": [{"name": "DATABASE_URL", "value": format!("postgres://{app}:{SECRET_MARK}@db/{app}")}]}]}},
                 "strategy": {"canary": {"steps": [{"setWeight": 20}, {"pause": {"duration": "1m"}}, {"setWeight": 60}, {"pause": {}}]}}},
        "status": status})
}

/// The ReplicaSet of [`rollout`] and its pods: `desired` of them, `available` ready, made
/// at `at`.
pub fn rollout_replicas(
    app: &str,
    env: &str,
    image: &str,
    (desired, available): (i64, i64),
    at: DateTime<Utc>,
) -> Vec<Value> {
    let namespace = format!("app-{app}-{env}");
    let labels = json!({"app": app, "rollouts-pod-template-hash": ROLLOUT_HASH});
    let mut out = vec![json!({"apiVersion": "apps/v1", "kind": "ReplicaSet",
        "metadata": {"name": format!("{app}-{ROLLOUT_HASH}"), "namespace": namespace,
            "creationTimestamp": ts(at), "labels": labels,
            "annotations": {"rollout.argoproj.io/revision": "1"},
            "ownerReferences": [{"apiVersion": "argoproj.io/v1alpha1", "kind": "Rollout",
                                 "name": app, "controller": true}]},
        "spec": {"replicas": desired, "selector": {"matchLabels": labels},
            "template": {"metadata": {"labels": labels},
                         "spec": {"containers": [{"name": app, "image": image}]}}},
        "status": {"replicas": desired, "readyReplicas": available,
                   "availableReplicas": available, "observedGeneration": 1}})];
    for i in 0..desired {
        let ready = i < available;
        let uid = crate::store::uid_of(&format!("{namespace}/{ROLLOUT_HASH}/{i}"));
        let state = if ready {
            json!({"running": {"startedAt": ts(at)}})
        } else {
            json!({"waiting": {"reason": "ContainerCreating"}})
        };
        out.push(json!({"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": format!("{app}-{ROLLOUT_HASH}-{}", &uid[uid.len() - 5..]),
                "namespace": namespace, "creationTimestamp": ts(at),
                "labels": {"app.kubernetes.io/name": app, "rollouts-pod-template-hash": ROLLOUT_HASH}},
            "spec": {"containers": [{"name": app, "image": image}], "nodeName": "dev-node-1"},
            "status": {"phase": if ready { "Running" } else { "Pending" }, "startTime": ts(at),
                "containerStatuses": [{"name": app, "ready": ready, "restartCount": 0,
                                       "image": image, "state": state}]}}));
    }
    out
}

/// An Argo CD Application as the API serves it.
pub fn application(
    name: &str,
    namespace: &str,
    sync: &str,
    health: &str,
    at: DateTime<Utc>,
    repo: &str,
) -> Value {
    json!({"apiVersion": "argoproj.io/v1alpha1", "kind": "Application",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"project": "default", "source": {"repoURL": repo, "path": ".", "targetRevision": "HEAD",
                 "helm": {"valueFiles": ["values.yaml"], "values": format!("apiKey: {SECRET_MARK}\n")}},
                 "destination": {"server": "https://kubernetes.default.svc", "namespace": name}},
        "status": {"sync": {"status": sync, "revision": "ea8759964626a583667a2bfd08f334ec2070040a"},
                   "health": {"status": health, "lastTransitionTime": ts(at)}, "reconciledAt": ts(at)}})
}
