//! The Deployments tab of one service: for a cloud target, the cloud deploys
//! ([`crate::cloud`]); for Kubernetes, each environment in promotion order with its Argo CD
//! Application and its Argo Rollout read the way `kubectl argo rollouts` reads it — the
//! phase by `GetRolloutPhase`'s rules, the steps with the current one, the stable and canary
//! ReplicaSets, the analysis and its measurements — and said in plain words.
//!
//! Missing data is `None`, never guessed; the answer never depends on the order of objects.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::argo::{
    measured, replica_set_image, replica_set_of, rollout_hashes, rollout_phase, RolloutPhase,
    POD_HASH_LABEL, ROLLOUT_TYPE_LABEL,
};
use crate::cloud::{self, Capability, CloudDeploys};
use crate::evidence::{Builds, Evidence};
use crate::hangar;
use crate::kube::{array_at, at, str_at, time, Object};
use crate::snapshot::Snapshot;
use crate::state::{Attention, Severity};

/// The whole Deployments tab of one service.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Deployments {
    pub service: String,
    pub capability: Capability,
    /// A cloud target's deploys (`capability: cloud-runtime` only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cloud: Option<CloudDeploys>,
    /// Each environment where Tower found the service's Application or Rollout, in
    /// promotion order (`capability: k8s-runtime` only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub environments: Option<Vec<Environment>>,
}

/// One environment of a Kubernetes service.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Environment {
    pub name: String,
    pub cluster: String,
    pub namespace: String,
    /// The platform's Argo CD Application deploying it; `None` when there is none.
    pub argo: Option<ArgoApp>,
    /// The service's Rollout there; `None` when there is none yet.
    pub rollout: Option<RolloutView>,
    /// `None` when calm; the same words as the fleet's cell.
    pub attention: Option<Attention>,
    /// Its state ([`crate::state`]), the fleet cell's: what runs, what is arriving, every
    /// trouble; `None` when no Argo CD Application deploys it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state: Option<crate::state::EnvState>,
}

/// An Argo CD Application, in Argo CD's own words.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ArgoApp {
    pub name: String,
    pub sync: Option<String>,
    pub health: Option<String>,
    /// The Git revision it is synced to.
    pub revision: Option<String>,
    /// That revision's commit on GitHub, when the Application's repository is there.
    pub revision_url: Option<String>,
    /// When its last sync operation finished.
    pub last_synced_at: Option<DateTime<Utc>>,
    /// What Argo CD says is wrong (a condition, or a failed sync's message).
    pub message: Option<String>,
}

/// How a Rollout replaces its pods.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Strategy {
    Canary,
    BlueGreen,
}

/// A Rollout, read.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RolloutView {
    pub name: String,
    pub strategy: Option<Strategy>,
    /// By `GetRolloutPhase`'s rules ([`rollout_phase`]).
    pub phase: RolloutPhase,
    /// The controller's message, or the rule's (e.g. a spec not yet observed).
    pub message: Option<String>,
    /// What is happening, in plain words (never Argo CD's "Suspended").
    pub summary: String,
    /// `status.currentStepIndex` as written: 0-based, the number of steps once done.
    pub current_step: Option<u32>,
    /// The canary's steps; empty for blue-green.
    pub steps: Vec<Step>,
    /// The canary's actual share of traffic, as `kubectl argo rollouts get` reports it:
    /// what the controller wrote for the traffic router, else the canary's share of the
    /// available pods (0 while none of its pods is available); `None` when unknown.
    pub canary_weight: Option<u32>,
    pub stable_weight: Option<u32>,
    /// The weight the canary's steps set so far (`setWeight`), which the actual one follows.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub desired_weight: Option<u32>,
    pub paused_since: Option<DateTime<Utc>>,
    pub pause_reason: Option<String>,
    pub aborted: bool,
    /// The stable ReplicaSet (blue-green: the active one).
    pub stable: Option<ReplicaSetView>,
    /// The canary ReplicaSet (blue-green: the preview); `None` when it is the stable one.
    pub canary: Option<ReplicaSetView>,
    /// The AnalysisRuns of the current pod template.
    pub analysis: Vec<Analysis>,
}

