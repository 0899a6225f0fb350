//! One truth per service and environment: what runs there (the stable version), what is
//! arriving (a canary or a preview, at its actual and desired weight), and every trouble
//! with its source and words — Argo CD's health and sync, the Rollout, the pods, the
//! autoscaler, the synchronised secrets. Expected waits (a timed pause inside its duration,
//! a sync or a canary in progress) are said, never counted as trouble.
//!
//! The fleet's cells are these states, and the Deployments tab's attention is theirs: no
//! page decides "what runs" or "is it healthy" on its own.

use std::collections::BTreeMap;

use chrono::{DateTime, Duration, Utc};
use serde::{Deserialize, Serialize};

use crate::argo::{word, HealthStatus, RolloutPhase, SyncStatus};
use crate::cicd::Targets;
use crate::kube::{array_at, at, str_at, Object};
use crate::slo::Readings;
use crate::snapshot::Snapshot;
use crate::workload::Pod;

/// How long a pod may be not ready before it is trouble (a new pod starting is not).
pub const NOT_READY_GRACE_MINUTES: i64 = 5;

/// How long after a container was killed for its memory that still counts as trouble.
pub const OOM_REMEMBERED_HOURS: i64 = 24;

/// How loudly something asks for attention.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// Something is moving (a sync, a canary step); worth a glance, not an alarm.
    Notice,
    /// Amber: something is off and a person may need to act.
    Attention,
    /// Broken.
    Failing,
}

/// Why a cell is not calm, in plain words: its loudest trouble's severity and every
/// trouble's words.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Attention {
    pub severity: Severity,
    pub reason: String,
}

/// What says there is trouble.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Source {
    ArgoCd,
    Rollout,
    Pods,
    Autoscaler,
    Secrets,
    /// The service level objectives, from Prometheus' figures.
    Slo,
    /// A cloud target's deploy runs (AWS ECS, Lambda, Azure Container Apps).
    Deploy,
    /// The builds of the default branch (Tekton), said on the first environment.
    Build,
    /// The resources Crossplane composed for the service in that environment.
    Composed,
    #[serde(other)]
    Other,
}

/// One thing wrong in an environment, with what says so.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Trouble {
    pub source: Source,
    pub severity: Severity,
    pub words: String,
}

/// A Rollout's position.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RolloutState {
    pub phase: RolloutPhase,
    /// The controller's own message, e.g. `CanaryPauseStep`.
    pub message: Option<String>,
    /// A blue-green rollout's words differ: a preview waits, no canary takes traffic.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub blue_green: bool,
}

/// A version on its way in: the canary (or blue-green preview) beside the stable one.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Arriving {
    /// Its image (without digest), when its ReplicaSet is seen.
    pub image: Option<String>,
    /// Its actual share of traffic, as `kubectl argo rollouts get` reports it (0 while no
    /// pod of it is available); `None` when unknown.
    pub weight: Option<u32>,
    /// The share its steps have set so far (`setWeight`).
    pub desired_weight: Option<u32>,
    /// The step it is at (`status.currentStepIndex`, 0-based) of `steps`.
    pub step: Option<u32>,
    pub steps: u32,
}

/// One service in one environment.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EnvState {
    pub environment: String,
    /// The namespace the Application deploys to, when it names one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// The cloud target its deploy runs deploy it to, when no Argo CD Application does
    /// (then `sync` and `health` are `Unknown`: Argo CD does not know it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cloud: Option<crate::cloud::CloudTarget>,
    /// Argo CD `status.sync.status`.
    pub sync: SyncStatus,
    /// Argo CD `status.health.status`.
    pub health: HealthStatus,
    /// What runs: the stable version's image (without digest) — never a canary's, nor one
    /// aborted; without a Rollout, the image Argo CD reports. `None` when not known.
    pub running: Option<String>,
    /// A canary or preview on its way in; `None` when none is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arriving: Option<Arriving>,
    /// The service's Argo Rollout there, if it has one.
    pub rollout: Option<RolloutState>,
    /// Everything wrong there, loudest first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub troubles: Vec<Trouble>,
    /// What is expected to pass by itself (a timed pause, a sync in progress), in words.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub waits: Vec<String>,
    /// When the judgement changes by time alone, if it will (a timed pause runs out, a
    /// pod's start grace ends, an OOMKill is forgotten, a secret turns stale): the state
    /// must be judged again then, whether or not anything else moves. Not on the wire.
    #[serde(skip)]
    pub until: Option<DateTime<Utc>>,
}

impl EnvState {
    /// Adds `more` troubles, keeping them loudest first (equal ones in the order found).
    pub fn add_troubles(&mut self, more: impl IntoIterator<Item = Trouble>) {
        self.troubles.extend(more);
        self.troubles.sort_by_key(|t| std::cmp::Reverse(t.severity));
    }

    /// The stable version's tag (`1.4.0-abc1234`), when known.
    pub fn running_tag(&self) -> Option<&str> {
        self.running.as_deref().map(crate::image::short)
    }

    /// Whether it needs someone, and why: its loudest trouble and every trouble's words;
    /// with no trouble, what it is waiting for (a notice). `None` means calm.
    pub fn attention(&self) -> Option<Attention> {
        let severity = self.troubles.iter().map(|t| t.severity).max();
        let (severity, words): (Severity, Vec<&str>) = match severity {
            Some(severity) => (
                severity,
                self.troubles.iter().map(|t| t.words.as_str()).collect(),
            ),
            None if !self.waits.is_empty() => (
                Severity::Notice,
                self.waits.iter().map(String::as_str).collect(),
            ),
            None => return None,
        };
        Some(Attention {
            severity,
            reason: words.join("; "),
        })
    }
}

/// One service's state in each environment (`tower state`'s answer).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ServiceState {
    pub service: String,
    pub environments: Vec<EnvState>,
}

/// `service`'s state in each environment an Argo CD Application of the platform deploys it
/// to (labelled with the app and the environment, in namespace `argocd` on the control
/// plane), in promotion order.
pub fn derive(snapshot: &Snapshot, service: &str) -> Vec<EnvState> {
    let mut states: Vec<EnvState> = of_all(snapshot)
        .into_iter()
        .filter(|(app, _)| app == service)
        .map(|(_, state)| state)
        .collect();
    let mut order: Vec<String> = states.iter().map(|s| s.environment.clone()).collect();
    crate::hangar::sort_environments(&mut order);
    states.sort_by_key(|s| order.iter().position(|e| *e == s.environment));
    states
}

