//! Routes answered from GitHub: a repo's pull requests, the pending tenant requests, one
//! XR's request PR, and an app's `cicd.yaml`.

use axum::extract::State;
use axum::{Extension, Json};
use serde_json::Value;
use tower_shared::api::{CicdConfig, PendingRequests, PullRequests, RequestPr};
use tower_shared::cicd::first_environment;
use tower_shared::github::PullRequest;
use tower_shared::hangar::{self, parse_request_title};

use super::params::{self, Query};
use super::upstream::{from_github, github, spend_read};
use super::ApiError;
use crate::auth::Caller;
use crate::state::AppState;

/// The repository a GitHub route may read, as `owner/name` in the spelling Tower caches it
/// under: only the configured owner's (in any letter case), and only a tenants repository
/// or one Hangar's rules give a known service. Anything else is refused before GitHub is
/// asked, so a signed-in user cannot spend Tower's token or fill its cache.
fn readable_repo(state: &AppState, query: &Query) -> Result<String, ApiError> {
    let github = github(state)?;
    let asked = params::repo(query)?;
    let (owner, name) = asked.split_once('/').unwrap_or((&asked, ""));
    if !owner.eq_ignore_ascii_case(github.owner()) {
        return Err(ApiError::Unknown {
            field: "owner",
            message: format!(
                "Tower reads only {}'s repositories, not {owner:?}'s",
                github.owner()
            ),
        });
    }
    // GitHub's names are case-insensitive: one spelling, one cache entry.
    let name = name.to_ascii_lowercase();
    let repo = format!("{}/{name}", github.owner());
    let tenants = state
        .live
        .as_ref()
        .map(crate::live::Live::tenants_repos)
        .unwrap_or_default();
    let is_tenants = tenants.iter().any(|t| t.eq_ignore_ascii_case(&repo));
    if is_tenants || hangar::is_known_repo(&name, |s| state.source.derived().knows(s)) {
        Ok(repo)
    } else {
        Err(ApiError::Unknown {
            field: "repo",
            message: format!(
                "{repo} is neither a tenants repository nor a repository of a service Tower knows"
            ),
        })
    }
}

async fn pulls_of(state: &AppState, repo: &str) -> Result<Vec<PullRequest>, ApiError> {
    github(state)?
        .pull_requests(repo)
        .await
        .map(|pulls| pulls.as_ref().clone())
        .map_err(|err| from_github(err, "repo"))
}

/// `GET /pull-requests?owner=&repo=`: every PR of the repo, newest first.
pub async fn pull_requests(
    State(state): State<AppState>,
    caller: Option<Extension<Caller>>,
    query: Query,
) -> Result<Json<PullRequests>, ApiError> {
    let repo = readable_repo(&state, &query)?;
    spend_read(&state, caller.as_ref())?;
    let pull_requests = pulls_of(&state, &repo).await?;
    Ok(Json(PullRequests {
        repo,
        pull_requests,
    }))
}

fn request_of(pr: &PullRequest) -> Option<RequestPr> {
    let title = parse_request_title(&pr.title)?;
    Some(RequestPr {
        kind: title.kind,
        name: title.name.to_owned(),
        pull_request: pr.clone(),
    })
}

/// `GET /pending-requests?owner=&repo=`: open request PRs in a tenants repo, and those
/// merged in the last 30 minutes.
pub async fn pending_requests(
    State(state): State<AppState>,
    caller: Option<Extension<Caller>>,
    query: Query,
) -> Result<Json<PendingRequests>, ApiError> {
    let repo = readable_repo(&state, &query)?;
    spend_read(&state, caller.as_ref())?;
    let now = state.clock().now();
    let requests = pulls_of(&state, &repo)
        .await?
        .iter()
        .filter(|pr| hangar::is_pending_request(pr, now))
        .filter_map(request_of)
        .collect();
    Ok(Json(PendingRequests {
        repo,
        now,
        requests,
    }))
}

/// `GET /request-pr?owner=&repo=&kind=&name=`: the request PR for one XR, found by its
/// title (a merged one first, then an open one, then the newest).
pub async fn request_pr(
    State(state): State<AppState>,
    caller: Option<Extension<Caller>>,
    query: Query,
) -> Result<Json<RequestPr>, ApiError> {
    let repo = readable_repo(&state, &query)?;
    let kind = params::kind(&query, "kind")?;
    let name = params::dns_label(&query, "name")?;
    spend_read(&state, caller.as_ref())?;
    let pulls = pulls_of(&state, &repo).await?;
    hangar::request_pr(&pulls, name, Some(kind))
        .and_then(request_of)
        .map(Json)
        .ok_or_else(|| ApiError::Unknown {
            field: "name",
            message: format!("{repo} has no request PR for {} {name}", kind.as_str()),
        })
}

/// `GET /config/cicd?app=`: the app's `cicd.yaml`, parsed, read from the repo and path its
/// scaffold writes it to.
pub async fn cicd(
    State(state): State<AppState>,
    caller: Option<Extension<Caller>>,
    query: Query,
) -> Result<Json<CicdConfig>, ApiError> {
    let app = params::dns_label(&query, "app")?;
    let github = github(&state)?;
    let derived = state.source.derived();
    if !derived.knows(app) {
        return Err(ApiError::no_service("app", app));
    }
    spend_read(&state, caller.as_ref())?;
    let (repo, path) =
        hangar::cicd_location(derived.service(app).control_plane(), github.owner(), app);
    let text = github
        .file(&repo, &path)
        .await
        .map_err(|err| from_github(err, "app"))?
        .ok_or_else(|| ApiError::Unknown {
            field: "app",
            message: format!("{repo} has no {path} (yet)"),
        })?;
    let config: Value = serde_yaml_ng::from_str(&text).map_err(|err| ApiError::Upstream {
        message: format!("{repo}/{path} is not YAML: {err}"),
    })?;
    let environments = config
        .get("deploy")
        .and_then(|d| d.get("environments"))
        .cloned();
    Ok(Json(CicdConfig {
        app: app.to_owned(),
        first_environment: first_environment(Some(&text)),
        repo,
        path,
        config,
        environments,
    }))
}