/// What one step of a canary does.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum StepKind {
    SetWeight,
    Pause,
    Analysis,
    Experiment,
    Other,
}

/// Where the rollout is against a step.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum StepStatus {
    Done,
    Current,
    Pending,
}

/// One canary step.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Step {
    pub index: u32,
    pub kind: StepKind,
    /// `setWeight` only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub weight: Option<u32>,
    /// `pause` only: its duration as written, or `null` (until someone promotes it).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    pub duration: Option<Option<String>>,
    pub status: StepStatus,
}

/// A field that is there, even as `null` (`Some(None)`); an absent one stays `None` by
/// `#[serde(default)]`.
fn present<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Option<String>>, D::Error> {
    Option::<String>::deserialize(d).map(Some)
}

/// A ReplicaSet of the rollout.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ReplicaSetView {
    /// Its name; `None` when Tower has not seen the ReplicaSet of that pod hash.
    pub replica_set: Option<String>,
    pub pod_hash: String,
    pub image: Option<String>,
    pub replicas: Option<u32>,
    pub ready: Option<u32>,
    /// Its available pods (`status.availableReplicas`): what carries traffic without a
    /// traffic router.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub available: Option<u32>,
    /// What vouches for its image; `None` when the image is not known.
    pub evidence: Option<Evidence>,
}

/// One AnalysisRun.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Analysis {
    pub name: String,
    /// `Background`, `Step`, `PrePromotion`, `PostPromotion` (the `rollout-type` label).
    #[serde(rename = "type")]
    pub kind: Option<String>,
    pub phase: Option<String>,
    pub message: Option<String>,
    pub metrics: Vec<Metric>,
}

/// One metric of an AnalysisRun, with its measurements oldest first.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Metric {
    pub name: String,
    pub phase: Option<String>,
    pub success_condition: Option<String>,
    pub failure_condition: Option<String>,
    pub failure_limit: Option<i64>,
    pub measurements: Vec<Measurement>,
}

/// One measurement: its value read as a number (`"[0.012]"` → 0.012) when it is one.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Measurement {
    pub phase: Option<String>,
    pub value: Option<f64>,
    pub started_at: Option<DateTime<Utc>>,
    pub finished_at: Option<DateTime<Utc>>,
}

/// The Deployments tab of `service`.
pub fn derive_deployments(snapshot: &Snapshot, service: &str) -> Deployments {
    let cloud = cloud::derive_cloud_deploys(snapshot, service);
    if cloud.capability == Capability::CloudRuntime {
        return Deployments {
            service: service.to_owned(),
            capability: Capability::CloudRuntime,
            cloud: Some(cloud),
            environments: None,
        };
    }
    Deployments {
        service: service.to_owned(),
        capability: Capability::K8sRuntime,
        cloud: None,
        environments: Some(environments(snapshot, service)),
    }
}

