//! View helpers the tabs share.

use chrono::{DateTime, Utc};
use leptos::prelude::*;
use tower_shared::tekton::RunStatus;
use tower_shared::time::compact_duration;

/// "✔ Succeeded" — status always as icon and word, never colour alone.
pub fn run_status_label(status: RunStatus) -> (&'static str, &'static str) {
    match status {
        RunStatus::Succeeded => ("status-ok", "✔ Succeeded"),
        RunStatus::Failed => ("status-failed", "✖ Failed"),
        RunStatus::Running => ("status-running", "◌ Running"),
    }
}

/// How long a run took (or has been running), in words; "unknown" without a start.
pub fn run_duration(
    started: Option<DateTime<Utc>>,
    finished: Option<DateTime<Utc>>,
    now: DateTime<Utc>,
) -> String {
    match (started, finished) {
        (Some(start), Some(end)) => compact_duration((end - start).num_seconds()),
        (Some(start), None) => format!("{} so far", compact_duration((now - start).num_seconds())),
        _ => "unknown".to_owned(),
    }
}

/// "✖ Tower's backend answered 503: …" — why a page has no data, announced to screen readers.
pub fn error_alert(err: &crate::api::ApiError) -> AnyView {
    view! { <p class="state error" role="alert">"✖ " {err.to_string()}</p> }.into_any()
}

/// A table's header row, one `<th scope="col">` per column.
pub fn header_row(columns: &'static [&'static str]) -> impl IntoView {
    view! {
        <thead>
            <tr>{columns.iter().map(|c| view! { <th scope="col">{*c}</th> }).collect_view()}</tr>
        </thead>
    }
}