/// What an environment's secrets say: each one's trouble, and when the first turns stale.
type Secrets = (Vec<String>, Option<DateTime<Utc>>);

/// Every (app, state) the snapshot's labelled Applications deploy, in no particular order.
pub fn of_all(snapshot: &Snapshot) -> Vec<(String, EnvState)> {
    let control_plane = snapshot.control_plane_cluster.as_str();
    // Each namespace's objects, and what composed resources say of their environment, read
    // in one pass.
    let mut places: BTreeMap<(&str, &str), Vec<&Object>> = BTreeMap::new();
    let mut composed: Vec<Composed<'_>> = Vec::new();
    for (cluster, objects) in &snapshot.clusters {
        for object in objects.iter() {
            if let Some(namespace) = object.namespace() {
                places
                    .entry((cluster.as_str(), namespace))
                    .or_default()
                    .push(object);
            }
            composed.extend(composed_in_environment(object));
        }
    }
    // Each environment's secrets: what is wrong with them, and when one turns stale.
    let mut secrets: BTreeMap<(&str, String), Secrets> = BTreeMap::new();
    for (service, secret) in crate::config::secret_syncs(snapshot) {
        let Some(env) = secret.environment.clone() else {
            continue;
        };
        let (words, until) = secrets.entry((service, env)).or_default();
        if let Some(why) = crate::config::secret_attention(&secret) {
            words.push(why);
        }
        if !secret.stale {
            // Stale just after it passes twice its interval.
            let from = crate::config::stale_from(secret.last_refresh, secret.refresh_interval_sec);
            *until = soonest(*until, from.map(|from| from + Duration::seconds(1)));
        }
    }
    let applications = snapshot
        .clusters
        .get(control_plane)
        .into_iter()
        .flatten()
        .filter(|o| {
            o.kind == "Application"
                && o.group() == "argoproj.io"
                && o.namespace() == Some(crate::hangar::ARGOCD_NAMESPACE)
        });
    let mut out = Vec::new();
    for application in applications {
        let (Some(app), Some(environment)) = (
            application.label(crate::hangar::APP_LABEL),
            application.label(crate::hangar::ENVIRONMENT_LABEL),
        ) else {
            continue;
        };
        let destination = |field| str_at(&application.spec, &["destination", field]);
        // An Application deploying "in-cluster" (by server URL) deploys to the control plane.
        let cluster = destination("name").unwrap_or(control_plane);
        let here: &[&Object] = destination("namespace")
            .and_then(|ns| places.get(&(cluster, ns)))
            .map_or(&[], Vec::as_slice);
        let (secrets, stale_at) = secrets
            .remove(&(app, environment.to_owned()))
            .unwrap_or_default();
        let mut state = env_state(app, environment, application, here, &secrets, snapshot.now);
        state.until = soonest(state.until, stale_at);
        judge_objectives(snapshot, app, &mut state);
        out.push((app.to_owned(), state));
    }
    // The resources composed for an environment (labelled with it, or in its namespace).
    for (service, environment, said) in composed {
        if let Some((_, state)) = out
            .iter_mut()
            .find(|(app, s)| app == service && s.environment == environment)
        {
            match said {
                Ok(trouble) => state.add_troubles([trouble]),
                Err(wait) => state.waits.push(wait),
            }
        }
    }
    // A default branch that does not build is said where its builds would arrive first.
    for ((cluster, namespace), objects) in &places {
        if *cluster != control_plane {
            continue;
        }
        let Some((service, crate::hangar::NamespaceRole::Cicd)) =
            crate::hangar::namespace_owner(namespace)
        else {
            continue;
        };
        let Some(run) = crate::pipelines::failed_default_build(objects.iter().copied()) else {
            continue;
        };
        if let Some((_, first)) =
            out.iter_mut()
                .filter(|(app, _)| app == service)
                .min_by(|(_, a), (_, b)| {
                    let rank = |s: &EnvState| crate::hangar::promotion_rank(&s.environment);
                    (rank(a), &a.environment).cmp(&(rank(b), &b.environment))
                })
        {
            first.add_troubles([build_trouble(&run)]);
        }
    }
    out
}

/// A composed resource's service, environment and what it says ([`composed`]).
type Composed<'o> = (&'o str, &'o str, Result<Trouble, String>);

/// What `object` says of its service's environment when it is a resource composed for one
/// (labelled `crossplane.io/composite` with the service, and `hangar.io/environment` or in
/// the environment's namespace) and not synced or not ready. Secrets and Argo CD's objects
/// are judged by their own rules.
fn composed_in_environment(object: &Object) -> Option<Composed<'_>> {
    if matches!(object.group(), "external-secrets.io" | "argoproj.io") {
        return None;
    }
    let service = object.label(crate::hangar::COMPOSITE_LABEL)?;
    let environment = object.label(crate::hangar::ENVIRONMENT_LABEL).or_else(|| {
        match crate::hangar::namespace_owner(object.namespace()?)? {
            (owner, crate::hangar::NamespaceRole::Environment(env)) if owner == service => {
                Some(env)
            }
            _ => None,
        }
    })?;
    Some((service, environment, composed(object)?))
}

/// What a composed resource says when it is not ready or not synced (Crossplane's `Ready`
/// and `Synced`): a trouble with Crossplane's reason and message, or, while it is being
/// created, a wait (`Err`). `None` when it is ready and synced, or says nothing.
fn composed(object: &Object) -> Option<Result<Trouble, String>> {
    use crate::kube::ConditionStatus::False;
    let named = format!("{} {}", object.kind, object.name());
    let because = |c: crate::kube::Condition<'_>| {
        let reason = c.reason.unwrap_or("no reason given");
        match c.message {
            Some(message) => format!("{reason}: {message}"),
            None => reason.to_owned(),
        }
    };
    let trouble = |words: String| {
        Some(Ok(Trouble {
            source: Source::Composed,
            severity: Severity::Attention,
            words,
        }))
    };
    if let Some(synced) = object.condition("Synced").filter(|c| c.status == False) {
        return trouble(format!("{named} is not synced ({})", because(synced)));
    }
    let ready = object.condition("Ready").filter(|c| c.status == False)?;
    if ready.reason == Some("Creating") {
        return Some(Err(format!("{named} is being created")));
    }
    trouble(format!("{named} is not ready ({})", because(ready)))
}

