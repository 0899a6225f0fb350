//! `GET /live-runs?app=NAME[&namespace=NS]`: the app's Tekton PipelineRuns and TaskRuns,
//! from the control plane's watch cache (namespace `app-<name>-cicd`, or
//! `infra-<name>-cicd` for an InfraService), made once per change ([`crate::tabs::Tabs`]).

use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::Response;
use tower_shared::api::LiveRuns;

use super::params::{self, Query};
use super::ApiError;
use crate::state::AppState;
use crate::tabs::live_runs_key;

pub async fn get(
    State(state): State<AppState>,
    query: Query,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let app = params::dns_label(&query, "app")?;
    let given = params::optional_dns_label(&query, "namespace")?;
    let view = state
        .source
        .tabs()
        .view::<LiveRuns>(&state.source.derived(), &live_runs_key(app, given))
        .ok_or_else(|| ApiError::Unknown {
            field: "app",
            message: format!("Tower knows no app called {app} (no XR and no runs where asked)"),
        })?;
    Ok(view.respond(&headers).await)
}
