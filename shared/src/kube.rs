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
