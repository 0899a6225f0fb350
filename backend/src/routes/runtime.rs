//! `GET /api/runtime?service=NAME` — the Runtime tab: where the app runs in each environment
//! (its Rollout's pods, the autoscaler, recent Events — from the service's part of the
//! snapshot) and its objectives from Prometheus' figures, asked now within the configured
//! deadline ([`crate::prometheus`]); when Prometheus does not answer, the last figures with
//! since when it has not. `GET /api/runtime/log?service&environment&pod[&follow]` — one of
//! those pods' log, read from its cluster on request (as the Pipelines tab's step logs).

use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::Response;
use axum::Extension;
use tower_shared::api::{PrometheusAnswers, PrometheusState, RuntimeAnswer, RuntimeEnvironment};
use tower_shared::runtime::{self, Runtime};

use super::params::{self, Query, ServiceName};
use super::upstream::{log_of, Reader, Unread};
use super::ApiError;
use crate::auth::Caller;
use crate::state::AppState;
use crate::views::View;

pub async fn get(
    State(state): State<AppState>,
    ServiceName(service): ServiceName,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let derived = state.source.derived();
    let known = state
        .source
        .tabs()
        .answer::<Runtime>(&derived, &service)
        .ok_or_else(|| ApiError::no_service("service", &service))?;
    let now = state.clock().now();
    let Runtime { places, targets } = Runtime::clone(&known);
    let (measured, prometheus) = match &state.prometheus {
        Some(prometheus) => {
            let namespaces: Vec<String> = places.iter().map(|p| p.namespace.clone()).collect();
            let measured = prometheus.measure(&namespaces, now).await;
            (Some(measured), prometheus.state())
        }
        None => (
            None,
            PrometheusState {
                state: PrometheusAnswers::NotConfigured,
                message: Some("Tower's config names no Prometheus (`prometheus.url`)".to_owned()),
                since: None,
            },
        ),
    };
    let environments = places
        .into_iter()
        .enumerate()
        .map(|(i, place)| {
            let found = measured.as_ref().and_then(|m| m.get(i));
            let slo = found.and_then(|m| {
                let readings = m.readings.as_ref()?;
                Some(runtime::slo(
                    readings,
                    &targets,
                    &place.arrivals,
                    m.measured_at.unwrap_or(now),
                ))
            });
            RuntimeEnvironment {
                measured_at: found.and_then(|m| m.measured_at),
                slo,
                place,
            }
        })
        .collect();
    let answer = RuntimeAnswer {
        service,
        environments,
        prometheus,
        health: derived.health.clone(),
    };
    Ok(View::lazy(&answer).respond(&headers).await)
}

/// `GET /api/runtime/log`: the log of one of the app's Rollout's pods in `environment` —
/// only a pod the Runtime tab shows, so no other pod's log is ever read through it.
pub async fn log(
    State(state): State<AppState>,
    caller: Option<Extension<Caller>>,
    headers: HeaderMap,
    ServiceName(service): ServiceName,
    query: Query,
) -> Result<Response, ApiError> {
    let environment = params::dns_label(&query, "environment")?;
    let pod = params::required(&query, "pod")?;
    let follow = params::flag(&query, "follow")?;
    let known = state
        .source
        .tabs()
        .answer::<Runtime>(&state.source.derived(), &service)
        .ok_or_else(|| ApiError::no_service("service", &service))?;
    let place = known
        .places
        .iter()
        .find(|p| p.environment == environment)
        .ok_or_else(|| ApiError::Unknown {
            field: "environment",
            message: format!("{service} runs in no environment called {environment:?}"),
        })?;
    if !place.pods.iter().any(|p| p.name == pod) {
        return Err(ApiError::Unknown {
            field: "pod",
            message: format!(
                "{service}'s Rollout has no pod called {pod:?} in {environment} (Tower shows \
                 only the pods it sees now)"
            ),
        });
    }
    let cluster = place.cluster.as_deref().ok_or_else(|| {
        ApiError::unavailable(format!("Tower has read nothing of {environment} yet"))
    })?;
    let not_started =
        |why: String| format!("The pod {pod} has not started, so there is no log yet: {why}");
    let unread = Unread {
        gone: (
            "pod",
            format!("The pod {pod} is gone: Kubernetes replaced it, and its logs with it"),
        ),
        not_started: ("pod", &not_started),
    };
    let target = (place.namespace.as_str(), pod, None);
    let reader = Reader {
        caller: caller.as_deref(),
        headers: &headers,
        service: &service,
        route: "/api/runtime/log",
    };
    log_of(&state, reader, Some(cluster), target, follow, unread).await
}
