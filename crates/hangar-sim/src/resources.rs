//! The resource types the simulated API servers serve, and their discovery documents.

use serde_json::{json, Value};

/// One served resource type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ResourceType {
    /// Empty for the core group.
    pub group: &'static str,
    pub version: &'static str,
    pub kind: &'static str,
    pub plural: &'static str,
    pub namespaced: bool,
    pub short_names: &'static [&'static str],
}

impl ResourceType {
    /// `v1` or `group/version`.
    pub fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.to_owned()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }

    fn singular(&self) -> String {
        self.kind.to_ascii_lowercase()
    }
}

const fn rt(
    group: &'static str,
    version: &'static str,
    kind: &'static str,
    plural: &'static str,
    namespaced: bool,
    short_names: &'static [&'static str],
) -> ResourceType {
    ResourceType {
        group,
        version,
        kind,
        plural,
        namespaced,
        short_names,
    }
}

/// Everything the simulator serves. Hangar XRs are namespaced (Crossplane v2).
pub const RESOURCES: &[ResourceType] = &[
    rt("", "v1", "Namespace", "namespaces", false, &["ns"]),
    rt("", "v1", "Pod", "pods", true, &["po"]),
    rt("", "v1", "Event", "events", true, &["ev"]),
    rt(
        "autoscaling",
        "v2",
        "HorizontalPodAutoscaler",
        "horizontalpodautoscalers",
        true,
        &["hpa"],
    ),
    rt(
        "external-secrets.io",
        "v1",
        "ExternalSecret",
        "externalsecrets",
        true,
        &["es"],
    ),
    rt(
        "secrets.infisical.com",
        "v1alpha1",
        "InfisicalSecret",
        "infisicalsecrets",
        true,
        &[],
    ),
    rt(
        "catalog.hangar.io",
        "v1alpha1",
        "NodeJS",
        "nodejs",
        true,
        &[],
    ),
    rt(
        "catalog.hangar.io",
        "v1alpha1",
        "SpringBoot",
        "springboots",
        true,
        &[],
    ),
    rt(
        "catalog.hangar.io",
        "v1alpha1",
        "Python",
        "pythons",
        true,
        &[],
    ),
    rt("catalog.hangar.io", "v1alpha1", "Go", "goes", true, &[]),
    rt(
        "catalog.hangar.io",
        "v1alpha1",
        "LambdaFunction",
        "lambdafunctions",
        true,
        &[],
    ),
    rt(
        "catalog.hangar.io",
        "v1alpha1",
        "AzureFunction",
        "azurefunctions",
        true,
        &[],
    ),
    rt(
        "catalog.hangar.io",
        "v1alpha1",
        "InfraService",
        "infraservices",
        true,
        &[],
    ),
    rt(
        "platform.hangar.io",
        "v1alpha1",
        "AppCicd",
        "appcicds",
        true,
        &[],
    ),
    rt(
        "secrets.hangar.io",
        "v1alpha1",
        "SecretStore",
        "secretstores",
        true,
        &[],
    ),
    rt(
        "projects.project.infisical.m.hangar.io",
        "v1alpha1",
        "Project",
        "projects",
        true,
        &[],
    ),
    rt(
        "repo.github.m.upbound.io",
        "v1alpha1",
        "Repository",
        "repositories",
        true,
        &[],
    ),
    rt(
        "repo.github.m.upbound.io",
        "v1alpha1",
        "RepositoryFile",
        "repositoryfiles",
        true,
        &[],
    ),
    rt(
        "tekton.dev",
        "v1",
        "PipelineRun",
        "pipelineruns",
        true,
        &["pr", "prs"],
    ),
    rt(
        "tekton.dev",
        "v1",
        "TaskRun",
        "taskruns",
        true,
        &["tr", "trs"],
    ),
    rt(
        "argoproj.io",
        "v1alpha1",
        "Rollout",
        "rollouts",
        true,
        &["ro"],
    ),
    rt(
        "argoproj.io",
        "v1alpha1",
        "AnalysisRun",
        "analysisruns",
        true,
        &["ar"],
    ),
    rt(
        "argoproj.io",
        "v1alpha1",
        "Application",
        "applications",
        true,
        &["app", "apps"],
    ),
    rt("apps", "v1", "ReplicaSet", "replicasets", true, &["rs"]),
];

/// The type of an object with this `apiVersion` and `kind`.
pub fn by_kind(api_version: &str, kind: &str) -> Option<&'static ResourceType> {
    RESOURCES
        .iter()
        .find(|r| r.kind == kind && r.api_version() == api_version)
}

/// The type served at `group/version/plural`.
pub fn by_plural(group: &str, version: &str, plural: &str) -> Option<&'static ResourceType> {
    RESOURCES
        .iter()
        .find(|r| r.group == group && r.version == version && r.plural == plural)
}

/// `GET /api`.
pub fn core_versions() -> Value {
    json!({"kind": "APIVersions", "versions": ["v1"],
           "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": "127.0.0.1"}]})
}

/// `GET /apis`.
pub fn group_list() -> Value {
    let mut groups: Vec<(&str, &str)> = RESOURCES
        .iter()
        .filter(|r| !r.group.is_empty())
        .map(|r| (r.group, r.version))
        .collect();
    groups.sort_unstable();
    groups.dedup();
    let groups: Vec<Value> = groups
        .into_iter()
        .map(|(group, version)| {
            let gv = json!({"groupVersion": format!("{group}/{version}"), "version": version});
            json!({"name": group, "versions": [gv.clone()], "preferredVersion": gv})
        })
        .collect();
    json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": groups})
}

/// `GET /api/v1` or `GET /apis/<group>/<version>`; `None` for an unknown group/version.
pub fn resource_list(group: &str, version: &str) -> Option<Value> {
    let resources: Vec<Value> = RESOURCES
        .iter()
        .filter(|r| r.group == group && r.version == version)
        .map(|r| {
            json!({"name": r.plural, "singularName": r.singular(), "namespaced": r.namespaced,
                   "kind": r.kind, "verbs": ["get", "list", "watch"], "shortNames": r.short_names})
        })
        .collect();
    if resources.is_empty() {
        return None;
    }
    let group_version = if group.is_empty() {
        version.to_owned()
    } else {
        format!("{group}/{version}")
    };
    Some(
        json!({"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": group_version,
                "resources": resources}),
    )
}
