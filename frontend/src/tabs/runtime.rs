//! The Runtime tab (`GET /api/runtime`): per environment, how the app meets its objectives
//! — a sentence first, the figures per window, the error budget left, the burn-rate alerts
//! and two charts the backend laid out, each release's arrival marked — and where it runs:
//! its pods, the autoscaler, recent Events. Asked again every 10 seconds and on every
//! change to the app, so Prometheus going quiet shows within its deadline.
//!
//! The answer is `tower_shared::api::RuntimeAnswer`, read as a JSON tree with the Config
//! tab's reader (the bundle's budget).

use std::time::Duration;

use leptos::prelude::*;
use serde_json::Value as Json;
use tower_shared::time::age;

use crate::api;
use crate::tabs::config::{list, text};

/// How often the tab asks again by itself.
const POLL: Duration = Duration::from_secs(10);

fn number(v: &Json) -> Option<f64> {
    v.as_f64()
}

fn percent(v: &Json) -> String {
    number(v).map_or_else(|| "unknown".to_owned(), |v| format!("{:.2} %", v * 100.0))
}

fn millis(v: &Json) -> String {
    number(v).map_or_else(|| "unknown".to_owned(), |v| format!("{v:.0} ms"))
}

/// A count, or `?` when unknown.
fn count(v: &Json) -> String {
    v.as_u64().map_or_else(|| "?".to_owned(), |n| n.to_string())
}

