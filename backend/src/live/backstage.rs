//! Backstage over HTTP: catalog lookups by name, a user's ownership (user info) and the
//! ingestor's scheduler trigger.
//! Triggers always carry the caller's own token; lookups the caller's, or Tower's read
//! token from the config for the server-side derivation.

use reqwest::StatusCode;
use serde_json::Value;

/// The catalog ingestor's scheduler task.
pub const INGESTOR_TASK: &str = "KubernetesEntityProvider";

/// What went wrong talking to Backstage (never carries the token).
#[derive(Debug, thiserror::Error)]
pub enum BackstageError {
    #[error("Backstage refused the token")]
    Refused,
    #[error("Backstage has no {INGESTOR_TASK} task to trigger")]
    NoSuchTask,
    #[error("Backstage could not be reached: {0}")]
    Unreachable(String),
    #[error("Backstage answered {0}")]
    Unexpected(String),
}

/// How a trigger went.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Trigger {
    Started,
    /// A run is in progress (Backstage's 409): the entity appears when it ends.
    AlreadyRunning,
}

/// A Backstage backend. Cheap to clone.
#[derive(Clone, Debug)]
pub struct Backstage {
    url: String,
    http: reqwest::Client,
}

fn unreachable(err: reqwest::Error) -> BackstageError {
    // Without the URL's query and never with headers.
    BackstageError::Unreachable(err.without_url().to_string())
}

impl Backstage {
    pub fn new(url: &str, http: reqwest::Client) -> Self {
        Self {
            url: url.trim_end_matches('/').to_owned(),
            http,
        }
    }

    /// The entity `kind/namespace/name`; `None` when the catalog has none.
    pub async fn entity(
        &self,
        kind: &str,
        namespace: &str,
        name: &str,
        token: &str,
    ) -> Result<Option<Value>, BackstageError> {
        let url = format!(
            "{}/api/catalog/entities/by-name/{kind}/{namespace}/{name}",
            self.url
        );
        let response = self
            .http
            .get(url)
            .bearer_auth(token)
            .send()
            .await
            .map_err(unreachable)?;
        match response.status() {
            StatusCode::OK => response.json().await.map(Some).map_err(unreachable),
            StatusCode::NOT_FOUND => Ok(None),
            StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN => Err(BackstageError::Refused),
            status => Err(BackstageError::Unexpected(format!(
                "{status} to the catalog lookup"
            ))),
        }
    }

    /// What the user whose `token` this is stands for: itself and its groups (the `ent`
    /// claim of `GET /api/auth/v1/userinfo`; Backstage's user tokens carry none).
    pub async fn ownership(&self, token: &str) -> Result<Vec<String>, BackstageError> {
        let response = self
            .http
            .get(format!("{}/api/auth/v1/userinfo", self.url))
            .bearer_auth(token)
            .send()
            .await
            .map_err(unreachable)?;
        match response.status() {
            StatusCode::OK => {
                let body: Value = response.json().await.map_err(unreachable)?;
                let refs = body["claims"]["ent"].as_array().ok_or_else(|| {
                    BackstageError::Unexpected("user info without `claims.ent`".to_owned())
                })?;
                Ok(refs
                    .iter()
                    .filter_map(Value::as_str)
                    .map(str::to_owned)
                    .collect())
            }
            StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN => Err(BackstageError::Refused),
            status => Err(BackstageError::Unexpected(format!(
                "{status} to the user info"
            ))),
        }
    }

    /// Moves the ingestor's next run to now.
    pub async fn trigger_ingestor(&self, token: &str) -> Result<Trigger, BackstageError> {
        let url = format!(
            "{}/api/catalog/.backstage/scheduler/v1/tasks/{INGESTOR_TASK}/trigger",
            self.url
        );
        let response = self
            .http
            .post(url)
            .bearer_auth(token)
            .send()
            .await
            .map_err(unreachable)?;
        match response.status() {
            status if status.is_success() => Ok(Trigger::Started),
            StatusCode::CONFLICT => Ok(Trigger::AlreadyRunning),
            StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN => Err(BackstageError::Refused),
            StatusCode::NOT_FOUND => Err(BackstageError::NoSuchTask),
            status => Err(BackstageError::Unexpected(format!(
                "{status} to the trigger"
            ))),
        }
    }
}
