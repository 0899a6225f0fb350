//! DORA's four keys from what Tower already reads: each prod rollout (when it started, how
//! it ended) and each merged change (when it merged, which release carried it). The rules
//! are `docs/dora.md`'s; every figure keeps what it counted, so a reader can check it.
//!
//! - **Deployment frequency**: prod rollouts that completed in the window, per day.
//! - **Lead time for changes**: for each change whose release went live in prod in the
//!   window, merge → live; median and 90th percentile (nearest rank).
//! - **Change failure rate**: of the prod rollouts that ended in the window, those that
//!   failed — aborted or rolled back, or replaced in prod by the next release within
//!   [`FIX_FORWARD`] of going live (a fix forward).
//! - **Time to restore**: for each failure, from when the bad release started serving to
//!   when prod was healthy again (the abort or rollback that returned traffic to the stable
//!   version, or the fix going live); median.
//!
//! Nothing counted is `None`, never zero: a window with no rollout has no failure rate.

use chrono::{DateTime, Duration, Utc};
use serde::{Deserialize, Serialize};

/// A release that replaces the one before in prod this soon after it went live fixes it.
pub const FIX_FORWARD: Duration = Duration::hours(1);

/// How a prod rollout ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Outcome {
    /// Fully live (the canary completed, or it was promoted at once).
    Live,
    /// Aborted: traffic went back to the stable version.
    Aborted,
    /// Rolled back to an earlier release after going live.
    RolledBack,
    /// Still on its way.
    InProgress,
}

/// One rollout of a release into prod.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ProdRollout {
    pub release: String,
    pub started_at: DateTime<Utc>,
    pub outcome: Outcome,
    /// When it went live, or was aborted or rolled back; `None` while in progress.
    pub ended_at: Option<DateTime<Utc>>,
}

/// A merged change and the release that carried it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Change {
    /// How a reader finds it: `acme/shop#42`.
    pub id: String,
    pub merged_at: DateTime<Utc>,
    pub release: String,
}

/// A duration figure and what it was computed from.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Durations {
    pub median_sec: i64,
    pub p90_sec: i64,
    /// What was measured (changes, or failed releases).
    pub counted: Vec<String>,
}

/// The four keys over one window.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Dora {
    pub from: DateTime<Utc>,
    pub to: DateTime<Utc>,
    /// The releases that went live in prod in the window.
    pub deployed: Vec<String>,
    pub deployments_per_day: f64,
    pub lead_time: Option<Durations>,
    /// Failed / ended, and which failed; `None` when no rollout ended in the window.
    pub change_failure_rate: Option<f64>,
    pub failed: Vec<String>,
    pub ended: usize,
    pub time_to_restore: Option<Durations>,
}

/// The value at `p` (0–100) of `sorted` by nearest rank; `None` when empty.
pub fn nearest_rank(sorted: &[i64], p: u32) -> Option<i64> {
    if sorted.is_empty() {
        return None;
    }
    let rank = (u64::from(p) * sorted.len() as u64).div_ceil(100).max(1);
    sorted.get(usize::try_from(rank).ok()? - 1).copied()
}

fn durations(mut measured: Vec<(String, i64)>) -> Option<Durations> {
    measured.sort_by_key(|(_, d)| *d);
    let values: Vec<i64> = measured.iter().map(|(_, d)| *d).collect();
    Some(Durations {
        median_sec: nearest_rank(&values, 50)?,
        p90_sec: nearest_rank(&values, 90)?,
        counted: measured.into_iter().map(|(id, _)| id).collect(),
    })
}

