//! `/readyz`, `/metrics` and `/openapi.json`.

use axum::extract::State;
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use tower_shared::api::Readiness;

use crate::state::AppState;

/// Ready when every configured client is connected — the history database answers, every
/// cluster's cache has been filled once, GitHub has answered, Argo CD answers its
/// applications list — and the caches are synced. 503 names what is missing to a caller who
/// signed in; anyone else (a kubelet's probe) learns ready or not, nothing of what Tower
/// talks to. The route is public: one check runs at a time and its answer is reused for
/// [`READINESS_FOR`](crate::state::READINESS_FOR), however many ask.
pub async fn readyz(
    State(state): State<AppState>,
    caller: Option<axum::Extension<crate::auth::Caller>>,
) -> Response {
    let readiness = {
        let mut last = state.readiness.lock().await;
        match &*last {
            Some((at, readiness)) if at.elapsed() < crate::state::READINESS_FOR => {
                readiness.clone()
            }
            _ => {
                let readiness = check_readiness(&state).await;
                *last = Some((tokio::time::Instant::now(), readiness.clone()));
                readiness
            }
        }
    };
    let status = if readiness.ready {
        StatusCode::OK
    } else {
        StatusCode::SERVICE_UNAVAILABLE
    };
    let readiness = match caller {
        Some(_) => readiness,
        None => Readiness {
            ready: readiness.ready,
            waiting: Vec::new(),
        },
    };
    (status, Json(readiness)).into_response()
}

async fn check_readiness(state: &AppState) -> Readiness {
    let mut waiting = Vec::new();
    if !state.history.ping().await {
        waiting.push("the history database does not answer".to_owned());
    }
    if let Some(argocd) = &state.argocd {
        let url = format!(
            "{}/api/v1/applications?fields=items.metadata.name",
            argocd.url.trim_end_matches('/')
        );
        let mut request = state
            .http
            .get(url)
            .timeout(std::time::Duration::from_secs(3));
        if let Some(token) = &argocd.token {
            request = request.bearer_auth(token.expose());
        }
        match request.send().await {
            Ok(response) if response.status().is_success() => {}
            Ok(response) => waiting.push(format!("Argo CD answers {}", response.status())),
            Err(err) => waiting.push(format!("Argo CD does not answer: {}", err.without_url())),
        }
    }
    if let Some(live) = &state.live {
        if live.github().is_some() && !live.derived().github_answered {
            waiting.push("GitHub has not answered yet".to_owned());
        }
        if !live.objectives_judged() {
            waiting
                .push("Prometheus has not been asked about the fleet's objectives yet".to_owned());
        }
        for cluster in live.clusters().status() {
            if !cluster.synced {
                waiting.push(format!("cluster {} is not synced yet", cluster.name));
            }
        }
    }
    let ready = waiting.is_empty();
    Readiness { ready, waiting }
}

pub async fn metrics(State(state): State<AppState>) -> Response {
    let text = state.metrics.render(state.live.as_ref());
    (
        [(
            header::CONTENT_TYPE,
            "application/openmetrics-text; version=1.0.0; charset=utf-8",
        )],
        text,
    )
        .into_response()
}

/// The OpenAPI document, kept in `backend/openapi.yaml`.
pub const OPENAPI_YAML: &str = include_str!("../../openapi.yaml");

/// [`OPENAPI_YAML`] as JSON, converted once.
static OPENAPI: std::sync::LazyLock<Result<serde_json::Value, String>> =
    std::sync::LazyLock::new(|| serde_yaml_ng::from_str(OPENAPI_YAML).map_err(|e| e.to_string()));

pub async fn openapi() -> Response {
    match &*OPENAPI {
        Ok(doc) => Json(doc).into_response(),
        Err(err) => super::ApiError::unavailable(format!("openapi.yaml: {err}")).into_response(),
    }
}
