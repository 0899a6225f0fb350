//! The [`World`]: a snapshot read once into compact records, filed where the steps look for
//! them, so that deriving a service costs a few hash lookups rather than a scan, and deriving
//! again at a later `now` reads no raw object at all.

use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};

use crate::cloud::CloudTarget;
use crate::github::PullRequest;
use crate::kube::Object;
use crate::snapshot::Snapshot;
use crate::tekton::{PipelineRun, TaskRun};

use super::model::ServiceKind;
use super::records::{Application, Composed, Rollout, Xr};
use super::steps::Prepared;
use super::typical::Typicals;
use crate::hangar::{self, parse_request_title, RequestTitle};

/// Tekton objects of one namespace.
#[derive(Debug, Default)]
pub struct Runs<'a> {
    pub pipeline_runs: Vec<PipelineRun<'a>>,
    pub task_runs: Vec<TaskRun<'a>>,
}

/// Everything the provisioning derivation reads, built once from a [`Snapshot`].
///
/// Build it when the objects change; derive from it as often as the clock ticks
/// ([`super::derive`]). It borrows the snapshot.
#[derive(Debug)]
pub struct World<'a> {
    pub snapshot: &'a Snapshot,
    pub(super) typicals: Typicals,
    /// Hangar XRs on the control-plane cluster, one per name, with what their steps read.
    pub(super) services: Vec<Prepared>,
    xr_names: HashSet<&'a str>,
    /// Repository / RepositoryFile objects by their `crossplane.io/composite` label.
    repo_objects: HashMap<&'a str, Vec<Composed<'a>>>,
    /// Tekton runs by namespace (control-plane cluster).
    runs: HashMap<&'a str, Runs<'a>>,
    /// Hangar SecretStore XRs by `spec.appRef.name`.
    secret_stores: HashMap<&'a str, Vec<Composed<'a>>>,
    /// Infisical Project objects by their name and by their `crossplane.io/composite` label.
    infisical_projects: HashMap<&'a str, Vec<&'a Object>>,
    /// Rollouts by cluster, then namespace.
    rollouts: HashMap<&'a str, HashMap<&'a str, Vec<Rollout<'a>>>>,
    /// Argo CD Applications by name.
    applications: HashMap<&'a str, Vec<Application<'a>>>,
    /// Names in the catalog; `None` when the lookup could not answer.
    catalog: Option<HashSet<&'a str>>,
    /// The names the lookup answered for, when it answers name by name
    /// ([`Snapshot::catalog_asked`]); `None`: every name.
    catalog_asked: Option<HashSet<&'a str>>,
    /// `hangar.io/deploy-target` declared on catalog entities.
    catalog_targets: HashMap<&'a str, CloudTarget>,
    /// Other objects of `*.hangar.io` groups on the control plane (e.g. the CI/CD child XR),
    /// by kind, then name.
    hangar_objects: HashMap<&'a str, HashMap<&'a str, Composed<'a>>>,
    /// PRs by repository name (without owner).
    prs_by_repo: HashMap<&'a str, Vec<&'a PullRequest>>,
    /// "Create …" request PRs by the service name in their title.
    pub(super) request_prs: HashMap<&'a str, Vec<(&'a PullRequest, RequestTitle<'a>)>>,
}

