//! The fleet overview: every app × every environment, trouble first.

use chrono::{DateTime, Utc};
use leptos::prelude::*;
use tower_shared::api::{ActivityAnswer, DoraAnswer};
use tower_shared::fleet::{attention, needs_attention, Fleet, FleetApp, FleetCell, Severity};
use tower_shared::time::age;

use crate::api;

/// The matrix windows its rows: only those in view (and [`OVERSCAN`] either side) are in
/// the DOM, each [`ROW_PX`] high (the stylesheet holds rows to it), so 10,000 apps scroll
/// and filter like 30.
/// Whole pixels: the spacers' heights are drawn as integers, since drawing a float would bring
/// the float formatter into the first load.
const ROW_PX: u32 = 60;
const OVERSCAN: usize = 4;
/// The window's height before it has been measured, as a share of the viewport's (the
/// stylesheet's `max-height: 75vh`), and when the viewport's is unknown.
const FIRST_HEIGHT_SHARE: f64 = 0.75;
const FIRST_HEIGHT_PX: f64 = 900.0;

/// What the viewer chose; kept here so a refresh of the data keeps it.
#[derive(Clone, Copy, Debug)]
struct Filters {
    query: RwSignal<String>,
    only_trouble: RwSignal<bool>,
    /// How many apps need attention, once the fleet is read (for the headline).
    attention: RwSignal<Option<usize>>,
}

/// Loads `/api/fleet` (again whenever a Kubernetes object or a cluster's health changes)
/// and shows it, with distinct loading and error states.
#[component]
pub fn FleetOverview() -> impl IntoView {
    let feed = crate::feed::feed();
    let now = feed.now;
    let fleet =
        crate::feed::decoded::<tower_shared::fleet::Fleet>(crate::feed::text_resource(move || {
            feed.refresh.fleet.track();
            api::fleet()
        }));
    // The fleet's DORA week, read by the headline and by the DORA panel (while it shows a
    // week): one request and one answer for both, again on every change.
    let any = feed.refresh.any;
    let week = crate::feed::text_resource(move || {
        any.track();
        api::dora_text(None, 7)
    });
    let below = NodeRef::<leptos::html::Div>::new();
    let filters = Filters {
        query: RwSignal::new(String::new()),
        only_trouble: RwSignal::new(false),
        attention: RwSignal::new(None),
    };
    view! {
        <section class="fleet" aria-labelledby="fleet-title">
            <h2 id="fleet-title">"Fleet"</h2>
            // The clusters' freshness comes with the summary every page shares.
            <crate::ui::SharedHealthNotice />
            // Its code (DORA's answer type) is a chunk of its own, off the first load; until
            // it comes, the strip stands with its figures unknown (nothing moves when they come).
            {crate::tabs::lazily_as(
                || strip("…".into_any(), "…".into_any(), "…".into_any()).into_any(),
                headline(filters.attention, now, week),
            )}
            {move || match fleet() {
                None => view! { <p class="state loading matrix-hold">"Loading the fleet…"</p> }.into_any(),
                Some(Ok(fleet)) => view! { <FleetMatrix fleet=fleet now=now filters=filters /> }.into_any(),
                Some(Err(err)) => crate::ui::error_alert(&err),
            }}
            // Below the matrix: their code is a chunk of its own, fetched when its reader
            // scrolls to them.
            <div class="fleet-panels" node_ref=below>
                {crate::tabs::lazily("Loading the activity…".to_owned(), async move {
                    crate::ui::in_view(below).await;
                    panels(now, week).await
                })}
            </div>
        </section>
    }
}

/// The fleet's recent activity and its DORA panel.
#[allow(unsafe_code)]
#[leptos::wasm_split::wasm_split(fleet_panels, wasm_split_path = ::leptos::wasm_split, fallible)]
fn panels(
    now: ReadSignal<DateTime<Utc>>,
    week: crate::feed::Text,
) -> Result<AnyView, crate::tabs::Unloaded> {
    Ok(view! { <ActivityFeed /> {dora_panel(None, now, Some(week))} }.into_any())
}

