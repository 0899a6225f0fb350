//! Argo CD's REST API for the `argocd-apps` instance: `GET /api/v1/applications` (with
//! `selector` and `projects`) and `GET /api/v1/applications/{name}`, serving the Application
//! objects of one namespace of a simulated cluster; `POST
//! /api/v1/applications/{name}/sync` (with `appNamespace` for the platform instance's
//! `argocd` namespace, as Argo CD's "applications in any namespace" allows), which Argo CD
//! itself carries out — recorded ([`Sync`]), and refused while an operation runs; and an
//! Application's resources: `GET …/resource` (the live manifest), `GET …/resource/actions`
//! (the Rollout actions Argo CD's built-in `argoproj.io/Rollout` discovery offers for its
//! state) and `POST …/resource/actions/v2`, which runs one — the story holding the Rollout
//! plays it as the Rollouts controller would ([`crate::stories::RolloutAction`]), recorded
//! ([`Ran`]). Argo CD, not Tower, changes the cluster.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde_json::{json, Value};

use crate::platform::Platform;
use crate::resources;
use crate::selector::Selector;
use crate::store::Store;
use crate::stories::RolloutAction;

/// One Argo CD instance: the platform it runs on, the namespace its Applications live in.
#[derive(Clone, Debug)]
pub struct Instance {
    platform: Arc<Platform>,
    store: Store,
    namespace: &'static str,
    asked: Asked,
}

impl Instance {
    /// The instance serving the Applications of `namespace` in `store` (its control plane).
    pub fn new(
        platform: Arc<Platform>,
        store: Store,
        namespace: &'static str,
        asked: Asked,
    ) -> Self {
        Self {
            platform,
            store,
            namespace,
            asked,
        }
    }
}

/// A sync someone asked Argo CD for: the Application, its namespace, and whether forced.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Sync {
    pub name: String,
    pub namespace: String,
    pub force: bool,
}

/// A resource action Argo CD ran: the Application, the resource's namespace and name, the
/// action.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Ran {
    pub application: String,
    pub namespace: String,
    pub resource: String,
    pub action: String,
}

/// Everything Argo CD was asked to do so far.
#[derive(Clone, Debug, Default)]
pub struct Asked {
    syncs: Arc<Mutex<Vec<Sync>>>,
    actions: Arc<Mutex<Vec<Ran>>>,
}

impl Asked {
    pub fn syncs(&self) -> Vec<Sync> {
        locked(&self.syncs).clone()
    }

    pub fn actions(&self) -> Vec<Ran> {
        locked(&self.actions).clone()
    }
}

fn locked<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// The namespaces this instance's API serves Applications from besides its own.
const OTHER_NAMESPACES: [&str; 1] = ["argocd"];

/// The router serving `instance`'s Applications, counting requests in `requests`.
pub fn router(instance: Instance, requests: Arc<std::sync::atomic::AtomicU64>) -> Router {
    Router::new()
        .route("/api/v1/applications", get(list))
        .route("/api/v1/applications/{name}", get(one))
        .route("/api/v1/applications/{name}/sync", post(sync))
        .route("/api/v1/applications/{name}/resource", get(resource))
        .route("/api/v1/applications/{name}/resource/actions", get(actions))
        .route(
            "/api/v1/applications/{name}/resource/actions/v2",
            post(run_action),
        )
        .layer(axum::middleware::from_fn(
            move |request: axum::extract::Request, next: axum::middleware::Next| {
                requests.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                next.run(request)
            },
        ))
        .with_state(instance)
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
    let app = match application(&instance, &name, query.get("appNamespace")) {
        Ok(app) => app,
        Err(refused) => return refused.into_response(),
    };
    let request: Value = if body.is_empty() {
        json!({})
    } else {
        match serde_json::from_slice(&body) {
            Ok(request) => request,
            Err(err) => return error(StatusCode::BAD_REQUEST, 3, err.to_string()),
        }
    };
    let namespace = app["metadata"]["namespace"]
        .as_str()
        .unwrap_or(instance.namespace)
        .to_owned();
    if app["status"]["operationState"]["phase"] == "Running" {
        return error(
            StatusCode::BAD_REQUEST,
            9,
            "another operation is already in progress".to_owned(),
        );
    }
    let strategy = &request["strategy"];
    let force = strategy["hook"]["force"] == true || strategy["apply"]["force"] == true;
    locked(&instance.asked.syncs).push(Sync {
        name,
        namespace,
        force,
    });
    Json(app).into_response()
}

