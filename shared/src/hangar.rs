//! Hangar's platform rules, in one place: how the platform names namespaces, repositories,
//! Argo CD Applications and labels; which XR kinds it has; which pull request asks for a
//! service and whether that request is still pending; which Kubernetes kinds Tower watches.
//!
//! Every other module asks here instead of spelling a rule inline (`format!("app-{s}-cicd")`
//! in two places drifts apart: it did). The rules follow `provisioning.md`:
//! - an application's CI/CD objects live in `app-<service>-cicd`, an InfraService's in
//!   `infra-<service>-cicd`; each environment's in `app-<service>-<env>` (every kind), where
//!   an environment name is one word;
//! - an application's repositories are `<service>` (source) and `gitops-<service>`; a function
//!   has no GitOps repo; an InfraService has only `gitops-infra-<service>`;
//! - Argo CD Applications are `<service>-cicd` (the platform's CI/CD app) and
//!   `<service>-<env>` (one per environment, labelled `hangar.io/app` and
//!   `hangar.io/environment`), in namespace `argocd`;
//! - a request PR is titled `Create <Kind> <name>`, `Create <Kind> Resource <name>` or
//!   `Create Resource <name>` in the cluster's tenants repo.

use chrono::{DateTime, Duration, Utc};
use serde::{Deserialize, Serialize};

use crate::github::PullRequest;
use crate::kube::Object;

/// The API group of the Hangar XRs.
pub const XR_GROUP: &str = "catalog.hangar.io";
/// The namespace of the Argo CD Applications Tower reads.
pub const ARGOCD_NAMESPACE: &str = "argocd";
/// The label Hangar's ApplicationSets put on each Application: the app it deploys.
pub const APP_LABEL: &str = "hangar.io/app";
/// The label naming an Application's environment.
pub const ENVIRONMENT_LABEL: &str = "hangar.io/environment";
/// The label Crossplane puts on every composed resource: its XR's name.
pub const COMPOSITE_LABEL: &str = "crossplane.io/composite";
/// The annotation (or label) on a service's XR or catalog entity naming its deploy target.
pub const DEPLOY_TARGET_KEY: &str = "hangar.io/deploy-target";
/// The Tekton pipeline that builds an application (`tekton.dev/pipeline=build`).
pub const BUILD_PIPELINE: &str = "build";
/// The branch Hangar's repos build and deploy from (what the scaffold creates).
pub const DEFAULT_BRANCH: &str = "main";
/// Where `cicd.yaml` lives in the GitOps repo when no scaffold file says otherwise.
pub const DEFAULT_CICD_PATH: &str = "glidepath/cicd.yaml";
/// Merged request PRs stay pending this long while the XR does not exist.
pub const PENDING_MERGED_WINDOW: Duration = Duration::minutes(30);

/// The Hangar XR kinds (group `catalog.hangar.io`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum ServiceKind {
    NodeJS,
    SpringBoot,
    Python,
    Go,
    LambdaFunction,
    AzureFunction,
    InfraService,
}

impl ServiceKind {
    pub const ALL: [Self; 7] = [
        Self::NodeJS,
        Self::SpringBoot,
        Self::Python,
        Self::Go,
        Self::LambdaFunction,
        Self::AzureFunction,
        Self::InfraService,
    ];

    /// Reads an XR kind as Kubernetes spells it.
    pub fn from_kind(kind: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|k| k.as_str() == kind)
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Self::NodeJS => "NodeJS",
            Self::SpringBoot => "SpringBoot",
            Self::Python => "Python",
            Self::Go => "Go",
            Self::LambdaFunction => "LambdaFunction",
            Self::AzureFunction => "AzureFunction",
            Self::InfraService => "InfraService",
        }
    }

    pub fn is_function(self) -> bool {
        matches!(self, Self::LambdaFunction | Self::AzureFunction)
    }

    pub fn is_infra(self) -> bool {
        self == Self::InfraService
    }
}

/// A Kubernetes object name as Hangar services use them (RFC 1123 label).
pub fn is_dns_label(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 63
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !name.starts_with('-')
        && !name.ends_with('-')
}

/// Whether `object` is a Hangar XR (any of [`ServiceKind`]).
pub fn is_xr(object: &Object) -> bool {
    object.group() == XR_GROUP && ServiceKind::from_kind(&object.kind).is_some()
}

/// The namespace of a service's CI/CD objects (Tekton runs, SecretStore):
/// `infra-<s>-cicd` for an InfraService, `app-<s>-cicd` for everything else (and when the
/// kind is not known).
pub fn cicd_namespace(service: &str, kind: Option<ServiceKind>) -> String {
    if kind.is_some_and(ServiceKind::is_infra) {
        format!("infra-{service}-cicd")
    } else {
        format!("app-{service}-cicd")
    }
}