/// The four keys for the window `[from, to)` from `rollouts` (any order) and `changes`.
pub fn derive(
    rollouts: &[ProdRollout],
    changes: &[Change],
    from: DateTime<Utc>,
    to: DateTime<Utc>,
) -> Dora {
    let mut rollouts: Vec<&ProdRollout> = rollouts.iter().collect();
    rollouts.sort_by_key(|r| r.started_at);
    let within = |t: DateTime<Utc>| t >= from && t < to;
    let live: Vec<&ProdRollout> = rollouts
        .iter()
        .copied()
        .filter(|r| r.outcome == Outcome::Live && r.ended_at.is_some_and(within))
        .collect();
    let days = (to - from).num_seconds() as f64 / 86_400.0;
    let deployments_per_day = if days > 0.0 {
        live.len() as f64 / days
    } else {
        0.0
    };

    let lead = changes
        .iter()
        .filter_map(|c| {
            let at = live.iter().find(|r| r.release == c.release)?.ended_at?;
            Some((c.id.clone(), (at - c.merged_at).num_seconds()))
        })
        .collect::<Vec<_>>();

    // Which ended rollouts failed, and when their harm began and ended.
    let mut failed = Vec::new();
    let mut restores = Vec::new();
    let ended: Vec<&ProdRollout> = rollouts
        .iter()
        .copied()
        .filter(|r| r.outcome != Outcome::InProgress && r.ended_at.is_some_and(within))
        .collect();
    for rollout in &ended {
        let Some(end) = rollout.ended_at else {
            continue;
        };
        match rollout.outcome {
            Outcome::Aborted | Outcome::RolledBack => {
                failed.push(rollout.release.clone());
                restores.push((
                    rollout.release.clone(),
                    (end - rollout.started_at).num_seconds(),
                ));
            }
            Outcome::Live => {
                let fix = rollouts.iter().find(|next| {
                    next.started_at > end
                        && next.started_at - end <= FIX_FORWARD
                        && next.outcome == Outcome::Live
                });
                if let Some(fixed_at) = fix.and_then(|f| f.ended_at) {
                    failed.push(rollout.release.clone());
                    restores.push((rollout.release.clone(), (fixed_at - end).num_seconds()));
                }
            }
            Outcome::InProgress => {}
        }
    }
    Dora {
        from,
        to,
        deployed: live.iter().map(|r| r.release.clone()).collect(),
        deployments_per_day,
        lead_time: durations(lead),
        change_failure_rate: (!ended.is_empty()).then(|| failed.len() as f64 / ended.len() as f64),
        ended: ended.len(),
        failed,
        time_to_restore: durations(restores),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(minutes: i64) -> DateTime<Utc> {
        "2026-11-01T00:00:00Z".parse::<DateTime<Utc>>().unwrap() + Duration::minutes(minutes)
    }

    fn rollout(release: &str, start: i64, outcome: Outcome, end: Option<i64>) -> ProdRollout {
        ProdRollout {
            release: release.to_owned(),
            started_at: at(start),
            outcome,
            ended_at: end.map(at),
        }
    }

    fn change(id: &str, merged: i64, release: &str) -> Change {
        Change {
            id: id.to_owned(),
            merged_at: at(merged),
            release: release.to_owned(),
        }
    }

    /// A week worked out by hand (minutes from the window's start):
    /// - 1.0 starts at 60, live at 85 (changes #1 merged at 0, #2 at 30);
    /// - 1.1 starts at 1440, aborted at 1460 (change #3 merged at 1400);
    /// - 1.2 starts at 2000, live at 2025 (changes #3 again via 1.2: merged 1400, #4 at 1990);
    /// - 1.3 starts at 2060 — 35 minutes after 1.2 went live: a fix forward — live at 2085
    ///   (change #5 merged at 2050);
    /// - 1.4 starts at 10000, still in progress at the end of the week.
    #[test]
    fn a_hand_computed_week() {
        let rollouts = [
            rollout("1.3", 2060, Outcome::Live, Some(2085)),
            rollout("1.0", 60, Outcome::Live, Some(85)),
            rollout("1.1", 1440, Outcome::Aborted, Some(1460)),
            rollout("1.2", 2000, Outcome::Live, Some(2025)),
            rollout("1.4", 10_000, Outcome::InProgress, None),
        ];
        let changes = [
            change("#1", 0, "1.0"),
            change("#2", 30, "1.0"),
            change("#3", 1400, "1.2"),
            change("#4", 1990, "1.2"),
            change("#5", 2050, "1.3"),
            change("#6", 9000, "1.4"),
        ];
        let week = derive(&rollouts, &changes, at(0), at(7 * 1440));
        // Three went live in 7 days.
        assert_eq!(week.deployed, vec!["1.0", "1.2", "1.3"]);
        assert!((week.deployments_per_day - 3.0 / 7.0).abs() < 1e-12);
        // Lead times in minutes: #1 85, #2 55, #3 625, #4 35, #5 35 → sorted 35, 35, 55,
        // 85, 625: the median (rank 3) is 55, the 90th percentile (rank 5) 625.
        let lead = week.lead_time.unwrap();
        assert_eq!((lead.median_sec, lead.p90_sec), (55 * 60, 625 * 60));
        assert_eq!(lead.counted.len(), 5);
        // Ended: 1.0, 1.1, 1.2, 1.3 (1.4 has not). Failed: 1.1 (aborted) and 1.2 (fixed
        // forward by 1.3 within the hour): 2 of 4.
        assert_eq!(week.ended, 4);
        assert_eq!(week.failed, vec!["1.1", "1.2"]);
        assert_eq!(week.change_failure_rate, Some(0.5));
        // Restores: 1.1 started 1440, aborted 1460 → 20 min; 1.2 live 2025, fix live
        // 2085 → 60 min. Median (rank 1 of 2) 20 min, 90th (rank 2) 60 min.
        let restore = week.time_to_restore.unwrap();
        assert_eq!((restore.median_sec, restore.p90_sec), (20 * 60, 60 * 60));
    }

    #[test]
    fn an_empty_window_says_unknown_not_zero() {
        let week = derive(&[], &[], at(0), at(1440));
        assert_eq!(week.change_failure_rate, None);
        assert_eq!(week.lead_time, None);
        assert_eq!(week.time_to_restore, None);
        assert_eq!(week.deployments_per_day, 0.0);
    }

    #[test]
    fn a_release_replaced_after_the_hour_is_not_a_failure() {
        let rollouts = [
            rollout("2.0", 0, Outcome::Live, Some(25)),
            rollout("2.1", 86, Outcome::Live, Some(110)),
        ];
        let day = derive(&rollouts, &[], at(0), at(1440));
        assert_eq!(day.failed, Vec::<String>::new());
        assert_eq!(day.change_failure_rate, Some(0.0));
    }

    #[test]
    fn nearest_rank_follows_its_definition() {
        assert_eq!(nearest_rank(&[], 50), None);
        assert_eq!(nearest_rank(&[7], 90), Some(7));
        assert_eq!(nearest_rank(&[1, 2, 3, 4], 50), Some(2));
        assert_eq!(nearest_rank(&[1, 2, 3, 4], 90), Some(4));
        assert_eq!(nearest_rank(&(1..=10).collect::<Vec<_>>(), 90), Some(9));
    }
}
