//! Argo CD's REST API for the `argocd-apps` instance: `GET /api/v1/applications` (with
//! `selector` and `projects`) and `GET /api/v1/applications/{name}`, serving the Application
//! objects of one namespace of a simulated cluster; and `POST
//! /api/v1/applications/{name}/sync` (with `appNamespace` for the platform instance's
//! `argocd` namespace, as Argo CD's "applications in any namespace" allows), which Argo CD
//! itself carries out — recorded ([`Sync`]), and refused while an operation runs.

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
    syncs: Syncs,
}

/// A sync someone asked Argo CD for: the Application, its namespace, and whether forced.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Sync {
    pub name: String,
    pub namespace: String,
    pub force: bool,
}

/// Every sync asked for so far.
pub type Syncs = std::sync::Arc<std::sync::Mutex<Vec<Sync>>>;

/// The namespaces this instance's API serves Applications from besides its own.
const OTHER_NAMESPACES: [&str; 1] = ["argocd"];

/// The router serving the Applications in `namespace` of `store`, counting requests in
/// `requests`.
pub fn router(
    store: Store,
    namespace: &'static str,
    requests: std::sync::Arc<std::sync::atomic::AtomicU64>,
    syncs: Syncs,
) -> Router {
    Router::new()
        .route("/api/v1/applications", get(list))
        .route("/api/v1/applications/{name}", get(one))
        .route(
            "/api/v1/applications/{name}/sync",
            axum::routing::post(sync),
        )
        .layer(axum::middleware::from_fn(
            move |request: axum::extract::Request, next: axum::middleware::Next| {
                requests.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                next.run(request)
            },
        ))
        .with_state(Instance {
            store,
            namespace,
            syncs,
        })
}

fn applications(instance: &Instance) -> (u64, Vec<Value>) {
    applications_in(instance, instance.namespace)
}

fn applications_in(instance: &Instance, namespace: &str) -> (u64, Vec<Value>) {
    match resources::by_plural("argoproj.io", "v1alpha1", "applications") {
        Some(resource) => instance.store.list(resource, Some(namespace)),
        None => (instance.store.revision(), Vec::new()),
    }
}

/// `POST /api/v1/applications/{name}/sync[?appNamespace=]`: Argo CD syncs the Application
/// (a `strategy` of `hook` or `apply` with `force: true` forces it) and answers with it;
/// 404 when there is none, 403 for a namespace this instance does not serve, 400 while an
/// operation is still running (gRPC FailedPrecondition).
async fn sync(
    State(instance): State<Instance>,
    Path(name): Path<String>,
    Query(query): Query<HashMap<String, String>>,
    body: axum::body::Bytes,
) -> Response {
    let namespace = query
        .get("appNamespace")
        .map_or(instance.namespace, String::as_str);
    if namespace != instance.namespace && !OTHER_NAMESPACES.contains(&namespace) {
        return error(
            StatusCode::FORBIDDEN,
            7,
            format!("application '{name}' in namespace '{namespace}' is not permitted"),
        );
    }
    let request: Value = if body.is_empty() {
        json!({})
    } else {
        match serde_json::from_slice(&body) {
            Ok(request) => request,
            Err(err) => return error(StatusCode::BAD_REQUEST, 3, err.to_string()),
        }
    };
    let (_, items) = applications_in(&instance, namespace);
    let Some(app) = items
        .into_iter()
        .find(|a| a["metadata"]["name"] == name.as_str())
    else {
        return error(
            StatusCode::NOT_FOUND,
            5,
            format!("applications.argoproj.io \"{name}\" not found"),
        );
    };
    if app["status"]["operationState"]["phase"] == "Running" {
        return error(
            StatusCode::BAD_REQUEST,
            9,
            "another operation is already in progress".to_owned(),
        );
    }
    let strategy = &request["strategy"];
    let force = strategy["hook"]["force"] == true || strategy["apply"]["force"] == true;
    instance
        .syncs
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .push(Sync {
            name,
            namespace: namespace.to_owned(),
            force,
        });
    Json(app).into_response()
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
