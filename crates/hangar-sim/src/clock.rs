//! World time. It runs at a speed factor from a start moment, and tests move it by hand.

use std::sync::{Arc, Mutex};
use std::time::Instant;

use chrono::{DateTime, Duration, Utc};

#[derive(Debug)]
struct State {
    origin_world: DateTime<Utc>,
    origin_real: Instant,
    speed: f64,
    advanced: Duration,
    /// Moves each time the clock is moved by hand or its speed changes.
    jumps: u64,
}

/// A shared scenario clock.
#[derive(Clone, Debug)]
pub struct Clock(Arc<Mutex<State>>);

impl Clock {
    /// World time starting at `start` and running `speed` times faster than real time
    /// (0 stops it; it then moves only by [`Clock::advance`]).
    pub fn new(start: DateTime<Utc>, speed: f64) -> Self {
        Self(Arc::new(Mutex::new(State {
            origin_world: start,
            origin_real: Instant::now(),
            speed: speed.max(0.0),
            advanced: Duration::zero(),
            jumps: 0,
        })))
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    pub fn now(&self) -> DateTime<Utc> {
        let state = self.state();
        let real = state.origin_real.elapsed().as_secs_f64() * state.speed;
        #[allow(clippy::cast_possible_truncation)]
        let scaled = Duration::milliseconds((real * 1000.0) as i64);
        state.origin_world + scaled + state.advanced
    }

    /// How many world seconds pass per real second (0: stopped).
    pub fn speed(&self) -> f64 {
        self.state().speed
    }

    /// Runs world time at `speed` from now on (0 stops it), without a jump.
    pub fn set_speed(&self, speed: f64) {
        let mut state = self.state();
        let real = state.origin_real.elapsed().as_secs_f64() * state.speed;
        #[allow(clippy::cast_possible_truncation)]
        let scaled = Duration::milliseconds((real * 1000.0) as i64);
        state.origin_world += scaled;
        state.origin_real = Instant::now();
        state.speed = speed.max(0.0);
        state.jumps += 1;
    }

    /// How many times the clock was moved by hand or changed speed: what was computed for
    /// an earlier count may describe another moment.
    pub fn jumps(&self) -> u64 {
        self.state().jumps
    }

    /// Moves world time forward by `by`.
    pub fn advance(&self, by: Duration) {
        let mut state = self.state();
        state.advanced += by;
        state.jumps += 1;
    }

    /// When the world began.
    pub fn start(&self) -> DateTime<Utc> {
        self.state().origin_world
    }
}

/// The world's clock over HTTP: `GET /clock` answers `{"now": RFC 3339, "rate": speed}`,
/// so a Tower in another process (`worldClock` in its `tower.yaml`) tells time by it.
pub fn router(clock: Clock) -> axum::Router {
    axum::Router::new().route(
        "/clock",
        axum::routing::get(move || {
            let clock = clock.clone();
            async move {
                axum::Json(serde_json::json!({
                    "now": clock.now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
                    "rate": clock.speed(),
                }))
            }
        }),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stopped_clock_moves_only_when_advanced() {
        let start: DateTime<Utc> = "2026-11-30T08:00:00Z".parse().unwrap();
        let clock = Clock::new(start, 0.0);
        assert_eq!(clock.now(), start);
        clock.advance(Duration::minutes(5));
        assert_eq!(clock.now(), start + Duration::minutes(5));
    }

    #[test]
    fn changing_speed_does_not_jump() {
        let start: DateTime<Utc> = "2026-11-30T08:00:00Z".parse().unwrap();
        let clock = Clock::new(start, 1000.0);
        std::thread::sleep(std::time::Duration::from_millis(20));
        clock.set_speed(0.0);
        let stopped = clock.now();
        assert!(stopped >= start + Duration::seconds(20), "{stopped}");
        assert_eq!(clock.now(), stopped);
        assert_eq!(clock.speed(), 0.0);
    }
}
