//! Tower's clock: the one place the backend reads the time.
//!
//! Everything Tower stamps — derivations, staleness, GitHub's rate-limit end, history
//! records, readiness, Retry-After, event payloads — is on this clock: the system clock when
//! Tower runs for real, the simulated world's in `tower demo` (which may run faster, or
//! stand still). Every API answer carries its reading ([`tower_shared::api::CLOCK_HEADER`]).
//!
//! [`wall`] is for stamps other systems make on their own (wall) clocks: a JWT's `exp`,
//! GitHub's rate-limit reset epoch. `tests/it/tidy.rs` checks that nothing else reads the
//! time.

use std::sync::Arc;

use chrono::{DateTime, Utc};
use tower_shared::api::ClockReading;

/// Tower's idea of "now". Cheap to clone.
#[derive(Clone)]
pub struct Clock {
    now: Arc<dyn Fn() -> DateTime<Utc> + Send + Sync>,
    rate: f64,
}

impl std::fmt::Debug for Clock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Clock")
            .field("now", &self.now())
            .field("rate", &self.rate)
            .finish()
    }
}

impl Clock {
    /// The system clock.
    pub fn system() -> Self {
        Self::new(Utc::now, 1.0)
    }

    /// A clock reading `now`, which runs `rate` times as fast as real time (0: stopped).
    pub fn new(now: impl Fn() -> DateTime<Utc> + Send + Sync + 'static, rate: f64) -> Self {
        Self {
            now: Arc::new(now),
            rate: if rate.is_finite() { rate.max(0.0) } else { 1.0 },
        }
    }

    /// A clock standing still at `at` (a snapshot file's moment).
    pub fn stopped(at: DateTime<Utc>) -> Self {
        Self::new(move || at, 0.0)
    }

    pub fn now(&self) -> DateTime<Utc> {
        (self.now)()
    }

    /// World seconds per real second.
    pub fn rate(&self) -> f64 {
        self.rate
    }

    /// The reading every answer carries.
    pub fn reading(&self) -> ClockReading {
        ClockReading {
            now: self.now(),
            rate: self.rate,
        }
    }

    /// The rate spans are converted at: a stopped clock counts real seconds as its own
    /// (nothing on it moves, but a wait still has a length to show).
    fn span_rate(&self) -> f64 {
        if self.rate > 0.0 {
            self.rate
        } else {
            1.0
        }
    }

    /// Real seconds until this clock shows `at` (between 1 and 3,600; for `Retry-After`,
    /// which callers count in real seconds).
    pub fn real_secs_until(&self, at: DateTime<Utc>) -> u64 {
        #[allow(clippy::cast_precision_loss)]
        let ahead = (at - self.now()).num_milliseconds().max(0) as f64 / 1000.0;
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
        let real = (ahead / self.span_rate()).ceil() as u64;
        real.clamp(1, 3600)
    }

    /// `seconds` of real time on this clock (a wait measured in real time, such as a
    /// `retry-after` header, as a span of Tower's time).
    pub fn span_of_real(&self, seconds: u64) -> chrono::Duration {
        #[allow(clippy::cast_possible_truncation, clippy::cast_precision_loss)]
        let millis = (seconds as f64 * 1000.0 * self.span_rate()) as i64;
        chrono::Duration::milliseconds(millis)
    }
}

/// The wall clock, for stamps made by other systems on theirs (a JWT's `exp`, GitHub's
/// `x-ratelimit-reset`). Tower's own stamps use [`Clock::now`].
pub fn wall() -> DateTime<Utc> {
    Utc::now()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retry_after_is_in_real_seconds() {
        let at: DateTime<Utc> = "2026-11-30T10:00:00Z".parse().unwrap();
        let fast = Clock::new(move || at, 20.0);
        assert_eq!(
            fast.real_secs_until(at + chrono::Duration::seconds(600)),
            30
        );
        assert_eq!(fast.real_secs_until(at), 1);
        assert_eq!(fast.span_of_real(30), chrono::Duration::seconds(600));
        let stopped = Clock::stopped(at);
        assert_eq!(
            stopped.real_secs_until(at + chrono::Duration::seconds(5)),
            5
        );
        assert_eq!(stopped.span_of_real(12), chrono::Duration::seconds(12));
        assert_eq!(stopped.reading().rate, 0.0);
    }
}
