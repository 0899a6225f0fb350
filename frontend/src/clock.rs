//! The browser's clock, read in one place and handed to derivations as `now`.

use std::time::Duration;

use chrono::{DateTime, Utc};
use leptos::prelude::*;

fn read_clock() -> DateTime<Utc> {
    // `Date.now()` is milliseconds since the epoch as an f64; it fits i64 for any real date.
    #[allow(clippy::cast_possible_truncation)]
    let millis = js_sys::Date::now() as i64;
    DateTime::from_timestamp_millis(millis).unwrap_or_default()
}

/// A signal holding the current time, updated once a second until the owner is dropped.
pub fn ticking_now() -> ReadSignal<DateTime<Utc>> {
    let (now, set_now) = signal(read_clock());
    match set_interval_with_handle(move || set_now.set(read_clock()), Duration::from_secs(1)) {
        Ok(handle) => on_cleanup(move || handle.clear()),
        Err(err) => leptos::logging::warn!("the clock will not tick: {err:?}"),
    }
    now
}
