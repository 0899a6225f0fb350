//! The Pipelines tab, served in pieces of one derivation ([`tower_shared::pipelines`], made
//! once per change of the service): `GET /api/pipelines?service=NAME` — a page of runs,
//! newest first, filtered by `pipeline` and `status`, `limit` long, `continue` from the
//! previous page's `next` — and `GET /api/pipelines/run?service=NAME&run=RUN` — one run's
//! graph of tasks.

use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::Response;
use tower_shared::api::{PipelineRunAnswer, PipelineRunsAnswer};
use tower_shared::pipelines::{page, Cursor, Filter, Outcome, Pipelines};

use std::sync::Arc;

use super::params::{self, Query};
use super::ApiError;
use crate::state::AppState;
use crate::views::View;

/// Runs per page unless `limit` says otherwise, and the most a page holds.
const PAGE: u32 = 25;
const MOST: u32 = 100;

/// `GET /api/pipelines`.
pub async fn runs(
    State(state): State<AppState>,
    query: Query,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let (service, pipelines) = pipelines(&state, &query)?;
    let filter = Filter {
        pipeline: params::optional_dns_label(&query, "pipeline")?.map(str::to_owned),
        outcome: match query.get("status") {
            None => None,
            Some(word) => Some(
                Outcome::parse(word)
                    .filter(|o| Outcome::OF_RUNS.contains(o))
                    .ok_or_else(|| {
                        let words: Vec<&str> =
                            Outcome::OF_RUNS.iter().map(|o| o.as_str()).collect();
                        ApiError::bad(
                            "status",
                            format!("`status` must be one of {}, not {word:?}", words.join(", ")),
                        )
                    })?,
            ),
        },
    };
    let limit = params::number(&query, "limit", 1..=MOST, PAGE)?;
    let after = match query.get("continue") {
        None => None,
        Some(token) => Some(Cursor::decode(token).ok_or_else(|| {
            ApiError::bad(
                "continue",
                format!("`continue` must be a page's `next` as Tower gave it, not {token:?}"),
            )
        })?),
    };
    let (runs, next) = page(
        &pipelines.runs,
        &filter,
        after.as_ref(),
        usize::try_from(limit).unwrap_or(usize::MAX),
    );
    let answer = PipelineRunsAnswer {
        service: service.to_owned(),
        namespace: pipelines.namespace.clone(),
        pipelines: pipelines.pipeline_names(),
        total: pipelines.runs.iter().filter(|r| filter.accepts(r)).count(),
        runs: runs.into_iter().cloned().collect(),
        next: next.map(|c| c.encode()),
        health: state.source.derived().health.clone(),
    };
    Ok(View::lazy(&answer).respond(&headers).await)
}

/// `GET /api/pipelines/run`.
pub async fn run(
    State(state): State<AppState>,
    query: Query,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let (service, pipelines) = pipelines(&state, &query)?;
    let name = params::required(&query, "run")?;
    let graph = pipelines.graph(name).ok_or_else(|| ApiError::Unknown {
        field: "run",
        message: format!(
            "Tower sees no PipelineRun called {name:?} in {} (the Tekton pruner removes old runs)",
            pipelines.namespace
        ),
    })?;
    let answer = PipelineRunAnswer {
        service: service.to_owned(),
        graph: graph.clone(),
        health: state.source.derived().health.clone(),
    };
    Ok(View::lazy(&answer).respond(&headers).await)
}

/// The `service` parameter and its runs; 404 naming it when Tower does not know it.
fn pipelines<'q>(
    state: &AppState,
    query: &'q Query,
) -> Result<(&'q str, Arc<Pipelines>), ApiError> {
    let service = params::dns_label(query, "service")?;
    let pipelines = state
        .source
        .service_pipelines(service)
        .ok_or_else(|| ApiError::Unknown {
            field: "service",
            message: format!("Tower knows no service called {service}"),
        })?;
    Ok((service, pipelines))
}
