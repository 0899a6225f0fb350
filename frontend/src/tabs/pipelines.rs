//! The Pipelines tab: the service's runs newest first, a page at a time (`GET
//! /api/pipelines`), filtered by pipeline and outcome; `run=` opens one run — its graph of
//! tasks and their timeline (`GET /api/pipelines/run`), `task=` one task's steps and the log
//! of the one that failed or runs ([`crate::logs`]).

use chrono::{DateTime, Utc};
use leptos::prelude::*;
use tower_shared::api::PipelineRunsAnswer;
use tower_shared::pipelines::{
    EdgeKind, Outcome, RunGraph, RunSummary, StepNode, TaskNode, Trigger,
};
use tower_shared::time::{age, compact_duration};

use crate::api::{self, ApiError};
use crate::logs::LogTarget;
use crate::nav::{tab_href, Tab};
use crate::ui::{error_alert, header_row, run_duration as took, HealthNotice};

/// Runs per page ("Load more" asks for the next).
const PAGE: &str = "50";

/// The fleet's vocabulary for an outcome: class and icon + word.
pub fn outcome_label(outcome: Outcome) -> (&'static str, &'static str) {
    match outcome {
        Outcome::Succeeded => ("status-ok", "✔ succeeded"),
        Outcome::Failed => ("status-failed", "✖ failed"),
        Outcome::Stopping => ("status-failed", "✖ stopping"),
        Outcome::FailureIgnored => ("status-attention", "⚠ failed, ignored"),
        Outcome::TimedOut => ("status-failed", "✖ timed out"),
        Outcome::Cancelled => ("status-attention", "⚠ cancelled"),
        Outcome::Running => ("status-running", "◌ running"),
        Outcome::Pending => ("status-running", "◌ waiting"),
        Outcome::Skipped => ("status-unknown", "– skipped"),
        Outcome::NotRun => ("status-unknown", "– not run"),
        Outcome::Unknown => ("status-unknown", "? unknown"),
    }
}

fn short_commit(run: &RunSummary) -> AnyView {
    match (&run.commit, &run.commit_url) {
        (Some(sha), Some(url)) => view! {
            <a class="commit" href=url.clone() title=sha.clone() target="_blank" rel="noopener noreferrer">
                {sha.chars().take(7).collect::<String>()}
            </a>
        }
        .into_any(),
        (Some(sha), None) => view! { <span class="commit" title=sha.clone()>{sha.chars().take(7).collect::<String>()}</span> }.into_any(),
        _ => view! { <span class="unknown" title="the run names no commit">"unknown"</span> }.into_any(),
    }
}

/// `name:tag` with the full reference on hover.
fn short_image(image: Option<&str>) -> AnyView {
    match image {
        Some(full) => {
            let name = full.split('@').next().unwrap_or(full);
            let name = name.rsplit('/').next().unwrap_or(name).to_owned();
            view! { <span class="image" title=full.to_owned()>{name}</span> }.into_any()
        }
        None => view! { <span class="unknown" title="no image in the run's results">"none"</span> }
            .into_any(),
    }
}

fn trigger_text(trigger: &Trigger) -> String {
    match trigger {
        Trigger::PullRequest { number, branch } => match branch {
            Some(b) => format!("PR #{number} ({b})"),
            None => format!("PR #{number}"),
        },
        Trigger::Push { branch } => {
            format!("push to {}", branch.as_deref().unwrap_or("unknown branch"))
        }
        Trigger::Other { event } => event.clone(),
        Trigger::Unknown => "unknown".to_owned(),
    }
}

#[component]
pub fn PipelinesTab(service: String, run: Option<String>) -> impl IntoView {
    let feed = crate::feed::feed();
    let now = feed.now;
    let query = crate::nav::use_query();
    let task = Memo::new(move |_| query.with(|q| q.get("task")));
    let focused = run.map(|run| view! { <RunView service=service.clone() run=run task=task /> });
    view! {
        <section class="pipelines">
            {focused}
            <RunList service=service.clone() now=now />
        </section>
    }
}

