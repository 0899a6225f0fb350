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

use std::collections::BTreeMap;

use chrono::{DateTime, Duration, Utc};
use serde::{Deserialize, Serialize};

use crate::argo::replica_set_image;
use crate::hangar;
use crate::image::without_digest;
use crate::kube::{str_at, time, Object};
use crate::pulls::{PrState, Pulls};
use crate::snapshot::Snapshot;

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
    /// The app it belongs to: a release fixes forward only its own app's.
    #[serde(default)]
    pub service: String,
    /// The image without its digest.
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
    /// Its page on GitHub, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
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

    // Looked up, not searched: a fleet's week holds thousands of each.
    let mut live_at: BTreeMap<&str, DateTime<Utc>> = BTreeMap::new();
    for r in &live {
        if let Some(at) = r.ended_at {
            // Its first time live, as the oldest first list has it.
            live_at.entry(r.release.as_str()).or_insert(at);
        }
    }
    let lead = changes
        .iter()
        .filter_map(|c| {
            let at = live_at.get(c.release.as_str())?;
            Some((c.id.clone(), (*at - c.merged_at).num_seconds()))
        })
        .collect::<Vec<_>>();
    // Each app's rollouts, by start (a release fixes forward only its own app's).
    let mut by_service: BTreeMap<&str, Vec<&ProdRollout>> = BTreeMap::new();
    for rollout in &rollouts {
        by_service
            .entry(&rollout.service)
            .or_default()
            .push(rollout);
    }

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
                let own = by_service
                    .get(rollout.service.as_str())
                    .map_or(&[][..], Vec::as_slice);
                let after = own.partition_point(|next| next.started_at <= end);
                let fix = own[after..]
                    .iter()
                    .take_while(|next| next.started_at - end <= FIX_FORWARD)
                    .find(|next| next.outcome == Outcome::Live);
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

/// The prod rollouts of `service` its clusters still show: one per ReplicaSet Argo Rollouts
/// keeps in the app's production namespace (it keeps a few old ones, scaled to zero), each
/// started when its ReplicaSet was made. How each ended:
/// - **aborted** when an AnalysisRun of its pod template failed (at the run's completion),
///   or when it is the Rollout's current template and the Rollout is aborted (at
///   `abortedAt`);
/// - **in progress** while it is the current template and not yet the stable one;
/// - else **live**, from when it arrived: Argo Rollouts keeps no completion time for older
///   rollouts, so the arrival stands for it (`docs/dora.md`).
pub fn prod_rollouts(snapshot: &Snapshot, service: &str) -> Vec<ProdRollout> {
    let mut by_namespace: BTreeMap<&str, Vec<&Object>> = BTreeMap::new();
    for object in snapshot.clusters.values().flatten() {
        let prod = hangar::environment_of(object, service).is_some_and(hangar::is_production);
        if let (true, Some(namespace)) = (prod, object.namespace()) {
            by_namespace.entry(namespace).or_default().push(object);
        }
    }
    let mut rollouts = Vec::new();
    for objects in by_namespace.values() {
        let of_kind = |kind: &'static str| objects.iter().filter(move |o| o.kind == kind);
        let status = of_kind("Rollout").next().map(|r| &r.status);
        let status_str = |key: &str| status.and_then(|s| str_at(s, &[key]));
        let (current, stable) = (status_str("currentPodHash"), status_str("stableRS"));
        let aborted_at = status
            .filter(|s| s["abort"] == true)
            .map(|s| s.get("abortedAt").and_then(time));
        let failed: BTreeMap<&str, Option<DateTime<Utc>>> = of_kind("AnalysisRun")
            .filter(|run| matches!(str_at(&run.status, &["phase"]), Some("Failed" | "Error")))
            .filter_map(|run| {
                let hash = run.label(POD_HASH)?;
                Some((hash, run.status.get("completedAt").and_then(time)))
            })
            .collect();
        for set in of_kind("ReplicaSet") {
            let (Some(hash), Some(started_at)) =
                (set.label(POD_HASH), set.metadata.creation_timestamp)
            else {
                continue;
            };
            let Some(image) = replica_set_image(set) else {
                continue;
            };
            let is_current = current == Some(hash) && stable != Some(hash);
            let (outcome, ended_at) = match (failed.get(hash), is_current, aborted_at) {
                (Some(at), _, _) => (Outcome::Aborted, *at),
                (None, true, Some(at)) => (Outcome::Aborted, at),
                (None, true, None) => (Outcome::InProgress, None),
                (None, false, _) => (Outcome::Live, Some(started_at)),
            };
            rollouts.push(ProdRollout {
                service: service.to_owned(),
                release: without_digest(image).to_owned(),
                started_at,
                outcome,
                ended_at,
            });
        }
    }
    rollouts.sort_by(|a, b| (a.started_at, &a.release).cmp(&(b.started_at, &b.release)));
    rollouts
}

