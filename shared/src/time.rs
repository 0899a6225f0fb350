//! Wording for ages and durations. Callers pass `now`; nothing here reads a clock.

use chrono::{DateTime, Utc};

/// "12s", "4m 05s", "3h 20m", "2d 4h": a compact duration for tables and bars.
/// Negative input (a clock skew between cluster and browser) reads as "0s".
pub fn compact_duration(seconds: i64) -> String {
    let s = seconds.max(0);
    match s {
        0..=59 => format!("{s}s"),
        60..=3599 => format!("{}m {:02}s", s / 60, s % 60),
        3600..=86_399 => format!("{}h {:02}m", s / 3600, (s % 3600) / 60),
        _ => format!("{}d {}h", s / 86_400, (s % 86_400) / 3600),
    }
}

/// How long ago `then` was, seen at `now`: "just now", "40s ago", "3m 10s ago".
/// A `then` in the future (clock skew) reads as "just now" rather than a negative age.
pub fn age(then: DateTime<Utc>, now: DateTime<Utc>) -> String {
    let seconds = (now - then).num_seconds();
    if seconds < 5 {
        "just now".to_owned()
    } else {
        format!("{} ago", compact_duration(seconds))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compact_duration_picks_the_two_largest_units() {
        let cases = [
            (0, "0s"),
            (59, "59s"),
            (60, "1m 00s"),
            (245, "4m 05s"),
            (3600, "1h 00m"),
            (12_000, "3h 20m"),
            (86_400, "1d 0h"),
            (187_200, "2d 4h"),
            (-30, "0s"),
        ];
        for (seconds, expected) in cases {
            assert_eq!(compact_duration(seconds), expected, "{seconds}s");
        }
    }

    #[test]
    fn age_never_goes_negative() {
        let now: DateTime<Utc> = "2026-11-30T10:00:00Z".parse().unwrap();
        let later: DateTime<Utc> = "2026-11-30T10:05:00Z".parse().unwrap();
        let earlier: DateTime<Utc> = "2026-11-30T09:56:50Z".parse().unwrap();
        assert_eq!(age(later, now), "just now");
        assert_eq!(age(now, now), "just now");
        assert_eq!(age(earlier, now), "3m 10s ago");
    }
}