impl<'a> World<'a> {
    /// Reads every object of the snapshot once.
    pub fn new(snapshot: &'a Snapshot) -> Self {
        let mut world = Self {
            snapshot,
            typicals: Typicals::new(&snapshot.history),
            services: Vec::new(),
            xr_names: HashSet::default(),
            repo_objects: HashMap::default(),
            runs: HashMap::default(),
            secret_stores: HashMap::default(),
            infisical_projects: HashMap::default(),
            rollouts: HashMap::default(),
            applications: HashMap::default(),
            catalog: None,
            catalog_asked: None,
            catalog_targets: HashMap::default(),
            hangar_objects: HashMap::default(),
            prs_by_repo: HashMap::default(),
            request_prs: HashMap::default(),
        };
        let mut xrs = Vec::new();
        let control_plane = snapshot.control_plane_cluster.as_str();
        for (cluster, objects) in &snapshot.clusters {
            let on_control_plane = cluster == control_plane;
            for object in objects {
                world.file(cluster, on_control_plane, object, &mut xrs);
            }
        }
        // One XR per name, chosen the same way whatever the input order.
        xrs.sort_by(|a, b| {
            let key = |x: &Xr<'a>| {
                (
                    x.name(),
                    x.kind,
                    x.object.namespace(),
                    x.object.metadata.uid.as_deref(),
                )
            };
            key(a).cmp(&key(b))
        });
        xrs.dedup_by(|a, b| a.name() == b.name());
        world.xr_names = xrs.iter().map(Xr::name).collect();
        for entity in snapshot.catalog.iter().flatten() {
            let declared = entity.metadata.annotations.get(hangar::DEPLOY_TARGET_KEY);
            if let Some(target) = declared.and_then(|id| CloudTarget::from_id(id)) {
                world
                    .catalog_targets
                    .insert(entity.metadata.name.as_str(), target);
            }
        }
        world.catalog = snapshot.catalog.as_ref().map(|entities| {
            entities
                .iter()
                .filter(|e| {
                    ["component", "infraservice", "resource"]
                        .iter()
                        .any(|k| e.kind.eq_ignore_ascii_case(k))
                })
                .map(|e| e.metadata.name.as_str())
                .collect()
        });
        world.catalog_asked = snapshot
            .catalog_asked
            .as_ref()
            .map(|asked| asked.iter().map(String::as_str).collect());
        for pr in snapshot.pull_requests.iter().flatten() {
            world
                .prs_by_repo
                .entry(pr.repo_name())
                .or_default()
                .push(pr);
            if let Some(title) = parse_request_title(&pr.title) {
                world
                    .request_prs
                    .entry(title.name)
                    .or_default()
                    .push((pr, title));
            }
        }
        world.services = xrs
            .into_iter()
            .map(|xr| Prepared::new(&world, xr))
            .collect();
        world
    }

    fn file(
        &mut self,
        cluster: &'a str,
        on_control_plane: bool,
        object: &'a Object,
        xrs: &mut Vec<Xr<'a>>,
    ) {
        let group = object.group();
        match object.kind.as_str() {
            "Rollout" if group == "argoproj.io" => {
                if let Some(ns) = object.namespace() {
                    self.rollouts
                        .entry(cluster)
                        .or_default()
                        .entry(ns)
                        .or_default()
                        .push(Rollout::new(object));
                }
            }
            "Application" if group == "argoproj.io" => {
                self.applications
                    .entry(object.name())
                    .or_default()
                    .push(Application::new(cluster, object));
            }
            _ if !on_control_plane => {}
            kind if group == hangar::XR_GROUP && ServiceKind::from_kind(kind).is_some() => {
                if let Some(kind) = ServiceKind::from_kind(kind) {
                    xrs.push(Xr::new(object, kind));
                }
            }
            "Project" if group.contains("infisical") => {
                let composite = object.label(hangar::COMPOSITE_LABEL);
                for key in std::iter::once(object.name()).chain(composite) {
                    self.infisical_projects.entry(key).or_default().push(object);
                }
            }
            kind if group.ends_with("hangar.io") && kind != "SecretStore" => {
                let by_name = self.hangar_objects.entry(kind).or_default();
                let record = Composed::new(object);
                let slot = by_name.entry(object.name()).or_insert(record);
                if object.metadata.uid < slot.object.metadata.uid {
                    *slot = record;
                }
            }
            "Repository" | "RepositoryFile" if group.starts_with("repo.github.") => {
                if let Some(composite) = object.label(hangar::COMPOSITE_LABEL) {
                    self.repo_objects
                        .entry(composite)
                        .or_default()
                        .push(Composed::new(object));
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
                    self.secret_stores
                        .entry(app)
                        .or_default()
                        .push(Composed::new(object));
                }
            }
            _ => {}
        }
    }

    /// The deploy target a catalog entity declares for `name`.
    pub fn catalog_target(&self, name: &str) -> Option<CloudTarget> {
        self.catalog_targets.get(name).copied()
    }

    pub fn hangar_object(&self, kind: &str, name: &str) -> Option<&Composed<'a>> {
        self.hangar_objects
            .get(kind)
            .and_then(|by_name| by_name.get(name))
    }

    /// Infisical projects named `key` or composed by `key`.
    pub fn infisical_projects(&self, key: &str) -> &[&'a Object] {
        self.infisical_projects.get(key).map_or(&[], Vec::as_slice)
    }

    pub fn has_xr(&self, name: &str) -> bool {
        self.xr_names.contains(name)
    }

    pub fn repo_objects(&self, composite: &str) -> &[Composed<'a>] {
        self.repo_objects.get(composite).map_or(&[], Vec::as_slice)
    }

    pub fn runs(&self, namespace: &str) -> Option<&Runs<'a>> {
        self.runs.get(namespace)
    }

    pub fn secret_stores(&self, app: &str) -> &[Composed<'a>] {
        self.secret_stores.get(app).map_or(&[], Vec::as_slice)
    }

    pub fn rollouts(&self, cluster: &str, namespace: &str) -> &[Rollout<'a>] {
        self.rollouts
            .get(cluster)
            .and_then(|by_namespace| by_namespace.get(namespace))
            .map_or(&[], Vec::as_slice)
    }

    /// Argo CD Applications called `name`, on any cluster.
    pub fn applications(&self, name: &str) -> &[Application<'a>] {
        self.applications.get(name).map_or(&[], Vec::as_slice)
    }

    /// Whether the catalog has an entity called `name`; `None` when it could not answer, or
    /// was not asked about `name`.
    pub fn in_catalog(&self, name: &str) -> Option<bool> {
        let names = self.catalog.as_ref()?;
        if names.contains(name) {
            return Some(true);
        }
        match &self.catalog_asked {
            Some(asked) if !asked.contains(name) => None,
            _ => Some(false),
        }
    }

    /// Whether GitHub answered at all.
    pub fn knows_pull_requests(&self) -> bool {
        self.snapshot.pull_requests.is_some()
    }

    pub fn prs_in_repo(&self, repo_name: &str) -> &[&'a PullRequest] {
        self.prs_by_repo.get(repo_name).map_or(&[], Vec::as_slice)
    }
}