/// The namespace a service runs in in environment `env`: `app-<s>-<env>` (every kind).
pub fn env_namespace(service: &str, env: &str) -> String {
    format!("app-{service}-{env}")
}

/// The service a namespace belongs to, and what it holds: `app-<s>-cicd` /
/// `infra-<s>-cicd` → CI/CD, `app-<s>-<env>` → that environment (one word).
pub fn namespace_owner(namespace: &str) -> Option<(&str, NamespaceRole<'_>)> {
    if let Some(service) = namespace
        .strip_prefix("infra-")
        .and_then(|rest| rest.strip_suffix("-cicd"))
    {
        return is_dns_label(service).then_some((service, NamespaceRole::Cicd));
    }
    let (service, env) = namespace.strip_prefix("app-")?.rsplit_once('-')?;
    if !is_dns_label(service) || env.is_empty() {
        return None;
    }
    Some(match env {
        "cicd" => (service, NamespaceRole::Cicd),
        env => (service, NamespaceRole::Environment(env)),
    })
}

/// What a service's namespace holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NamespaceRole<'a> {
    Cicd,
    Environment(&'a str),
}

/// The platform's own Argo CD Application for a service's CI/CD: `<s>-cicd`.
pub fn cicd_application(service: &str) -> String {
    format!("{service}-cicd")
}

/// The Argo CD Application deploying a service to `env`: `<s>-<env>`.
pub fn env_application(service: &str, env: &str) -> String {
    format!("{service}-{env}")
}

/// Environments Tower knows the promotion order of; others follow alphabetically.
const PROMOTION_ORDER: [&str; 6] = ["dev", "test", "qa", "staging", "preprod", "prod"];

/// Sorts environment names in promotion order (dev, test, qa, staging, preprod, prod, then
/// any others alphabetically) and drops repeats.
pub fn sort_environments(environments: &mut Vec<String>) {
    environments.sort_by(|a, b| (promotion_rank(a), a).cmp(&(promotion_rank(b), b)));
    environments.dedup();
}

/// Where `env` sorts in promotion order: the platform's known names in order, then the
/// rest (by name, at the caller).
pub fn promotion_rank(env: &str) -> (bool, Option<usize>) {
    let rank = PROMOTION_ORDER.iter().position(|e| *e == env);
    (rank.is_none(), rank)
}

/// The environment of `service` whose namespace (`app-<service>-<env>`) `object` is in.
pub fn environment_of<'o>(object: &'o Object, service: &str) -> Option<&'o str> {
    match namespace_owner(object.namespace()?)? {
        (owner, NamespaceRole::Environment(env)) if owner == service => Some(env),
        _ => None,
    }
}

/// Whether `env` is the production environment, which a release reaches only through a
/// reviewed pull request.
pub fn is_production(env: &str) -> bool {
    env == "prod"
}

/// The branch Tower proposes the promotion of `image` to `env` on
/// (`tower/promote-prod-1.4.0-3a8423b`): named for the change, so the same promotion
/// finds its pull request again.
pub fn promotion_branch(env: &str, image: &str) -> String {
    let image = crate::image::Image::parse(image);
    let tag = image.tag.unwrap_or_else(|| image.name());
    format!("tower/promote-{env}-{tag}")
}

/// The label on every pull request Tower opens for a promotion.
pub const PROMOTION_LABEL: &str = "tower-promotion";
/// The label on pull requests Tower opens to change an app's config files.
pub const CONFIG_LABEL: &str = "tower-config";
/// What every config branch Tower opens starts with.
pub const CONFIG_BRANCH_PREFIX: &str = "tower/config-";

/// The branch Tower proposes a change of config file `file` (`env:prod`, `cicd`) on, from
/// the file as it was at blob `seen` (`tower/config-env-prod-3a8423b1`): a second save of
/// the same edit finds its pull request again, and a change after that one merged starts a
/// branch of its own.
pub fn config_branch(file: &str, seen: Option<&str>) -> String {
    let file = file.replace(':', "-");
    let seen = seen.map_or("new", |s| &s[..s.len().min(8)]);
    format!("{CONFIG_BRANCH_PREFIX}{file}-{seen}")
}

/// Whether `branch` is one [`config_branch`] names for `file`.
pub fn is_config_branch(branch: &str, file: &str) -> bool {
    branch
        .strip_prefix(CONFIG_BRANCH_PREFIX)
        .and_then(|rest| rest.strip_prefix(&file.replace(':', "-")))
        .and_then(|rest| rest.strip_prefix('-'))
        .is_some_and(|seen| !seen.contains('-'))
}

/// Where release records live in an app's GitOps repository (`gitops-<app>`): one file per
/// prod release, `glidepath/releases/<release>.yaml` ([`record_path`]).
pub const RECORDS_DIR: &str = "glidepath/releases";

/// The record file of `release` (a [`crate::image::release_name`]) in `gitops-<app>`.
pub fn record_path(release: &str) -> String {
    format!("{RECORDS_DIR}/{release}.yaml")
}

