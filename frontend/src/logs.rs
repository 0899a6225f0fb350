//! A step's log console: the log loaded when opened (`GET /api/pipelines/log`), followed
//! while the step runs, its ANSI colours drawn as classes ([`tower_shared::ansi`]). Only the
//! lines in view are in the page (a 100,000-line log stays smooth), and leaving cancels the
//! request, which closes the backend's stream from the cluster.

use leptos::html::Div;
use leptos::prelude::*;
use tower_shared::ansi;

use crate::api::{self, ApiError};

/// Which log is open: a task's step, followed while it has not finished.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LogTarget {
    pub task: String,
    pub step: String,
    pub follow: bool,
    /// Whether the step had started when opened (a step that starts later is asked again).
    pub started: bool,
}

/// Each line's height in pixels (the stylesheet's `.log .l`), for windowing.
const LINE: f64 = 18.0;
/// Lines drawn beyond the view, above and below.
const MARGIN: usize = 20;
/// Lines drawn at most: the view and its margins.
const DRAWN: usize = 80;

#[derive(Clone, Debug, PartialEq)]
enum Reading {
    Loading,
    Streaming,
    Ended,
    Failed(ApiError),
}

/// A container's log, streamed from `path` (followed while `follow`): `what` names it in the
/// page's words ("step unit-tests", "pod shop-7d9f8-x2k4p"). A plain function, not a
/// component: both tabs share one copy of it in the bundle.
#[inline(never)]
pub fn log_console(path: String, what: String, follow: bool) -> AnyView {
    let lines = StoredValue::new_local(Vec::<String>::new());
    let (count, set_count) = signal(0_usize);
    let (reading, set_reading) = signal(Reading::Loading);
    let reader = StoredValue::new_local(None::<web_sys::ReadableStreamDefaultReader>);
    let (top, set_top) = signal(0.0_f64);
    // Keeps to the end as lines arrive, until the reader scrolls up.
    let pinned = StoredValue::new(true);
    let console = NodeRef::<Div>::new();
    leptos::task::spawn_local(async move {
        let mut partial = String::new();
        let mut take = |text: &str, all: bool| {
            partial.push_str(text);
            let cut = if all {
                Some(partial.len())
            } else {
                partial.rfind('\n').map(|at| at + 1)
            };
            if let Some(cut) = cut.filter(|&c| c > 0) {
                let rest = partial.split_off(cut);
                let whole = std::mem::replace(&mut partial, rest);
                let total = lines.try_update_value(|l| {
                    l.extend(whole.lines().map(str::to_owned));
                    l.len()
                });
                if let Some(total) = total {
                    set_count.try_set(total);
                }
            }
        };
        let result = api::stream_text(
            &path,
            "text/plain",
            |r| {
                reader.try_set_value(Some(r));
                set_reading.try_set(Reading::Streaming);
            },
            |text| take(text, false),
        )
        .await;
        take("", true);
        set_reading.try_set(match result {
            Ok(()) => Reading::Ended,
            Err(err) => Reading::Failed(err),
        });
    });
    let end = move || {
        if let Some(Some(r)) = reader.try_get_value() {
            let _ = r.cancel();
        }
    };
    // A page left for another keeps no log open (see `live::when_left`).
    crate::live::when_left(end);
    on_cleanup(end);
    // New lines: stay at the end if the reader is there.
    Effect::new(move || {
        count.track();
        if let (Some(el), true) = (console.get(), pinned.get_value()) {
            el.set_scroll_top(el.scroll_height());
        }
    });
    let on_scroll = move |_| {
        if let Some(el) = console.get() {
            let at = f64::from(el.scroll_top());
            set_top.set(at);
            pinned.set_value(
                at + f64::from(el.client_height()) >= f64::from(el.scroll_height()) - 2.0 * LINE,
            );
        }
    };
    let named = what.clone();
    let status = move || {
        let n = count.get();
        let lines = if n == 1 {
            "1 line".to_owned()
        } else {
            format!("{} lines", grouped(n))
        };
        match reading.get() {
            Reading::Loading => "Opening the log…".to_owned(),
            Reading::Streaming if follow => {
                format!("Following the log of {named}: {lines} so far.")
            }
            Reading::Streaming => format!("Loading the log of {named}: {lines} so far…"),
            Reading::Ended => {
                let mut said = named.chars();
                let first = said.next().map(|c| c.to_uppercase().collect::<String>());
                format!(
                    "{}{} wrote {lines}.",
                    first.unwrap_or_default(),
                    said.as_str()
                )
            }
            Reading::Failed(ApiError::Status { message, .. }) => message,
            Reading::Failed(err) => err.to_string(),
        }
    };
    let drawn = move || {
        let n = count.get();
        let from = ((top.get() / LINE) as usize).saturating_sub(MARGIN).min(n);
        let to = (from + DRAWN).min(n);
        lines.with_value(|l| {
            l[from..to]
                .iter()
                .enumerate()
                .map(|(k, text)| {
                    let runs = ansi::runs(text)
                        .into_iter()
                        .map(|r| view! { <span class=r.class>{r.text.to_owned()}</span> })
                        .collect_view();
                    let at = from + k;
                    view! {
                        <div class="l" style:top=format!("{}px", at as f64 * LINE)>
                            <span class="n" aria-hidden="true">{at + 1}</span>{runs}
                        </div>
                    }
                })
                .collect_view()
        })
    };
    let failed = move || matches!(reading.get(), Reading::Failed(_));
    view! {
        <section class="log-console" aria-label=format!("Log of {what}")>
            <p class="log-status" class:state=failed class:empty=failed role="status">{status}</p>
            <div class="log" node_ref=console tabindex="0" role="region"
                aria-label=format!("Lines of {what}") on:scroll=on_scroll>
                <div class="lines" style:height=move || format!("{}px", count.get() as f64 * LINE)>
                    {drawn}
                </div>
            </div>
        </section>
    }
    .into_any()
}

/// `100002` as "100,002".
fn grouped(n: usize) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (k, digit) in digits.chars().enumerate() {
        if k > 0 && (digits.len() - k) % 3 == 0 {
            out.push(',');
        }
        out.push(digit);
    }
    out
}
