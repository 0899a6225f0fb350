//! Argo CD's REST API for the `argocd-apps` instance: `GET /api/v1/applications` (with
//! `selector` and `projects`) and `GET /api/v1/applications/{name}`, serving the Application
//! objects of one namespace of a simulated cluster.

use std::collections::HashMap;

use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use serde_json::{json, Value};

use crate::resources;
use crate::selector::Selector;
use crate::store::Store;

#[derive(Clone, Debug)]
struct Instance {
    store: Store,
    namespace: &'static str,
}

/// The router serving the Applications in `namespace` of `store`, counting requests in
/// `requests`.
pub fn router(
    store: Store,
    namespace: &'static str,
    requests: std::sync::Arc<std::sync::atomic::AtomicU64>,
) -> Router {
    Router::new()
        .route("/api/v1/applications", get(list))
        .route("/api/v1/applications/{name}", get(one))
        .layer(axum::middleware::from_fn(
            move |request: axum::extract::Request, next: axum::middleware::Next| {
                requests.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                next.run(request)
            },
        ))
        .with_state(Instance { store, namespace })
}

fn applications(instance: &Instance) -> (u64, Vec<Value>) {
    match resources::by_plural("argoproj.io", "v1alpha1", "applications") {
        Some(resource) => instance.store.list(resource, Some(instance.namespace)),
        None => (instance.store.revision(), Vec::new()),
    }
}

/// Argo CD's error shape (a gRPC status over HTTP).
fn error(status: StatusCode, code: u8, message: String) -> Response {
    (
        status,
        Json(json!({"error": message, "code": code, "message": message})),
    )
        .into_response()
}

async fn list(
    State(instance): State<Instance>,
    Query(query): Query<HashMap<String, String>>,
) -> Response {
    let selector = match Selector::parse(query.get("selector").map_or("", String::as_str)) {
        Ok(selector) => selector,
        Err(err) => return error(StatusCode::BAD_REQUEST, 3, err.to_string()),
    };
    let projects: Vec<&str> = query
        .get("projects")
        .map(|p| p.split(',').filter(|p| !p.is_empty()).collect())
        .unwrap_or_default();
    let (revision, items) = applications(&instance);
    let items: Vec<Value> = items
        .into_iter()
        .filter(|a| selector.matches_labels(a))
        .filter(|a| {
            projects.is_empty()
                || a["spec"]["project"]
                    .as_str()
                    .is_some_and(|p| projects.contains(&p))
        })
        .collect();
    Json(json!({"metadata": {"resourceVersion": revision.to_string()}, "items": items}))
        .into_response()
}

async fn one(State(instance): State<Instance>, Path(name): Path<String>) -> Response {
    let (_, items) = applications(&instance);
    match items
        .into_iter()
        .find(|a| a["metadata"]["name"] == name.as_str())
    {
        Some(app) => Json(app).into_response(),
        None => error(
            StatusCode::NOT_FOUND,
            5,
            format!("applications.argoproj.io \"{name}\" not found"),
        ),
    }
}
