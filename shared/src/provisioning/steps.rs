//! One function per step, each reading the signal `provisioning.md` names for it.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::sync::Arc;

use chrono::{DateTime, Utc};

use crate::cloud::{self, CloudDeploys, CloudTarget};
use crate::github::PullRequest;
use crate::hangar::{self, ARGOCD_NAMESPACE};
use crate::links;
use crate::snapshot::Observation;
use crate::tekton::{PipelineRun, RunStatus, TaskRun};

use super::index::World;
use super::model::*;
use super::records::{Application, Composed, Rollout, Xr};
use super::typical::Typicals;
use super::{FINISHED_SHOWN_FOR, ROLLOUT_HINT_AFTER, STALLED_AFTER};
use crate::cicd::FirstEnvironment;

/// A step before its duration and typical are filled in.
#[derive(Debug)]
struct Draft {
    status: StepStatus,
    started_at: Option<DateTime<Utc>>,
    ended_at: Option<DateTime<Utc>>,
    detail: Option<Cow<'static, str>>,
    /// After this time, the detail reads this instead (a hint that only applies once
    /// something has taken longer than it should).
    later: Option<(DateTime<Utc>, Cow<'static, str>)>,
    links: Vec<Link>,
}

impl Draft {
    fn new(
        status: StepStatus,
        started_at: Option<DateTime<Utc>>,
        ended_at: Option<DateTime<Utc>>,
    ) -> Self {
        Self {
            status,
            started_at,
            ended_at,
            detail: None,
            later: None,
            links: Vec::new(),
        }
    }

    fn done(started_at: Option<DateTime<Utc>>, ended_at: Option<DateTime<Utc>>) -> Self {
        Self::new(StepStatus::Done, started_at, ended_at)
    }

    fn running(started_at: Option<DateTime<Utc>>, detail: impl Into<Cow<'static, str>>) -> Self {
        Self::new(StepStatus::Running, started_at, None).detail(detail)
    }

    fn waiting(detail: impl Into<Cow<'static, str>>) -> Self {
        Self::new(StepStatus::Waiting, None, None).detail(detail)
    }

    fn failed(
        started_at: Option<DateTime<Utc>>,
        ended_at: Option<DateTime<Utc>>,
        detail: impl Into<Cow<'static, str>>,
    ) -> Self {
        Self::new(StepStatus::Failed, started_at, ended_at).detail(detail)
    }

    fn detail(mut self, detail: impl Into<Cow<'static, str>>) -> Self {
        self.detail = Some(detail.into());
        self
    }

    /// Adds a link, when there is a checked URL for it (see [`links`]).
    fn link(mut self, title: impl Into<Cow<'static, str>>, url: Option<links::Checked>) -> Self {
        if let Some(url) = url {
            self.links.push(Link {
                title: title.into(),
                url: url.into_string(),
            });
        }
        self
    }

    /// A pull request's page, when GitHub's `html_url` is on GitHub (or `enterprise`).
    fn pr_link(self, what: &str, pr: &PullRequest, enterprise: Option<&str>) -> Self {
        let url = pr
            .html_url
            .as_deref()
            .and_then(|url| links::github(url, enterprise));
        self.link(format!("{what} #{}", pr.number), url)
    }
}

/// Seconds from `from` to `to`; `None` when either is unknown or `to` is earlier.
fn seconds(from: Option<DateTime<Utc>>, to: Option<DateTime<Utc>>) -> Option<u64> {
    u64::try_from((to? - from?).num_seconds()).ok()
}

fn latest(times: impl IntoIterator<Item = Option<DateTime<Utc>>>) -> Option<DateTime<Utc>> {
    times.into_iter().flatten().max()
}

/// One XR as a derivation at any `now` needs it, settled once when the [`World`] is built:
/// its steps as far as the objects say, the texts every derivation shares, and when it
/// counts as stalled. A derivation at a later `now` reads no raw object and repeats no
/// lookup.
#[derive(Debug)]
pub struct Prepared {
    name: Arc<str>,
    kind: ServiceKind,
    created_at: Option<DateTime<Utc>>,
    /// Every step before the clock is applied.
    steps: Vec<Settled>,
    /// The events log (it follows from the steps' timestamps alone).
    events: Arc<[Event]>,
    created: Arc<[CreatedResource]>,
    /// From this time on the service is stalled, unless it finishes: built 4 hours ago with
    /// nothing deployed in its first environment, or an InfraService 4 hours old without
    /// one. `None`: nothing is holding it up that long.
    stalled_after: Option<DateTime<Utc>>,
}

impl Prepared {
    /// Settles `xr`'s steps from `index` (which has every object filed).
    pub fn new<'a>(index: &World<'a>, xr: Xr<'a>) -> Self {
        let facts = Facts::new(index, xr);
        let ctx = Ctx {
            index,
            service: &facts,
        };
        let steps = settled_steps(&ctx);
        let stalled_after = if facts.kind.is_infra() {
            facts
                .dev_application
                .is_none()
                .then_some(facts.created_at)
                .flatten()
        } else {
            let deployed = match &facts.cloud {
                Some(deploys) => deploys.last_success.is_some(),
                None => !facts.rollouts.is_empty(),
            };
            facts.build_succeeded_at().filter(|_| !deployed)
        }
        .map(|since| since + STALLED_AFTER);
        Self {
            name: facts.name.into(),
            kind: facts.kind,
            created_at: facts.created_at,
            events: events(&steps).into(),
            created: created_resources(&ctx).into(),
            steps,
            stalled_after,
        }
    }
}

