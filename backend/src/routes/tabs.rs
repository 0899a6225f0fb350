//! The per-service tabs served whole, made once per change of the snapshot
//! ([`crate::tabs::Tabs`]) and answered as bytes: `GET /api/snapshot?service=NAME` (the
//! service's objects), `/api/deployments`, `/api/releases` and `/api/config` (the Config
//! tab's read-only half), with the health notices.

use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::Response;

use super::params::ServiceName;
use super::ApiError;
use crate::state::AppState;
use crate::tabs::PerService;

/// `GET <the tab's route>?service=NAME`: `A`'s view of the service; 404 naming `service`
/// when Tower knows nothing of it.
pub async fn serve<A: PerService>(
    State(state): State<AppState>,
    ServiceName(service): ServiceName,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let view = state
        .source
        .tabs()
        .view::<A>(&state.source.derived(), &service)
        .ok_or_else(|| ApiError::no_service("service", &service))?;
    Ok(view.respond(&headers).await)
}