/// The runs, newest first, `pages` pages of them; fetched again when an event names the
/// service (each page answers 304 when it did not change).
#[component]
fn RunList(service: String, now: ReadSignal<DateTime<Utc>>) -> impl IntoView {
    let changed = crate::feed::feed().refresh.service(service.clone());
    let pipeline = RwSignal::new(String::new());
    let status = RwSignal::new(String::new());
    let pages = RwSignal::new(1_usize);
    let name = service.clone();
    let text = crate::feed::text_resource(move || {
        changed.track();
        let (pipeline, status, pages) = (pipeline.get(), status.get(), pages.get());
        let mut query = vec![("limit", PAGE.to_owned())];
        if !pipeline.is_empty() {
            query.push(("pipeline", pipeline));
        }
        if !status.is_empty() {
            query.push(("status", status));
        }
        api::pages::<PipelineRunsAnswer>(name.clone(), query, pages)
    });
    let fetched = move || {
        text.with(|t| {
            t.as_ref().map(|t| {
                t.clone()
                    .and_then(|t| api::joined::<PipelineRunsAnswer>(&t))
            })
        })
    };
    let service = StoredValue::new(service);
    let choices = move |answer: &PipelineRunsAnswer| {
        answer
            .pipelines
            .iter()
            .map(|p| view! { <option value=p.clone() selected=pipeline.get_untracked() == *p>{p.clone()}</option> })
            .collect_view()
    };
    let statuses = || {
        Outcome::OF_RUNS
            .into_iter()
            .map(|o| {
                let word = o.as_str();
                view! { <option value=word>{outcome_label(o).1}</option> }
            })
            .collect_view()
    };
    move || match fetched() {
        None => view! { <p class="state loading">"Loading runs…"</p> }.into_any(),
        Some(Err(err)) => error_alert(&err),
        Some(Ok(answer)) => {
            let shown = answer.runs.len();
            let sentence = match answer.runs.first() {
                None => format!(
                    "No runs in {}{}: a build starts when a pull request is opened or code is pushed (the Tekton pruner removes old runs).",
                    answer.namespace,
                    if pipeline.get_untracked().is_empty() && status.get_untracked().is_empty() { "" } else { " that match the filters" }
                ),
                Some(latest) => format!(
                    "{} runs in {}; the latest, {} ({}), {}.",
                    answer.total,
                    answer.namespace,
                    latest.name,
                    latest.pipeline.as_deref().unwrap_or("unknown pipeline"),
                    outcome_label(latest.outcome).1.trim_start_matches(|c: char| !c.is_alphabetic()),
                ),
            };
            let rows = answer
                .runs
                .iter()
                .map(|r| {
                    let (class, word) = outcome_label(r.outcome);
                    let (started, ended, r_outcome) = (r.started_at, r.completed_at, r.outcome);
                    let href = tab_href(Tab::Pipelines, &service.get_value(), Some(&r.name));
                    view! {
                        <tr>
                            <td><a href=href>{r.name.clone()}</a></td>
                            <td>{r.pipeline.clone().unwrap_or_else(|| "unknown".to_owned())}</td>
                            <td class=class>{word}</td>
                            <td>{short_commit(r)}</td>
                            <td>{short_image(r.image.as_deref())}</td>
                            <td>{trigger_text(&r.trigger)}</td>
                            <td title=started.map(|t| t.to_rfc3339()).unwrap_or_default()>
                                {move || match (started, r_outcome) {
                                    (Some(t), _) => age(t, now.get()),
                                    (None, Outcome::Pending) => "not yet".to_owned(),
                                    (None, _) => "unknown".to_owned(),
                                }}
                            </td>
                            <td>{move || took(started, ended, now.get())}</td>
                        </tr>
                    }
                })
                .collect_view();
            let more = crate::ui::load_more(answer.next.is_some(), shown, answer.total, pages);
            view! {
                <HealthNotice health=answer.health.clone() now=now />
                <p class="headline">{sentence}</p>
                <form class="filters" aria-label="Filter runs" on:submit=|e| e.prevent_default()>
                    <label>"Pipeline "
                        <select on:change=move |e| { pages.set(1); pipeline.set(event_target_value(&e)); }>
                            <option value="">"all"</option>
                            {choices(&answer)}
                        </select>
                    </label>
                    <label>" Status "
                        <select prop:value=move || status.get() on:change=move |e| { pages.set(1); status.set(event_target_value(&e)); }>
                            <option value="">"all"</option>
                            {statuses()}
                        </select>
                    </label>
                </form>
                <table class="runs" aria-rowcount=answer.total>
                    {header_row(&["Run", "Pipeline", "Status", "Commit", "Image", "Trigger", "Started", "Took"])}
                    <tbody>{rows}</tbody>
                </table>
                {more}
            }
            .into_any()
        }
    }
}