/// What the step functions read of one XR and the objects around it.
#[derive(Debug)]
struct Facts<'a> {
    xr: Xr<'a>,
    name: &'a str,
    kind: ServiceKind,
    created_at: Option<DateTime<Utc>>,
    observed: Option<&'a BTreeMap<String, Observation>>,
    cicd_namespace: String,
    /// The request PR that created the XR.
    request_pr: Option<&'a PullRequest>,
    /// The app's SecretStore in its CI/CD namespace.
    secret_store: Option<Composed<'a>>,
    first_build: Option<PipelineRun<'a>>,
    /// The TaskRuns of the first build.
    build_tasks: Vec<TaskRun<'a>>,
    /// For functions and cloud-target apps: their deploy runs.
    cloud: Option<CloudDeploys>,
    env: FirstEnvironment,
    /// Rollouts in the first environment's namespace, the app's own first.
    rollouts: Vec<Rollout<'a>>,
    /// An InfraService's first environment: the `<name>-dev` Argo CD Application (the one
    /// in `argocd` first).
    dev_application: Option<Application<'a>>,
}

impl<'a> Facts<'a> {
    fn new(index: &World<'a>, xr: Xr<'a>) -> Self {
        let snapshot = index.snapshot;
        let kind = xr.kind;
        let name = xr.name();
        let cicd_namespace = hangar::cicd_namespace(name, Some(kind));
        let runs = index.runs(&cicd_namespace);
        let (pipeline_runs, task_runs) = runs.map_or((&[][..], &[][..]), |r| {
            (r.pipeline_runs.as_slice(), r.task_runs.as_slice())
        });
        let first_build = pipeline_runs
            .iter()
            .filter(|run| run.pipeline() == Some(hangar::BUILD_PIPELINE))
            .filter(|run| !hangar::is_glidepath_run(run.name()))
            .min_by_key(|run| (run.started_at(), run.name()))
            .copied();
        let build_tasks = first_build.map_or_else(Vec::new, |build| {
            task_runs
                .iter()
                .filter(|t| t.pipeline_run() == Some(build.name()))
                .copied()
                .collect()
        });
        let cloud = if kind.is_infra() {
            None
        } else {
            let declared = xr.target.or_else(|| index.catalog_target(name));
            let deploys = cloud::derive_from_runs(name, declared, pipeline_runs, task_runs);
            (kind.is_function() || deploys.capability == cloud::Capability::CloudRuntime)
                .then_some(deploys)
        };
        let env = snapshot.cicd_of(name).first;
        let secret_store = index
            .secret_stores(name)
            .iter()
            .filter(|s| s.object.namespace() == Some(cicd_namespace.as_str()))
            .min_by_key(|s| s.name())
            .copied();
        Self {
            rollouts: first_env_rollouts(index, name, &env),
            request_pr: request_pr(index, name, kind),
            env,
            name,
            kind,
            created_at: xr.created_at,
            observed: snapshot.observed.get(name),
            xr,
            cicd_namespace,
            secret_store,
            first_build,
            build_tasks,
            cloud,
            dev_application: kind
                .is_infra()
                .then(|| {
                    index
                        .applications(&hangar::env_application(name, "dev"))
                        .iter()
                        .min_by_key(|app| {
                            (
                                app.namespace != Some(ARGOCD_NAMESPACE),
                                app.cluster,
                                app.namespace,
                            )
                        })
                        .copied()
                })
                .flatten(),
        }
    }
}

impl Facts<'_> {
    fn build_succeeded_at(&self) -> Option<DateTime<Utc>> {
        self.first_build
            .filter(|b| b.status() == RunStatus::Succeeded)
            .and_then(|b| b.completed_at())
    }
}

/// The request PR for the XR `name` of `kind` ([`hangar::request_pr`]).
fn request_pr<'a>(index: &World<'a>, name: &str, kind: ServiceKind) -> Option<&'a PullRequest> {
    let candidates = index.request_prs.get(name)?;
    hangar::request_pr(candidates.iter().map(|(pr, _)| *pr), name, Some(kind))
}

/// What a step function reads: the world and the service's facts.
struct Ctx<'s, 'a> {
    index: &'s World<'a>,
    service: &'s Facts<'a>,
}

impl<'a> std::ops::Deref for Ctx<'_, 'a> {
    type Target = Facts<'a>;

    fn deref(&self) -> &Facts<'a> {
        self.service
    }
}

