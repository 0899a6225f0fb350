//! The Releases tab (`GET /api/releases`): the release matrix as the backend derived it.
//! Down a column, what runs in an environment; across a row, where one release has got to,
//! and the one place it can go next — with the one button that promotes it there (or the
//! pull request already proposing it). Pressing it shows the diff first
//! (`GET /api/releases/promotion`); confirming makes the commit or pull request
//! (`POST /api/releases/promote`). Who may not promote sees why, beside the button. Any two
//! rows compare (`GET /api/releases/compare`): the commits, pull requests, builds and
//! configuration changes between them.

use chrono::{DateTime, Utc};
use leptos::prelude::*;
use tower_shared::api::{Access, PromoteAnswer, PromoteRequest, PromotionPreview};
use tower_shared::cicd::Promotion;
use tower_shared::image::short as tag_of;
use tower_shared::releases::{Cell, CellState, Comparison, Next, Release, Releases};
use tower_shared::time::{age, compact_duration};
use tower_shared::values::LineChange;

use crate::api::{self, ApiError};
use crate::nav::{tab_href, Tab};

/// Rows a page of the matrix shows.
pub const PAGE: usize = 20;

/// The promotion a button asked for: the release's image and the environment.
pub type Chosen = Option<(String, String)>;

/// The releases picked to compare (images), at most two, the first picked first.
pub type Picked = RwSignal<Vec<String>>;

