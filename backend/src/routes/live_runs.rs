//! `GET /live-runs?app=NAME[&namespace=NS]`: the app's Tekton PipelineRuns and TaskRuns,
//! from the control plane's watch cache (namespace `app-<name>-cicd`, or
//! `infra-<name>-cicd` for an InfraService).

use axum::extract::State;
use axum::Json;
use serde::Serialize;
use tower_shared::hangar::{self, ServiceKind};
use tower_shared::kube::Object;

use super::params::{self, Query};
use super::ApiError;
use crate::app::AppState;
use crate::live::kube::ClusterStatus;

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Answer {
    app: String,
    cluster: String,
    namespace: String,
    pipeline_runs: Vec<Object>,
    task_runs: Vec<Object>,
    /// Clusters serving their last known data (GitHub plays no part in runs).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    stale: Vec<ClusterStatus>,
}

pub async fn get(State(state): State<AppState>, query: Query) -> Result<Json<Answer>, ApiError> {
    let app = params::dns_label(&query, "app")?;
    let given = params::optional_dns_label(&query, "namespace")?;
    let snapshot = state.source.snapshot();
    let cluster = snapshot.control_plane_cluster.clone();
    let objects = snapshot.cluster(&cluster);
    let xr = objects
        .iter()
        .find(|o| hangar::is_xr(o) && o.metadata.name == app);
    let namespace = match given {
        Some(ns) => ns.to_owned(),
        None => hangar::cicd_namespace(app, xr.and_then(|o| ServiceKind::from_kind(&o.kind))),
    };
    let runs = |kind: &str| -> Vec<Object> {
        let mut runs: Vec<Object> = objects
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
    Ok(Json(Answer {
        app: app.to_owned(),
        cluster,
        namespace,
        pipeline_runs,
        task_runs,
        stale: state.health().stale,
    }))
}