/// The words for a failed build of the default branch: the run, and Tekton's message.
fn build_trouble(run: &crate::pipelines::RunSummary) -> Trouble {
    let how = if run.outcome == crate::pipelines::Outcome::TimedOut {
        "timed out"
    } else {
        "failed"
    };
    let mut words = format!(
        "the newest build of {} {how} ({})",
        crate::hangar::DEFAULT_BRANCH,
        run.name
    );
    if let Some(message) = run.message.as_deref().filter(|m| !m.is_empty()) {
        words.push_str(": ");
        words.push_str(message);
    }
    Trouble {
        source: Source::Build,
        severity: Severity::Attention,
        words,
    }
}

/// The state of `app` in `environment` from its Application and the objects of the
/// namespace it deploys to (`here`).
fn env_state(
    app: &str,
    environment: &str,
    application: &Object,
    here: &[&Object],
    secrets: &[String],
    now: DateTime<Utc>,
) -> EnvState {
    let status = &application.status;
    let sync = word(status, &["sync", "status"]).unwrap_or(SyncStatus::Unknown);
    let health = word(status, &["health", "status"]).unwrap_or(HealthStatus::Unknown);
    let rollout = here
        .iter()
        .copied()
        .find(|o| o.kind == "Rollout" && o.group() == "argoproj.io" && o.name() == app);
    let mut troubles = Vec::new();
    let mut waits = Vec::new();
    let mut state = EnvState {
        environment: environment.to_owned(),
        namespace: str_at(&application.spec, &["destination", "namespace"]).map(str::to_owned),
        cloud: None,
        sync,
        health,
        running: None,
        arriving: None,
        rollout: None,
        troubles: Vec::new(),
        waits: Vec::new(),
        until: None,
    };
    match rollout {
        Some(rollout) => {
            let (phase, message) = crate::argo::rollout_phase(rollout);
            let blue_green = at(&rollout.spec, &["strategy", "blueGreen"]).is_some();
            let (stable_hash, current_hash) = crate::argo::rollout_hashes(rollout);
            let set = |hash: &str| crate::argo::replica_set_of(here.iter().copied(), hash);
            let stable = stable_hash.and_then(set);
            let image = |rs: Option<&Object>| {
                rs.and_then(crate::argo::replica_set_image)
                    .map(|i| crate::image::without_digest(i).to_owned())
            };
            state.running = image(stable);
            let aborted =
                at(&rollout.status, &["abort"]).and_then(serde_json::Value::as_bool) == Some(true);
            let canary_hash = current_hash.filter(|c| Some(*c) != stable_hash);
            let arriving = canary_hash.filter(|_| !aborted).map(|hash| {
                let canary = set(hash);
                let (weight, _) = crate::argo::actual_weights(
                    &rollout.status,
                    stable.and_then(crate::argo::available_replicas),
                    Some(canary.and_then(crate::argo::available_replicas)),
                    aborted,
                );
                Arriving {
                    image: image(canary),
                    weight: weight.filter(|_| !blue_green),
                    desired_weight: crate::argo::desired_weight(rollout).filter(|_| !blue_green),
                    step: at(&rollout.status, &["currentStepIndex"])
                        .and_then(serde_json::Value::as_u64)
                        .and_then(|i| u32::try_from(i).ok()),
                    steps: u32::try_from(
                        array_at(&rollout.spec, &["strategy", "canary", "steps"]).len(),
                    )
                    .unwrap_or(u32::MAX),
                }
            });
            // An aborted canary is named: what was tried and sent back.
            let aborted_image = canary_hash
                .filter(|_| aborted)
                .and_then(|hash| image(set(hash)));
            state.until = rollout_troubles(
                rollout,
                (phase, blue_green),
                (arriving.as_ref(), aborted_image.as_deref()),
                now,
                (&mut troubles, &mut waits),
            );
            state.arriving = arriving;
            state.rollout = Some(RolloutState {
                phase,
                message,
                blue_green,
            });
        }
        None => {
            state.running = at(status, &["summary", "images"])
                .and_then(|images| images.get(0))
                .and_then(serde_json::Value::as_str)
                .map(|i| crate::image::without_digest(i).to_owned());
        }
    }
    argo_troubles(&state, &mut troubles, &mut waits);
    let pods: Vec<Pod> = here
        .iter()
        .filter(|o| crate::workload::is_rollout_pod(o))
        .map(|o| crate::workload::pod(o))
        .collect();
    state.until = soonest(state.until, pod_troubles(&pods, now, &mut troubles));
    if let Some(hpa) = here
        .iter()
        .find(|o| o.kind == "HorizontalPodAutoscaler")
        .map(|o| crate::workload::autoscaler(o))
    {
        autoscaler_troubles(&hpa, &mut troubles);
    }
    for why in secrets {
        troubles.push(Trouble {
            source: Source::Secrets,
            severity: Severity::Attention,
            words: why.clone(),
        });
    }
    state.add_troubles(troubles);
    state.waits = waits;
    state
}

/// `service`'s state in each environment its deploy runs deploy it to, when it runs on a
/// cloud target and no Argo CD Application deploys it ([`crate::cloud`]): what its last
/// successful deploy there put (running), a deploy under way (arriving, a wait), a failed
/// deploy no newer success has fixed (failing). Environments in promotion order.
pub fn of_cloud(snapshot: &Snapshot, service: &str) -> Vec<EnvState> {
    let deploys = crate::cloud::derive_cloud_deploys(snapshot, service);
    let Some(target) = deploys.target else {
        return Vec::new();
    };
    let mut environments: Vec<String> = deploys
        .history
        .iter()
        .filter_map(|r| r.environment.clone())
        .collect();
    crate::hangar::sort_environments(&mut environments);
    environments.dedup();
    let image = |run: &crate::cloud::DeployRun| {
        run.image
            .as_deref()
            .map(|i| crate::image::without_digest(i).to_owned())
    };
    environments
        .into_iter()
        .map(|environment| {
            // Newest first, as the history is.
            let runs: Vec<&crate::cloud::DeployRun> = deploys
                .history
                .iter()
                .filter(|r| r.environment.as_deref() == Some(environment.as_str()))
                .collect();
            let tag = |run: &crate::cloud::DeployRun| {
                image(run).map_or_else(
                    || "an image not known".to_owned(),
                    |i| crate::image::short(&i).to_owned(),
                )
            };
            let crate::cloud::Standing {
                last_success,
                in_progress: under_way,
                latest_failure: unfixed,
            } = crate::cloud::standing(runs.iter().copied());
            let running = last_success.and_then(image);
            let troubles = unfixed
                .map(|run| Trouble {
                    source: Source::Deploy,
                    severity: Severity::Failing,
                    words: format!(
                        "Deploy of {} to {} failed{}",
                        tag(run),
                        target.title(),
                        run.failed_task
                            .as_deref()
                            .map(|t| format!(" at {t}"))
                            .unwrap_or_default()
                    ),
                })
                .into_iter()
                .collect();
            let waits = under_way
                .map(|run| format!("Deploying {} to {}", tag(run), target.title()))
                .into_iter()
                .collect();
            EnvState {
                environment,
                namespace: None,
                cloud: Some(target),
                sync: SyncStatus::Unknown,
                health: HealthStatus::Unknown,
                running,
                arriving: under_way.map(|run| Arriving {
                    image: image(run),
                    weight: None,
                    desired_weight: None,
                    step: None,
                    steps: 0,
                }),
                rollout: None,
                troubles,
                waits,
                until: None,
            }
        })
        .collect()
}

