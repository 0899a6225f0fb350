//! Provisioning history: the newest runs, recording one (idempotent on service + start),
//! and typical step durations.

use axum::extract::State;
use axum::http::StatusCode;
use axum::{Extension, Json};
use tower_shared::api::{RecordedRuns, TypicalDurations, TypicalStep};
use tower_shared::hangar::ServiceKind;
use tower_shared::provisioning::{plan, StepId, Typicals};
use tower_shared::snapshot::RecordedRun;

use super::params::{self, check_dns_label, JsonBody, Query};
use super::ApiError;
use crate::auth::Caller;
use crate::history::{HistoryError, Recorded};
use crate::state::AppState;

/// How far ahead of Tower's clock a run may say it finished (the caller's clock may run a
/// little fast).
const CLOCK_SKEW: chrono::TimeDelta = chrono::TimeDelta::minutes(5);
/// The oldest start a run may claim.
const OLDEST: chrono::TimeDelta = chrono::TimeDelta::days(10 * 366);
/// The longest a provisioning run may have taken (Tower tracks one for a day).
const LONGEST: chrono::TimeDelta = chrono::TimeDelta::days(7);
/// The runs a caller may record for one service: a service is provisioned once, perhaps
/// again after a rebuild — never dozens of times.
pub const MOST_RUNS_PER_SERVICE: u32 = 5;

/// Refuses times no real run has: a finish in the future (it would stay "newest" and pin the
/// typical durations), a start ten years back, a run of over a week, a step longer than
/// the run. `Err` names the field.
fn check_times(run: &RecordedRun, now: chrono::DateTime<chrono::Utc>) -> Result<(), ApiError> {
    if run.finished_at < run.started_at {
        return Err(ApiError::bad(
            "finishedAt",
            "`finishedAt` is before `startedAt`",
        ));
    }
    if run.finished_at > now + CLOCK_SKEW {
        return Err(ApiError::bad(
            "finishedAt",
            format!("`finishedAt` is in the future (Tower's clock says {now})"),
        ));
    }
    if run.started_at < now - OLDEST {
        return Err(ApiError::bad(
            "startedAt",
            "`startedAt` is more than ten years ago",
        ));
    }
    let took = run.finished_at - run.started_at;
    if took > LONGEST {
        return Err(ApiError::bad(
            "finishedAt",
            "the run took more than 7 days, which no provisioning does",
        ));
    }
    let longest_step = u64::try_from(took.num_seconds()).unwrap_or(0);
    if let Some((step, seconds)) = run.steps.iter().find(|(_, s)| **s > longest_step) {
        return Err(ApiError::BadBody {
            field: format!("steps.{step}"),
            message: format!(
                "{step} took {seconds} s, longer than the whole run ({longest_step} s)"
            ),
        });
    }
    Ok(())
}

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
/// stored run when one of the same service and start was there first. A tool records runs
/// of any service; a person only of a service Tower observes. At most
/// [`MOST_RUNS_PER_SERVICE`] runs per service (409 naming `service` after).
pub async fn record(
    State(state): State<AppState>,
    caller: Option<Extension<Caller>>,
    JsonBody(body): JsonBody,
) -> Result<(StatusCode, Json<RecordedRun>), ApiError> {
    let run: RecordedRun = super::params::json_body(&body, "the run")?;
    check_dns_label(&run.service, "service")?;
    if ServiceKind::from_kind(&run.kind).is_none() {
        return Err(ApiError::bad(
            "kind",
            format!("{:?} is not a Hangar kind", run.kind),
        ));
    }
    if let Some(step) = run.steps.keys().find(|s| StepId::from_id(s).is_none()) {
        return Err(ApiError::BadBody {
            field: format!("steps.{step}"),
            message: format!("{step:?} is not a provisioning step"),
        });
    }
    let now = state.clock().now();
    check_times(&run, now)?;
    let tool = caller
        .as_ref()
        .is_some_and(|c| c.via == crate::auth::Via::Tool);
    if !tool && !state.source.derived().knows(&run.service) {
        return Err(ApiError::Unknown {
            field: "service",
            message: format!(
                "Tower observes no service called {:?}: only a tool's token records runs of \
                 services Tower does not see",
                run.service
            ),
        });
    }
    let by = caller.map_or_else(|| "anonymous".to_owned(), |c| c.subject.clone());
    let (stored, how) = state
        .history
        .record(&run, &by, now, Some(MOST_RUNS_PER_SERVICE))
        .await
        .map_err(unavailable)?;
    if how == Recorded::Full {
        return Err(ApiError::Conflict {
            field: "service",
            message: format!(
                "{} has {MOST_RUNS_PER_SERVICE} recorded runs already, as many as a service may",
                run.service
            ),
        });
    }
    if how == Recorded::Inserted {
        if let Some(live) = &state.live {
            live.reload_history(Some(&run.service)).await;
        }
    }
    let status = match how {
        Recorded::Inserted => StatusCode::CREATED,
        Recorded::AlreadyThere | Recorded::Full => StatusCode::OK,
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
