//! The Releases tab (`GET /api/releases`): the release matrix as the backend derived it.
//! Down a column, what runs in an environment; across a row, where one release has got to,
//! and the one place it can go next.

use chrono::{DateTime, Utc};
use leptos::prelude::*;
use tower_shared::releases::{Cell, CellState, Promotion, Release, Releases};
use tower_shared::time::{age, compact_duration};

use crate::nav::{tab_href, Tab};

/// A cell's class and words.
fn cell_label(cell: &Cell) -> (&'static str, String) {
    match cell.state {
        CellState::Live => ("status-ok", "✔ live".to_owned()),
        CellState::Canary => (
            "status-running",
            match cell.weight {
                Some(weight) => format!("◐ canary at {weight}%"),
                None => "◐ canary".to_owned(),
            },
        ),
        CellState::RolledBack => ("status-attention", "↺ rolled back".to_owned()),
        CellState::NotYet => ("status-unknown", "– not yet".to_owned()),
        CellState::Superseded => ("status-unknown", "· older than what runs".to_owned()),
        CellState::Unknown => ("status-unknown", "? unknown".to_owned()),
    }
}

fn how_words(how: Promotion) -> &'static str {
    match how {
        Promotion::Commit => "a commit to the GitOps repo",
        Promotion::PullRequest => "a reviewed pull request",
    }
}

/// The release's name: its tag's version and commit, else the image.
fn name(release: &Release) -> String {
    match (&release.version, &release.short_sha) {
        (Some(version), Some(sha)) => format!("{version}-{sha}"),
        _ => release.image.clone(),
    }
}

/// The tab's first sentence: where the newest release is, and where it goes next.
fn sentence(releases: &Releases) -> String {
    let Some(newest) = releases.releases.first() else {
        return format!("Tower sees no release of {} yet.", releases.service);
    };
    let live: Vec<&str> = newest
        .cells
        .iter()
        .filter(|c| c.state == CellState::Live)
        .map(|c| c.environment.as_str())
        .collect();
    let canary = newest
        .cells
        .iter()
        .find(|c| c.state == CellState::Canary)
        .map(|c| cell_label(c).1.trim_start_matches("◐ ").to_owned() + " in " + &c.environment);
    let at = match (live.is_empty(), canary) {
        (true, None) => "runs nowhere yet".to_owned(),
        (false, None) => format!("is live in {}", live.join(", ")),
        (true, Some(canary)) => format!("is the {canary}"),
        (false, Some(canary)) => format!("is live in {} and the {canary}", live.join(", ")),
    };
    let next = match &newest.next {
        Some(next) => format!(
            "; it goes to {} next, by {}.",
            next.environment,
            how_words(next.how)
        ),
        None => ".".to_owned(),
    };
    format!("The newest release, {}, {at}{next}", name(newest))
}

#[component]
pub fn ReleasesTab(releases: Releases, now: ReadSignal<DateTime<Utc>>) -> impl IntoView {
    // The columns are the service's environments: not a fixed list.
    let columns = releases
        .environments
        .iter()
        .map(|env| view! { <th scope="col">{env.clone()}</th> })
        .collect_view();
    let head = view! { <thead><tr><th scope="col">"Release"</th>{columns}</tr></thead> };
    let service = releases.service.clone();
    let rows = releases
        .releases
        .iter()
        .map(|release| row(release, &service, now))
        .collect_view();
    view! {
        <p class="headline">{sentence(&releases)}</p>
        <table class="releases" aria-rowcount=releases.releases.len()>
            {head}
            <tbody>{rows}</tbody>
        </table>
    }
}

fn row(release: &Release, service: &str, now: ReadSignal<DateTime<Utc>>) -> impl IntoView {
    let built = release.built_at;
    // "arrived 2h 10m ago, 1h 06m after its build".
    let arrival = move |cell: &Cell| {
        cell.arrived_at.map(|at| {
            let after = built.map(|b| format!(", {} after its build", compact_duration((at - b).num_seconds())));
            view! {
                <span class="arrived">
                    {move || format!("arrived {}{}", age(at, now.get()), after.clone().unwrap_or_default())}
                </span>
            }
        })
    };
    let run = release.run.as_ref().map(|run| {
        view! { <a class="tag" href=tab_href(Tab::Pipelines, service, Some(run))>"build"</a> }
    });
    let cells = release
        .cells
        .iter()
        .map(|cell| {
            let (class, words) = cell_label(cell);
            let next = release
                .next
                .as_ref()
                .filter(|n| n.environment == cell.environment)
                .map(|n| view! { <span class="next">{format!("→ goes here next, by {}", how_words(n.how))}</span> });
            let state = match cell.state {
                CellState::Live => "live",
                CellState::Canary => "canary",
                CellState::RolledBack => "rolled-back",
                CellState::NotYet => "not-yet",
                CellState::Superseded => "superseded",
                CellState::Unknown => "unknown",
            };
            view! {
                <td class=class data-env=cell.environment.clone() data-state=state>
                    {words}{arrival(cell)}{next}
                </td>
            }
        })
        .collect_view();
    view! {
        <tr data-release=name(release)>
            <th scope="row">
                <span class="release-name">{name(release)}</span>
                <span class="tag">
                    {move || built.map_or_else(|| "build not seen".to_owned(), |t| format!("built {}", age(t, now.get())))}
                </span>
                {run}
            </th>
            {cells}
        </tr>
    }
}
