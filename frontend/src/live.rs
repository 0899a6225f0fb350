//! Knowing when to fetch again: `/api/events` (Server-Sent Events) says when a watched object
//! changed (at most one refetch a second however many changes); without it (the stream
//! failed or is closed) the page polls at the spec's cadences instead. Pages read [`Refresh::kubernetes`] (every change, or every 6 s) and
//! [`Refresh::github`] (every 45 s).

use std::time::Duration;

use leptos::prelude::*;
use wasm_bindgen::JsCast as _;

/// Counters that move when data should be fetched again.
#[derive(Clone, Copy, Debug)]
pub struct Refresh {
    pub kubernetes: ReadSignal<u64>,
    pub github: ReadSignal<u64>,
    /// Whether the event stream is connected (else Tower polls).
    pub streaming: ReadSignal<bool>,
}

/// Opens the event stream once signed in, and starts the fallback timers; lives as long
/// as its owner.
pub fn start(signin: ReadSignal<crate::signin::SignIn>) -> Refresh {
    let (kubernetes, set_kubernetes) = signal(0_u64);
    let (github, set_github) = signal(0_u64);
    let (streaming, set_streaming) = signal(false);
    // Changes come in bursts; pages fetch again at most once a second.
    let dirty = StoredValue::new(false);
    // The stream needs the Authorization header, which EventSource cannot send: read it
    // with fetch, reconnecting 5 s after it ends.
    leptos::task::spawn_local(async move {
        loop {
            // Signed in with a token, behind a proxy, or open: the stream answers all three.
            if signin.get_untracked() == crate::signin::SignIn::SignedIn {
                let result = stream(|| dirty.set_value(true), set_streaming).await;
                if let Err(err) = result {
                    leptos::logging::warn!("event stream: {err:?}; polling until it is back");
                }
                set_streaming.set(false);
            }
            sleep(Duration::from_secs(5)).await;
        }
    });
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

/// Reads `/api/events` until it ends; each chunk means something changed.
async fn stream(
    on_change: impl Fn(),
    set_streaming: WriteSignal<bool>,
) -> Result<(), wasm_bindgen::JsValue> {
    use wasm_bindgen_futures::JsFuture;
    let window = web_sys::window().ok_or("no window")?;
    let init = web_sys::RequestInit::new();
    init.set_method("GET");
    let headers = web_sys::Headers::new()?;
    headers.set("Accept", "text/event-stream")?;
    if let Some(token) = crate::signin::token() {
        headers.set("Authorization", &format!("Bearer {token}"))?;
    }
    init.set_headers(&headers);
    let request = web_sys::Request::new_with_str_and_init(crate::api::EVENTS, &init)?;
    let response: web_sys::Response = JsFuture::from(window.fetch_with_request(&request))
        .await?
        .dyn_into()?;
    if !response.ok() {
        return Err(format!("Tower answered {}", response.status()).into());
    }
    let body = response.body().ok_or("no body")?;
    let reader: web_sys::ReadableStreamDefaultReader = body.get_reader().dyn_into()?;
    set_streaming.set(true);
    loop {
        let chunk = JsFuture::from(reader.read()).await?;
        let done = js_sys::Reflect::get(&chunk, &"done".into())?
            .as_bool()
            .unwrap_or(true);
        if done {
            return Ok(());
        }
        on_change();
    }
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
