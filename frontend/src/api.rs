//! Requests to Tower's backend. Paths are relative to the page's origin.

use gloo_net::http::Request;
use serde::de::DeserializeOwned;
use tower_shared::fleet::Fleet;
use tower_shared::snapshot::Snapshot;

/// Why a request to the backend gave no data. Each variant reads differently on the page:
/// "cannot reach Tower" is not "Tower answered with an error".
#[derive(Clone, Debug, thiserror::Error)]
pub enum ApiError {
    #[error("cannot reach Tower's backend: {0}")]
    Unreachable(String),
    #[error("Tower's backend answered {status}: {message}")]
    Status { status: u16, message: String },
    #[error("Tower's backend sent data this page cannot read: {0}")]
    Decode(String),
}

async fn get_json<T: DeserializeOwned>(path: &str) -> Result<T, ApiError> {
    let response = Request::get(path)
        .header("Accept", "application/json")
        .send()
        .await
        .map_err(|e| ApiError::Unreachable(e.to_string()))?;
    if !response.ok() {
        // API errors are `{"error": "..."}`; show the sentence, not the JSON.
        let body = response.text().await.unwrap_or_default();
        let message = serde_json::from_str::<serde_json::Value>(&body)
            .ok()
            .and_then(|v| v.get("error")?.as_str().map(str::to_owned))
            .unwrap_or(body);
        return Err(ApiError::Status {
            status: response.status(),
            message,
        });
    }
    response
        .json()
        .await
        .map_err(|e| ApiError::Decode(e.to_string()))
}

/// `GET /api/fleet`.
pub async fn fleet() -> Result<Fleet, ApiError> {
    get_json("/api/fleet").await
}

/// `GET /api/snapshot?service=…`: what one service's views derive from.
pub async fn snapshot(service: String) -> Result<Snapshot, ApiError> {
    let service = String::from(js_sys::encode_uri_component(&service));
    get_json(&format!("/api/snapshot?service={service}")).await
}
