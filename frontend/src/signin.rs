//! Signing in: the page needs a Backstage user token for every API call.
//!
//! - Inside a Backstage page (an iframe), the parent hands it over by `postMessage`
//!   (`{"type": "backstage-token", "token": "…"}`) — accepted only from the exact Backstage
//!   origin Tower is configured with; anything else or malformed is dropped. The page asks
//!   for it by posting `{"type": "tower-ready"}` to that origin: every second until a token
//!   comes, then every 10 minutes for a fresh one (docs/embedding.md).
//! - Opened on its own with guest sign-in on (the demo), it signs in as Backstage's guest.
//! - Behind an authenticating proxy (`/auth/config` names the `proxyUser`), it needs no
//!   token: the proxy adds the user to every request.
//! - Otherwise it explains how to sign in instead of showing empty data.
//!
//! The token is kept in memory only: never in a URL, storage or log.

use std::cell::RefCell;

use leptos::prelude::*;

use crate::api;
use wasm_bindgen::closure::Closure;
use wasm_bindgen::JsCast as _;

thread_local! {
    static TOKEN: RefCell<Option<String>> = const { RefCell::new(None) };
    /// Who waits for the page to sign in ([`signed_in`]); `None` once it has.
    static SETTLING: RefCell<Option<Vec<futures::channel::oneshot::Sender<()>>>> =
        const { RefCell::new(Some(Vec::new())) };
}

/// Done once the page has signed in, so it does not ask Tower for what it would refuse
/// before (a `401`, and the answer asked for again once signed in). A page that never signs
/// in has nothing to ask for.
pub fn signed_in() -> impl std::future::Future<Output = ()> {
    let waiting = SETTLING.with(|s| {
        s.borrow_mut().as_mut().map(|waiting| {
            let (settle, settled) = futures::channel::oneshot::channel();
            waiting.push(settle);
            settled
        })
    });
    async move {
        if let Some(settled) = waiting {
            // A page dropped before signing in has nothing to wait for.
            let _ = settled.await;
        }
    }
}

/// Wakes whoever waits in [`signed_in`].
fn settle() {
    if let Some(waiting) = SETTLING.with(|s| s.borrow_mut().take()) {
        for settle in waiting {
            let _ = settle.send(());
        }
    }
}

/// The current token, for the `Authorization` header.
pub fn token() -> Option<String> {
    TOKEN.with(|t| t.borrow().clone())
}

/// Where signing in stands.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SignIn {
    Pending,
    SignedIn,
    /// Why the page cannot sign in, in words.
    Needed(String),
}

/// Starts signing in; the signal says how it goes.
pub fn start() -> ReadSignal<SignIn> {
    let (state, set_state) = signal(SignIn::Pending);
    Effect::new(move |_| {
        if state.get() == SignIn::SignedIn {
            settle();
        }
    });
    let set_token = move |token: String| {
        TOKEN.with(|t| *t.borrow_mut() = Some(token));
        // A fresh token for a signed-in page changes nothing on it.
        if state.get_untracked() != SignIn::SignedIn {
            set_state.set(SignIn::SignedIn);
        }
    };
    leptos::task::spawn_local(async move {
        let config = match api::auth_config().await {
            Ok(config) => config,
            Err(err) => {
                set_state.set(SignIn::Needed(format!(
                    "Tower cannot tell how to sign in: {err}"
                )));
                return;
            }
        };
        // Open, or behind an authenticating proxy that adds the user to every request.
        if config.open || config.proxy_user.is_some() {
            set_state.set(SignIn::SignedIn);
            return;
        }
        let Some(window) = web_sys::window() else {
            return;
        };
        let framed = window
            .parent()
            .ok()
            .flatten()
            .is_some_and(|parent| parent != window);
        match (framed, config.backstage_origin) {
            (true, Some(origin)) => {
                let expected = origin.clone();
                let on_message = Closure::<dyn FnMut(web_sys::MessageEvent)>::new(
                    move |event: web_sys::MessageEvent| {
                        if event.origin() != expected {
                            return;
                        }
                        let data = event.data();
                        let field = |name: &str| {
                            js_sys::Reflect::get(&data, &name.into())
                                .ok()
                                .and_then(|v| v.as_string())
                        };
                        if field("type").as_deref() == Some("backstage-token") {
                            if let Some(token) = field("token").filter(|t| !t.is_empty()) {
                                set_token(token);
                            }
                        }
                    },
                );
                let _ = window.add_event_listener_with_callback(
                    "message",
                    on_message.as_ref().unchecked_ref(),
                );
                on_message.forget();
                if let Some(parent) = window.parent().ok().flatten() {
                    // Asked every second until a token comes (the parent may start listening
                    // after the frame loads), then every 10 minutes for a fresh one (Backstage
                    // tokens last an hour).
                    leptos::task::spawn_local(async move {
                        loop {
                            let ready = js_sys::Object::new();
                            let _ =
                                js_sys::Reflect::set(&ready, &"type".into(), &"tower-ready".into());
                            let _ = parent.post_message(&ready, &origin);
                            let wait = if token().is_some() { 600 } else { 1 };
                            crate::live::sleep(std::time::Duration::from_secs(wait)).await;
                        }
                    });
                }
                set_state.set(SignIn::Needed(
                    "Waiting for Backstage to hand Tower your sign-in…".to_owned(),
                ));
            }
            (false, _) if config.guest_sign_in => match api::guest_token().await {
                Ok(token) => {
                    set_token(token);
                    // Guest tokens last an hour: renew well before.
                    if let Ok(handle) = set_interval_with_handle(
                        move || {
                            leptos::task::spawn_local(async move {
                                if let Ok(token) = api::guest_token().await {
                                    TOKEN.with(|t| *t.borrow_mut() = Some(token));
                                }
                            })
                        },
                        std::time::Duration::from_secs(30 * 60),
                    ) {
                        on_cleanup(move || handle.clear());
                    }
                }
                Err(err) => set_state.set(SignIn::Needed(format!("Guest sign-in failed: {err}"))),
            },
            _ => set_state.set(SignIn::Needed(
                "Tower needs your Backstage sign-in: open it from its page in Backstage."
                    .to_owned(),
            )),
        }
    });
    state
}
