//! The snapshot: everything a derivation reads, in one value.
//!
//! This is the input format of `tower provisioning` and `tower cloud-deploys` (documented in
//! `docs/snapshot.md`) and what `GET /api/snapshot` serves the browser. Field names are a
//! public interface: keep them stable. An absent field means "not known", which is not the
//! same as empty: `catalog: null` means the catalog lookup could not answer, while
//! `catalog: []` means it answered and found nothing.

use std::collections::BTreeMap;
use std::sync::Arc;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::github::PullRequest;
use crate::hangar;
use crate::kube::Object;

/// Everything known at one moment.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Snapshot {
    /// The moment the derivation describes.
    pub now: DateTime<Utc>,
    /// The cluster holding the Hangar XRs, Tekton runs and the platform's Argo CD.
    #[serde(default = "default_control_plane")]
    pub control_plane_cluster: String,
    /// Objects per cluster, exactly as the API serves them. Objects without a `kind` or
    /// `metadata.name` are dropped; objects of kinds Tower does not use are ignored. Shared
    /// (`Arc`): a new snapshot of a mostly unchanged world, or one service's part of it,
    /// copies no object.
    #[serde(default, deserialize_with = "lenient_clusters")]
    pub clusters: BTreeMap<String, Vec<Arc<Object>>>,
    /// GitHub pull requests Tower looked up (request PRs, onboarding PRs, release PRs).
    /// `None`: GitHub was not asked or did not answer.
    #[serde(default)]
    pub pull_requests: Option<Vec<PullRequest>>,
    /// Backstage catalog entities. `None`: the lookup could not answer.
    #[serde(default)]
    pub catalog: Option<Vec<CatalogEntity>>,
    /// The services the catalog lookup has answered for, when it answers service by service
    /// (the live source asks about each service it shows): one it was not asked about
    /// reads as unknown, not as absent from the catalog. `None`: `catalog` is the whole
    /// catalog.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub catalog_asked: Option<Vec<String>>,
    /// Each service's `cicd.yaml`, as text, when it has been read.
    #[serde(default)]
    pub cicd: BTreeMap<String, String>,
    /// What each `cicd.yaml` says, read by the backend ([`Snapshot::with_cicd_read`]) so
    /// the browser needs no YAML reader; a service's entry here stands for its text.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub cicd_read: BTreeMap<String, crate::cicd::CicdRead>,
    /// Recorded provisioning runs, for typical durations.
    #[serde(default)]
    pub history: Vec<RecordedRun>,
    /// The observer's memory of when it first saw steps running and done.
    #[serde(default)]
    pub observed: BTreeMap<String, BTreeMap<String, Observation>>,
    /// What Prometheus last answered for each service's environments (by service, then
    /// environment): the figures its state's objectives are judged by
    /// ([`crate::slo::JUDGED`]). A service or environment not here was not measured
    /// (no Prometheus, or it has not answered): its objectives are unknown, never met.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub measured: BTreeMap<String, BTreeMap<String, crate::slo::Readings>>,
    /// Base URL of the Infisical UI, for links to a service's secrets project.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub infisical_url: Option<String>,
    /// A GitHub Enterprise host whose pages links may point to, besides github.com.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub github_host: Option<String>,
    /// GitHub's comparisons of consecutive prod releases' commits, by app: the changes each
    /// release brought, for DORA's lead time ([`crate::github::Compared`]). Empty: none read.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub compared: Vec<crate::github::Compared>,
}

fn default_control_plane() -> String {
    "dev".to_owned()
}

fn lenient_clusters<'de, D: serde::Deserializer<'de>>(
    d: D,
) -> Result<BTreeMap<String, Vec<Arc<Object>>>, D::Error> {
    let clusters = BTreeMap::<String, Vec<Value>>::deserialize(d)?;
    Ok(clusters
        .into_iter()
        .map(|(name, objects)| {
            let objects = objects
                .into_iter()
                .filter_map(Object::from_value)
                .map(Arc::new)
                .collect();
            (name, objects)
        })
        .collect())
}

