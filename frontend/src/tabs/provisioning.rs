//! Provisioning: the Services tab (the in-flight strip, pending, stalled and finished
//! services) and one service's Provisioning tab (every step against its typical duration,
//! the live events log, what gets created, the catalog refresh, recently provisioned).
//!
//! The Services tab reads the server's summary (`/api/summary`), the Provisioning tab the
//! service's progress (`/api/provisioning/service`), both derived by the backend once per
//! change. Both tell time on Tower's clock ([`crate::clock`]): durations and time left tick
//! on their own.

use chrono::{DateTime, Utc};
use leptos::prelude::*;
use tower_shared::provisioning::{
    remaining_sec, summary_remaining_sec, Group, ResourceState, ServiceSummary, Step, StepId,
    StepStatus, TypicalSource,
};
use tower_shared::time::compact_duration;

use crate::api::{self, ApiError};
use crate::nav::{tab_href, Tab};
use crate::ui::HealthNotice;

/// "✔ Done" — status as icon and word, never colour alone.
fn step_label(status: StepStatus) -> (&'static str, &'static str) {
    match status {
        StepStatus::Done => ("step-done", "✔ Done"),
        StepStatus::Running => ("step-running", "◌ Running"),
        StepStatus::Waiting => ("step-waiting", "… Waiting"),
        StepStatus::Failed => ("step-failed", "✖ Failed"),
    }
}

/// "about 12m 00s left", "finishing", or why there is no end in sight.
fn time_left(remaining: Option<u64>) -> String {
    match remaining {
        Some(0) => "finishing".to_owned(),
        Some(sec) => format!(
            "about {} left",
            compact_duration(i64::try_from(sec).unwrap_or(i64::MAX))
        ),
        None => "stopped: a step failed".to_owned(),
    }
}

/// One row of the strip: name, segmented bar, current step, time remaining (ticking).
fn strip_row(service: &ServiceSummary, now: ReadSignal<DateTime<Utc>>) -> impl IntoView {
    let href = tab_href(Tab::Provisioning, &service.name, None);
    let done = service
        .steps
        .iter()
        .filter(|s| s.status == StepStatus::Done)
        .count();
    let segments = service
        .steps
        .iter()
        .map(|step| {
            let (class, word) = step_label(step.status);
            let label = format!("{}: {word}", step.title);
            let hidden = label.clone();
            view! { <li class=format!("segment {class}") title=label><span class="visually-hidden">{hidden}</span></li> }
        })
        .collect_view();
    let current = service
        .steps
        .iter()
        .find(|s| s.status != StepStatus::Done)
        .map_or_else(
            || "All steps done".to_owned(),
            |s| format!("{} — {}", s.title, step_label(s.status).1),
        );
    let kind = service.kind.map_or("kind unknown", |k| k.as_str());
    let remaining = {
        let service = service.clone();
        move || time_left(summary_remaining_sec(&service, now.get()))
    };
    view! {
        <li class="strip-row">
            <a href=href class="strip-name">{service.name.clone()}</a>
            <span class="tag">{kind}</span>
            <ol class="segments" aria-label=format!("{done} of {} steps done", service.steps.len())>
                {segments}
            </ol>
            <span class="current">{current}</span>
            <span class="remaining">{remaining}</span>
        </li>
    }
}

fn group_list(
    title: &'static str,
    class: &'static str,
    services: Vec<&ServiceSummary>,
    empty: &'static str,
    now: ReadSignal<DateTime<Utc>>,
) -> impl IntoView {
    let rows = services.iter().map(|s| strip_row(s, now)).collect_view();
    let count = services.len();
    view! {
        <section class=format!("group {class}") aria-label=title>
            <h3>{title} " " <span class="count">{format!("({count})")}</span></h3>
            {if count == 0 {
                view! { <p class="state empty">{empty}</p> }.into_any()
            } else {
                view! { <ul class="strip">{rows}</ul> }.into_any()
            }}
        </section>
    }
}

/// The Services tab.
#[component]
pub fn ServicesTab() -> impl IntoView {
    let feed = crate::feed::feed();
    let now = feed.now;
    move || {
        feed.summary.get().map(|result| match result {
            Ok(answer) => {
                let by = |group: Group| -> Vec<&ServiceSummary> {
                    answer
                        .services
                        .iter()
                        .filter(|s| s.group == group)
                        .collect()
                };
                let in_flight = group_list(
                    "In flight",
                    "in-flight",
                    by(Group::InFlight),
                    "Nothing is being provisioned right now.",
                    now,
                );
                let pending = group_list(
                    "Requested",
                    "pending",
                    by(Group::Pending),
                    "No open requests.",
                    now,
                );
                let stalled = group_list(
                    "Stalled",
                    "stalled",
                    by(Group::Stalled),
                    "Nothing stalled.",
                    now,
                );
                let finished = group_list(
                    "Finished in the last 15 minutes",
                    "finished",
                    by(Group::Finished),
                    "Nothing finished recently.",
                    now,
                );
                view! {
                    <HealthNotice health=answer.health.clone() now=now />
                    {in_flight}
                    {pending}
                    {stalled}
                    {finished}
                }
                .into_any()
            }
            Err(err) => crate::ui::error_alert(&err),
        })
    }
}

