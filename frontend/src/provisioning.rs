//! Provisioning: the Services tab (the in-flight strip, pending, stalled and finished
//! services) and one service's Provisioning tab (every step against its typical duration,
//! the live events log, what gets created, the catalog refresh, recently provisioned).
//!
//! The Services tab reads the server's derivation (`/api/provisioning`); the Provisioning
//! tab derives in the browser from the service's snapshot, so its durations tick every
//! second. Both read time as the server's clock: the browser's `now` plus the offset seen
//! at the last fetch (the demo's world clock runs fast; real clocks drift).

use chrono::{DateTime, Utc};
use leptos::prelude::*;
use tower_shared::provisioning::{
    derive_provisioning, Group, ResourceState, ServiceProgress, Step, StepId, StepStatus,
    TypicalSource,
};
use tower_shared::time::compact_duration;

use crate::api::{self, ApiError, GitHubTrouble, Health};
use crate::service::tab_href;

/// "✔ Done" — status as icon and word, never colour alone.
fn step_label(status: StepStatus) -> (&'static str, &'static str) {
    match status {
        StepStatus::Done => ("step-done", "✔ Done"),
        StepStatus::Running => ("step-running", "◌ Running"),
        StepStatus::Waiting => ("step-waiting", "… Waiting"),
        StepStatus::Failed => ("step-failed", "✖ Failed"),
    }
}

/// Seconds still to go, from typical durations: a running step's typical minus its time so
/// far (at least a minute while it runs over), plus every waiting step's typical. `None`
/// when a step failed.
pub fn remaining_sec(service: &ServiceProgress) -> Option<u64> {
    let mut total = 0;
    for step in &service.steps {
        match step.status {
            StepStatus::Done => {}
            StepStatus::Failed => return None,
            StepStatus::Running => {
                let spent = step.duration_sec.unwrap_or(0);
                total += step.typical_sec.saturating_sub(spent).max(60);
            }
            StepStatus::Waiting => total += step.typical_sec,
        }
    }
    Some(total)
}

/// The step a service is at: the first one not done.
fn current_step(service: &ServiceProgress) -> Option<&Step> {
    service.steps.iter().find(|s| s.status != StepStatus::Done)
}

/// What in the page is old or missing, in words: "Cluster dev unreachable: data from 3 min
/// ago", "GitHub rate limited: pull requests and files as last read; Tower asks again in
/// 12 min". Nothing when all is well.
#[component]
pub fn HealthNotice(health: Health, now: DateTime<Utc>) -> impl IntoView {
    let since = |at: DateTime<Utc>| compact_duration((now - at).num_seconds().max(0));
    let mut lines: Vec<String> = health
        .stale
        .iter()
        .map(|c| {
            let age = c.last_seen_at.map_or_else(
                || "of unknown age".to_owned(),
                |at| format!("from {} ago", since(at)),
            );
            format!("Cluster {} unreachable: data {age}", c.name)
        })
        .collect();
    match &health.github {
        Some(GitHubTrouble::RateLimited { until }) => lines.push(format!(
            "GitHub rate limited: pull requests and files as last read; Tower asks again in {}",
            compact_duration((*until - now).num_seconds().max(1))
        )),
        Some(GitHubTrouble::Failing { error }) => lines.push(format!(
            "GitHub not answering ({error}): pull requests and files as last read"
        )),
        None => {}
    }
    (!lines.is_empty()).then(|| {
        let lines = lines
            .into_iter()
            .map(|line| view! { <li>{line}</li> })
            .collect_view();
        view! {
            <div class="state stale" role="status">
                <strong>"⚠ Showing last known data"</strong>
                <ul>{lines}</ul>
            </div>
        }
    })
}

/// One row of the strip: name, segmented bar, current step, time remaining.
fn strip_row(service: &ServiceProgress) -> impl IntoView {
    let href = tab_href("provisioning", &service.name, None);
    let segments = service
        .steps
        .iter()
        .map(|step| {
            let (class, word) = step_label(step.status);
            let label = format!("{}: {word}", step.title);
            view! { <span class=format!("segment {class}") title=label.clone() aria-label=label></span> }
        })
        .collect_view();
    let current = current_step(service).map_or_else(
        || "All steps done".to_owned(),
        |s| format!("{} — {}", s.title, step_label(s.status).1),
    );
    let remaining = match remaining_sec(service) {
        Some(0) => "finishing".to_owned(),
        Some(sec) => format!(
            "about {} left",
            compact_duration(i64::try_from(sec).unwrap_or(i64::MAX))
        ),
        None => "stopped: a step failed".to_owned(),
    };
    let kind = service.kind.map_or("kind unknown", |k| k.as_str());
    view! {
        <li class="strip-row">
            <a href=href class="strip-name">{service.name.to_string()}</a>
            <span class="tag">{kind}</span>
            <span class="segments" role="img" aria-label=format!("{} of {} steps done",
                service.steps.iter().filter(|s| s.status == StepStatus::Done).count(), service.steps.len())>
                {segments}
            </span>
            <span class="current">{current}</span>
            <span class="remaining">{remaining}</span>
        </li>
    }
}

