//! Knowing when to fetch again: `/api/events` (Server-Sent Events) says what changed —
//! a Kubernetes object, a pull request, a catalog entity, a history record, a cluster's or
//! GitHub's health — and for which service, after the views showing it are ready. Pages
//! fetch again only what shows it, at most four times a second however many changes come.
//! Without the stream (it failed, or is closed) the page polls every 6 s instead.

use std::collections::BTreeSet;
use std::time::Duration;

use leptos::prelude::*;
use tower_shared::api::{event, Change, ChangeSource};

/// Which services a batch of changes touched.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Touched {
    /// Moves with every batch.
    pub generation: u64,
    pub names: BTreeSet<String>,
    /// Something changed that any service may show (a resync, the health, the history).
    pub all: bool,
}

/// Signals that move when data should be fetched again.
#[derive(Clone, Copy, Debug)]
pub struct Refresh {
    /// Anything changed: the summary (strip, badge, health notices).
    pub any: ReadSignal<u64>,
    /// A Kubernetes object or a cluster's health changed: the fleet.
    pub fleet: ReadSignal<u64>,
    /// A provision was recorded: the history table.
    pub history: ReadSignal<u64>,
    /// Which services the last batch touched: each service's tabs.
    pub services: ReadSignal<Touched>,
    /// Whether the event stream is connected (else Tower polls).
    pub streaming: ReadSignal<bool>,
}

impl Refresh {
    /// Moves when a batch touches `service` (or every service).
    pub fn service(&self, service: String) -> Memo<u64> {
        let services = self.services;
        Memo::new(move |previous: Option<&u64>| {
            services.with(|t| match previous {
                Some(&seen) if !t.all && !t.names.contains(&service) => seen,
                _ => t.generation,
            })
        })
    }
}

/// What the stream said since the last flush.
#[derive(Debug, Default)]
struct Pending {
    any: bool,
    fleet: bool,
    history: bool,
    all: bool,
    names: BTreeSet<String>,
}

impl Pending {
    /// Everything may have changed (the stream connected, fell behind, or polling).
    fn everything(&mut self) {
        self.any = true;
        self.fleet = true;
        self.history = true;
        self.all = true;
    }

    fn read(&mut self, name: &str, data: &str) {
        match name {
            event::CHANGE => {
                let Ok(change) = serde_json::from_str::<Change>(data) else {
                    self.everything();
                    return;
                };
                self.any = true;
                match change.source {
                    // The fleet's cells are the states both judge.
                    ChangeSource::Kubernetes | ChangeSource::Prometheus => self.fleet = true,
                    ChangeSource::History => {
                        // Typical durations move for everyone.
                        self.history = true;
                        self.all = true;
                    }
                    ChangeSource::GitHub | ChangeSource::Catalog => {}
                }
                match change.service {
                    Some(service) => {
                        self.names.insert(service);
                    }
                    None => self.all = true,
                }
            }
            event::STALE | event::FRESH | event::GITHUB => {
                self.any = true;
                self.fleet = true;
                self.all = true;
            }
            // `hello` (connected: what changed while away is unknown), `resync`, and any
            // event a newer backend sends.
            _ => self.everything(),
        }
    }
}

/// Opens the event stream once signed in, and starts the fallback timer; lives as long as
/// its owner.
pub fn start(signin: ReadSignal<crate::signin::SignIn>) -> Refresh {
    let (any, set_any) = signal(0_u64);
    let (fleet, set_fleet) = signal(0_u64);
    let (history, set_history) = signal(0_u64);
    let (services, set_services) = signal(Touched::default());
    let (streaming, set_streaming) = signal(false);
    let pending = StoredValue::new(Pending::default());
    // The stream needs the Authorization header, which EventSource cannot send: read it
    // with fetch as soon as the page is signed in and shown, reconnecting 5 s after it ends.
    // A hidden page (another tab in front, or left for the back-forward cache) ends its
    // stream and opens it again when shown: over HTTP/1.1 a browser keeps six connections
    // to a host for all its tabs, and a stream held by every open Tower page would leave the
    // seventh page none to fetch its answers with (it stayed "Loading…").
    let reader = StoredValue::new_local(None::<web_sys::ReadableStreamDefaultReader>);
    when_hidden(move || {
        if let Some(Some(open)) = reader.try_update_value(Option::take) {
            let _ = open.cancel();
        }
    });
    leptos::task::spawn_local(async move {
        loop {
            // Signed in with a token, behind a proxy, or open: the stream answers all three.
            if signin.get_untracked() != crate::signin::SignIn::SignedIn || hidden() {
                sleep(Duration::from_millis(100)).await;
                continue;
            }
            let result = stream(
                |name, data| pending.update_value(|p| p.read(name, data)),
                move |open| {
                    reader.set_value(Some(open));
                    set_streaming.set(true);
                    mark_live(true);
                },
            )
            .await;
            reader.set_value(None);
            if let Err(err) = result {
                leptos::logging::warn!("event stream: {err}; polling until it is back");
            }
            set_streaming.set(false);
            mark_live(false);
            if !hidden() {
                sleep(Duration::from_secs(5)).await;
            }
        }
    });
    let every = |period: Duration, tick: Box<dyn Fn()>| match set_interval_with_handle(tick, period)
    {
        Ok(handle) => on_cleanup(move || handle.clear()),
        Err(err) => leptos::logging::warn!("no refresh timer: {err:?}"),
    };
    every(
        Duration::from_millis(250),
        Box::new(move || {
            let batch = pending.try_update_value(std::mem::take).unwrap_or_default();
            let bump = |set: WriteSignal<u64>| set.update(|g| *g += 1);
            if batch.any {
                bump(set_any);
            }
            if batch.fleet {
                bump(set_fleet);
            }
            if batch.history {
                bump(set_history);
            }
            if batch.all || !batch.names.is_empty() {
                set_services.update(|t| {
                    t.generation += 1;
                    t.names = batch.names;
                    t.all = batch.all;
                });
            }
        }),
    );
    every(
        Duration::from_secs(6),
        Box::new(move || {
            if !streaming.get_untracked() && !hidden() {
                pending.update_value(Pending::everything);
            }
        }),
    );
    Refresh {
        any,
        fleet,
        history,
        services,
        streaming,
    }
}