/// The Application `name` in `app_namespace` (default: the instance's own): 403 for a
/// namespace this instance does not serve, 404 when there is none.
fn application(
    instance: &Instance,
    name: &str,
    app_namespace: Option<&String>,
) -> Result<Value, Refused> {
    let namespace = app_namespace.map_or(instance.namespace, String::as_str);
    if namespace != instance.namespace && !OTHER_NAMESPACES.contains(&namespace) {
        return Err(Refused(
            StatusCode::FORBIDDEN,
            7,
            format!("application '{name}' in namespace '{namespace}' is not permitted"),
        ));
    }
    let (_, items) = applications_in(instance, namespace);
    items
        .into_iter()
        .find(|a| a["metadata"]["name"] == name)
        .ok_or_else(|| {
            Refused(
                StatusCode::NOT_FOUND,
                5,
                format!("applications.argoproj.io \"{name}\" not found"),
            )
        })
}

/// Which resource of an Application a request names (the query of `…/resource` and
/// `…/resource/actions`, the body of `…/resource/actions/v2`).
#[derive(Debug, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct ResourceRef {
    namespace: String,
    resource_name: String,
    kind: String,
    #[serde(default)]
    group: String,
    #[serde(default)]
    app_namespace: Option<String>,
    #[serde(default)]
    action: Option<String>,
}

/// The live object `what` names among `name`'s resources: the Application must deploy to
/// its namespace (Argo CD answers only for resources it manages).
fn live(instance: &Instance, name: &str, what: &ResourceRef) -> Result<(String, Value), Refused> {
    let app = application(instance, name, what.app_namespace.as_ref())?;
    let destination = &app["spec"]["destination"];
    let cluster = destination["name"].as_str().unwrap_or_default();
    let missing = || {
        Refused(
            StatusCode::NOT_FOUND,
            5,
            format!(
                "{} {} not found as part of application {name}",
                what.kind, what.resource_name
            ),
        )
    };
    if destination["namespace"] != what.namespace.as_str() {
        return Err(missing());
    }
    let plural = match (what.group.as_str(), what.kind.as_str()) {
        ("argoproj.io", "Rollout") => "rollouts",
        _ => return Err(missing()),
    };
    let store = instance.platform.store(cluster).ok_or_else(missing)?;
    let resource = resources::by_plural("argoproj.io", "v1alpha1", plural).ok_or_else(missing)?;
    let (_, items) = store.list(resource, Some(&what.namespace));
    let object = items
        .into_iter()
        .find(|o| o["metadata"]["name"] == what.resource_name.as_str())
        .ok_or_else(missing)?;
    Ok((cluster.to_owned(), object))
}

/// The answer to a request about one of `name`'s resources (named by the query): `answer`
/// made of the live object, or Argo CD's refusal.
fn about_live(
    instance: &Instance,
    name: &str,
    what: Result<Query<ResourceRef>, axum::extract::rejection::QueryRejection>,
    answer: impl FnOnce(&Value) -> Value,
) -> Response {
    let Ok(Query(what)) = what else {
        return error(
            StatusCode::BAD_REQUEST,
            3,
            "resource name, namespace and kind are required".to_owned(),
        );
    };
    match live(instance, name, &what) {
        Ok((_, object)) => Json(answer(&object)).into_response(),
        Err(refused) => refused.into_response(),
    }
}

