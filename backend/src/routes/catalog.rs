//! Backstage, with the caller's own Backstage token (`Authorization: Bearer …`): Tower holds
//! no credential for refreshing the catalog.
//!
//! - `POST /catalog/refresh` triggers the catalog ingestor's `KubernetesEntityProvider`
//!   scheduler task. Backstage's 409 ("currently running") is an answer, not a failure:
//!   `{"status": "already-running"}`.
//! - `GET /catalog/entity?name=&kind=component&namespace=default` looks an entity up by name.

use axum::extract::State;
use axum::http::{header, HeaderMap, StatusCode};
use axum::Json;
use serde_json::{json, Value};

use super::params::{self, Query};
use super::ApiError;
use crate::app::AppState;

/// The ingestor's scheduler task.
pub const INGESTOR_TASK: &str = "KubernetesEntityProvider";

fn bearer(headers: &HeaderMap) -> Result<String, ApiError> {
    headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .filter(|t| !t.trim().is_empty())
        .map(str::to_owned)
        .ok_or(ApiError::Unauthorized {
            field: "authorization",
            message: "send your Backstage token as `Authorization: Bearer …`".to_owned(),
        })
}

fn backstage_url(state: &AppState) -> Result<&str, ApiError> {
    state
        .backstage
        .as_deref()
        .map(|b| b.url.trim_end_matches('/'))
        .ok_or_else(|| {
            ApiError::unavailable(
                "Tower has no Backstage configured (see `backstage` in tower.yaml)",
            )
        })
}

fn unreachable(err: reqwest::Error) -> ApiError {
    // reqwest errors name the URL, never headers.
    ApiError::Upstream {
        message: format!("Backstage could not be reached: {}", err.without_url()),
    }
}

fn refused() -> ApiError {
    ApiError::Unauthorized {
        field: "authorization",
        message: "Backstage refused the token".to_owned(),
    }
}

pub async fn refresh(
    State(state): State<AppState>,
    headers: HeaderMap,
) -> Result<Json<Value>, ApiError> {
    let token = bearer(&headers)?;
    let url = format!(
        "{}/api/catalog/.backstage/scheduler/v1/tasks/{INGESTOR_TASK}/trigger",
        backstage_url(&state)?
    );
    let response = state
        .http
        .post(url)
        .bearer_auth(token)
        .send()
        .await
        .map_err(unreachable)?;
    match response.status() {
        status if status.is_success() => Ok(Json(json!({
            "status": "triggered",
            "message": "The catalog ingestor runs now; the service appears once it has read the clusters."
        }))),
        StatusCode::CONFLICT => Ok(Json(json!({
            "status": "already-running",
            "message": "The catalog ingestor is already running; the service appears when it finishes."
        }))),
        StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN => Err(refused()),
        StatusCode::NOT_FOUND => Err(ApiError::Upstream {
            message: format!("Backstage has no {INGESTOR_TASK} task to trigger"),
        }),
        status => Err(ApiError::Upstream {
            message: format!("Backstage answered {status} to the trigger"),
        }),
    }
}

pub async fn entity(
    State(state): State<AppState>,
    headers: HeaderMap,
    query: Query,
) -> Result<Json<Value>, ApiError> {
    let name = params::dns_label(&query, "name")?;
    let kind = params::optional_dns_label(&query, "kind")?.unwrap_or("component");
    let namespace = params::optional_dns_label(&query, "namespace")?.unwrap_or("default");
    let token = match bearer(&headers) {
        Ok(token) => token,
        // Without the caller's token, Tower's own read token (if configured).
        Err(missing) => state
            .backstage
            .as_deref()
            .and_then(|b| b.token.as_ref())
            .map(|t| t.expose().to_owned())
            .ok_or(missing)?,
    };
    let url = format!(
        "{}/api/catalog/entities/by-name/{kind}/{namespace}/{name}",
        backstage_url(&state)?
    );
    let response = state
        .http
        .get(url)
        .bearer_auth(token)
        .send()
        .await
        .map_err(unreachable)?;
    match response.status() {
        StatusCode::OK => {
            let entity: Value = response.json().await.map_err(|err| ApiError::Upstream {
                message: format!("Backstage sent an unreadable entity: {}", err.without_url()),
            })?;
            Ok(Json(json!({ "found": true, "entity": entity })))
        }
        StatusCode::NOT_FOUND => Ok(Json(json!({ "found": false }))),
        StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN => Err(refused()),
        status => Err(ApiError::Upstream {
            message: format!("Backstage answered {status} to the catalog lookup"),
        }),
    }
}