/// Judges `state`'s objectives by what Prometheus last answered for `app` there
/// ([`Snapshot::measured`]) against the targets of its `cicd.yaml` (or Tower's defaults),
/// in place of any earlier judgement. Not measured: no objective trouble is said (unknown,
/// not met).
pub fn judge_objectives(snapshot: &Snapshot, app: &str, state: &mut EnvState) {
    state.troubles.retain(|t| t.source != Source::Slo);
    let Some(readings) = snapshot
        .measured
        .get(app)
        .and_then(|m| m.get(&state.environment))
    else {
        return;
    };
    let targets = snapshot.cicd_of(app).slo.unwrap_or_default();
    state.add_troubles(objective_troubles(readings, &targets));
}

/// What the objectives say against `targets` (the SRE workbook's alerts, [`crate::slo`]): a
/// page alert firing is failing; a ticket alert firing, the month's error budget spent, or
/// a latency over the last hour above its objective needs attention.
pub fn objective_troubles(readings: &Readings, targets: &Targets) -> Vec<Trouble> {
    use crate::slo::{millis, Measure};
    let mut troubles = Vec::new();
    let mut trouble = |severity, words: String| {
        troubles.push(Trouble {
            source: Source::Slo,
            severity,
            words,
        });
    };
    let ratios = readings.error_ratios();
    // The loudest firing alert speaks for the burning (a page alert fires with its ticket).
    let firing = crate::slo::alerts(&ratios, &readings.requests(), targets.availability)
        .into_iter()
        .filter(|a| a.firing == Some(true))
        .min_by_key(|a| a.alert.severity != crate::slo::Severity::Page);
    if let Some(a) = firing {
        let burn = |b: Option<f64>| b.map_or_else(|| "?".to_owned(), |b| format!("{b:.1}"));
        trouble(
            match a.alert.severity {
                crate::slo::Severity::Page => Severity::Failing,
                crate::slo::Severity::Ticket => Severity::Attention,
            },
            format!(
                "Error budget burning {}× over {} and {}× over {} ({} alert)",
                burn(a.long_burn),
                a.alert.long,
                burn(a.short_burn),
                a.alert.short,
                a.alert.severity.word()
            ),
        );
    }
    if crate::slo::budget_left(ratios.d30, targets.availability).is_some_and(|left| left < 0.0) {
        trouble(
            Severity::Attention,
            "Error budget for 30 days spent".to_owned(),
        );
    }
    let over: Vec<String> = [
        ("p95", Measure::LatencyP95, targets.latency_p95_ms),
        ("p99", Measure::LatencyP99, targets.latency_p99_ms),
    ]
    .into_iter()
    .filter_map(|(name, measure, target_ms)| {
        let seconds = readings.figure(measure, "1h")?;
        (seconds * 1000.0 > target_ms).then(|| {
            format!(
                "{name} {} (objective {})",
                millis(seconds),
                millis(target_ms / 1000.0)
            )
        })
    })
    .collect();
    if !over.is_empty() {
        trouble(
            Severity::Attention,
            format!("Latency over the last hour: {}", over.join(", ")),
        );
    }
    troubles
}

/// What Argo CD's words add to what the Rollout said: its health when the Rollout does not
/// explain it, and its sync.
fn argo_troubles(state: &EnvState, troubles: &mut Vec<Trouble>, waits: &mut Vec<String>) {
    let mut trouble = |severity, words: &str| {
        troubles.push(Trouble {
            source: Source::ArgoCd,
            severity,
            words: words.to_owned(),
        });
    };
    // Argo CD derives an app's health from its Rollout (a paused canary is "Suspended"), so
    // when the rollout is mid-way or failing its own words say it better.
    let rollout_explains_health = state
        .rollout
        .as_ref()
        .is_some_and(|r| !matches!(r.phase, RolloutPhase::Healthy | RolloutPhase::Unknown));
    match state.health {
        HealthStatus::Healthy => {}
        HealthStatus::Progressing | HealthStatus::Degraded | HealthStatus::Suspended
            if rollout_explains_health => {}
        HealthStatus::Degraded => trouble(Severity::Failing, "Degraded"),
        HealthStatus::Missing => trouble(Severity::Failing, "Resources missing"),
        HealthStatus::Progressing => waits.push("Progressing".to_owned()),
        HealthStatus::Suspended => trouble(Severity::Attention, "Suspended"),
        HealthStatus::Unknown => trouble(Severity::Attention, "Health unknown"),
    }
    match state.sync {
        SyncStatus::Synced => {}
        SyncStatus::OutOfSync => trouble(Severity::Attention, "Out of sync with Git"),
        SyncStatus::Unknown => trouble(Severity::Attention, "Sync status unknown"),
    }
}

