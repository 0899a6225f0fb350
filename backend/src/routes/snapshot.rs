//! Views of one service, made once per change and served as bytes:
//! `GET /api/snapshot?service=NAME` (the objects the browser derives the service's views
//! from), `GET /api/deployments?service=NAME` (its Deployments tab) and
//! `GET /api/releases?service=NAME` (its release matrix), with the health notices.

use std::sync::Arc;

use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::Response;

use super::params::{self, Query};
use super::ApiError;
use crate::source::Source;
use crate::state::AppState;
use crate::views::View;

/// `GET /api/snapshot?service=NAME`.
pub async fn get(
    State(state): State<AppState>,
    query: Query,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    serve(&state, &query, &headers, |source, s| {
        source.service_snapshot(s)
    })
    .await
}

/// `GET /api/deployments?service=NAME`.
pub async fn deployments(
    State(state): State<AppState>,
    query: Query,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    serve(&state, &query, &headers, |source, s| {
        source.service_deployments(s)
    })
    .await
}

/// `GET /api/releases?service=NAME`.
pub async fn releases(
    State(state): State<AppState>,
    query: Query,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    serve(&state, &query, &headers, |source, s| {
        source.service_releases(s)
    })
    .await
}

/// The view `pick` finds for the `service` parameter; 404 naming it when there is none.
pub(super) async fn serve(
    state: &AppState,
    query: &Query,
    headers: &HeaderMap,
    pick: impl Fn(&dyn Source, &str) -> Option<Arc<View>>,
) -> Result<Response, ApiError> {
    let service = params::dns_label(query, "service")?;
    let view = pick(state.source.as_ref(), service)
        .ok_or_else(|| ApiError::no_service("service", service))?;
    Ok(view.respond(headers).await)
}