/// Every environment of `service` with an Application or a Rollout, in promotion order.
fn environments(snapshot: &Snapshot, service: &str) -> Vec<Environment> {
    let control_plane = snapshot.control_plane_cluster.as_str();
    // The service's labelled Applications, by environment (the lowest name wins a repeat).
    let mut applications: BTreeMap<&str, &Object> = BTreeMap::new();
    for application in snapshot.cluster(control_plane).iter().filter(|o| {
        o.kind == "Application"
            && o.group() == "argoproj.io"
            && o.namespace() == Some(hangar::ARGOCD_NAMESPACE)
            && o.label(hangar::APP_LABEL) == Some(service)
    }) {
        if let Some(env) = application.label(hangar::ENVIRONMENT_LABEL) {
            let slot = applications.entry(env).or_insert(application);
            if application.name() < slot.name() {
                *slot = application;
            }
        }
    }
    // The service's Rollouts, by environment: named after it, in `app-<s>-<env>`, on any
    // cluster (the lowest cluster name wins a repeat).
    let mut rollouts: BTreeMap<String, (&str, &Object)> = BTreeMap::new();
    for (cluster, objects) in &snapshot.clusters {
        for rollout in objects
            .iter()
            .filter(|o| o.kind == "Rollout" && o.group() == "argoproj.io" && o.name() == service)
        {
            if let Some(env) = hangar::environment_of(rollout, service) {
                rollouts
                    .entry(env.to_owned())
                    .or_insert((cluster.as_str(), rollout));
            }
        }
    }

    let mut names: Vec<String> = applications
        .keys()
        .map(|e| (*e).to_owned())
        .chain(rollouts.keys().cloned())
        .collect();
    hangar::sort_environments(&mut names);
    if let Some(declared) = snapshot.cicd_of(service).environments {
        // Declared ones first, in cicd.yaml's order; any others after, in the fleet's.
        names.sort_by_key(|n| declared.iter().position(|d| d == n).unwrap_or(usize::MAX));
    }

    let builds = Builds::of(snapshot, service);
    let states = crate::state::derive(snapshot, service);
    names
        .into_iter()
        .map(|name| {
            let application = applications.get(name.as_str()).copied();
            let destination =
                |field| application.and_then(|a| str_at(&a.spec, &["destination", field]));
            let found = rollouts.get(&name);
            let cluster = found
                .map(|(c, _)| *c)
                .or_else(|| destination("name"))
                .unwrap_or(control_plane)
                .to_owned();
            let namespace = found
                .and_then(|(_, r)| r.namespace())
                .or_else(|| destination("namespace"))
                .map_or_else(|| hangar::env_namespace(service, &name), str::to_owned);
            let argo = application.map(|a| argo_app(a, snapshot.github_host.as_deref()));
            let rollout = found
                .map(|(cluster, r)| rollout_view(r, snapshot.cluster(cluster), service, &builds));
            let state = states.iter().find(|s| s.environment == name).cloned();
            let attention = attention(state.as_ref(), rollout.as_ref());
            Environment {
                name,
                cluster,
                namespace,
                argo,
                rollout,
                attention,
                state,
            }
        })
        .collect()
}

fn argo_app(application: &Object, github_host: Option<&str>) -> ArgoApp {
    let status = &application.status;
    let text = |path: &[&str]| {
        str_at(status, path)
            .filter(|s| !s.is_empty())
            .map(str::to_owned)
    };
    let condition = array_at(status, &["conditions"])
        .iter()
        .filter_map(|c| c.get("message").and_then(Value::as_str))
        .find(|m| !m.is_empty())
        .map(str::to_owned);
    let failed_sync = matches!(
        str_at(status, &["operationState", "phase"]),
        Some("Failed" | "Error")
    )
    .then(|| text(&["operationState", "message"]))
    .flatten();
    let revision = text(&["sync", "revision"]);
    let repository = str_at(&application.spec, &["source", "repoURL"]);
    ArgoApp {
        name: application.name().to_owned(),
        sync: text(&["sync", "status"]),
        health: text(&["health", "status"]),
        revision_url: revision
            .as_deref()
            .zip(repository)
            .and_then(|(rev, repo)| crate::links::github_commit(repo, rev, github_host))
            .map(crate::links::Checked::into_string),
        revision,
        last_synced_at: at(status, &["operationState", "finishedAt"]).and_then(time),
        message: condition.or(failed_sync),
    }
}

