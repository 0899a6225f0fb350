//! The fleet overview: every app × every environment, trouble first.

use chrono::{DateTime, Utc};
use leptos::prelude::*;
use tower_shared::fleet::{attention, sort_by_trouble, Fleet, FleetApp, FleetCell, Severity};
use tower_shared::time::age;

use crate::api;

/// How many rows the matrix draws at first, and adds per "Show more": the DOM stays small
/// with 1,000 apps (trouble sorts first, so what matters is always drawn).
const PAGE: usize = 100;

/// What the viewer chose; kept here so a refresh of the data keeps it.
#[derive(Clone, Copy, Debug)]
struct Filters {
    query: RwSignal<String>,
    only_trouble: RwSignal<bool>,
    shown: RwSignal<usize>,
}

/// Loads `/api/fleet` (again whenever a Kubernetes object or a cluster's health changes)
/// and shows it, with distinct loading and error states.
#[component]
pub fn FleetOverview() -> impl IntoView {
    let feed = crate::feed::feed();
    let now = feed.now;
    let fleet = crate::feed::settled(LocalResource::new(move || {
        feed.refresh.fleet.track();
        api::fleet()
    }));
    let filters = Filters {
        query: RwSignal::new(String::new()),
        only_trouble: RwSignal::new(false),
        shown: RwSignal::new(PAGE),
    };
    view! {
        <section class="fleet" aria-labelledby="fleet-title">
            <h2 id="fleet-title">"Fleet"</h2>
            // The clusters' freshness comes with the summary every page shares.
            <crate::ui::SharedHealthNotice />
            {move || match fleet.get() {
                None => view! { <p class="state loading">"Loading the fleet…"</p> }.into_any(),
                Some(Ok(fleet)) => view! { <FleetMatrix fleet=fleet now=now filters=filters /> }.into_any(),
                Some(Err(err)) => crate::ui::error_alert(&err),
            }}
        </section>
    }
}

#[component]
fn FleetMatrix(fleet: Fleet, now: ReadSignal<DateTime<Utc>>, filters: Filters) -> impl IntoView {
    let streaming = crate::feed::feed().refresh.streaming;
    let Fleet {
        generated_at,
        environments,
        mut apps,
    } = fleet;
    sort_by_trouble(&mut apps);
    let Filters {
        query,
        only_trouble,
        shown,
    } = filters;
    let apps = StoredValue::new(apps);
    let environments = StoredValue::new(environments);

    let matching = Memo::new(move |_| {
        let needle = query.get().trim().to_lowercase();
        let only_trouble = only_trouble.get();
        apps.with_value(|apps| {
            apps.iter()
                .filter(|app| needle.is_empty() || app.name.to_lowercase().contains(&needle))
                .filter(|app| !only_trouble || needs_attention(app))
                .cloned()
                .collect::<Vec<_>>()
        })
    });
    let visible = Memo::new(move |_| {
        matching.with(|apps| apps.iter().take(shown.get()).cloned().collect::<Vec<_>>())
    });
    let hidden = move || matching.with(Vec::len).saturating_sub(shown.get());

    view! {
        <div class="toolbar">
            <label>
                "Filter "
                <input
                    type="search"
                    placeholder="app name"
                    prop:value=move || query.get()
                    on:input=move |ev| {
                        query.set(event_target_value(&ev));
                        shown.set(PAGE);
                    }
                />
            </label>
            <label>
                <input
                    type="checkbox"
                    prop:checked=move || only_trouble.get()
                    on:change=move |ev| only_trouble.set(event_target_checked(&ev))
                />
                " Needs attention only"
            </label>
            <span class="updated" title=generated_at.to_rfc3339()>
                "Updated " {move || age(generated_at, now.get())}
                {move || if streaming.get() { " · following changes live" } else { " · checking every 6 s" }}
            </span>
        </div>
        <table class="matrix">
            <thead>
                <tr>
                    <th scope="col">"App"</th>
                    {environments
                        .get_value()
                        .into_iter()
                        .map(|env| view! { <th scope="col">{env}</th> })
                        .collect_view()}
                </tr>
            </thead>
            <tbody>
                <For each=move || visible.get() key=|app| app.name.clone() let:app>
                    <FleetRow app=app environments=environments.get_value() />
                </For>
            </tbody>
        </table>
        <Show when=move || visible.with(Vec::is_empty)>
            <p class="state empty">"No app matches."</p>
        </Show>
        <Show when=move || { hidden() > 0 }>
            <p class="more">
                {move || format!("Showing {} of {} apps. ", visible.with(Vec::len), matching.with(Vec::len))}
                <button type="button" on:click=move |_| shown.update(|n| *n += PAGE)>
                    {move || format!("Show {} more", hidden().min(PAGE))}
                </button>
            </p>
        </Show>
    }
}

fn needs_attention(app: &FleetApp) -> bool {
    app.cells
        .iter()
        .filter_map(attention)
        .any(|a| a.severity >= Severity::Attention)
}

#[component]
fn FleetRow(app: FleetApp, environments: Vec<String>) -> impl IntoView {
    let cells = environments
        .into_iter()
        .map(|env| {
            let cell = app.cells.iter().find(|c| c.environment == env).cloned();
            view! { <FleetCellView service=app.name.clone() cell=cell /> }
        })
        .collect_view();
    view! {
        <tr>
            <th scope="row" class="app">
                <a class="app-name" href=crate::nav::tab_href(crate::nav::Tab::Deployments, &app.name, None)>
                    {app.name.clone()}
                </a>
                <span class="app-kind">{app.kind.clone()}</span>
            </th>
            {cells}
        </tr>
    }
}

/// One app in one environment; it links to that environment on the app's Deployments tab.
#[component]
fn FleetCellView(service: String, cell: Option<FleetCell>) -> impl IntoView {
    let Some(cell) = cell else {
        return view! { <td class="cell absent" title="Not deployed here">"—"</td> }.into_any();
    };
    let tag = cell
        .image_tag
        .clone()
        .unwrap_or_else(|| "image unknown".to_owned());
    let href = crate::nav::environment_href(&service, &cell.environment);
    match attention(&cell) {
        None => view! {
            <td class="cell calm" title="Synced and healthy">
                <a href=href>
                    <span class="status">"✔ Healthy"</span>
                    <span class="tag">{tag}</span>
                </a>
            </td>
        }
        .into_any(),
        Some(a) => {
            let (class, icon) = match a.severity {
                Severity::Notice => ("cell notice", "◌"),
                Severity::Attention => ("cell attention", "⚠"),
                Severity::Failing => ("cell failing", "✖"),
            };
            view! {
                <td class=class title=a.reason.clone()>
                    <a href=href>
                        <span class="status">{icon} " " {a.reason.clone()}</span>
                        <span class="tag">{tag}</span>
                    </a>
                </td>
            }
            .into_any()
        }
    }
}