/// The label Argo Rollouts puts on a pod template's ReplicaSet and AnalysisRuns.
const POD_HASH: &str = "rollouts-pod-template-hash";

/// The merged pull requests on the app's source repository whose build's image Tower knows:
/// each a change carried by that release.
pub fn changes(pulls: &Pulls) -> Vec<Change> {
    pulls
        .pulls
        .iter()
        .filter(|pr| pr.source && pr.state == PrState::Merged)
        .filter_map(|pr| {
            Some(Change {
                id: format!("{}#{}", pr.repo, pr.number),
                url: pr.url.clone(),
                merged_at: pr.ended_at?,
                release: without_digest(pr.image.as_deref()?).to_owned(),
            })
        })
        .collect()
}

/// The four keys in one sentence, unknowns said as such.
pub fn sentence(dora: &Dora, days: u32) -> String {
    let span = if days == 1 {
        "Over the last day".to_owned()
    } else {
        format!("Over the last {days} days")
    };
    let live = dora.deployed.len();
    let deployed = match live {
        0 => "no release went live in prod".to_owned(),
        1 => format!(
            "1 release went live in prod ({:.1} a day)",
            dora.deployments_per_day
        ),
        n => format!(
            "{n} releases went live in prod ({:.1} a day)",
            dora.deployments_per_day
        ),
    };
    let lead = dora.lead_time.as_ref().map_or_else(
        || "no merged change reached prod, so there is no lead time".to_owned(),
        |lead| {
            format!(
                "changes took a median {} from merge to prod (p90 {})",
                crate::time::compact_duration(lead.median_sec),
                crate::time::compact_duration(lead.p90_sec)
            )
        },
    );
    let failures = match dora.change_failure_rate {
        None => "no rollout ended, so there is no change failure rate".to_owned(),
        Some(rate) => {
            let failed = dora.failed.len();
            let restored = dora.time_to_restore.as_ref().map_or_else(String::new, |r| {
                format!(
                    ", restored in a median {}",
                    crate::time::compact_duration(r.median_sec)
                )
            });
            format!(
                "{failed} of {} rollouts that ended failed ({:.0} %){restored}",
                dora.ended,
                rate * 100.0
            )
        }
    };
    format!("{span}: {deployed}; {lead}; {failures}.")
}

/// The longest window asked of [`report`], in days: the pull requests Tower reads are
/// [`crate::pulls::RECENT_DAYS`] days' worth, so a longer one would miss changes.
pub const MAX_DAYS: u32 = crate::pulls::RECENT_DAYS as u32;

/// The four keys over the `days` before `now`, in a sentence, with the rollouts and changes
/// they counted so a reader can check them.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Report {
    pub sentence: String,
    #[serde(flatten)]
    pub dora: Dora,
    /// The prod rollouts that started or ended in the window, newest first.
    pub rollouts: Vec<ProdRollout>,
    /// The changes whose release went live in the window, newest first.
    pub changes: Vec<Change>,
}