fn rollout_view(
    rollout: &Object,
    cluster: &[std::sync::Arc<Object>],
    service: &str,
    builds: &Builds<'_>,
) -> RolloutView {
    let status = &rollout.status;
    let (phase, message) = rollout_phase(rollout);
    let strategy = if at(&rollout.spec, &["strategy", "blueGreen"]).is_some() {
        Some(Strategy::BlueGreen)
    } else if at(&rollout.spec, &["strategy", "canary"]).is_some() {
        Some(Strategy::Canary)
    } else {
        None
    };
    let current_step = at(status, &["currentStepIndex"])
        .and_then(Value::as_u64)
        .and_then(|i| u32::try_from(i).ok());
    let steps = steps(rollout, current_step);
    let namespace = rollout.namespace();
    let same_place = |o: &&std::sync::Arc<Object>| o.namespace() == namespace;
    let replica_set = |hash: &str| {
        let found = replica_set_of(cluster.iter().filter(same_place).map(|o| &**o), hash);
        replica_set_view(hash, found, builds)
    };
    let (stable_hash, canary_hash) = rollout_hashes(rollout);
    let stable = stable_hash.map(replica_set);
    let canary = canary_hash
        .filter(|c| Some(*c) != stable_hash)
        .map(replica_set);
    let aborted = at(status, &["abort"]).and_then(Value::as_bool) == Some(true);
    let desired_weight =
        crate::argo::desired_weight(rollout).filter(|_| canary.is_some() && !aborted);
    // A blue-green preview takes no share of traffic: it waits, then takes it all.
    let (canary_weight, stable_weight) = if strategy == Some(Strategy::BlueGreen) {
        (None, None)
    } else {
        crate::argo::actual_weights(
            status,
            stable.as_ref().and_then(|s| s.available),
            canary.as_ref().map(|c| c.available),
            aborted,
        )
    };
    let pause = array_at(status, &["pauseConditions"]).first();
    let paused_since = pause.and_then(|p| p.get("startTime")).and_then(time);
    let pause_reason = pause
        .and_then(|p| p.get("reason"))
        .and_then(Value::as_str)
        .map(str::to_owned);
    let analysis = canary_hash
        .or(stable_hash)
        .map(|current| analysis_runs(cluster, namespace, service, current))
        .unwrap_or_default();
    let mut view = RolloutView {
        name: rollout.name().to_owned(),
        strategy,
        phase,
        message,
        summary: String::new(),
        current_step,
        steps,
        canary_weight,
        stable_weight,
        desired_weight,
        paused_since,
        pause_reason,
        aborted,
        stable,
        canary,
        analysis,
    };
    view.summary = summary(&view);
    view
}

fn steps(rollout: &Object, current: Option<u32>) -> Vec<Step> {
    array_at(&rollout.spec, &["strategy", "canary", "steps"])
        .iter()
        .enumerate()
        .filter_map(|(i, step)| {
            let index = u32::try_from(i).ok()?;
            let status = match current {
                Some(c) if index < c => StepStatus::Done,
                Some(c) if index == c => StepStatus::Current,
                _ => StepStatus::Pending,
            };
            let (kind, weight, duration) = if let Some(w) = step.get("setWeight") {
                let weight = w.as_u64().and_then(|w| u32::try_from(w).ok());
                (StepKind::SetWeight, weight, None)
            } else if let Some(pause) = step.get("pause") {
                let duration = match pause.get("duration") {
                    Some(Value::String(d)) => Some(d.clone()),
                    Some(Value::Number(n)) => Some(format!("{n}s")),
                    _ => None,
                };
                (StepKind::Pause, None, Some(duration))
            } else if step.get("analysis").is_some() {
                (StepKind::Analysis, None, None)
            } else if step.get("experiment").is_some() {
                (StepKind::Experiment, None, None)
            } else {
                (StepKind::Other, None, None)
            };
            Some(Step {
                index,
                kind,
                weight,
                duration,
                status,
            })
        })
        .collect()
}

fn replica_set_view(
    hash: &str,
    replica_set: Option<&Object>,
    builds: &Builds<'_>,
) -> ReplicaSetView {
    let count = |field| replica_set.and_then(|rs| crate::argo::replica_count(rs, field));
    let image = replica_set.and_then(replica_set_image).map(str::to_owned);
    ReplicaSetView {
        replica_set: replica_set.map(|rs| rs.name().to_owned()),
        pod_hash: hash.to_owned(),
        evidence: image.as_deref().map(|i| builds.evidence(i)),
        image,
        replicas: count("replicas"),
        ready: count("readyReplicas"),
        available: replica_set.and_then(crate::argo::available_replicas),
    }
}

