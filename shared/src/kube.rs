//! Kubernetes objects as Tower reads them: any kind, any API version, read leniently.
//!
//! Objects arrive exactly as the API serves them. Only `kind` and `metadata.name` are
//! required; every other field is optional, and a field of the wrong shape reads as absent
//! rather than failing the object (objects are often seen mid-creation, and controllers
//! add fields over time).

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One Kubernetes object of any kind.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Object {
    #[serde(default)]
    pub api_version: String,
    pub kind: String,
    pub metadata: ObjectMeta,
    #[serde(default, skip_serializing_if = "Value::is_null")]
    pub spec: Value,
    #[serde(default, skip_serializing_if = "Value::is_null")]
    pub status: Value,
}

/// The parts of `metadata` Tower uses.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ObjectMeta {
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uid: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource_version: Option<String>,
    /// The spec's generation (a Rollout's `status.observedGeneration` is compared with it).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "lenient_i64"
    )]
    pub generation: Option<i64>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "lenient_time"
    )]
    pub creation_timestamp: Option<DateTime<Utc>>,
    #[serde(
        default,
        deserialize_with = "lenient_map",
        skip_serializing_if = "BTreeMap::is_empty"
    )]
    pub labels: BTreeMap<String, String>,
    #[serde(
        default,
        deserialize_with = "lenient_map",
        skip_serializing_if = "BTreeMap::is_empty"
    )]
    pub annotations: BTreeMap<String, String>,
}

/// The fields of a Kubernetes Event Tower reads.
const EVENT_FACTS: [&str; 7] = [
    "involvedObject",
    "reason",
    "message",
    "type",
    "count",
    "lastTimestamp",
    "eventTime",
];

/// The annotation `kubectl apply` leaves: the whole last-applied object, env and all.
const LAST_APPLIED: &str = "kubectl.kubernetes.io/last-applied-configuration";

/// Tekton params a derivation reads (`Task::param`); other params' values are dropped, since
/// pipelines pass tokens and URLs with credentials as params.
pub const READ_TEKTON_PARAMS: &[&str] = &["env", "revision", "git-revision"];

impl Object {
    /// The object as Tower keeps it: without what no derivation reads and what may carry
    /// secrets or tenants' configuration to every signed-in user — containers' `env`,
    /// `envFrom`, `args` and `command` (only their `name` and `image` stay), pod volumes,
    /// Helm `values`/`valuesObject`/`parameters`/`fileParameters` and plugin `env` of Argo
    /// CD sources, Tekton inline task specs and scripts and the values of params no
    /// derivation reads, a `RepositoryFile`'s content, the last-applied annotation and Tekton
    /// Chains' certificate annotations.
    /// Deriving from a trimmed object gives what deriving from the whole one gives
    /// (`tests/it/provisioning.rs` checks every fixture).
    #[must_use]
    pub fn trimmed(mut self) -> Self {
        self.metadata.annotations.remove(LAST_APPLIED);
        // Chains' keyless certificates and chains: large, and read by no derivation.
        self.metadata.annotations.retain(|key, _| {
            !key.starts_with("chains.tekton.dev/cert-")
                && !key.starts_with("chains.tekton.dev/chain-")
        });
        scrub(&mut self.spec, None);
        scrub(&mut self.status, None);
        if self.group() == "tekton.dev" {
            if let Some(params) = self.spec.get_mut("params").and_then(Value::as_array_mut) {
                params.retain(|p| {
                    p.get("name")
                        .and_then(Value::as_str)
                        .is_some_and(|name| READ_TEKTON_PARAMS.contains(&name))
                });
            }
        }
        self
    }
}