/// What a Rollout's position says: a timed pause inside its duration and a canary moving
/// are waits; a pause waiting for a person, one past its duration, a degraded rollout (an
/// aborted canary named by its version) are trouble.
fn rollout_troubles(
    rollout: &Object,
    (phase, blue_green): (RolloutPhase, bool),
    (arriving, aborted): (Option<&Arriving>, Option<&str>),
    now: DateTime<Utc>,
    (troubles, waits): (&mut Vec<Trouble>, &mut Vec<String>),
) -> Option<DateTime<Utc>> {
    let mut until = None;
    let at_weight = arriving
        .and_then(|a| a.weight)
        // No traffic on a canary (not started) is not a weight to show.
        .filter(|w| *w > 0)
        .map(|w| format!(" at {w}% traffic"))
        .unwrap_or_default();
    let mut trouble = |severity, words: String| {
        troubles.push(Trouble {
            source: Source::Rollout,
            severity,
            words,
        });
    };
    match phase {
        RolloutPhase::Healthy => {}
        RolloutPhase::Paused if blue_green => trouble(
            Severity::Attention,
            "Preview waiting for promotion".to_owned(),
        ),
        RolloutPhase::Paused => match timed_pause(rollout) {
            Some((since, length)) if now < since + length => {
                until = Some(since + length);
                waits.push(format!(
                    "Canary paused{at_weight}, a timed pause of {}",
                    words_of(length)
                ));
            }
            Some((_, length)) => trouble(
                Severity::Attention,
                format!(
                    "Canary paused{at_weight} past its {} pause",
                    words_of(length)
                ),
            ),
            None => trouble(Severity::Attention, format!("Canary paused{at_weight}")),
        },
        RolloutPhase::Progressing => waits.push(format!(
            "{} progressing{at_weight}",
            if blue_green {
                "Blue-green rollout"
            } else {
                "Canary"
            }
        )),
        RolloutPhase::Degraded => match aborted {
            Some(image) => trouble(
                Severity::Failing,
                format!(
                    "Canary {} aborted: all traffic back on the stable version",
                    crate::image::short(image)
                ),
            ),
            None => trouble(Severity::Failing, format!("Rollout degraded{at_weight}")),
        },
        RolloutPhase::Unknown => {
            trouble(Severity::Attention, "Rollout state unknown".to_owned());
        }
    }
    until
}

/// When the canary's current step is a pause with a duration: when it began and how long
/// it lasts.
fn timed_pause(rollout: &Object) -> Option<(DateTime<Utc>, Duration)> {
    let index = at(&rollout.status, &["currentStepIndex"])?.as_u64()?;
    let step = array_at(&rollout.spec, &["strategy", "canary", "steps"])
        .get(usize::try_from(index).ok()?)?;
    let seconds = match step.get("pause")?.get("duration")? {
        serde_json::Value::String(text) => crate::config::go_duration(text)?,
        serde_json::Value::Number(n) => n.as_i64()?,
        _ => return None,
    };
    let since = array_at(&rollout.status, &["pauseConditions"])
        .iter()
        .filter(|c| c.get("reason").and_then(serde_json::Value::as_str) == Some("CanaryPauseStep"))
        .find_map(|c| c.get("startTime").and_then(crate::kube::time))?;
    Some((since, Duration::seconds(seconds)))
}

/// A pause's length in words: `10m`, `1h 30m`.
fn words_of(length: Duration) -> String {
    let seconds = length.num_seconds();
    match seconds {
        s if s % 3600 == 0 && s > 0 => format!("{}h", s / 3600),
        s if s % 60 == 0 && s > 0 => format!("{}m", s / 60),
        s => crate::time::compact_duration(s),
    }
}

/// What the pods say: a container killed for its memory lately, one crash-looping or
/// failing to pull its image, pods not ready past a start's grace.
/// Returns when the pods' judgement changes by time alone (a grace ends, an OOMKill is
/// forgotten).
fn pod_troubles(
    pods: &[Pod],
    now: DateTime<Utc>,
    troubles: &mut Vec<Trouble>,
) -> Option<DateTime<Utc>> {
    let mut until = None;
    let mut trouble = |severity, words: String| {
        troubles.push(Trouble {
            source: Source::Pods,
            severity,
            words,
        });
    };
    for pod in pods {
        if let Some(waiting) = pod.waiting.as_deref().filter(|w| w.ends_with("BackOff")) {
            trouble(Severity::Failing, format!("pod {} in {waiting}", pod.name));
        }
        let forgotten = pod
            .last_termination
            .as_ref()
            .filter(|t| t.reason == "OOMKilled")
            .and_then(|t| t.at)
            .map(|at| at + Duration::hours(OOM_REMEMBERED_HOURS))
            .filter(|forgotten| now < *forgotten);
        if let Some(forgotten) = forgotten {
            until = soonest(until, Some(forgotten));
            let times = match pod.restarts {
                0 | 1 => String::new(),
                n => format!(" ({n} restarts)"),
            };
            trouble(
                Severity::Attention,
                format!("pod {} OOMKilled{times}", pod.name),
            );
        }
    }
    let mut not_ready = 0;
    for pod in pods {
        let (ready, all) = pod.ready.split_once('/').unwrap_or(("0", "0"));
        let starting = ready != all
            && pod
                .waiting
                .as_deref()
                .is_none_or(|w| !w.ends_with("BackOff"));
        let graced = pod
            .created_at
            .map(|t| t + Duration::minutes(NOT_READY_GRACE_MINUTES));
        match graced {
            Some(graced) if starting && now > graced => not_ready += 1,
            // Not ready past the grace: judged again just after it ends.
            Some(graced) if starting => {
                until = soonest(until, Some(graced + Duration::seconds(1)));
            }
            _ => {}
        }
    }
    match not_ready {
        0 => {}
        1 => trouble(Severity::Attention, "1 pod not ready".to_owned()),
        n => trouble(Severity::Attention, format!("{n} pods not ready")),
    }
    until
}

/// The sooner of two instants, either unknown.
fn soonest(a: Option<DateTime<Utc>>, b: Option<DateTime<Utc>>) -> Option<DateTime<Utc>> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