/// The AnalysisRuns of the rollout for pod hash `current`, by start then name.
fn analysis_runs(
    cluster: &[std::sync::Arc<Object>],
    namespace: Option<&str>,
    rollout: &str,
    current: &str,
) -> Vec<Analysis> {
    let mut runs: Vec<&Object> = cluster
        .iter()
        .filter(|o| {
            o.kind == "AnalysisRun"
                && o.namespace() == namespace
                && o.label(POD_HASH_LABEL) == Some(current)
                && o.name().starts_with(&format!("{rollout}-"))
        })
        .map(|o| &**o)
        .collect();
    runs.sort_by(|a, b| {
        let started = |o: &Object| at(&o.status, &["startedAt"]).and_then(time);
        started(a)
            .cmp(&started(b))
            .then_with(|| a.name().cmp(b.name()))
    });
    runs.into_iter().map(analysis).collect()
}

fn analysis(run: &Object) -> Analysis {
    let text = |v: &Value, key: &str| {
        v.get(key)
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
            .map(str::to_owned)
    };
    let specs = array_at(&run.spec, &["metrics"]);
    let metrics = array_at(&run.status, &["metricResults"])
        .iter()
        .filter_map(|result| {
            let name = result.get("name")?.as_str()?;
            let spec = specs
                .iter()
                .find(|m| m.get("name").and_then(Value::as_str) == Some(name));
            let from_spec = |key| spec.and_then(|m| text(m, key));
            Some(Metric {
                name: name.to_owned(),
                phase: text(result, "phase"),
                success_condition: from_spec("successCondition"),
                failure_condition: from_spec("failureCondition"),
                failure_limit: spec
                    .and_then(|m| m.get("failureLimit"))
                    .and_then(Value::as_i64),
                measurements: array_at(result, &["measurements"])
                    .iter()
                    .map(|m| Measurement {
                        phase: text(m, "phase"),
                        value: m.get("value").and_then(Value::as_str).and_then(measured),
                        started_at: m.get("startedAt").and_then(time),
                        finished_at: m.get("finishedAt").and_then(time),
                    })
                    .collect(),
            })
        })
        .collect();
    Analysis {
        name: run.name().to_owned(),
        kind: run.label(ROLLOUT_TYPE_LABEL).map(str::to_owned),
        phase: text(&run.status, "phase"),
        message: text(&run.status, "message"),
        metrics,
    }
}

/// The first metric of a failed AnalysisRun that failed, with its last value.
fn failed_metric(rollout: &RolloutView) -> Option<(&Metric, Option<f64>)> {
    rollout
        .analysis
        .iter()
        .filter(|a| matches!(a.phase.as_deref(), Some("Failed" | "Error")))
        .flat_map(|a| &a.metrics)
        .find(|m| matches!(m.phase.as_deref(), Some("Failed" | "Error")))
        .map(|m| {
            let last = m.measurements.iter().rev().find_map(|x| x.value);
            (m, last)
        })
}

/// What the analysis of the current version is doing, in one clause.
fn analysis_words(rollout: &RolloutView) -> Option<String> {
    let running = rollout
        .analysis
        .iter()
        .find(|a| matches!(a.phase.as_deref(), Some("Running" | "Pending")))?;
    let kind = match running.kind.as_deref() {
        Some("Background") => "a background analysis",
        Some("Step") => "a step analysis",
        _ => "an analysis",
    };
    let metrics: Vec<String> = running
        .metrics
        .iter()
        .map(|m| {
            let taken = m.measurements.len();
            let failed = m
                .measurements
                .iter()
                .filter(|x| matches!(x.phase.as_deref(), Some("Failed" | "Error")))
                .count();
            let how = match (taken, failed) {
                (0, _) => "no measurement yet".to_owned(),
                (n, 0) => format!("{n} measurement{}, all passing", plural(n)),
                (n, f) => format!("{n} measurement{}, {f} failing", plural(n)),
            };
            format!("{} ({how})", m.name)
        })
        .collect();
    Some(if metrics.is_empty() {
        format!("{kind} is running")
    } else {
        format!("{kind} is watching {}", metrics.join(" and "))
    })
}

fn plural(n: usize) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}

