//! `GET /api/provisioning`: the provisioning state of every service, derived on the server:
//! `{"now", "services", "stale"?, "github"?}`. Live, the deriver has the body ready (it
//! re-derives every second and on every change), so a request copies nothing while every
//! cluster and GitHub answer.

use axum::extract::State;
use axum::http::header;
use axum::response::{IntoResponse, Response};

use super::ApiError;
use crate::app::AppState;
use crate::live::provisioning_body;

pub async fn get(State(state): State<AppState>) -> Result<Response, ApiError> {
    let encoding =
        |err: serde_json::Error| ApiError::unavailable(format!("encoding provisioning: {err}"));
    let health = state.health();
    let body: bytes::Bytes = match &state.live {
        Some(live) => {
            let derived = live.derived();
            if health.is_clear() && !derived.body.is_empty() {
                derived.body.clone()
            } else {
                provisioning_body(derived.now, &derived.services_json, &health)
                    .map_err(encoding)?
                    .into()
            }
        }
        None => {
            let snapshot = state.source.snapshot();
            let derived = tower_shared::provisioning::derive_provisioning(&snapshot);
            let services = serde_json::value::to_raw_value(&derived.services).map_err(encoding)?;
            provisioning_body(snapshot.now, &services, &health)
                .map_err(encoding)?
                .into()
        }
    };
    Ok(([(header::CONTENT_TYPE, "application/json")], body).into_response())
}