/// The branch Tower proposes `release`'s record on (`tower/record-1.4.0-3a8423b`): one per
/// release, so every replica and restart finds the same pull request.
pub fn record_branch(release: &str) -> String {
    format!("tower/record-{release}")
}

/// The branch a human part of `release`'s record is proposed on, named for its content
/// (`change`: a short hash), so the same words find the same pull request and different
/// words get their own.
pub fn record_notes_branch(release: &str, change: &str) -> String {
    format!("tower/record-{release}-notes-{change}")
}

/// The label on every pull request that writes a release record.
pub const RECORD_LABEL: &str = "tower-release-record";

/// The service an object belongs to, by the platform's rules, in this order: an XR is the
/// service; a composed resource names it in `crossplane.io/composite`; an Application in
/// `hangar.io/app` or, unlabelled, by its name `<s>-<env>`; anything else by its namespace.
/// `None` for objects of no service (the platform's own).
pub fn service_of(object: &Object) -> Option<&str> {
    if is_xr(object) {
        return Some(object.name());
    }
    if let Some(composite) = object.label(COMPOSITE_LABEL) {
        return Some(composite);
    }
    if is_application(object) {
        return application_service(object);
    }
    namespace_service(object)
}

/// Whether `object` belongs to `service` by any of [`service_of`]'s rules, or is named
/// after it (e.g. an Infisical Project or the CI/CD child XR).
pub fn belongs_to(object: &Object, service: &str) -> bool {
    owners(object).any(|s| s == service)
}

/// Every service `object` belongs to ([`belongs_to`]): the composite it was composed for,
/// its namespace's, an Application's, and the one it is named after — unless its
/// namespace or `hangar.io/app` label already says whose it is (a run or ReplicaSet in
/// `app-<s>-<env>` is `<s>`'s, not a service of its own name). May repeat one.
pub fn owners(object: &Object) -> impl Iterator<Item = &str> {
    let namespace = namespace_service(object);
    let application = is_application(object);
    let labelled = application && object.label(APP_LABEL).is_some();
    let named = (namespace.is_none() && !labelled).then(|| object.name());
    [
        named,
        object.label(COMPOSITE_LABEL),
        namespace,
        application.then(|| application_service(object)).flatten(),
    ]
    .into_iter()
    .flatten()
}

fn is_application(object: &Object) -> bool {
    object.kind == "Application" && object.group() == "argoproj.io"
}

/// An Application's service: its `hangar.io/app` label, else its name without the last
/// word (`<s>-cicd`, `<s>-<env>`).
fn application_service(object: &Object) -> Option<&str> {
    object.label(APP_LABEL).or_else(|| {
        object
            .name()
            .rsplit_once('-')
            .map(|(service, _)| service)
            .filter(|s| is_dns_label(s))
    })
}

fn namespace_service(object: &Object) -> Option<&str> {
    object
        .namespace()
        .and_then(namespace_owner)
        .map(|(service, _)| service)
}

/// The source repository's name (without owner): the service's own name.
pub fn source_repo(service: &str) -> &str {
    service
}

/// The GitOps repository's name: `gitops-infra-<s>` for an InfraService, else `gitops-<s>`.
pub fn gitops_repo(service: &str, kind: Option<ServiceKind>) -> String {
    if kind.is_some_and(ServiceKind::is_infra) {
        format!("gitops-infra-{service}")
    } else {
        format!("gitops-{service}")
    }
}

/// The repositories (names without owner) a service of `kind` has: an application's source
/// and GitOps repos, a function's source repo, an InfraService's GitOps repo. With the kind
/// unknown, every name it could have.
pub fn repos(service: &str, kind: Option<ServiceKind>) -> Vec<String> {
    match kind {
        Some(k) if k.is_infra() => vec![gitops_repo(service, kind)],
        Some(k) if k.is_function() => vec![source_repo(service).to_owned()],
        Some(_) => vec![source_repo(service).to_owned(), gitops_repo(service, kind)],
        None => vec![
            source_repo(service).to_owned(),
            gitops_repo(service, None),
            gitops_repo(service, Some(ServiceKind::InfraService)),
        ],
    }
}

/// The service a repository (name without owner) belongs to: `gitops-infra-<s>` and
/// `gitops-<s>` are `<s>`'s, any other is a source repo named after its service.
pub fn service_of_repo(repo_name: &str) -> Option<&str> {
    let service = repo_name
        .strip_prefix("gitops-infra-")
        .or_else(|| repo_name.strip_prefix("gitops-"))
        .unwrap_or(repo_name);
    is_dns_label(service).then_some(service)
}

