//! The Config tab's read-only half: what the platform made for an app.
//!
//! - **Secrets**: each External Secrets Operator `ExternalSecret` and Infisical
//!   `InfisicalSecret` of the app (its CI/CD and environment namespaces): ready or not with
//!   the controller's reason, the last successful refresh, the refresh interval, and
//!   **stale** when that refresh is older than twice the interval. Secret names and keys
//!   only: Tower never reads a `Secret`, so it never has a value to show.
//! - **Composed resources**: the app's Crossplane XR and every resource it composes (its
//!   `resourceRefs`, and anything labelled `crossplane.io/composite` for it): Ready,
//!   Synced, the provider's error when one fails, the external name.
//!
//! [`attention`] says which of it the fleet shows amber. Time is a parameter (`now`).

use std::collections::BTreeMap;

use chrono::{DateTime, Duration, Utc};
use serde::{Deserialize, Serialize};

use crate::hangar::{self, NamespaceRole};
use crate::kube::{array_at, str_at, time, Object};
use crate::snapshot::Snapshot;

/// One synchronised secret.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SecretSync {
    /// `ExternalSecret` or `InfisicalSecret`.
    pub kind: String,
    pub name: String,
    pub namespace: String,
    pub cluster: String,
    /// The environment whose namespace holds it; `None` for the CI/CD namespace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub environment: Option<String>,
    /// The store it reads from (`spec.secretStoreRef.name`), when it names one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub store: Option<String>,
    /// The Kubernetes Secret it writes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<String>,
    /// The keys it fills (`spec.data[].secretKey`); never their values.
    #[serde(default)]
    pub keys: Vec<String>,
    /// The `Ready` condition: `None` when the controller has not said.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ready: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// The last successful refresh (`status.refreshTime`); `None`: unknown.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_refresh: Option<DateTime<Utc>>,
    /// How often it refreshes, in seconds; `None`: unknown, `Some(0)`: never.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refresh_interval_sec: Option<i64>,
    /// The last successful refresh is older than twice the interval.
    pub stale: bool,
}

/// One resource the app's XR composes.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ComposedResource {
    pub api_version: String,
    pub kind: String,
    pub name: String,
    /// `None`: Tower does not see the object (a kind it does not read, or not made yet).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ready: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub synced: Option<bool>,
    /// The provider's or controller's error while Ready or Synced is false.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// `crossplane.io/external-name`: what it is called outside the cluster.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub external_name: Option<String>,
    /// Its page outside the cluster, where the object says (`status.atProvider.htmlUrl`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub link: Option<String>,
}

/// The app's XR and what it composes.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Composed {
    pub kind: String,
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ready: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub synced: Option<bool>,
    /// The XR's own error (a composition or function error) while Synced or Ready is false.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    pub resources: Vec<ComposedResource>,
}

/// What the platform made for one app.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Made {
    pub secrets: Vec<SecretSync>,
    /// `None`: Tower sees no XR for the app.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub composed: Option<Composed>,
}

/// A Go duration as controllers write intervals (`1h`, `15m`, `1h30m`, `90s`, `0`), in
/// seconds; `None` when it is not one.
pub fn go_duration(text: &str) -> Option<i64> {
    let text = text.trim();
    if text == "0" {
        return Some(0);
    }
    let (mut total, mut number) = (0f64, String::new());
    let mut chars = text.chars().peekable();
    let mut any = false;
    while let Some(c) = chars.next() {
        if c.is_ascii_digit() || c == '.' {
            number.push(c);
            continue;
        }
        let unit = match (c, chars.peek()) {
            ('m', Some('s')) => {
                chars.next();
                0.001
            }
            ('h', _) => 3600.0,
            ('m', _) => 60.0,
            ('s', _) => 1.0,
            _ => return None,
        };
        let n: f64 = number.parse().ok()?;
        number.clear();
        total += n * unit;
        any = true;
    }
    // A number with no unit left over is not a duration (but "0" above).
    (any && number.is_empty()).then_some(total.round() as i64)
}

/// A condition of `object` as (true, false or unknown; its reason; its message).
fn condition_state(object: &Object, type_: &str) -> (Option<bool>, Option<String>, Option<String>) {
    let Some(c) = object.condition(type_) else {
        return (None, None, None);
    };
    let state = if c.is_true() {
        Some(true)
    } else if c.is_false() {
        Some(false)
    } else {
        None
    };
    (
        state,
        c.reason.map(str::to_owned),
        c.message.map(str::to_owned),
    )
}