/// Removes, at any depth, the fields [`Object::trimmed`] names; `parent` is the key the
/// value sits under.
fn scrub(value: &mut Value, parent: Option<&str>) {
    match value {
        Value::Object(map) => {
            const ANYWHERE: [&str; 7] = [
                "env", "envFrom", "args", "command", "script", "taskSpec", "volumes",
            ];
            map.retain(|key, _| !ANYWHERE.contains(&key.as_str()));
            match parent {
                Some("helm") => {
                    for key in ["values", "valuesObject", "parameters", "fileParameters"] {
                        map.remove(key);
                    }
                }
                Some("plugin") => {
                    map.remove("parameters");
                }
                Some("forProvider" | "atProvider") => {
                    map.remove("content");
                }
                // A pipeline's tasks: their params' values come from the run's params; only
                // the other tasks they refer to stay (the run's graph draws them).
                Some("tasks" | "finally") => {
                    if let Some(params) = map.remove("params") {
                        let refs: Vec<Value> = crate::tekton::task_references(&params)
                            .into_iter()
                            .map(|t| Value::String(format!("$(tasks.{t}.results)")))
                            .collect();
                        if !refs.is_empty() {
                            map.insert("params".to_owned(), Value::Array(refs));
                        }
                    }
                }
                Some("containers" | "initContainers" | "ephemeralContainers") => {
                    map.retain(|key, _| key == "name" || key == "image");
                }
                _ => {}
            }
            for (key, child) in map.iter_mut() {
                scrub(child, Some(key));
            }
        }
        // An array's items sit under the array's key (`containers: [{…}]`).
        Value::Array(items) => {
            for item in items {
                scrub(item, parent);
            }
        }
        _ => {}
    }
}

fn lenient_time<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<DateTime<Utc>>, D::Error> {
    Ok(time(&Value::deserialize(d)?))
}

fn lenient_i64<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<i64>, D::Error> {
    Ok(Value::deserialize(d)?.as_i64())
}

fn lenient_map<'de, D: serde::Deserializer<'de>>(
    d: D,
) -> Result<BTreeMap<String, String>, D::Error> {
    let value = Value::deserialize(d)?;
    Ok(value
        .as_object()
        .map(|m| {
            m.iter()
                .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_owned())))
                .collect()
        })
        .unwrap_or_default())
}

/// Reads an RFC 3339 timestamp; anything else is `None`.
pub fn time(value: &Value) -> Option<DateTime<Utc>> {
    value
        .as_str()
        .and_then(|s| DateTime::parse_from_rfc3339(s).ok())
        .map(|t| t.with_timezone(&Utc))
}

/// Follows a path of object keys; `None` as soon as one is missing.
pub fn at<'a>(value: &'a Value, path: &[&str]) -> Option<&'a Value> {
    path.iter().try_fold(value, |v, key| v.get(key))
}

/// A string at `path`, if there is one.
pub fn str_at<'a>(value: &'a Value, path: &[&str]) -> Option<&'a str> {
    at(value, path).and_then(Value::as_str)
}

/// The array at `path`, or an empty slice.
pub fn array_at<'a>(value: &'a Value, path: &[&str]) -> &'a [Value] {
    at(value, path)
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice)
}

/// `True`, `False` or `Unknown`, the three values of every condition's `status`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum ConditionStatus {
    True,
    False,
    Unknown,
}

/// A status condition in the permissive shape every project shares, borrowed from its
/// object (reading one allocates nothing).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Condition<'a> {
    pub type_: &'a str,
    pub status: ConditionStatus,
    pub reason: Option<&'a str>,
    /// `None` when absent or empty.
    pub message: Option<&'a str>,
    pub last_transition_time: Option<DateTime<Utc>>,
}

impl<'a> Condition<'a> {
    fn read(value: &'a Value) -> Option<Self> {
        let status = match value.get("status").and_then(Value::as_str) {
            Some("True") => ConditionStatus::True,
            Some("False") => ConditionStatus::False,
            _ => ConditionStatus::Unknown,
        };
        Some(Self {
            type_: value.get("type")?.as_str()?,
            status,
            reason: str_at(value, &["reason"]),
            message: str_at(value, &["message"]).filter(|m| !m.is_empty()),
            last_transition_time: value.get("lastTransitionTime").and_then(time),
        })
    }

    pub fn is_true(&self) -> bool {
        self.status == ConditionStatus::True
    }

    pub fn is_false(&self) -> bool {
        self.status == ConditionStatus::False
    }
}

