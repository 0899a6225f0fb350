//! The Runtime tab (`GET /api/runtime`): per environment, how the app meets its objectives
//! — a sentence first, the figures per window, the error budget left, the burn-rate alerts
//! and two charts the backend laid out, each release's arrival marked — and where it runs:
//! its pods, the autoscaler, recent Events. Asked again every 10 seconds and on every
//! change to the app, so Prometheus going quiet shows within its deadline.
//!
//! The answer is decoded as `tower_shared::api::RuntimeAnswer`.

use std::time::Duration;

use leptos::prelude::*;
use tower_shared::api::{PrometheusAnswers, RuntimeAnswer, RuntimeEnvironment};
use tower_shared::runtime::Chart;
use tower_shared::time::age;

use crate::api;

/// How often the tab asks again by itself.
const POLL: Duration = Duration::from_secs(10);

fn percent(v: Option<f64>) -> String {
    v.map_or_else(|| "unknown".to_owned(), |v| format!("{:.2} %", v * 100.0))
}

fn millis(v: Option<f64>) -> String {
    v.map_or_else(|| "unknown".to_owned(), |v| format!("{v:.0} ms"))
}

/// A count, or `?` when unknown.
fn count(v: Option<u32>) -> String {
    v.map_or_else(|| "?".to_owned(), |n| n.to_string())
}

/// `met`'s class: within its objective, not, or unknown.
fn met(v: Option<bool>) -> &'static str {
    match v {
        Some(true) => "met",
        Some(false) => "missed",
        None => "unknown",
    }
}

#[component]
pub fn RuntimeTab(service: String) -> impl IntoView {
    let poll = RwSignal::new(0u32);
    if let Ok(handle) = set_interval_with_handle(move || poll.update(|n| *n += 1), POLL) {
        on_cleanup(move || handle.clear());
    }
    let now = crate::feed::feed().now;
    // The pod whose log is open (environment, pod): outside the polled part, so a poll does
    // not start its stream again.
    let open = RwSignal::new(None::<(String, String)>);
    let console = {
        let service = service.clone();
        move || {
            open.get().map(|(environment, pod)| {
                let path = api::pod_log_path(&service, &environment, &pod);
                let what = format!("pod {pod}");
                view! {
                    <section class="pod-log" id="pod-log" aria-label=format!("{pod} in {environment}")>
                        <h3>{format!("Log of {pod} ({environment})")}
                            " "<button type="button" on:click=move |_| open.set(None)>"Close"</button>
                        </h3>
                        {crate::logs::log_console(path, what, true)}
                    </section>
                }
            })
        }
    };
    let body = crate::tabs::fetched_with(
        service,
        move |service| {
            poll.track();
            api::tab_text(crate::tabs::Tab::Runtime, &service)
        },
        move |answer: RuntimeAnswer| {
            let prometheus = &answer.prometheus;
            let state = match prometheus.state {
                PrometheusAnswers::NotAnswering => {
                    let since = prometheus
                        .since
                        .map(|s| format!(" since {}", age(s, now.get_untracked())))
                        .unwrap_or_default();
                    Some(format!(
                        "Prometheus is not answering{since}: {}. The figures below are the last it gave.",
                        prometheus.message.as_deref().unwrap_or("no reason given")
                    ))
                }
                PrometheusAnswers::NotConfigured => {
                    Some("Prometheus is not configured: no objectives to show.".to_owned())
                }
                PrometheusAnswers::Answering => None,
            };
            let environments = answer
                .environments
                .into_iter()
                .map(|e| environment(&e, now, open))
                .collect_view();
            view! {
                {state.map(|s| view! { <p class="prometheus-state" role="status">{s}</p> })}
                {environments}
            }
            .into_any()
        },
    );
    view! {
        <crate::ui::SharedHealthNotice />
        {body}
        {console}
    }
}

