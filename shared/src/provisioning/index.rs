//! One pass over the snapshot that files every object where the steps look for it, so that
//! deriving a service costs a few hash lookups rather than a scan.

use std::collections::{HashMap, HashSet};

use crate::cloud::CloudTarget;
use crate::kube::Object;
use crate::snapshot::{PullRequest, Snapshot};
use crate::tekton::{PipelineRun, TaskRun};

use super::model::ServiceKind;
use super::request::{parse_request_title, RequestTitle};
use super::XR_GROUP;

/// Tekton objects of one namespace.
#[derive(Debug, Default)]
pub struct Runs<'a> {
    pub pipeline_runs: Vec<PipelineRun<'a>>,
    pub task_runs: Vec<TaskRun<'a>>,
}

/// The snapshot, filed for lookups.
#[derive(Debug)]
pub struct Index<'a> {
    pub snapshot: &'a Snapshot,
    /// Hangar XRs on the control-plane cluster, with their kind.
    pub xrs: Vec<(&'a Object, ServiceKind)>,
    xr_names: HashSet<&'a str>,
    /// Repository / RepositoryFile objects by their `crossplane.io/composite` label.
    repo_objects: HashMap<&'a str, Vec<&'a Object>>,
    /// Tekton runs by namespace (control-plane cluster).
    runs: HashMap<&'a str, Runs<'a>>,
    /// Hangar SecretStore XRs by `spec.appRef.name`.
    secret_stores: HashMap<&'a str, Vec<&'a Object>>,
    /// Infisical Project objects.
    pub infisical_projects: Vec<&'a Object>,
    /// Rollouts by (cluster, namespace).
    rollouts: HashMap<&'a str, HashMap<&'a str, Vec<&'a Object>>>,
    /// Argo CD Applications by name, with their cluster.
    applications: HashMap<&'a str, Vec<(&'a str, &'a Object)>>,
    /// Names in the catalog; `None` when the lookup could not answer.
    catalog: Option<HashSet<&'a str>>,
    /// `hangar.io/deploy-target` declared on catalog entities.
    catalog_targets: HashMap<&'a str, CloudTarget>,
    /// Other objects of `*.hangar.io` groups on the control plane (e.g. the CI/CD child XR),
    /// by (kind, name).
    hangar_objects: HashMap<&'a str, HashMap<&'a str, &'a Object>>,
    /// PRs by repository name (without owner).
    prs_by_repo: HashMap<&'a str, Vec<&'a PullRequest>>,
    /// "Create …" request PRs by the service name in their title.
    pub request_prs: HashMap<&'a str, Vec<(&'a PullRequest, RequestTitle<'a>)>>,
}

impl<'a> Index<'a> {
    pub fn new(snapshot: &'a Snapshot) -> Self {
        let mut index = Self {
            snapshot,
            xrs: Vec::new(),
            xr_names: HashSet::new(),
            repo_objects: HashMap::new(),
            runs: HashMap::new(),
            secret_stores: HashMap::new(),
            infisical_projects: Vec::new(),
            rollouts: HashMap::new(),
            applications: HashMap::new(),
            catalog: None,
            catalog_targets: HashMap::new(),
            hangar_objects: HashMap::new(),
            prs_by_repo: HashMap::new(),
            request_prs: HashMap::new(),
        };
        let control_plane = snapshot.control_plane_cluster.as_str();
        for (cluster, objects) in &snapshot.clusters {
            let on_control_plane = cluster == control_plane;
            for object in objects {
                index.file(cluster, on_control_plane, object);
            }
        }
        // One XR per name, chosen the same way whatever the input order.
        index.xrs.sort_by(|(a, ak), (b, bk)| {
            (a.name(), ak, a.namespace(), &a.metadata.uid).cmp(&(
                b.name(),
                bk,
                b.namespace(),
                &b.metadata.uid,
            ))
        });
        index.xrs.dedup_by(|(a, _), (b, _)| a.name() == b.name());
        for entity in snapshot.catalog.iter().flatten() {
            if let Some(target) = entity
                .metadata
                .annotations
                .get(crate::cloud::DEPLOY_TARGET_KEY)
                .and_then(|id| CloudTarget::from_id(id))
            {
                index
                    .catalog_targets
                    .insert(entity.metadata.name.as_str(), target);
            }
        }
        index.catalog = snapshot.catalog.as_ref().map(|entities| {
            entities
                .iter()
                .filter(|e| {
                    let kind = e.kind.to_ascii_lowercase();
                    kind == "component" || kind == "infraservice" || kind == "resource"
                })
                .map(|e| e.metadata.name.as_str())
                .collect()
        });
        for pr in snapshot.pull_requests.iter().flatten() {
            index
                .prs_by_repo
                .entry(pr.repo_name())
                .or_default()
                .push(pr);
            if let Some(title) = parse_request_title(&pr.title) {
                index
                    .request_prs
                    .entry(title.name)
                    .or_default()
                    .push((pr, title));
            }
        }
        index
    }

