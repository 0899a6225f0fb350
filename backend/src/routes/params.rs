//! Query parameters, checked: each failure names its field.

use std::collections::HashMap;

use tower_shared::hangar::{is_dns_label, ServiceKind};

use super::ApiError;
use crate::config::is_github_name;

/// A query string as given.
pub type Query = axum::extract::Query<HashMap<String, String>>;

pub fn required<'q>(query: &'q Query, field: &'static str) -> Result<&'q str, ApiError> {
    query
        .get(field)
        .map(String::as_str)
        .ok_or_else(|| ApiError::bad(field, format!("the query parameter `{field}` is required")))
}

/// A Kubernetes name (DNS-1123 label).
pub fn dns_label<'q>(query: &'q Query, field: &'static str) -> Result<&'q str, ApiError> {
    let value = required(query, field)?;
    check_dns_label(value, field)?;
    Ok(value)
}

pub fn check_dns_label(value: &str, field: &'static str) -> Result<(), ApiError> {
    if is_dns_label(value) {
        Ok(())
    } else {
        Err(ApiError::bad(
            field,
            format!(
                "`{field}` must be a DNS-1123 label (lowercase letters, digits and '-', at most 63), not {value:?}"
            ),
        ))
    }
}

pub fn optional_dns_label<'q>(
    query: &'q Query,
    field: &'static str,
) -> Result<Option<&'q str>, ApiError> {
    match query.get(field) {
        Some(_) => dns_label(query, field).map(Some),
        None => Ok(None),
    }
}

/// The `service` query parameter every per-service route takes: a DNS-1123 label, or a 400
/// naming `service`.
#[derive(Clone, Debug)]
pub struct ServiceName(pub String);

impl<S: Send + Sync> axum::extract::FromRequestParts<S> for ServiceName {
    type Rejection = ApiError;

    async fn from_request_parts(
        parts: &mut axum::http::request::Parts,
        state: &S,
    ) -> Result<Self, ApiError> {
        let query = Query::from_request_parts(parts, state)
            .await
            .map_err(|_| ApiError::bad("service", "the query string could not be read"))?;
        dns_label(&query, "service").map(|s| Self(s.to_owned()))
    }
}

/// `owner` and `repo` as GitHub names; returns `owner/repo`.
pub fn repo(query: &Query) -> Result<String, ApiError> {
    let mut parts = Vec::new();
    for field in ["owner", "repo"] {
        let value = required(query, field)?;
        if !is_github_name(value) {
            return Err(ApiError::bad(
                field,
                format!("`{field}` must be a GitHub name (letters, digits, '-', '_', '.'), not {value:?}"),
            ));
        }
        parts.push(value);
    }
    Ok(parts.join("/"))
}

/// A Hangar kind (`NodeJS`, `InfraService`, …).
pub fn kind(query: &Query, field: &'static str) -> Result<ServiceKind, ApiError> {
    let value = required(query, field)?;
    ServiceKind::from_kind(value).ok_or_else(|| {
        let known: Vec<&str> = ServiceKind::ALL.iter().map(|k| k.as_str()).collect();
        ApiError::bad(
            field,
            format!(
                "{value:?} is not a Hangar kind (one of {})",
                known.join(", ")
            ),
        )
    })
}

/// A number in `range`, or `default` when absent.
pub fn number(
    query: &Query,
    field: &'static str,
    range: std::ops::RangeInclusive<u32>,
    default: u32,
) -> Result<u32, ApiError> {
    let Some(value) = query.get(field) else {
        return Ok(default);
    };
    value
        .parse::<u32>()
        .ok()
        .filter(|n| range.contains(n))
        .ok_or_else(|| {
            ApiError::bad(
                field,
                format!(
                    "`{field}` must be a whole number from {} to {}, not {value:?}",
                    range.start(),
                    range.end()
                ),
            )
        })
}

/// Runs or pull requests per page unless `limit` says otherwise, and the most a page holds.
pub const PAGE: u32 = 25;
pub const MOST: u32 = 100;

/// A paged route's `limit` (1 to [`MOST`], default [`PAGE`]) and `continue` (a previous
/// page's `next`, read back by `decode`).
pub fn paging<C>(
    query: &Query,
    decode: impl FnOnce(&str) -> Option<C>,
) -> Result<(usize, Option<C>), ApiError> {
    let limit = number(query, "limit", 1..=MOST, PAGE)?;
    let after = match query.get("continue") {
        None => None,
        Some(token) => Some(decode(token).ok_or_else(|| {
            ApiError::bad(
                "continue",
                format!("`continue` must be a page's `next` as Tower gave it, not {token:?}"),
            )
        })?),
    };
    Ok((usize::try_from(limit).unwrap_or(usize::MAX), after))
}

/// An optional yes/no parameter: `true`/`1` or `false`/`0`; absent is `false`.
pub fn flag(query: &Query, field: &'static str) -> Result<bool, ApiError> {
    match query.get(field).map(String::as_str) {
        None | Some("false" | "0") => Ok(false),
        Some("true" | "1") => Ok(true),
        Some(other) => Err(ApiError::bad(
            field,
            format!("`{field}` must be true or false, not {other:?}"),
        )),
    }
}

/// `body` read as a `T` (`what` names it in the message); a bad field is a 400 naming the
/// field's path in the body (a missing one by its own name).
pub fn json_body<T: serde::de::DeserializeOwned>(body: &[u8], what: &str) -> Result<T, ApiError> {
    let de = &mut serde_json::Deserializer::from_slice(body);
    serde_path_to_error::deserialize(de).map_err(|err| {
        let path = err.path().to_string();
        let message = err.into_inner().to_string();
        // A missing (or unknown) field is reported at its parent: name the field itself.
        let missing = ["missing field `", "unknown field `"]
            .iter()
            .find_map(|start| message.strip_prefix(start))
            .and_then(|rest| rest.split_once('`'))
            .map(|(name, _)| name);
        let unknown = message.starts_with("unknown field");
        let field = match (path.as_str(), missing) {
            (".", Some(name)) => name.to_owned(),
            (path, Some(_)) if unknown => path.to_owned(),
            (".", None) => "body".to_owned(),
            (path, Some(name)) => format!("{path}.{name}"),
            (path, None) => path.to_owned(),
        };
        ApiError::BadBody {
            field,
            message: format!("{what} is not valid: {message}"),
        }
    })
}

/// A write's body. It must be JSON (`Content-Type: application/json`): a cross-site form
/// cannot send that without a CORS preflight, which Tower never grants. Extracted only once
/// a route has taken the method, so another method is a 405 whatever its content type.
#[derive(Debug)]
pub struct JsonBody(pub axum::body::Bytes);

impl<S: Send + Sync> axum::extract::FromRequest<S> for JsonBody {
    type Rejection = ApiError;

    async fn from_request(request: axum::extract::Request, state: &S) -> Result<Self, ApiError> {
        let json = request
            .headers()
            .get(axum::http::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.split(';').next())
            .is_some_and(|v| v.trim().eq_ignore_ascii_case("application/json"));
        if !json {
            return Err(ApiError::NotJson);
        }
        axum::body::Bytes::from_request(request, state)
            .await
            .map(JsonBody)
            .map_err(|_| ApiError::TooLarge {
                limit: crate::app::MAX_BODY_BYTES,
            })
    }
}
