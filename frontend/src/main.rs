//! Tower's browser app.
//!
//! Module map:
//! - [`api`] — every request to Tower's backend, and its error type. No other module knows a URL.
//! - [`clock`] — the browser's `now` as a signal that ticks once a second.
//! - [`fleet`] — the fleet overview: apps × environments, trouble first.
//!
//! All derivations come from `tower_shared`; this crate only fetches and draws.

mod api;
mod clock;
mod fleet;

use leptos::prelude::*;

fn main() {
    console_error_panic_hook::set_once();
    leptos::mount::mount_to_body(App);
}

#[component]
fn App() -> impl IntoView {
    let now = clock::ticking_now();
    view! {
        <header class="masthead">
            <h1>"Tower"</h1>
            <p class="tagline">"Every app, every environment, one glance."</p>
        </header>
        <main>
            <fleet::FleetOverview now=now />
        </main>
    }
}