/// One run: a sentence, its graph, its timeline, and the chosen task's steps.
#[component]
fn RunView(service: String, run: String, task: Memo<Option<String>>) -> impl IntoView {
    let feed = crate::feed::feed();
    let now = feed.now;
    let changed = feed.refresh.service(service.clone());
    let (s, r) = (service.clone(), run.clone());
    // A `PipelineRunAnswer` carries the graph's fields at its top level: read as the graph
    // alone (the service and health left), so the browser holds one reader of a graph.
    let fetched = crate::feed::decoded::<RunGraph>(crate::feed::text_resource(move || {
        changed.track();
        api::pipeline_run(&s, &r)
    }));
    let open = RwSignal::new(None::<LogTarget>);
    // Choosing a task opens the log of its failed or running step; a newer answer updates
    // whether the open one is still running.
    Effect::new(move || {
        let chosen = task.get();
        let Some(Ok(graph)) = fetched() else {
            return;
        };
        let node = chosen.and_then(|c| graph.tasks.into_iter().find(|t| t.name == c));
        let current = open.get_untracked();
        let next = node.and_then(|node| {
            let step = match current.as_ref().filter(|t| t.task == node.name) {
                Some(open) => node.steps.iter().find(|s| s.name == open.step),
                None => node.steps.iter().find(|s| {
                    matches!(
                        s.outcome,
                        Outcome::Failed | Outcome::TimedOut | Outcome::Running
                    )
                }),
            };
            step.map(|s| log_target(&node, s))
        });
        if next != current {
            open.set(next);
        }
    });
    let (s, r) = (service.clone(), run.clone());
    let console = move || {
        open.get().map(|target| {
            let path = api::step_log_path(&s, &r, &target.task, &target.step, target.follow);
            let what = format!("step {}", target.step);
            crate::logs::log_console(path, what, target.follow)
        })
    };
    let graph = move || {
        match fetched() {
        None => view! { <p class="state loading">"Loading the run…"</p> }.into_any(),
        Some(Err(ApiError::Status { status: 404, .. })) => view! {
            <p class="state empty">
                {format!("Tower does not see run {run} any more: the Tekton pruner removes old runs.")}
            </p>
        }
        .into_any(),
        Some(Err(err)) => error_alert(&err),
        Some(Ok(graph)) => {
            let chosen = task.get();
            let parts = graph_sentence_parts(&graph);
            view! {
                <section class="focused-run" aria-label="Pipeline run">
                    <h3>"Run " <span class="run-name">{graph.run.name.clone()}</span></h3>
                    <p class="headline">{move || run_sentence(&parts, now.get())}</p>
                    {dag(&graph, &service, chosen.as_deref())}
                    {timeline(&graph, now)}
                    {chosen.and_then(|name| graph.tasks.iter().find(|t| t.name == name).cloned()).map(|t| task_detail(t, now, open))}
                </section>
            }
            .into_any()
        }
    }
    };
    view! { {graph} {console} }
}

/// The log of `step` of `task`, followed unless it has finished.
fn log_target(task: &TaskNode, step: &StepNode) -> LogTarget {
    LogTarget {
        task: task.name.clone(),
        step: step.name.clone(),
        follow: !step.outcome.is_final(),
        started: step.started_at.is_some(),
    }
}

/// What the run's sentence needs, cloned once.
#[derive(Clone)]
struct SentenceParts {
    name: String,
    outcome: Outcome,
    started: Option<DateTime<Utc>>,
    ended: Option<DateTime<Utc>>,
    failed: Option<(String, Option<String>)>,
    done: usize,
    total: usize,
    commit: Option<String>,
    trigger: String,
}

