//! The Deployments tab: the cloud variant (ECS, Lambda, Container Apps: what the deploy runs
//! say) here, the Kubernetes variant in [`crate::tabs::rollout`].

use chrono::{DateTime, Utc};
use leptos::prelude::*;
use tower_shared::cloud::{Capability, DeployRun, BLIND_SPOTS, FAILURE_NOTE};
use tower_shared::deployments::Deployments;
use tower_shared::time::age;

use crate::nav::{tab_href, Tab};
use crate::ui::{header_row, run_duration, run_status_label};

fn when(time: Option<DateTime<Utc>>, now: ReadSignal<DateTime<Utc>>) -> impl IntoView {
    move || time.map_or_else(|| "unknown".to_owned(), |t| age(t, now.get()))
}

#[component]
pub fn DeploymentsTab(
    deployments: Deployments,
    now: ReadSignal<DateTime<Utc>>,
    actions: crate::tabs::rollout::ArgoActions,
) -> impl IntoView {
    let Deployments {
        service,
        capability,
        cloud,
        environments,
    } = deployments;
    let deploys = match (capability, cloud) {
        (Capability::CloudRuntime, Some(deploys)) => deploys,
        _ => {
            let environments = environments.unwrap_or_default();
            return view! { <crate::tabs::rollout::K8sDeployments service=service environments=environments actions=actions /> }
                .into_any();
        }
    };
    let target = deploys.target.map_or("Unknown target", |t| t.title());
    let console = match deploys.console_url.clone() {
        Some(url) => view! {
            <a class="console" href=url target="_blank" rel="noopener noreferrer">"Open in console ↗"</a>
        }
        .into_any(),
        None => view! { <span class="console missing">"No console link: the region is unknown"</span> }.into_any(),
    };
    let card = |title: &'static str,
                class: &'static str,
                run: DeployRun,
                note: Option<&'static str>| {
        let (status_class, status) = run_status_label(run.status);
        let href = tab_href(Tab::Pipelines, &service, Some(&run.run));
        let duration = move || run_duration(run.started_at, run.finished_at, now.get());
        view! {
            <article class=format!("card {class}")>
                <h3>{title}</h3>
                <p class=status_class>{status}</p>
                <dl>
                    <dt>"Run"</dt>
                    <dd><a href=href>{run.run.clone()}</a></dd>
                    <dt>"Environment"</dt>
                    <dd>{run.environment.clone().unwrap_or_else(|| "unknown".to_owned())}</dd>
                    <dt>"Commit"</dt>
                    <dd class="commit">{run.commit.clone().unwrap_or_else(|| "unknown".to_owned())}</dd>
                    <dt>"Image"</dt>
                    <dd class="image">{run.image.clone().unwrap_or_else(|| "unknown".to_owned())}</dd>
                    <dt>"Started"</dt>
                    <dd>{when(run.started_at, now)}</dd>
                    <dt>"Took"</dt>
                    <dd>{duration}</dd>
                </dl>
                {run.failed_task.clone().map(|task| view! {
                    <p class="failure"><strong>{task}</strong>": " {run.message.clone().unwrap_or_else(|| "no message".to_owned())}</p>
                })}
                {note.map(|n| view! { <p class="note">{n}</p> })}
            </article>
        }
    };
    let in_progress = deploys
        .in_progress
        .clone()
        .map(|r| card("Deploy in progress", "running", r, None));
    let last_success = deploys
        .last_success
        .clone()
        .map(|r| card("Last successful deploy", "ok", r, None));
    let failure = deploys.latest_failure.clone().map(|r| {
        card(
            "Latest failure, not fixed since",
            "failing",
            r,
            Some(FAILURE_NOTE),
        )
    });
    let nothing = deploys.history.is_empty().then(|| {
        view! { <p class="state empty">"No deploy runs on the cluster (the Tekton pruner removes old ones)."</p> }
    });
    let rows = deploys
        .history
        .iter()
        .map(|run| {
            let (status_class, status) = run_status_label(run.status);
            let href = tab_href(Tab::Pipelines, &service, Some(&run.run));
            let (started, finished) = (run.started_at, run.finished_at);
            view! {
                <tr>
                    <td><a href=href>{run.run.clone()}</a></td>
                    <td class=status_class>{status}</td>
                    <td>{run.environment.clone().unwrap_or_else(|| "unknown".to_owned())}</td>
                    <td class="commit">{run.commit.clone().unwrap_or_else(|| "unknown".to_owned())}</td>
                    <td>{when(started, now)}</td>
                    <td>{move || run_duration(started, finished, now.get())}</td>
                    <td>{run.failed_task.clone().unwrap_or_default()}</td>
                </tr>
            }
        })
        .collect_view();
    view! {
        <section class="deployments cloud" aria-labelledby="deployments-title">
            <h2 id="deployments-title">"Deployments"</h2>
            <div class="target">
                <span class="target-name">{target}</span>
                <span class="resource">{deploys.resource.clone().unwrap_or_else(|| "resource unknown".to_owned())}</span>
                <span class="region">{deploys.region.clone().unwrap_or_else(|| "region unknown".to_owned())}</span>
                {console}
            </div>
            <p class="blind-spots">{BLIND_SPOTS}</p>
            <div class="cards">{in_progress} {failure} {last_success} {nothing}</div>
            <h3>"History"</h3>
            <table class="history">
                {header_row(&["Run", "Status", "Environment", "Commit", "Started", "Duration", "Failed task"])}
                <tbody>{rows}</tbody>
            </table>
        </section>
    }
    .into_any()
}
