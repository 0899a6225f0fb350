//! `GET /live-runs?app=NAME[&namespace=NS]`: the app's Tekton PipelineRuns and TaskRuns,
//! from the control plane's watch cache (namespace `app-<name>-cicd`, or
//! `infra-<name>-cicd` for an InfraService).

use axum::extract::State;
use axum::Json;
use tower_shared::api::LiveRuns;
use tower_shared::hangar::{self, ServiceKind};
use tower_shared::kube::Object;

use std::sync::Arc;

use super::params::{self, Query};
use super::ApiError;
use crate::state::AppState;

pub async fn get(State(state): State<AppState>, query: Query) -> Result<Json<LiveRuns>, ApiError> {
    let app = params::dns_label(&query, "app")?;
    let given = params::optional_dns_label(&query, "namespace")?;
    let derived = state.source.derived();
    // The app's part: its XR, and the runs of its CI/CD namespaces.
    let snapshot = derived.service(app);
    let cluster = snapshot.control_plane_cluster.clone();
    let objects = snapshot.cluster(&cluster);
    let xr = objects
        .iter()
        .find(|o| hangar::is_xr(o) && o.metadata.name == app);
    let namespace = match given {
        Some(ns) => ns.to_owned(),
        None => hangar::cicd_namespace(app, xr.and_then(|o| ServiceKind::from_kind(&o.kind))),
    };
    let runs = |kind: &str| -> Vec<Arc<Object>> {
        let mut runs: Vec<Arc<Object>> = objects
            .iter()
            .filter(|o| o.kind == kind && o.group() == "tekton.dev")
            .filter(|o| o.namespace() == Some(namespace.as_str()))
            .cloned()
            .collect();
        // Newest first.
        runs.sort_by(|a, b| {
            b.metadata
                .creation_timestamp
                .cmp(&a.metadata.creation_timestamp)
                .then_with(|| a.metadata.name.cmp(&b.metadata.name))
        });
        runs
    };
    let pipeline_runs = runs("PipelineRun");
    let task_runs = runs("TaskRun");
    if xr.is_none() && pipeline_runs.is_empty() && task_runs.is_empty() {
        return Err(ApiError::Unknown {
            field: "app",
            message: format!("Tower knows no app called {app} (no XR and no runs in {namespace})"),
        });
    }
    Ok(Json(LiveRuns {
        app: app.to_owned(),
        cluster,
        namespace,
        pipeline_runs,
        task_runs,
        stale: derived.health.stale.clone(),
    }))
}
