//! The browser's clock, read in one place and handed to derivations as `now`.

use std::time::Duration;

use chrono::{DateTime, Utc};
use leptos::prelude::*;

/// The browser's clock now.
pub fn browser_now() -> DateTime<Utc> {
    // `Date.now()` is milliseconds since the epoch as an f64; it fits i64 for any real date.
    #[allow(clippy::cast_possible_truncation)]
    let millis = js_sys::Date::now() as i64;
    DateTime::from_timestamp_millis(millis).unwrap_or_default()
}

/// A signal holding the current time, updated once a second until the owner is dropped.
pub fn ticking_now() -> ReadSignal<DateTime<Utc>> {
    let (now, set_now) = signal(browser_now());
    match set_interval_with_handle(move || set_now.set(browser_now()), Duration::from_secs(1)) {
        Ok(handle) => on_cleanup(move || handle.clear()),
        Err(err) => leptos::logging::warn!("the clock will not tick: {err:?}"),
    }
    now
}
