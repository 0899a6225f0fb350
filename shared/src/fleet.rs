//! The fleet overview: every app in every environment, and which cells need attention.
//!
//! Wire types use Argo CD's and Argo Rollouts' own status words. A status Tower has not
//! seen (or that a newer controller invented) is kept as [`crate::argo::SyncStatus::Unknown`] /
//! [`crate::argo::HealthStatus::Unknown`] / `None`, never guessed.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::argo::{word, HealthStatus, RolloutPhase, SyncStatus};

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
}

/// One app in one environment.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FleetCell {
    pub environment: String,
    /// Argo CD `status.sync.status`.
    pub sync: SyncStatus,
    /// Argo CD `status.health.status`.
    pub health: HealthStatus,
    /// The image tag running there, when known.
    pub image_tag: Option<String>,
    /// The app's Argo Rollout in that environment, if it has one.
    pub rollout: Option<RolloutState>,
    /// What is wrong with the platform's objects for the app in this environment (a secret
    /// not synced, or stale), in plain words ([`crate::config::secret_attention`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub platform: Vec<String>,
}

/// A canary rollout's position.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RolloutState {
    pub phase: RolloutPhase,
    /// Percentage of traffic on the canary, when the rollout is mid-way.
    pub canary_weight: Option<u8>,
    /// The controller's own message, e.g. `CanaryPauseStep`.
    pub message: Option<String>,
    /// A blue-green rollout's words differ: a preview waits, no canary takes traffic.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub blue_green: bool,
}

/// How loudly a cell asks for attention.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// Something is moving (a sync, a canary step); worth a glance, not an alarm.
    Notice,
    /// Amber: something is off and a person may need to act.
    Attention,
    /// Broken.
    Failing,
}

/// Why a cell is not calm, in plain words.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Attention {
    pub severity: Severity,
    pub reason: String,
}

/// Whether a cell needs attention, and why. `None` means calm: synced and healthy with
/// no rollout in motion.
pub fn attention(cell: &FleetCell) -> Option<Attention> {
    let mut found: Vec<Attention> = Vec::new();
    let mut note = |severity, reason: String| found.push(Attention { severity, reason });

    // Argo CD derives an app's health from its Rollout (a paused canary is "Suspended"), so
    // when the rollout is mid-way or failing its own line says it better.
    let rollout_explains_health = cell
        .rollout
        .as_ref()
        .is_some_and(|r| !matches!(r.phase, RolloutPhase::Healthy | RolloutPhase::Unknown));
    match cell.health {
        HealthStatus::Healthy => {}
        HealthStatus::Progressing | HealthStatus::Degraded | HealthStatus::Suspended
            if rollout_explains_health => {}
        HealthStatus::Degraded => note(Severity::Failing, "Degraded".to_owned()),
        HealthStatus::Missing => note(Severity::Failing, "Resources missing".to_owned()),
        HealthStatus::Progressing => note(Severity::Notice, "Progressing".to_owned()),
        HealthStatus::Suspended => note(Severity::Attention, "Suspended".to_owned()),
        HealthStatus::Unknown => note(Severity::Attention, "Health unknown".to_owned()),
    }
    match cell.sync {
        SyncStatus::Synced => {}
        SyncStatus::OutOfSync => note(Severity::Attention, "Out of sync with Git".to_owned()),
        SyncStatus::Unknown => note(Severity::Attention, "Sync status unknown".to_owned()),
    }
    if let Some(rollout) = &cell.rollout {
        let at = rollout
            .canary_weight
            .map(|w| format!(" at {w}% traffic"))
            .unwrap_or_default();
        let moving = if rollout.blue_green {
            "Blue-green rollout"
        } else {
            "Canary"
        };
        match rollout.phase {
            RolloutPhase::Healthy => {}
            RolloutPhase::Paused if rollout.blue_green => note(
                Severity::Attention,
                "Preview waiting for promotion".to_owned(),
            ),
            RolloutPhase::Paused => note(Severity::Attention, format!("Canary paused{at}")),
            RolloutPhase::Progressing => {
                note(Severity::Notice, format!("{moving} progressing{at}"))
            }
            RolloutPhase::Degraded => note(Severity::Failing, format!("Rollout degraded{at}")),
            RolloutPhase::Unknown => note(Severity::Attention, "Rollout state unknown".to_owned()),
        }
    }

    for reason in &cell.platform {
        note(Severity::Attention, reason.clone());
    }

    let severity = found.iter().map(|a| a.severity).max()?;
    let reason = found
        .iter()
        .map(|a| a.reason.as_str())
        .collect::<Vec<_>>()
        .join("; ");
    Some(Attention { severity, reason })
}

