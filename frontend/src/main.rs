//! Tower's browser app.
//!
//! Module map:
//! - [`api`] — every request to Tower's backend, and its error type. No other module knows a URL.
//! - [`clock`] — the browser's `now` as a signal that ticks once a second.
//! - [`fleet`] — the fleet overview: apps × environments, trouble first.
//! - [`service`] — the tabs chosen by `/tower?view=…[&service=…]`: `services` (the list),
//!   and one service's `provisioning`, [`deployments`] (the cloud variant) and [`pipelines`].
//! - [`live`] — when to fetch again: `/api/events` (SSE), with polling as the fallback.
//! - [`provisioning`] — the Services tab (in-flight strip) and one service's Provisioning tab.
//! - [`signin`] — the Backstage user token: from the Backstage parent page, or guest.
//! - [`ui`] — view helpers the tabs share (status labels, durations, table headers).
//!
//! All derivations come from `tower_shared`; this crate only fetches and draws.

mod api;
mod clock;
mod deployments;
mod fleet;
mod live;
mod pipelines;
mod provisioning;
mod service;
mod signin;
mod ui;

use leptos::prelude::*;
use leptos_router::components::{Route, Router, Routes, A};
use leptos_router::path;

fn main() {
    console_error_panic_hook::set_once();
    leptos::mount::mount_to_body(App);
}

/// What every page shares: when to fetch again, and the server's provisioning (the Services
/// tab and the badge in the masthead read the same answer).
#[derive(Clone, Copy)]
pub struct Feed {
    pub refresh: live::Refresh,
    pub signin: ReadSignal<signin::SignIn>,
    pub provisioning: LocalResource<Result<api::Provisioning, api::ApiError>>,
}

impl std::fmt::Debug for Feed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Feed")
            .field("refresh", &self.refresh)
            .finish_non_exhaustive()
    }
}

/// `?embed=1` (inside a Backstage page: no own masthead) and `?theme=dark|light`, read once
/// from the first URL.
fn page_options() -> (bool, &'static str) {
    let search = web_sys::window()
        .and_then(|w| w.location().search().ok())
        .unwrap_or_default();
    let params = web_sys::UrlSearchParams::new_with_str(&search).ok();
    let get = |key: &str| params.as_ref().and_then(|p| p.get(key));
    let embed = get("embed").is_some_and(|v| v == "1" || v == "true");
    let theme = match get("theme").as_deref() {
        Some("dark") => "theme-dark",
        _ => "theme-light",
    };
    (embed, theme)
}

#[component]
fn App() -> impl IntoView {
    let now = clock::ticking_now();
    let signin = signin::start();
    let refresh = live::start(signin);
    let provisioning = LocalResource::new(move || {
        refresh.kubernetes.track();
        signin.track();
        api::provisioning()
    });
    provide_context(Feed {
        refresh,
        signin,
        provisioning,
    });
    let (embed, theme) = page_options();
    if let Some(root) = web_sys::window()
        .and_then(|w| w.document())
        .and_then(|d| d.document_element())
    {
        root.set_class_name(theme);
    }
    let in_flight = move || {
        provisioning.get().and_then(Result::ok).map(|p| {
            p.services
                .iter()
                .filter(|s| s.group == tower_shared::provisioning::Group::InFlight)
                .count()
        })
    };
    view! {
        <Router>
            {(!embed).then(|| view! {
                <header class="masthead">
                    <h1>
                        <A href="/">"Tower"</A>
                    </h1>
                    <nav class="sections" aria-label="Sections">
                        <A href="/">"Fleet"</A>
                        <a href="/tower?view=services">
                            "Services"
                            {move || in_flight().map(|n| view! {
                                <span class="badge" aria-label=format!("{n} in flight")>{n}</span>
                            })}
                        </a>
                    </nav>
                    <p class="tagline">"Every app, every environment, one glance."</p>
                </header>
            })}
            <main>
                {move || match signin.get() {
                    signin::SignIn::SignedIn => view! {
                        <Routes fallback=|| view! { <p class="state error">"No such page."</p> }>
                            <Route path=path!("/") view=move || view! { <fleet::FleetOverview now=now /> } />
                            <Route path=path!("/tower") view=move || view! { <service::ServicePage now=now /> } />
                        </Routes>
                    }
                    .into_any(),
                    signin::SignIn::Pending => view! { <p class="state loading">"Signing in…"</p> }.into_any(),
                    signin::SignIn::Needed(why) => view! {
                        <p class="state signin" role="status">"Sign-in needed: " {why}</p>
                    }
                    .into_any(),
                }}
            </main>
        </Router>
    }
}