impl<'s, 'a> Ctx<'s, 'a> {
    /// The GitHub Enterprise host links may point to, besides github.com.
    fn github_host(&self) -> Option<&'a str> {
        self.index.snapshot.github_host.as_deref()
    }

    fn observed(&self, step: StepId) -> Option<&'a Observation> {
        self.observed.and_then(|m| m.get(step.as_str()))
    }

    /// The time a step was first seen done, if it had been seen running before.
    fn observed_done(&self, step: StepId) -> Option<DateTime<Utc>> {
        self.observed(step)
            .filter(|o| o.running_since.is_some())
            .and_then(|o| o.done_at)
    }

    fn request_merged_at(&self) -> Option<DateTime<Utc>> {
        self.request_pr.and_then(|pr| pr.merged_at).or_else(|| {
            self.observed(StepId::RequestPrMerged)
                .and_then(|o| o.done_at)
        })
    }
}

/// A step as the objects say, before the clock: its texts are built once and shared by
/// every derivation at a later `now`.
#[derive(Debug)]
struct Settled {
    id: StepId,
    title: Arc<str>,
    status: StepStatus,
    started_at: Option<DateTime<Utc>>,
    ended_at: Option<DateTime<Utc>>,
    detail: Option<Arc<str>>,
    later: Option<(DateTime<Utc>, Arc<str>)>,
    links: Arc<[Link]>,
    /// Done, first seen done now: ends at the derivation's `now`.
    ends_when_seen: bool,
}

impl Settled {
    fn new(id: StepId, title: impl Into<Arc<str>>, draft: Draft) -> Self {
        Self {
            id,
            title: title.into(),
            status: draft.status,
            started_at: draft.started_at,
            ended_at: draft.ended_at,
            detail: draft.detail.map(Arc::from),
            later: draft.later.map(|(after, text)| (after, Arc::from(text))),
            links: draft.links.into(),
            ends_when_seen: false,
        }
    }

    /// The step at `now`: the duration (done or failed: end − start; running: now − start;
    /// unknown when a time is) and the typical duration for the kind.
    fn at(&self, typicals: &Typicals, kind: Option<ServiceKind>, now: DateTime<Utc>) -> Step {
        let ended_at = self.ended_at.or(self.ends_when_seen.then_some(now));
        let duration_sec = match self.status {
            StepStatus::Done | StepStatus::Failed => seconds(self.started_at, ended_at),
            StepStatus::Running => seconds(self.started_at, Some(now)),
            StepStatus::Waiting => None,
        };
        let detail = match &self.later {
            Some((after, later)) if now > *after => Some(later),
            _ => self.detail.as_ref(),
        };
        let (typical_sec, typical_source) = typicals.get(kind, self.id);
        Step {
            id: self.id,
            title: Arc::clone(&self.title),
            status: self.status,
            started_at: self.started_at,
            ended_at,
            duration_sec,
            typical_sec,
            typical_source,
            detail: detail.cloned(),
            links: Arc::clone(&self.links),
        }
    }
}

/// Rollouts in `app-<name>-<env>` on the environment's cluster, the one named after the app first.
fn first_env_rollouts<'a>(
    index: &World<'a>,
    name: &str,
    env: &FirstEnvironment,
) -> Vec<Rollout<'a>> {
    let cluster = env
        .cluster
        .as_deref()
        .unwrap_or(&index.snapshot.control_plane_cluster);
    let namespace = hangar::env_namespace(name, &env.name);
    let mut rollouts = index.rollouts(cluster, &namespace).to_vec();
    rollouts.sort_by_key(|r| (r.name != name, r.name));
    rollouts
}

/// The service an XR describes at `now`, or `None` when it is no longer tracked (over 24 h
/// old, or finished more than 15 minutes ago).
pub fn derive_service(
    index: &World<'_>,
    service: &Prepared,
    now: DateTime<Utc>,
) -> Option<ServiceProgress> {
    let (kind, created_at) = (service.kind, service.created_at);
    if !super::is_tracked(created_at, now) {
        return None;
    }
    let steps: Vec<Step> = service
        .steps
        .iter()
        .map(|step| step.at(&index.typicals, Some(kind), now))
        .collect();
    let group = group(service, &steps, now)?;
    Some(ServiceProgress {
        name: Arc::clone(&service.name),
        kind: Some(kind),
        group,
        created_at,
        events: Arc::clone(&service.events),
        created: Arc::clone(&service.created),
        steps,
    })
}

