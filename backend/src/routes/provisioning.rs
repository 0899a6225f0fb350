//! `GET /api/provisioning` and `GET /api/summary`: views the deriver keeps ready as bytes.
//!
//! - `/api/provisioning`: `{"now", "services", "stale"?, "github"?}` — every tracked
//!   service's progress at `now`, with durations (re-derived every second; for tools).
//! - `/api/summary`: the strip, the badge and the health notices
//!   ([`tower_shared::api::Summary`]); it changes only when something changes, so a page's
//!   refetch is usually a `304`.

use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::Response;

use crate::state::AppState;

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
