use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use tower_shared::api::ErrorBody;

/// An API failure, answered as `{"error": "...", ...}` with a matching status. Messages
/// never carry credentials.
#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    #[error("no such API route: {path}")]
    NotFound { path: String },
    /// The route exists, but not for this method (writes are never done on GET).
    #[error("{path} does not answer {method}")]
    MethodNotAllowed { method: String, path: String },
    /// A query parameter or body field is missing or malformed.
    #[error("{message}")]
    BadParameter {
        field: &'static str,
        message: String,
    },
    /// A body field is malformed (the field's path in the body).
    #[error("{message}")]
    BadBody { field: String, message: String },
    /// A write whose body is not JSON.
    #[error("send JSON: `Content-Type: application/json`")]
    NotJson,
    /// A body over the limit.
    #[error("the body is over {limit} bytes")]
    TooLarge { limit: usize },
    /// The parameter is well formed but names nothing Tower knows.
    #[error("{message}")]
    Unknown {
        field: &'static str,
        message: String,
    },
    /// It was there and is no more (a run's pod, removed with its logs).
    #[error("{message}")]
    Gone {
        field: &'static str,
        message: String,
    },
    /// It is there, but not in a state to answer this yet (a step that has not started).
    #[error("{message}")]
    NotYet {
        field: &'static str,
        message: String,
    },
    /// The caller is known but may not do this (not the service's owner).
    #[error("{message}")]
    Forbidden {
        field: &'static str,
        message: String,
    },
    /// The request conflicts with how things are now (a file changed since it was read; a
    /// release that does not go there next).
    #[error("{message}")]
    Conflict {
        field: &'static str,
        message: String,
    },
    /// The caller's credential is missing or was refused.
    #[error("{message}")]
    Unauthorized {
        field: &'static str,
        message: String,
    },
    /// Tower is not configured for this (e.g. no GitHub), or a dependency is down.
    #[error("{message}")]
    Unavailable {
        message: String,
        retry_after_secs: Option<u64>,
    },
    /// The caller spent its budget for this sort of request (see [`crate::auth::Budget`]).
    #[error("{message}")]
    TooMany {
        message: String,
        retry_after_secs: u64,
    },
    /// A service Tower called answered something it cannot use.
    #[error("{message}")]
    Upstream { message: String },
    /// A config file its schema refuses: 422 naming the first problem's field, with all
    /// of them.
    #[error("{}", invalid_message(.problems))]
    Invalid {
        problems: Vec<tower_shared::values::Problem>,
    },
}

fn invalid_message(problems: &[tower_shared::values::Problem]) -> String {
    match problems {
        [one] => format!("{}: {}", field_name(&one.path), one.message),
        [first, rest @ ..] => format!(
            "{}: {} (and {} more)",
            field_name(&first.path),
            first.message,
            rest.len()
        ),
        [] => "the file is not valid".to_owned(),
    }
}

fn field_name(path: &str) -> &str {
    if path.is_empty() {
        "the file"
    } else {
        path
    }
}

impl ApiError {
    pub fn bad(field: &'static str, message: impl Into<String>) -> Self {
        ApiError::BadParameter {
            field,
            message: message.into(),
        }
    }

    /// 404 naming `field`: the service it gives is not one Tower knows.
    pub fn no_service(field: &'static str, service: &str) -> Self {
        ApiError::Unknown {
            field,
            message: format!("Tower knows no service called {service}"),
        }
    }

    pub fn unavailable(message: impl Into<String>) -> Self {
        ApiError::Unavailable {
            message: message.into(),
            retry_after_secs: None,
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let error = self.to_string();
        let (status, field, path) = match &self {
            ApiError::NotFound { path } => (StatusCode::NOT_FOUND, None, Some(path.clone())),
            ApiError::MethodNotAllowed { .. } => (
                StatusCode::METHOD_NOT_ALLOWED,
                Some("method".to_owned()),
                None,
            ),
            ApiError::BadParameter { field, .. } => {
                (StatusCode::BAD_REQUEST, Some((*field).to_owned()), None)
            }
            ApiError::BadBody { field, .. } => (StatusCode::BAD_REQUEST, Some(field.clone()), None),
            ApiError::NotJson => (
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                Some("content-type".to_owned()),
                None,
            ),
            ApiError::TooLarge { .. } => {
                (StatusCode::PAYLOAD_TOO_LARGE, Some("body".to_owned()), None)
            }
            ApiError::Unknown { field, .. } => {
                (StatusCode::NOT_FOUND, Some((*field).to_owned()), None)
            }
            ApiError::Gone { field, .. } => (StatusCode::GONE, Some((*field).to_owned()), None),
            ApiError::Forbidden { field, .. } => {
                (StatusCode::FORBIDDEN, Some((*field).to_owned()), None)
            }
            ApiError::Conflict { field, .. } => {
                (StatusCode::CONFLICT, Some((*field).to_owned()), None)
            }
            ApiError::NotYet { field, .. } => {
                (StatusCode::CONFLICT, Some((*field).to_owned()), None)
            }
            ApiError::Unauthorized { field, .. } => {
                (StatusCode::UNAUTHORIZED, Some((*field).to_owned()), None)
            }
            ApiError::TooMany { .. } => (
                StatusCode::TOO_MANY_REQUESTS,
                Some("authorization".to_owned()),
                None,
            ),
            ApiError::Unavailable { .. } => (StatusCode::SERVICE_UNAVAILABLE, None, None),
            ApiError::Upstream { .. } => (StatusCode::BAD_GATEWAY, None, None),
            ApiError::Invalid { problems } => (
                StatusCode::UNPROCESSABLE_ENTITY,
                problems.first().map(|p| p.path.clone()),
                None,
            ),
        };
        let problems = match self {
            ApiError::Invalid { ref problems } => problems.clone(),
            _ => Vec::new(),
        };
        let mut response = (
            status,
            Json(ErrorBody {
                error,
                field,
                path,
                problems,
            }),
        )
            .into_response();
        if let ApiError::Unavailable {
            retry_after_secs: Some(secs),
            ..
        }
        | ApiError::TooMany {
            retry_after_secs: secs,
            ..
        } = self
        {
            response
                .headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from(secs));
        }
        response
    }
}