/// The fleet's recent activity (`GET /api/activity`), newest first, asked again whenever
/// anything changes: each item's sentence links to the tab that shows it.
#[component]
fn ActivityFeed() -> impl IntoView {
    use crate::nav::{environment_href, tab_href, Tab};
    let feed = crate::feed::feed();
    let (now, any) = (feed.now, feed.refresh.any);
    let answer = crate::feed::decoded::<ActivityAnswer>(crate::feed::text_resource(move || {
        any.track();
        api::activity_text()
    }));
    let body = move || match answer()? {
        Err(err) => Some(crate::ui::error_alert(&err)),
        Ok(activity) => {
            let items = activity.items;
            if items.is_empty() {
                return Some(
                    view! { <p class="state empty">"Nothing happened in the last 24 hours."</p> }
                        .into_any(),
                );
            }
            let items = items
                .iter()
                .map(|item| {
                    let service = &item.service;
                    let tab = Tab::from_id(&item.tab).unwrap_or(Tab::DEFAULT);
                    let href = match (tab, item.environment.as_deref(), item.run.as_deref()) {
                        (Tab::Deployments, Some(env), _) => environment_href(service, env),
                        (_, _, run) => tab_href(tab, service, run),
                    };
                    let when = ago(Some(item.at), now);
                    view! {
                        <li data-kind=api::wire_name(&item.kind)>
                            <span class="when">{when}</span>" "
                            <a href=href>{item.said.clone()}</a>
                        </li>
                    }
                })
                .collect_view();
            Some(
                view! {
                    <ol class="activity-items" tabindex="0" aria-label="Recent activity, newest first">
                        {items}
                    </ol>
                }
                .into_any(),
            )
        }
    };
    panel("activity", "Recent activity", body)
}

/// A panel over the matrix: its class names it, its heading labels it.
fn panel(class: &'static str, title: &'static str, body: impl IntoView) -> impl IntoView {
    let id = format!("{class}-title");
    view! {
        <section class=class aria-labelledby=id.clone()>
            <h3 id=id.clone()>{title}</h3>
            {body}
        </section>
    }
}

/// How long ago `at` was, on Tower's clock.
fn ago(at: Option<DateTime<Utc>>, now: ReadSignal<DateTime<Utc>>) -> String {
    at.map_or_else(
        || "at an unknown time".to_owned(),
        |t| age(t, now.get_untracked()),
    )
}

/// The strip over the fleet: how many apps need attention, how many releases went live in
/// prod in the last 24 hours, and the week's change failure rate; each "unknown" until
/// known, never zero.
#[allow(unsafe_code)]
#[leptos::wasm_split::wasm_split(fleet_headline, wasm_split_path = ::leptos::wasm_split, fallible)]
fn headline(
    attention: RwSignal<Option<usize>>,
    now: ReadSignal<DateTime<Utc>>,
    week: crate::feed::Text,
) -> Result<AnyView, crate::tabs::Unloaded> {
    // The week's DORA figures: the last day's deploys and the failure rate, worked out once
    // per answer.
    let dora = crate::feed::decoded::<DoraAnswer>(week);
    let figures = Memo::new(move |_| {
        let dora = dora()?.ok()?;
        let since = now.get_untracked() - chrono::Duration::hours(24);
        let report = dora.report;
        let deploys = report
            .rollouts
            .iter()
            .filter_map(|r| r.live_at)
            .filter(|t| *t >= since)
            .count()
            .to_string();
        let rate = report.dora.change_failure_rate.map_or_else(
            || "none ended".to_owned(),
            |r| format!("{:.0} %", r * 100.0),
        );
        Some((deploys, rate))
    });
    let figure = |value: Option<String>| value.unwrap_or_else(|| "unknown".to_owned());
    Ok(strip(
        (move || figure(attention.get().map(|n| n.to_string()))).into_any(),
        (move || figure(figures.with(|f| f.as_ref().map(|f| f.0.clone())))).into_any(),
        (move || figure(figures.with(|f| f.as_ref().map(|f| f.1.clone())))).into_any(),
    )
    .into_any())
}