/// Every step of the service's plan, in order, as the signals say (whatever the clock).
fn settled_steps(ctx: &Ctx<'_, '_>) -> Vec<Settled> {
    let kind = ctx.kind;
    let deploy_title = |target: Option<CloudTarget>| {
        format!(
            "Deployed to {}",
            target.map_or("the cloud", CloudTarget::title)
        )
    };
    let plan = plan(Some(kind), ctx.cloud.is_some());
    let mut steps: Vec<Settled> = Vec::with_capacity(plan.len());
    for &id in plan {
        let done = |id: StepId| {
            steps
                .iter()
                .any(|s| s.id == id && s.status == StepStatus::Done)
        };
        let (title, draft): (Cow<'static, str>, Draft) = match id {
            StepId::RequestPrMerged => (id.title(Some(kind)).into(), request_pr_merged(ctx)),
            StepId::RequestApplied => (id.title(Some(kind)).into(), request_applied(ctx)),
            StepId::DevCluster => (id.title(Some(kind)).into(), dev_cluster(ctx)),
            StepId::CicdOnboarded => (id.title(Some(kind)).into(), cicd_onboarded(ctx)),
            StepId::Repositories => (id.title(Some(kind)).into(), repositories(ctx)),
            StepId::Catalog => (id.title(Some(kind)).into(), catalog(ctx)),
            StepId::OnboardingPrs => (id.title(Some(kind)).into(), onboarding_prs(ctx)),
            StepId::Secrets => (id.title(Some(kind)).into(), secrets(ctx)),
            StepId::FirstBuild => (id.title(Some(kind)).into(), first_build_step(ctx)),
            StepId::RunningHealthy => (
                format!("Running healthy in {}", ctx.env.name).into(),
                running_healthy(ctx),
            ),
            StepId::FirstEnvironment => {
                let after = steps
                    .iter()
                    .filter(|s| matches!(s.id, StepId::CicdOnboarded | StepId::Repositories))
                    .filter_map(|s| s.ended_at)
                    .max();
                let ready = done(StepId::CicdOnboarded) && done(StepId::Repositories);
                (
                    id.title(Some(kind)).into(),
                    first_environment_up(ctx, ready, after),
                )
            }
            StepId::Deployed => match &ctx.cloud {
                Some(deploys) => {
                    let target = deploys.target.or(default_target(kind));
                    (deploy_title(target).into(), deployed(ctx, deploys))
                }
                None => (
                    deploy_title(default_target(kind)).into(),
                    Draft::waiting("The deploy stage runs after the first build"),
                ),
            },
        };
        // A step whose only end time is when Tower first sees it done, seen done right now
        // for the first time: it ends at the derivation's `now` (what the observer's memory
        // will then say), so a provision finishing this way is finished now, not never.
        let ends_when_seen = draft.status == StepStatus::Done
            && draft.ended_at.is_none()
            && matches!(id, StepId::Catalog | StepId::RunningHealthy)
            && ctx
                .observed(id)
                .is_some_and(|o| o.running_since.is_some() && o.done_at.is_none());
        let mut settled = Settled::new(id, title, draft);
        settled.ends_when_seen = ends_when_seen;
        steps.push(settled);
    }
    steps
}

/// The target a function deploys to when its runs have not said yet.
fn default_target(kind: ServiceKind) -> Option<CloudTarget> {
    match kind {
        ServiceKind::LambdaFunction => Some(CloudTarget::AwsLambda),
        ServiceKind::AzureFunction => Some(CloudTarget::AzureContainerApps),
        _ => None,
    }
}

/// Pending, in flight, stalled or finished — or `None` when no longer shown.
fn group(service: &Prepared, steps: &[Step], now: DateTime<Utc>) -> Option<Group> {
    if steps.iter().all(|s| s.status == StepStatus::Done) {
        let finished_at = steps.iter().filter_map(|s| s.ended_at).max()?;
        return (now - finished_at <= FINISHED_SHOWN_FOR).then_some(Group::Finished);
    }
    Some(if service.stalled_after.is_some_and(|t| now > t) {
        Group::Stalled
    } else {
        Group::InFlight
    })
}

/// The live events log from the steps' timestamps: a step without a known time has no line.
fn events(steps: &[Settled]) -> Vec<Event> {
    let mut lines: Vec<(DateTime<Utc>, usize, String)> = Vec::new();
    for (order, step) in steps.iter().enumerate() {
        let title = &step.title;
        if let Some(at) = step.started_at {
            lines.push((at, order * 2, format!("▸ {title} started")));
        }
        if let Some(at) = step.ended_at {
            match step.status {
                StepStatus::Done => lines.push((at, order * 2 + 1, format!("✓ {title} done"))),
                StepStatus::Failed => lines.push((at, order * 2 + 1, format!("✗ {title} failed"))),
                StepStatus::Running | StepStatus::Waiting => {}
            }
        }
    }
    lines.sort();
    let Some(first) = lines.first().map(|l| l.0) else {
        return Vec::new();
    };
    lines
        .into_iter()
        .map(|(at, _, text)| Event {
            at_sec: seconds(Some(first), Some(at)).unwrap_or(0),
            text,
        })
        .collect()
}

fn request_pr_merged(ctx: &Ctx<'_, '_>) -> Draft {
    // The XR exists, so the request was merged and applied.
    match ctx.request_pr {
        Some(pr) if pr.is_merged() => {
            Draft::done(pr.created_at, pr.merged_at).pr_link("Request PR", pr, ctx.github_host())
        }
        pr => {
            let memory = ctx.observed(StepId::RequestPrMerged);
            let draft = Draft::done(
                memory.and_then(|m| m.running_since),
                memory.and_then(|m| m.done_at),
            );
            match pr {
                Some(pr) => draft.pr_link("Request PR", pr, ctx.github_host()),
                None => draft,
            }
        }
    }
}

