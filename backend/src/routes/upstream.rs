//! What several routes ask of the same upstreams, in one place: GitHub (the configured
//! client, a caller's read budget, its errors in the API's words, the one writer), the
//! clusters' logs, and a service's part of the snapshot.

use axum::body::Body;
use axum::http::header;
use axum::response::{IntoResponse, Response};
use axum::Extension;
use tower_shared::snapshot::Snapshot;

use super::ApiError;
use crate::auth::Caller;
use crate::gitops::{WriteError, Writer};
use crate::live::github::{GitHub, GitHubError};
use crate::live::logs::LogError;
use crate::state::AppState;

pub(super) fn github(state: &AppState) -> Result<&GitHub, ApiError> {
    state.github.as_ref().ok_or_else(|| {
        ApiError::unavailable("Tower has no GitHub configured (see `github` in tower.yaml)")
    })
}

/// Takes one GitHub-backed read from the caller's budget ([`crate::auth::Gate::github_reads`]),
/// once the request is known to be one Tower may answer.
pub(super) fn spend_read(
    state: &AppState,
    caller: Option<&Extension<Caller>>,
) -> Result<(), ApiError> {
    let subject = caller.map_or("anonymous", |c| c.subject.as_str());
    state
        .gate
        .github_reads
        .take(subject)
        .map_err(|wait| ApiError::TooMany {
            message: format!(
                "{subject} has asked about GitHub {burst} times in quick succession; try again in {wait} s",
                burst = crate::auth::GITHUB_READ_BURST
            ),
            retry_after_secs: wait,
        })
}

pub(super) fn from_github(err: GitHubError, field: &'static str) -> ApiError {
    match err {
        GitHubError::Status { status: 404, .. } => ApiError::Unknown {
            field,
            message: "GitHub has no such repository (or Tower may not read it)".to_owned(),
        },
        GitHubError::RateLimited {
            until,
            retry_after_secs,
        } => ApiError::Unavailable {
            message: format!("GitHub's rate limit is spent until {until}"),
            retry_after_secs: Some(retry_after_secs),
        },
        other => ApiError::Upstream {
            message: other.to_string(),
        },
    }
}

pub(super) fn upstream(err: WriteError) -> ApiError {
    match err {
        WriteError::Stale { .. } => ApiError::Conflict {
            field: "seen",
            message: err.to_string(),
        },
        WriteError::NotTowers { .. } => ApiError::Conflict {
            field: "branch",
            message: err.to_string(),
        },
        WriteError::AlreadyProposed { .. } => ApiError::Conflict {
            field: "pull",
            message: err.to_string(),
        },
        WriteError::TooMany { wait, .. } => ApiError::TooMany {
            message: err.to_string(),
            retry_after_secs: wait,
        },
        other => ApiError::Upstream {
            message: other.to_string(),
        },
    }
}

/// The GitHub writer of `state`, taking turns with other replicas through its database and
/// charging each caller's writes to their budget ([`crate::auth::Gate::github_writes`]).
pub(super) fn writer(state: &AppState) -> Result<Writer, ApiError> {
    github(state).map(|github| {
        Writer::new(github)
            .coordinated(&state.history)
            .charged(state.gate.github_writes.clone())
    })
}

/// A Git blob sha as GitHub gives it: 7 to 64 lowercase hex (the document's `BlobSha`).
pub(super) fn check_sha(value: &str, field: &'static str) -> Result<(), ApiError> {
    let fits = (7..=64).contains(&value.len())
        && value
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b));
    if fits {
        Ok(())
    } else {
        Err(ApiError::bad(
            field,
            format!("{field} must be the file's blob sha from the preview (7 to 64 lowercase hex)"),
        ))
    }
}

/// The service's part of the snapshot, or 404 naming `service`.
pub(super) fn service_part(
    derived: &crate::derived::Derived,
    service: &str,
) -> Result<Snapshot, ApiError> {
    if !derived.knows(service) {
        return Err(ApiError::no_service("service", service));
    }
    Ok(derived.service(service))
}

/// How a log route names what it could not read: a pod gone, a container not started
/// (the field, and the message from the cluster's reason).
pub(super) struct Unread<'a> {
    pub gone: (&'static str, String),
    pub not_started: (&'static str, &'a (dyn Fn(String) -> String + Sync)),
}

/// Who asks for a log of which service, through which route ([`crate::access::may_see`]).
pub(super) struct Reader<'a> {
    pub caller: Option<&'a Caller>,
    pub headers: &'a axum::http::HeaderMap,
    pub service: &'a str,
    pub route: &'static str,
}

/// The log of `(namespace, pod, container)` on `cluster` (the control plane when `None`)
/// as a plain-text answer, followed when `follow`; what could not be read said as `unread`
/// says.
pub(super) async fn log_of(
    state: &AppState,
    reader: Reader<'_>,
    cluster: Option<&str>,
    target: (&str, &str, Option<&str>),
    follow: bool,
    unread: Unread<'_>,
) -> Result<Response, ApiError> {
    let live = state.live.as_ref().ok_or_else(|| {
        ApiError::unavailable("Tower is serving a snapshot file: logs are read only from clusters")
    })?;
    crate::access::may_see(
        state,
        reader.caller,
        reader.headers,
        reader.service,
        reader.route,
    )
    .await?;
    let cluster = cluster.unwrap_or(&live.config().control_plane_cluster);
    let subject = reader.caller.map_or("anonymous", |c| c.subject.as_str());
    let chunks = live
        .pod_log(cluster, target, follow, subject)
        .await
        .map_err(|err| match err {
            LogError::Gone => ApiError::Gone {
                field: unread.gone.0,
                message: unread.gone.1,
            },
            LogError::NotStarted(why) => ApiError::NotYet {
                field: unread.not_started.0,
                message: (unread.not_started.1)(why),
            },
            LogError::Busy => ApiError::Unavailable {
                message: err.to_string(),
                retry_after_secs: Some(5),
            },
            LogError::CallerBusy(_) => ApiError::TooMany {
                message: err.to_string(),
                retry_after_secs: 5,
            },
            LogError::Refused(why) | LogError::Unreachable(why) => {
                ApiError::Upstream { message: why }
            }
        })?;
    let mut response = (
        [
            (header::CONTENT_TYPE, "text/plain; charset=utf-8"),
            (header::CACHE_CONTROL, "no-store"),
        ],
        Body::from_stream(chunks),
    )
        .into_response();
    // A followed log goes out line by line; a whole one may be compressed.
    if follow {
        response.extensions_mut().insert(crate::app::Unbuffered);
    }
    Ok(response)
}