/// Whether `repo_name` (without owner, lower case) is one of the repositories Hangar's rules
/// give a known service — the only repositories Tower's GitHub routes read, besides the
/// configured tenants repositories. `knows` says whether a service is known
/// ([`crate::snapshot::Snapshot::knows`]).
pub fn is_known_repo(repo_name: &str, knows: impl FnOnce(&str) -> bool) -> bool {
    let Some(service) = service_of_repo(repo_name) else {
        return false;
    };
    repos(service, None).iter().any(|r| r == repo_name) && knows(service)
}

/// An environment's values file in the GitOps repo.
pub fn env_file(env: &str) -> String {
    format!("glidepath/envs/{env}.yaml")
}

/// Whether a PR title is one of Glidepath's "Onboarding: re-sync …" PRs.
pub fn is_onboarding_pr(title: &str) -> bool {
    const PREFIX: &str = "onboarding:";
    title
        .get(..PREFIX.len())
        .is_some_and(|head| head.eq_ignore_ascii_case(PREFIX))
}

/// Whether a PipelineRun is one of Glidepath's own runs in the CI/CD namespace
/// (`onboarding-resync`, `values-check`): they finish before any build exists and say
/// nothing about the app's build.
pub fn is_glidepath_run(name: &str) -> bool {
    name.contains("onboarding-resync") || name.contains("values-check")
}

/// What a request PR's title asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RequestTitle<'a> {
    /// The kind, when the title names one.
    pub kind: Option<ServiceKind>,
    pub name: &'a str,
}

/// Reads a request PR title; `None` for any other title.
pub fn parse_request_title(title: &str) -> Option<RequestTitle<'_>> {
    let words: Vec<&str> = title.split_whitespace().collect();
    let (&first, rest) = words.split_first()?;
    let (&name, middle) = rest.split_last()?;
    if first != "Create" || middle.is_empty() || middle.len() > 2 || !is_dns_label(name) {
        return None;
    }
    let mut kind = None;
    for (i, word) in middle.iter().enumerate() {
        match (ServiceKind::from_kind(word), *word) {
            (Some(k), _) if i == 0 && kind.is_none() => kind = Some(k),
            (None, "Resource") if i == middle.len() - 1 => {}
            _ => return None,
        }
    }
    Some(RequestTitle { kind, name })
}

/// Whether a request PR still counts as pending while its XR does not exist: open, or
/// merged no more than [`PENDING_MERGED_WINDOW`] before `now` (a merge stamped slightly
/// after `now`, by a clock ahead of Tower's, counts as just merged).
pub fn is_pending_request(pr: &PullRequest, now: DateTime<Utc>) -> bool {
    pr.is_open()
        || pr
            .merged_at
            .is_some_and(|merged| now - merged <= PENDING_MERGED_WINDOW)
}

/// The request PR for service `name` among `prs` (any titles): titled for `name` with a
/// kind matching `kind` (a title without a kind matches any); a merged one first, then an
/// open one, then the newest (by creation, then number). The same choice everywhere.
pub fn request_pr<'p>(
    prs: impl IntoIterator<Item = &'p PullRequest>,
    name: &str,
    kind: Option<ServiceKind>,
) -> Option<&'p PullRequest> {
    prs.into_iter()
        .filter(|pr| {
            parse_request_title(&pr.title).is_some_and(|t| {
                t.name == name && (t.kind.is_none() || kind.is_none() || t.kind == kind)
            })
        })
        .min_by_key(|pr| {
            (
                !pr.is_merged(),
                !pr.is_open(),
                std::cmp::Reverse(pr.created_at),
                std::cmp::Reverse(pr.number),
            )
        })
}

/// The annotation on an XR naming the file it was requested in: JSON
/// `{"repo": "owner/name", "path": "tenants/<cluster>/<name>.yaml"}`.
pub const SOURCE_INFO_KEY: &str = "terasky.backstage.io/source-info";

/// The tenants repository (`owner/name`) an XR names in its [`SOURCE_INFO_KEY`]
/// annotation; `None` when it names none, or not as `owner/name`.
pub fn source_info_repo(xr: &Object) -> Option<String> {
    let info: serde_json::Value = serde_json::from_str(xr.annotation(SOURCE_INFO_KEY)?).ok()?;
    let repo = info.get("repo")?.as_str()?.trim();
    let (owner, name) = repo.split_once('/')?;
    (!owner.is_empty() && !name.is_empty() && !name.contains('/')).then(|| repo.to_owned())
}

/// The tenants repositories where requests are read, as `owner/name` (lower case: GitHub's
/// names are case-insensitive): those the XRs `named` ([`source_info_repo`]) first, then
/// `configured` (each cluster's `tenantsRepo`), the only ones known before the first XR
/// exists. Without duplicates, in that order.
pub fn tenants_repos(
    named: impl IntoIterator<Item = impl AsRef<str>>,
    configured: impl IntoIterator<Item = impl AsRef<str>>,
) -> Vec<String> {
    let named: std::collections::BTreeSet<String> = named
        .into_iter()
        .map(|r| r.as_ref().to_ascii_lowercase())
        .collect();
    let mut repos: Vec<String> = named.into_iter().collect();
    for repo in configured {
        let repo = repo.as_ref().to_ascii_lowercase();
        if !repos.contains(&repo) {
            repos.push(repo);
        }
    }
    repos
}