/// A Backstage catalog entity; Tower needs its kind, name and annotations.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CatalogEntity {
    pub kind: String,
    pub metadata: CatalogMetadata,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CatalogMetadata {
    pub name: String,
    #[serde(default)]
    pub namespace: Option<String>,
    #[serde(default)]
    pub annotations: BTreeMap<String, String>,
}

/// One provision Tower saw complete.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RecordedRun {
    pub service: String,
    pub kind: String,
    pub started_at: DateTime<Utc>,
    pub finished_at: DateTime<Utc>,
    /// Seconds per step id, only for steps whose duration was known.
    #[serde(default)]
    pub steps: BTreeMap<String, u64>,
}

/// When the observer first saw a step running, and then done.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Observation {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub running_since: Option<DateTime<Utc>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub done_at: Option<DateTime<Utc>>,
}

/// Why a snapshot could not be read: one line naming the field and the problem.
#[derive(Debug, thiserror::Error)]
#[error("{path}: {message}")]
pub struct SnapshotError {
    pub path: String,
    pub message: String,
}

impl Snapshot {
    /// Whether `service` is one the platform knows: an XR of that name on the control plane, or
    /// any object Hangar's rules give to it (an app of the fleet, its namespaces, its runs).
    pub fn knows(&self, service: &str) -> bool {
        self.clusters
            .values()
            .flatten()
            .any(|o| hangar::service_of(o) == Some(service))
    }

    /// Every service some object is of ([`hangar::service_of`]), by name.
    pub fn known_services(&self) -> std::collections::BTreeSet<&str> {
        self.clusters
            .values()
            .flatten()
            .filter_map(|o| hangar::service_of(o))
            .collect()
    }

    /// A snapshot that knows nothing but the time.
    pub fn empty(now: DateTime<Utc>) -> Self {
        Self {
            now,
            control_plane_cluster: default_control_plane(),
            clusters: BTreeMap::new(),
            pull_requests: None,
            catalog: None,
            catalog_asked: None,
            cicd: BTreeMap::new(),
            cicd_read: BTreeMap::new(),
            history: Vec::new(),
            observed: BTreeMap::new(),
            measured: BTreeMap::new(),
            infisical_url: None,
            github_host: None,
            compared: Vec::new(),
        }
    }

    /// The snapshot with every object [`crate::trim::object`].
    #[must_use]
    pub fn trimmed(mut self) -> Self {
        for objects in self.clusters.values_mut() {
            for object in objects.iter_mut() {
                *object = Arc::new(crate::trim::object(Object::clone(object)));
            }
        }
        self
    }

    /// Parses a snapshot from JSON text.
    pub fn from_json(text: &str) -> Result<Self, SnapshotError> {
        let de = &mut serde_json::Deserializer::from_str(text);
        serde_path_to_error::deserialize(de).map_err(|err| {
            let path = err.path().to_string();
            SnapshotError {
                path: if path == "." {
                    "snapshot".to_owned()
                } else {
                    path
                },
                message: err.into_inner().to_string(),
            }
        })
    }

    /// The control plane's objects (XRs, composed resources, CI/CD runs).
    pub fn control_plane(&self) -> &[Arc<Object>] {
        self.cluster(&self.control_plane_cluster)
    }

    /// The objects of one cluster (empty when the cluster is not in the snapshot).
    pub fn cluster(&self, name: &str) -> &[Arc<Object>] {
        self.clusters.get(name).map_or(&[], Vec::as_slice)
    }

