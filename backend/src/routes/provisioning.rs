//! `GET /api/provisioning` and `GET /api/summary`: views the deriver keeps ready as bytes.
//!
//! - `/api/provisioning`: `{"now", "services", "stale"?, "github"?}` — every tracked
//!   service's progress at `now`, with durations (re-derived every second; for tools).
//! - `/api/provisioning/service?service=NAME`: one service's Provisioning tab, settled
//!   ([`tower_shared::provisioning::ServiceProgress::settled`]), so a page's refetch is a
//!   `304` until a step, the group, an event or a created resource changes.
//! - `/api/summary`: the strip, the badge and the health notices
//!   ([`tower_shared::api::Summary`]); it changes only when something changes, so a page's
//!   refetch is usually a `304`.

use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::Response;
use tower_shared::api::ServiceProvisioningAnswer;

use super::params::ServiceName;
use super::ApiError;
use crate::state::AppState;
use crate::views::View;

pub async fn get(State(state): State<AppState>, headers: HeaderMap) -> Response {
    state
        .source
        .derived()
        .views
        .provisioning
        .respond(&headers)
        .await
}

pub async fn summary(State(state): State<AppState>, headers: HeaderMap) -> Response {
    state.source.derived().views.summary.respond(&headers).await
}

/// `GET /api/provisioning/service`.
pub async fn service(
    State(state): State<AppState>,
    ServiceName(service): ServiceName,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let service = service.as_str();
    let derived = state.source.derived();
    let progress = derived
        .provisioning
        .services
        .iter()
        .find(|s| *s.name == *service)
        .map(|s| s.clone().settled());
    if progress.is_none() && !derived.knows(service) {
        return Err(ApiError::no_service("service", service));
    }
    let answer = ServiceProvisioningAnswer {
        service: service.to_owned(),
        progress,
        health: derived.health.clone(),
    };
    Ok(View::lazy(&answer).respond(&headers).await)
}
