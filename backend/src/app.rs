//! The whole HTTP surface, built from state so tests can drive it without a socket.

use std::sync::Arc;

use axum::routing::get;
use axum::Router;
use tower_http::compression::CompressionLayer;
use tower_http::trace::TraceLayer;
use tower_shared::fleet::Fleet;

use crate::source::SnapshotSource;

use crate::assets::Dist;
use crate::routes;

/// What the routes read. Cheap to clone: everything is behind `Arc`.
#[derive(Clone, Debug)]
pub struct AppState {
    /// A fixed fleet (`tower serve --fleet-file`); `None`: derived from `source` on each
    /// request.
    pub fleet: Option<Arc<Fleet>>,
    /// The objects the per-service views derive from.
    pub source: Arc<dyn SnapshotSource>,
}

impl AppState {
    pub fn new(fleet: Option<Fleet>, source: Arc<dyn SnapshotSource>) -> Self {
        Self {
            fleet: fleet.map(Arc::new),
            source,
        }
    }
}

/// The JSON API under `/api`, `/healthz`, and the built frontend for every other path.
/// Responses are compressed (brotli or gzip, as the client accepts) unless already encoded.
pub fn router(state: AppState, dist: &Dist) -> Router {
    Router::new()
        .merge(routes::api().with_state(state))
        .route("/healthz", get(|| async { "ok" }))
        .merge(dist.router())
        .layer(CompressionLayer::new())
        .layer(TraceLayer::new_for_http())
}
