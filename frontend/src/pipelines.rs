//! The Pipelines tab: the service's Tekton runs, newest first; `run=` focuses one.

use chrono::{DateTime, Utc};
use leptos::prelude::*;
use tower_shared::hangar::{cicd_namespace, ServiceKind};
use tower_shared::snapshot::Snapshot;
use tower_shared::tekton::{PipelineRun, TaskRun};
use tower_shared::time::age;

use crate::nav::{tab_href, Tab};
use crate::ui::{header_row, run_duration, run_status_label};

#[component]
pub fn PipelinesTab(
    snapshot: Snapshot,
    service: String,
    run: Option<String>,
    now: ReadSignal<DateTime<Utc>>,
) -> impl IntoView {
    // The kind is not known here: an application's and an InfraService's namespace.
    let namespaces = [
        cicd_namespace(&service, None),
        cicd_namespace(&service, Some(ServiceKind::InfraService)),
    ];
    let objects = snapshot
        .cluster(&snapshot.control_plane_cluster)
        .iter()
        .map(|o| &**o);
    let in_cicd = |o: &&tower_shared::kube::Object| {
        o.namespace()
            .is_some_and(|ns| namespaces.iter().any(|n| n == ns))
    };
    let mut runs: Vec<PipelineRun<'_>> = objects
        .clone()
        .filter(in_cicd)
        .filter_map(PipelineRun::new)
        .collect();
    runs.sort_by(|a, b| {
        b.started_at()
            .cmp(&a.started_at())
            .then_with(|| b.name().cmp(a.name()))
    });
    let tasks: Vec<TaskRun<'_>> = objects.filter(in_cicd).filter_map(TaskRun::new).collect();

    let focused = run.as_deref().map(|name| match runs.iter().find(|r| r.name() == name) {
        Some(r) => {
            let mut own: Vec<&TaskRun<'_>> = tasks.iter().filter(|t| t.pipeline_run() == Some(name)).collect();
            own.sort_by_key(|t| (t.started_at(), t.name()));
            let (class, status) = run_status_label(r.status());
            let task_rows = own
                .iter()
                .map(|t| {
                    let (class, status) = run_status_label(t.status());
                    view! {
                        <tr>
                            <td>{t.pipeline_task().unwrap_or(t.name()).to_owned()}</td>
                            <td class=class>{status}</td>
                            <td>{t.message().unwrap_or_default().to_owned()}</td>
                        </tr>
                    }
                })
                .collect_view();
            view! {
                <section class="focused-run" aria-label="Pipeline run">
                    <h3>"Run " <span class="run-name">{name.to_owned()}</span></h3>
                    <p class=class>{status} " · " {r.pipeline().unwrap_or("unknown pipeline").to_owned()}</p>
                    <table class="tasks">
                        {header_row(&["Task", "Status", "Message"])}
                        <tbody>{task_rows}</tbody>
                    </table>
                </section>
            }
            .into_any()
        }
        None => view! {
            <p class="state empty">
                {format!("Tower does not see run {name} any more: the Tekton pruner removes old runs.")}
            </p>
        }
        .into_any(),
    });
    let rows = runs
        .iter()
        .map(|r| {
            let (class, status) = run_status_label(r.status());
            let (started, finished) = (r.started_at(), r.completed_at());
            let current = (run.as_deref() == Some(r.name())).then_some("true");
            view! {
                <tr aria-current=current>
                    <td><a href=tab_href(Tab::Pipelines, &service, Some(r.name()))>{r.name().to_owned()}</a></td>
                    <td>{r.pipeline().unwrap_or("unknown").to_owned()}</td>
                    <td class=class>{status}</td>
                    <td>{move || started.map_or_else(|| "unknown".to_owned(), |t| age(t, now.get()))}</td>
                    <td>{move || run_duration(started, finished, now.get())}</td>
                </tr>
            }
        })
        .collect_view();
    view! {
        <section class="pipelines">
            <h2>"Pipelines"</h2>
            {focused}
            <h3>"All runs"</h3>
            <table class="runs">
                {header_row(&["Run", "Pipeline", "Status", "Started", "Duration"])}
                <tbody>{rows}</tbody>
            </table>
        </section>
    }
}