fn graph_sentence_parts(graph: &RunGraph) -> SentenceParts {
    let failed = graph
        .tasks
        .iter()
        .find(|t| t.outcome.is_failure())
        .map(|t| (label(t), t.message.clone()));
    SentenceParts {
        name: graph.run.name.clone(),
        outcome: graph.run.outcome,
        started: graph.run.started_at,
        ended: graph.run.completed_at,
        failed,
        done: graph.tasks.iter().filter(|t| t.outcome.is_final()).count(),
        total: graph.tasks.len(),
        commit: graph
            .run
            .commit
            .as_ref()
            .map(|c| c.chars().take(7).collect()),
        trigger: trigger_text(&graph.run.trigger),
    }
}

fn run_sentence(p: &SentenceParts, now: DateTime<Utc>) -> String {
    let of = format!(
        " (commit {}, {})",
        p.commit.as_deref().unwrap_or("unknown"),
        p.trigger
    );
    let took = took(p.started, p.ended, now);
    match (p.outcome, &p.failed) {
        (Outcome::Failed | Outcome::TimedOut, Some((task, message))) => format!(
            "{} failed at {task}{of}: {}.",
            p.name,
            message.as_deref().unwrap_or("no message")
        ),
        (Outcome::Running, _) => format!(
            "{} is running: {} of {} tasks done, {took}{of}.",
            p.name, p.done, p.total
        ),
        (Outcome::Stopping, failed) => format!(
            "{} is stopping{}: it waits for the tasks still running ({} of {} done){of}.",
            p.name,
            failed
                .as_ref()
                .map_or_else(String::new, |(task, _)| format!(" after {task} failed")),
            p.done,
            p.total
        ),
        (Outcome::Pending, _) => format!("{} has not started yet{of}.", p.name),
        (outcome, _) => format!(
            "{} {}{of}; it took {took}.",
            p.name,
            outcome_label(outcome)
                .1
                .trim_start_matches(|c: char| !c.is_alphabetic())
        ),
    }
}

fn label(task: &TaskNode) -> String {
    task.display_name
        .clone()
        .unwrap_or_else(|| task.name.clone())
}

const NODE_W: f64 = 176.0;
const NODE_H: f64 = 46.0;
const GAP_X: f64 = 44.0;
const GAP_Y: f64 = 16.0;

fn node_xy(task: &TaskNode) -> (f64, f64) {
    (
        4.0 + f64::from(task.column) * (NODE_W + GAP_X),
        4.0 + f64::from(task.row) * (NODE_H + GAP_Y),
    )
}

