//! The Kubernetes API of one simulated cluster, over HTTP: `/version`, discovery (`/api`,
//! `/apis`, `/api/v1`, `/apis/<group>/<version>`), and for every served type list (label and
//! field selectors, `limit` + `continue`), get, and watch (`watch=true`, `resourceVersion`,
//! bookmarks, `410 Gone` for a compacted version). Errors are `Status` objects.
//!
//! Lists are served from the current state; a `continue` token carries the list's resource
//! version and position, and expires (410) once that version leaves the history.
//!
//! Like a real API server reached with a read-only identity, it says no: every write (POST,
//! PUT, PATCH, DELETE) is refused with `405 MethodNotAllowed` and counted, and [`Access`]
//! rules forbid a kind (in one namespace or everywhere) with `403 Forbidden`. It can also
//! hang: accept connections and answer nothing until it is let go. `GET /metrics` gives the
//! counts in Prometheus text, so a test can read them from another process.

use std::collections::HashMap;
use std::convert::Infallible;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::extract::{Query, State};
use axum::http::{header, Method, Request, StatusCode, Uri};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use serde_json::{json, Value};
use tokio::sync::{broadcast, mpsc};
use tokio_stream::wrappers::ReceiverStream;

use crate::resources::{self, ResourceType};
use crate::selector::Selector;
use crate::store::{Event, Key, Store};

/// Server settings.
#[derive(Clone, Debug)]
pub struct Config {
    /// How often a watch that allows bookmarks gets one.
    pub bookmark_every: Duration,
    /// How long a watch lasts when the client sets no `timeoutSeconds`.
    pub default_watch_timeout: Duration,
    /// World time, for pod logs (real time when absent).
    pub clock: Option<crate::clock::Clock>,
    /// Whether the API server is up; open watches end when it goes down.
    pub up: Option<tokio::sync::watch::Receiver<bool>>,
    /// Requests served, by verb.
    pub counts: Arc<RequestCounts>,
    /// What the caller may read, and whether the server hangs.
    pub access: Arc<Access>,
}

/// One RBAC denial: a resource type (by group and plural), in one namespace or everywhere.
/// A cluster-wide request for the type is forbidden by either, as a real API server forbids
/// a cluster-scoped list to an identity granted the type in some namespaces only.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Forbidden {
    /// Empty for the core group.
    pub group: String,
    pub plural: String,
    pub namespace: Option<String>,
}

/// The caller's grants (everything readable but what is forbidden) and the hang switch.
#[derive(Debug)]
pub struct Access {
    forbidden: std::sync::Mutex<Vec<Forbidden>>,
    hung: tokio::sync::watch::Sender<bool>,
}

impl Default for Access {
    fn default() -> Self {
        Self {
            forbidden: std::sync::Mutex::default(),
            hung: tokio::sync::watch::channel(false).0,
        }
    }
}

/// The identity the simulated clusters' kubeconfig names (it has no credentials).
pub const USER: &str = "tower-reader";

impl Access {
    fn rules(&self) -> std::sync::MutexGuard<'_, Vec<Forbidden>> {
        self.forbidden
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Adds a denial.
    pub fn forbid(&self, rule: Forbidden) {
        self.rules().push(rule);
    }

    /// Lifts every denial.
    pub fn allow_all(&self) {
        self.rules().clear();
    }

    /// Hangs the server (connections accepted, nothing answered, open watches silent) or
    /// lets it go (what was waiting is answered).
    pub fn set_hung(&self, hung: bool) {
        self.hung.send_replace(hung);
    }

    /// Waits while the server hangs.
    async fn while_hung(&self) {
        let mut hung = self.hung.subscribe();
        let _ = hung.wait_for(|hung| !*hung).await;
    }