fn environment(
    e: &RuntimeEnvironment,
    now: ReadSignal<chrono::DateTime<chrono::Utc>>,
    open: RwSignal<Option<(String, String)>>,
) -> impl IntoView {
    let place = &e.place;
    let name = place.environment.clone();
    let measured = e
        .measured_at
        .map(|t| format!("Measured {}.", age(t, now.get_untracked())));
    let figures = e.slo.as_ref().map(|slo| {
        let rows = slo
            .windows
            .iter()
            .map(|w| {
                view! {
                    <tr>
                        <th scope="row">{w.window.clone()}</th>
                        <td class=met(w.availability_met)>{percent(w.availability)}</td>
                        <td class=met(w.p95_met)>{millis(w.p95_ms)}</td>
                        <td class=met(w.p99_met)>{millis(w.p99_ms)}</td>
                    </tr>
                }
            })
            .collect_view();
        let alerts = slo
            .alerts
            .iter()
            .map(|a| {
                let class = if a.firing == Some(true) {
                    "alert firing"
                } else {
                    "alert"
                };
                view! { <li class=class>{a.said.clone()}</li> }
            })
            .collect_view();
        let charts = slo.charts.iter().map(chart).collect_view();
        view! {
            <p class="sentence">{slo.sentence.clone()}</p>
            <p class="budget">{slo.budget.clone()}</p>
            <table class="slo">
                {crate::ui::header_row(&["Window", "Availability", "p95 latency", "p99 latency"])}
                <tbody>{rows}</tbody>
            </table>
            <ul class="alerts">{alerts}</ul>
            <div class="charts">{charts}</div>
        }
    });
    let pods = place
        .pods
        .iter()
        .map(|p| {
            let restarts = p.restarts;
            let why = p.last_termination.as_ref().map(|last| {
                let exit = last
                    .exit_code
                    .map_or_else(|| "unknown".to_owned(), |c| c.to_string());
                format!(" (last: {}, exit {exit})", last.reason)
            });
            let tag = p
                .image
                .as_deref()
                .map_or("unknown", tower_shared::image::short)
                .to_owned();
            let created = p.created_at;
            let class = if restarts == 0 { "" } else { "restarted" };
            let pod = p.name.clone();
            let chosen = (name.clone(), pod.clone());
            view! {
                <tr class=class>
                    <td>{pod.clone()}" "
                        <button type="button" class="pod-log-open" aria-label=format!("Log of {pod}")
                            on:click=move |_| {
                                open.set(Some(chosen.clone()));
                                // Drawn below the environments: brought into view once drawn.
                                request_animation_frame(|| {
                                    if let Some(log) = document().get_element_by_id("pod-log") {
                                        log.scroll_into_view();
                                    }
                                });
                            }>"Log"</button>
                    </td>
                    <td>{tag}</td>
                    <td>{p.ready.clone()}</td>
                    <td>{format!("{restarts}{}", why.unwrap_or_default())}</td>
                    <td>{created.map(|c| age(c, now.get_untracked())).unwrap_or_default()}</td>
                    <td>{p.node.clone().unwrap_or_default()}</td>
                </tr>
            }
        })
        .collect_view();
    let scaler = place.autoscaler.as_ref().map(|scaler| {
        view! {
            <p>{format!("Autoscaler {}: {} replicas of {}–{}, wants {}.", scaler.name,
                count(scaler.current), count(scaler.min), count(scaler.max), count(scaler.desired))}</p>
        }
    });
    let events = place
        .events
        .iter()
        .map(|v| {
            let times = v
                .count
                .filter(|c| *c > 1)
                .map(|c| format!(" ×{c}"))
                .unwrap_or_default();
            view! {
                <li class=if v.warning { "kube-event warning" } else { "kube-event" }>
                    {format!("{} {} on {}{times}: {}", if v.warning { "⚠" } else { "·" },
                        v.reason, v.object, v.message)}
                </li>
            }
        })
        .collect_view();
    view! {
        <section class="runtime-env" aria-label=format!("{name} runtime")>
            <h3>{format!("{name} — {} · {}", place.cluster.as_deref().unwrap_or("cluster unknown"), place.namespace)}</h3>
            {figures}
            <p class="muted">{measured}</p>
            <h4>"Pods"</h4>
            <table class="pods">
                {crate::ui::header_row(&["Pod", "Release", "Ready", "Restarts", "Age", "Node"])}
                <tbody>{pods}</tbody>
            </table>
            {scaler}
            <h4>"Events"</h4>
            <ul class="kube-events">{events}</ul>
        </section>
    }
}

/// A chart the backend laid out: its lines, the objective, a marker per arrival, the axes.
fn chart(c: &Chart) -> impl IntoView {
    let (left, right, top, bottom) = (c.left, c.right, c.top, c.bottom);
    let summary = c.summary.clone();
    let lines = c
        .lines
        .iter()
        .map(|l| view! { <polyline class="values" fill="none" points=l.clone() /> })
        .collect_view();
    let target = c.target.as_ref().map(|target| {
        let y = target.at;
        view! {
            <line class="target" x1=left x2=right y1=y y2=y />
            <text class="target" x=right y=y - 3.0 text-anchor="end">{target.label.clone()}</text>
        }
    });
    let middle = (left + right) / 2.0;
    let markers = c
        .markers
        .iter()
        .map(|m| {
            let x = m.at;
            // A label reads away from the nearer edge.
            let (anchor, to) = if x.lt(&middle) {
                ("start", x + 3.0)
            } else {
                ("end", x - 3.0)
            };
            view! {
                <line class="marker" x1=x x2=x y1=top y2=bottom />
                <text class="marker" x=to y=top + 10.0 text-anchor=anchor>{m.label.clone()}</text>
            }
        })
        .collect_view();
    let ticks = c
        .y_ticks
        .iter()
        .map(|t| view! { <text x=left - 4.0 y=t.at + 4.0 text-anchor="end">{t.label.clone()}</text> })
        .chain(c.x_ticks.iter().map(|t| {
            view! { <text x=t.at y=bottom + 16.0 text-anchor="middle">{t.label.clone()}</text> }
        }))
        .collect_view();
    view! {
        <figure class="chart">
            <svg viewBox=format!("0 0 {} {}", c.width, c.height) role="img" aria-label=summary.clone()>
                <rect class="plot" x=left y=top width=right - left height=bottom - top />
                {ticks}
                {target}
                {markers}
                {lines}
            </svg>
            <figcaption>{summary}</figcaption>
        </figure>
    }
}