/// Reads `/api/events` until it ends, handing each event's name and data to `on_event`.
async fn stream(
    on_event: impl Fn(&str, &str),
    on_open: impl FnOnce(web_sys::ReadableStreamDefaultReader),
) -> Result<(), crate::api::ApiError> {
    let mut buffer = String::new();
    crate::api::stream_text(crate::api::EVENTS, "text/event-stream", on_open, |text| {
        buffer.push_str(text);
        while let Some((message, rest)) = split_message(&buffer) {
            if let Some((name, data)) = parse_message(&message) {
                on_event(&name, &data);
            }
            buffer = rest;
        }
    })
    .await
}

/// Whether the page is hidden (behind another tab, minimised, or left).
fn hidden() -> bool {
    web_sys::window()
        .and_then(|w| w.document())
        .is_some_and(|d| d.hidden())
}

/// Runs `hide` each time the page is hidden or left, for as long as the calling owner lives:
/// the event stream is given back then (a hidden page needs no news until it is shown).
fn when_hidden(hide: impl Fn() + Clone + 'static) {
    let on_hide = hide.clone();
    let visibility = window_event_listener(leptos::ev::visibilitychange, move |_| {
        if hidden() {
            on_hide();
        }
    });
    on_cleanup(move || visibility.remove());
    when_left(hide);
}

/// Runs `leave` each time the page is left, for as long as the calling owner lives: a page
/// kept in the back-forward cache keeps its connections unless it ends them itself.
pub fn when_left(leave: impl Fn() + 'static) {
    let left = window_event_listener(leptos::ev::pagehide, move |_| leave());
    on_cleanup(move || left.remove());
}

/// Marks the page's root `data-live` while the event stream is connected (for people who
/// inspect the page, and for tests to wait on).
fn mark_live(live: bool) {
    if let Some(root) = web_sys::window()
        .and_then(|w| w.document())
        .and_then(|d| d.document_element())
    {
        let _ = if live {
            root.set_attribute("data-live", "")
        } else {
            root.remove_attribute("data-live")
        };
    }
}

/// The first complete message (ended by a blank line) and what follows it.
fn split_message(buffer: &str) -> Option<(String, String)> {
    let normalised = buffer.replace("\r\n", "\n");
    let (message, rest) = normalised.split_once("\n\n")?;
    Some((message.to_owned(), rest.to_owned()))
}

/// An event's name (`message` when unnamed) and data; `None` for a comment-only message.
fn parse_message(message: &str) -> Option<(String, String)> {
    let mut name = None;
    let mut data: Vec<&str> = Vec::new();
    for line in message.lines() {
        if let Some(value) = line.strip_prefix("event:") {
            name = Some(value.trim().to_owned());
        } else if let Some(value) = line.strip_prefix("data:") {
            data.push(value.strip_prefix(' ').unwrap_or(value));
        }
    }
    if name.is_none() && data.is_empty() {
        return None;
    }
    Some((
        name.unwrap_or_else(|| "message".to_owned()),
        data.join("\n"),
    ))
}

/// Waits without blocking the page.
pub async fn sleep(period: Duration) {
    let (tx, rx) = futures::channel::oneshot::channel::<()>();
    set_timeout(
        move || {
            let _ = tx.send(());
        },
        period,
    );
    let _ = rx.await;
}
