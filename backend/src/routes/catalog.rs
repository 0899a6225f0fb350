//! Backstage, with the caller's own Backstage token (`Authorization: Bearer …`, when the
//! caller is a verified Backstage user — a tool's Tower token is never passed on): Tower
//! holds no credential for refreshing the catalog.
//!
//! - `POST /catalog/refresh` triggers the catalog ingestor's `KubernetesEntityProvider`
//!   scheduler task. Backstage's 409 ("currently running") is an answer, not a failure:
//!   `{"status": "already-running"}`.
//! - `GET /catalog/entity?name=&kind=component&namespace=default` looks an entity up by name
//!   (with Tower's read token when the caller has no Backstage token of its own).

use axum::extract::State;
use axum::http::HeaderMap;
use axum::{Extension, Json};
use tower_shared::api::{CatalogLookup, CatalogRefresh, RefreshStatus};

use super::params::{self, JsonBody, Query};
use super::ApiError;
use crate::access::from_backstage;
use crate::auth::Caller;
use crate::live::backstage::{Backstage, Trigger};
use crate::state::AppState;

/// The caller's own Backstage token (see [`Caller::backstage_token`]).
fn bearer(caller: Option<&Caller>, headers: &HeaderMap) -> Result<String, ApiError> {
    caller
        .and_then(|c| c.backstage_token(headers))
        .ok_or(ApiError::Unauthorized {
            field: "authorization",
            message: "this needs your own Backstage sign-in: send your Backstage user token as `Authorization: Bearer …`".to_owned(),
        })
}

fn backstage(state: &AppState) -> Result<Backstage, ApiError> {
    state
        .backstage
        .as_deref()
        .map(|b| Backstage::new(&b.url, state.http.clone()))
        .ok_or_else(|| {
            ApiError::unavailable(
                "Tower has no Backstage configured (see `backstage` in tower.yaml)",
            )
        })
}

pub async fn refresh(
    State(state): State<AppState>,
    caller: Option<Extension<Caller>>,
    headers: HeaderMap,
    JsonBody(body): JsonBody,
) -> Result<Json<CatalogRefresh>, ApiError> {
    // Nothing to say but "refresh": an empty body, or a JSON object (`{}`).
    if !body.iter().all(u8::is_ascii_whitespace)
        && serde_json::from_slice::<serde_json::Map<String, serde_json::Value>>(&body).is_err()
    {
        return Err(ApiError::bad(
            "body",
            "send an empty body, or a JSON object such as {}",
        ));
    }
    let token = bearer(caller.as_deref(), &headers)?;
    let answer = backstage(&state)?
        .trigger_ingestor(&token)
        .await
        .map_err(from_backstage)?;
    Ok(Json(match answer {
        Trigger::Started => CatalogRefresh {
            status: RefreshStatus::Triggered,
            message:
                "The catalog ingestor runs now; the service appears once it has read the clusters."
                    .to_owned(),
        },
        Trigger::AlreadyRunning => CatalogRefresh {
            status: RefreshStatus::AlreadyRunning,
            message:
                "The catalog ingestor is already running; the service appears when it finishes."
                    .to_owned(),
        },
    }))
}

pub async fn entity(
    State(state): State<AppState>,
    caller: Option<Extension<Caller>>,
    headers: HeaderMap,
    query: Query,
) -> Result<Json<CatalogLookup>, ApiError> {
    let name = params::dns_label(&query, "name")?;
    let kind = params::optional_dns_label(&query, "kind")?.unwrap_or("component");
    let namespace = params::optional_dns_label(&query, "namespace")?.unwrap_or("default");
    let token = match bearer(caller.as_deref(), &headers) {
        Ok(token) => token,
        Err(missing) => state
            .backstage
            .as_deref()
            .and_then(|b| b.token.as_ref())
            .map(|t| t.expose().to_owned())
            .ok_or(missing)?,
    };
    let found = backstage(&state)?
        .entity(kind, namespace, name, &token)
        .await
        .map_err(from_backstage)?;
    Ok(Json(CatalogLookup {
        found: found.is_some(),
        entity: found,
    }))
}