fn request_applied(ctx: &Ctx<'_, '_>) -> Draft {
    let draft = Draft::done(ctx.request_merged_at(), ctx.created_at);
    draft.detail(format!("{} {} exists", ctx.kind.as_str(), ctx.name))
}

fn dev_cluster(ctx: &Ctx<'_, '_>) -> Draft {
    match ctx.xr.dev_cluster {
        Some(c) if c.is_true() => Draft::done(ctx.created_at, c.last_transition_time),
        c => Draft::running(
            ctx.created_at,
            c.and_then(|c| c.message)
                .map_or(Cow::Borrowed("Crossplane is choosing a dev cluster"), |m| {
                    Cow::Owned(m.to_owned())
                }),
        ),
    }
}

fn cicd_onboarded(ctx: &Ctx<'_, '_>) -> Draft {
    let app_name = hangar::cicd_application(ctx.name);
    let control_plane = ctx.index.snapshot.control_plane_cluster.as_str();
    let app = ctx
        .index
        .applications(&app_name)
        .iter()
        .filter(|app| app.cluster == control_plane && app.namespace == Some(ARGOCD_NAMESPACE))
        .min_by_key(|app| app.uid);
    match ctx.xr.cicd_onboarded {
        Some(c) if c.is_true() => match app {
            // No read grant on the platform's Applications: the condition alone decides.
            None => Draft::done(ctx.created_at, c.last_transition_time),
            Some(app) if app.sync == "Synced" && app.health == "Healthy" => Draft::done(
                ctx.created_at,
                latest([c.last_transition_time, app.health_since]),
            ),
            Some(app) => Draft::running(
                ctx.created_at,
                format!(
                    "Argo CD application {app_name} is {} and {}",
                    app.sync, app.health
                ),
            ),
        },
        c => Draft::running(
            ctx.created_at,
            c.and_then(|c| c.message)
                .map_or(Cow::Borrowed("Waiting for CI/CD onboarding"), |m| {
                    Cow::Owned(m.to_owned())
                }),
        ),
    }
}

fn is_repo_kind(kind: &str) -> bool {
    kind == "Repository" || kind == "RepositoryFile"
}

fn repositories(ctx: &Ctx<'_, '_>) -> Draft {
    let labelled = ctx.index.repo_objects(ctx.name);
    let refs: Vec<(&str, &str)> = ctx
        .xr
        .resource_refs
        .iter()
        .filter(|(_, kind, _)| is_repo_kind(kind))
        .map(|&(_, kind, name)| (kind, name))
        .collect();
    // Scaffold files leave resourceRefs once done: count only what is still composed.
    let mut objects: Vec<&Composed<'_>> = labelled
        .iter()
        .filter(|o| refs.is_empty() || refs.contains(&(o.kind(), o.name())))
        .collect();
    objects.sort_by_key(|o| (o.kind(), o.name()));
    if objects.is_empty() {
        // None readable (no read grant, or none composed yet): fall back to the XR's Ready.
        return match ctx.xr.ready {
            Some(c) if c.is_true() => Draft::done(ctx.created_at, c.last_transition_time),
            _ => Draft::running(ctx.created_at, "Waiting for the resource to be Ready"),
        };
    }
    let missing = refs
        .iter()
        .filter(|(kind, name)| {
            !labelled
                .iter()
                .any(|o| o.kind() == *kind && o.name() == *name)
        })
        .count();
    let with_links = |mut draft: Draft| {
        for o in objects.iter().filter(|o| o.kind() == "Repository") {
            if let Some(url) = o.html_url {
                let repo = url.rsplit('/').next().unwrap_or_default();
                let title = if repo == hangar::source_repo(ctx.name) {
                    "Source repo"
                } else {
                    "GitOps repo"
                };
                draft = draft.link(title, links::github(url, ctx.github_host()));
            }
        }
        draft
    };
    if let Some(o) = objects.iter().find(|o| o.state == ResourceState::Failed) {
        let message = o.message.unwrap_or("the provider reports an error");
        return with_links(Draft::failed(
            ctx.created_at,
            None,
            format!("{} {}: {message}", o.kind(), o.name()),
        ));
    }
    let ready = objects
        .iter()
        .filter(|o| o.state == ResourceState::Ready)
        .count();
    let total = objects.len() + missing;
    if ready == total {
        with_links(Draft::done(
            ctx.created_at,
            latest(objects.iter().map(|o| o.ready_at)),
        ))
    } else {
        with_links(Draft::running(
            ctx.created_at,
            format!("{ready} of {total} ready"),
        ))
    }
}

