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

    /// The clock `config` names: a simulated world's (`worldClock`, [`Clock::following`]),
    /// else the system clock.
    pub async fn for_config(config: &crate::config::Config) -> anyhow::Result<Self> {
        match &config.world_clock {
            Some(url) => Self::following(url).await,
            None => Ok(Self::system()),
        }
    }

    /// A simulated world's clock, told by `GET url` (`{"now", "rate"}`, as `tower demo`'s
    /// world serves it): read once now (an error naming `worldClock` when it does not
    /// answer within 5 s), then every 100 ms; between readings it runs at the world's rate
    /// from the last one, and never backwards. Its rate is the first reading's.
    pub async fn following(url: &str) -> anyhow::Result<Self> {
        use anyhow::Context as _;
        use std::sync::atomic::{AtomicI64, Ordering};
        use std::sync::Mutex;
        use std::time::{Duration, Instant};

        let client = crate::outbound::http_client();
        let read = {
            let client = client.clone();
            let url = url.to_owned();
            move || {
                let request = client.get(&url).timeout(Duration::from_secs(5));
                async move {
                    let reading: ClockReading =
                        request.send().await?.error_for_status()?.json().await?;
                    anyhow::Ok((reading, Instant::now()))
                }
            }
        };
        let first = read()
            .await
            .with_context(|| format!("worldClock: reading the world's clock at {url}"))?;
        let rate = first.0.rate;
        let last = Arc::new(Mutex::new(first));
        let shown = Arc::new(AtomicI64::new(i64::MIN));
        let poll = Arc::clone(&last);
        tokio::spawn(async move {
            let mut every = tokio::time::interval(Duration::from_millis(100));
            every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                every.tick().await;
                match read().await {
                    Ok(reading) => {
                        *poll
                            .lock()
                            .unwrap_or_else(std::sync::PoisonError::into_inner) = reading;
                    }
                    // The world is gone (its demo stopped) or slow: the clock runs on.
                    Err(err) => tracing::debug!(%err, "the world's clock did not answer"),
                }
            }
        });
        Ok(Self::new(
            move || {
                let (reading, at) = *last
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner);
                #[allow(clippy::cast_possible_truncation)]
                let ran = (at.elapsed().as_secs_f64() * reading.rate * 1000.0) as i64;
                let millis = reading.now.timestamp_millis() + ran;
                let millis = shown.fetch_max(millis, Ordering::Relaxed).max(millis);
                DateTime::from_timestamp_millis(millis).unwrap_or(reading.now)
            },
            rate,
        ))
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
