//! Argo CD's and Argo Rollouts' vocabulary, read as their own tools read it: an
//! Application's sync and health words, a Rollout's phase (`GetRolloutPhase`), its stable and
//! current pod-template hashes and their ReplicaSets, and an AnalysisRun's measurements.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::kube::{array_at, at, str_at, Object};

/// Argo CD sync status codes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum SyncStatus {
    Synced,
    OutOfSync,
    #[serde(other)]
    Unknown,
}

/// Argo CD health status codes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum HealthStatus {
    Healthy,
    Progressing,
    Degraded,
    Suspended,
    Missing,
    #[serde(other)]
    Unknown,
}

/// Argo Rollouts phase (as `kubectl argo rollouts` decides it).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum RolloutPhase {
    Healthy,
    Progressing,
    Paused,
    Degraded,
    #[serde(other)]
    Unknown,
}

/// A status word at `path` read as one of our enums (whose unknown words read as `Unknown`).
pub fn word<T: serde::de::DeserializeOwned>(value: &serde_json::Value, path: &[&str]) -> Option<T> {
    let text = str_at(value, path)?;
    serde_json::from_value(serde_json::Value::from(text)).ok()
}

/// The label Argo Rollouts puts on a Rollout's ReplicaSets, pods and AnalysisRuns.
pub const POD_HASH_LABEL: &str = "rollouts-pod-template-hash";

/// The label saying which part of a rollout an AnalysisRun checks.
pub const ROLLOUT_TYPE_LABEL: &str = "rollout-type";

/// A Rollout's phase and message by `GetRolloutPhase`'s rules (argo-rollouts
/// `utils/rollout/rolloututil.go`): a spec not yet observed and a controller pause without a
/// reason are Progressing whatever `status.phase` says; then `status.phase` as written; then
/// the older controllers' conditions.
pub fn rollout_phase(rollout: &Object) -> (RolloutPhase, Option<String>) {
    let status = &rollout.status;
    let observed = match at(status, &["observedGeneration"]) {
        Some(Value::String(s)) => s.parse::<i64>().ok(),
        Some(other) => other.as_i64(),
        None => None,
    };
    if let (Some(generation), Some(observed)) = (rollout.metadata.generation, observed) {
        if generation != observed {
            return (
                RolloutPhase::Progressing,
                Some("waiting for rollout spec update to be observed".to_owned()),
            );
        }
    }
    let pause_conditions = array_at(status, &["pauseConditions"]);
    if at(status, &["controllerPause"]).and_then(Value::as_bool) == Some(true)
        && pause_conditions.is_empty()
    {
        return (
            RolloutPhase::Progressing,
            Some("waiting for rollout to unpause".to_owned()),
        );
    }
    let message = str_at(status, &["message"])
        .filter(|m| !m.is_empty())
        .map(str::to_owned);
    if let Some(phase) = str_at(status, &["phase"]).filter(|p| !p.is_empty()) {
        let phase = serde_json::from_value(Value::from(phase)).unwrap_or(RolloutPhase::Unknown);
        return (phase, message);
    }
    if status.is_null() {
        return (RolloutPhase::Unknown, None);
    }
    // Controllers before v1.0 wrote no phase.
    let reasons: Vec<&str> = rollout.conditions().filter_map(|c| c.reason).collect();
    if rollout.condition("InvalidSpec").is_some()
        || reasons
            .iter()
            .any(|r| matches!(*r, "RolloutAborted" | "ProgressDeadlineExceeded"))
    {
        return (RolloutPhase::Degraded, message);
    }
    if at(&rollout.spec, &["paused"]).and_then(Value::as_bool) == Some(true) {
        return (RolloutPhase::Paused, Some("manually paused".to_owned()));
    }
    if let Some(reason) = pause_conditions
        .iter()
        .find_map(|c| c.get("reason").and_then(Value::as_str))
    {
        return (RolloutPhase::Paused, Some(reason.to_owned()));
    }
    let hash = |field| str_at(status, &[field]);
    if hash("stableRS") != hash("currentPodHash") {
        return (
            RolloutPhase::Progressing,
            Some("waiting for all steps to complete".to_owned()),
        );
    }
    (RolloutPhase::Healthy, message)
}

/// The pod-template hashes of `rollout`'s stable and current ReplicaSets as its status names
/// them (blue-green: the active and the preview). The current one is the canary unless it
/// is the stable one.
pub fn rollout_hashes(rollout: &Object) -> (Option<&str>, Option<&str>) {
    let status = &rollout.status;
    let hash = |path: &[&str]| str_at(status, path).filter(|h| !h.is_empty());
    if at(&rollout.spec, &["strategy", "blueGreen"]).is_some() {
        (
            hash(&["blueGreen", "activeSelector"]).or_else(|| hash(&["stableRS"])),
            hash(&["blueGreen", "previewSelector"]),
        )
    } else {
        (hash(&["stableRS"]), hash(&["currentPodHash"]))
    }
}