/// The report of `parts` — each service with its part of the snapshot — over the `days`
/// (1 to [`MAX_DAYS`]) before `now`.
pub fn report<'a>(
    parts: impl IntoIterator<Item = (&'a str, Snapshot)>,
    days: u32,
    now: DateTime<Utc>,
) -> Report {
    let (mut rollouts, mut changes) = (Vec::new(), Vec::new());
    for (service, part) in parts {
        rollouts.extend(prod_rollouts(&part, service));
        changes.extend(self::changes(&crate::pulls::of(&part, service, now)));
    }
    let from = now - Duration::days(i64::from(days.clamp(1, MAX_DAYS)));
    let dora = derive(&rollouts, &changes, from, now);
    let within = |t: DateTime<Utc>| t >= from && t < now;
    rollouts.retain(|r| within(r.started_at) || r.ended_at.is_some_and(within));
    rollouts.sort_by_key(|r| std::cmp::Reverse(r.started_at));
    let counted: std::collections::BTreeSet<&str> = dora
        .lead_time
        .iter()
        .flat_map(|l| l.counted.iter().map(String::as_str))
        .collect();
    changes.retain(|c| counted.contains(c.id.as_str()));
    changes.sort_by_key(|c| std::cmp::Reverse(c.merged_at));
    Report {
        sentence: sentence(&dora, days),
        dora,
        rollouts,
        changes,
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
            service: "shop".to_owned(),
            release: release.to_owned(),
            started_at: at(start),
            outcome,
            ended_at: end.map(at),
        }
    }

    fn change(id: &str, merged: i64, release: &str) -> Change {
        Change {
            id: id.to_owned(),
            url: None,
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

    /// `fixtures/dora/week.json`: the same week as a cluster and GitHub show it (minutes
    /// from the window's start). Prod's ReplicaSets: 1.0 arrived at 60, 1.1 at 1440 (its
    /// step analysis failed at 1460), 1.2 at 2000, 1.3 at 2060 (its analysis passed), 1.4 at
    /// 10000 (the Rollout's current template, not yet stable). Each release's pull request
    /// merged at 0, 1300, 1900, 2050 and 9000, its build publishing the image.
    #[test]
    fn a_week_read_from_a_snapshot() {
        let text = include_str!("../../fixtures/dora/week.json");
        let snapshot = Snapshot::from_json(text).unwrap();
        let rollouts = prod_rollouts(&snapshot, "shop");
        let outcomes: Vec<(&str, Outcome, Option<DateTime<Utc>>)> = rollouts
            .iter()
            .map(|r| (&r.release[r.release.len() - 13..], r.outcome, r.ended_at))
            .collect();
        assert_eq!(
            outcomes,
            [
                ("1.0.0-a0a0a0a", Outcome::Live, Some(at(60))),
                ("1.1.0-b1b1b1b", Outcome::Aborted, Some(at(1460))),
                ("1.2.0-c2c2c2c", Outcome::Live, Some(at(2000))),
                ("1.3.0-d3d3d3d", Outcome::Live, Some(at(2060))),
                ("1.4.0-e4e4e4e", Outcome::InProgress, None),
            ]
        );
        let report = report([("shop", snapshot.clone())], 7, snapshot.now);
        let dora = &report.dora;
        // Live: 1.0, 1.2, 1.3 — 3 in 7 days.
        assert_eq!(dora.deployed.len(), 3);
        // Lead times: 1.0 60 min, 1.2 100, 1.3 10 (1.1 never went live, 1.4 not yet):
        // sorted 10, 60, 100 — median (rank 2) 60, p90 (rank 3) 100.
        let lead = dora.lead_time.as_ref().unwrap();
        assert_eq!((lead.median_sec, lead.p90_sec), (60 * 60, 100 * 60));
        assert_eq!(
            lead.counted,
            ["acme/shop#43", "acme/shop#40", "acme/shop#42"]
        );
        // Ended 4; failed 1.1 (aborted) and 1.2 (1.3 started 60 min after it went live).
        assert_eq!(dora.ended, 4);
        assert_eq!(dora.change_failure_rate, Some(0.5));
        // Restores 20 (1.1: 1440 → 1460) and 60 min (1.2: live 2000 → 1.3 live 2060).
        let restore = dora.time_to_restore.as_ref().unwrap();
        assert_eq!((restore.median_sec, restore.p90_sec), (20 * 60, 60 * 60));
        assert_eq!(
            report.sentence,
            "Over the last 7 days: 3 releases went live in prod (0.4 a day); changes took a \
             median 1h 00m from merge to prod (p90 1h 40m); 2 of 4 rollouts that ended failed \
             (50 %), restored in a median 20m 00s."
        );
        // Every rollout of the week is listed, newest first; the changes counted too.
        assert_eq!(report.rollouts.len(), 5);
        assert_eq!(report.rollouts[0].outcome, Outcome::InProgress);
        assert_eq!(report.changes.len(), 3);
        assert_eq!(
            report.changes[0].url.as_deref(),
            Some("https://github.com/acme/shop/pull/43")
        );
    }

    #[test]
    fn a_fix_forward_is_only_within_one_app() {
        let mut other = rollout("9.0", 30, Outcome::Live, Some(40));
        other.service = "cart".to_owned();
        let rollouts = [rollout("2.0", 0, Outcome::Live, Some(25)), other];
        let day = derive(&rollouts, &[], at(0), at(1440));
        assert_eq!(day.failed, Vec::<String>::new());
    }

    #[test]
    fn unknowns_are_said_not_zeroed() {
        let empty = derive(&[], &[], at(0), at(1440));
        assert_eq!(
            sentence(&empty, 1),
            "Over the last day: no release went live in prod; no merged change reached prod, \
             so there is no lead time; no rollout ended, so there is no change failure rate."
        );
    }
}