    /// What the browser needs to derive one service's views: every object that belongs to
    /// it by the platform's rules ([`hangar::belongs_to`]: its XR and composed objects, its
    /// CI/CD and environment namespaces, its Argo CD Applications), the PRs of its
    /// repositories and its request PRs, its catalog entity, cicd.yaml and memory. History
    /// is kept whole: typical durations fall back to all kinds.
    pub fn for_service(&self, service: &str) -> Snapshot {
        self.narrowed(service, |cluster| {
            self.cluster(cluster)
                .iter()
                .filter(|o| hangar::belongs_to(o, service))
                .cloned()
                .collect()
        })
    }

    /// `service`'s part of this snapshot with `objects(cluster)` as its objects on each of
    /// the snapshot's clusters: the PRs of its repositories and its request PRs, its catalog
    /// entity, cicd.yaml and memory; history whole ([`Snapshot::for_service`]). How the
    /// objects were found is the caller's: `for_service` passes over the snapshot, the
    /// backend reads its own filing.
    pub fn narrowed(
        &self,
        service: &str,
        mut objects: impl FnMut(&str) -> Vec<Arc<Object>>,
    ) -> Snapshot {
        let repos = hangar::repos(service, None);
        Snapshot {
            now: self.now,
            control_plane_cluster: self.control_plane_cluster.clone(),
            clusters: self
                .clusters
                .keys()
                .map(|cluster| (cluster.clone(), objects(cluster)))
                .collect(),
            pull_requests: self.pull_requests.as_ref().map(|prs| {
                prs.iter()
                    .filter(|pr| {
                        repos.iter().any(|r| r == pr.repo_name())
                            || hangar::parse_request_title(&pr.title)
                                .is_some_and(|t| t.name == service)
                    })
                    .cloned()
                    .collect()
            }),
            catalog: self.catalog.as_ref().map(|entities| {
                entities
                    .iter()
                    .filter(|e| e.metadata.name == service)
                    .cloned()
                    .collect()
            }),
            catalog_asked: self
                .catalog_asked
                .as_ref()
                .map(|asked| asked.iter().filter(|n| *n == service).cloned().collect()),
            cicd: only_entry(&self.cicd, service),
            cicd_read: only_entry(&self.cicd_read, service),
            history: self.history.clone(),
            observed: only_entry(&self.observed, service),
            measured: only_entry(&self.measured, service),
            infisical_url: self.infisical_url.clone(),
            github_host: self.github_host.clone(),
            compared: self
                .compared
                .iter()
                .filter(|c| c.service == service)
                .cloned()
                .collect(),
        }
    }
}

impl Snapshot {
    /// What `service`'s `cicd.yaml` says: the backend's reading when it sent one, else the
    /// text read now (without the `yaml` feature, an unread text counts as unreadable).
    pub fn cicd_of(&self, service: &str) -> crate::cicd::CicdRead {
        match self.cicd_read.get(service) {
            Some(read) => read.clone(),
            None => crate::cicd::CicdRead::of(self.cicd.get(service).map(String::as_str)),
        }
    }

    /// The snapshot with every `cicd.yaml` text read ([`Snapshot::cicd_read`]): for a
    /// browser that derives from it without reading YAML.
    #[cfg(feature = "yaml")]
    #[must_use]
    pub fn with_cicd_read(mut self) -> Self {
        self.cicd_read = self
            .cicd
            .iter()
            .map(|(service, text)| (service.clone(), crate::cicd::CicdRead::of(Some(text))))
            .collect();
        self
    }
}

impl Snapshot {
    /// Whether the snapshot holds no object and no pull request (a narrowed snapshot of a
    /// service Tower does not know).
    pub fn is_empty(&self) -> bool {
        self.clusters.values().all(Vec::is_empty)
            && self.pull_requests.as_ref().is_none_or(Vec::is_empty)
    }
}