/// The rollout in plain words.
fn summary(rollout: &RolloutView) -> String {
    let weight = rollout
        .canary_weight
        .map(|w| format!(" at {w}% of traffic"))
        .unwrap_or_default();
    let analysis = analysis_words(rollout)
        .map(|a| format!("; {a}"))
        .unwrap_or_default();
    let image = |rs: &Option<ReplicaSetView>| {
        rs.as_ref()
            .and_then(|r| r.image.clone())
            .map(|i| format!(" ({i})"))
            .unwrap_or_default()
    };
    if rollout.message.as_deref() == Some("waiting for rollout spec update to be observed") {
        return "A change to the rollout was committed; Argo Rollouts has not picked it up yet."
            .to_owned();
    }
    if rollout.aborted || rollout.phase == RolloutPhase::Degraded {
        let why = match failed_metric(rollout) {
            Some((metric, value)) => {
                let value = value
                    .map(|v| format!(" (last value {v})"))
                    .unwrap_or_default();
                let condition = metric
                    .success_condition
                    .as_deref()
                    .map(|c| format!(", which needs {c}"))
                    .unwrap_or_default();
                format!(
                    ": the analysis metric {} failed{value}{condition}",
                    metric.name
                )
            }
            None => rollout
                .message
                .as_deref()
                .map(|m| format!(": {m}"))
                .unwrap_or_default(),
        };
        return if rollout.aborted {
            format!(
                "The rollout was aborted and all traffic is back on the stable version{}{why}.",
                image(&rollout.stable)
            )
        } else {
            format!("The rollout is degraded{why}.")
        };
    }
    match (rollout.strategy, rollout.phase) {
        (Some(Strategy::BlueGreen), RolloutPhase::Paused) => format!(
            "The new version{} is running as a preview, waiting to be promoted; the active version{} takes all traffic{analysis}.",
            image(&rollout.canary),
            image(&rollout.stable)
        ),
        (_, RolloutPhase::Paused) => {
            let current = rollout
                .steps
                .iter()
                .find(|s| s.status == StepStatus::Current);
            let wait = match current.and_then(|s| s.duration.clone()) {
                Some(Some(duration)) => format!(", for a pause of {duration} that ends on its own"),
                Some(None) => ", waiting for someone to promote it".to_owned(),
                None => rollout
                    .pause_reason
                    .as_deref()
                    .map(|r| format!(" ({r})"))
                    .unwrap_or_default(),
            };
            format!("The canary{} is paused{weight}{wait}{analysis}.", image(&rollout.canary))
        }
        (_, RolloutPhase::Progressing) => {
            let at_step = match (rollout.current_step, rollout.steps.len()) {
                (Some(c), n) if n > 0 => format!(" (step {} of {n})", (c as usize + 1).min(n)),
                _ => String::new(),
            };
            let what = rollout
                .message
                .as_deref()
                .filter(|m| m.starts_with("waiting"))
                .map(|m| format!(": {m}"))
                .unwrap_or_default();
            if rollout.canary.is_some() {
                format!(
                    "The canary{} is progressing{weight}{at_step}{what}{analysis}.",
                    image(&rollout.canary)
                )
            } else {
                format!("The rollout is progressing{what}.")
            }
        }
        (_, RolloutPhase::Healthy) => match &rollout.canary {
            None => format!("Fully promoted: all traffic on the stable version{}.", image(&rollout.stable)),
            Some(_) => format!("Healthy, with a canary{weight}{analysis}."),
        },
        _ => "Tower cannot tell what the rollout is doing: its status says nothing it knows.".to_owned(),
    }
}

/// The environment's attention: its state's ([`crate::state`], the fleet cell's words);
/// a failed analysis names its metric. No Application: nothing deploys it.
fn attention(
    state: Option<&crate::state::EnvState>,
    rollout: Option<&RolloutView>,
) -> Option<Attention> {
    let mut attention = match state {
        Some(state) => state.attention(),
        None => Some(Attention {
            severity: Severity::Attention,
            reason: "No Argo CD Application deploys it".to_owned(),
        }),
    };
    if let Some((metric, _)) = rollout.and_then(failed_metric) {
        let said = format!("analysis metric {} failed", metric.name);
        match &mut attention {
            Some(a) => {
                a.severity = a.severity.max(Severity::Failing);
                a.reason = format!("{}; {said}", a.reason);
            }
            None => {
                attention = Some(Attention {
                    severity: Severity::Failing,
                    reason: said,
                });
            }
        }
    }
    attention
}
