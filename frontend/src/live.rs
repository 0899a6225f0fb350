//! Knowing when to fetch again: `/api/events` (Server-Sent Events) says when a watched object
//! changed (at most one refetch a second however many changes); without it (the stream
//! failed or is closed) the page polls at the spec's cadences instead. Pages read [`Refresh::kubernetes`] (every change, or every 6 s) and
//! [`Refresh::github`] (every 45 s).

use std::time::Duration;

use leptos::prelude::*;
use wasm_bindgen::closure::Closure;
use wasm_bindgen::JsCast as _;

/// Counters that move when data should be fetched again.
#[derive(Clone, Copy, Debug)]
pub struct Refresh {
    pub kubernetes: ReadSignal<u64>,
    pub github: ReadSignal<u64>,
    /// Whether the event stream is connected (else Tower polls).
    pub streaming: ReadSignal<bool>,
}

/// Opens the event stream and starts the fallback timers; lives as long as its owner.
pub fn start() -> Refresh {
    let (kubernetes, set_kubernetes) = signal(0_u64);
    let (github, set_github) = signal(0_u64);
    let (streaming, set_streaming) = signal(false);
    // Changes come in bursts; pages fetch again at most once a second.
    let dirty = StoredValue::new(false);
    match web_sys::EventSource::new("/api/events") {
        Ok(source) => {
            let on_change =
                Closure::<dyn FnMut(web_sys::MessageEvent)>::new(move |_| dirty.set_value(true));
            for name in ["change", "stale", "fresh", "resync"] {
                let _ = source
                    .add_event_listener_with_callback(name, on_change.as_ref().unchecked_ref());
            }
            let on_open = Closure::<dyn FnMut()>::new(move || set_streaming.set(true));
            source.set_onopen(Some(on_open.as_ref().unchecked_ref()));
            let on_error = Closure::<dyn FnMut()>::new(move || set_streaming.set(false));
            source.set_onerror(Some(on_error.as_ref().unchecked_ref()));
            // The closures live as long as the page's root owner.
            on_change.forget();
            on_open.forget();
            on_error.forget();
            on_cleanup(move || source.close());
        }
        Err(err) => leptos::logging::warn!("no event stream, polling instead: {err:?}"),
    }
    let every = |period: Duration, tick: Box<dyn Fn()>| match set_interval_with_handle(tick, period)
    {
        Ok(handle) => on_cleanup(move || handle.clear()),
        Err(err) => leptos::logging::warn!("no refresh timer: {err:?}"),
    };
    every(
        Duration::from_secs(1),
        Box::new(move || {
            if dirty.get_value() {
                dirty.set_value(false);
                set_kubernetes.update(|g| *g += 1);
            }
        }),
    );
    every(
        Duration::from_secs(6),
        Box::new(move || {
            if !streaming.get_untracked() {
                set_kubernetes.update(|g| *g += 1);
            }
        }),
    );
    every(
        Duration::from_secs(45),
        Box::new(move || set_github.update(|g| *g += 1)),
    );
    Refresh {
        kubernetes,
        github,
        streaming,
    }
}