fn secret_sync(object: &Object, cluster: &str, now: DateTime<Utc>) -> Option<SecretSync> {
    let namespace = object.namespace()?.to_owned();
    let environment = match hangar::namespace_owner(&namespace) {
        Some((_, NamespaceRole::Environment(env))) => Some(env.to_owned()),
        _ => None,
    };
    let (ready, reason, message, last_refresh, interval, store, target, keys) =
        match (object.group(), object.kind.as_str()) {
            ("external-secrets.io", "ExternalSecret") => {
                let (ready, reason, message) = condition_state(object, "Ready");
                let keys = array_at(&object.spec, &["data"])
                    .iter()
                    .filter_map(|d| str_at(d, &["secretKey"]).map(str::to_owned))
                    .collect();
                (
                    ready,
                    reason,
                    message,
                    crate::kube::at(&object.status, &["refreshTime"]).and_then(time),
                    // ESO's default interval is one hour.
                    str_at(&object.spec, &["refreshInterval"]).map_or(Some(3600), go_duration),
                    str_at(&object.spec, &["secretStoreRef", "name"]).map(str::to_owned),
                    str_at(&object.spec, &["target", "name"])
                        .or(Some(object.name()))
                        .map(str::to_owned),
                    keys,
                )
            }
            ("secrets.infisical.com", "InfisicalSecret") => {
                let (ready, reason, message) =
                    condition_state(object, "secrets.infisical.com/ReadyToSyncSecrets");
                let interval = crate::kube::at(&object.spec, &["resyncInterval"])
                    .map_or(Some(60), serde_json::Value::as_i64);
                (
                    ready,
                    reason,
                    message,
                    // The operator keeps no time of its last sync.
                    None,
                    interval,
                    str_at(
                        &object.spec,
                        &[
                            "authentication",
                            "universalAuth",
                            "secretsScope",
                            "projectSlug",
                        ],
                    )
                    .map(str::to_owned),
                    str_at(&object.spec, &["managedSecretReference", "secretName"])
                        .map(str::to_owned),
                    Vec::new(),
                )
            }
            _ => return None,
        };
    let stale = stale_from(last_refresh, interval).is_some_and(|from| now > from);
    Some(SecretSync {
        kind: object.kind.clone(),
        name: object.name().to_owned(),
        namespace,
        cluster: cluster.to_owned(),
        environment,
        store,
        target,
        keys,
        ready,
        reason,
        message,
        last_refresh,
        refresh_interval_sec: interval,
        stale,
    })
}

/// When a sync last refreshed at `last_refresh` every `interval` seconds counts as stale
/// (once past twice its interval); `None` when either is unknown or it never refreshes.
pub fn stale_from(
    last_refresh: Option<DateTime<Utc>>,
    interval: Option<i64>,
) -> Option<DateTime<Utc>> {
    match (last_refresh, interval) {
        (Some(at), Some(every)) if every > 0 => Some(at + Duration::seconds(every * 2)),
        _ => None,
    }
}

/// The error a resource shows while it fails: Synced's message (the provider's error),
/// else Ready's.
fn failing(object: &Object, synced: Option<bool>, ready: Option<bool>) -> Option<String> {
    let message = |type_| {
        object
            .condition(type_)
            .and_then(|c| c.message.or(c.reason))
            .map(str::to_owned)
    };
    match (synced, ready) {
        (Some(false), _) => message("Synced"),
        (_, Some(false)) => message("Ready"),
        _ => None,
    }
}

/// The control plane's objects by (kind, name) and by the composite they were composed for,
/// read once: the fleet looks up every app's composed resources in one pass.
#[derive(Debug, Default)]
pub struct Composites<'a> {
    by_name: BTreeMap<(&'a str, &'a str), &'a Object>,
    by_composite: BTreeMap<&'a str, Vec<&'a Object>>,
    xrs: Vec<&'a Object>,
}

impl<'a> Composites<'a> {
    pub fn of(snapshot: &'a Snapshot) -> Self {
        let mut index = Self::default();
        for object in snapshot.control_plane() {
            if hangar::is_xr(object) {
                index.xrs.push(object);
                continue;
            }
            index
                .by_name
                .entry((object.kind.as_str(), object.name()))
                .or_insert(object);
            if let Some(composite) = object.label(hangar::COMPOSITE_LABEL) {
                index
                    .by_composite
                    .entry(composite)
                    .or_default()
                    .push(object);
            }
        }
        index
    }

    /// Every XR on the control plane.
    pub fn xrs(&self) -> impl Iterator<Item = &'a Object> + '_ {
        self.xrs.iter().copied()
    }

