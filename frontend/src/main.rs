//! Tower's browser app.
//!
//! Module map:
//! - [`api`] — every request to Tower's backend, and its error type. No other module knows a URL.
//! - [`clock`] — Tower's time on the page (the server's clock, carried forward); the only
//!   module that reads the browser's clock.
//! - [`feed`] — what every page shares: time, sign-in, when to refetch, the summary.
//! - [`live`] — when to fetch again: `/api/events` (SSE) says what changed, for which
//!   service; polling is the fallback.
//! - [`nav`] — where the page is, and the links to every page and tab.
//! - [`fleet`] — the fleet overview: apps × environments, trouble first, recent activity and
//!   DORA's figures.
//! - [`service`] — `/tower?view=…`: the Services tab, or one service's tab bar and tab.
//! - [`tabs`] — one service's tabs ([`tabs::Tab`], the one list of them), a module each.
//! - [`logs`] — the log console the Pipelines and Runtime tabs open.
//! - [`signin`] — the Backstage user token: from the Backstage parent page, or guest.
//! - [`ui`] — view helpers the tabs share (status labels, durations, health notices).
//!
//! All derivations and answer types come from `tower_shared`; this crate only fetches and
//! draws.

mod api;
mod clock;
mod feed;
mod fleet;
mod live;
mod logs;
mod nav;
mod service;
mod signin;
mod tabs;
mod ui;

use leptos::prelude::*;

fn main() {
    console_error_panic_hook::set_once();
    leptos::mount::mount_to_body(App);
}

/// The element of the page with this `id`.
fn element(id: &str) -> Option<web_sys::Element> {
    web_sys::window()
        .and_then(|w| w.document())
        .and_then(|d| d.get_element_by_id(id))
}

/// Keeps the masthead `index.html` drew up to date: the current section marked, and the
/// Services badge saying how many services are being provisioned. Inside a Backstage page
/// (`?embed=1`) `index.html` has removed it: nothing to keep.
fn follow_masthead(path: Memo<String>, in_flight: impl Fn() -> Option<usize> + 'static) {
    let (Some(fleet), Some(services)) = (element("section-fleet"), element("section-services"))
    else {
        return;
    };
    Effect::new(move |_| {
        let _ = if path.get() == "/" {
            fleet.set_attribute("aria-current", "page")
        } else {
            fleet.remove_attribute("aria-current")
        };
    });
    let Ok(Some(badge)) = services.query_selector(".badge") else {
        return;
    };
    Effect::new(move |_| {
        let _ = match in_flight() {
            Some(n) => {
                badge.set_text_content(Some(&n.to_string()));
                let _ = badge.set_attribute("aria-label", &format!("{n} in flight"));
                badge.remove_attribute("hidden")
            }
            None => badge.set_attribute("hidden", ""),
        };
    });
}

#[component]
fn App() -> impl IntoView {
    nav::provide_location();
    let path = nav::use_path();
    let feed = feed::provide();
    if path.get_untracked() == "/tower" {
        service::preload();
    }
    let signin = feed.signin;
    let in_flight = move || {
        feed.summary
            .get()
            .and_then(Result::ok)
            .map(|s| s.counts.in_flight)
    };
    // Inside Backstage (`index.html` removed the masthead) the page keeps its one top
    // heading for screen readers.
    let embedded = element("masthead").is_none();
    follow_masthead(path, in_flight);
    view! {
        <>
            {embedded.then(|| view! { <h1 class="visually-hidden">"Tower"</h1> })}
            <main>
                {move || match signin.get() {
                    signin::SignIn::SignedIn => match path.get().as_str() {
                        "/" => view! { <fleet::FleetOverview /> }.into_any(),
                        "/tower" => view! { <service::ServicePage /> }.into_any(),
                        _ => view! { <p class="state error">"No such page."</p> }.into_any(),
                    },
                    signin::SignIn::Pending => view! { <p class="state loading">"Signing in…"</p> }.into_any(),
                    signin::SignIn::Needed(why) => view! {
                        <p class="state signin" role="status">"Sign-in needed: " {why}</p>
                    }
                    .into_any(),
                }}
            </main>
        </>
    }
}
