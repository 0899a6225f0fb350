//! The derivation's output: services, their steps, events and what gets created. These are
//! the field names of `tower provisioning`'s JSON; keep them stable.

use std::borrow::Cow;
use std::sync::Arc;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

pub use crate::hangar::ServiceKind;

/// The derived provisioning state of every service Tower is tracking.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Provisioning {
    pub services: Vec<ServiceProgress>,
}

/// One service being provisioned (or waiting for its request PR).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ServiceProgress {
    pub name: Arc<str>,
    /// `None` for a pending request whose PR title does not name the kind.
    pub kind: Option<ServiceKind>,
    pub group: Group,
    /// When the XR was created; `None` while the request is pending.
    pub created_at: Option<DateTime<Utc>>,
    pub steps: Vec<Step>,
    /// Shared: it follows from the objects alone, so every derivation from one
    /// [`World`](super::World) hands out the same list.
    pub events: Arc<[Event]>,
    /// "What gets created": the XR's composed resources, with readiness where Tower can read
    /// them. Shared like `events`.
    pub created: Arc<[CreatedResource]>,
}

impl ServiceProgress {
    /// Without the durations of running steps (a page ticks them from `started_at`): equal
    /// from one tick to the next unless a step, the group, an event or a created resource
    /// changes.
    #[must_use]
    pub fn settled(mut self) -> Self {
        for step in &mut self.steps {
            if step.status == StepStatus::Running {
                step.duration_sec = None;
            }
        }
        self
    }
}

/// Where a service sits on the Services tab.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Group {
    /// A request PR exists but the XR does not yet.
    Pending,
    /// Under 24 hours old and not finished.
    InFlight,
    /// Built more than 4 hours ago with nothing deployed (or, for an InfraService, no
    /// environment after 4 hours). Leaves the strip and the badge.
    Stalled,
    /// Every step done; shown for 15 minutes after the last one.
    Finished,
}

/// The steps, by stable id.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum StepId {
    RequestPrMerged,
    RequestApplied,
    DevCluster,
    CicdOnboarded,
    Repositories,
    Catalog,
    OnboardingPrs,
    Secrets,
    FirstBuild,
    RunningHealthy,
    FirstEnvironment,
    Deployed,
}

impl StepId {
    pub const ALL: [Self; 12] = [
        Self::RequestPrMerged,
        Self::RequestApplied,
        Self::DevCluster,
        Self::CicdOnboarded,
        Self::Repositories,
        Self::Catalog,
        Self::OnboardingPrs,
        Self::Secrets,
        Self::FirstBuild,
        Self::RunningHealthy,
        Self::FirstEnvironment,
        Self::Deployed,
    ];

    /// The id as it appears in JSON, history records and the observer's memory.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::RequestPrMerged => "request-pr-merged",
            Self::RequestApplied => "request-applied",
            Self::DevCluster => "dev-cluster",
            Self::CicdOnboarded => "cicd-onboarded",
            Self::Repositories => "repositories",
            Self::Catalog => "catalog",
            Self::OnboardingPrs => "onboarding-prs",
            Self::Secrets => "secrets",
            Self::FirstBuild => "first-build",
            Self::RunningHealthy => "running-healthy",
            Self::FirstEnvironment => "first-environment",
            Self::Deployed => "deployed",
        }
    }

    pub fn from_id(id: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|s| s.as_str() == id)
    }

    /// The step's title for a kind (`None`: a request whose kind is not known yet reads as an
    /// application). The derivation adds the environment to "Running healthy" and the target
    /// to "Deployed" once it knows them.
    pub fn title(self, kind: Option<ServiceKind>) -> &'static str {
        let function = kind.is_some_and(ServiceKind::is_function);
        match self {
            Self::RequestPrMerged => "Request PR merged",
            Self::RequestApplied => "Request applied",
            Self::DevCluster => "Dev cluster chosen",
            Self::CicdOnboarded => "CI/CD onboarded",
            Self::Repositories if function => "Source repo created",
            Self::Repositories => "Repositories and starter files",
            Self::Catalog => "Available in the Backstage catalog",
            Self::OnboardingPrs if function => "Application onboarding PR",
            Self::OnboardingPrs => "Application onboarding PRs",
            Self::Secrets => "Infisical secrets resources",
            Self::FirstBuild => "First build and checks",
            Self::RunningHealthy => "Running healthy",
            Self::FirstEnvironment => "First environment up",
            Self::Deployed => "Deployed",
        }
    }

    /// The built-in estimate of how long the step takes, used until there is history.
    pub fn estimate_sec(self) -> u64 {
        match self {
            Self::RequestPrMerged => 15 * 60,
            Self::RequestApplied => 3 * 60,
            Self::DevCluster => 30,
            Self::CicdOnboarded => 2 * 60,
            Self::Repositories => 90,
            Self::Catalog => 10 * 60,
            Self::OnboardingPrs => 20 * 60,
            Self::Secrets => 60,
            Self::FirstBuild => 7 * 60,
            Self::RunningHealthy => 3 * 60,
            Self::FirstEnvironment => 30 * 60,
            Self::Deployed => 5 * 60,
        }
    }
}