    /// `xr` and what it composes.
    pub fn composed(&self, xr: &Object, github_host: Option<&str>) -> Option<Composed> {
        let kind = hangar::ServiceKind::from_kind(&xr.kind)?;
        let record = crate::provisioning::records::Xr::new(xr, kind);
        let resource = |api_version: &str, kind: &str, name: &str, object: Option<&Object>| {
            let (ready, synced) = object.map_or((None, None), |o| {
                (
                    condition_state(o, "Ready").0,
                    condition_state(o, "Synced").0,
                )
            });
            ComposedResource {
                api_version: api_version.to_owned(),
                kind: kind.to_owned(),
                name: name.to_owned(),
                ready,
                synced,
                error: object.and_then(|o| failing(o, synced, ready)),
                external_name: object
                    .and_then(|o| o.annotation("crossplane.io/external-name"))
                    .map(str::to_owned),
                link: object
                    .and_then(|o| str_at(&o.status, &["atProvider", "htmlUrl"]))
                    .and_then(|url| crate::links::github(url, github_host))
                    .map(crate::links::Checked::into_string),
            }
        };
        let mut resources: Vec<ComposedResource> = record
            .resource_refs
            .iter()
            .map(|&(api_version, kind, name)| {
                resource(
                    api_version,
                    kind,
                    name,
                    self.by_name.get(&(kind, name)).copied(),
                )
            })
            .collect();
        // Composed objects the XR no longer lists but that still carry its label.
        for object in self.by_composite.get(xr.name()).into_iter().flatten() {
            if !resources
                .iter()
                .any(|r| r.kind == object.kind && r.name == object.name())
            {
                resources.push(resource(
                    &object.api_version,
                    &object.kind,
                    object.name(),
                    Some(object),
                ));
            }
        }
        let (ready, synced) = (
            condition_state(xr, "Ready").0,
            condition_state(xr, "Synced").0,
        );
        Some(Composed {
            kind: xr.kind.clone(),
            name: xr.name().to_owned(),
            ready,
            synced,
            error: failing(xr, synced, ready),
            resources,
        })
    }
}

/// Every secret sync in `snapshot`, with the service whose namespace holds it.
pub fn secret_syncs(snapshot: &Snapshot) -> impl Iterator<Item = (&str, SecretSync)> + '_ {
    snapshot
        .clusters
        .iter()
        .flat_map(move |(cluster, objects)| {
            objects.iter().filter_map(move |o| {
                let (service, _) = o.namespace().and_then(hangar::namespace_owner)?;
                Some((service, secret_sync(o, cluster, snapshot.now)?))
            })
        })
}

/// The environments `service` has, in promotion order: those its `cicd.yaml` declares and
/// those an Argo CD Application deploys it to.
pub fn environments(snapshot: &Snapshot, service: &str) -> Vec<String> {
    let mut out: Vec<String> = snapshot.cicd_of(service).environments.unwrap_or_default();
    out.extend(
        snapshot
            .control_plane()
            .iter()
            .filter(|o| o.kind == "Application" && o.label(hangar::APP_LABEL) == Some(service))
            .filter_map(|o| o.label(hangar::ENVIRONMENT_LABEL).map(str::to_owned)),
    );
    hangar::sort_environments(&mut out);
    out
}

/// What the platform made for `service`, from its part of a snapshot.
pub fn derive(snapshot: &Snapshot, service: &str) -> Made {
    let mut secrets: Vec<SecretSync> = secret_syncs(snapshot)
        .filter(|(owner, _)| *owner == service)
        .map(|(_, secret)| secret)
        .collect();
    secrets.sort_by_key(|s| {
        (
            s.environment.as_deref().map(hangar::promotion_rank),
            s.environment.clone(),
            s.name.clone(),
        )
    });
    let index = Composites::of(snapshot);
    let composed = index
        .xrs()
        .find(|xr| xr.name() == service)
        .and_then(|xr| index.composed(xr, snapshot.github_host.as_deref()));
    Made { secrets, composed }
}

/// Why a secret sync wants attention, in plain words; `None` while it is in step.
pub fn secret_attention(secret: &SecretSync) -> Option<String> {
    match (secret.ready, secret.stale) {
        (Some(false), _) => Some(format!(
            "Secret {} not synced: {}",
            secret.name,
            secret
                .message
                .as_deref()
                .or(secret.reason.as_deref())
                .unwrap_or("no reason given")
        )),
        (_, true) => Some(format!("Secret {} stale", secret.name)),
        _ => None,
    }
}

/// Why an app's composed resources want attention, in plain words: each failing resource,
/// or the XR's own error when no resource explains it.
pub fn composed_attention(composed: &Composed) -> Vec<String> {
    let with = |error: &Option<String>| {
        error
            .as_deref()
            .map(|e| format!(": {e}"))
            .unwrap_or_default()
    };
    let mut out: Vec<String> = composed
        .resources
        .iter()
        .filter(|r| r.ready == Some(false) || r.synced == Some(false))
        .map(|r| format!("{} {} failing{}", r.kind, r.name, with(&r.error)))
        .collect();
    if out.is_empty() && composed.synced == Some(false) {
        out.push(format!(
            "{} {} not synced{}",
            composed.kind,
            composed.name,
            with(&composed.error)
        ));
    }
    out
}