/// The run's tasks as a graph: a column per stage, arrows for `runAfter` (solid) and result
/// references (dashed); each node links to its task.
fn dag(graph: &RunGraph, service: &str, chosen: Option<&str>) -> impl IntoView {
    let width = 8.0 + f64::from(graph.columns) * (NODE_W + GAP_X) - GAP_X;
    let height = 8.0 + f64::from(graph.rows) * (NODE_H + GAP_Y) - GAP_Y;
    let edges = graph
        .edges
        .iter()
        .filter_map(|e| {
            let from = graph.tasks.iter().find(|t| t.name == e.from)?;
            let to = graph.tasks.iter().find(|t| t.name == e.to)?;
            let ((x1, y1), (x2, y2)) = (node_xy(from), node_xy(to));
            let (x1, y1, x2, y2) = (x1 + NODE_W, y1 + NODE_H / 2.0, x2, y2 + NODE_H / 2.0);
            let mid = (x1 + x2) / 2.0;
            let class = match e.kind {
                EdgeKind::RunAfter => "edge",
                EdgeKind::Reference => "edge reference",
            };
            Some(view! {
                <path class=class d=format!("M{x1} {y1} C{mid} {y1} {mid} {y2} {x2} {y2}") fill="none"></path>
            })
        })
        .collect_view();
    let run = graph.run.name.clone();
    let nodes = graph
        .tasks
        .iter()
        .map(|t| {
            let (x, y) = node_xy(t);
            let (class, word) = outcome_label(t.outcome);
            let selected = if chosen == Some(t.name.as_str()) {
                " selected"
            } else {
                ""
            };
            let mut said = word.to_owned();
            if t.attempts > 1 {
                said.push_str(&format!(" · {} attempts", t.attempts));
            }
            if t.finally {
                said.push_str(" · finally");
            }
            // Each node is the link to its task, named in words for a screen reader.
            let after: Vec<&str> = graph
                .edges
                .iter()
                .filter(|e| e.to == t.name)
                .map(|e| e.from.as_str())
                .collect();
            let words = format!(
                "{}: {}{}",
                label(t),
                said.trim_start_matches(|c: char| !c.is_alphabetic()),
                if after.is_empty() {
                    String::new()
                } else {
                    format!(", after {}", after.join(", "))
                }
            );
            let href = task_href(service, &run, &t.name);
            let current = (chosen == Some(t.name.as_str())).then_some("true");
            view! {
                <g class=format!("node {class}{selected}") data-task=t.name.clone()>
                    // Inside the `g`, the view macro makes this SVG's own `a`.
                    <a href=href aria-label=words aria-current=current>
                        <rect x=x y=y width=NODE_W height=NODE_H rx="6"></rect>
                        <text x=x + 8.0 y=y + 18.0 class="node-name">{label(t)}</text>
                        <text x=x + 8.0 y=y + 36.0 class="node-status">{said}</text>
                    </a>
                </g>
            }
        })
        .collect_view();
    view! {
        <figure class="dag">
            <svg viewBox=format!("0 0 {width} {height}") role="group" aria-label=format!("Tasks of {}: each links to its steps", graph.run.name)
                style=format!("max-width: {width}px")>
                <defs>
                    <marker id="arrow" viewBox="0 0 8 8" refX="8" refY="4" markerWidth="8" markerHeight="8" orient="auto">
                        <path d="M0 0 L8 4 L0 8 z"></path>
                    </marker>
                </defs>
                {edges}
                {nodes}
            </svg>
        </figure>
    }
}

/// The run's page with `task` chosen.
fn task_href(service: &str, run: &str, task: &str) -> String {
    format!(
        "{}&task={}",
        tab_href(Tab::Pipelines, service, Some(run)),
        String::from(js_sys::encode_uri_component(task))
    )
}

/// The same tasks as a Gantt chart on one time axis, from the run's start to its end (or
/// now, marked, while it runs): a bar per task that ran, its duration ticking, and the axis
/// in time since the start.
fn timeline(graph: &RunGraph, now: ReadSignal<DateTime<Utc>>) -> impl IntoView {
    const W: f64 = 640.0;
    const ROW: f64 = 22.0;
    const LABEL: f64 = 190.0;
    const AXIS: f64 = 26.0;
    let start = graph.run.started_at;
    let end = graph.run.completed_at;
    let tasks: Vec<TaskNode> = graph.tasks.clone();
    let rows = ROW * tasks.len() as f64;
    let height = rows + AXIS + 4.0;
    let bars = move || {
        let now = now.get();
        let Some(start) = start else {
            return view! { <text x="0" y="14">"The run has not started: no task has run yet."</text> }
                .into_any();
        };
        let last = end.unwrap_or(now);
        let span = (last - start).num_milliseconds().max(1) as f64;
        let x = |t: DateTime<Utc>| {
            LABEL
                + (W - 8.0 - LABEL) * ((t - start).num_milliseconds().max(0) as f64 / span).min(1.0)
        };
        let bars = tasks
            .iter()
            .enumerate()
            .map(|(i, t)| {
                let y = 2.0 + ROW * i as f64;
                let (class, word) = outcome_label(t.outcome);
                let bar = t.started_at.map(|s| {
                    let (x1, x2) = (x(s), x(t.completed_at.unwrap_or(now)));
                    view! {
                        <rect class=format!("bar {class}") x=x1 y=y + 4.0 width=(x2 - x1).max(2.0) height=ROW - 8.0>
                            <title>{format!("{}: {word}, {}", label(t), took(t.started_at, t.completed_at, now))}</title>
                        </rect>
                    }
                });
                view! {
                    <g>
                        <text x="0" y=y + 15.0>{format!("{} · {}", label(t), took(t.started_at, t.completed_at, now))}</text>
                        {bar}
                    </g>
                }
            })
            .collect_view();
        // Five ticks across the span, each the time since the start.
        let seconds = (last - start).num_seconds().max(0);
        let ticks = (0..=4)
            .map(|k| {
                let at = LABEL + (W - 8.0 - LABEL) * f64::from(k) / 4.0;
                let since = seconds * i64::from(k) / 4;
                let anchor = match k { 0 => "start", 4 => "end", _ => "middle" };
                view! {
                    <line class="tick" x1=at x2=at y1=rows + 2.0 y2=rows + 7.0></line>
                    <text class="tick-label" x=at y=rows + 19.0 text-anchor=anchor>{format!("+{}", compact_duration(since))}</text>
                }
            })
            .collect_view();
        let now_line = end.is_none().then(|| {
            let at = x(now);
            view! {
                <line class="now" x1=at x2=at y1="0" y2=rows + 2.0></line>
            }
        });
        view! {
            {bars}
            <line class="axis" x1=LABEL x2=W - 8.0 y1=rows + 2.0 y2=rows + 2.0></line>
            {ticks}
            {now_line}
        }
        .into_any()
    };
    view! {
        <figure class="timeline">
            <svg viewBox=format!("0 0 {W} {height}") role="img" aria-label="When each task ran, in time since the run started"
                style=format!("max-width: {W}px")>{bars}</svg>
        </figure>
    }
}

