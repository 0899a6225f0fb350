//! What runs in a namespace, read from Kubernetes' own objects: an app's pods (ready,
//! restarts, why a container last stopped or waits), its HorizontalPodAutoscaler, and the
//! Events a cluster keeps about them. The Runtime tab shows them; the state
//! ([`crate::state`]) judges them.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::kube::{time, Object};

/// One pod of the app's Rollout.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Pod {
    pub name: String,
    pub image: Option<String>,
    /// Ready containers of all (`1/1`).
    pub ready: String,
    pub phase: Option<String>,
    /// Restarts of all its containers.
    pub restarts: u32,
    /// Why a container last stopped (`OOMKilled`), if one did.
    pub last_termination: Option<Termination>,
    /// Why a container is waiting instead of running (`CrashLoopBackOff`,
    /// `ImagePullBackOff`), if one is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub waiting: Option<String>,
    pub created_at: Option<DateTime<Utc>>,
    pub node: Option<String>,
}

/// A container's last termination.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Termination {
    pub container: String,
    pub reason: String,
    pub exit_code: Option<i64>,
    pub at: Option<DateTime<Utc>>,
}

/// The environment's HorizontalPodAutoscaler.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Autoscaler {
    pub name: String,
    pub min: Option<u32>,
    pub max: Option<u32>,
    pub current: Option<u32>,
    pub desired: Option<u32>,
}

/// A Kubernetes Event about one of the app's objects.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Event {
    pub warning: bool,
    pub reason: String,
    pub message: String,
    /// `Kind/name` of what it is about.
    pub object: String,
    pub count: Option<u32>,
    pub last_at: Option<DateTime<Utc>>,
}

fn count(value: &Value) -> Option<u32> {
    value.as_u64().and_then(|n| u32::try_from(n).ok())
}

fn text(value: &Value) -> String {
    value.as_str().unwrap_or_default().to_owned()
}

/// A pod as the Runtime tab and the state read it.
pub fn pod(object: &Object) -> Pod {
    let statuses = object.status["containerStatuses"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default();
    let containers = object.spec["containers"]
        .as_array()
        .map_or(statuses.len(), Vec::len);
    let ready = statuses.iter().filter(|s| s["ready"] == true).count();
    let restarts = statuses
        .iter()
        .filter_map(|s| count(&s["restartCount"]))
        .sum();
    let last_termination = statuses
        .iter()
        .filter_map(|s| {
            let stopped = &s["lastState"]["terminated"];
            Some(Termination {
                container: text(&s["name"]),
                reason: stopped["reason"].as_str()?.to_owned(),
                exit_code: stopped["exitCode"].as_i64(),
                at: time(&stopped["finishedAt"]),
            })
        })
        .max_by_key(|t| t.at);
    let waiting = statuses
        .iter()
        .find_map(|s| s["state"]["waiting"]["reason"].as_str())
        .map(str::to_owned);
    Pod {
        name: object.name().to_owned(),
        image: object.spec["containers"][0]["image"]
            .as_str()
            .map(str::to_owned),
        ready: format!("{ready}/{containers}"),
        phase: object.status["phase"].as_str().map(str::to_owned),
        restarts,
        last_termination,
        waiting,
        created_at: object.metadata.creation_timestamp,
        node: object.spec["nodeName"].as_str().map(str::to_owned),
    }
}

/// An Event about one of the app's objects.
pub fn event(object: &Object) -> Event {
    // Tower files an Event's top-level facts under `status` (`Object::from_value`).
    let e = &object.status;
    let about = &e["involvedObject"];
    Event {
        warning: e["type"] == "Warning",
        reason: text(&e["reason"]),
        message: text(&e["message"]),
        object: format!("{}/{}", text(&about["kind"]), text(&about["name"])),
        count: count(&e["count"]),
        last_at: time(&e["lastTimestamp"]).or_else(|| time(&e["eventTime"])),
    }
}

/// A HorizontalPodAutoscaler's bounds and counts.
pub fn autoscaler(object: &Object) -> Autoscaler {
    Autoscaler {
        name: object.name().to_owned(),
        min: count(&object.spec["minReplicas"]),
        max: count(&object.spec["maxReplicas"]),
        current: count(&object.status["currentReplicas"]),
        desired: count(&object.status["desiredReplicas"]),
    }
}

/// Whether `object` is a pod of an Argo Rollout (Argo Rollouts labels each with its
/// pod-template hash).
pub fn is_rollout_pod(object: &Object) -> bool {
    object.kind == "Pod" && object.label(crate::argo::POD_HASH_LABEL).is_some()
}
