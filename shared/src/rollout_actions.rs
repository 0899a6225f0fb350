//! The canary actions Tower offers beside a rollout: Argo CD's built-in `argoproj.io/Rollout`
//! resource actions (`resume`, `promote-full`, `abort`, `retry`), which Argo CD runs with
//! its own credentials and audit — Tower never patches a Rollout itself. Which of them apply
//! to a rollout's state, and what each will do, said in the button's own words
//! ("Resume: traffic goes from 40% to 80%"). Argo CD's listing for the Rollout has the last
//! word on which are offered (the backend keeps only the ones it lists, enabled).

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::deployments::{ReplicaSetView, RolloutView, StepKind, Strategy};
use crate::kube::{array_at, at, str_at, Object};

/// One Rollout action, by Argo CD's name for it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum RolloutAction {
    /// Ends the current pause: the canary walks on to its next step (a blue-green preview
    /// becomes active).
    Resume,
    /// Makes the new version stable at once, skipping the remaining steps and analysis.
    PromoteFull,
    /// Puts all traffic back on the stable version.
    Abort,
    /// Starts an aborted rollout again from its first step.
    Retry,
}

impl RolloutAction {
    /// Argo CD's name for the action.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Resume => "resume",
            Self::PromoteFull => "promote-full",
            Self::Abort => "abort",
            Self::Retry => "retry",
        }
    }
}

/// An action offered on a rollout: the button's words (what will happen), and for an action
/// that skips the canary's safety or undoes it, the words of the second press that confirms.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct OfferedAction {
    pub action: RolloutAction,
    pub label: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub confirm: Option<String>,
}

/// What identifies a rollout's state for an action: its pod template, its step, whether it
/// pauses and whether it was aborted. An action is run only on the state it was offered for
/// — a second press (another tab, another replica) finds the rollout moved on and is
/// refused, so one press never becomes two steps.
pub fn seen(rollout: &Object) -> String {
    let status = &rollout.status;
    let step = match at(status, &["currentStepIndex"]) {
        Some(Value::Number(n)) => n.to_string(),
        _ => "-".to_owned(),
    };
    format!(
        "{}/{step}/{}/{}",
        str_at(status, &["currentPodHash"]).unwrap_or("-"),
        array_at(status, &["pauseConditions"]).len(),
        at(status, &["abort"]).and_then(Value::as_bool) == Some(true),
    )
}

/// The image as `name:tag` (its last path segment, without a digest).
fn short(set: Option<&ReplicaSetView>, unknown: &'static str) -> String {
    set.and_then(|s| s.image.as_deref())
        .map(|image| crate::image::name_and_tag(image).to_owned())
        .unwrap_or_else(|| unknown.to_owned())
}