fn group_list(
    title: &'static str,
    class: &'static str,
    services: Vec<&ServiceProgress>,
    empty: &'static str,
) -> impl IntoView {
    let rows = services.iter().map(|s| strip_row(s)).collect_view();
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
pub fn ServicesTab(now: ReadSignal<DateTime<Utc>>) -> impl IntoView {
    let feed = expect_context::<crate::Feed>();
    move || {
        feed.provisioning.get().map(|result| match result {
            Ok(answer) => {
                let by = |group: Group| -> Vec<&ServiceProgress> {
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
                );
                let pending = group_list(
                    "Requested",
                    "pending",
                    by(Group::Pending),
                    "No open requests.",
                );
                let stalled =
                    group_list("Stalled", "stalled", by(Group::Stalled), "Nothing stalled.");
                let finished = group_list(
                    "Finished in the last 15 minutes",
                    "finished",
                    by(Group::Finished),
                    "Nothing finished recently.",
                );
                view! {
                    <HealthNotice health=answer.health.clone() now=now.get_untracked() />
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

/// One step of the Provisioning tab.
fn step_item(step: &Step) -> impl IntoView {
    let (class, word) = step_label(step.status);
    let took = match (step.status, step.duration_sec) {
        (_, None) => "duration unknown".to_owned(),
        (StepStatus::Running, Some(sec)) => format!("{} so far", compact_duration(sec as i64)),
        (_, Some(sec)) => format!("took {}", compact_duration(sec as i64)),
    };
    let typical = format!(
        "typical {}{}",
        compact_duration(step.typical_sec as i64),
        match step.typical_source {
            TypicalSource::Measured => "",
            TypicalSource::Estimate => " (estimate)",
        }
    );
    // The bar: this step's time against its typical (capped at twice the typical).
    let percent = step.duration_sec.map(|sec| {
        let typical = step.typical_sec.max(1) as f64;
        ((sec as f64 / typical) * 50.0).min(100.0)
    });
    let bar = percent.map(|p| {
        view! {
            <span class="bar" aria-hidden="true">
                <span class="bar-fill" style=format!("width: {p:.0}%")></span>
                <span class="bar-typical"></span>
            </span>
        }
    });
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
pub fn ProvisioningTab(service: String, now: ReadSignal<DateTime<Utc>>) -> impl IntoView {
    let feed = expect_context::<crate::Feed>();
    let snapshot = LocalResource::new({
        let service = service.clone();
        move || {
            feed.refresh.kubernetes.track();
            let service = service.clone();
            async move {
                let fetched_at = crate::clock::browser_now();
                api::service_snapshot(service)
                    .await
                    .map(|s| (s, fetched_at))
            }
        }
    });
    let recent = LocalResource::new(move || {
        feed.refresh.github.track();
        api::recent_runs()
    });
    let (refresh_answer, set_refresh_answer) = signal(None::<Result<String, ApiError>>);
    let refresh_catalog = move |_| {
        leptos::task::spawn_local(async move {
            set_refresh_answer.set(Some(api::refresh_catalog().await));
        });
    };

    let progress = move || {
        snapshot.get().map(|result| {
            result.map(|(answer, fetched_at)| {
                // The server's clock now: its `now` when fetched, moved on by the browser's.
                let offset = answer.snapshot.now - fetched_at;
                let mut at_now = answer.snapshot.clone();
                at_now.now = now.get() + offset;
                let found = derive_provisioning(&at_now)
                    .services
                    .into_iter()
                    .find(|s| *s.name == *service);
                (found, answer.health, at_now.now)
            })
        })
    };
    let history = move || {
        recent.get().map(|result| match result {
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
                                <td><a href=tab_href("provisioning", &r.service, None)>{r.service.clone()}</a></td>
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
        <Transition fallback=|| view! { <p class="state loading">"Loading…"</p> }>
            {move || {
                progress()
                    .map(|result| match result {
                        Err(err) => crate::ui::error_alert(&err),
                        Ok((None, _, _)) => view! {
                            <p class="state empty">
                                "Tower is not tracking a provision of this service: it finished more than 15 minutes ago, or is older than a day."
                            </p>
                        }
                        .into_any(),
                        Ok((Some(progress), health, server_now)) => {
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
                            let remaining = remaining_sec(&progress);
                            let steps = progress.steps.iter().map(step_item).collect_view();
                            view! {
                                <HealthNotice health=health now=server_now />
                                <p class="summary">
                                    <span class="group">{group}</span>
                                    " · "
                                    {progress.kind.map_or("kind unknown", |k| k.as_str())}
                                    {remaining.filter(|_| progress.group == Group::InFlight).map(|sec| format!(" · about {} left", compact_duration(sec as i64)))}
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