    /// The 403 a real API server gives for `verb` on `resource` in `namespace` (`None`:
    /// across the cluster), if a rule denies it.
    fn check(
        &self,
        verb: &str,
        resource: &ResourceType,
        subresource: Option<&str>,
        namespace: Option<&str>,
    ) -> Option<Response> {
        let denied = self.rules().iter().any(|rule| {
            rule.group == resource.group
                && rule.plural == resource.plural
                && (namespace.is_none()
                    || rule.namespace.is_none()
                    || rule.namespace.as_deref() == namespace)
        });
        if !denied {
            return None;
        }
        let qualified = if resource.group.is_empty() {
            resource.plural.to_owned()
        } else {
            format!("{}.{}", resource.plural, resource.group)
        };
        let what = match subresource {
            Some(sub) => format!("{}/{sub}", resource.plural),
            None => resource.plural.to_owned(),
        };
        let scope = match namespace {
            Some(ns) => format!("in the namespace \"{ns}\""),
            None => "at the cluster scope".to_owned(),
        };
        let body = json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": format!("{qualified} is forbidden: User \"{USER}\" cannot {verb} resource \"{what}\" in API group \"{}\" {scope}", resource.group),
            "reason": "Forbidden", "details": {"group": resource.group, "kind": resource.plural},
            "code": 403});
        Some((StatusCode::FORBIDDEN, Json(body)).into_response())
    }
}

/// Requests an API server has answered, by verb (for "no LIST after start-up" checks).
#[derive(Debug, Default)]
pub struct RequestCounts {
    pub list: AtomicU64,
    pub watch: AtomicU64,
    pub get: AtomicU64,
    pub other: AtomicU64,
    /// Writes, all refused.
    pub writes: AtomicU64,
    /// Requests refused by an [`Access`] rule.
    pub forbidden: AtomicU64,
    /// Followed logs (`pods/{name}/log?follow=true` still streaming when first answered)
    /// opened since start, and open now.
    pub log_streams: AtomicU64,
    pub log_streams_open: AtomicU64,
}

/// A followed log, counted open while it lives.
struct LogStream(Arc<RequestCounts>);

impl LogStream {
    fn open(counts: Arc<RequestCounts>) -> Self {
        counts.log_streams.fetch_add(1, Ordering::Relaxed);
        counts.log_streams_open.fetch_add(1, Ordering::Relaxed);
        Self(counts)
    }
}

impl Drop for LogStream {
    fn drop(&mut self) {
        self.0.log_streams_open.fetch_sub(1, Ordering::Relaxed);
    }
}

/// A reading of [`RequestCounts`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Requests {
    pub list: u64,
    pub watch: u64,
    pub get: u64,
    pub other: u64,
    pub writes: u64,
    pub forbidden: u64,
    pub log_streams: u64,
    pub log_streams_open: u64,
}

impl RequestCounts {
    pub fn read(&self) -> Requests {
        Requests {
            list: self.list.load(Ordering::Relaxed),
            watch: self.watch.load(Ordering::Relaxed),
            get: self.get.load(Ordering::Relaxed),
            other: self.other.load(Ordering::Relaxed),
            writes: self.writes.load(Ordering::Relaxed),
            forbidden: self.forbidden.load(Ordering::Relaxed),
            log_streams: self.log_streams.load(Ordering::Relaxed),
            log_streams_open: self.log_streams_open.load(Ordering::Relaxed),
        }
    }

    /// The counts in Prometheus text (`GET /metrics`).
    pub fn prometheus(&self) -> String {
        let read = self.read();
        let mut text = String::from(
            "# HELP hangar_sim_requests_total Requests answered, by verb (write: refused with 405).\n\
             # TYPE hangar_sim_requests_total counter\n",
        );
        for (verb, count) in [
            ("list", read.list),
            ("watch", read.watch),
            ("get", read.get),
            ("other", read.other),
            ("write", read.writes),
        ] {
            text.push_str(&format!(
                "hangar_sim_requests_total{{verb=\"{verb}\"}} {count}\n"
            ));
        }
        text.push_str(&format!(
            "# HELP hangar_sim_forbidden_total Requests refused with 403 by an RBAC rule.\n\
             # TYPE hangar_sim_forbidden_total counter\nhangar_sim_forbidden_total {}\n",
            read.forbidden
        ));
        text.push_str(&format!(
            "# HELP hangar_sim_log_streams_total Followed pod logs opened.\n\
             # TYPE hangar_sim_log_streams_total counter\nhangar_sim_log_streams_total {}\n\
             # HELP hangar_sim_log_streams_open Followed pod logs streaming now.\n\
             # TYPE hangar_sim_log_streams_open gauge\nhangar_sim_log_streams_open {}\n",
            read.log_streams, read.log_streams_open
        ));
        text
    }
}