/// How long a step took, or has been running (ticking with `now`): its derived duration,
/// or for a running step `now` − its start.
fn step_seconds(step: &Step, now: DateTime<Utc>) -> Option<u64> {
    match (step.status, step.started_at) {
        (StepStatus::Running, Some(start)) => u64::try_from((now - start).num_seconds()).ok(),
        _ => step.duration_sec,
    }
}

/// One step of the Provisioning tab; a running step's time ticks.
fn step_item(step: &Step, now: ReadSignal<DateTime<Utc>>) -> impl IntoView {
    let (class, word) = step_label(step.status);
    let typical = format!(
        "typical {}{}",
        compact_duration(i64::try_from(step.typical_sec).unwrap_or(i64::MAX)),
        match step.typical_source {
            TypicalSource::Measured => "",
            TypicalSource::Estimate => " (estimate)",
        }
    );
    let timed = step.clone();
    let took = move || match (timed.status, step_seconds(&timed, now.get())) {
        (_, None) => "duration unknown".to_owned(),
        (StepStatus::Running, Some(sec)) => {
            format!(
                "{} so far",
                compact_duration(i64::try_from(sec).unwrap_or(i64::MAX))
            )
        }
        (_, Some(sec)) => format!(
            "took {}",
            compact_duration(i64::try_from(sec).unwrap_or(i64::MAX))
        ),
    };
    // The bar: this step's time against its typical (capped at twice the typical).
    let barred = step.clone();
    let bar = move || {
        step_seconds(&barred, now.get()).map(|sec| {
            let typical = barred.typical_sec.max(1) as f64;
            let p = ((sec as f64 / typical) * 50.0).min(100.0);
            view! {
                <span class="bar" aria-hidden="true">
                    <span class="bar-fill" style=format!("width: {p:.0}%")></span>
                    <span class="bar-typical"></span>
                </span>
            }
        })
    };
    let links = step
        .links
        .iter()
        .map(|l| view! { <a href=l.url.clone() target="_blank" rel="noopener">{l.title.to_string()}</a> })
        .collect_view();
    view! {
        <li class=format!("step {class}") data-step=step.id.as_str()>
            <span class="step-status">{word}</span>
            <span class="step-title">{step.title.to_string()}</span>
            <span class="step-time">{took} " · " {typical}</span>
            {bar}
            {step.detail.as_ref().map(|d| view! { <p class="step-detail">{d.to_string()}</p> })}
            <span class="links">{links}</span>
        </li>
    }
}

/// `[1:04]` — minutes and seconds since the first event.
fn event_time(sec: u64) -> String {
    format!("[{}:{:02}]", sec / 60, sec % 60)
}

