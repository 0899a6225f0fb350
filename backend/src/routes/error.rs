use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::json;

/// An API failure, answered as `{"error": "...", ...}` with a matching status.
#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    #[error("no such API route: {path}")]
    NotFound { path: String },
    /// A query parameter is missing or malformed.
    #[error("{message}")]
    BadParameter {
        field: &'static str,
        message: String,
    },
    /// The parameter is well formed but names nothing Tower knows.
    #[error("{message}")]
    Unknown {
        field: &'static str,
        message: String,
    },
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let (status, body) = match &self {
            ApiError::NotFound { path } => (
                StatusCode::NOT_FOUND,
                json!({ "error": self.to_string(), "path": path }),
            ),
            ApiError::BadParameter { field, .. } => (
                StatusCode::BAD_REQUEST,
                json!({ "error": self.to_string(), "field": field }),
            ),
            ApiError::Unknown { field, .. } => (
                StatusCode::NOT_FOUND,
                json!({ "error": self.to_string(), "field": field }),
            ),
        };
        (status, Json(body)).into_response()
    }
}