/// Where a service's `cicd.yaml` lives, as `(owner/repo, path)`: the repo and file its
/// scaffold `RepositoryFile` writes (among the control plane's `objects`), else
/// [`DEFAULT_CICD_PATH`] in its GitOps repo.
pub fn cicd_location(
    control_plane: &[std::sync::Arc<Object>],
    owner: &str,
    service: &str,
) -> (String, String) {
    let scaffolded = control_plane
        .iter()
        .filter(|o| o.kind == "RepositoryFile" && o.label(COMPOSITE_LABEL) == Some(service))
        .filter_map(|o| repository_file_target(o, owner, service))
        .min();
    scaffolded.unwrap_or_else(|| {
        (
            format!("{owner}/{}", gitops_repo(service, None)),
            DEFAULT_CICD_PATH.to_owned(),
        )
    })
}

/// The `cicd.yaml` a scaffold `RepositoryFile` writes, when it is one Tower may read and
/// edit for `service`: a file named `cicd.yaml` (at the root or in a folder, no `..`, `.` or
/// empty segment) in one of the service's own repositories ([`repos`]) of the configured
/// `owner` — a tenant's object must not point the Config tab at another owner's repository
/// or another file.
fn repository_file_target(object: &Object, owner: &str, service: &str) -> Option<(String, String)> {
    let provider = object.spec.get("forProvider")?;
    let file = provider.get("file")?.as_str()?;
    let plain_segments = file.split('/').all(|segment| {
        !matches!(segment, "" | "." | "..")
            && segment
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
    });
    if !plain_segments || file.rsplit('/').next() != Some("cicd.yaml") {
        return None;
    }
    let repo = provider.get("repository")?.as_str()?;
    let name = match repo.split_once('/') {
        Some((named_owner, name)) if named_owner.eq_ignore_ascii_case(owner) => name,
        Some(_) => return None,
        None => repo,
    };
    let ours = repos(service, None)
        .iter()
        .any(|own| own.eq_ignore_ascii_case(name));
    ours.then(|| (format!("{owner}/{name}"), file.to_owned()))
}

/// A Kubernetes resource type Tower reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WatchedKind {
    /// Empty for the core group.
    pub group: &'static str,
    pub version: &'static str,
    pub kind: &'static str,
    pub plural: &'static str,
    /// The one namespace it is read in (least privilege: a Role there, not a ClusterRole);
    /// `None`: across the cluster.
    pub namespace: Option<&'static str>,
    /// Only the objects with these labels (a label selector), e.g. a Rollout's pods.
    pub selector: Option<&'static str>,
}

const fn watched(
    group: &'static str,
    version: &'static str,
    kind: &'static str,
    plural: &'static str,
) -> WatchedKind {
    WatchedKind {
        group,
        version,
        kind,
        plural,
        namespace: None,
        selector: None,
    }
}

/// Every type a derivation reads, watched on every cluster — and nothing else (no Secrets,
/// no kind no derivation reads). Adding a kind here is the one step that makes Tower read it;
/// `tests/it/tidy.rs` checks the list against [`ServiceKind`], the derivations, the
/// simulator's resource table and the RBAC that `docs/permissions.md` asks for. Of pods,
/// only the Rollouts' are watched (the Runtime tab); their logs are read on request
/// ([`READ_ON_REQUEST`]).
pub const WATCHED_KINDS: &[WatchedKind] = &[
    watched(XR_GROUP, "v1alpha1", "NodeJS", "nodejs"),
    watched(XR_GROUP, "v1alpha1", "SpringBoot", "springboots"),
    watched(XR_GROUP, "v1alpha1", "Python", "pythons"),
    watched(XR_GROUP, "v1alpha1", "Go", "goes"),
    watched(XR_GROUP, "v1alpha1", "LambdaFunction", "lambdafunctions"),
    watched(XR_GROUP, "v1alpha1", "AzureFunction", "azurefunctions"),
    watched(XR_GROUP, "v1alpha1", "InfraService", "infraservices"),
    watched("platform.hangar.io", "v1alpha1", "AppCicd", "appcicds"),
    watched(
        "secrets.hangar.io",
        "v1alpha1",
        "SecretStore",
        "secretstores",
    ),
    watched(
        "projects.project.infisical.m.hangar.io",
        "v1alpha1",
        "Project",
        "projects",
    ),
    watched(
        "repo.github.m.upbound.io",
        "v1alpha1",
        "Repository",
        "repositories",
    ),
    watched(
        "repo.github.m.upbound.io",
        "v1alpha1",
        "RepositoryFile",
        "repositoryfiles",
    ),
    // What keeps the app's secrets in step (their names and keys; never a Secret).
    watched(
        "external-secrets.io",
        "v1",
        "ExternalSecret",
        "externalsecrets",
    ),
    watched(
        "secrets.infisical.com",
        "v1alpha1",
        "InfisicalSecret",
        "infisicalsecrets",
    ),
    watched("tekton.dev", "v1", "PipelineRun", "pipelineruns"),
    watched("tekton.dev", "v1", "TaskRun", "taskruns"),
    watched("argoproj.io", "v1alpha1", "Rollout", "rollouts"),
    // A rollout's analysis and its stable and canary ReplicaSets (the Deployments tab).
    watched("argoproj.io", "v1alpha1", "AnalysisRun", "analysisruns"),
    watched("apps", "v1", "ReplicaSet", "replicasets"),
    // Where an app runs (the Runtime tab): its Rollout's pods — Argo Rollouts labels each
    // with its pod template's hash; a build's pods are never watched —, the autoscaler, and
    // the Events about them.
    WatchedKind {
        selector: Some(crate::argo::POD_HASH_LABEL),
        ..watched("", "v1", "Pod", "pods")
    },
    watched("", "v1", "Event", "events"),
    watched(
        "autoscaling",
        "v2",
        "HorizontalPodAutoscaler",
        "horizontalpodautoscalers",
    ),
    // The platform's own Argo CD instance (`<s>-cicd`, `<s>-<env>`); the tenants' instance
    // (`argocd-apps`) is read through its API.
    WatchedKind {
        namespace: Some(ARGOCD_NAMESPACE),
        ..watched("argoproj.io", "v1alpha1", "Application", "applications")
    },
];

