//! `GET /api/fleet`: every app in every environment, derived from the source's objects
//! (or the fixed fleet `tower serve --fleet-file` was given).

use axum::extract::State;
use axum::Json;
use tower_shared::fleet::{derive_fleet, Fleet};

use crate::app::AppState;

pub async fn get(State(state): State<AppState>) -> Json<Fleet> {
    Json(match &state.fleet {
        Some(fleet) => Fleet::clone(fleet),
        None => derive_fleet(&state.source.snapshot()),
    })
}