/// The actions that apply to `rollout` as Tower reads it, in the words of their buttons:
/// none once the new version is stable; `resume` while it pauses; `promote-full` and
/// `abort` while a new version is on its way; `retry` once aborted.
pub fn offered(rollout: &RolloutView) -> Vec<OfferedAction> {
    // Fully promoted: the new version is the stable one (no canary set apart).
    if rollout.canary.is_none() {
        return Vec::new();
    }
    let new = short(rollout.canary.as_ref(), "the new version");
    let stable = short(rollout.stable.as_ref(), "the stable version");
    let blue_green = rollout.strategy == Some(Strategy::BlueGreen);
    let weights = |from: usize| {
        rollout
            .steps
            .iter()
            .skip(from)
            .filter(|s| s.kind == StepKind::SetWeight)
            .find_map(|s| s.weight)
    };
    let mut out = Vec::new();
    if rollout.aborted {
        let label = match weights(0) {
            Some(first) if !blue_green => {
                format!("Retry: {new} starts again from {first}% of traffic")
            }
            _ => format!("Retry: {new} comes up again as the preview"),
        };
        out.push(OfferedAction {
            action: RolloutAction::Retry,
            label,
            confirm: None,
        });
        return out;
    }
    if rollout.paused_since.is_some() {
        let step = rollout.current_step.map_or(0, |s| s as usize + 1);
        let label = match (blue_green, weights(step), rollout.canary_weight) {
            (true, _, _) => format!("Resume: {new} becomes active and takes all traffic"),
            (false, Some(next), Some(now)) => {
                format!("Resume: traffic goes from {now}% to {next}%")
            }
            (false, Some(next), None) => format!("Resume: traffic goes to {next}%"),
            (false, None, _) => format!("Resume: {new} takes all traffic"),
        };
        out.push(OfferedAction {
            action: RolloutAction::Resume,
            label,
            confirm: None,
        });
    }
    out.push(OfferedAction {
        action: RolloutAction::PromoteFull,
        label: format!("Promote fully: all traffic to {new} now"),
        confirm: Some(format!(
            "Confirm: all traffic to {new}, skipping the remaining steps and analysis"
        )),
    });
    out.push(OfferedAction {
        action: RolloutAction::Abort,
        label: format!("Abort: all traffic back to {stable}"),
        confirm: Some(format!(
            "Confirm abort: {new} scales down, {stable} takes all traffic"
        )),
    });
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::argo::RolloutPhase;
    use crate::deployments::{Step, StepStatus};

    fn set(image: &str) -> ReplicaSetView {
        ReplicaSetView {
            replica_set: None,
            pod_hash: "h".to_owned(),
            image: Some(image.to_owned()),
            replicas: None,
            ready: None,
            available: None,
            evidence: None,
        }
    }

    fn step(index: u32, kind: StepKind, weight: Option<u32>) -> Step {
        Step {
            index,
            kind,
            weight,
            duration: None,
            status: StepStatus::Pending,
        }
    }

    fn paused_at_40() -> RolloutView {
        RolloutView {
            name: "flight-api".to_owned(),
            strategy: Some(Strategy::Canary),
            phase: RolloutPhase::Paused,
            message: None,
            summary: String::new(),
            current_step: Some(3),
            steps: vec![
                step(0, StepKind::SetWeight, Some(20)),
                step(1, StepKind::Pause, None),
                step(2, StepKind::SetWeight, Some(40)),
                step(3, StepKind::Pause, None),
                step(4, StepKind::SetWeight, Some(80)),
                step(5, StepKind::Pause, None),
            ],
            canary_weight: Some(40),
            stable_weight: Some(60),
            desired_weight: Some(40),
            paused_since: Some(chrono::DateTime::UNIX_EPOCH),
            pause_reason: None,
            aborted: false,
            stable: Some(set("ghcr.io/acme/flight-api:1.4.1-aaaaaaa")),
            canary: Some(set("ghcr.io/acme/flight-api:1.4.2-bbbbbbb@sha256:00")),
            analysis: Vec::new(),
        }
    }

    #[test]
    fn a_paused_canary_offers_its_next_step_full_promotion_and_abort() {
        let offered = offered(&paused_at_40());
        let labels: Vec<&str> = offered.iter().map(|a| a.label.as_str()).collect();
        assert_eq!(
            labels,
            [
                "Resume: traffic goes from 40% to 80%",
                "Promote fully: all traffic to flight-api:1.4.2-bbbbbbb now",
                "Abort: all traffic back to flight-api:1.4.1-aaaaaaa",
            ]
        );
        assert_eq!(offered[0].confirm, None);
        assert!(offered[1]
            .confirm
            .as_deref()
            .is_some_and(|c| c.contains("skipping the remaining steps and analysis")));
        assert!(offered[2].confirm.is_some());
    }

    #[test]
    fn an_aborted_canary_offers_only_a_retry_from_its_first_weight() {
        let aborted = RolloutView {
            aborted: true,
            paused_since: None,
            ..paused_at_40()
        };
        let offered = offered(&aborted);
        assert_eq!(offered.len(), 1);
        assert_eq!(offered[0].action, RolloutAction::Retry);
        assert_eq!(
            offered[0].label,
            "Retry: flight-api:1.4.2-bbbbbbb starts again from 20% of traffic"
        );
    }

    #[test]
    fn a_stable_rollout_and_a_moving_one_offer_what_applies() {
        let stable = RolloutView {
            canary: None,
            ..paused_at_40()
        };
        assert!(offered(&stable).is_empty());
        let moving = RolloutView {
            paused_since: None,
            ..paused_at_40()
        };
        let actions: Vec<RolloutAction> = offered(&moving).iter().map(|a| a.action).collect();
        assert_eq!(actions, [RolloutAction::PromoteFull, RolloutAction::Abort]);
        let last_pause = RolloutView {
            current_step: Some(5),
            canary_weight: Some(80),
            ..paused_at_40()
        };
        assert_eq!(
            offered(&last_pause)[0].label,
            "Resume: flight-api:1.4.2-bbbbbbb takes all traffic"
        );
    }

    #[test]
    fn the_state_an_action_is_for_changes_with_the_step_the_pause_and_the_abort() {
        let rollout = |status: Value| Object {
            api_version: "argoproj.io/v1alpha1".to_owned(),
            kind: "Rollout".to_owned(),
            metadata: crate::kube::ObjectMeta {
                name: "flight-api".to_owned(),
                ..Default::default()
            },
            spec: Value::Null,
            status,
        };
        let paused = rollout(
            serde_json::json!({"currentPodHash": "abc", "currentStepIndex": 3,
            "pauseConditions": [{"reason": "CanaryPauseStep"}]}),
        );
        let walked = rollout(
            serde_json::json!({"currentPodHash": "abc", "currentStepIndex": 5,
            "pauseConditions": [{"reason": "CanaryPauseStep"}]}),
        );
        let aborted = rollout(
            serde_json::json!({"currentPodHash": "abc", "currentStepIndex": 3,
            "pauseConditions": [{"reason": "CanaryPauseStep"}], "abort": true}),
        );
        assert_eq!(seen(&paused), "abc/3/1/false");
        assert_ne!(seen(&paused), seen(&walked));
        assert_ne!(seen(&paused), seen(&aborted));
        assert_eq!(seen(&rollout(Value::Null)), "-/-/0/false");
    }
}
