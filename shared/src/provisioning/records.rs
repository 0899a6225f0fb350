//! Compact records of the objects the steps read, taken from the raw objects once when the
//! [`World`](super::World) is built, so that deriving (every second in the browser, on every
//! change in the backend) touches small structs rather than whole JSON trees.

use chrono::{DateTime, Utc};

use crate::kube::{array_at, at, str_at, time, Condition, Object};

use super::model::{ResourceState, ServiceKind};
use crate::cloud::CloudTarget;

/// A Hangar XR.
#[derive(Debug)]
pub struct Xr<'a> {
    pub object: &'a Object,
    pub kind: ServiceKind,
    pub created_at: Option<DateTime<Utc>>,
    pub dev_cluster: Option<Condition<'a>>,
    pub cicd_onboarded: Option<Condition<'a>>,
    pub ready: Option<Condition<'a>>,
    /// `spec.crossplane.resourceRefs` (Crossplane v2) or `spec.resourceRefs` (legacy), as
    /// (apiVersion, kind, name).
    pub resource_refs: Vec<(&'a str, &'a str, &'a str)>,
    /// `hangar.io/deploy-target` on the XR.
    pub target: Option<CloudTarget>,
}

impl<'a> Xr<'a> {
    pub fn new(object: &'a Object, kind: ServiceKind) -> Self {
        let v2 = array_at(&object.spec, &["crossplane", "resourceRefs"]);
        let refs = if v2.is_empty() {
            array_at(&object.spec, &["resourceRefs"])
        } else {
            v2
        };
        Self {
            object,
            kind,
            created_at: object.metadata.creation_timestamp,
            dev_cluster: object.condition("DevClusterReady"),
            cicd_onboarded: object.condition("CicdOnboarded"),
            ready: object.condition("Ready"),
            resource_refs: refs
                .iter()
                .filter_map(|r| {
                    Some((
                        str_at(r, &["apiVersion"]).unwrap_or_default(),
                        str_at(r, &["kind"])?,
                        str_at(r, &["name"])?,
                    ))
                })
                .collect(),
            target: crate::cloud::object_target(object),
        }
    }

    pub fn name(&self) -> &'a str {
        self.object.name()
    }
}

/// A composed managed resource (Repository, RepositoryFile, SecretStore, child XR).
#[derive(Clone, Copy, Debug)]
pub struct Composed<'a> {
    pub object: &'a Object,
    pub state: ResourceState,
    /// The provider's error when failing.
    pub message: Option<&'a str>,
    /// When it became Ready.
    pub ready_at: Option<DateTime<Utc>>,
    /// A Repository's `status.atProvider.htmlUrl`.
    pub html_url: Option<&'a str>,
}

impl<'a> Composed<'a> {
    pub fn new(object: &'a Object) -> Self {
        // Upjet reports async failures on LastAsyncOperation while Synced may still be True.
        let failing = object
            .conditions()
            .find(|c| (c.type_ == "Synced" || c.type_ == "LastAsyncOperation") && c.is_false());
        let ready = object.condition("Ready");
        let (state, message) = match (failing, ready) {
            (Some(c), _) => (ResourceState::Failed, c.message.or(c.reason)),
            (None, Some(c)) if c.is_true() => (ResourceState::Ready, None),
            _ => (ResourceState::NotReady, None),
        };
        Self {
            object,
            state,
            message,
            ready_at: ready
                .filter(|c| c.is_true())
                .and_then(|c| c.last_transition_time),
            html_url: str_at(&object.status, &["atProvider", "htmlUrl"]),
        }
    }

    pub fn name(&self) -> &'a str {
        self.object.name()
    }

    pub fn kind(&self) -> &'a str {
        &self.object.kind
    }
}

/// An Argo CD Application as Argo CD reports it.
#[derive(Clone, Copy, Debug)]
pub struct Application<'a> {
    pub cluster: &'a str,
    pub namespace: Option<&'a str>,
    pub uid: Option<&'a str>,
    pub sync: &'a str,
    pub health: &'a str,
    pub health_message: Option<&'a str>,
    /// `status.health.lastTransitionTime`.
    pub health_since: Option<DateTime<Utc>>,
}

impl<'a> Application<'a> {
    pub fn new(cluster: &'a str, object: &'a Object) -> Self {
        Self {
            cluster,
            namespace: object.namespace(),
            uid: object.metadata.uid.as_deref(),
            sync: str_at(&object.status, &["sync", "status"]).unwrap_or("Unknown"),
            health: str_at(&object.status, &["health", "status"]).unwrap_or("Unknown"),
            health_message: str_at(&object.status, &["health", "message"]),
            health_since: at(&object.status, &["health", "lastTransitionTime"]).and_then(time),
        }
    }
}

/// An Argo Rollout's phase and replica counts.
#[derive(Clone, Copy, Debug)]
pub struct Rollout<'a> {
    pub name: &'a str,
    /// `status.phase`; without one, Healthy when the Healthy condition is true.
    pub phase: &'a str,
    pub message: Option<&'a str>,
    pub desired: i64,
    pub available: i64,
}

impl<'a> Rollout<'a> {
    pub fn new(object: &'a Object) -> Self {
        let phase = str_at(&object.status, &["phase"]).unwrap_or_else(|| {
            match object.condition("Healthy") {
                Some(c) if c.is_true() => "Healthy",
                _ => "Progressing",
            }
        });
        Self {
            name: object.name(),
            phase,
            message: str_at(&object.status, &["message"]).filter(|m| !m.is_empty()),
            // Kubernetes defaults replicas to 1 and omits zero counts.
            desired: at(&object.spec, &["replicas"])
                .and_then(serde_json::Value::as_i64)
                .unwrap_or(1),
            available: at(&object.status, &["availableReplicas"])
                .and_then(serde_json::Value::as_i64)
                .unwrap_or(0),
        }
    }

    pub fn is_healthy(&self) -> bool {
        self.phase == "Healthy" && self.available >= self.desired
    }
}