impl Default for Config {
    fn default() -> Self {
        Self {
            bookmark_every: Duration::from_secs(15),
            default_watch_timeout: Duration::from_secs(30 * 60),
            clock: None,
            up: None,
            counts: Arc::default(),
            access: Arc::default(),
        }
    }
}

#[derive(Clone, Debug)]
struct Api {
    store: Store,
    config: Arc<Config>,
}

/// The router serving `store` as a Kubernetes API server.
pub fn router(store: Store, config: Config) -> Router {
    let api = Api {
        store,
        config: Arc::new(config),
    };
    let counts = Arc::clone(&api.config.counts);
    Router::new()
        .route("/version", get(version))
        .route("/api", get(|| async { Json(resources::core_versions()) }))
        .route("/apis", get(|| async { Json(resources::group_list()) }))
        .fallback(resource)
        .layer(middleware::from_fn_with_state(api.clone(), gate))
        .route("/metrics", get(move || async move { counts.prometheus() }))
        .with_state(api)
}

/// Before any route: waits while the server hangs, and refuses every write.
async fn gate(State(api): State<Api>, request: Request<Body>, next: Next) -> Response {
    api.config.access.while_hung().await;
    if matches!(*request.method(), Method::GET | Method::HEAD) {
        return next.run(request).await;
    }
    api.config.counts.writes.fetch_add(1, Ordering::Relaxed);
    tracing::warn!(method = %request.method(), path = %request.uri().path(), "refused a write to a simulated cluster");
    status(
        StatusCode::METHOD_NOT_ALLOWED,
        "MethodNotAllowed",
        format!(
            "the server does not allow this method on the requested resource: {USER} may only read"
        ),
    )
}

async fn version() -> Json<Value> {
    Json(
        json!({"major": "1", "minor": "33", "gitVersion": "v1.33.0-hangar-sim",
                "gitCommit": "0000000000000000000000000000000000000000", "gitTreeState": "clean",
                "buildDate": "2026-11-01T00:00:00Z", "goVersion": "go1.24", "compiler": "gc",
                "platform": "linux/amd64"}),
    )
}

/// A Kubernetes `Status` error.
fn status(code: StatusCode, reason: &str, message: impl Into<String>) -> Response {
    let body = json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                      "message": message.into(), "reason": reason, "code": code.as_u16()});
    (code, Json(body)).into_response()
}

fn not_found(what: &str) -> Response {
    status(
        StatusCode::NOT_FOUND,
        "NotFound",
        format!("{what} not found"),
    )
}

/// What a path asks for.
enum Target<'a> {
    /// A pod's log: namespace and pod name.
    Log(&'a str, &'a str),
    Discovery(&'a str, &'a str),
    Collection(&'static ResourceType, Option<&'a str>),
    Object(&'static ResourceType, Option<&'a str>, &'a str),
}

fn parse_path(path: &str) -> Option<Target<'_>> {
    let parts: Vec<&str> = path.trim_matches('/').split('/').collect();
    let (group, version, rest) = match parts.as_slice() {
        ["api", "v1", rest @ ..] => ("", "v1", rest),
        ["apis", group, version, rest @ ..] => (*group, *version, rest),
        _ => return None,
    };
    let resource = |plural| resources::by_plural(group, version, plural);
    Some(match rest {
        [] => Target::Discovery(group, version),
        [plural] => Target::Collection(resource(plural)?, None),
        ["namespaces", ns, plural] => Target::Collection(resource(plural)?, Some(ns)),
        ["namespaces", ns, "pods", name, "log"] if group.is_empty() => Target::Log(ns, name),
        ["namespaces", ns, plural, name] => Target::Object(resource(plural)?, Some(ns), name),
        [plural, name] => Target::Object(resource(plural)?, None, name),
        _ => return None,
    })
}

