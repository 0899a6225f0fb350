//! The Pull requests tab, served in pages of one derivation ([`tower_shared::pulls`], made
//! once per change of the service): `GET /api/pulls?service=NAME` — its pull requests,
//! newest first, `limit` long, `continue` from the previous page's `next`. Asking also puts
//! the service's repositories first in the GitHub poller's queue, and has the reviews and
//! checks of the pull requests on the page read.

use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::Response;
use tower_shared::api::PullsAnswer;
use tower_shared::pulls::{page, Cursor, Pulls};

use super::params::{self, Query, ServiceName};
use super::ApiError;
use crate::state::AppState;
use crate::views::View;

/// `GET /api/pulls`.
pub async fn get(
    State(state): State<AppState>,
    ServiceName(service): ServiceName,
    query: Query,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let (limit, after) = params::paging(&query, Cursor::decode)?;
    let derived = state.source.derived();
    let pulls = state
        .source
        .tabs()
        .answer::<Pulls>(&derived, &service)
        .ok_or_else(|| ApiError::no_service("service", &service))?;
    if let (Some(live), Some(github)) = (&state.live, &state.github) {
        for repo in &pulls.repos {
            live.want_repo(&format!("{}/{repo}", github.owner()));
        }
    }
    let (shown, next) = page(&pulls.pulls, after.as_ref(), limit);
    if let Some(live) = &state.live {
        // What the page shows is what is worth a read of reviews and checks.
        live.want_pull_details(
            shown
                .iter()
                .map(|pr| (pr.repo.clone(), pr.number, pr.head_sha.clone())),
        );
    }
    let answer = PullsAnswer {
        service: service.clone(),
        repos: pulls.repos.clone(),
        read: pulls.read,
        total: pulls.pulls.len(),
        pulls: shown.into_iter().cloned().collect(),
        next: next.map(|c| c.encode()),
        health: derived.health.clone(),
    };
    Ok(View::lazy(&answer).respond(&headers).await)
}