impl Object {
    /// Reads one object from JSON; `None` when it lacks a `kind` or `metadata.name`.
    /// An Event keeps its facts at the top level (it has no `spec` or `status`); Tower
    /// files them under `status`, so they survive as any object's status does.
    pub fn from_value(mut value: Value) -> Option<Self> {
        if value["kind"] == "Event" && value.get("status").is_none() {
            if let Some(map) = value.as_object_mut() {
                let facts: serde_json::Map<String, Value> = EVENT_FACTS
                    .iter()
                    .filter_map(|key| Some(((*key).to_owned(), map.remove(*key)?)))
                    .collect();
                map.insert("status".to_owned(), Value::Object(facts));
            }
        }
        serde_json::from_value(value).ok()
    }

    /// The API group: `tekton.dev` for `tekton.dev/v1`, empty for core `v1`.
    pub fn group(&self) -> &str {
        self.api_version
            .rsplit_once('/')
            .map_or("", |(group, _version)| group)
    }

    pub fn name(&self) -> &str {
        &self.metadata.name
    }

    pub fn namespace(&self) -> Option<&str> {
        self.metadata.namespace.as_deref()
    }

    pub fn label(&self, key: &str) -> Option<&str> {
        self.metadata.labels.get(key).map(String::as_str)
    }

    pub fn annotation(&self, key: &str) -> Option<&str> {
        self.metadata.annotations.get(key).map(String::as_str)
    }

    /// `status.conditions`, skipping entries without a `type`.
    pub fn conditions(&self) -> impl Iterator<Item = Condition<'_>> + '_ {
        array_at(&self.status, &["conditions"])
            .iter()
            .filter_map(Condition::read)
    }

    /// The condition of type `type_`, if reported (only that one is read).
    pub fn condition(&self, type_: &str) -> Option<Condition<'_>> {
        array_at(&self.status, &["conditions"])
            .iter()
            .find(|c| c.get("type").and_then(Value::as_str) == Some(type_))
            .and_then(Condition::read)
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn trimming_keeps_what_derivations_read_and_drops_what_may_be_secret() {
        let rollout = Object::from_value(serde_json::json!({
            "apiVersion": "argoproj.io/v1alpha1", "kind": "Rollout",
            "metadata": {"name": "shop", "namespace": "app-shop-prod", "annotations": {
                "kubectl.kubernetes.io/last-applied-configuration": "{\"env\": \"secret\"}",
                "hangar.io/deploy-target": "kubernetes"}},
            "spec": {"replicas": 3, "strategy": {"canary": {"steps": [{"setWeight": 20}]}},
                     "template": {"spec": {
                        "containers": [{"name": "app", "image": "ghcr.io/acme/shop:1.2.3",
                                        "env": [{"name": "DB", "value": "postgres://u:secret@db"}],
                                        "args": ["--token=secret"], "command": ["run"], "ports": [{"containerPort": 80}]}],
                        "initContainers": [{"name": "migrate", "image": "m:1", "envFrom": [{"secretRef": {"name": "s"}}]}],
                        "volumes": [{"name": "v", "secret": {"secretName": "s"}}]}}},
            "status": {"phase": "Paused", "canary": {"weights": {"canary": {"weight": 20}}}}
        }))
        .unwrap()
        .trimmed();
        let text = serde_json::to_string(&rollout).unwrap();
        assert!(!text.contains("secret"), "{text}");
        assert_eq!(
            rollout.spec["template"]["spec"]["containers"],
            serde_json::json!([{"name": "app", "image": "ghcr.io/acme/shop:1.2.3"}])
        );
        assert_eq!(rollout.spec["replicas"], 3);
        assert_eq!(rollout.status["canary"]["weights"]["canary"]["weight"], 20);
        assert_eq!(
            rollout.annotation("hangar.io/deploy-target"),
            Some("kubernetes")
        );

        let application = Object::from_value(serde_json::json!({
            "apiVersion": "argoproj.io/v1alpha1", "kind": "Application",
            "metadata": {"name": "shop-prod", "namespace": "argocd"},
            "spec": {"source": {"repoURL": "https://github.com/acme/gitops-shop", "path": ".",
                                "helm": {"valueFiles": ["values.yaml"], "values": "password: secret",
                                         "valuesObject": {"password": "secret"}, "parameters": [{"name": "p", "value": "secret"}]},
                                "plugin": {"name": "p", "env": [{"name": "T", "value": "secret"}], "parameters": [{"string": "secret"}]}},
                     "destination": {"namespace": "app-shop-prod"}},
            "status": {"sync": {"status": "Synced", "comparedTo": {"source": {"helm": {"values": "password: secret"}}}},
                       "health": {"status": "Healthy"}}
        }))
        .unwrap()
        .trimmed();
        let text = serde_json::to_string(&application).unwrap();
        assert!(!text.contains("secret"), "{text}");
        assert_eq!(
            application.spec["source"]["helm"]["valueFiles"][0],
            "values.yaml"
        );
        assert_eq!(application.status["sync"]["status"], "Synced");

        let run = Object::from_value(serde_json::json!({
            "apiVersion": "tekton.dev/v1", "kind": "TaskRun",
            "metadata": {"name": "deploy", "namespace": "app-shop-cicd"},
            "spec": {"params": [{"name": "env", "value": "prod"}, {"name": "registry-token", "value": "secret"}],
                     "taskSpec": {"steps": [{"name": "s", "script": "echo secret"}]}},
            "status": {"results": [{"name": "image-ref", "value": "ghcr.io/acme/shop@sha256:1"}],
                       "taskSpec": {"steps": [{"script": "echo secret"}]},
                       "pipelineSpec": {"tasks": [{"name": "build", "params": [{"name": "t", "value": "secret"}]}]}}
        }))
        .unwrap()
        .trimmed();
        let text = serde_json::to_string(&run).unwrap();
        assert!(!text.contains("secret"), "{text}");
        assert_eq!(
            run.spec["params"],
            serde_json::json!([{"name": "env", "value": "prod"}])
        );
        assert_eq!(run.status["results"][0]["name"], "image-ref");
        assert_eq!(run.status["pipelineSpec"]["tasks"][0]["name"], "build");

        let file = Object::from_value(serde_json::json!({
            "apiVersion": "repo.github.m.upbound.io/v1alpha1", "kind": "RepositoryFile",
            "metadata": {"name": "f"},
            "spec": {"forProvider": {"repository": "gitops-shop", "file": "glidepath/cicd.yaml", "content": "token: secret"}}
        }))
        .unwrap()
        .trimmed();
        assert_eq!(file.spec["forProvider"]["file"], "glidepath/cicd.yaml");
        assert!(file.spec["forProvider"].get("content").is_none());
    }

