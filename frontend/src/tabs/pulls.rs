//! The Pull requests tab (`GET /api/pulls`): the service's pull requests newest first, a page
//! at a time, each with its review decision, the pipeline runs of its head commit (linked to
//! the Pipelines tab) and GitHub's other checks on it, and, once merged, the image its merge
//! commit built and where that image runs now.

use chrono::{DateTime, Utc};
use leptos::prelude::*;
use tower_shared::api::PullsAnswer;
use tower_shared::pipelines::Outcome;
use tower_shared::pulls::{Landed, PrState, PullView, ReviewState};
use tower_shared::time::age;

use crate::api;
use crate::nav::{tab_href, Tab};
use crate::tabs::pipelines::outcome_label;
use crate::ui::{error_alert, header_row, HealthNotice};

/// Pull requests per page ("Load more" asks for the next).
const PAGE: &str = "25";

fn state_label(state: PrState) -> (&'static str, &'static str) {
    match state {
        PrState::Open => ("status-running", "◌ open"),
        PrState::Draft => ("status-unknown", "– draft"),
        PrState::Merged => ("status-ok", "✔ merged"),
        PrState::Closed => ("status-unknown", "✖ closed"),
    }
}

/// The review decision in words; "unknown" until Tower has read the reviews.
fn review_label(review: Option<ReviewState>) -> (&'static str, &'static str) {
    match review {
        Some(ReviewState::Approved) => ("status-ok", "✔ approved"),
        Some(ReviewState::ChangesRequested) => ("status-attention", "⚠ changes requested"),
        Some(ReviewState::ReviewRequired) => ("status-running", "◌ review required"),
        Some(ReviewState::Unreviewed) => ("status-unknown", "– not reviewed"),
        None => ("status-unknown", "? unknown"),
    }
}

/// "dev", "prod (canary at 20%)".
fn landed_text(landed: &Landed) -> String {
    match (landed.canary, landed.weight) {
        (false, _) => landed.environment.clone(),
        (true, Some(weight)) => format!("{} (canary at {weight}%)", landed.environment),
        (true, None) => format!("{} (canary)", landed.environment),
    }
}

/// Where a merged pull request's change is, in words ("—" before it merges).
fn where_now(pr: &PullView) -> String {
    match (pr.state, pr.source, &pr.image) {
        (PrState::Merged, false, _) => "a GitOps change: nothing to build".to_owned(),
        (PrState::Merged, true, None) => match &pr.build {
            None => "no build of its merge commit seen".to_owned(),
            Some(build) => match build.outcome {
                Outcome::Pending | Outcome::Running => {
                    format!("building: run {} makes its image", build.run)
                }
                Outcome::Failed | Outcome::Stopping => {
                    format!("its build {} failed: no image", build.run)
                }
                Outcome::TimedOut => format!("its build {} timed out: no image", build.run),
                Outcome::Cancelled => {
                    format!("its build {} was cancelled: no image", build.run)
                }
                _ => format!("built by run {}, which published no image", build.run),
            },
        },
        (PrState::Merged, true, Some(_)) if pr.landed.is_empty() => {
            "built; running nowhere Tower sees".to_owned()
        }
        (PrState::Merged, true, Some(_)) => {
            let places: Vec<String> = pr.landed.iter().map(landed_text).collect();
            format!("live in {}", places.join(", "))
        }
        _ => "—".to_owned(),
    }
}

#[component]
pub fn PullsTab(service: String) -> impl IntoView {
    let feed = crate::feed::feed();
    let now = feed.now;
    let changed = feed.refresh.service(service.clone());
    let pages = RwSignal::new(1_usize);
    let name = service.clone();
    let text = crate::feed::text_resource(move || {
        changed.track();
        api::pages::<PullsAnswer>(name.clone(), vec![("limit", PAGE.to_owned())], pages.get())
    });
    let service = StoredValue::new(service);
    move || match text.with(|t| {
        t.as_ref()
            .map(|t| t.clone().and_then(|t| api::joined::<PullsAnswer>(&t)))
    }) {
        None => view! { <p class="state loading">"Loading pull requests…"</p> }.into_any(),
        Some(Err(err)) => error_alert(&err),
        Some(Ok(answer)) => {
            let shown = answer.pulls.len();
            let rows = answer
                .pulls
                .iter()
                .map(|pr| row(pr, &service.get_value(), now))
                .collect_view();
            let more = crate::ui::load_more(answer.next.is_some(), shown, answer.total, pages);
            view! {
                <HealthNotice health=answer.health.clone() now=now />
                <p class="headline">{sentence(&answer)}</p>
                <table class="pulls" aria-rowcount=answer.total>
                    {header_row(&["Pull request", "State", "Review", "Opened", "Checks", "Where it is now"])}
                    <tbody>{rows}</tbody>
                </table>
                {more}
            }
            .into_any()
        }
    }
}