/// The Provisioning tab of one service.
#[component]
pub fn ProvisioningTab(service: String) -> impl IntoView {
    let feed = crate::feed::feed();
    let now = feed.now;
    let changed = feed.refresh.service(service.clone());
    let provisioning = crate::feed::decoded::<tower_shared::api::ServiceProvisioningAnswer>(
        crate::feed::text_resource(move || {
            changed.track();
            api::service_provisioning(service.clone())
        }),
    );
    let recent = crate::feed::decoded::<tower_shared::api::RecordedRuns>(
        crate::feed::text_resource(move || {
            feed.refresh.history.track();
            api::recent_runs()
        }),
    );
    let (refresh_answer, set_refresh_answer) = signal(None::<Result<String, ApiError>>);
    let refresh_catalog = move |_| {
        leptos::task::spawn_local(async move {
            set_refresh_answer.set(Some(api::refresh_catalog().await));
        });
    };

    let progress = Memo::new(move |_| {
        provisioning().map(|result| result.map(|answer| (answer.progress, answer.health)))
    });
    let history = move || {
        recent().map(|result| match result {
            Ok(runs) if runs.runs.is_empty() => view! {
                <p class="state empty">"No provision recorded yet."</p>
            }
            .into_any(),
            Ok(runs) => {
                let rows = runs
                    .runs
                    .iter()
                    .map(|r| {
                        let took = compact_duration((r.finished_at - r.started_at).num_seconds());
                        view! {
                            <tr>
                                <td><a href=tab_href(Tab::Provisioning, &r.service, None)>{r.service.clone()}</a></td>
                                <td>{r.kind.clone()}</td>
                                <td>{took}</td>
                                <td>{r.finished_at.format("%Y-%m-%d %H:%M UTC").to_string()}</td>
                            </tr>
                        }
                    })
                    .collect_view();
                view! {
                    <table class="history">
                        {crate::ui::header_row(&["Service", "Type", "How long", "Finished"])}
                        <tbody>{rows}</tbody>
                    </table>
                }
                .into_any()
            }
            Err(err) => view! { <p class="state error">"✖ " {err.to_string()}</p> }.into_any(),
        })
    };

    view! {
        <h2>"Provisioning"</h2>
        <Transition fallback=|| view! { <p class="state loading">"Loading…"</p> }>
            {move || {
                progress
                    .get()
                    .map(|result| match result {
                        Err(err) => crate::ui::error_alert(&err),
                        Ok((None, _)) => view! {
                            <p class="state empty">
                                "Tower is not tracking a provision of this service: it finished more than 15 minutes ago, or is older than a day."
                            </p>
                        }
                        .into_any(),
                        Ok((Some(progress), health)) => {
                            let measured = progress
                                .steps
                                .iter()
                                .any(|s| s.typical_source == TypicalSource::Measured);
                            let legend = if measured {
                                "Typical durations: measured from recorded provisions (estimates where too few runs)"
                            } else {
                                "Typical durations: built-in estimates (too few recorded provisions yet)"
                            };
                            let catalog_waiting = progress
                                .steps
                                .iter()
                                .any(|s| s.id == StepId::Catalog && s.status != StepStatus::Done);
                            let events = progress
                                .events
                                .iter()
                                .map(|e| view! { <li><span class="event-time">{event_time(e.at_sec)}</span> " " {e.text.clone()}</li> })
                                .collect_view();
                            let created = progress
                                .created
                                .iter()
                                .map(|c| {
                                    let state = match c.state {
                                        ResourceState::Ready => "✔ Ready",
                                        ResourceState::NotReady => "◌ Not ready",
                                        ResourceState::Failed => "✖ Failed",
                                        ResourceState::NotTracked => "? Not tracked",
                                    };
                                    view! { <tr><td>{c.kind.clone()}</td><td>{c.name.clone()}</td><td>{state}</td></tr> }
                                })
                                .collect_view();
                            let group = match progress.group {
                                Group::Pending => "Requested",
                                Group::InFlight => "In flight",
                                Group::Stalled => "Stalled",
                                Group::Finished => "Finished",
                            };
                            let in_flight = progress.group == Group::InFlight;
                            let timed = progress.steps.clone();
                            let remaining = move || {
                                let now = now.get();
                                in_flight
                                    .then(|| {
                                        remaining_sec(timed.iter().map(|s| {
                                            (s.status, s.typical_sec, step_seconds(s, now))
                                        }))
                                    })
                                    .flatten()
                                    .map(|sec| format!(" · {}", time_left(Some(sec))))
                            };
                            let steps = progress.steps.iter().map(|s| step_item(s, now)).collect_view();
                            view! {
                                <HealthNotice health=health now=now />
                                <p class="summary">
                                    <span class="group">{group}</span>
                                    " · "
                                    {progress.kind.map_or("kind unknown", |k| k.as_str())}
                                    {remaining}
                                </p>
                                <p class="legend">{legend}</p>
                                <ol class="steps">{steps}</ol>
                                {catalog_waiting.then(|| view! {
                                    <p class="catalog-refresh">
                                        <button type="button" on:click=refresh_catalog>"Refresh catalog now"</button>
                                        {move || refresh_answer.get().map(|answer| match answer {
                                            Ok(message) => view! { <span role="status">{message}</span> }.into_any(),
                                            Err(err) => view! { <span role="alert" class="status-failed">{format!("Backstage refused: {err}")}</span> }.into_any(),
                                        })}
                                    </p>
                                })}
                                <section aria-label="Live events">
                                    <h3>"Live events"</h3>
                                    {if progress.events.is_empty() {
                                        view! { <p class="state empty">"No timed event yet."</p> }.into_any()
                                    } else {
                                        view! { <ol class="events">{events}</ol> }.into_any()
                                    }}
                                </section>
                                <section aria-label="What gets created">
                                    <h3>"What gets created"</h3>
                                    <table class="created">
                                        {crate::ui::header_row(&["Kind", "Name", "State"])}
                                        <tbody>{created}</tbody>
                                    </table>
                                </section>
                            }
                            .into_any()
                        }
                    })
            }}
            <section aria-label="Recently provisioned">
                <h3>"Recently provisioned"</h3>
                {history}
            </section>
        </Transition>
    }
}
