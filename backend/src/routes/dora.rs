//! `GET /api/dora?service=NAME&days=N` — DORA's four keys for one app, or without `service`
//! for the fleet, over the `days` (1 to 30, default 7) before now, with the rollouts and
//! changes they counted (`docs/dora.md`). Made once per change of the snapshot, on first
//! demand, off the async workers (the fleet's reads every app's part).

use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::Response;
use tower_shared::api::DoraAnswer;
use tower_shared::dora::MAX_DAYS;

use super::params::{self, Query};
use super::ApiError;
use crate::state::AppState;
use crate::tabs::dora_key;

/// The window unless `days` says otherwise.
const DAYS: u32 = 7;

pub async fn get(
    State(state): State<AppState>,
    query: Query,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let service = params::optional_dns_label(&query, "service")?;
    let days = params::number(&query, "days", 1..=MAX_DAYS, DAYS)?;
    let key = dora_key(service, days);
    let source = std::sync::Arc::clone(&state.source);
    let view = tokio::task::spawn_blocking(move || {
        source.tabs().view::<DoraAnswer>(&source.derived(), &key)
    })
    .await
    .map_err(|_| ApiError::unavailable("the DORA figures could not be worked out"))?;
    let view = match (view, service) {
        (Some(view), _) => view,
        (None, Some(service)) => return Err(ApiError::no_service("service", service)),
        (None, None) => return Err(ApiError::unavailable("the fleet is not derived yet")),
    };
    Ok(view.respond(&headers).await)
}