fn catalog(ctx: &Ctx<'_, '_>) -> Draft {
    match ctx.index.in_catalog(ctx.name) {
        Some(true) => Draft::done(ctx.created_at, ctx.observed_done(StepId::Catalog)),
        Some(false) => Draft::running(
            ctx.created_at,
            "The catalog ingestor adds it on its next sync (every 10 minutes by default)",
        ),
        None if ctx.first_build.is_some() => Draft::done(None, None)
            .detail("The catalog lookup cannot answer; a build has run, so it is there"),
        None => Draft::waiting("The catalog lookup cannot answer right now"),
    }
}

fn onboarding_prs(ctx: &Ctx<'_, '_>) -> Draft {
    let repos = hangar::repos(ctx.name, Some(ctx.kind));
    let mut prs: Vec<&PullRequest> = repos
        .iter()
        .filter_map(|repo| {
            ctx.index
                .prs_in_repo(repo)
                .iter()
                .filter(|pr| hangar::is_onboarding_pr(&pr.title))
                .min_by_key(|pr| (pr.is_abandoned(), pr.merged_at.is_none(), pr.number))
                .copied()
        })
        .collect();
    prs.sort_by(|a, b| a.repo.cmp(&b.repo).then(a.number.cmp(&b.number)));
    let started = prs.iter().filter_map(|pr| pr.created_at).min();
    let all_merged = prs.len() == repos.len() && prs.iter().all(|pr| pr.is_merged());
    let merged_at = if all_merged {
        latest(prs.iter().map(|pr| pr.merged_at))
    } else {
        None
    };
    let with_links = |mut draft: Draft| {
        for pr in &prs {
            draft = draft.pr_link(
                &format!("Onboarding PR on {}", pr.repo_name()),
                pr,
                ctx.github_host(),
            );
        }
        draft
    };

    let deployed_proof = ctx.first_build.is_some() || !ctx.rollouts.is_empty();
    if all_merged || deployed_proof {
        return with_links(Draft::done(started, merged_at));
    }
    if !ctx.index.knows_pull_requests() {
        return Draft::waiting("GitHub has not answered the pull request lookup");
    }
    if let Some(pr) = prs.iter().find(|pr| pr.is_abandoned()) {
        return with_links(Draft::failed(
            pr.created_at,
            pr.closed_at,
            format!(
                "The onboarding PR on {} was closed without merging",
                pr.repo_name()
            ),
        ));
    }
    if prs.is_empty() {
        return Draft::waiting("Glidepath opens the onboarding PRs once the repositories exist");
    }
    let open: Vec<String> = prs
        .iter()
        .filter(|pr| !pr.is_merged())
        .map(|pr| format!("{}#{}", pr.repo_name(), pr.number))
        .collect();
    let missing = repos.len() - prs.len();
    let mut detail = format!("Merge {}", open.join(" and "));
    if missing > 0 {
        detail = if open.is_empty() {
            "Waiting for Glidepath to open the other onboarding PR".to_owned()
        } else {
            format!("{detail}; one more PR is still to be opened")
        };
    }
    with_links(Draft::running(started, detail))
}

fn secrets(ctx: &Ctx<'_, '_>) -> Draft {
    let Some(store) = &ctx.secret_store else {
        return if ctx.first_build.is_some() {
            Draft::done(None, None).detail("No SecretStore: nothing to wait for")
        } else {
            Draft::waiting(format!(
                "Waiting for the SecretStore in {}",
                ctx.cicd_namespace
            ))
        };
    };
    let link = infisical_link(ctx, store.name());
    let started = store.object.metadata.creation_timestamp;
    let draft = match store.state {
        ResourceState::Failed => Draft::failed(
            started,
            None,
            format!(
                "SecretStore {}: {}",
                store.name(),
                store.message.unwrap_or("not synced")
            ),
        ),
        ResourceState::Ready => Draft::done(started, store.ready_at),
        _ => Draft::running(
            started,
            format!("SecretStore {} is not Ready yet", store.name()),
        ),
    };
    draft.link("Infisical project", link)
}

/// The Infisical project page, from the Project object's external name.
fn infisical_link(ctx: &Ctx<'_, '_>, store_name: &str) -> Option<links::Checked> {
    let base = ctx.index.snapshot.infisical_url.as_deref()?;
    let project = [ctx.name, store_name]
        .iter()
        .flat_map(|key| ctx.index.infisical_projects(key))
        .min_by_key(|p| p.name())?;
    let id = project.annotation("crossplane.io/external-name")?;
    links::under(base, &["projects", "secret-management", id, "overview"])
}

