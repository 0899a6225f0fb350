//! Provisioning history: the newest runs, recording one (idempotent on service + start),
//! and typical step durations.

use axum::extract::State;
use axum::http::StatusCode;
use axum::Json;
use tower_shared::api::{RecordedRuns, TypicalDurations, TypicalStep};
use tower_shared::hangar::ServiceKind;
use tower_shared::provisioning::{plan, StepId, Typicals};
use tower_shared::snapshot::RecordedRun;

use super::params::{self, check_dns_label, JsonBody, Query};
use super::ApiError;
use crate::history::{HistoryError, Recorded};
use crate::state::AppState;

/// Who recorded a run that came in over HTTP.
const RECORDED_BY_BROWSER: &str = "browser";

fn unavailable(err: HistoryError) -> ApiError {
    tracing::warn!(error = %err, "history database");
    ApiError::unavailable("the provisioning history database is unavailable; try again")
}

/// `GET /provisioning-history/runs?limit=10`: newest first.
pub async fn runs(
    State(state): State<AppState>,
    query: Query,
) -> Result<Json<RecordedRuns>, ApiError> {
    let limit = params::number(&query, "limit", 1..=100, 10)?;
    let runs = state
        .history
        .newest(None, limit)
        .await
        .map_err(unavailable)?;
    Ok(Json(RecordedRuns { runs }))
}

/// `POST /provisioning-history/runs` with a run (`service`, `kind`, `startedAt`,
/// `finishedAt`, `steps`: seconds per step id). 201 with the run when stored; 200 with the
/// stored run when one of the same service and start was there first.
pub async fn record(
    State(state): State<AppState>,
    JsonBody(body): JsonBody,
) -> Result<(StatusCode, Json<RecordedRun>), ApiError> {
    let de = &mut serde_json::Deserializer::from_slice(&body);
    let run: RecordedRun = serde_path_to_error::deserialize(de).map_err(|err| {
        let path = err.path().to_string();
        let inner = err.into_inner();
        let message = inner.to_string();
        // A missing field is reported at its parent: name the field itself.
        let missing = message
            .strip_prefix("missing field `")
            .and_then(|rest| rest.split_once('`'))
            .map(|(name, _)| name);
        let field = match (path.as_str(), missing) {
            (".", Some(name)) => name.to_owned(),
            (".", None) => "body".to_owned(),
            (path, Some(name)) => format!("{path}.{name}"),
            (path, None) => path.to_owned(),
        };
        ApiError::BadBody {
            field,
            message: format!("the run is not valid: {message}"),
        }
    })?;
    check_dns_label(&run.service, "service")?;
    if ServiceKind::from_kind(&run.kind).is_none() {
        return Err(ApiError::bad(
            "kind",
            format!("{:?} is not a Hangar kind", run.kind),
        ));
    }
    if run.finished_at < run.started_at {
        return Err(ApiError::bad(
            "finishedAt",
            "`finishedAt` is before `startedAt`",
        ));
    }
    if let Some(step) = run.steps.keys().find(|s| StepId::from_id(s).is_none()) {
        return Err(ApiError::BadBody {
            field: format!("steps.{step}"),
            message: format!("{step:?} is not a provisioning step"),
        });
    }
    let (stored, how) = state
        .history
        .record(&run, RECORDED_BY_BROWSER, state.clock().now())
        .await
        .map_err(unavailable)?;
    if how == Recorded::Inserted {
        if let Some(live) = &state.live {
            live.reload_history(Some(&run.service)).await;
        }
    }
    let status = match how {
        Recorded::Inserted => StatusCode::CREATED,
        Recorded::AlreadyThere => StatusCode::OK,
    };
    Ok((status, Json(stored)))
}

/// `GET /provisioning-history/typical?kind=NodeJS`: each step's typical duration — the
/// median over the newest 20 runs of the kind, else of all kinds, with at least 3 values;
/// else the built-in estimate (`source` says which).
pub async fn typical(
    State(state): State<AppState>,
    query: Query,
) -> Result<Json<TypicalDurations>, ApiError> {
    let kind = params::kind(&query, "kind")?;
    let runs = state
        .history
        .typical_sample(&[Some(kind.as_str()), None])
        .await
        .map_err(unavailable)?;
    let typicals = Typicals::new(&runs);
    let steps = plan(Some(kind), false)
        .iter()
        .map(|&id| {
            let (seconds, source) = typicals.get(Some(kind), id);
            TypicalStep {
                id,
                seconds,
                source,
            }
        })
        .collect();
    Ok(Json(TypicalDurations { kind, steps }))
}