/// One task: its TaskRun, pod, why it was skipped, and its steps, each with a button that
/// opens its log.
fn task_detail(
    task: TaskNode,
    now: ReadSignal<DateTime<Utc>>,
    open: RwSignal<Option<LogTarget>>,
) -> impl IntoView {
    let (class, word) = outcome_label(task.outcome);
    let steps = task
        .steps
        .iter()
        .map(|s| {
            let (class, word) = outcome_label(s.outcome);
            let (started, ended) = (s.started_at, s.completed_at);
            let target = log_target(&task, s);
            let (name, step) = (task.name.clone(), s.name.clone());
            let shown = Signal::derive(move || {
                open.with(|o| o.as_ref().is_some_and(|t| t.task == name && t.step == step))
            });
            let toggle = move |_| open.set((!shown.get()).then(|| target.clone()));
            view! {
                <tr>
                    <td>{s.name.clone()}</td>
                    <td class=class>{word}</td>
                    <td>{s.exit_code.map_or_else(|| "—".to_owned(), |c| c.to_string())}</td>
                    <td>{move || took(started, ended, now.get())}</td>
                    <td><button type="button" class="log-button" aria-pressed=move || shown.get().to_string()
                        on:click=toggle>"Log"</button></td>
                </tr>
            }
        })
        .collect_view();
    let no_steps = task.steps.is_empty().then(|| {
        view! { <p class="state empty">{match task.outcome {
            Outcome::Skipped | Outcome::NotRun | Outcome::Pending => "No steps: the task did not run.",
            _ => "No steps: Tower does not see this task's TaskRun.",
        }}</p> }
    });
    view! {
        <section class="task-detail" aria-label="Task">
            <h4>{label(&task)} " " <span class=class>{word}</span></h4>
            <dl>
                <dt>"TaskRun"</dt><dd>{task.task_run.clone().unwrap_or_else(|| "none".to_owned())}</dd>
                <dt>"Pod"</dt><dd>{task.pod.clone().unwrap_or_else(|| "unknown".to_owned())}</dd>
                {(task.attempts > 1).then(|| view! { <dt>"Attempts"</dt><dd>{format!("{} (retried {} times; this is the last)", task.attempts, task.attempts - 1)}</dd> })}
                {task.skipped_reason.clone().map(|r| view! { <dt>"Skipped because"</dt><dd>{r}</dd> })}
                {task.message.clone().map(|m| view! { <dt>"Message"</dt><dd>{m}</dd> })}
            </dl>
            {no_steps}
            <table class="steps">
                {header_row(&["Step", "Status", "Exit code", "Took", "Log"])}
                <tbody>{steps}</tbody>
            </table>
        </section>
    }
}
