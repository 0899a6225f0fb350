//! The fleet overview: every app in every environment, and which cells need attention.
//!
//! Wire types use Argo CD's and Argo Rollouts' own status words. A status Tower has not
//! seen (or that a newer controller invented) is kept as [`crate::argo::SyncStatus::Unknown`] /
//! [`crate::argo::HealthStatus::Unknown`] / `None`, never guessed.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

/// The fleet as the backend last saw it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Fleet {
    /// When the backend assembled this view (its own clock, not the browser's).
    pub generated_at: DateTime<Utc>,
    /// Environments in promotion order (e.g. dev, staging, prod): the matrix columns.
    pub environments: Vec<String>,
    pub apps: Vec<FleetApp>,
}

/// One app: a row of the matrix.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FleetApp {
    pub name: String,
    /// The Hangar XR kind, e.g. `NodeJS`, `Go`, `LambdaFunction`.
    pub kind: String,
    /// One cell per environment the app is deployed to; an environment with no cell is
    /// one the app does not deploy to.
    pub cells: Vec<FleetCell>,
    /// What is wrong with what the platform made for the app as a whole (a composed
    /// resource failing), in plain words ([`crate::config::composed_attention`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub platform: Vec<String>,
    /// While the service is still provisioning: how far it is, in words, and how loudly
    /// ([`provisioning_said`]); its Provisioning tab tells the rest.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provisioning: Option<Attention>,
}

/// One app in one environment: its [`crate::state::EnvState`], the one truth every page
/// reads.
pub type FleetCell = crate::state::EnvState;

pub use crate::state::{Attention, RolloutState, Severity};

/// Whether a cell needs attention, and why ([`crate::state::EnvState::attention`]). `None`
/// means calm: synced and healthy, nothing moving, nothing wrong.
pub fn attention(cell: &FleetCell) -> Option<Attention> {
    cell.attention()
}

/// The loudest attention among an app's cells, if any.
pub fn app_attention(app: &FleetApp) -> Option<Severity> {
    let platform = (!app.platform.is_empty()).then_some(Severity::Attention);
    let provisioning = app.provisioning.as_ref().map(|p| p.severity);
    app.cells
        .iter()
        .filter_map(|c| attention(c).map(|a| a.severity))
        .chain(platform)
        .chain(provisioning)
        .max()
}

/// Whether `app` is one "needs attention only" keeps: a cell at attention or worse.
pub fn needs_attention(app: &FleetApp) -> bool {
    app_attention(app) >= Some(Severity::Attention)
}

/// Apps ordered so trouble rises to the top: failing, then attention, then notice, then
/// calm; ties by name. Stable for equal keys, so the order never depends on input order.
pub fn sort_by_trouble(apps: &mut [FleetApp]) {
    apps.sort_by(|a, b| {
        app_attention(b)
            .cmp(&app_attention(a))
            .then_with(|| a.name.cmp(&b.name))
    });
}

/// The fleet as a snapshot shows it: every Argo CD Application labelled with an app and an
/// environment (on the control plane, namespace `argocd`), with the app's Rollout from the
/// cluster and namespace the Application deploys to. Apps come sorted by trouble.
pub fn derive_fleet(snapshot: &crate::snapshot::Snapshot) -> Fleet {
    assemble(snapshot.now, fleet_apps(snapshot))
}