/// `GET /api/v1/applications/{name}/resource?namespace=&resourceName=&version=&group=&kind=`:
/// the live object, as a JSON string in `manifest`.
async fn resource(
    State(instance): State<Instance>,
    Path(name): Path<String>,
    what: Result<Query<ResourceRef>, axum::extract::rejection::QueryRejection>,
) -> Response {
    about_live(
        &instance,
        &name,
        what,
        |object| json!({"manifest": object.to_string()}),
    )
}

/// The actions Argo CD's built-in discovery for `argoproj.io/Rollout` offers for a
/// Rollout's state: `restart` always; `resume` while paused; `abort` unless fully promoted
/// or aborted; `retry` once aborted (and not fully promoted); `promote-full` unless fully
/// promoted.
fn discovered(rollout: &Value) -> Vec<Value> {
    let status = &rollout["status"];
    let paused = status["pauseConditions"]
        .as_array()
        .is_some_and(|p| !p.is_empty())
        || rollout["spec"]["paused"] == true;
    let promoted = status["currentPodHash"] == status["stableRS"];
    let aborted = status["abort"] == true;
    [
        ("abort", promoted || aborted),
        ("promote-full", promoted),
        ("restart", false),
        ("resume", !paused),
        ("retry", promoted || !aborted),
    ]
    .into_iter()
    .map(|(action, disabled)| json!({"name": action, "disabled": disabled}))
    .collect()
}

/// `GET /api/v1/applications/{name}/resource/actions?…`.
async fn actions(
    State(instance): State<Instance>,
    Path(name): Path<String>,
    what: Result<Query<ResourceRef>, axum::extract::rejection::QueryRejection>,
) -> Response {
    about_live(
        &instance,
        &name,
        what,
        |rollout| json!({"actions": discovered(rollout)}),
    )
}

/// `POST /api/v1/applications/{name}/resource/actions/v2 {namespace, resourceName, kind,
/// group, action, …}`: runs the action. Argo CD does not check the discovery's `disabled`
/// (the action's script runs whatever the state, and the controller ignores what does not
/// apply); an action it has no script for is refused.
async fn run_action(
    State(instance): State<Instance>,
    Path(name): Path<String>,
    body: axum::body::Bytes,
) -> Response {
    let what: ResourceRef = match serde_json::from_slice(&body) {
        Ok(what) => what,
        Err(err) => return error(StatusCode::BAD_REQUEST, 3, err.to_string()),
    };
    let (cluster, _) = match live(&instance, &name, &what) {
        Ok(found) => found,
        Err(refused) => return refused.into_response(),
    };
    let asked = what.action.as_deref().unwrap_or_default();
    let ran = Ran {
        application: name,
        namespace: what.namespace.clone(),
        resource: what.resource_name.clone(),
        action: asked.to_owned(),
    };
    // A restart rolls the pods; the rollout's state stays as it is.
    if asked == "restart" {
        locked(&instance.asked.actions).push(ran);
        return Json(json!({})).into_response();
    }
    let Some(action) = RolloutAction::parse(asked) else {
        return error(
            StatusCode::BAD_REQUEST,
            3,
            format!("error getting Lua resource action: action '{asked}' not found for argoproj.io/Rollout"),
        );
    };
    if !instance
        .platform
        .rollout_action(&cluster, &what.namespace, &what.resource_name, action)
    {
        return error(
            StatusCode::INTERNAL_SERVER_ERROR,
            13,
            format!(
                "the simulated Rollouts controller does not run {asked} on {}",
                what.resource_name
            ),
        );
    }
    locked(&instance.asked.actions).push(ran);
    Json(json!({})).into_response()
}

/// Argo CD's error shape (a gRPC status over HTTP).
fn error(status: StatusCode, code: u8, message: String) -> Response {
    Refused(status, code, message).into_response()
}

/// A refusal, as [`error`] answers it.
#[derive(Debug)]
struct Refused(StatusCode, u8, String);

impl IntoResponse for Refused {
    fn into_response(self) -> Response {
        let Self(status, code, message) = self;
        (
            status,
            Json(json!({"error": message, "code": code, "message": message})),
        )
            .into_response()
    }
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
