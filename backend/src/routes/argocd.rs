//! `POST /api/argocd/sync {service, environment, force}`: the Argo CD actions the old plugin
//! had — sync, and force sync — for one of a service's environments, through Argo CD's own
//! API (`POST /api/v1/applications/{name}/sync`). Argo CD carries it out with what Git
//! says; Tower writes nothing to a cluster itself. The same people may ask as may promote
//! ([`crate::access`]); every request is audited (target `tower::audit`).

use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::{Extension, Json};
use serde_json::json;
use tower_shared::api::{ArgoSyncAnswer, ArgoSyncRequest};

use super::params::{self, JsonBody};
use super::ApiError;
use crate::auth::Caller;
use crate::state::AppState;

/// The Application Tower reads for `service` in `environment`: its name and namespace.
fn application(
    state: &AppState,
    service: &str,
    environment: &str,
) -> Result<(String, String), ApiError> {
    let derived = state.source.derived();
    if !derived.knows(service) {
        return Err(ApiError::no_service("service", service));
    }
    let snapshot = derived.service(service);
    let deployments = tower_shared::deployments::derive_deployments(&snapshot, service);
    let missing = || ApiError::Unknown {
        field: "environment",
        message: format!("Tower sees no Argo CD Application of {service} in {environment}"),
    };
    let name = deployments
        .environments
        .iter()
        .flatten()
        .find(|e| e.name == environment)
        .and_then(|e| e.argo.as_ref())
        .map(|a| a.name.clone())
        .ok_or_else(missing)?;
    let namespace = snapshot
        .clusters
        .values()
        .flatten()
        .find(|o| o.kind == "Application" && o.name() == name)
        .and_then(|o| o.namespace())
        .unwrap_or("argocd")
        .to_owned();
    Ok((name, namespace))
}

/// `POST /api/argocd/sync`.
pub async fn sync(
    State(state): State<AppState>,
    caller: Option<Extension<Caller>>,
    headers: HeaderMap,
    JsonBody(body): JsonBody,
) -> Result<Json<ArgoSyncAnswer>, ApiError> {
    let request: ArgoSyncRequest = params::json_body(&body, "the sync")?;
    params::check_dns_label(&request.service, "service")?;
    params::check_dns_label(&request.environment, "environment")?;
    let service = request.service.as_str();
    let (name, namespace) = application(&state, service, &request.environment)?;
    let access =
        crate::access::required(&state, caller.as_deref(), &headers, service, "sync").await?;
    let argocd = state
        .argocd
        .as_deref()
        .ok_or_else(|| ApiError::unavailable("Tower has no Argo CD configured (`argocd`)"))?;
    let url = format!(
        "{}/api/v1/applications/{name}/sync?appNamespace={namespace}",
        argocd.url.trim_end_matches('/')
    );
    let strategy = if request.force {
        json!({"hook": {"force": true}})
    } else {
        json!({"hook": {}})
    };
    let mut call = state.http.post(url).json(
        &json!({"name": name, "appNamespace": namespace, "prune": false,
                      "dryRun": false, "strategy": strategy}),
    );
    if let Some(token) = &argocd.token {
        call = call.bearer_auth(token.expose());
    }
    let outcome = call.send().await;
    let verb = if request.force { "force sync" } else { "sync" };
    let answer = match outcome {
        Err(err) => Err(ApiError::Upstream {
            message: format!("Argo CD could not be reached: {}", err.without_url()),
        }),
        Ok(response) => {
            let status = response.status();
            let said: serde_json::Value = response.json().await.unwrap_or_default();
            let message = said["message"]
                .as_str()
                .unwrap_or_else(|| status.canonical_reason().unwrap_or("no reason given"))
                .to_owned();
            match status {
                s if s.is_success() => Ok(ArgoSyncAnswer {
                    application: name.clone(),
                    force: request.force,
                    message: format!(
                        "Argo CD is syncing {name} to what Git says ({verb}, asked by {})",
                        access.subject
                    ),
                }),
                StatusCode::BAD_REQUEST if message.contains("in progress") => {
                    Err(ApiError::Conflict {
                        field: "environment",
                        message: format!("Argo CD is busy with {name}: {message}"),
                    })
                }
                StatusCode::NOT_FOUND => Err(ApiError::Unknown {
                    field: "environment",
                    message: format!("Argo CD has no Application {name}: {message}"),
                }),
                _ => Err(ApiError::Upstream {
                    message: format!("Argo CD refused the {verb} of {name}: {status} {message}"),
                }),
            }
        }
    };
    match &answer {
        Ok(_) => tracing::info!(target: "tower::audit", who = %access.subject,
            action = verb, application = %name, namespace = %namespace, "Argo CD sync"),
        Err(err) => tracing::warn!(target: "tower::audit", who = %access.subject,
            action = verb, application = %name, error = %err, "Argo CD sync refused"),
    }
    answer.map(Json)
}