/// The loudest attention among an app's cells, if any.
pub fn app_attention(app: &FleetApp) -> Option<Severity> {
    let platform = (!app.platform.is_empty()).then_some(Severity::Attention);
    app.cells
        .iter()
        .filter_map(|c| attention(c).map(|a| a.severity))
        .chain(platform)
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
/// fleet is derived an app at a time and put together by [`assemble`].
pub fn fleet_apps(snapshot: &crate::snapshot::Snapshot) -> Vec<FleetApp> {
    use crate::hangar;
    use crate::kube::{at, str_at};
    use std::collections::BTreeMap;

    let control_plane = snapshot.control_plane_cluster.as_str();
    let objects = |cluster: &str| snapshot.clusters.get(cluster).into_iter().flatten();
    // Read once, looked up per Application.
    let rollouts: BTreeMap<(&str, &str, &str), &crate::kube::Object> = snapshot
        .clusters
        .iter()
        .flat_map(|(cluster, objects)| objects.iter().map(move |o| (cluster.as_str(), &**o)))
        .filter(|(_, o)| o.kind == "Rollout" && o.group() == "argoproj.io")
        .filter_map(|(cluster, o)| Some(((cluster, o.namespace()?, o.name()), o)))
        .collect();
    // ReplicaSets by where they run: a Rollout's stable one is what runs there.
    let mut replica_sets: BTreeMap<(&str, &str), Vec<&crate::kube::Object>> = BTreeMap::new();
    for (cluster, objects) in &snapshot.clusters {
        for set in objects.iter().filter(|o| o.kind == "ReplicaSet") {
            if let Some(ns) = set.namespace() {
                replica_sets
                    .entry((cluster.as_str(), ns))
                    .or_default()
                    .push(set);
            }
        }
    }
    let kinds: BTreeMap<&str, &str> = objects(control_plane)
        .filter(|o| hangar::is_xr(o))
        .map(|o| (o.name(), o.kind.as_str()))
        .collect();
    // What the platform made, read once for every app: secrets per (app, environment),
    // failing composed resources per app.
    let mut secrets: BTreeMap<(&str, String), Vec<String>> = BTreeMap::new();
    for (service, secret) in crate::config::secret_syncs(snapshot) {
        if let (Some(env), Some(why)) = (
            secret.environment.clone(),
            crate::config::secret_attention(&secret),
        ) {
            secrets.entry((service, env)).or_default().push(why);
        }
    }
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

    let mut cells: BTreeMap<&str, Vec<FleetCell>> = BTreeMap::new();
    let applications = objects(control_plane).filter(|o| {
        o.kind == "Application"
            && o.group() == "argoproj.io"
            && o.namespace() == Some(hangar::ARGOCD_NAMESPACE)
    });
    for application in applications {
        let (Some(app), Some(environment)) = (
            application.label(hangar::APP_LABEL),
            application.label(hangar::ENVIRONMENT_LABEL),
        ) else {
            continue;
        };
        let status = &application.status;
        let destination = |field| str_at(&application.spec, &["destination", field]);
        // An Application deploying "in-cluster" (by server URL) deploys to the control plane.
        let cluster = destination("name").unwrap_or(control_plane);
        let namespace = destination("namespace");
        let rollout = namespace.and_then(|ns| rollouts.get(&(cluster, ns, app)));
        // What runs: a Rollout's stable version (never a canary, nor one aborted), as the
        // Deployments tab and the release matrix read it; without a Rollout, the image
        // Argo CD reports.
        let image = match rollout {
            Some(rollout) => crate::argo::rollout_hashes(rollout)
                .0
                .and_then(|hash| {
                    let here = replica_sets.get(&(cluster, namespace?))?;
                    crate::argo::replica_set_of(here.iter().copied(), hash)
                })
                .and_then(crate::argo::replica_set_image),
            None => at(status, &["summary", "images"])
                .and_then(|images| images.get(0))
                .and_then(serde_json::Value::as_str),
        };
        let image_tag = image.map(|image| crate::image::short(image).to_owned());
        cells.entry(app).or_default().push(FleetCell {
            environment: environment.to_owned(),
            sync: word(status, &["sync", "status"]).unwrap_or(SyncStatus::Unknown),
            health: word(status, &["health", "status"]).unwrap_or(HealthStatus::Unknown),
            image_tag,
            rollout: rollout.map(|r| rollout_state(r)),
            platform: secrets
                .remove(&(app, environment.to_owned()))
                .unwrap_or_default(),
        });
    }

    cells
        .into_iter()
        .map(|(name, cells)| FleetApp {
            name: name.to_owned(),
            kind: kinds.get(name).copied().unwrap_or("unknown").to_owned(),
            cells,
            platform: platform.remove(name).unwrap_or_default(),
        })
        .collect()
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

/// A Rollout's phase by the same rules as the Deployments tab
/// ([`crate::argo::rollout_phase`]), its canary weight while mid-way, and its message.
fn rollout_state(rollout: &crate::kube::Object) -> RolloutState {
    let (phase, message) = crate::argo::rollout_phase(rollout);
    let canary_weight = (phase != RolloutPhase::Healthy)
        .then(|| crate::kube::at(&rollout.status, &["canary", "weights", "canary", "weight"]))
        .flatten()
        .and_then(serde_json::Value::as_u64)
        // No traffic on a canary (aborted, or not started) is not a weight to show.
        .filter(|w| *w > 0)
        .and_then(|w| u8::try_from(w).ok());
    RolloutState {
        phase,
        canary_weight,
        message,
        blue_green: crate::kube::at(&rollout.spec, &["strategy", "blueGreen"]).is_some(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cell(sync: SyncStatus, health: HealthStatus, rollout: Option<RolloutState>) -> FleetCell {
        FleetCell {
            environment: "prod".to_owned(),
            sync,
            health,
            image_tag: None,
            rollout,
            platform: Vec::new(),
        }
    }

    fn paused_canary(weight: Option<u8>) -> Option<RolloutState> {
        Some(RolloutState {
            phase: RolloutPhase::Paused,
            canary_weight: weight,
            message: Some("CanaryPauseStep".to_owned()),
            blue_green: false,
        })
    }

    #[test]
    fn synced_and_healthy_is_calm() {
        assert_eq!(
            attention(&cell(SyncStatus::Synced, HealthStatus::Healthy, None)),
            None
        );
    }

    #[test]
    fn paused_canary_is_amber_with_its_weight() {
        let a = attention(&cell(
            SyncStatus::Synced,
            HealthStatus::Suspended,
            paused_canary(Some(40)),
        ))
        .unwrap();
        assert_eq!(a.severity, Severity::Attention);
        assert_eq!(a.reason, "Canary paused at 40% traffic");
    }

    #[test]
    fn unknown_weight_is_not_shown_as_zero() {
        let a = attention(&cell(
            SyncStatus::Synced,
            HealthStatus::Suspended,
            paused_canary(None),
        ))
        .unwrap();
        assert_eq!(a.reason, "Canary paused");
    }

    #[test]
    fn reasons_combine_and_the_loudest_wins() {
        let a = attention(&cell(SyncStatus::OutOfSync, HealthStatus::Degraded, None)).unwrap();
        assert_eq!(a.severity, Severity::Failing);
        assert_eq!(a.reason, "Degraded; Out of sync with Git");
    }

    #[test]
    fn a_rollout_is_not_described_twice() {
        let degraded = Some(RolloutState {
            phase: RolloutPhase::Degraded,
            canary_weight: None,
            message: None,
            blue_green: false,
        });
        let a = attention(&cell(SyncStatus::Synced, HealthStatus::Degraded, degraded)).unwrap();
        assert_eq!(a.severity, Severity::Failing);
        assert_eq!(a.reason, "Rollout degraded");

        // A healthy rollout explains nothing: the app's own health still speaks.
        let healthy = Some(RolloutState {
            phase: RolloutPhase::Healthy,
            canary_weight: None,
            message: None,
            blue_green: false,
        });
        let a = attention(&cell(SyncStatus::Synced, HealthStatus::Degraded, healthy)).unwrap();
        assert_eq!(a.reason, "Degraded");
    }

    #[test]
    fn unknown_status_words_deserialize_as_unknown() {
        let c: FleetCell = serde_json::from_str(
            r#"{"environment":"dev","sync":"Weird","health":"Brand-new","imageTag":null,"rollout":null}"#,
        )
        .unwrap();
        assert_eq!(c.sync, SyncStatus::Unknown);
        assert_eq!(c.health, HealthStatus::Unknown);
        assert_eq!(attention(&c).unwrap().severity, Severity::Attention);
    }

    #[test]
    fn trouble_rises_to_the_top() {
        let app = |name: &str, c: FleetCell| FleetApp {
            name: name.to_owned(),
            kind: "Go".to_owned(),
            cells: vec![c],
            platform: Vec::new(),
        };
        let mut apps = vec![
            app(
                "calm-a",
                cell(SyncStatus::Synced, HealthStatus::Healthy, None),
            ),
            app(
                "moving",
                cell(SyncStatus::Synced, HealthStatus::Progressing, None),
            ),
            app(
                "broken",
                cell(SyncStatus::Synced, HealthStatus::Degraded, None),
            ),
            app(
                "amber",
                cell(SyncStatus::OutOfSync, HealthStatus::Healthy, None),
            ),
            app(
                "calm-b",
                cell(SyncStatus::Synced, HealthStatus::Healthy, None),
            ),
        ];
        sort_by_trouble(&mut apps);
        let names: Vec<_> = apps.iter().map(|a| a.name.as_str()).collect();
        assert_eq!(names, ["broken", "amber", "moving", "calm-a", "calm-b"]);
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
        assert_eq!(dev.image_tag, None);
        assert_eq!(dev.rollout, None);
        let prod = &pay.cells[1];
        assert_eq!(prod.image_tag.as_deref(), Some("1.4.0-abc1234"));
        assert_eq!(
            attention(prod).unwrap().reason,
            "Canary paused at 40% traffic"
        );
    }
}
