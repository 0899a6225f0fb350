//! Time on the page is Tower's time: the server's clock (the simulated world's in the demo,
//! which may run faster or stand still), read from the clock header every answer carries
//! and carried forward between answers at the rate the server says. This is the only module
//! that reads the browser's clock; every page takes `now` from [`ticking_now`].

use std::cell::Cell;
use std::time::Duration;

use chrono::{DateTime, Utc};
use leptos::prelude::*;
use tower_shared::api::ClockReading;

/// The browser's clock now.
fn browser_now() -> DateTime<Utc> {
    // `Date.now()` is milliseconds since the epoch as an f64; it fits i64 for any real date.
    #[allow(clippy::cast_possible_truncation)]
    let millis = js_sys::Date::now() as i64;
    DateTime::from_timestamp_millis(millis).unwrap_or_default()
}

/// The last reading of the server's clock, and when (on the browser's clock) it was taken.
#[derive(Clone, Copy, Debug)]
struct Sync {
    reading: ClockReading,
    at: DateTime<Utc>,
}

thread_local! {
    static SYNC: Cell<Option<Sync>> = const { Cell::new(None) };
    /// The page's ticking time ([`ticking_now`]), moved at once when a reading arrives: an
    /// answer and the time it was read at reach the page together.
    static NOW: Cell<Option<Ticking>> = const { Cell::new(None) };
}

type Ticking = (ReadSignal<DateTime<Utc>>, WriteSignal<DateTime<Utc>>);

/// Moves the ticking signal to the server's time, if a second or more of it has passed.
fn tick() {
    if let Some((now, set_now)) = NOW.with(Cell::get) {
        let next = server_now();
        if (next - now.get_untracked()).abs() >= chrono::Duration::seconds(1) {
            set_now.set(next);
        }
    }
}

/// Takes a reading of the server's clock (from an answer's clock header).
pub fn sync(reading: ClockReading) {
    SYNC.with(|s| {
        s.set(Some(Sync {
            reading,
            at: browser_now(),
        }));
    });
    tick();
}

/// The server's clock now: its last reading moved on by the browser's clock times the rate
/// (the browser's own clock until the first answer).
pub fn server_now() -> DateTime<Utc> {
    let browser = browser_now();
    match SYNC.with(Cell::get) {
        Some(Sync { reading, at }) => {
            let real_ms = (browser - at).num_milliseconds().max(0) as f64;
            #[allow(clippy::cast_possible_truncation)]
            let world_ms = (real_ms * reading.rate) as i64;
            reading.now + chrono::Duration::milliseconds(world_ms)
        }
        None => browser,
    }
}

/// A signal holding the server's time, moving each time a second of server time has passed
/// — once a real second normally, up to ten times a real second when the server's clock runs
/// fast, never while it stands still — until the owner is dropped.
/// The page has one: a reading of the server's clock moves it at once too.
pub fn ticking_now() -> ReadSignal<DateTime<Utc>> {
    let (now, set_now) = signal(server_now());
    NOW.with(|n| n.set(Some((now, set_now))));
    match set_interval_with_handle(tick, Duration::from_millis(100)) {
        Ok(handle) => on_cleanup(move || {
            handle.clear();
            NOW.with(|n| n.set(None));
        }),
        Err(err) => leptos::logging::warn!("the clock will not tick: {err:?}"),
    }
    now
}