async fn resource(
    State(api): State<Api>,
    uri: Uri,
    Query(query): Query<HashMap<String, String>>,
) -> Response {
    let target = parse_path(uri.path());
    let counter = match &target {
        Some(Target::Object(..)) => &api.config.counts.get,
        Some(Target::Collection(..))
            if query.get("watch").is_some_and(|w| w == "true" || w == "1") =>
        {
            &api.config.counts.watch
        }
        Some(Target::Collection(..)) => &api.config.counts.list,
        _ => &api.config.counts.other,
    };
    counter.fetch_add(1, Ordering::Relaxed);
    let denied = match &target {
        Some(Target::Object(resource, namespace, _)) => {
            api.config.access.check("get", resource, None, *namespace)
        }
        Some(Target::Collection(resource, namespace)) => {
            let verb = if query.get("watch").is_some_and(|w| w == "true" || w == "1") {
                "watch"
            } else {
                "list"
            };
            api.config.access.check(verb, resource, None, *namespace)
        }
        Some(Target::Log(namespace, _)) => {
            resources::by_plural("", "v1", "pods").and_then(|pods| {
                api.config
                    .access
                    .check("get", pods, Some("log"), Some(namespace))
            })
        }
        _ => None,
    };
    if let Some(denied) = denied {
        api.config.counts.forbidden.fetch_add(1, Ordering::Relaxed);
        return denied;
    }
    match target {
        Some(Target::Discovery(group, version)) => match resources::resource_list(group, version) {
            Some(list) => Json(list).into_response(),
            None => not_found(&format!(
                "the server could not find the requested resource ({group}/{version})"
            )),
        },
        Some(Target::Object(resource, namespace, name)) => {
            let key = Key {
                group: resource.group,
                plural: resource.plural,
                namespace: if resource.namespaced {
                    namespace.map(str::to_owned)
                } else {
                    None
                },
                name: name.to_owned(),
            };
            match api.store.get(&key) {
                Some(object) => Json(object).into_response(),
                None => {
                    let plural = if resource.group.is_empty() {
                        resource.plural.to_owned()
                    } else {
                        format!("{}.{}", resource.plural, resource.group)
                    };
                    not_found(&format!("{plural} \"{name}\""))
                }
            }
        }
        Some(Target::Collection(resource, namespace)) => {
            collection(&api, resource, namespace, &query)
        }
        Some(Target::Log(namespace, pod)) => log(&api, namespace, pod, &query),
        None => not_found("the server could not find the requested resource"),
    }
}

/// The filters of a list or watch request.
struct Filter {
    resource: &'static ResourceType,
    namespace: Option<String>,
    labels: Selector,
    fields: Selector,
}

impl Filter {
    fn matches(&self, key: &Key, object: &Value) -> bool {
        key.group == self.resource.group
            && key.plural == self.resource.plural
            && (self.namespace.is_none() || key.namespace == self.namespace)
            && self.labels.matches_labels(object)
            && self.fields.matches_fields(object)
    }
}

fn collection(
    api: &Api,
    resource: &'static ResourceType,
    namespace: Option<&str>,
    query: &HashMap<String, String>,
) -> Response {
    let parse = |name: &str| Selector::parse(query.get(name).map_or("", String::as_str));
    let (labels, fields) = match (parse("labelSelector"), parse("fieldSelector")) {
        (Ok(l), Ok(f)) => (l, f),
        (Err(e), _) | (_, Err(e)) => {
            return status(StatusCode::BAD_REQUEST, "BadRequest", e.to_string())
        }
    };
    let filter = Filter {
        resource,
        namespace: namespace.map(str::to_owned),
        labels,
        fields,
    };
    let watching = query.get("watch").is_some_and(|w| w == "true" || w == "1");
    if watching {
        return watch(api, filter, query);
    }
    let start = match query.get("continue").filter(|c| !c.is_empty()) {
        None => 0,
        Some(token) => match parse_continue(token) {
            Some((list_rv, offset)) if api.store.watch_from(list_rv).is_some() => offset,
            Some(_) => {
                return status(StatusCode::GONE, "Expired",
                    "The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter.")
            }
            None => return status(StatusCode::BAD_REQUEST, "BadRequest", format!("invalid continue token {token:?}")),
        },
    };
    let limit = query
        .get("limit")
        .and_then(|l| l.parse::<usize>().ok())
        .filter(|l| *l > 0);
    let (revision, page, total) = api.store.list_page(
        resource,
        namespace,
        |o| filter.labels.matches_labels(o) && filter.fields.matches_fields(o),
        start,
        limit,
    );
    let end = start + page.len();
    let mut metadata = json!({"resourceVersion": revision.to_string()});
    if end < total {
        metadata["continue"] = json!(format!("{revision}.{end}"));
        metadata["remainingItemCount"] = json!(total - end);
    }
    Json(
        json!({"apiVersion": resource.api_version(), "kind": format!("{}List", resource.kind),
                "metadata": metadata, "items": page}),
    )
    .into_response()
}