    fn file(&mut self, cluster: &'a str, on_control_plane: bool, object: &'a Object) {
        let group = object.group();
        match object.kind.as_str() {
            "Rollout" if group == "argoproj.io" => {
                if let Some(ns) = object.namespace() {
                    self.rollouts
                        .entry(cluster)
                        .or_default()
                        .entry(ns)
                        .or_default()
                        .push(object);
                }
            }
            "Application" if group == "argoproj.io" => {
                self.applications
                    .entry(object.name())
                    .or_default()
                    .push((cluster, object));
            }
            _ if !on_control_plane => {}
            kind if group == XR_GROUP && ServiceKind::from_kind(kind).is_some() => {
                if let Some(kind) = ServiceKind::from_kind(kind) {
                    self.xrs.push((object, kind));
                    self.xr_names.insert(object.name());
                }
            }
            kind if group.ends_with("hangar.io") && kind != "SecretStore" => {
                let slot = self
                    .hangar_objects
                    .entry(kind)
                    .or_default()
                    .entry(object.name())
                    .or_insert(object);
                if object.metadata.uid < slot.metadata.uid {
                    *slot = object;
                }
            }
            "Repository" | "RepositoryFile" if group.starts_with("repo.github.") => {
                if let Some(composite) = object.label("crossplane.io/composite") {
                    self.repo_objects.entry(composite).or_default().push(object);
                }
            }
            "PipelineRun" | "TaskRun" => {
                if let Some(ns) = object.namespace() {
                    let runs = self.runs.entry(ns).or_default();
                    if let Some(run) = PipelineRun::new(object) {
                        runs.pipeline_runs.push(run);
                    } else if let Some(task) = TaskRun::new(object) {
                        runs.task_runs.push(task);
                    }
                }
            }
            "SecretStore" => {
                if let Some(app) = crate::kube::str_at(&object.spec, &["appRef", "name"]) {
                    self.secret_stores.entry(app).or_default().push(object);
                }
            }
            "Project" if group.contains("infisical") => self.infisical_projects.push(object),
            _ => {}
        }
    }

    /// The deploy target a catalog entity declares for `name`.
    pub fn catalog_target(&self, name: &str) -> Option<CloudTarget> {
        self.catalog_targets.get(name).copied()
    }

    pub fn hangar_object(&self, kind: &str, name: &str) -> Option<&'a Object> {
        self.hangar_objects
            .get(kind)
            .and_then(|by_name| by_name.get(name))
            .copied()
    }

    pub fn has_xr(&self, name: &str) -> bool {
        self.xr_names.contains(name)
    }

    pub fn repo_objects(&self, composite: &str) -> &[&'a Object] {
        self.repo_objects.get(composite).map_or(&[], Vec::as_slice)
    }

    pub fn runs(&self, namespace: &str) -> Option<&Runs<'a>> {
        self.runs.get(namespace)
    }

    pub fn secret_stores(&self, app: &str) -> &[&'a Object] {
        self.secret_stores.get(app).map_or(&[], Vec::as_slice)
    }

    pub fn rollouts(&self, cluster: &str, namespace: &str) -> &[&'a Object] {
        self.rollouts
            .get(cluster)
            .and_then(|by_namespace| by_namespace.get(namespace))
            .map_or(&[], Vec::as_slice)
    }

    /// Argo CD Applications called `name`, on any cluster.
    pub fn applications(&self, name: &str) -> &[(&'a str, &'a Object)] {
        self.applications.get(name).map_or(&[], Vec::as_slice)
    }

    /// Whether the catalog has an entity called `name`; `None` when it could not answer.
    pub fn in_catalog(&self, name: &str) -> Option<bool> {
        self.catalog.as_ref().map(|names| names.contains(name))
    }

    /// Whether GitHub answered at all.
    pub fn knows_pull_requests(&self) -> bool {
        self.snapshot.pull_requests.is_some()
    }

    pub fn prs_in_repo(&self, repo_name: &str) -> &[&'a PullRequest] {
        self.prs_by_repo.get(repo_name).map_or(&[], Vec::as_slice)
    }
}
