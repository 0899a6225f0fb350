//! `GET /api/snapshot?service=NAME`: the objects the browser derives one service's views from.

use axum::extract::State;
use axum::Json;
use serde::Serialize;
use tower_shared::snapshot::Snapshot;

use super::params::{self, Query};
use super::ApiError;
use crate::app::AppState;
use crate::live::Health;

#[derive(Serialize)]
pub struct Answer {
    #[serde(flatten)]
    snapshot: Snapshot,
    /// Clusters serving their last known data, GitHub's trouble (absent when all is well).
    #[serde(flatten)]
    health: Health,
}

pub async fn get(State(state): State<AppState>, query: Query) -> Result<Json<Answer>, ApiError> {
    let service = params::dns_label(&query, "service")?;
    let mut narrowed = state.source.snapshot().for_service(service);
    if narrowed.is_empty() {
        return Err(ApiError::Unknown {
            field: "service",
            message: format!("Tower knows no service called {service}"),
        });
    }
    narrowed.now = state.source.now();
    Ok(Json(Answer {
        snapshot: narrowed,
        health: state.health(),
    }))
}