/// The strip's three boxes around their figures (also drawn, figures unknown, while its
/// code loads).
fn strip(attention: AnyView, deploys: AnyView, rate: AnyView) -> impl IntoView {
    view! {
        <dl class="headline-strip" aria-label="The fleet at a glance">
            <div><dt>"Apps needing attention"</dt><dd>{attention}</dd></div>
            <div><dt>"Deploys to prod, last 24 h"</dt><dd>{deploys}</dd></div>
            <div><dt>"Change failure rate, 7 days"</dt><dd>{rate}</dd></div>
        </dl>
    }
}

/// The fleet's or one app's DORA figures over a window its reader picks (a day, a week —
/// the default — or 30 days; `GET /api/dora`): the sentence, then what it counted — each
/// prod rollout linking to its release's row of its app's release matrix, each change to
/// its pull request. Read once per window chosen and again when the fleet changes (the
/// fleet's figures read every app). `week`: the same answer over 7 days, when the page has
/// it already. What was counted is drawn when its reader opens it.
pub(crate) fn dora_panel(
    service: Option<String>,
    now: ReadSignal<DateTime<Utc>>,
    week: Option<crate::feed::Text>,
) -> impl IntoView {
    let days = RwSignal::new(7_u32);
    let any = crate::feed::feed().refresh.any;
    let shared = move || week.filter(|_| days.get() == 7);
    // While the page's week is shown, this one answers at once with nothing it reads.
    let own = crate::feed::text_resource(move || {
        if shared().is_some() {
            return Box::pin(std::future::ready(Ok(String::new()))) as api::TextFuture;
        }
        any.track();
        api::dora_text(service.clone(), days.get())
    });
    let text = Memo::new(move |_| match shared() {
        Some(week) => week.get(),
        None => own.get(),
    });
    let answer = crate::feed::decoded::<DoraAnswer>(text);
    let open = RwSignal::new(false);
    use crate::nav::{tab_href, Tab};
    let body = move || match answer()? {
        Err(err) => Some(crate::ui::error_alert(&err)),
        Ok(dora) => {
            let report = dora.report;
            let sentence = report.sentence.clone();
            let many = |n: usize, one: &str, more: &str| {
                format!("{n} {}", if n == 1 { one } else { more })
            };
            let counted = format!(
                "What was counted: {}, {}",
                many(report.rollouts.len(), "prod rollout", "prod rollouts"),
                many(report.changes.len(), "change", "changes")
            );
            let lists = move || {
                open.get().then(|| {
                    let tag = |release: &str| tower_shared::image::short(release).to_owned();
                    // Each counted item as a link and what it was.
                    let item = |(href, link, rest): (String, String, String)| {
                        view! { <li><a href=href>{link}</a>{rest}</li> }
                    };
                    let rollouts = report
                        .rollouts
                        .iter()
                        .map(|r| {
                            let outcome = api::wire_name(&r.outcome).replace('-', " ");
                            // Its row of the app's release matrix.
                            let href = format!(
                                "{}#release-{}",
                                tab_href(Tab::Releases, &r.service, None),
                                tower_shared::image::release_name(&r.release).unwrap_or_default()
                            );
                            item((
                                href,
                                format!("{} {}", r.service, tag(&r.release)),
                                format!(" — {outcome}, started {}", ago(Some(r.started_at), now)),
                            ))
                        })
                        .collect_view();
                    let changes = report
                        .changes
                        .iter()
                        .map(|c| {
                            item((
                                c.url.clone().unwrap_or_default(),
                                c.id.clone(),
                                format!(
                                    " merged {}, in {}",
                                    ago(Some(c.merged_at), now),
                                    c.release
                                        .as_deref()
                                        .map_or_else(|| "an unknown release".to_owned(), tag)
                                ),
                            ))
                        })
                        .collect_view();
                    view! {
                        <ul class="dora-rollouts">{rollouts}</ul>
                        <ul class="dora-changes">{changes}</ul>
                    }
                })
            };
            Some(
                view! {
                    <p class="sentence">{sentence}</p>
                    <details
                        prop:open=open.get_untracked()
                        on:toggle=move |ev| {
                            open.set(event_target::<web_sys::Element>(&ev).has_attribute("open"));
                        }
                    >
                        <summary>{counted}</summary>
                        {lists}
                    </details>
                }
                .into_any(),
            )
        }
    };
    let window = view! {
        <label class="dora-window">
            "Over the last "
            <select on:change=move |ev| {
                if let Ok(n) = event_target_value(&ev).parse() {
                    days.set(n);
                }
            }>
                <option value="1">"day"</option>
                <option value="7" selected>"7 days"</option>
                <option value="30">"30 days"</option>
            </select>
        </label>
    };
    panel("dora", "Delivery", view! { {window}{body} })
}

