//! View helpers the tabs share.

use chrono::{DateTime, Utc};
use leptos::prelude::*;
use tower_shared::api::{Access, GitHubTrouble, Health};
use tower_shared::tekton::RunStatus;
use tower_shared::time::compact_duration;

/// "✔ Succeeded" — status always as icon and word, never colour alone.
pub fn run_status_label(status: RunStatus) -> (&'static str, &'static str) {
    match status {
        RunStatus::Succeeded => ("status-ok", "✔ Succeeded"),
        RunStatus::Failed => ("status-failed", "✖ Failed"),
        RunStatus::Running => ("status-running", "◌ Running"),
    }
}

/// How long a run took (or has been running), in words; "unknown" without a start.
pub fn run_duration(
    started: Option<DateTime<Utc>>,
    finished: Option<DateTime<Utc>>,
    now: DateTime<Utc>,
) -> String {
    match (started, finished) {
        (Some(start), Some(end)) => compact_duration((end - start).num_seconds()),
        (Some(start), None) => format!("{} so far", compact_duration((now - start).num_seconds())),
        _ => "unknown".to_owned(),
    }
}

/// `text` as a link opening `url` in a new tab, or as plain text when there is no link Tower
/// may show (one from Git that is not a GitHub page is dropped by the backend).
pub fn link_or_text(url: Option<String>, text: String) -> AnyView {
    match url {
        Some(url) => view! { <a href=url target="_blank" rel="noopener">{text}</a> }.into_any(),
        None => view! { <span>{text}</span> }.into_any(),
    }
}

/// "✖ Tower's backend answered 503: …" — why a page has no data, announced to screen readers.
pub fn error_alert(err: &crate::api::ApiError) -> AnyView {
    view! { <p class="state error" role="alert">"✖ " {err.to_string()}</p> }.into_any()
}

/// A table's header row, one `<th scope="col">` per column.
pub fn header_row(columns: &'static [&'static str]) -> impl IntoView {
    view! {
        <thead>
            <tr>{columns.iter().map(|c| view! { <th scope="col">{*c}</th> }).collect_view()}</tr>
        </thead>
    }
}

/// What in the page is old or missing, in words: "Cluster dev unreachable: data from 3m 20s
/// ago", "GitHub rate limited: pull requests and files as last read; Tower asks again in
/// 12m 00s". Nothing when all is well. Ages tick with Tower's clock.
#[component]
pub fn HealthNotice(health: Health, now: ReadSignal<DateTime<Utc>>) -> impl IntoView {
    (!health.is_clear()).then(move || {
        let lines = move || {
            let now = now.get();
            let since = |at: DateTime<Utc>| compact_duration((now - at).num_seconds().max(0));
            let mut lines: Vec<String> = health
                .stale
                .iter()
                .map(|c| {
                    let age = c.last_seen_at.map_or_else(
                        || "of unknown age".to_owned(),
                        |at| format!("from {} ago", since(at)),
                    );
                    format!("Cluster {} unreachable: data {age}", c.name)
                })
                .collect();
            match &health.github {
                Some(GitHubTrouble::RateLimited { until }) => lines.push(format!(
                    "GitHub rate limited: pull requests and files as last read; Tower asks again in {}",
                    compact_duration((*until - now).num_seconds().max(1))
                )),
                Some(GitHubTrouble::Failing { error }) => lines.push(format!(
                    "GitHub not answering ({error}): pull requests and files as last read"
                )),
                None => {}
            }
            lines
                .into_iter()
                .map(|line| view! { <li>{line}</li> })
                .collect_view()
        };
        view! {
            <div class="state stale" role="status">
                <strong>"⚠ Showing last known data"</strong>
                <ul>{lines}</ul>
            </div>
        }
    })
}

/// The health notice of the summary every page shares (nothing until it has arrived).
#[component]
pub fn SharedHealthNotice() -> impl IntoView {
    let feed = crate::feed::feed();
    move || {
        feed.summary
            .get()
            .and_then(Result::ok)
            .map(|s| view! { <HealthNotice health=s.health now=feed.now /> })
    }
}

/// "Load more (25 of 320 shown)" under a paged list while there is a `next` page; a press
/// asks for one page more.
pub fn load_more(
    has_next: bool,
    shown: usize,
    total: usize,
    pages: RwSignal<usize>,
) -> Option<impl IntoView> {
    has_next.then(|| {
        view! {
            <button class="load-more" on:click=move |_| pages.update(|p| *p += 1)>
                {format!("Load more ({shown} of {total} shown)")}
            </button>
        }
    })
}

/// Why the caller may not `verb` (beside the disabled button), once its access is known;
/// empty while it may.
pub fn why_not(access: Signal<Option<Access>>, verb: &'static str) -> impl IntoView {
    view! {
        <span class="why-not">
            {move || {
                access
                    .get()
                    .and_then(|a| a.why_not)
                    .map(|why| format!("You may not {verb}: {why}."))
                    .unwrap_or_default()
            }}
        </span>
    }
}

/// What came of an action: its sentence, or why it failed, as a status line (empty until
/// there is an answer).
pub fn outcome_line(
    class: &'static str,
    said: impl Fn() -> Option<Result<String, String>> + Send + Sync + Clone + 'static,
) -> impl IntoView {
    let text = said.clone();
    view! {
        <span role="status" class=move || match said() {
            Some(Ok(_)) => format!("{class} status-ok"),
            Some(Err(_)) => format!("{class} status-failed"),
            None => class.to_owned(),
        }>
            {move || match text() {
                Some(Ok(message) | Err(message)) => message,
                None => String::new(),
            }}
        </span>
    }
}

/// Done once the element `node` holds has come into the viewport — what is below the fold
/// (the fleet's activity and DORA panels) fetches its code when its reader gets there, not
/// while the page above it is still drawing.
pub async fn in_view(node: NodeRef<leptos::html::Div>) {
    use wasm_bindgen::JsCast as _;
    // The element is in the page once the view holding it is mounted.
    let element = loop {
        if let Some(element) = node.get_untracked() {
            break element;
        }
        crate::live::sleep(std::time::Duration::ZERO).await;
    };
    let (seen, came) = futures::channel::oneshot::channel::<()>();
    let seen = std::cell::RefCell::new(Some(seen));
    let on_change = wasm_bindgen::closure::Closure::<dyn Fn(js_sys::Array)>::new(
        move |entries: js_sys::Array| {
            let visible = entries.iter().any(|entry| {
                entry
                    .dyn_into::<web_sys::IntersectionObserverEntry>()
                    .is_ok_and(|entry| entry.is_intersecting())
            });
            if visible {
                if let Some(seen) = seen.borrow_mut().take() {
                    let _ = seen.send(());
                }
            }
        },
    );
    let Ok(observer) = web_sys::IntersectionObserver::new(on_change.as_ref().unchecked_ref())
    else {
        // A browser without it shows the part at once.
        return;
    };
    observer.observe(&element);
    let _ = came.await;
    observer.disconnect();
    drop(on_change);
}
