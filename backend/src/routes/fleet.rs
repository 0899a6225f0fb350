//! `GET /api/fleet`: every app in every environment, derived when the objects change (or
//! the fixed fleet `tower serve --fleet-file` was given), served as bytes; and
//! `GET /api/activity`: the fleet's recent activity, newest first, derived with it.

use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::Response;

use crate::state::AppState;

pub async fn get(State(state): State<AppState>, headers: HeaderMap) -> Response {
    match &state.fleet_file {
        Some(fleet) => fleet.respond(&headers).await,
        None => state.source.derived().views.fleet.respond(&headers).await,
    }
}

pub async fn activity(State(state): State<AppState>, headers: HeaderMap) -> Response {
    state
        .source
        .derived()
        .views
        .activity
        .respond(&headers)
        .await
}
