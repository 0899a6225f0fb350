//! JSON endpoints, one module each. Errors are JSON bodies too ([`ApiError`]).

mod error;
mod fleet;
mod snapshot;

pub use error::ApiError;

use axum::http::Uri;
use axum::routing::{any, get};
use axum::Router;

use crate::app::AppState;

/// Every route under `/api`. An unknown `/api/…` path gets a JSON 404, not the frontend's page.
pub fn api() -> Router<AppState> {
    Router::new()
        .route("/api/fleet", get(fleet::get))
        .route("/api/snapshot", get(snapshot::get))
        .route("/api", any(not_found))
        .route("/api/{*rest}", any(not_found))
}

async fn not_found(uri: Uri) -> ApiError {
    ApiError::NotFound {
        path: uri.path().to_owned(),
    }
}