/// The ReplicaSet of `objects` (one namespace's) with pod-template hash `hash`; the lowest
/// name wins a repeat.
pub fn replica_set_of<'a>(
    objects: impl IntoIterator<Item = &'a Object>,
    hash: &str,
) -> Option<&'a Object> {
    objects
        .into_iter()
        .filter(|o| o.kind == "ReplicaSet" && o.label(POD_HASH_LABEL) == Some(hash))
        .min_by(|a, b| a.name().cmp(b.name()))
}

/// A measurement's value as a number: a scalar (`"0.97"`) or a vector's first element
/// (`"[0.97,0.95]"`), as the Prometheus provider writes them.
pub fn measured(value: &str) -> Option<f64> {
    let inner = value.trim().trim_start_matches('[').trim_end_matches(']');
    let first = inner.split(',').next()?.trim();
    first.parse::<f64>().ok().filter(|v| v.is_finite())
}

/// The image a ReplicaSet's pod template runs (its first container's), when it names one.
pub fn replica_set_image(rs: &crate::kube::Object) -> Option<&str> {
    rs.spec["template"]["spec"]["containers"][0]["image"]
        .as_str()
        .filter(|image| !image.is_empty())
}

/// The canary's and the stable's actual share of traffic, as `kubectl argo rollouts get`
/// reports them: `status.canary.weights` when the controller wrote them (it does for a
/// traffic router), else each side's share of the available pods (`canary`: the canary
/// ReplicaSet's available pods, `None` outside when there is no canary). No canary: all on
/// stable; aborted: back on stable. What is not known stays `None` — never the weight a
/// step asked for ([`desired_weight`]).
pub fn actual_weights(
    status: &Value,
    stable: Option<u32>,
    canary: Option<Option<u32>>,
    aborted: bool,
) -> (Option<u32>, Option<u32>) {
    let Some(canary) = canary.filter(|_| !aborted) else {
        return (Some(0), Some(100));
    };
    let written = |side| {
        at(status, &["canary", "weights", side, "weight"])
            .and_then(Value::as_u64)
            .and_then(|w| u32::try_from(w).ok())
    };
    if let Some(weight) = written("canary") {
        let stable = written("stable").unwrap_or_else(|| 100u32.saturating_sub(weight));
        return (Some(weight), Some(stable));
    }
    let (Some(on_canary), Some(on_stable)) = (canary, stable) else {
        return (None, None);
    };
    let weight = (on_canary * 100)
        .checked_div(on_canary + on_stable)
        .unwrap_or(0);
    (Some(weight), Some(100 - weight))
}

/// The weight `rollout`'s canary steps have set so far (the last `setWeight` at or before
/// `status.currentStepIndex`): what the actual weight follows. `None` before the first.
pub fn desired_weight(rollout: &Object) -> Option<u32> {
    let reached = at(&rollout.status, &["currentStepIndex"]).and_then(Value::as_u64)?;
    array_at(&rollout.spec, &["strategy", "canary", "steps"])
        .iter()
        .take(usize::try_from(reached).ok()?.saturating_add(1))
        .filter_map(|step| step.get("setWeight")?.as_u64())
        .next_back()
        .and_then(|w| u32::try_from(w).ok())
}

/// A ReplicaSet's count `field` of its status (`replicas`, `readyReplicas`,
/// `availableReplicas`); Kubernetes leaves a zero count out of a status it wrote, so a
/// written status without the field is 0, and no status is unknown.
pub fn replica_count(rs: &Object, field: &str) -> Option<u32> {
    (!rs.status.is_null()).then(|| {
        at(&rs.status, &[field])
            .and_then(Value::as_u64)
            .and_then(|n| u32::try_from(n).ok())
            .unwrap_or(0)
    })
}

