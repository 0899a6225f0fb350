//! `GET /api/fleet`: every app in every environment.

use axum::extract::State;
use axum::Json;
use tower_shared::fleet::Fleet;

use crate::app::AppState;

pub async fn get(State(state): State<AppState>) -> Json<Fleet> {
    Json(Fleet::clone(&state.fleet))
}
