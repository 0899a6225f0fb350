//! Tower's browser app.
//!
//! Module map:
//! - [`api`] — every request to Tower's backend, and its error type. No other module knows a URL.
//! - [`clock`] — the browser's `now` as a signal that ticks once a second.
//! - [`fleet`] — the fleet overview: apps × environments, trouble first.
//! - [`service`] — one service's tabs, chosen by `/tower?view=…&service=…`:
//!   [`deployments`] (the cloud variant) and [`pipelines`].
//! - [`ui`] — view helpers the tabs share (status labels, durations, table headers).
//!
//! All derivations come from `tower_shared`; this crate only fetches and draws.

mod api;
mod clock;
mod deployments;
mod fleet;
mod pipelines;
mod service;
mod ui;

use leptos::prelude::*;
use leptos_router::components::{Route, Router, Routes, A};
use leptos_router::path;

fn main() {
    console_error_panic_hook::set_once();
    leptos::mount::mount_to_body(App);
}

#[component]
fn App() -> impl IntoView {
    let now = clock::ticking_now();
    view! {
        <Router>
            <header class="masthead">
                <h1>
                    <A href="/">"Tower"</A>
                </h1>
                <p class="tagline">"Every app, every environment, one glance."</p>
            </header>
            <main>
                <Routes fallback=|| view! { <p class="state error">"No such page."</p> }>
                    <Route path=path!("/") view=move || view! { <fleet::FleetOverview now=now /> } />
                    <Route path=path!("/tower") view=move || view! { <service::ServicePage now=now /> } />
                </Routes>
            </main>
        </Router>
    }
}