/// A cell's class and words.
fn cell_label(cell: &Cell) -> (&'static str, String) {
    match cell.state {
        CellState::Live => ("status-ok", "✔ live".to_owned()),
        CellState::Canary => (
            "status-running",
            match (cell.weight, cell.desired_weight) {
                (Some(actual), Some(desired)) if actual != desired => {
                    format!("◐ canary at {actual}% (set {desired}%)")
                }
                (Some(weight), _) => format!("◐ canary at {weight}%"),
                (None, Some(desired)) => format!("◐ canary (set {desired}%, actual unknown)"),
                (None, None) => "◐ canary".to_owned(),
            },
        ),
        CellState::RolledBack => ("status-attention", "↺ rolled back".to_owned()),
        CellState::NotYet => match &cell.held {
            // Live in the environment before, but that one is not ready: say why.
            Some(why) => ("status-attention", format!("⏸ {why}")),
            None => ("status-unknown", "– not yet".to_owned()),
        },
        // A ReplicaSet kept here says it ran here before.
        CellState::Superseded if cell.arrived_at.is_some() => {
            ("status-unknown", "· ran here before".to_owned())
        }
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
pub fn ReleasesTab(
    releases: Releases,
    now: ReadSignal<DateTime<Utc>>,
    /// The caller's access to the service, once read.
    access: Signal<Option<Access>>,
    chosen: RwSignal<Chosen>,
    /// How many pages of [`PAGE`] rows are shown.
    pages: RwSignal<usize>,
    picked: Picked,
) -> impl IntoView {
    // The columns are the service's environments: not a fixed list.
    let columns = releases
        .environments
        .iter()
        .map(|env| view! { <th scope="col">{env.clone()}</th> })
        .collect_view();
    let head = view! { <thead><tr><th scope="col">"Release"</th>{columns}</tr></thead> };
    let service = releases.service.clone();
    let total = releases.releases.len();
    let shown = total.min(pages.get_untracked() * PAGE);
    let rows = releases
        .releases
        .iter()
        .take(shown)
        .map(|release| row(release, &service, now, (access, chosen, picked)))
        .collect_view();
    view! {
        <p class="headline">{sentence(&releases)}</p>
        <table class="releases" aria-rowcount=total>
            {head}
            <tbody>{rows}</tbody>
        </table>
        {crate::ui::load_more(shown < total, shown, total, pages)}
    }
}

/// The next cell's words and its one action: the promote button (disabled, with the
/// reason, for who may not promote) or the pull request already proposing it.
fn next_step(
    release: &Release,
    next: &Next,
    access: Signal<Option<Access>>,
    chosen: RwSignal<Chosen>,
) -> impl IntoView {
    let words = format!("→ goes here next, by {}", how_words(next.how));
    let action = match &next.pull {
        Some(pull) => view! {
            <a class="review" href=pull.url.clone().unwrap_or_default() target="_blank" rel="noopener">
                {format!("Review PR #{}", pull.number)}
            </a>
        }
        .into_any(),
        None => {
            let label = match next.how {
                Promotion::Commit => format!("Promote to {}…", next.environment),
                Promotion::PullRequest => format!("Open a PR to {}…", next.environment),
            };
            let wanted = (release.image.clone(), next.environment.clone());
            let may = move || access.get().is_some_and(|a| a.may_promote);
            view! {
                <button type="button" class="promote" disabled=move || !may()
                    on:click=move |_| chosen.set(Some(wanted.clone()))>{label}</button>
                {crate::ui::why_not(access, "promote")}
            }
            .into_any()
        }
    };
    view! { <span class="next">{words}</span>{action} }
}

/// What pressing a promote button shows: the diff of the environment file, then the one
/// button that makes it, and what came of it.
#[component]
pub fn PromotionPanel(service: String, chosen: RwSignal<Chosen>) -> impl IntoView {
    // Read afresh each time a button is pressed (what GitHub has now), kept only while
    // that promotion is still the one chosen.
    let preview = RwSignal::new(None::<Result<PromotionPreview, ApiError>>);
    Effect::new(move |_| {
        preview.set(None);
        let Some((image, environment)) = chosen.get() else {
            return;
        };
        let service = service.clone();
        leptos::task::spawn_local(async move {
            let wanted = Some((image.clone(), environment.clone()));
            let answer = api::promotion(service, image, environment).await;
            if chosen.get_untracked() == wanted {
                preview.set(Some(answer));
            }
        });
    });
    let outcome = RwSignal::new(None::<Result<PromoteAnswer, ApiError>>);
    let pending = RwSignal::new(false);
    let close = move |_| {
        chosen.set(None);
        outcome.set(None);
    };
    let confirm = move |p: &PromotionPreview| {
        let request = PromoteRequest {
            service: p.service.clone(),
            image: p.image.clone(),
            environment: p.environment.clone(),
            seen: p.seen.clone(),
        };
        move |_| {
            let request = request.clone();
            pending.set(true);
            leptos::task::spawn_local(async move {
                outcome.set(Some(api::promote(request).await));
                pending.set(false);
            });
        }
    };
    let body = move || {
        let answer = preview.get()?;
        Some(match answer {
            Err(err) => view! {
                <p role="alert" class="status-failed">{format!("Tower cannot show this promotion: {err}")}</p>
            }
            .into_any(),
            Ok(p) => {
                let (what, verb) = match p.how {
                    Promotion::Commit => (format!("commits this change to {} on main", p.repo), "Commit to main"),
                    Promotion::PullRequest => (
                        format!("opens a pull request on {} from {}", p.repo, p.branch),
                        "Open the pull request",
                    ),
                };
                let name = tag_of(&p.image).to_owned();
                let sentence = if p.already {
                    format!("{} already names {name}: nothing to change.", p.path)
                } else {
                    format!("Promoting {name} to {} {what}:", p.environment)
                };
                let diff = diff_view(p.diff.iter().map(|l| (l.change, l.text.clone())).collect());
                let may = p.access.may_promote;
                let why_not = p.access.why_not.clone();
                let pull = p.pull.clone();
                let press = confirm(&p);
                view! {
                    <p>{sentence}</p>
                    <p class="tag">{p.path.clone()}</p>
                    {diff}
                    {pull.map(|pull| view! {
                        <p>"A pull request already proposes it: "
                            <a href=pull.url.unwrap_or_default() target="_blank" rel="noopener">{format!("Review PR #{}", pull.number)}</a>
                        </p>
                    })}
                    {why_not.map(|why| view! { <p class="why-not">{format!("You may not promote: {why}.")}</p> })}
                    <p class="actions">
                        <button type="button" class="confirm"
                            disabled=move || !may || p.already || pending.get() || outcome.get().is_some_and(|o| o.is_ok())
                            on:click=press>{verb}</button>
                        <button type="button" on:click=close>"Close"</button>
                    </p>
                }
                .into_any()
            }
        })
    };
    let result = move || {
        crate::ui::outcome_line("promoted", move || {
            outcome.get().map(|result| {
                result
                    .map(|a| a.message)
                    .map_err(|e| format!("Not promoted: {e}"))
            })
        })
    };
    move || {
        chosen.get().map(|(image, environment)| {
            let name = tag_of(&image).to_owned();
            view! {
                <section class="promotion" aria-label="Promotion">
                    <h3>{format!("Promote {name} to {environment}")}</h3>
                    {move || body().unwrap_or_else(|| view! { <p class="state">"Reading the file as GitHub has it now…"</p> }.into_any())}
                    <p>{result()}</p>
                </section>
            }
        })
    }
}

/// The release the address's fragment names (`#release-<name>`), if any.
fn linked_release() -> Option<String> {
    let hash = web_sys::window()?.location().hash().ok()?;
    hash.strip_prefix("#release-").map(str::to_owned)
}

fn row(
    release: &Release,
    service: &str,
    now: ReadSignal<DateTime<Utc>>,
    (access, chosen, picked): (Signal<Option<Access>>, RwSignal<Chosen>, Picked),
) -> impl IntoView {
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
                .map(|n| next_step(release, n, access, chosen));
            let state = match cell.state {
                CellState::Live => "live",
                CellState::Canary => "canary",
                CellState::RolledBack => "rolled-back",
                CellState::NotYet => "not-yet",
                CellState::Superseded => "superseded",
                CellState::Unknown => "unknown",
            };
            // A prod release that has run there has a record (once Tower wrote it up).
            let record = (tower_shared::hangar::is_production(&cell.environment)
                && matches!(cell.state, CellState::Live | CellState::Superseded)
                && cell.arrived_at.is_some())
            .then(|| tower_shared::image::release_name(&release.image))
            .flatten()
            .map(|tag| view! { <a class="record-link" href=crate::nav::record_href(service, tag)>"record"</a> });
            view! {
                <td class=class data-env=cell.environment.clone() data-state=state>
                    {words}{arrival(cell)}{next}{record}
                </td>
            }
        })
        .collect_view();
    // The release a link named (`#release-<name>`, from the DORA panel): marked and shown.
    let linked = linked_release().is_some_and(|linked| linked == name(release));
    let row_ref = NodeRef::<leptos::html::Tr>::new();
    if linked {
        Effect::new(move |_| {
            if let Some(row) = row_ref.get() {
                row.scroll_into_view();
            }
        });
    }
    view! {
        <tr data-release=name(release) id=format!("release-{}", name(release))
            class:linked=linked aria-current=linked.then_some("true") node_ref=row_ref>
            <th scope="row">
                <span class="release-name">{name(release)}</span>
                <span class="tag">
                    {move || built.map_or_else(|| "build not seen".to_owned(), |t| format!("built {}", age(t, now.get())))}
                </span>
                {run}
                {pick(&release.image, picked)}
            </th>
            {cells}
        </tr>
    }
}

