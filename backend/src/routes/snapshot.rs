//! `GET /api/snapshot?service=NAME`: the objects the browser derives one service's views from.

use std::collections::HashMap;

use axum::extract::{Query, State};
use axum::Json;
use tower_shared::provisioning::is_dns_label;
use tower_shared::snapshot::Snapshot;

use super::ApiError;
use crate::app::AppState;

pub async fn get(
    State(state): State<AppState>,
    Query(query): Query<HashMap<String, String>>,
) -> Result<Json<Snapshot>, ApiError> {
    let service = query.get("service").ok_or(ApiError::BadParameter {
        field: "service",
        message: "the query parameter `service` is required".to_owned(),
    })?;
    if !is_dns_label(service) {
        return Err(ApiError::BadParameter {
            field: "service",
            message: format!(
                "{service:?} is not a service name (lowercase letters, digits and '-', at most 63)"
            ),
        });
    }
    let narrowed = state.source.snapshot().for_service(service);
    if narrowed.is_empty() {
        return Err(ApiError::Unknown {
            field: "service",
            message: format!("Tower knows no service called {service}"),
        });
    }
    Ok(Json(narrowed))
}