fn first_build_step(ctx: &Ctx<'_, '_>) -> Draft {
    let Some(build) = ctx.first_build else {
        return Draft::waiting("Starts by itself when the source onboarding PR is merged");
    };
    let tasks = &ctx.build_tasks;
    let finished = tasks
        .iter()
        .filter(|t| t.status() != RunStatus::Running)
        .count();
    let total = build.task_names().count();
    match build.status() {
        RunStatus::Succeeded => Draft::done(build.started_at(), build.completed_at()),
        RunStatus::Running if total > 0 => Draft::running(
            build.started_at(),
            format!("{finished} of {total} tasks finished ({})", build.name()),
        ),
        RunStatus::Running => Draft::running(
            build.started_at(),
            format!("{finished} tasks finished ({})", build.name()),
        ),
        RunStatus::Failed => {
            let failed = tasks
                .iter()
                .filter(|t| t.status() == RunStatus::Failed)
                .min_by_key(|t| (t.completed_at(), t.name()));
            let detail = match failed {
                Some(t) => format!(
                    "{} failed: {}",
                    t.pipeline_task().unwrap_or(t.name()),
                    t.message().unwrap_or("no message")
                ),
                None => build
                    .message()
                    .map_or_else(|| format!("{} failed", build.name()), str::to_owned),
            };
            Draft::failed(build.started_at(), build.completed_at(), detail)
        }
    }
}

fn running_healthy(ctx: &Ctx<'_, '_>) -> Draft {
    let env = &ctx.env;
    let namespace = hangar::env_namespace(ctx.name, &env.name);
    let built_at = ctx.build_succeeded_at();
    if let Some(rollout) = ctx.rollouts.first() {
        if rollout.is_healthy() {
            return Draft::done(built_at, ctx.observed_done(StepId::RunningHealthy));
        }
        let counts = format!(
            "{} of {} replicas available",
            rollout.available, rollout.desired
        );
        let said = rollout
            .message
            .map(|m| format!(": {m}"))
            .unwrap_or_default();
        if rollout.phase == "Degraded" {
            return Draft::failed(
                built_at,
                None,
                format!("Rollout {} is Degraded{said}", rollout.name),
            );
        }
        return Draft::running(
            built_at,
            format!(
                "Rollout {} is {}{said} ({counts})",
                rollout.name, rollout.phase
            ),
        );
    }
    let Some(built_at) = built_at else {
        return Draft::waiting(format!("Deploys to {} after the first build", env.name));
    };
    let hint = if env.flight {
        let release = ctx
            .index
            .prs_in_repo(&hangar::gitops_repo(ctx.name, Some(ctx.kind)))
            .iter()
            .filter(|pr| pr.is_open() && pr.title.to_ascii_lowercase().contains("release"))
            .min_by_key(|pr| pr.number)
            .copied();
        match release {
            Some(pr) => format!(
                "No Rollout yet: the first release PR to {} (#{}) is still unmerged",
                env.name, pr.number
            ),
            None => format!(
                "No Rollout in {namespace} yet: the first release PR to {} has not been merged",
                env.name
            ),
        }
    } else if env.has_deploy_stage == Some(false) {
        format!(
            "No Rollout in {namespace} yet: cicd.yaml has no deploy-to-{} stage",
            env.name
        )
    } else {
        format!(
            "No Rollout in {namespace} yet: check that {} exists in {}{}",
            hangar::env_file(&env.name),
            hangar::gitops_repo(ctx.name, Some(ctx.kind)),
            if env.has_deploy_stage.is_none() {
                " and cicd.yaml has a deploy stage"
            } else {
                ""
            }
        )
    };
    let mut draft = Draft::running(
        Some(built_at),
        format!("Waiting for a Rollout in {namespace}"),
    );
    draft.later = Some((built_at + ROLLOUT_HINT_AFTER, hint.into()));
    draft
}

fn deployed(ctx: &Ctx<'_, '_>, deploys: &CloudDeploys) -> Draft {
    let console = deploys
        .console_url
        .as_deref()
        .and_then(links::cloud_console);
    if let Some(run) = &deploys.in_progress {
        let what = match (&run.image, &run.environment) {
            (Some(image), Some(env)) => format!("Deploying {image} to {env}"),
            (Some(image), None) => format!("Deploying {image}"),
            _ => format!("Deploy run {} is running", run.run),
        };
        return Draft::running(run.started_at, what);
    }
    if let Some(run) = &deploys.latest_failure {
        let detail = format!(
            "{} failed: {}",
            run.failed_task.as_deref().unwrap_or(&run.run),
            run.message.as_deref().unwrap_or("no message")
        );
        return Draft::failed(run.started_at, run.finished_at, detail);
    }
    if let Some(run) = &deploys.last_success {
        return Draft::done(run.started_at, run.finished_at).link("Open in console", console);
    }
    if ctx.build_succeeded_at().is_some() {
        Draft::running(
            ctx.build_succeeded_at(),
            "Waiting for the deploy stage to start",
        )
    } else {
        Draft::waiting("The deploy stage runs after the first build")
    }
}