fn parse_continue(token: &str) -> Option<(u64, usize)> {
    let (rv, offset) = token.split_once('.')?;
    Some((rv.parse().ok()?, offset.parse().ok()?))
}

fn line(event_type: &str, object: &Value) -> Bytes {
    let mut text = json!({"type": event_type, "object": object}).to_string();
    text.push('\n');
    Bytes::from(text)
}

fn gone_line(resource_version: &str) -> Bytes {
    line(
        "ERROR",
        &json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                "message": format!("too old resource version: {resource_version}"),
                "reason": "Expired", "code": 410}),
    )
}

fn watch(api: &Api, filter: Filter, query: &HashMap<String, String>) -> Response {
    let (tx, rx) = mpsc::channel::<Result<Bytes, Infallible>>(256);
    let requested = query.get("resourceVersion").cloned().unwrap_or_default();
    let bookmarks = query
        .get("allowWatchBookmarks")
        .is_some_and(|b| b == "true" || b == "1");
    let timeout = query
        .get("timeoutSeconds")
        .and_then(|t| t.parse().ok())
        .map_or(api.config.default_watch_timeout, Duration::from_secs);
    let resource = filter.resource;
    let owned = filter;

    // Initial events: every object (no version, or "0"), or the history after the version.
    let start = if requested.is_empty() || requested == "0" {
        let (revision, objects, receiver) = api.store.watch_all();
        let initial: Vec<Bytes> = objects
            .iter()
            .filter(|(k, o)| owned.matches(k, o))
            .map(|(_, o)| line("ADDED", o))
            .collect();
        Some((revision, initial, receiver))
    } else {
        match requested
            .parse::<u64>()
            .ok()
            .and_then(|rv| api.store.watch_from(rv).map(|w| (rv, w)))
        {
            Some((rv, crate::store::Resume { past, receiver })) => {
                let initial = past
                    .iter()
                    .filter(|e| owned.matches(&e.key, &e.object))
                    .map(|e| line(e.kind.as_str(), &e.object))
                    .collect();
                let last = past.last().map_or(rv, |e| e.resource_version);
                Some((last, initial, receiver))
            }
            None => None,
        }
    };
    let bookmark_every = api.config.bookmark_every;
    let access = Arc::clone(&api.config.access);
    let mut up = api.config.up.clone();
    tokio::spawn(async move {
        let going_down = async move {
            match up.as_mut() {
                Some(up) => {
                    let _ = up.wait_for(|up| !*up).await;
                }
                None => std::future::pending::<()>().await,
            }
        };
        tokio::pin!(going_down);
        let Some((mut revision, initial, mut receiver)) = start else {
            let _ = tx.send(Ok(gone_line(&requested))).await;
            return;
        };
        for bytes in initial {
            if tx.send(Ok(bytes)).await.is_err() {
                return;
            }
        }
        let deadline = tokio::time::sleep(timeout);
        tokio::pin!(deadline);
        let mut ticker = tokio::time::interval(bookmark_every);
        ticker.tick().await;
        loop {
            let bytes = tokio::select! {
                () = &mut deadline => return,
                () = &mut going_down => return,
                // The version this stream has delivered up to: resuming there misses nothing.
                _ = ticker.tick(), if bookmarks => {
                    line("BOOKMARK", &json!({"apiVersion": resource.api_version(), "kind": resource.kind,
                                             "metadata": {"resourceVersion": revision.to_string()}}))
                }
                received = receiver.recv() => match received {
                    Ok(event) if event.resource_version <= revision => continue,
                    Ok(event) => {
                        revision = event.resource_version;
                        if !owned.matches(&event.key, &event.object) {
                            continue;
                        }
                        event_line(&event)
                    }
                    // Fell behind: the client must re-list, as after a compaction.
                    Err(broadcast::error::RecvError::Lagged(_)) => {
                        let _ = tx.send(Ok(gone_line(&revision.to_string()))).await;
                        return;
                    }
                    Err(broadcast::error::RecvError::Closed) => return,
                },
            };
            // A hung server's open watches fall silent too.
            access.while_hung().await;
            if tx.send(Ok(bytes)).await.is_err() {
                return;
            }
        }
    });
    streamed("application/json", rx)
}

