//! Views of one service, made once per change and served as bytes:
//! `GET /api/snapshot?service=NAME` (the objects the browser derives the service's views
//! from) and `GET /api/deployments?service=NAME` (its Deployments tab), with the health
//! notices.

use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::Response;

use super::params::{self, Query};
use super::ApiError;
use crate::state::AppState;

/// `GET /api/deployments?service=NAME`.
pub async fn deployments(
    State(state): State<AppState>,
    query: Query,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let service = params::dns_label(&query, "service")?;
    let view = state
        .source
        .service_deployments(service)
        .ok_or_else(|| unknown(service))?;
    Ok(view.respond(&headers).await)
}

fn unknown(service: &str) -> ApiError {
    ApiError::Unknown {
        field: "service",
        message: format!("Tower knows no service called {service}"),
    }
}

pub async fn get(
    State(state): State<AppState>,
    query: Query,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let service = params::dns_label(&query, "service")?;
    let view = state
        .source
        .service_snapshot(service)
        .ok_or_else(|| unknown(service))?;
    Ok(view.respond(&headers).await)
}