/// The map with only `key`'s entry (or empty).
fn only_entry<V: Clone>(map: &BTreeMap<String, V>, key: &str) -> BTreeMap<String, V> {
    map.get_key_value(key)
        .map(|(k, v)| (k.clone(), v.clone()))
        .into_iter()
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn absent_fields_mean_not_known() {
        let s = Snapshot::from_json(r#"{"now": "2026-11-30T10:00:00Z"}"#).unwrap();
        assert_eq!(s.control_plane_cluster, "dev");
        assert!(s.pull_requests.is_none());
        assert!(s.catalog.is_none());
        assert!(s.clusters.is_empty());
    }

    #[test]
    fn malformed_input_names_the_field() {
        let err = Snapshot::from_json(
            r#"{"now": "2026-11-30T10:00:00Z", "pullRequests": [{"repo": 3}]}"#,
        )
        .unwrap_err();
        assert_eq!(err.path, "pullRequests[0].repo");
        assert!(
            err.to_string()
                .starts_with("pullRequests[0].repo: invalid type"),
            "{err}"
        );

        let err = Snapshot::from_json(r#"{"now": "yesterday"}"#).unwrap_err();
        assert_eq!(err.path, "now");

        let err = Snapshot::from_json("{").unwrap_err();
        assert!(err.message.contains("EOF"), "{err}");

        let err = Snapshot::from_json("{}").unwrap_err();
        assert!(err.message.contains("missing field `now`"), "{err}");
    }

    #[test]
    fn narrowing_to_a_service_keeps_its_objects_only() {
        let s = Snapshot::from_json(
            r#"{"now": "2026-11-30T10:00:00Z", "clusters": {"dev": [
                {"kind": "NodeJS", "metadata": {"name": "shop"}},
                {"kind": "PipelineRun", "metadata": {"name": "b", "namespace": "app-shop-cicd"}},
                {"kind": "Rollout", "metadata": {"name": "shop", "namespace": "app-shop-dev"}},
                {"kind": "Repository", "metadata": {"name": "shop-gitops", "labels": {"crossplane.io/composite": "shop"}}},
                {"apiVersion": "argoproj.io/v1alpha1", "kind": "Application", "metadata": {"name": "shop-cicd", "namespace": "argocd"}},
                {"kind": "PipelineRun", "metadata": {"name": "c", "namespace": "app-shop-v2-cicd"}},
                {"apiVersion": "argoproj.io/v1alpha1", "kind": "Application", "metadata": {"name": "shopfront-cicd", "namespace": "argocd"}},
                {"apiVersion": "argoproj.io/v1alpha1", "kind": "Application", "metadata": {"name": "shop-v2-cicd", "namespace": "argocd"}},
                {"kind": "NodeJS", "metadata": {"name": "shop-v2"}}
            ]}, "pullRequests": [
                {"repo": "acme/gitops-shop", "number": 1, "title": "Onboarding: re-sync", "state": "open"},
                {"repo": "acme/hangar-tenants", "number": 2, "title": "Create NodeJS shop", "state": "open"},
                {"repo": "acme/hangar-tenants", "number": 3, "title": "Create NodeJS shop-v2", "state": "open"}
            ]}"#,
        )
        .unwrap();
        let shop = s.for_service("shop");
        let names: Vec<&str> = shop.cluster("dev").iter().map(|o| o.name()).collect();
        assert_eq!(names, ["shop", "b", "shop", "shop-gitops", "shop-cicd"]);
        let prs: Vec<u64> = shop
            .pull_requests
            .unwrap()
            .iter()
            .map(|p| p.number)
            .collect();
        assert_eq!(prs, [1, 2]);
        assert!(!s.for_service("shop-v2").is_empty());
        assert!(s.for_service("nothing").is_empty());
    }

    #[test]
    fn objects_without_kind_or_name_are_dropped() {
        let s = Snapshot::from_json(
            r#"{"now": "2026-11-30T10:00:00Z", "clusters": {"dev": [
                {"kind": "Pod", "metadata": {"name": "a"}},
                {"metadata": {"name": "no-kind"}},
                42
            ]}}"#,
        )
        .unwrap();
        assert_eq!(s.cluster("dev").len(), 1);
        assert!(s.cluster("prod").is_empty());
    }
}