/// The apps [`derive_fleet`] finds in `snapshot`, in no particular order and with their
/// cells in none: one service's part of a snapshot gives that service's app, so a large
/// fleet is derived an app at a time and put together by [`assemble`]. Each cell is the
/// app's state there ([`crate::state`]).
pub fn fleet_apps(snapshot: &crate::snapshot::Snapshot) -> Vec<FleetApp> {
    use crate::hangar;
    use std::collections::BTreeMap;

    let control_plane = snapshot.control_plane_cluster.as_str();
    let kinds: BTreeMap<&str, &str> = snapshot
        .clusters
        .get(control_plane)
        .into_iter()
        .flatten()
        .filter(|o| hangar::is_xr(o))
        .map(|o| (o.name(), o.kind.as_str()))
        .collect();
    // What the platform made for each app as a whole: its failing composed resources.
    let composites = crate::config::Composites::of(snapshot);
    let mut platform: BTreeMap<&str, Vec<String>> = BTreeMap::new();
    for xr in composites.xrs() {
        if let Some(composed) = composites.composed(xr, snapshot.github_host.as_deref()) {
            let reasons = crate::config::composed_attention(&composed);
            if !reasons.is_empty() {
                platform.insert(xr.name(), reasons);
            }
        }
    }
    let mut cells: BTreeMap<String, Vec<FleetCell>> = BTreeMap::new();
    for (app, state) in crate::state::of_all(snapshot) {
        cells.entry(app).or_default().push(state);
    }
    // A service on a cloud target: its deploy runs' environments (a row even before its
    // first deploy).
    let cloud: Vec<&str> = snapshot
        .clusters
        .get(control_plane)
        .into_iter()
        .flatten()
        .filter(|o| {
            hangar::is_xr(o)
                && crate::cloud::object_target(o).is_some()
                && !cells.contains_key(o.name())
        })
        .map(|o| o.name())
        .collect();
    for name in cloud {
        cells.insert(name.to_owned(), crate::state::of_cloud(snapshot, name));
    }
    cells
        .into_iter()
        .map(|(name, cells)| FleetApp {
            kind: kinds
                .get(name.as_str())
                .copied()
                .unwrap_or("unknown")
                .to_owned(),
            platform: platform.remove(name.as_str()).unwrap_or_default(),
            provisioning: None,
            name,
            cells,
        })
        .collect()
}

/// What a service still provisioning says on the fleet, from its progress
/// ([`crate::provisioning`]): failed at a step (failing), stalled (attention), a request
/// waiting or a step under way (a notice); `None` once it is finished.
pub fn provisioning_said(progress: &crate::provisioning::ServiceProgress) -> Option<Attention> {
    use crate::provisioning::{Group, StepStatus};
    let failed = progress
        .steps
        .iter()
        .find(|s| s.status == StepStatus::Failed);
    let at = progress
        .steps
        .iter()
        .position(|s| s.status != StepStatus::Done);
    let step = |i: usize| {
        format!(
            "{} (step {} of {})",
            progress.steps[i].title,
            i + 1,
            progress.steps.len()
        )
    };
    let (severity, reason) = match (progress.group, failed, at) {
        (Group::Finished, ..) => return None,
        (_, Some(failed), _) => (
            Severity::Failing,
            format!("Provisioning failed: {}", failed.title),
        ),
        (Group::Stalled, _, Some(i)) => (
            Severity::Attention,
            format!("Provisioning stalled at {}", step(i)),
        ),
        (Group::Stalled, _, None) => (Severity::Attention, "Provisioning stalled".to_owned()),
        (Group::Pending, ..) => (
            Severity::Notice,
            "Requested: its request pull request is not merged yet".to_owned(),
        ),
        (Group::InFlight, _, Some(i)) => (Severity::Notice, format!("Provisioning: {}", step(i))),
        (Group::InFlight, _, None) => (Severity::Notice, "Provisioning".to_owned()),
    };
    Some(Attention { severity, reason })
}

/// Puts every service still provisioning on the fleet ([`provisioning_said`]): beside its
/// row when it has one, else as a row of its own — so the fleet lists every service Tower
/// knows, those not deployed yet included.
pub fn with_provisioning(
    apps: &mut Vec<FleetApp>,
    services: &[crate::provisioning::ServiceProgress],
) {
    for progress in services {
        let Some(said) = provisioning_said(progress) else {
            continue;
        };
        match apps.iter_mut().find(|a| *a.name == *progress.name) {
            Some(app) => app.provisioning = Some(said),
            None => apps.push(FleetApp {
                name: progress.name.to_string(),
                kind: progress
                    .kind
                    .map_or_else(|| "unknown".to_owned(), |k| k.as_str().to_owned()),
                cells: Vec::new(),
                platform: Vec::new(),
                provisioning: Some(said),
            }),
        }
    }
}