/// The box that picks a row to compare; a third pick lets the first go.
fn pick(image: &str, picked: Picked) -> impl IntoView {
    let (mine, toggled) = (image.to_owned(), image.to_owned());
    let (label, title) = (
        format!("compare {}", tag_of(image)),
        format!("compare {}", tag_of(image)),
    );
    view! {
        <label class="pick" title=title>
            <input type="checkbox" aria-label=label
                prop:checked=move || picked.with(|p| p.contains(&mine))
                on:change=move |_| picked.update(|p| {
                    if let Some(i) = p.iter().position(|x| *x == toggled) {
                        p.remove(i);
                    } else {
                        p.push(toggled.clone());
                        if p.len() > 2 {
                            p.remove(0);
                        }
                    }
                }) />
            "compare"
        </label>
    }
}

/// Two picked releases compared: the sentence, then the pull requests, commits, builds and
/// configuration changes between them (read when the second is picked).
#[component]
pub fn ComparePanel(service: String, picked: Picked) -> impl IntoView {
    let compared = RwSignal::new(None::<Result<Comparison, ApiError>>);
    let svc = service.clone();
    Effect::new(move |_| {
        compared.set(None);
        let [from, to] = picked.get().try_into().unwrap_or_default();
        if to.is_empty() {
            return;
        }
        let service = svc.clone();
        leptos::task::spawn_local(async move {
            let answer = api::compare(service, from.clone(), to.clone()).await;
            if picked.get_untracked() == [from, to] {
                compared.set(Some(answer));
            }
        });
    });
    let body = move || match compared.get() {
        None => view! { <p class="state">"Asking GitHub to compare them…"</p> }.into_any(),
        Some(Err(err)) => view! {
            <p role="alert" class="status-failed">{format!("Tower cannot compare them: {err}")}</p>
        }
        .into_any(),
        Some(Ok(c)) => {
            let pulls = c.pulls.iter().map(|p| view! {
                <li><a href=p.url.clone().unwrap_or_default() target="_blank" rel="noopener">{format!("#{} {}", p.number, p.title)}</a></li>
            }).collect_view();
            let commits = c.commits.iter().map(|k| {
                let short: String = k.sha.chars().take(7).collect();
                let by = k.author.clone().map(|a| format!(" — {a}")).unwrap_or_default();
                view! {
                    <li><a class="commit" href=k.url.clone().unwrap_or_default() target="_blank" rel="noopener">{short}</a>
                        {format!(" {}{by}", k.title)}</li>
                }
            }).collect_view();
            let runs = c.runs.iter().map(|run| view! {
                <li><a href=tab_href(Tab::Pipelines, &service, Some(run))>{run.clone()}</a></li>
            }).collect_view();
            let config = c.config.iter().map(|f| {
                let lines = f.patch.as_deref().unwrap_or("(no patch shown)").lines().map(|l| {
                    let change = match l.chars().next() {
                        Some('+') => LineChange::Added,
                        Some('-') => LineChange::Removed,
                        _ => LineChange::Same,
                    };
                    (change, l.get(1..).unwrap_or_default().to_owned())
                }).collect();
                view! { <p class="tag">{format!("{} ({})", f.path, f.status)}</p>{diff_view(lines)} }
            }).collect_view();
            let none = |empty: bool, words: &'static str| {
                empty.then(|| view! { <p class="state">{words}</p> })
            };
            let (no_pulls, no_config) = (
                none(c.pulls.is_empty(), "No pull request merged these commits."),
                none(c.config.is_empty(), "No configuration file changed."),
            );
            view! {
                <p>{c.sentence()}</p>
                {c.url.clone().map(|href| view! { <p><a href=href target="_blank" rel="noopener">"The comparison on GitHub"</a></p> })}
                <h4>"Pull requests"</h4>{no_pulls}<ul>{pulls}</ul>
                <h4>{format!("Commits ({} of {})", c.commits.len(), c.total)}</h4><ul class="commits">{commits}</ul>
                <h4>"Builds"</h4><ul>{runs}</ul>
                <h4>"Configuration"</h4>{no_config}{config}
            }
            .into_any()
        }
    };
    move || {
        match picked.get().as_slice() {
        [] => None,
        [one] => Some(view! {
            <p class="state comparing">{format!("Pick another release to compare with {}.", tag_of(one))}</p>
        }.into_any()),
        [a, b, ..] => Some(view! {
            <section class="comparison" aria-label="Comparison">
                <h3>{format!("{} and {} compared", tag_of(a), tag_of(b))}</h3>
                {body.clone()}
                <p class="actions"><button type="button" on:click=move |_| picked.set(Vec::new())>"Close"</button></p>
            </section>
        }.into_any()),
    }
    }
}

/// A unified diff's lines, each marked and coloured as removed, added or the same.
pub(crate) fn diff_view(lines: Vec<(LineChange, String)>) -> impl IntoView {
    let lines = lines
        .into_iter()
        .map(|(change, text)| {
            let (class, mark) = match change {
                LineChange::Same => ("diff-same", "  "),
                LineChange::Removed => ("diff-removed", "- "),
                LineChange::Added => ("diff-added", "+ "),
            };
            view! { <span class=class>{format!("{mark}{text}\n")}</span> }
        })
        .collect_view();
    view! { <pre class="diff">{lines}</pre> }
}