/// Each app as the filters read it: its name in lower case and whether it needs attention,
/// worked out once per answer rather than on every keystroke.
struct Row {
    app: FleetApp,
    name: String,
    troubled: bool,
}

#[component]
fn FleetMatrix(fleet: Fleet, now: ReadSignal<DateTime<Utc>>, filters: Filters) -> impl IntoView {
    let streaming = crate::feed::feed().refresh.streaming;
    // The server sends the apps sorted by trouble.
    let Fleet {
        generated_at,
        environments,
        apps,
    } = fleet;
    let Filters {
        query,
        only_trouble,
        attention,
    } = filters;
    let total = apps.len();
    let rows: Vec<Row> = apps
        .into_iter()
        .map(|app| Row {
            // Names are Kubernetes names (lowercase letters, digits, `-`, `.`), so ASCII
            // case is the only case a match can differ in; full Unicode lowercasing would
            // bring its tables into the first load.
            name: app.name.to_ascii_lowercase(),
            troubled: needs_attention(&app),
            app,
        })
        .collect();
    attention.set(Some(rows.iter().filter(|r| r.troubled).count()));
    let rows = StoredValue::new(rows);
    let columns = environments.len() + 1;
    let environments = StoredValue::new(environments);

    // Indices of the apps the filters let through, in the fleet's order.
    let matching = Memo::new(move |_| {
        let needle = query.get().trim().to_ascii_lowercase();
        let only_trouble = only_trouble.get();
        rows.with_value(|rows| {
            rows.iter()
                .enumerate()
                .filter(|(_, row)| needle.is_empty() || row.name.contains(&needle))
                .filter(|(_, row)| !only_trouble || row.troubled)
                .map(|(i, _)| i)
                .collect::<Vec<usize>>()
        })
    });
    // Where the window is scrolled to, and how tall it is.
    let scrolled = RwSignal::new(0.0_f64);
    let first_height = web_sys::window()
        .and_then(|w| w.inner_height().ok())
        .and_then(|h| h.as_f64())
        .map_or(FIRST_HEIGHT_PX, |h| h * FIRST_HEIGHT_SHARE);
    let height = RwSignal::new(first_height);
    let scroller = NodeRef::<leptos::html::Div>::new();
    // New filters start from the top. Not on the first drawing, which is at the top already:
    // setting `scrollTop` lays the page out there and then, the largest piece of the fleet's
    // first drawing on a slow phone.
    Effect::new(move |drawn: Option<()>| {
        matching.track();
        if drawn.is_some() {
            if let Some(el) = scroller.get_untracked() {
                el.set_scroll_top(0);
            }
            scrolled.set(0.0);
        }
    });
    // The range of matching apps drawn: the ones in view and a few either side.
    let window = Memo::new(move |_| {
        let count = matching.with(Vec::len);
        let first =
            ((scrolled.get() / f64::from(ROW_PX)).floor() as usize).saturating_sub(OVERSCAN);
        let shown = (height.get() / f64::from(ROW_PX)).ceil() as usize + 2 * OVERSCAN;
        let first = first.min(count);
        (first, (first + shown).min(count))
    });
    // Each drawn app with its place among the matching ones.
    let drawn = move || {
        let (first, last) = window.get();
        matching.with(|m| (first..last).map(|pos| (pos, m[pos])).collect::<Vec<_>>())
    };
    let spacer = move |rows: usize| {
        let px = rows.saturating_mul(ROW_PX as usize);
        view! {
            <tr class="spacer" aria-hidden="true" style:height=format!("{px}px")>
                <td colspan=columns></td>
            </tr>
        }
    };
    let matched = move || matching.with(Vec::len);

    view! {
        <div class="toolbar">
            <label>
                "Filter "
                <input
                    type="search"
                    placeholder="app name"
                    prop:value=move || query.get()
                    on:input=move |ev| query.set(event_target_value(&ev))
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
            <span class="count" aria-live="polite">
                {move || if matched() == total {
                    format!("{total} apps")
                } else {
                    format!("{} of {total} apps", matched())
                }}
            </span>
            <span class="updated" title=generated_at.to_rfc3339()>
                "Updated " {move || age(generated_at, now.get())}
                {move || if streaming.get() { " · following changes live" } else { " · checking every 6 s" }}
            </span>
        </div>
        <div
            class="matrix-window"
            node_ref=scroller
            tabindex="0"
            role="region"
            aria-label="Apps by environment"
            on:scroll=move |ev| {
                let el = event_target::<web_sys::Element>(&ev);
                scrolled.set(f64::from(el.scroll_top()));
                height.set(f64::from(el.client_height()).max(f64::from(ROW_PX)));
            }
        >
            <table class="matrix" aria-rowcount=move || matched() + 1>
                <thead>
                    <tr aria-rowindex="1">
                        <th scope="col">"App"</th>
                        {environments
                            .get_value()
                            .into_iter()
                            .map(|env| view! { <th scope="col">{env}</th> })
                            .collect_view()}
                    </tr>
                </thead>
                <tbody>
                    {move || spacer(window.get().0)}
                    <For each=drawn key=|place| *place let:((pos, i))>
                        <FleetRow
                            app=rows.with_value(|r| r[i].app.clone())
                            environments=environments.get_value()
                            index=pos
                        />
                    </For>
                    {move || {
                        let (_, last) = window.get();
                        spacer(matched() - last)
                    }}
                </tbody>
            </table>
        </div>
        <Show when=move || matched() == 0>
            <p class="state empty">"No app matches."</p>
        </Show>
    }
}

