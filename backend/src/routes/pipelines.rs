//! The Pipelines tab, served in pieces of one derivation ([`tower_shared::pipelines`], made
//! once per change of the service): `GET /api/pipelines?service=NAME` — a page of runs,
//! newest first, filtered by `pipeline` and `status`, `limit` long, `continue` from the
//! previous page's `next` —, `GET /api/pipelines/run?service=NAME&run=RUN` — one run's
//! graph of tasks — and `GET /api/pipelines/log` — a step's log, read from the cluster on
//! request.

use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::Response;
use axum::Extension;
use tower_shared::api::{PipelineRunAnswer, PipelineRunsAnswer};
use tower_shared::pipelines::{page, Cursor, Filter, Outcome, Pipelines, RunGraph};

use std::sync::Arc;

use super::params::{self, Query, ServiceName};
use super::upstream::{log_of, Reader, Unread};
use super::ApiError;
use crate::auth::Caller;
use crate::state::AppState;
use crate::views::View;

/// `GET /api/pipelines`.
pub async fn runs(
    State(state): State<AppState>,
    ServiceName(service): ServiceName,
    query: Query,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let pipelines = pipelines(&state, &service)?;
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
    let (limit, after) = params::paging(&query, Cursor::decode)?;
    let (runs, next) = page(&pipelines.runs, &filter, after.as_ref(), limit);
    let answer = PipelineRunsAnswer {
        service: service.clone(),
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
    ServiceName(service): ServiceName,
    query: Query,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let pipelines = pipelines(&state, &service)?;
    let answer = PipelineRunAnswer {
        service: service.clone(),
        graph: graph(&pipelines, &query)?.clone(),
        health: state.source.derived().health.clone(),
    };
    Ok(View::lazy(&answer).respond(&headers).await)
}

/// `GET /api/pipelines/log?service=&run=&task=&step=[&follow=true]`: a step's container log
/// as plain text, streamed from the cluster as it comes; with `follow`, until the step ends
/// or the caller goes (which closes the upstream stream at once).
pub async fn log(
    State(state): State<AppState>,
    caller: Option<Extension<Caller>>,
    headers: HeaderMap,
    ServiceName(service): ServiceName,
    query: Query,
) -> Result<Response, ApiError> {
    let pipelines = pipelines(&state, &service)?;
    let graph = graph(&pipelines, &query)?;
    let task_name = params::required(&query, "task")?;
    let task = graph
        .tasks
        .iter()
        .find(|t| t.name == task_name)
        .ok_or_else(|| ApiError::Unknown {
            field: "task",
            message: format!("run {} has no task called {task_name:?}", graph.run.name),
        })?;
    let step_name = params::required(&query, "step")?;
    let step = task
        .steps
        .iter()
        .find(|s| s.name == step_name)
        .ok_or_else(|| ApiError::Unknown {
            field: "step",
            message: format!("task {task_name} has no step called {step_name:?}"),
        })?;
    let follow = params::flag(&query, "follow")?;
    let pod = task.pod.as_deref().ok_or_else(|| ApiError::NotYet {
        field: "task",
        message: format!("task {task_name} has no pod yet, so no log"),
    })?;
    let gone =
        format!("The pod {pod} is gone: Kubernetes removed it after the run, and its logs with it");
    let not_started =
        |why: String| format!("step {step_name} has not started, so there is no log yet: {why}");
    let target = (
        pipelines.namespace.as_str(),
        pod,
        Some(step.container.as_str()),
    );
    let unread = Unread {
        gone: ("task", gone),
        not_started: ("step", &not_started),
    };
    let reader = Reader {
        caller: caller.as_deref(),
        headers: &headers,
        service: &service,
        route: "/api/pipelines/log",
    };
    log_of(&state, reader, None, target, follow, unread).await
}

/// The `run` parameter's graph; 404 naming it when the service has no such run.
fn graph<'p>(pipelines: &'p Pipelines, query: &Query) -> Result<&'p RunGraph, ApiError> {
    let name = params::required(query, "run")?;
    pipelines.graph(name).ok_or_else(|| ApiError::Unknown {
        field: "run",
        message: format!(
            "Tower sees no PipelineRun called {name:?} in {} (the Tekton pruner removes old runs)",
            pipelines.namespace
        ),
    })
}

/// The service's runs; 404 naming it when Tower does not know it.
fn pipelines(state: &AppState, service: &str) -> Result<Arc<Pipelines>, ApiError> {
    let pipelines = state
        .source
        .tabs()
        .answer::<Pipelines>(&state.source.derived(), service)
        .ok_or_else(|| ApiError::no_service("service", service))?;
    Ok(pipelines)
}