/// Judges every cell's objectives by what Prometheus answered
/// ([`crate::state::judge_objectives`]): for apps derived from objects alone (the live
/// deriver's, a service at a time), once the figures are known.
pub fn judge_objectives(apps: &mut [FleetApp], snapshot: &crate::snapshot::Snapshot) {
    for app in apps {
        for cell in &mut app.cells {
            crate::state::judge_objectives(snapshot, &app.name, cell);
        }
    }
}

/// The fleet of `apps` at `generated_at`: the environments of all their cells in promotion
/// order, each app's cells in that order, the apps sorted by trouble.
pub fn assemble(generated_at: chrono::DateTime<chrono::Utc>, mut apps: Vec<FleetApp>) -> Fleet {
    let named: std::collections::BTreeSet<&str> = apps
        .iter()
        .flat_map(|a| &a.cells)
        .map(|c| c.environment.as_str())
        .collect();
    let mut environments: Vec<String> = named.into_iter().map(str::to_owned).collect();
    crate::hangar::sort_environments(&mut environments);
    for app in &mut apps {
        app.cells
            .sort_by_key(|c| environments.iter().position(|e| *e == c.environment));
    }
    sort_by_trouble(&mut apps);
    Fleet {
        generated_at,
        environments,
        apps,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::argo::{HealthStatus, SyncStatus};
    use crate::state::{Source, Trouble};

    fn cell(troubles: &[Severity], waits: &[&str]) -> FleetCell {
        FleetCell {
            environment: "prod".to_owned(),
            namespace: None,
            cloud: None,
            sync: SyncStatus::Synced,
            health: HealthStatus::Healthy,
            running: None,
            arriving: None,
            rollout: None,
            troubles: troubles
                .iter()
                .map(|&severity| Trouble {
                    source: Source::Pods,
                    severity,
                    words: format!("{severity:?}"),
                })
                .collect(),
            waits: waits.iter().map(|w| (*w).to_owned()).collect(),
            until: None,
        }
    }

    #[test]
    fn trouble_rises_to_the_top_and_a_wait_is_only_a_notice() {
        let app = |name: &str, c: FleetCell| FleetApp {
            name: name.to_owned(),
            kind: "Go".to_owned(),
            cells: vec![c],
            platform: Vec::new(),
            provisioning: None,
        };
        let mut apps = vec![
            app("calm-a", cell(&[], &[])),
            app("moving", cell(&[], &["Canary progressing"])),
            app(
                "broken",
                cell(&[Severity::Attention, Severity::Failing], &[]),
            ),
            app("amber", cell(&[Severity::Attention], &["Progressing"])),
            app("calm-b", cell(&[], &[])),
        ];
        sort_by_trouble(&mut apps);
        let names: Vec<_> = apps.iter().map(|a| a.name.as_str()).collect();
        assert_eq!(names, ["broken", "amber", "moving", "calm-a", "calm-b"]);
        assert!(!needs_attention(&apps[2]), "a wait is not amber");
        assert_eq!(
            attention(&apps[0].cells[0]).map(|a| a.reason),
            Some("Attention; Failing".to_owned())
        );
    }

    #[test]
    fn the_fleet_is_derived_from_labelled_applications_and_their_rollouts() {
        let snapshot = crate::snapshot::Snapshot::from_json(
            &serde_json::json!({
                "now": "2026-11-30T10:00:00Z",
                "controlPlaneCluster": "dev",
                "clusters": {
                    "dev": [
                        {"apiVersion": "catalog.hangar.io/v1alpha1", "kind": "Go",
                         "metadata": {"name": "pay"}},
                        {"apiVersion": "argoproj.io/v1alpha1", "kind": "Application",
                         "metadata": {"name": "pay-prod", "namespace": "argocd",
                                      "labels": {"hangar.io/app": "pay", "hangar.io/environment": "prod"}},
                         "spec": {"destination": {"name": "prod", "namespace": "app-pay-prod"}},
                         "status": {"sync": {"status": "Synced"}, "health": {"status": "Suspended"},
                                    "summary": {"images": ["ghcr.io/acme/pay:1.5.0-def5678",
                                                           "ghcr.io/acme/pay:1.4.0-abc1234"]}}},
                        // No status yet: unknown, never healthy.
                        {"apiVersion": "argoproj.io/v1alpha1", "kind": "Application",
                         "metadata": {"name": "pay-dev", "namespace": "argocd",
                                      "labels": {"hangar.io/app": "pay", "hangar.io/environment": "dev"}},
                         "spec": {"destination": {"name": "dev", "namespace": "app-pay-dev"}}},
                        // Not labelled: not an app environment (e.g. the platform's own apps).
                        {"apiVersion": "argoproj.io/v1alpha1", "kind": "Application",
                         "metadata": {"name": "pay-cicd", "namespace": "argocd"},
                         "status": {"sync": {"status": "Synced"}, "health": {"status": "Healthy"}}}
                    ],
                    "prod": [
                        {"apiVersion": "argoproj.io/v1alpha1", "kind": "Rollout",
                         "metadata": {"name": "pay", "namespace": "app-pay-prod"},
                         "status": {"phase": "Paused", "message": "CanaryPauseStep",
                                    "stableRS": "aaa", "currentPodHash": "bbb",
                                    "canary": {"weights": {"canary": {"weight": 40}}}}},
                        // What runs is the stable ReplicaSet's image; the canary's is the
                        // one under trial, whatever order Argo CD lists them in.
                        {"apiVersion": "apps/v1", "kind": "ReplicaSet",
                         "metadata": {"name": "pay-aaa", "namespace": "app-pay-prod",
                                      "labels": {"rollouts-pod-template-hash": "aaa"}},
                         "spec": {"template": {"spec": {"containers": [
                             {"name": "app", "image": "ghcr.io/acme/pay:1.4.0-abc1234"}]}}}},
                        {"apiVersion": "apps/v1", "kind": "ReplicaSet",
                         "metadata": {"name": "pay-bbb", "namespace": "app-pay-prod",
                                      "labels": {"rollouts-pod-template-hash": "bbb"}},
                         "spec": {"template": {"spec": {"containers": [
                             {"name": "app", "image": "ghcr.io/acme/pay:1.5.0-def5678"}]}}}}
                    ]
                }
            })
            .to_string(),
        )
        .unwrap();
        let fleet = derive_fleet(&snapshot);
        assert_eq!(fleet.environments, ["dev", "prod"]);
        assert_eq!(fleet.apps.len(), 1);
        let pay = &fleet.apps[0];
        assert_eq!(pay.kind, "Go");
        let envs: Vec<_> = pay.cells.iter().map(|c| c.environment.as_str()).collect();
        assert_eq!(envs, ["dev", "prod"]);
        let dev = &pay.cells[0];
        assert_eq!(
            (dev.sync, dev.health),
            (SyncStatus::Unknown, HealthStatus::Unknown)
        );
        assert_eq!(dev.running, None);
        assert_eq!(dev.rollout, None);
        let prod = &pay.cells[1];
        assert_eq!(prod.running_tag(), Some("1.4.0-abc1234"));
        assert_eq!(
            prod.arriving.as_ref().and_then(|a| a.image.as_deref()),
            Some("ghcr.io/acme/pay:1.5.0-def5678")
        );
        assert_eq!(
            attention(prod).unwrap().reason,
            "Canary paused at 40% traffic"
        );
    }
}
