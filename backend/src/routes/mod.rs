//! JSON endpoints, one module per area. Errors are JSON bodies too ([`ApiError`]). The
//! OpenAPI document (`/openapi.json`) lists every route; a test keeps the two in step.
//!
//! Module map:
//! - [`tabs`] — the per-service answers served whole (`/api/snapshot`, and each tab
//!   `tower_shared::whole_tabs` names: `/api/deployments`, `/api/releases`, `/api/config`),
//!   picked from [`crate::tabs::Tabs`].
//! - [`fleet`] (the fleet and its activity), [`dora`], [`provisioning`] (the strip and one
//!   service's progress), [`pipelines`] (pages of runs, a run, step logs), [`pulls`],
//!   [`runtime`] (the places joined with Prometheus' figures, pod logs), [`live_runs`]: reads
//!   of what the deriver made.
//! - [`releases`] (promotion preview and promote, compare), [`argocd`] (sync and the canary
//!   actions), [`config`] (a file as a form, its check and save), [`records`] (release
//!   records: list, one, export, the human part): reads and writes through Git or Argo CD.
//! - [`github`] (pull requests, request PRs, `cicd.yaml`), [`catalog`], [`history`]: the
//!   earlier plugin's routes; [`signin`] (auth config, guest tokens); [`events`] (the
//!   `/api/events` stream); [`ops`] (`/readyz`, `/metrics`, `/openapi.json`);
//!   [`webhooks`] (GitHub's signed webhooks).
//! - [`params`] — query parameters and bodies, checked, each failure naming its field;
//!   [`error`] — [`ApiError`]; [`upstream`] — what several routes ask of GitHub, the
//!   clusters' logs and the snapshot.

mod argocd;
mod catalog;
mod config;
mod dora;
mod error;
mod events;
mod fleet;
mod github;
mod history;
mod live_runs;
mod ops;
mod params;
mod pipelines;
mod provisioning;
mod pulls;
mod records;
mod releases;
mod runtime;
mod signin;
mod tabs;
mod upstream;
pub mod webhooks;

pub use error::ApiError;
pub use ops::OPENAPI_YAML;

use axum::http::Uri;
use axum::routing::{any, get, post};
use axum::Router;
use tower_shared::api::SnapshotAnswer;

use crate::state::AppState;

/// Argo CD's actions: the routes a tool's token must be granted to ask for them.
const SYNC_ROUTE: &str = "/api/argocd/sync";
const ROLLOUT_ACTION: &str = "/api/argocd/rollout-action";
/// The route a tool's token must be granted to propose a release record's human part.
const RECORD_NOTES: &str = "/api/records/notes";
/// The route a tool's token must be granted to propose config changes.
const CONFIG_SAVE: &str = "/api/config/save";

/// Every JSON route. An unknown `/api/…` path gets a JSON 404, not the frontend's page.
pub fn api() -> Router<AppState> {
    Router::new()
        .route("/api/fleet", get(fleet::get))
        .route("/api/activity", get(fleet::activity))
        .route("/api/snapshot", get(tabs::serve::<SnapshotAnswer>))
        .merge(tabs::whole())
        .route("/api/releases/promotion", get(releases::preview))
        .route("/api/releases/promote", post(releases::promote))
        .route("/api/releases/compare", get(releases::compare))
        .route("/api/access", get(releases::access))
        .route(SYNC_ROUTE, post(argocd::sync))
        .route("/api/argocd/rollout-actions", get(argocd::rollout_actions))
        .route(ROLLOUT_ACTION, post(argocd::rollout_action))
        .route("/api/records", get(records::list))
        .route("/api/records/record", get(records::record))
        .route("/api/records/export", get(records::export))
        .route(RECORD_NOTES, post(records::notes))
        .route("/api/runtime", get(runtime::get))
        .route("/api/runtime/log", get(runtime::log))
        .route("/api/dora", get(dora::get))
        .route("/api/config/file", get(config::file))
        .route("/api/config/check", post(config::check))
        .route(CONFIG_SAVE, post(config::save))
        .route("/api/pipelines", get(pipelines::runs))
        .route("/api/pipelines/run", get(pipelines::run))
        .route("/api/pipelines/log", get(pipelines::log))
        .route("/api/pulls", get(pulls::get))
        .route("/api/provisioning", get(provisioning::get))
        .route("/api/provisioning/service", get(provisioning::service))
        .route("/api/summary", get(provisioning::summary))
        .route("/api/events", get(events::get))
        .route("/live-runs", get(live_runs::get))
        .route("/pull-requests", get(github::pull_requests))
        .route("/pending-requests", get(github::pending_requests))
        .route("/request-pr", get(github::request_pr))
        .route("/config/cicd", get(github::cicd))
        .route(
            "/provisioning-history/runs",
            get(history::runs).post(history::record),
        )
        .route("/provisioning-history/typical", get(history::typical))
        .route("/catalog/refresh", post(catalog::refresh))
        .route("/catalog/entity", get(catalog::entity))
        .route("/auth/config", get(signin::config))
        .route("/auth/guest", get(signin::guest))
        .route("/readyz", get(ops::readyz))
        .route("/metrics", get(ops::metrics))
        .route("/openapi.json", get(ops::openapi))
        .route("/api", any(not_found))
        .route("/api/{*rest}", any(not_found))
        .method_not_allowed_fallback(method_not_allowed)
}

/// Routes other systems call with credentials of their own (GitHub's webhook signature),
/// outside the caller gate.
pub fn webhooks() -> Router<AppState> {
    Router::new()
        .route("/webhooks/github", post(webhooks::github))
        .method_not_allowed_fallback(method_not_allowed)
        .layer(axum::extract::DefaultBodyLimit::max(
            webhooks::MAX_WEBHOOK_BYTES,
        ))
}

async fn method_not_allowed(method: axum::http::Method, uri: Uri) -> ApiError {
    ApiError::MethodNotAllowed {
        method: method.to_string(),
        path: uri.path().to_owned(),
    }
}

async fn not_found(uri: Uri) -> ApiError {
    ApiError::NotFound {
        path: uri.path().to_owned(),
    }
}
