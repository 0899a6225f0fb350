use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::json;

/// An API failure, answered as `{"error": "...", ...}` with a matching status.
#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    #[error("no such API route: {path}")]
    NotFound { path: String },
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let (status, body) = match &self {
            ApiError::NotFound { path } => (
                StatusCode::NOT_FOUND,
                json!({ "error": self.to_string(), "path": path }),
            ),
        };
        (status, Json(body)).into_response()
    }
}