/// What Tower reads only when a person asks, one object at a time (`get`, never `list` or
/// `watch`), as (API group, resource): a pipeline step's log (`pods/log` of the TaskRun's
/// pod, on the control-plane cluster). `tests/it/tidy.rs` checks the RBAC in
/// `docs/permissions.md` grants exactly these and [`WATCHED_KINDS`].
pub const READ_ON_REQUEST: &[(&str, &str)] = &[("", "pods/log")];

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn object(value: serde_json::Value) -> Object {
        Object::from_value(value).unwrap()
    }

    fn pr(number: u64, title: &str, created_min: i64, merged_min: Option<i64>) -> PullRequest {
        let at = |m: i64| {
            "2026-11-30T10:00:00Z".parse::<DateTime<Utc>>().unwrap() + Duration::minutes(m)
        };
        PullRequest {
            repo: "acme/hangar-tenants".to_owned(),
            number,
            title: title.to_owned(),
            state: if merged_min.is_some() {
                "closed"
            } else {
                "open"
            }
            .to_owned(),
            created_at: Some(at(created_min)),
            merged_at: merged_min.map(at),
            closed_at: merged_min.map(at),
            ..PullRequest::default()
        }
    }

    #[test]
    fn namespaces_and_applications() {
        assert_eq!(
            cicd_namespace("shop", Some(ServiceKind::NodeJS)),
            "app-shop-cicd"
        );
        assert_eq!(cicd_namespace("shop", None), "app-shop-cicd");
        assert_eq!(
            cicd_namespace("bus", Some(ServiceKind::InfraService)),
            "infra-bus-cicd"
        );
        assert_eq!(env_namespace("shop", "prod"), "app-shop-prod");
        assert_eq!(cicd_application("shop"), "shop-cicd");
        assert_eq!(env_application("shop", "dev"), "shop-dev");
        assert_eq!(
            namespace_owner("app-shop-v2-cicd"),
            Some(("shop-v2", NamespaceRole::Cicd))
        );
        assert_eq!(
            namespace_owner("app-shop-prod"),
            Some(("shop", NamespaceRole::Environment("prod")))
        );
        assert_eq!(
            namespace_owner("infra-events-bus-cicd"),
            Some(("events-bus", NamespaceRole::Cicd))
        );
        assert_eq!(namespace_owner("argocd"), None);
        assert_eq!(namespace_owner("app-"), None);
        assert_eq!(namespace_owner("app-shop"), None);
    }

    #[test]
    fn repositories() {
        assert_eq!(
            repos("shop", Some(ServiceKind::NodeJS)),
            ["shop", "gitops-shop"]
        );
        assert_eq!(repos("thumb", Some(ServiceKind::LambdaFunction)), ["thumb"]);
        assert_eq!(
            repos("bus", Some(ServiceKind::InfraService)),
            ["gitops-infra-bus"]
        );
        assert_eq!(repos("x", None), ["x", "gitops-x", "gitops-infra-x"]);
        assert_eq!(service_of_repo("gitops-infra-bus"), Some("bus"));
        assert_eq!(service_of_repo("gitops-shop"), Some("shop"));
        assert_eq!(service_of_repo("shop"), Some("shop"));
        assert_eq!(service_of_repo("Hangar_Tenants"), None);
        assert_eq!(env_file("staging"), "glidepath/envs/staging.yaml");
        let branch = config_branch("env:prod", Some("3a8423b1ffee"));
        assert_eq!(branch, "tower/config-env-prod-3a8423b1");
        assert!(is_config_branch(&branch, "env:prod"));
        assert!(!is_config_branch(&branch, "env:pro"));
        assert!(!is_config_branch("tower/config-env-prod-x-y", "env:prod"));
        assert!(is_config_branch(&config_branch("cicd", None), "cicd"));
        assert_eq!(
            promotion_branch("prod", "ghcr.io/acme/shop:1.4.0-3a8423b@sha256:00"),
            "tower/promote-prod-1.4.0-3a8423b"
        );
    }

    #[test]
    fn cicd_yaml_is_read_only_from_the_services_own_repositories_of_the_owner() {
        let file = |repository: &str, path: &str| {
            std::sync::Arc::new(object(json!({
                "apiVersion": "repo.github.m.upbound.io/v1alpha1", "kind": "RepositoryFile",
                "metadata": {"name": "shop-cicd", "labels": {"crossplane.io/composite": "shop"}},
                "spec": {"forProvider": {"repository": repository, "file": path}}})))
        };
        let location = |repository: &str, path: &str| {
            let found = cicd_location(&[file(repository, path)], "acme", "shop");
            (found.0, found.1)
        };
        let default = ("acme/gitops-shop".to_owned(), DEFAULT_CICD_PATH.to_owned());
        assert_eq!(
            location("shop", "cicd.yaml"),
            ("acme/shop".to_owned(), "cicd.yaml".to_owned())
        );
        assert_eq!(
            location("ACME/gitops-shop", "glidepath/cicd.yaml"),
            (
                "acme/gitops-shop".to_owned(),
                "glidepath/cicd.yaml".to_owned()
            )
        );
        // Another owner, another service's repository, another file, a way out of the
        // folder: the scaffold's object is not followed.
        assert_eq!(location("mallory/shop", "cicd.yaml"), default);
        assert_eq!(location("gitops-ledger", "cicd.yaml"), default);
        assert_eq!(location("shop", "secrets/not-cicd.yaml"), default);
        assert_eq!(location("shop", "../other/cicd.yaml"), default);
        assert_eq!(location("shop", "a//cicd.yaml"), default);
        assert_eq!(location("shop", "/cicd.yaml"), default);
    }

    #[test]
    fn objects_belong_to_their_service() {
        let xr = object(
            json!({"apiVersion": "catalog.hangar.io/v1alpha1", "kind": "NodeJS",
            "metadata": {"name": "shop"}}),
        );
        let run = object(json!({"apiVersion": "tekton.dev/v1", "kind": "PipelineRun",
            "metadata": {"name": "b-1", "namespace": "app-shop-v2-cicd"}}));
        let labelled = object(
            json!({"apiVersion": "argoproj.io/v1alpha1", "kind": "Application",
            "metadata": {"name": "whatever", "namespace": "argocd",
                         "labels": {"hangar.io/app": "pay"}}}),
        );
        let named = object(
            json!({"apiVersion": "argoproj.io/v1alpha1", "kind": "Application",
            "metadata": {"name": "shop-v2-cicd", "namespace": "argocd"}}),
        );
        let composed = object(json!({"apiVersion": "repo.github.m.upbound.io/v1alpha1",
            "kind": "Repository", "metadata": {"name": "shop-gitops",
            "labels": {"crossplane.io/composite": "shop"}}}));
        let platform = object(json!({"apiVersion": "v1", "kind": "Namespace",
            "metadata": {"name": "argocd"}}));
        assert_eq!(service_of(&xr), Some("shop"));
        assert_eq!(service_of(&run), Some("shop-v2"));
        assert_eq!(service_of(&labelled), Some("pay"));
        assert_eq!(service_of(&named), Some("shop-v2"));
        assert_eq!(service_of(&composed), Some("shop"));
        assert_eq!(service_of(&platform), None);
        assert!(belongs_to(&run, "shop-v2") && !belongs_to(&run, "shop"));
        // Its own name makes an object a service's only where nothing else says whose it is.
        let sorted = |o: &Object| {
            let mut owners: Vec<&str> = owners(o).collect();
            owners.sort_unstable();
            owners.dedup();
            owners.join(",")
        };
        assert_eq!(sorted(&run), "shop-v2");
        assert_eq!(sorted(&labelled), "pay");
        assert_eq!(sorted(&named), "shop-v2,shop-v2-cicd");
        assert_eq!(sorted(&composed), "shop,shop-gitops");
        assert_eq!(sorted(&platform), "argocd");
    }

    #[test]
    fn request_titles() {
        let parse = |t| parse_request_title(t).map(|r| (r.kind, r.name));
        assert_eq!(
            parse("Create NodeJS shop"),
            Some((Some(ServiceKind::NodeJS), "shop"))
        );
        assert_eq!(
            parse("Create InfraService Resource rabbit"),
            Some((Some(ServiceKind::InfraService), "rabbit"))
        );
        assert_eq!(parse("Create Resource ledger-2"), Some((None, "ledger-2")));
        assert_eq!(parse("Create shop"), None);
        assert_eq!(parse("Create new thing"), None);
        assert_eq!(parse("Create Resource NodeJS shop"), None);
        assert_eq!(parse("Create NodeJS Shop"), None);
        assert_eq!(parse("Onboarding: re-sync shop"), None);
        assert_eq!(parse(""), None);
        assert!(is_onboarding_pr("ONBOARDING: re-sync shop"));
        assert!(!is_onboarding_pr("Onboard shop"));
    }

    #[test]
    fn the_request_pr_is_merged_then_open_then_newest() {
        let prs = [
            pr(1, "Create NodeJS shop", 0, None),
            pr(2, "Create NodeJS shop", 5, Some(20)),
            pr(3, "Create Resource shop", 10, None),
            pr(4, "Create Go shop", 30, Some(40)),
            pr(5, "Create NodeJS shopfront", 30, Some(40)),
        ];
        let chosen = |kind| request_pr(&prs, "shop", kind).map(|p| p.number);
        // The Go request is for another kind; the merged NodeJS one wins over open ones.
        assert_eq!(chosen(Some(ServiceKind::NodeJS)), Some(2));
        // Kind not known (a pending request): every title for the name counts.
        assert_eq!(chosen(None), Some(4));
        let open = [prs[0].clone(), prs[2].clone()];
        assert_eq!(
            request_pr(&open, "shop", Some(ServiceKind::NodeJS)).map(|p| p.number),
            Some(3)
        );
        assert_eq!(request_pr(&prs, "ledger", None), None);
    }

    #[test]
    fn the_tenants_repos_are_the_xrs_source_info_first_then_the_configured() {
        let xr = |name: &str, info: Option<&str>| {
            let mut value = json!({
                "apiVersion": "catalog.hangar.io/v1alpha1", "kind": "NodeJS",
                "metadata": {"name": name, "annotations": {}}
            });
            if let Some(info) = info {
                value["metadata"]["annotations"][SOURCE_INFO_KEY] = json!(info);
            }
            object(value)
        };
        let objects = [
            xr(
                "shop",
                Some(r#"{"repo":"acme/Platform-Tenants","path":"tenants/dev/shop.yaml"}"#),
            ),
            xr(
                "pay",
                Some(r#"{"repo":"acme/platform-tenants","path":"tenants/dev/pay.yaml"}"#),
            ),
            xr("old", None),
            xr("odd", Some("not json")),
            xr("bare", Some(r#"{"repo":"platform-tenants"}"#)),
            // Not an XR: its annotation names nothing Tower reads requests from.
            object(
                json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x",
                "annotations": {SOURCE_INFO_KEY: r#"{"repo":"acme/elsewhere"}"#}}}),
            ),
        ];
        let named: Vec<String> = objects
            .iter()
            .filter(|o| is_xr(o))
            .filter_map(source_info_repo)
            .collect();
        assert_eq!(named, ["acme/Platform-Tenants", "acme/platform-tenants"]);
        assert_eq!(
            tenants_repos(named, ["acme/hangar-tenants", "acme/platform-tenants"]),
            ["acme/platform-tenants", "acme/hangar-tenants"]
        );
        // Before the first XR, the configured one alone.
        assert_eq!(
            tenants_repos(Vec::<String>::new(), ["acme/hangar-tenants"]),
            ["acme/hangar-tenants"]
        );
    }

    #[test]
    fn pending_means_open_or_merged_in_the_last_half_hour() {
        let now = "2026-11-30T11:00:00Z".parse::<DateTime<Utc>>().unwrap();
        assert!(is_pending_request(&pr(1, "Create Go a", 0, None), now));
        // Merged at 10:30: exactly 30 minutes ago still counts; 10:29 does not.
        assert!(is_pending_request(&pr(2, "Create Go a", 0, Some(30)), now));
        assert!(!is_pending_request(&pr(3, "Create Go a", 0, Some(29)), now));
        // A merge stamped after `now` (another clock) is a fresh merge.
        assert!(is_pending_request(&pr(4, "Create Go a", 0, Some(61)), now));
        let mut closed = pr(5, "Create Go a", 0, None);
        closed.state = "closed".to_owned();
        assert!(!is_pending_request(&closed, now));
    }

    #[test]
    fn every_service_kind_is_watched() {
        for kind in ServiceKind::ALL {
            assert!(
                WATCHED_KINDS
                    .iter()
                    .any(|w| w.group == XR_GROUP && w.kind == kind.as_str()),
                "{kind:?} is not watched"
            );
        }
    }
}