/// `met`'s class: within its objective, not, or unknown.
fn met(v: &Json) -> &'static str {
    match v.as_bool() {
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
        move |answer: Json| {
            let at = |v: &Json| v.as_str().and_then(|t| t.parse().ok());
            let prometheus = &answer["prometheus"];
            let state = match prometheus["state"].as_str() {
                Some("notAnswering") => {
                    let since = at(&prometheus["since"])
                        .map(|s| format!(" since {}", age(s, now.get_untracked())))
                        .unwrap_or_default();
                    Some(format!(
                        "Prometheus is not answering{since}: {}. The figures below are the last it gave.",
                        text(prometheus, "message")
                    ))
                }
                Some("notConfigured") => {
                    Some("Prometheus is not configured: no objectives to show.".to_owned())
                }
                _ => None,
            };
            let environments = list(&answer, "environments")
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
    e: &Json,
    now: ReadSignal<chrono::DateTime<chrono::Utc>>,
    open: RwSignal<Option<(String, String)>>,
) -> impl IntoView {
    let name = text(e, "environment");
    let slo = &e["slo"];
    let measured = e["measuredAt"]
        .as_str()
        .and_then(|t| t.parse().ok())
        .map(|t| format!("Measured {}.", age(t, now.get_untracked())));
    let figures = (!slo.is_null()).then(|| {
        let rows = list(slo, "windows")
            .iter()
            .map(|w| {
                view! {
                    <tr>
                        <th scope="row">{text(w, "window")}</th>
                        <td class=met(&w["availabilityMet"])>{percent(&w["availability"])}</td>
                        <td class=met(&w["p95Met"])>{millis(&w["p95Ms"])}</td>
                        <td class=met(&w["p99Met"])>{millis(&w["p99Ms"])}</td>
                    </tr>
                }
            })
            .collect_view();
        let alerts = list(slo, "alerts")
            .iter()
            .map(|a| {
                let class = if a["firing"] == true {
                    "alert firing"
                } else {
                    "alert"
                };
                view! { <li class=class>{text(a, "said")}</li> }
            })
            .collect_view();
        let charts = list(slo, "charts").iter().map(chart).collect_view();
        view! {
            <p class="sentence">{text(slo, "sentence")}</p>
            <p class="budget">{text(slo, "budget")}</p>
            <table class="slo">
                {crate::ui::header_row(&["Window", "Availability", "p95 latency", "p99 latency"])}
                <tbody>{rows}</tbody>
            </table>
            <ul class="alerts">{alerts}</ul>
            <div class="charts">{charts}</div>
        }
    });
    let pods = list(e, "pods")
        .iter()
        .map(|p| {
            let restarts = p["restarts"].as_u64().unwrap_or_default();
            let last = &p["lastTermination"];
            let why = (!last.is_null()).then(|| {
                format!(
                    " (last: {}, exit {})",
                    text(last, "reason"),
                    last["exitCode"].as_i64().unwrap_or_default()
                )
            });
            let image = text(p, "image");
            let tag = tower_shared::image::short(&image).to_owned();
            let created = p["createdAt"].as_str().and_then(|t| t.parse().ok());
            let class = if restarts == 0 { "" } else { "restarted" };
            let pod = text(p, "name");
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
                    <td>{text(p, "ready")}</td>
                    <td>{format!("{restarts}{}", why.unwrap_or_default())}</td>
                    <td>{created.map(|c| age(c, now.get_untracked())).unwrap_or_default()}</td>
                    <td>{text(p, "node")}</td>
                </tr>
            }
        })
        .collect_view();
    let scaler = &e["autoscaler"];
    let scaler = (!scaler.is_null()).then(|| {
        view! {
            <p>{format!("Autoscaler {}: {} replicas of {}–{}, wants {}.", text(scaler, "name"),
                count(&scaler["current"]), count(&scaler["min"]), count(&scaler["max"]), count(&scaler["desired"]))}</p>
        }
    });
    let events = list(e, "events")
        .iter()
        .map(|v| {
            let times = v["count"]
                .as_u64()
                .filter(|c| *c > 1)
                .map(|c| format!(" ×{c}"))
                .unwrap_or_default();
            view! {
                <li class=if v["warning"] == true { "kube-event warning" } else { "kube-event" }>
                    {format!("{} {} on {}{times}: {}", if v["warning"] == true { "⚠" } else { "·" },
                        text(v, "reason"), text(v, "object"), text(v, "message"))}
                </li>
            }
        })
        .collect_view();
    view! {
        <section class="runtime-env" aria-label=format!("{name} runtime")>
            <h3>{format!("{name} — {} · {}", text(e, "cluster"), text(e, "namespace"))}</h3>
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
fn chart(c: &Json) -> impl IntoView {
    let n = |k: &str| c[k].as_f64().unwrap_or_default();
    let (left, right, top, bottom) = (n("left"), n("right"), n("top"), n("bottom"));
    let summary = text(c, "summary");
    let lines = list(c, "lines")
        .iter()
        .map(|l| view! { <polyline class="values" fill="none" points=l.as_str().unwrap_or_default().to_owned() /> })
        .collect_view();
    let target = &c["target"];
    let target = (!target.is_null()).then(|| {
        let y = target["at"].as_f64().unwrap_or_default();
        view! {
            <line class="target" x1=left x2=right y1=y y2=y />
            <text class="target" x=right y=y - 3.0 text-anchor="end">{text(target, "label")}</text>
        }
    });
    let middle = (left + right) / 2.0;
    let markers = list(c, "markers")
        .iter()
        .map(|m| {
            let x = m["at"].as_f64().unwrap_or_default();
            // A label reads away from the nearer edge.
            let (anchor, to) = if x.lt(&middle) {
                ("start", x + 3.0)
            } else {
                ("end", x - 3.0)
            };
            view! {
                <line class="marker" x1=x x2=x y1=top y2=bottom />
                <text class="marker" x=to y=top + 10.0 text-anchor=anchor>{text(m, "label")}</text>
            }
        })
        .collect_view();
    let ticks = list(c, "yTicks")
        .iter()
        .map(|t| view! { <text x=left - 4.0 y=t["at"].as_f64().unwrap_or_default() + 4.0 text-anchor="end">{text(t, "label")}</text> })
        .chain(list(c, "xTicks").iter().map(|t| {
            view! { <text x=t["at"].as_f64().unwrap_or_default() y=bottom + 16.0 text-anchor="middle">{text(t, "label")}</text> }
        }))
        .collect_view();
    view! {
        <figure class="chart">
            <svg viewBox=format!("0 0 {} {}", n("width"), n("height")) role="img" aria-label=summary.clone()>
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