fn first_environment_up(
    ctx: &Ctx<'_, '_>,
    prerequisites_done: bool,
    after: Option<DateTime<Utc>>,
) -> Draft {
    if !prerequisites_done {
        return Draft::waiting("Waits until CI/CD and the repositories are done");
    }
    let Some(app) = &ctx.dev_application else {
        // Tower's Config tab opens the pull request with a starter file.
        let config = links::tower_page(&[
            ("view", "config"),
            ("service", ctx.name),
            ("file", "env:dev"),
        ]);
        return Draft::running(
            after,
            format!(
                "Create {} in {} (Configure › Environments › dev › Values), then add the component",
                hangar::env_file("dev"),
                hangar::gitops_repo(ctx.name, Some(ctx.kind))
            ),
        )
        .link(
            format!("Create {} on the Config tab", hangar::env_file("dev")),
            Some(config),
        );
    };
    let app_name = hangar::env_application(ctx.name, "dev");
    match (app.sync, app.health) {
        ("Synced", "Healthy") => Draft::done(after, app.health_since),
        (_, "Degraded") => Draft::failed(
            after,
            app.health_since,
            format!(
                "Argo CD application {app_name} is Degraded: {}",
                app.health_message.unwrap_or("the component is unhealthy")
            ),
        ),
        (sync, health) => Draft::running(
            after,
            format!("Argo CD application {app_name} is {sync} and {health}"),
        ),
    }
}

/// "What gets created": the XR's resourceRefs, with readiness for the kinds Tower reads
/// (GitHub repositories and files, Hangar XRs such as the CI/CD child), plus the SecretStore.
fn created_resources(ctx: &Ctx<'_, '_>) -> Vec<CreatedResource> {
    let labelled = ctx.index.repo_objects(ctx.name);
    let mut created: Vec<CreatedResource> = ctx
        .xr
        .resource_refs
        .iter()
        .map(|&(api_version, kind, name)| {
            let group = api_version.rsplit_once('/').map_or("", |(g, _)| g);
            let state = if is_repo_kind(kind) {
                labelled
                    .iter()
                    .find(|o| o.kind() == kind && o.name() == name)
                    .map_or(ResourceState::NotReady, |o| o.state)
            } else if group.ends_with("hangar.io") {
                ctx.index
                    .hangar_object(kind, name)
                    .map_or(ResourceState::NotReady, |o| o.state)
            } else {
                ResourceState::NotTracked
            };
            CreatedResource {
                kind: kind.to_owned(),
                name: name.to_owned(),
                state,
            }
        })
        .collect();
    if let Some(store) = &ctx.secret_store {
        if !created
            .iter()
            .any(|c| c.kind == "SecretStore" && c.name == store.name())
        {
            created.push(CreatedResource {
                kind: "SecretStore".to_owned(),
                name: store.name().to_owned(),
                state: store.state,
            });
        }
    }
    created
}

/// Request PRs whose XR does not exist yet: open ones, and ones merged in the last 30 minutes.
pub fn pending_requests(index: &World<'_>, now: DateTime<Utc>) -> Vec<ServiceProgress> {
    let mut pending = Vec::new();
    for (&name, prs) in &index.request_prs {
        if index.has_xr(name) {
            continue;
        }
        let pending_prs = prs
            .iter()
            .map(|(pr, _)| *pr)
            .filter(|pr| hangar::is_pending_request(pr, now));
        let Some(pr) = hangar::request_pr(pending_prs, name, None) else {
            continue;
        };
        let kind = hangar::parse_request_title(&pr.title).and_then(|t| t.kind);
        pending.push(pending_service(index, now, pr, kind, name));
    }
    pending
}

fn pending_service(
    index: &World<'_>,
    now: DateTime<Utc>,
    pr: &PullRequest,
    kind: Option<ServiceKind>,
    name: &str,
) -> ServiceProgress {
    let step = |id: StepId, draft: Draft| Settled::new(id, id.title(kind), draft);
    let enterprise = index.snapshot.github_host.as_deref();
    let (merged, applied) = match pr.merged_at {
        Some(merged_at) => (
            Draft::done(pr.created_at, Some(merged_at)).pr_link("Request PR", pr, enterprise),
            Draft::running(
                Some(merged_at),
                "Merged. ArgoCD polls the repo about every 3 minutes, then creates the resource",
            ),
        ),
        None => {
            (
                Draft::running(pr.created_at, "Merge the request PR to start provisioning")
                    .pr_link("Request PR", pr, enterprise),
                Draft::waiting("Waits for the request PR to be merged"),
            )
        }
    };
    let mut steps = vec![
        step(StepId::RequestPrMerged, merged),
        step(StepId::RequestApplied, applied),
    ];
    let rest = plan(kind, false).iter().skip(2).map(|&id| {
        let title = match (id, kind) {
            (StepId::Deployed, Some(k)) => default_target(k)
                .map_or(Cow::Borrowed(id.title(kind)), |t| {
                    format!("Deployed to {}", t.title()).into()
                }),
            _ => Cow::Borrowed(id.title(kind)),
        };
        Settled::new(
            id,
            title,
            Draft::waiting("Waits for the request to be applied"),
        )
    });
    steps.extend(rest);
    ServiceProgress {
        name: name.into(),
        kind,
        group: Group::Pending,
        created_at: None,
        events: events(&steps).into(),
        created: Arc::new([]),
        steps: steps
            .iter()
            .map(|step| step.at(&index.typicals, kind, now))
            .collect(),
    }
}