/// The steps a service goes through, in order: ten for an application (the last is
/// "Running healthy", or "Deployed" when it deploys to a cloud target), ten for a function
/// (ending "Deployed"), eight for an InfraService. `None` reads as an application.
pub fn plan(kind: Option<ServiceKind>, deploys_to_cloud: bool) -> &'static [StepId] {
    use StepId::*;
    const APP: [StepId; 10] = [
        RequestPrMerged,
        RequestApplied,
        DevCluster,
        CicdOnboarded,
        Repositories,
        Catalog,
        OnboardingPrs,
        Secrets,
        FirstBuild,
        RunningHealthy,
    ];
    const CLOUD: [StepId; 10] = [
        RequestPrMerged,
        RequestApplied,
        DevCluster,
        CicdOnboarded,
        Repositories,
        Catalog,
        OnboardingPrs,
        Secrets,
        FirstBuild,
        Deployed,
    ];
    const INFRA: [StepId; 8] = [
        RequestPrMerged,
        RequestApplied,
        DevCluster,
        CicdOnboarded,
        Repositories,
        Catalog,
        Secrets,
        FirstEnvironment,
    ];
    match kind {
        Some(ServiceKind::InfraService) => &INFRA,
        Some(k) if k.is_function() => &CLOUD,
        _ if deploys_to_cloud => &CLOUD,
        _ => &APP,
    }
}

/// A step's state.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum StepStatus {
    Done,
    Running,
    Waiting,
    Failed,
}

/// Whether a typical duration was measured from history or is the built-in estimate.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TypicalSource {
    Measured,
    Estimate,
}

/// One step of a provision.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Step {
    pub id: StepId,
    pub title: Arc<str>,
    pub status: StepStatus,
    pub started_at: Option<DateTime<Utc>>,
    pub ended_at: Option<DateTime<Utc>>,
    /// Done or failed: end − start. Running: now − start. `None` when a needed time is unknown.
    pub duration_sec: Option<u64>,
    pub typical_sec: u64,
    pub typical_source: TypicalSource,
    /// What is happening or missing, in plain words (the failure message when failed).
    pub detail: Option<Arc<str>>,
    pub links: Arc<[Link]>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Link {
    pub title: Cow<'static, str>,
    pub url: String,
}

/// A line of the live events log: seconds since the first event, and what happened.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Event {
    pub at_sec: u64,
    pub text: String,
}

/// One of the XR's composed resources.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CreatedResource {
    pub kind: String,
    pub name: String,
    pub state: ResourceState,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ResourceState {
    Ready,
    NotReady,
    Failed,
    /// A kind Tower cannot read (or has no grant for).
    NotTracked,
}

/// How many services are in each group.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GroupCounts {
    pub pending: usize,
    pub in_flight: usize,
    pub stalled: usize,
    pub finished: usize,
}

/// One service on the strip.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ServiceSummary {
    pub name: String,
    pub kind: Option<ServiceKind>,
    pub group: Group,
    pub steps: Vec<StepSummary>,
}

/// One step on the strip: enough to draw its segment and tell the time left.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StepSummary {
    pub id: StepId,
    pub title: String,
    pub status: StepStatus,
    /// Running steps only: when it started (`None`: not known).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started_at: Option<DateTime<Utc>>,
    pub typical_sec: u64,
}