/// What the autoscaler says: it wants more pods than run, or it is at its maximum.
fn autoscaler_troubles(hpa: &crate::workload::Autoscaler, troubles: &mut Vec<Trouble>) {
    let words = match (hpa.current, hpa.desired, hpa.max) {
        (Some(current), Some(desired), _) if current < desired => {
            Some(format!("autoscaler wants {desired} pods, {current} run"))
        }
        (Some(current), Some(desired), Some(max)) if current >= max && desired >= max => {
            Some(format!("autoscaler at its maximum ({max} pods)"))
        }
        _ => None,
    };
    if let Some(words) = words {
        troubles.push(Trouble {
            source: Source::Autoscaler,
            severity: Severity::Attention,
            words,
        });
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{json, Value};

    use super::*;

    const NOW: &str = "2026-11-30T10:00:00Z";

    /// `pay` in prod: its Application (`sync`, `health`), its Rollout (`rollout` status and
    /// steps), stable ReplicaSet `aaa` running 1.4.0 and canary `bbb` running 1.5.0, and
    /// `more` objects in its namespace.
    fn prod(sync: &str, health: &str, rollout: Value, more: Vec<Value>) -> EnvState {
        let mut prod = vec![
            json!({"apiVersion": "argoproj.io/v1alpha1", "kind": "Rollout",
                   "metadata": {"name": "pay", "namespace": "app-pay-prod"},
                   "spec": {"strategy": {"canary": {"steps": [
                       {"setWeight": 20}, {"pause": {"duration": "10m"}},
                       {"setWeight": 40}, {"pause": {}}]}}},
                   "status": rollout}),
            json!({"apiVersion": "apps/v1", "kind": "ReplicaSet",
                   "metadata": {"name": "pay-aaa", "namespace": "app-pay-prod",
                                "labels": {"rollouts-pod-template-hash": "aaa"}},
                   "spec": {"template": {"spec": {"containers": [
                       {"name": "app", "image": "ghcr.io/acme/pay:1.4.0-abc1234"}]}}},
                   "status": {"availableReplicas": 3}}),
            json!({"apiVersion": "apps/v1", "kind": "ReplicaSet",
                   "metadata": {"name": "pay-bbb", "namespace": "app-pay-prod",
                                "labels": {"rollouts-pod-template-hash": "bbb"}},
                   "spec": {"template": {"spec": {"containers": [
                       {"name": "app", "image": "ghcr.io/acme/pay:1.5.0-def5678@sha256:00"}]}}},
                   "status": {"availableReplicas": 1}}),
        ];
        prod.extend(more);
        let snapshot = Snapshot::from_json(
            &json!({
                "now": NOW,
                "controlPlaneCluster": "dev",
                "clusters": {
                    "dev": [
                        {"apiVersion": "argoproj.io/v1alpha1", "kind": "Application",
                         "metadata": {"name": "pay-prod", "namespace": "argocd",
                                      "labels": {"hangar.io/app": "pay", "hangar.io/environment": "prod"}},
                         "spec": {"destination": {"name": "prod", "namespace": "app-pay-prod"}},
                         "status": {"sync": {"status": sync}, "health": {"status": health}}}
                    ],
                    "prod": prod
                }
            })
            .to_string(),
        )
        .unwrap();
        let mut states = derive(&snapshot, "pay");
        assert_eq!(states.len(), 1);
        states.remove(0)
    }

    fn paused(step: u32, since: &str) -> Value {
        json!({"phase": "Paused", "message": "CanaryPauseStep", "stableRS": "aaa",
               "currentPodHash": "bbb", "currentStepIndex": step,
               "pauseConditions": [{"reason": "CanaryPauseStep", "startTime": since}]})
    }

    fn severity(state: &EnvState) -> Option<Severity> {
        state.attention().map(|a| a.severity)
    }

    /// A failed build of `main` is said on the first environment alone; a newer success, a
    /// cancelled build or a failed pull-request run is not a trouble.
    #[test]
    fn a_failed_build_of_main_is_amber_on_the_first_environment() {
        let app = |env: &str| {
            json!({"apiVersion": "argoproj.io/v1alpha1", "kind": "Application",
                   "metadata": {"name": format!("pay-{env}"), "namespace": "argocd",
                                "labels": {"hangar.io/app": "pay", "hangar.io/environment": env}},
                   "spec": {"destination": {"name": "dev", "namespace": format!("app-pay-{env}")}},
                   "status": {"sync": {"status": "Synced"}, "health": {"status": "Healthy"}}})
        };
        // A run started `minute` minutes past nine; `event`: Pipelines-as-Code's, or none.
        let run = |name: &str, minute: u32, event: Option<&str>, reason: &str| {
            let mut labels = json!({"tekton.dev/pipeline": "build"});
            if let Some(event) = event {
                labels["pipelinesascode.tekton.dev/event-type"] = json!(event);
                labels["pipelinesascode.tekton.dev/branch"] = json!("main");
            }
            let ok = if reason == "Succeeded" {
                "True"
            } else {
                "False"
            };
            json!({"apiVersion": "tekton.dev/v1", "kind": "PipelineRun",
                   "metadata": {"name": name, "namespace": "app-pay-cicd", "labels": labels},
                   "status": {"startTime": format!("2026-11-30T09:{minute:02}:00Z"),
                              "completionTime": format!("2026-11-30T09:{:02}:00Z", minute + 5),
                              "conditions": [{"type": "Succeeded", "status": ok, "reason": reason,
                                              "message": "Tasks Completed: 4 (Failed: 1, Cancelled 0), Skipped: 0"}]}})
        };
        let states = |runs: Vec<Value>| {
            let mut dev = vec![app("prod"), app("dev"), app("staging")];
            dev.extend(runs);
            let snapshot = Snapshot::from_json(
                &json!({"now": NOW, "controlPlaneCluster": "dev", "clusters": {"dev": dev}})
                    .to_string(),
            )
            .unwrap();
            derive(&snapshot, "pay")
        };
        let failed = states(vec![
            run("pay-build-1", 10, Some("push"), "Succeeded"),
            run("pay-build-2", 20, Some("push"), "Failed"),
            run("pay-pr-3", 30, Some("pull_request"), "Succeeded"),
        ]);
        let envs: Vec<&str> = failed.iter().map(|s| s.environment.as_str()).collect();
        assert_eq!(envs, ["dev", "staging", "prod"]);
        assert_eq!(
            failed[0].troubles,
            [Trouble {
                source: Source::Build,
                severity: Severity::Attention,
                words: "the newest build of main failed (pay-build-2): Tasks Completed: 4 \
                        (Failed: 1, Cancelled 0), Skipped: 0"
                    .to_owned(),
            }]
        );
        assert!(failed[1..].iter().all(|s| s.troubles.is_empty()));
        // Unlabelled runs of the build pipeline are the default branch's; timed out is said.
        let timed_out = states(vec![run("pay-build-4", 10, None, "PipelineRunTimeout")]);
        assert!(timed_out[0].troubles[0]
            .words
            .starts_with("the newest build of main timed out"));
        for calm in [
            vec![
                run("pay-build-2", 10, Some("push"), "Failed"),
                run("pay-build-3", 20, Some("push"), "Succeeded"),
            ],
            vec![run("pay-build-5", 10, Some("push"), "PipelineRunCancelled")],
            vec![run("pay-pr-6", 10, Some("pull_request"), "Failed")],
        ] {
            assert!(states(calm).iter().all(|s| s.troubles.is_empty()));
        }
    }

    /// A resource composed for prod (in its namespace, or labelled with it) that is not
    /// synced or not ready is amber there, with Crossplane's words; one being created is a
    /// wait; one of another service or of no environment is not prod's.
    #[test]
    fn a_composed_resource_of_an_environment_not_ready_is_amber_there() {
        let resource = |name: &str, namespace: &str, labels: Value, conditions: Value| {
            json!({"apiVersion": "database.example.org/v1alpha1", "kind": "Database",
                   "metadata": {"name": name, "namespace": namespace, "labels": labels},
                   "status": {"conditions": conditions}})
        };
        let composed = |env: Option<&str>| {
            let mut labels = json!({"crossplane.io/composite": "pay"});
            if let Some(env) = env {
                labels["hangar.io/environment"] = json!(env);
            }
            labels
        };
        let state = prod(
            "Synced",
            "Healthy",
            json!({"phase": "Healthy", "stableRS": "aaa", "currentPodHash": "aaa"}),
            vec![
                resource(
                    "pay-db",
                    "app-pay-prod",
                    composed(None),
                    json!([
                    {"type": "Synced", "status": "True", "reason": "ReconcileSuccess"},
                    {"type": "Ready", "status": "False", "reason": "Unavailable",
                     "message": "instance is stopped"}]),
                ),
                resource(
                    "pay-cache",
                    "app-pay-prod",
                    composed(None),
                    json!([
                    {"type": "Ready", "status": "False", "reason": "Creating"}]),
                ),
                resource(
                    "pay-queue",
                    "crossplane-system",
                    composed(Some("prod")),
                    json!([
                    {"type": "Synced", "status": "False", "reason": "ReconcileError",
                     "message": "cannot apply: quota exceeded"}]),
                ),
                resource(
                    "pay-ok",
                    "app-pay-prod",
                    composed(None),
                    json!([
                    {"type": "Synced", "status": "True"}, {"type": "Ready", "status": "True"}]),
                ),
                resource(
                    "shop-db",
                    "app-pay-prod",
                    json!({"crossplane.io/composite": "shop"}),
                    json!([{"type": "Ready", "status": "False", "reason": "Unavailable"}]),
                ),
                resource(
                    "pay-bucket",
                    "crossplane-system",
                    composed(None),
                    json!([{"type": "Ready", "status": "False", "reason": "Unavailable"}]),
                ),
            ],
        );
        let composed: Vec<&str> = state
            .troubles
            .iter()
            .filter(|t| t.source == Source::Composed)
            .map(|t| t.words.as_str())
            .collect();
        assert_eq!(
            composed,
            [
                "Database pay-db is not ready (Unavailable: instance is stopped)",
                "Database pay-queue is not synced (ReconcileError: cannot apply: quota exceeded)",
            ]
        );
        assert_eq!(state.waits, ["Database pay-cache is being created"]);
        assert_eq!(severity(&state), Some(Severity::Attention));
    }

    #[test]
    fn a_timed_pause_inside_its_duration_is_a_wait_and_past_it_is_amber() {
        // Paused at step 1 (a 10m pause) since 4 minutes: expected, said, not amber.
        let waiting = prod(
            "Synced",
            "Suspended",
            paused(1, "2026-11-30T09:56:00Z"),
            vec![],
        );
        assert_eq!(waiting.troubles, []);
        assert_eq!(
            waiting.waits,
            ["Canary paused at 25% traffic, a timed pause of 10m"]
        );
        assert_eq!(severity(&waiting), Some(Severity::Notice));
        // Judged again when the pause runs out, whether or not anything moves.
        assert_eq!(waiting.until, "2026-11-30T10:06:00Z".parse().ok());
        // The same pause 15 minutes on: the controller should have moved on.
        let stuck = prod(
            "Synced",
            "Suspended",
            paused(1, "2026-11-30T09:45:00Z"),
            vec![],
        );
        assert_eq!(
            stuck.attention().map(|a| a.reason).as_deref(),
            Some("Canary paused at 25% traffic past its 10m pause")
        );
        assert_eq!(severity(&stuck), Some(Severity::Attention));
        assert_eq!(stuck.until, None, "nothing more to wait for");
        // A pause without a duration waits for a person: amber.
        let manual = prod(
            "Synced",
            "Suspended",
            paused(3, "2026-11-30T09:59:00Z"),
            vec![],
        );
        assert_eq!(
            manual.attention().map(|a| (a.severity, a.reason)),
            Some((
                Severity::Attention,
                "Canary paused at 25% traffic".to_owned()
            ))
        );
        // What runs is the stable version; the canary arrives at its actual weight (1 of 4
        // available pods) beside the one its steps set.
        assert_eq!(manual.running_tag(), Some("1.4.0-abc1234"));
        assert_eq!(
            manual.arriving,
            Some(Arriving {
                image: Some("ghcr.io/acme/pay:1.5.0-def5678".to_owned()),
                weight: Some(25),
                desired_weight: Some(40),
                step: Some(3),
                steps: 4,
            })
        );
    }

    #[test]
    fn a_pod_killed_for_its_memory_and_an_autoscaler_short_of_pods_are_amber() {
        let pod = |name: &str, status: Value| {
            json!({"apiVersion": "v1", "kind": "Pod",
                   "metadata": {"name": name, "namespace": "app-pay-prod",
                                "creationTimestamp": "2026-11-30T08:00:00Z",
                                "labels": {"rollouts-pod-template-hash": "aaa"}},
                   "spec": {"containers": [{"name": "app"}]},
                   "status": {"phase": "Running", "containerStatuses": [status]}})
        };
        let healthy = json!({"phase": "Healthy", "stableRS": "aaa", "currentPodHash": "aaa"});
        let sick = prod(
            "Synced",
            "Healthy",
            healthy.clone(),
            vec![
                pod(
                    "pay-aaa-1",
                    json!({"name": "app", "ready": true, "restartCount": 3,
                           "lastState": {"terminated": {"reason": "OOMKilled", "exitCode": 137,
                                                        "finishedAt": "2026-11-30T09:20:00Z"}}}),
                ),
                pod(
                    "pay-aaa-2",
                    json!({"name": "app", "ready": false, "restartCount": 7,
                           "state": {"waiting": {"reason": "CrashLoopBackOff"}}}),
                ),
                pod("pay-aaa-3", json!({"name": "app", "ready": false})),
                json!({"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
                       "metadata": {"name": "pay", "namespace": "app-pay-prod"},
                       "spec": {"minReplicas": 3, "maxReplicas": 6},
                       "status": {"currentReplicas": 3, "desiredReplicas": 5}}),
            ],
        );
        let said: Vec<(Source, Severity, &str)> = sick
            .troubles
            .iter()
            .map(|t| (t.source, t.severity, t.words.as_str()))
            .collect();
        assert_eq!(
            said,
            [
                (
                    Source::Pods,
                    Severity::Failing,
                    "pod pay-aaa-2 in CrashLoopBackOff"
                ),
                (
                    Source::Pods,
                    Severity::Attention,
                    "pod pay-aaa-1 OOMKilled (3 restarts)"
                ),
                (Source::Pods, Severity::Attention, "1 pod not ready"),
                (
                    Source::Autoscaler,
                    Severity::Attention,
                    "autoscaler wants 5 pods, 3 run"
                ),
            ]
        );
        // Argo CD says Healthy all the same: Tower says what the pods say.
        assert_eq!(sick.health, HealthStatus::Healthy);
        assert_eq!(severity(&sick), Some(Severity::Failing));
        // Judged again when the memory kill is forgotten, a day after it.
        assert_eq!(sick.until, "2026-12-01T09:20:00Z".parse().ok());
        // A day on, the memory kill is old news; a calm app is calm.
        let calm = prod("Synced", "Healthy", healthy, vec![]);
        assert_eq!(calm.attention(), None);
        assert_eq!(calm.arriving, None);
    }

    /// Prometheus' figures (seconds for latencies), by key (`errorRatio:1h`).
    fn readings(figures: &[(&str, f64)]) -> Readings {
        Readings {
            figures: figures.iter().map(|(k, v)| ((*k).to_owned(), *v)).collect(),
            series: BTreeMap::new(),
        }
    }

    fn said(troubles: &[Trouble]) -> Vec<(Source, Severity, &str)> {
        troubles
            .iter()
            .map(|t| (t.source, t.severity, t.words.as_str()))
            .collect()
    }

    #[test]
    fn objectives_breached_are_troubles_and_unknown_figures_are_none() {
        let targets = Targets::default();
        // media: p99 890 ms over the last hour against 500 ms, errors well in budget.
        let slow = readings(&[
            ("errorRatio:30d", 0.0004),
            ("errorRatio:3d", 0.0004),
            ("errorRatio:6h", 0.0002),
            ("latencyP95:1h", 0.25),
            ("latencyP99:1h", 0.89),
        ]);
        assert_eq!(
            said(&objective_troubles(&slow, &targets)),
            [(
                Source::Slo,
                Severity::Attention,
                "Latency over the last hour: p99 890 ms (objective 500 ms)"
            )]
        );
        // flight-api: 0.18 % errors over the month against a 0.1 % budget, and burning
        // 1.8× over 3 days and 6 hours: the ticket alert fires, the budget is spent.
        let spent = readings(&[
            ("errorRatio:30d", 0.0018),
            ("errorRatio:3d", 0.0018),
            ("errorRatio:6h", 0.0018),
            ("errorRatio:1h", 0.0018),
            ("errorRatio:5m", 0.0015),
        ]);
        assert_eq!(
            said(&objective_troubles(&spent, &targets)),
            [
                (
                    Source::Slo,
                    Severity::Attention,
                    "Error budget burning 1.8× over 3d and 1.8× over 6h (ticket alert)"
                ),
                (
                    Source::Slo,
                    Severity::Attention,
                    "Error budget for 30 days spent"
                ),
            ]
        );
        // Burning 20× over the hour and 5 minutes: the page alert speaks, failing.
        let burning = readings(&[("errorRatio:1h", 0.02), ("errorRatio:5m", 0.03)]);
        assert_eq!(
            said(&objective_troubles(&burning, &targets)),
            [(
                Source::Slo,
                Severity::Failing,
                "Error budget burning 20.0× over 1h and 30.0× over 5m (page alert)"
            )]
        );
        // Nothing answered: nothing said, neither met nor breached.
        assert_eq!(objective_troubles(&Readings::default(), &targets), []);
    }

    #[test]
    fn a_state_is_judged_by_its_own_environment_figures_once() {
        let healthy = json!({"phase": "Healthy", "stableRS": "aaa", "currentPodHash": "aaa"});
        let mut state = prod("Synced", "Healthy", healthy, vec![]);
        assert_eq!(state.namespace.as_deref(), Some("app-pay-prod"));
        let mut snapshot = Snapshot::empty(NOW.parse().unwrap());
        // Figures for pay's staging only: prod's objectives are unknown, not breached.
        snapshot.measured.insert(
            "pay".to_owned(),
            BTreeMap::from([("staging".to_owned(), readings(&[("latencyP99:1h", 0.9)]))]),
        );
        judge_objectives(&snapshot, "pay", &mut state);
        assert_eq!(state.attention(), None);
        snapshot
            .measured
            .get_mut("pay")
            .unwrap()
            .insert("prod".to_owned(), readings(&[("latencyP99:1h", 0.9)]));
        // Judged twice (the deriver judges again when figures move): said once.
        judge_objectives(&snapshot, "pay", &mut state);
        judge_objectives(&snapshot, "pay", &mut state);
        assert_eq!(
            said(&state.troubles),
            [(
                Source::Slo,
                Severity::Attention,
                "Latency over the last hour: p99 900 ms (objective 500 ms)"
            )]
        );
    }

    #[test]
    fn an_aborted_canary_leaves_the_stable_version_as_what_runs() {
        let aborted = prod(
            "Synced",
            "Degraded",
            json!({"phase": "Degraded", "message": "RolloutAborted", "stableRS": "aaa",
                   "currentPodHash": "bbb", "abort": true, "currentStepIndex": 0}),
            vec![],
        );
        assert_eq!(aborted.running_tag(), Some("1.4.0-abc1234"));
        assert_eq!(aborted.arriving, None);
        assert_eq!(
            aborted.attention().map(|a| (a.severity, a.reason)),
            Some((
                Severity::Failing,
                "Canary 1.5.0-def5678 aborted: all traffic back on the stable version".to_owned()
            ))
        );
    }

    #[test]
    fn argo_cd_words_it_does_not_know_are_unknown_and_amber() {
        let odd = prod(
            "Weird",
            "Brand-new",
            json!({"phase": "Healthy", "stableRS": "aaa", "currentPodHash": "aaa"}),
            vec![],
        );
        assert_eq!(
            (odd.sync, odd.health),
            (SyncStatus::Unknown, HealthStatus::Unknown)
        );
        assert_eq!(
            odd.attention().map(|a| (a.severity, a.reason)),
            Some((
                Severity::Attention,
                "Health unknown; Sync status unknown".to_owned()
            ))
        );
    }
}