    use super::*;
    use serde_json::json;

    #[test]
    fn reads_any_kind_leniently() {
        let object = Object::from_value(json!({
            "apiVersion": "repo.github.m.upbound.io/v1alpha1",
            "kind": "Repository",
            "metadata": {
                "name": "shop-repo",
                "namespace": "team-a",
                "creationTimestamp": "not a time",
                "labels": {"crossplane.io/composite": "shop", "odd": 3}
            },
            "status": {"conditions": [
                {"type": "Ready", "status": "True", "lastTransitionTime": "2025-05-04T08:01:02Z"},
                {"status": "False"},
                {"type": "Synced", "status": "Maybe", "message": ""}
            ]}
        }))
        .unwrap();
        assert_eq!(object.group(), "repo.github.m.upbound.io");
        assert_eq!(object.metadata.creation_timestamp, None);
        assert_eq!(object.label("crossplane.io/composite"), Some("shop"));
        assert_eq!(object.label("odd"), None);
        let conditions: Vec<_> = object.conditions().collect();
        assert_eq!(conditions.len(), 2);
        assert!(object.condition("Ready").unwrap().is_true());
        let synced = object.condition("Synced").unwrap();
        assert_eq!(synced.status, ConditionStatus::Unknown);
        assert_eq!(synced.message, None);
    }

    #[test]
    fn objects_without_kind_or_name_are_refused() {
        assert!(Object::from_value(json!({"metadata": {"name": "x"}})).is_none());
        assert!(Object::from_value(json!({"kind": "Pod", "metadata": {}})).is_none());
        assert!(Object::from_value(json!("a string")).is_none());
    }

    #[test]
    fn core_kinds_have_an_empty_group() {
        let pod = Object::from_value(
            json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}}),
        )
        .unwrap();
        assert_eq!(pod.group(), "");
    }
}