/// One app's row; `index` is its place among the matching apps (for `aria-rowindex`: the
/// header is row 1).
#[component]
fn FleetRow(app: FleetApp, environments: Vec<String>, index: usize) -> impl IntoView {
    let provisioning_href = crate::nav::tab_href(crate::nav::Tab::Provisioning, &app.name, None);
    // Not deployed anywhere yet and still provisioning: one cell across the environments,
    // saying how far it is and linking to its Provisioning tab.
    let cells = match &app.provisioning {
        Some(said) if app.cells.is_empty() => {
            let (class, icon) = severity_look(said.severity);
            let span = environments.len().max(1);
            view! {
                <td class=format!("{class} provisioning") colspan=span title=said.reason.clone()>
                    <a href=provisioning_href.clone()>
                        <span class="status">{icon} " " {said.reason.clone()}</span>
                    </a>
                </td>
            }
            .into_any()
        }
        _ => environments
            .into_iter()
            .map(|env| {
                let cell = app.cells.iter().find(|c| c.environment == env).cloned();
                view! { <FleetCellView service=app.name.clone() cell=cell /> }
            })
            .collect_view()
            .into_any(),
    };
    // Its name opens the app; one not deployed anywhere yet opens its provisioning.
    let name_href = if app.cells.is_empty() && app.provisioning.is_some() {
        provisioning_href.clone()
    } else {
        crate::nav::tab_href(crate::nav::Tab::Deployments, &app.name, None)
    };
    // Deployed somewhere and still provisioning: said beside its kind.
    let provisioning = app
        .provisioning
        .as_ref()
        .filter(|_| !app.cells.is_empty())
        .map(|said| {
            let (_, icon) = severity_look(said.severity);
            let words = format!("{icon} {}", said.reason);
            view! { " · " <a class="provisioning-note" href=provisioning_href.clone()>{words}</a> }
        });
    // What the platform made for it, failing: amber beside its kind, linking to its Config.
    let platform = (!app.platform.is_empty()).then(|| {
        let href = crate::nav::tab_href(crate::nav::Tab::Config, &app.name, None);
        let all = app.platform.join("; ");
        let title = all.clone();
        view! { " · " <a class="platform-issue" href=href title=title>"⚠ " {all}</a> }
    });
    view! {
        <tr aria-rowindex=index + 2>
            <th scope="row" class="app">
                <a class="app-name" href=name_href>
                    {app.name.clone()}
                </a>
                <span class="app-kind">{app.kind.clone()}{platform}{provisioning}</span>
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
        .running_tag()
        .map_or_else(|| "image unknown".to_owned(), str::to_owned);
    // What is on its way in, at its actual weight beside the one its steps set.
    let arriving = cell.arriving.as_ref().map(|a| {
        let image = a
            .image
            .as_deref()
            .map_or("an image not seen", tower_shared::image::short);
        let weight = match (a.weight, a.desired_weight) {
            (Some(actual), Some(desired)) if actual != desired => {
                format!(" at {actual}% (set {desired}%)")
            }
            (Some(actual), _) => format!(" at {actual}%"),
            (None, Some(desired)) => format!(" (set {desired}%, actual unknown)"),
            (None, None) => String::new(),
        };
        view! { <span class="arriving">{format!(" → {image}{weight}")}</span> }
    });
    let href = crate::nav::environment_href(&service, &cell.environment);
    // A cloud target's cell: deployed by its deploy runs, not synced by Argo CD.
    let (calm, calm_title) = match cell.cloud {
        Some(target) => (
            "✔ Deployed".to_owned(),
            format!("Deployed to {} by its last deploy run", target.title()),
        ),
        None => ("✔ Healthy".to_owned(), "Synced and healthy".to_owned()),
    };
    match attention(&cell) {
        None => view! {
            <td class="cell calm" title=calm_title>
                <a href=href>
                    <span class="status">{calm}</span>
                    <span class="tag">{tag}{arriving}</span>
                </a>
            </td>
        }
        .into_any(),
        Some(a) => {
            let (class, icon) = severity_look(a.severity);
            // What only waits is said beside the trouble, as a notice (never amber).
            let waits = (a.severity > Severity::Notice && !cell.waits.is_empty())
                .then(|| cell.waits.join("; "));
            let title = match &waits {
                Some(waits) => format!("{}; {waits}", a.reason),
                None => a.reason.clone(),
            };
            let waits = waits.map(|w| view! { <span class="wait">" ◌ " {w}</span> });
            view! {
                <td class=class title=title>
                    <a href=href>
                        <span class="status">{icon} " " {a.reason.clone()} {waits}</span>
                        <span class="tag">{tag}{arriving}</span>
                    </a>
                </td>
            }
            .into_any()
        }
    }
}

/// A severity's cell class and icon.
fn severity_look(severity: Severity) -> (&'static str, &'static str) {
    match severity {
        Severity::Notice => ("cell notice", "◌"),
        Severity::Attention => ("cell attention", "⚠"),
        Severity::Failing => ("cell failing", "✖"),
    }
}