/// A response whose body is whatever a task sends down `rx`, until it drops its sender.
fn streamed(content_type: &'static str, rx: mpsc::Receiver<Result<Bytes, Infallible>>) -> Response {
    (
        [(header::CONTENT_TYPE, content_type)],
        Body::from_stream(ReceiverStream::new(rx)),
    )
        .into_response()
}

fn event_line(event: &Event) -> Bytes {
    line(event.kind.as_str(), &event.object)
}

fn world_now(api: &Api) -> chrono::DateTime<chrono::Utc> {
    api.config
        .clock
        .as_ref()
        .map_or_else(chrono::Utc::now, crate::clock::Clock::now)
}

/// `GET /api/v1/namespaces/{ns}/pods/{pod}/log?container=&follow=&timestamps=&tailLines=`:
/// `text/plain`; with `follow=true` it streams until the container ends.
fn log(api: &Api, namespace: &str, pod: &str, query: &HashMap<String, String>) -> Response {
    let key = Key {
        group: "",
        plural: "pods",
        namespace: Some(namespace.to_owned()),
        name: pod.to_owned(),
    };
    let Some(object) = api.store.get(&key) else {
        return not_found(&format!("pods \"{pod}\""));
    };
    let first = object["spec"]["containers"][0]["name"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    let container = query.get("container").cloned().unwrap_or(first);
    let flag = |name: &str| query.get(name).is_some_and(|v| v == "true" || v == "1");
    let (timestamps, follow) = (flag("timestamps"), flag("follow"));
    let tail = query.get("tailLines").and_then(|t| t.parse::<usize>().ok());
    let render = move |at: chrono::DateTime<chrono::Utc>, text: &str| {
        if timestamps {
            format!(
                "{} {text}\n",
                at.to_rfc3339_opts(chrono::SecondsFormat::Nanos, true)
            )
        } else {
            format!("{text}\n")
        }
    };
    let Some(script) = crate::logs::Script::of(&object, &container) else {
        let known = object["spec"]["containers"]
            .as_array()
            .is_some_and(|cs| cs.iter().any(|c| c["name"] == container.as_str()));
        return status(
            StatusCode::BAD_REQUEST,
            "BadRequest",
            if known {
                format!("container \"{container}\" in pod \"{pod}\" is waiting to start: PodInitializing")
            } else {
                format!("container {container} is not valid for pod {pod}")
            },
        );
    };
    let (lines, ended) = script.lines(0, world_now(api));
    let skip = tail.map_or(0, |t| lines.len().saturating_sub(t));
    let text: String = lines
        .iter()
        .skip(skip)
        .map(|(at, line)| render(*at, line))
        .collect();
    if !follow || ended {
        return ([(header::CONTENT_TYPE, "text/plain")], text).into_response();
    }
    let (tx, rx) = mpsc::channel::<Result<Bytes, Infallible>>(64);
    let (store, config) = (api.store.clone(), Arc::clone(&api.config));
    let mut sent = lines.len();
    let open = LogStream::open(Arc::clone(&api.config.counts));
    tokio::spawn(async move {
        // Counted open until this task ends: when the log ends or the reader goes.
        let _open = open;
        if tx.send(Ok(Bytes::from(text))).await.is_err() {
            return;
        }
        let api = Api { store, config };
        loop {
            tokio::select! {
                // The reader hung up: stop at once, as an API server does.
                () = tx.closed() => return,
                () = tokio::time::sleep(Duration::from_millis(250)) => {}
            }
            // A pod deleted or replaced ends the stream.
            let Some(script) = api
                .store
                .get(&key)
                .and_then(|object| crate::logs::Script::of(&object, &container))
            else {
                return;
            };
            let (lines, ended) = script.lines(sent, world_now(&api));
            sent += lines.len();
            let fresh: String = lines.iter().map(|(at, line)| render(*at, line)).collect();
            if !fresh.is_empty() && tx.send(Ok(Bytes::from(fresh))).await.is_err() {
                return;
            }
            if ended {
                return;
            }
        }
    });
    streamed("text/plain", rx)
}
