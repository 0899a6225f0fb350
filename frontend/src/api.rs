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

/// `GET /api/events`: Server-Sent Events saying when to fetch again (read by
/// [`crate::live`] with `fetch`, so it can carry the token).
pub const EVENTS: &str = "/api/events";

/// Adds the signed-in user's token (see [`crate::signin`]).
fn with_token(request: gloo_net::http::RequestBuilder) -> gloo_net::http::RequestBuilder {
    match crate::signin::token() {
        Some(token) => request.header("Authorization", &format!("Bearer {token}")),
        None => request,
    }
}

async fn get_json<T: DeserializeOwned>(path: &str) -> Result<T, ApiError> {
    let response = with_token(Request::get(path).header("Accept", "application/json"))
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

/// `GET /auth/config`: how this page signs in.
#[derive(Clone, Debug, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AuthConfig {
    /// The Backstage origin allowed to hand the page its token by `postMessage`.
    pub backstage_origin: Option<String>,
    /// A page opened on its own signs in as Backstage's guest.
    pub guest_sign_in: bool,
    /// No token needed at all (a local file).
    #[serde(default)]
    pub open: bool,
    /// Who the authenticating proxy in front of Tower says the user is.
    #[serde(default)]
    pub proxy_user: Option<String>,
}

pub async fn auth_config() -> Result<AuthConfig, ApiError> {
    get_json("/auth/config").await
}

/// `GET /auth/guest`: Backstage's guest user token (when the backend allows guests).
pub async fn guest_token() -> Result<String, ApiError> {
    #[derive(serde::Deserialize)]
    struct Guest {
        token: String,
    }
    let guest: Guest = get_json("/auth/guest").await?;
    Ok(guest.token)
}

/// `GET /api/fleet`.
pub async fn fleet() -> Result<Fleet, ApiError> {
    get_json("/api/fleet").await
}

/// A cluster whose data is the last known (it could not be reached).
#[derive(Clone, Debug, PartialEq, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StaleCluster {
    pub name: String,
    #[serde(default)]
    pub last_seen_at: Option<chrono::DateTime<chrono::Utc>>,
}

/// Why GitHub's part of an answer may be old or missing.
#[derive(Clone, Debug, PartialEq, serde::Deserialize)]
#[serde(rename_all = "camelCase", tag = "state")]
pub enum GitHubTrouble {
    RateLimited {
        until: chrono::DateTime<chrono::Utc>,
    },
    Failing {
        error: String,
    },
}

/// What in an answer is old or missing: clusters that cannot be reached, GitHub's trouble.
#[derive(Clone, Debug, Default, PartialEq, serde::Deserialize)]
pub struct Health {
    #[serde(default)]
    pub stale: Vec<StaleCluster>,
    #[serde(default)]
    pub github: Option<GitHubTrouble>,
}

/// `GET /api/provisioning`: every service's progress, derived on the server at `now`.
#[derive(Clone, Debug, PartialEq, serde::Deserialize)]
pub struct Provisioning {
    pub now: chrono::DateTime<chrono::Utc>,
    pub services: Vec<tower_shared::provisioning::ServiceProgress>,
    #[serde(flatten)]
    pub health: Health,
}

pub async fn provisioning() -> Result<Provisioning, ApiError> {
    get_json("/api/provisioning").await
}

/// A snapshot with what could not be read fresh when it was taken.
#[derive(Clone, Debug, PartialEq, serde::Deserialize)]
pub struct ServiceSnapshot {
    #[serde(flatten)]
    pub snapshot: Snapshot,
    #[serde(flatten)]
    pub health: Health,
}

/// `GET /api/snapshot?service=…`, with its health.
pub async fn service_snapshot(service: String) -> Result<ServiceSnapshot, ApiError> {
    let service = String::from(js_sys::encode_uri_component(&service));
    get_json(&format!("/api/snapshot?service={service}")).await
}

#[derive(Clone, Debug, PartialEq, serde::Deserialize)]
pub struct Runs {
    pub runs: Vec<tower_shared::snapshot::RecordedRun>,
}

/// `GET /provisioning-history/runs?limit=10`: the newest recorded provisions.
pub async fn recent_runs() -> Result<Runs, ApiError> {
    get_json("/provisioning-history/runs?limit=10").await
}

/// `POST /catalog/refresh`: Backstage's answer in words ("triggered", "already running"),
/// or why it refused.
pub async fn refresh_catalog() -> Result<String, ApiError> {
    let response =
        with_token(Request::post("/catalog/refresh").header("Accept", "application/json"))
            .json(&serde_json::json!({}))
            .map_err(|e| ApiError::Unreachable(e.to_string()))?
            .send()
            .await
            .map_err(|e| ApiError::Unreachable(e.to_string()))?;
    let status = response.status();
    let body: serde_json::Value = response
        .json()
        .await
        .map_err(|e| ApiError::Decode(e.to_string()))?;
    let text = |key: &str| {
        body.get(key)
            .and_then(|v| v.as_str())
            .unwrap_or_default()
            .to_owned()
    };
    if (200..300).contains(&status) {
        Ok(text("message"))
    } else {
        Err(ApiError::Status {
            status,
            message: text("error"),
        })
    }
}