/// The tab's first sentence: how many are open, and where the newest merge is.
fn sentence(answer: &PullsAnswer) -> String {
    if !answer.read {
        return format!(
            "GitHub has not answered yet: Tower does not know {}'s pull requests.",
            answer.service
        );
    }
    let open = answer
        .pulls
        .iter()
        .filter(|p| matches!(p.state, PrState::Open | PrState::Draft))
        .count();
    let opened = match open {
        0 => "No open pull requests".to_owned(),
        1 => "1 open pull request".to_owned(),
        n => format!("{n} open pull requests"),
    };
    let merged = answer
        .pulls
        .iter()
        .find(|p| p.state == PrState::Merged && p.source);
    let repos = answer.repos.join(", ");
    match merged {
        Some(pr) => format!(
            "{opened} in {repos}; the newest merged change, #{} ({}): {}.",
            pr.number,
            pr.title,
            where_now(pr)
        ),
        None => format!("{opened} in {repos}; no change merged in the last 30 days."),
    }
}

fn row(pr: &PullView, service: &str, now: ReadSignal<DateTime<Utc>>) -> impl IntoView {
    let (class, word) = state_label(pr.state);
    let created = pr.created_at;
    let runs = pr
        .checks
        .iter()
        .map(|c| {
            let (class, word) = outcome_label(c.outcome);
            view! {
                <a class=format!("check {class}") href=tab_href(Tab::Pipelines, service, Some(&c.run))
                    title=c.run.clone()>
                    {format!("{} {word}", c.pipeline.as_deref().unwrap_or("run"))}
                </a>
            }
        })
        .collect_view();
    // GitHub's other checks link to GitHub; not read yet says so.
    let others = match &pr.github_checks {
        None => {
            Some(view! { <span class="unknown">"GitHub checks not read yet"</span> }.into_any())
        }
        Some(checks) => (!checks.is_empty()).then(|| {
            checks
                .iter()
                .map(|c| {
                    let (class, word) = outcome_label(c.outcome);
                    let text = format!("{} {word}", c.name);
                    match &c.url {
                        Some(url) => view! {
                            <a class=format!("gh-check {class}") href=url.clone() target="_blank"
                                rel="noopener noreferrer">{text}</a>
                        }
                        .into_any(),
                        None => view! { <span class=format!("gh-check {class}")>{text}</span> }
                            .into_any(),
                    }
                })
                .collect_view()
                .into_any()
        }),
    };
    let none = (pr.checks.is_empty() && others.is_none())
        .then(|| view! { <span class="unknown">"none"</span> });
    let (review_class, review_word) = review_label(pr.review);
    let title = format!("#{} {}", pr.number, pr.title);
    let link = match &pr.url {
        Some(url) => {
            view! { <a href=url.clone() target="_blank" rel="noopener noreferrer">{title}</a> }
                .into_any()
        }
        None => view! { <span>{title}</span> }.into_any(),
    };
    let by = format!(
        "{} · {} · {}",
        pr.repo.rsplit('/').next().unwrap_or(&pr.repo),
        pr.branch.as_deref().unwrap_or("branch unknown"),
        pr.author.as_deref().unwrap_or("author unknown")
    );
    view! {
        <tr data-pr=pr.number data-state=word.rsplit(' ').next().unwrap_or_default()>
            <td>{link}<span class="tag">{by}</span></td>
            <td class=class>{word}</td>
            <td class=review_class>{review_word}</td>
            <td>{move || created.map_or_else(|| "unknown".to_owned(), |t| age(t, now.get()))}</td>
            <td class="checks">{runs}{others}{none}</td>
            <td class="where">{where_now(pr)}</td>
        </tr>
    }
}
