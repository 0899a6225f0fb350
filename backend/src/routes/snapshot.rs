//! `GET /api/snapshot?service=NAME`: the objects the browser derives one service's views
//! from, with the health notices — made once per change and served as bytes.

use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::Response;

use super::params::{self, Query};
use super::ApiError;
use crate::state::AppState;

pub async fn get(
    State(state): State<AppState>,
    query: Query,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let service = params::dns_label(&query, "service")?;
    let view = state
        .source
        .service_snapshot(service)
        .ok_or_else(|| ApiError::Unknown {
            field: "service",
            message: format!("Tower knows no service called {service}"),
        })?;
    Ok(view.respond(&headers).await)
}