/// A ReplicaSet's available pods ([`replica_count`]).
pub fn available_replicas(rs: &Object) -> Option<u32> {
    replica_count(rs, "availableReplicas")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_canary_weight_is_the_actual_one_as_kubectl_argo_rollouts_get_says() {
        let none = serde_json::json!({});
        // No traffic router: the canary's share of the available pods.
        assert_eq!(
            actual_weights(&none, Some(3), Some(Some(1)), false),
            (Some(25), Some(75))
        );
        // Its step asked for 20 %, but no canary pod is available yet: 0, as the plugin says.
        assert_eq!(
            actual_weights(&none, Some(3), Some(Some(0)), false),
            (Some(0), Some(100))
        );
        // Counts not known: unknown, never the weight a step asked for.
        assert_eq!(
            actual_weights(&none, Some(3), Some(None), false),
            (None, None)
        );
        // A traffic router's weights, as the controller wrote them.
        let routed = serde_json::json!({"canary": {"weights": {
            "canary": {"weight": 10}, "stable": {"weight": 90}}}});
        assert_eq!(
            actual_weights(&routed, Some(3), Some(Some(1)), false),
            (Some(10), Some(90))
        );
        // Aborted, or no canary: all on stable.
        assert_eq!(
            actual_weights(&routed, Some(3), Some(Some(1)), true),
            (Some(0), Some(100))
        );
        assert_eq!(
            actual_weights(&routed, Some(3), None, false),
            (Some(0), Some(100))
        );
    }

    #[test]
    fn the_desired_weight_is_the_last_step_reached_that_set_one() {
        let rollout = |index: Option<u64>| {
            let mut status = serde_json::json!({});
            if let Some(i) = index {
                status["currentStepIndex"] = i.into();
            }
            Object::from_value(serde_json::json!({
                "apiVersion": "argoproj.io/v1alpha1", "kind": "Rollout",
                "metadata": {"name": "pay"},
                "spec": {"strategy": {"canary": {"steps": [
                    {"setWeight": 20}, {"pause": {"duration": "10m"}},
                    {"setWeight": 40}, {"pause": {}}]}}},
                "status": status}))
            .unwrap()
        };
        assert_eq!(desired_weight(&rollout(None)), None);
        assert_eq!(desired_weight(&rollout(Some(0))), Some(20));
        assert_eq!(desired_weight(&rollout(Some(1))), Some(20));
        assert_eq!(desired_weight(&rollout(Some(3))), Some(40));
    }

    #[test]
    fn measurements_read_scalars_and_vectors() {
        assert_eq!(measured("0.97"), Some(0.97));
        assert_eq!(measured("[0.012]"), Some(0.012));
        assert_eq!(measured("[0.97,0.95]"), Some(0.97));
        assert_eq!(measured("[]"), None);
        assert_eq!(measured("NaN"), None);
        assert_eq!(measured("error"), None);
    }

    fn rollout(value: Value) -> Object {
        Object::from_value(value).unwrap()
    }

    #[test]
    fn the_phase_follows_get_rollout_phase() {
        let base = |status: Value, generation: i64| {
            rollout(
                serde_json::json!({"apiVersion": "argoproj.io/v1alpha1", "kind": "Rollout",
                "metadata": {"name": "r", "namespace": "n", "generation": generation},
                "spec": {"strategy": {"canary": {"steps": []}}}, "status": status}),
            )
        };
        // A spec not yet observed is Progressing, whatever the phase says.
        let (phase, message) = rollout_phase(&base(
            serde_json::json!({"phase": "Healthy", "observedGeneration": "3"}),
            4,
        ));
        assert_eq!(phase, RolloutPhase::Progressing);
        assert_eq!(
            message.as_deref(),
            Some("waiting for rollout spec update to be observed")
        );
        // A controller pause without a reason: Progressing.
        let (phase, _) = rollout_phase(&base(
            serde_json::json!({"phase": "Paused", "observedGeneration": "4", "controllerPause": true}),
            4,
        ));
        assert_eq!(phase, RolloutPhase::Progressing);
        // Otherwise status.phase as written.
        let (phase, message) = rollout_phase(&base(
            serde_json::json!({"phase": "Paused", "message": "CanaryPauseStep", "observedGeneration": 4,
                "controllerPause": true, "pauseConditions": [{"reason": "CanaryPauseStep"}]}),
            4,
        ));
        assert_eq!(
            (phase, message.as_deref()),
            (RolloutPhase::Paused, Some("CanaryPauseStep"))
        );
        // Older controllers: from the conditions.
        let (phase, _) = rollout_phase(&base(
            serde_json::json!({"observedGeneration": "4", "stableRS": "a", "currentPodHash": "a",
                "conditions": [{"type": "Progressing", "status": "False", "reason": "ProgressDeadlineExceeded"}]}),
            4,
        ));
        assert_eq!(phase, RolloutPhase::Degraded);
        let (phase, _) = rollout_phase(&base(
            serde_json::json!({"observedGeneration": "4", "stableRS": "a", "currentPodHash": "b"}),
            4,
        ));
        assert_eq!(phase, RolloutPhase::Progressing);
        let (phase, _) = rollout_phase(&base(
            serde_json::json!({"observedGeneration": "4", "stableRS": "a", "currentPodHash": "a"}),
            4,
        ));
        assert_eq!(phase, RolloutPhase::Healthy);
    }
}
