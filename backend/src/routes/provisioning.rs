//! `GET /api/provisioning`: the provisioning state of every service, derived on the server.

use axum::extract::State;
use axum::http::header;
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use serde_json::value::RawValue;

use super::ApiError;
use crate::app::AppState;
use crate::live::kube::ClusterStatus;

#[derive(Serialize)]
struct Answer<'a> {
    now: chrono::DateTime<chrono::Utc>,
    services: &'a RawValue,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    stale: Vec<ClusterStatus>,
}

pub async fn get(State(state): State<AppState>) -> Result<Response, ApiError> {
    let (now, services) = match &state.live {
        // The deriver keeps a fresh answer, serialised once.
        Some(live) => {
            let derived = live.derived();
            (derived.now, derived.services_json.clone())
        }
        None => {
            let snapshot = state.source.snapshot();
            let derived = tower_shared::provisioning::derive_provisioning(&snapshot);
            let services = serde_json::value::to_raw_value(&derived.services)
                .map_err(|err| ApiError::unavailable(format!("encoding provisioning: {err}")))?;
            (snapshot.now, std::sync::Arc::from(services))
        }
    };
    let body = serde_json::to_vec(&Answer {
        now,
        services: &services,
        stale: state.stale_clusters(),
    })
    .map_err(|err| ApiError::unavailable(format!("encoding provisioning: {err}")))?;
    Ok(([(header::CONTENT_TYPE, "application/json")], body).into_response())
}
