//! DORA's four keys from what Tower already reads: each prod rollout (when it started, went
//! live and ended, and how) and each merged change (when it merged, its merge commit, the
//! release its own build made). The rules are `docs/dora.md`'s; every figure keeps what it
//! counted, so a reader can check it.
//!
//! - **Deployment frequency**: prod rollouts that went live in the window, per day.
//! - **Lead time for changes**: each change counted once, at its first arrival in prod —
//!   brought by the first release whose commit has it as an ancestor (GitHub's comparison of
//!   the previous prod release's commit with this one's, [`Compared`]; without one, the
//!   release its own merge commit's build made) — merge → live; median and 90th percentile
//!   (nearest rank).
//! - **Change failure rate**: of the rollouts that went live in the window, those rolled back
//!   (prod went back to an earlier release). A canary aborted before it went live is a
//!   failure prevented, counted apart; a release replaced by the next is no failure.
//! - **Time to restore**: for each rollback, from the bad release going live to the earlier
//!   one being live again; median and 90th percentile.
//!
//! Nothing counted is `None`, never zero: a window with no rollout has no failure rate.

use std::collections::{BTreeMap, BTreeSet};

use chrono::{DateTime, Duration, Utc};
use serde::{Deserialize, Serialize};

use crate::argo::replica_set_image;
use crate::hangar;
use crate::image::without_digest;
use crate::kube::{str_at, time, Object};
use crate::pulls::{PrState, Pulls};
use crate::snapshot::Snapshot;

/// How a prod rollout ended (or has not).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Outcome {
    /// Went live and serves prod now.
    Live,
    /// Went live, then the next release went live over it: no failure by itself.
    Replaced,
    /// Went live, then prod went back to an earlier release: a change failure, restored when
    /// the earlier release was live again.
    RolledBack,
    /// Stopped before it went live (its analysis failed, or someone aborted it): traffic
    /// went back to the stable release — a failure prevented, not a change failure.
    Aborted,
    /// Still on its way.
    InProgress,
}

/// One rollout of a release into prod.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ProdRollout {
    /// The app it belongs to.
    #[serde(default)]
    pub service: String,
    /// The image without its digest.
    pub release: String,
    pub started_at: DateTime<Utc>,
    /// When it went live (all of prod's traffic); `None` when it never did.
    #[serde(default)]
    pub live_at: Option<DateTime<Utc>>,
    pub outcome: Outcome,
    /// When it stopped serving, or was aborted; `None` while it serves or is on its way, or
    /// when Tower cannot tell.
    pub ended_at: Option<DateTime<Utc>>,
}

/// A merged change.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Change {
    /// The app whose source it changed.
    #[serde(default)]
    pub service: String,
    /// How a reader finds it: `acme/shop#42`.
    pub id: String,
    /// Its page on GitHub, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    pub merged_at: DateTime<Utc>,
    /// Its merge commit, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub commit: Option<String>,
    /// The release that brought it to prod first, as counted ([`report`]); in
    /// [`derive`]'s input, the release its own merge commit's build made, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub release: Option<String>,
}

pub use crate::github::Compared;

/// A duration figure and what it was computed from.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Durations {
    pub median_sec: i64,
    pub p90_sec: i64,
    /// What was measured (changes, or rolled-back releases).
    pub counted: Vec<String>,
}

/// The four keys over one window.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Dora {
    pub from: DateTime<Utc>,
    pub to: DateTime<Utc>,
    /// Since when the rollouts Tower reads go back (the oldest one's start): the clusters
    /// keep a few old ReplicaSets, so a long window may rest on less; `None` with none.
    pub history_from: Option<DateTime<Utc>>,
    /// The releases that went live in prod in the window.
    pub deployed: Vec<String>,
    pub deployments_per_day: f64,
    pub lead_time: Option<Durations>,
    /// Rolled back / went live, and which were rolled back; `None` when none went live.
    pub change_failure_rate: Option<f64>,
    pub failed: Vec<String>,
    /// The canaries stopped before they went live in the window: failures prevented.
    #[serde(default)]
    pub prevented: Vec<String>,
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

/// The four keys for the window `[from, to)` from `rollouts` (any order), `changes` and the
/// comparisons Tower has of consecutive prod releases' commits.
pub fn derive(
    rollouts: &[ProdRollout],
    changes: &[Change],
    compared: &[Compared],
    from: DateTime<Utc>,
    to: DateTime<Utc>,
) -> Dora {
    counting(rollouts, changes, compared, from, to).0
}

/// [`derive`], and the changes its lead time counted, each with the release that brought it.
fn counting(
    rollouts: &[ProdRollout],
    changes: &[Change],
    compared: &[Compared],
    from: DateTime<Utc>,
    to: DateTime<Utc>,
) -> (Dora, Vec<Change>) {
    let within = |t: DateTime<Utc>| t >= from && t < to;
    let went_live = in_order_live(rollouts);
    let live: Vec<&ProdRollout> = went_live
        .iter()
        .copied()
        .filter(|r| r.live_at.is_some_and(within))
        .collect();
    let days = (to - from).num_seconds() as f64 / 86_400.0;
    let deployments_per_day = if days > 0.0 {
        live.len() as f64 / days
    } else {
        0.0
    };
    let failed: Vec<&ProdRollout> = live
        .iter()
        .copied()
        .filter(|r| r.outcome == Outcome::RolledBack)
        .collect();
    let restores = failed
        .iter()
        .filter_map(|r| Some((r.release.clone(), (r.ended_at? - r.live_at?).num_seconds())))
        .collect();
    let prevented = rollouts
        .iter()
        .filter(|r| r.outcome == Outcome::Aborted && r.ended_at.is_some_and(within))
        .map(|r| r.release.clone())
        .collect();
    let counted: Vec<(&Change, &str, DateTime<Utc>)> = carried(&went_live, changes, compared)
        .into_iter()
        .filter(|(_, _, at)| within(*at))
        .collect();
    let lead = counted
        .iter()
        .map(|(change, _, at)| (change.id.clone(), (*at - change.merged_at).num_seconds()))
        .collect();
    let counted = counted
        .into_iter()
        .map(|(change, release, _)| Change {
            release: Some(release.to_owned()),
            ..change.clone()
        })
        .collect();
    let dora = Dora {
        from,
        to,
        history_from: history_from(rollouts),
        deployed: live.iter().map(|r| r.release.clone()).collect(),
        deployments_per_day,
        lead_time: durations(lead),
        change_failure_rate: (!live.is_empty()).then(|| failed.len() as f64 / live.len() as f64),
        failed: failed.iter().map(|r| r.release.clone()).collect(),
        prevented,
        time_to_restore: durations(restores),
    };
    (dora, counted)
}

/// The rollouts that went live, in the order prod took them.
fn in_order_live(rollouts: &[ProdRollout]) -> Vec<&ProdRollout> {
    let mut went_live: Vec<&ProdRollout> =
        rollouts.iter().filter(|r| r.live_at.is_some()).collect();
    went_live.sort_by_key(|r| (r.live_at, r.started_at));
    went_live
}

/// Each release's first arrival in prod (from `went_live`, in the order prod took them; a
/// release live again after a rollback arrives once), with the commit of the release of its
/// app that arrived before it — `None` for an app's first, or when no earlier one's tag
/// names a commit.
fn first_arrivals<'a>(went_live: &[&'a ProdRollout]) -> Vec<(&'a ProdRollout, Option<&'a str>)> {
    let mut previous: BTreeMap<&str, &str> = BTreeMap::new();
    let mut seen: BTreeSet<(&str, &str)> = BTreeSet::new();
    let mut out = Vec::new();
    for rollout in went_live {
        let (service, release) = (rollout.service.as_str(), rollout.release.as_str());
        if !seen.insert((service, release)) {
            continue;
        }
        out.push((*rollout, previous.get(service).copied()));
        if let Some(commit) = crate::image::commit(release) {
            previous.insert(service, commit);
        }
    }
    out
}

/// The comparisons DORA's lead time asks GitHub for, newest first: (service, base, head) for
/// each release that went live after another of its app, by their commits.
pub fn comparisons_wanted(rollouts: &[ProdRollout]) -> Vec<(String, String, String)> {
    first_arrivals(&in_order_live(rollouts))
        .into_iter()
        .rev()
        .filter_map(|(rollout, base)| {
            let head = crate::image::commit(&rollout.release)?;
            let base = base.filter(|base| *base != head)?;
            Some((rollout.service.clone(), base.to_owned(), head.to_owned()))
        })
        .collect()
}

/// Since when every app's rollouts are known: the latest of the apps' oldest starts (an app
/// whose cluster kept one day of ReplicaSets knows one day, whatever another kept).
fn history_from(rollouts: &[ProdRollout]) -> Option<DateTime<Utc>> {
    let mut oldest: BTreeMap<&str, DateTime<Utc>> = BTreeMap::new();
    for r in rollouts {
        let at = oldest.entry(&r.service).or_insert(r.started_at);
        *at = (*at).min(r.started_at);
    }
    oldest.into_values().max()
}

/// Each change and the release that first brought it to prod, with when that went live.
/// `went_live` is in the order the releases went live. Per app, a release brings the changes
/// GitHub's comparison of the release live before it with this one lists; without such a
/// comparison (the app's first release Tower sees, or one GitHub was not asked about), the
/// changes its own merge commit's build made. A change is counted once, at its first arrival.
fn carried<'a>(
    went_live: &[&'a ProdRollout],
    changes: &'a [Change],
    compared: &[Compared],
) -> Vec<(&'a Change, &'a str, DateTime<Utc>)> {
    let by_commit: BTreeMap<(&str, &str), &Change> = changes
        .iter()
        .filter_map(|c| Some(((c.service.as_str(), c.commit.as_deref()?), c)))
        .collect();
    let comparison = |service: &str, base: &str, head: &str| {
        compared
            .iter()
            .find(|c| c.service == service && c.base == base && c.head == head)
    };
    let mut counted: BTreeSet<&str> = BTreeSet::new();
    let mut out = Vec::new();
    for (rollout, base) in first_arrivals(went_live) {
        let (service, release) = (rollout.service.as_str(), rollout.release.as_str());
        let Some(at) = rollout.live_at else {
            continue;
        };
        let listed = base
            .zip(crate::image::commit(release))
            .and_then(|(base, head)| comparison(service, base, head));
        let brought: Vec<&Change> = match listed {
            Some(listed) => listed
                .commits
                .iter()
                .filter_map(|sha| by_commit.get(&(service, sha.as_str())).copied())
                .collect(),
            None => changes
                .iter()
                .filter(|c| c.service == service && c.release.as_deref() == Some(release))
                .collect(),
        };
        for change in brought {
            if counted.insert(change.id.as_str()) {
                out.push((change, release, at));
            }
        }
    }
    out
}

/// The prod rollouts of `service` its clusters still show: one per ReplicaSet Argo Rollouts
/// keeps in the app's production namespace (it keeps a few old ones, scaled to zero), each
/// started when its ReplicaSet was made. How each ended:
/// - **aborted** when an AnalysisRun of its pod template failed (at the run's completion),
///   or when it is the Rollout's current template and the Rollout is aborted (at
///   `abortedAt`);
/// - **in progress** while it is the current template and not yet the stable one;
/// - else it went **live**, at its arrival (Argo Rollouts keeps no completion time for older
///   rollouts, `docs/dora.md`), and then: **rolled back** when the ReplicaSet prod took next
///   (the next revision) is an older one (Argo Rollouts re-uses the old ReplicaSet of a
///   rollback and gives it the next revision number) — ended when prod was on the earlier
///   release again, which the cluster does not keep; **replaced** when a later one went live
///   over it (ended then); **live** otherwise.
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
        // Each ReplicaSet as a rollout, oldest first, with its revision.
        let mut sets: Vec<(ProdRollout, Option<u64>)> = Vec::new();
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
            let (outcome, live_at, ended_at) = match (failed.get(hash), is_current, aborted_at) {
                (Some(at), _, _) => (Outcome::Aborted, None, *at),
                (None, true, Some(at)) => (Outcome::Aborted, None, at),
                (None, true, None) => (Outcome::InProgress, None, None),
                (None, false, _) => (Outcome::Live, Some(started_at), None),
            };
            let revision = set.annotation(REVISION).and_then(|r| r.parse::<u64>().ok());
            sets.push((
                ProdRollout {
                    service: service.to_owned(),
                    release: without_digest(image).to_owned(),
                    started_at,
                    live_at,
                    outcome,
                    ended_at,
                },
                revision,
            ));
        }
        sets.sort_by(|(a, _), (b, _)| (a.started_at, &a.release).cmp(&(b.started_at, &b.release)));
        for i in 0..sets.len() {
            if sets[i].0.outcome != Outcome::Live {
                continue;
            }
            // The ReplicaSet prod took next (the next revision): an older one is a rollback.
            let revision = sets[i].1;
            let next_turn = sets
                .iter()
                .filter(|(_, r)| r.zip(revision).is_some_and(|(r, own)| r > own))
                .min_by_key(|(_, r)| *r);
            let rolled_back =
                next_turn.is_some_and(|(next, _)| next.started_at < sets[i].0.started_at);
            let next_live = sets[i + 1..].iter().find_map(|(later, _)| later.live_at);
            let rollout = &mut sets[i].0;
            if rolled_back {
                rollout.outcome = Outcome::RolledBack;
            } else if let Some(at) = next_live {
                rollout.outcome = Outcome::Replaced;
                rollout.ended_at = Some(at);
            }
        }
        rollouts.extend(sets.into_iter().map(|(rollout, _)| rollout));
    }
    rollouts.sort_by(|a, b| (a.started_at, &a.release).cmp(&(b.started_at, &b.release)));
    rollouts
}

/// The annotation Argo Rollouts numbers each ReplicaSet's turn with.
const REVISION: &str = "rollout.argoproj.io/revision";

/// The label Argo Rollouts puts on a pod template's ReplicaSet and AnalysisRuns.
const POD_HASH: &str = "rollouts-pod-template-hash";

/// The merged pull requests on `service`'s source repository: each change with its merge
/// commit, and the release its own build made when Tower knows it.
pub fn changes(pulls: &Pulls, service: &str) -> Vec<Change> {
    pulls
        .pulls
        .iter()
        .filter(|pr| pr.source && pr.state == PrState::Merged)
        .filter_map(|pr| {
            Some(Change {
                service: service.to_owned(),
                id: format!("{}#{}", pr.repo, pr.number),
                url: pr.url.clone(),
                merged_at: pr.ended_at?,
                commit: pr.merge_commit.clone(),
                release: pr.image.as_deref().map(|i| without_digest(i).to_owned()),
            })
        })
        .collect()
}

/// The four keys in one sentence, unknowns said as such, and how much of the window the
/// clusters' history covers when it is less than all of it.
pub fn sentence(dora: &Dora, days: u32) -> String {
    let span = if days == 1 {
        "Over the last day".to_owned()
    } else {
        format!("Over the last {days} days")
    };
    let span = match dora.history_from {
        Some(oldest) if oldest > dora.from => format!(
            "{span} (history covers {} of them)",
            crate::time::compact_duration((dora.to - oldest).num_seconds())
        ),
        None => format!("{span} (no history)"),
        Some(_) => span,
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
        None => "none went live, so there is no change failure rate".to_owned(),
        Some(rate) => {
            let restored = dora.time_to_restore.as_ref().map_or_else(String::new, |r| {
                format!(
                    ", restored in a median {}",
                    crate::time::compact_duration(r.median_sec)
                )
            });
            format!(
                "{} of {live} rolled back ({:.0} %){restored}",
                dora.failed.len(),
                rate * 100.0
            )
        }
    };
    let prevented = match dora.prevented.len() {
        0 => String::new(),
        1 => "; 1 canary was stopped before it went live".to_owned(),
        n => format!("; {n} canaries were stopped before they went live"),
    };
    format!("{span}: {deployed}; {lead}; {failures}{prevented}.")
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
    let (mut rollouts, mut changes, mut compared) = (Vec::new(), Vec::new(), Vec::new());
    for (service, part) in parts {
        rollouts.extend(prod_rollouts(&part, service));
        changes.extend(self::changes(
            &crate::pulls::of(&part, service, now),
            service,
        ));
        compared.extend(part.compared);
    }
    let from = now - Duration::days(i64::from(days.clamp(1, MAX_DAYS)));
    let (dora, mut listed) = counting(&rollouts, &changes, &compared, from, now);
    listed.sort_by_key(|c| std::cmp::Reverse(c.merged_at));
    let within = |t: DateTime<Utc>| t >= from && t < now;
    rollouts.retain(|r| {
        within(r.started_at) || r.live_at.is_some_and(within) || r.ended_at.is_some_and(within)
    });
    rollouts.sort_by_key(|r| std::cmp::Reverse(r.started_at));
    Report {
        sentence: sentence(&dora, days),
        dora,
        rollouts,
        changes: listed,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(minutes: i64) -> DateTime<Utc> {
        "2026-11-01T00:00:00Z".parse::<DateTime<Utc>>().unwrap() + Duration::minutes(minutes)
    }

    /// shop's release `version`, built from commit `sha` (seven hex digits).
    fn image(version: &str, sha: &str) -> String {
        format!("ghcr.io/acme/shop:{version}-{sha}")
    }

    fn rollout(
        release: &str,
        start: i64,
        live: Option<i64>,
        outcome: Outcome,
        end: Option<i64>,
    ) -> ProdRollout {
        ProdRollout {
            service: "shop".to_owned(),
            release: release.to_owned(),
            started_at: at(start),
            live_at: live.map(at),
            outcome,
            ended_at: end.map(at),
        }
    }

    fn change(id: &str, merged: i64, commit: Option<&str>, release: Option<&str>) -> Change {
        Change {
            service: "shop".to_owned(),
            id: id.to_owned(),
            url: None,
            merged_at: at(merged),
            commit: commit.map(str::to_owned),
            release: release.map(str::to_owned),
        }
    }

    /// A full commit sha of one repeated hex pair.
    fn sha(pair: &str) -> String {
        pair.repeat(20)
    }

    /// Two pull requests merged one after the other; only the second's merge commit was
    /// built (the first rode along): 1.0 (commit a0a0a0a) live at 60; #1 merged at 100
    /// (commit c1…), #2 at 130 (commit d2…, built as 1.1); 1.1 live at 200. GitHub's
    /// comparison a0a0a0a...d2d2d2d lists both commits, so both count through 1.1: #1 took
    /// 100 minutes, #2 70. A later 1.2 whose comparison lists d2… again does not count #2
    /// twice.
    #[test]
    fn two_changes_in_one_release_both_count_through_it() {
        let (v10, v11, v12) = (
            image("1.0.0", "a0a0a0a"),
            image("1.1.0", "d2d2d2d"),
            image("1.2.0", "e3e3e3e"),
        );
        let rollouts = [
            rollout(&v10, 50, Some(60), Outcome::Replaced, Some(200)),
            rollout(&v11, 190, Some(200), Outcome::Replaced, Some(400)),
            rollout(&v12, 390, Some(400), Outcome::Live, None),
        ];
        let changes = [
            change("#1", 100, Some(&sha("c1")), None),
            change("#2", 130, Some(&sha("d2")), Some(&v11)),
            change("#3", 350, Some(&sha("e3")), Some(&v12)),
        ];
        let compared = [
            Compared {
                service: "shop".to_owned(),
                base: "a0a0a0a".to_owned(),
                head: "d2d2d2d".to_owned(),
                commits: vec![sha("c1"), sha("d2")],
            },
            Compared {
                service: "shop".to_owned(),
                base: "d2d2d2d".to_owned(),
                head: "e3e3e3e".to_owned(),
                commits: vec![sha("d2"), sha("e3")],
            },
        ];
        let day = derive(&rollouts, &changes, &compared, at(0), at(1440));
        // Lead times: #1 100, #2 70, #3 50 minutes → sorted 50, 70, 100: median (rank 2)
        // 70, p90 (rank 3) 100.
        let lead = day.lead_time.unwrap();
        assert_eq!((lead.median_sec, lead.p90_sec), (70 * 60, 100 * 60));
        assert_eq!(lead.counted, ["#3", "#2", "#1"]);
        // Without GitHub's comparisons, #1 (never built on its own) is not counted.
        let alone = derive(&rollouts, &changes, &[], at(0), at(1440));
        assert_eq!(alone.lead_time.unwrap().counted, ["#3", "#2"]);
    }

    /// 2.0 live at 0; 2.1 started at 60, live at 80, and prod went back to 2.0 at 110: a
    /// rollback after promotion — 1 of the 2 that went live failed, restored in 30 minutes.
    #[test]
    fn a_rollback_after_promotion_is_a_change_failure_until_the_earlier_release_is_back() {
        let rollouts = [
            rollout("2.0", 0, Some(0), Outcome::Live, None),
            rollout("2.1", 60, Some(80), Outcome::RolledBack, Some(110)),
        ];
        let day = derive(&rollouts, &[], &[], at(0), at(1440));
        assert_eq!(day.deployed, ["2.0", "2.1"]);
        assert_eq!(day.failed, ["2.1"]);
        assert_eq!(day.change_failure_rate, Some(0.5));
        let restore = day.time_to_restore.unwrap();
        assert_eq!((restore.median_sec, restore.p90_sec), (30 * 60, 30 * 60));
    }

    /// 3.0 live; 3.1's canary stopped by its analysis at 20 %: prod never took it. A failure
    /// prevented, counted apart; no change failed.
    #[test]
    fn an_abort_by_analysis_is_a_failure_prevented_not_a_change_failure() {
        let rollouts = [
            rollout("3.0", 0, Some(10), Outcome::Live, None),
            rollout("3.1", 100, None, Outcome::Aborted, Some(121)),
        ];
        let day = derive(&rollouts, &[], &[], at(0), at(1440));
        assert_eq!(day.deployed, ["3.0"]);
        assert_eq!(day.prevented, ["3.1"]);
        assert_eq!((day.failed.len(), day.change_failure_rate), (0, Some(0.0)));
        assert_eq!(day.time_to_restore, None);
        assert!(
            sentence(&day, 1)
                .ends_with("0 of 1 rolled back (0 %); 1 canary was stopped before it went live."),
            "{}",
            sentence(&day, 1)
        );
    }

    /// 4.0 live at 0, 4.1 (an unrelated change) live 23 minutes later: back to back, and
    /// neither failed.
    #[test]
    fn back_to_back_unrelated_releases_are_no_failure() {
        let rollouts = [
            rollout("4.0", 0, Some(0), Outcome::Replaced, Some(23)),
            rollout("4.1", 20, Some(23), Outcome::Live, None),
        ];
        let day = derive(&rollouts, &[], &[], at(0), at(1440));
        assert_eq!(day.deployed, ["4.0", "4.1"]);
        assert_eq!((day.failed.len(), day.change_failure_rate), (0, Some(0.0)));
    }

    /// A week worked out by hand (minutes from the window's start), each change built on
    /// its own:
    /// - 1.0 starts at 60, live at 85 (changes #1 merged at 0, #2 at 30);
    /// - 1.1 starts at 1440, aborted at 1460 (change #3 merged at 1400);
    /// - 1.2 starts at 2000, live at 2025 (#3 again via 1.2: merged 1400; #4 at 1990);
    /// - 1.3 starts at 2060, live at 2085 (#5 merged at 2050);
    /// - 1.4 starts at 10000, still in progress at the end of the week.
    #[test]
    fn a_hand_computed_week() {
        let rollouts = [
            rollout("1.3", 2060, Some(2085), Outcome::Live, None),
            rollout("1.0", 60, Some(85), Outcome::Replaced, Some(2025)),
            rollout("1.1", 1440, None, Outcome::Aborted, Some(1460)),
            rollout("1.2", 2000, Some(2025), Outcome::Replaced, Some(2085)),
            rollout("1.4", 10_000, None, Outcome::InProgress, None),
        ];
        let changes = [
            change("#1", 0, None, Some("1.0")),
            change("#2", 30, None, Some("1.0")),
            change("#3", 1400, None, Some("1.2")),
            change("#4", 1990, None, Some("1.2")),
            change("#5", 2050, None, Some("1.3")),
            change("#6", 9000, None, Some("1.4")),
        ];
        let week = derive(&rollouts, &changes, &[], at(0), at(7 * 1440));
        // Three went live in 7 days.
        assert_eq!(week.deployed, vec!["1.0", "1.2", "1.3"]);
        assert!((week.deployments_per_day - 3.0 / 7.0).abs() < 1e-12);
        // Lead times in minutes: #1 85, #2 55, #3 625, #4 35, #5 35 → sorted 35, 35, 55,
        // 85, 625: the median (rank 3) is 55, the 90th percentile (rank 5) 625.
        let lead = week.lead_time.as_ref().unwrap();
        assert_eq!((lead.median_sec, lead.p90_sec), (55 * 60, 625 * 60));
        assert_eq!(lead.counted.len(), 5);
        // None was rolled back: 0 of 3; 1.2, replaced 60 minutes after it went live, is no
        // failure (Tower once counted that a fix forward). 1.1 was stopped in time.
        assert_eq!(week.change_failure_rate, Some(0.0));
        assert_eq!(week.prevented, ["1.1"]);
        assert_eq!(week.time_to_restore, None);
        // The history reaches back to 1.0's start, an hour into the week.
        assert_eq!(week.history_from, Some(at(60)));
        assert_eq!(
            sentence(&week, 7),
            "Over the last 7 days (history covers 6d 23h of them): 3 releases went live in \
             prod (0.4 a day); changes took a median 55m 00s from merge to prod (p90 10h \
             25m); 0 of 3 rolled back (0 %); 1 canary was stopped before it went live."
        );
    }

    #[test]
    fn an_empty_window_says_unknown_not_zero() {
        let week = derive(&[], &[], &[], at(0), at(1440));
        assert_eq!(week.change_failure_rate, None);
        assert_eq!(week.lead_time, None);
        assert_eq!(week.time_to_restore, None);
        assert_eq!(week.deployments_per_day, 0.0);
        assert_eq!(
            sentence(&week, 1),
            "Over the last day (no history): no release went live in prod; no merged change \
             reached prod, so there is no lead time; none went live, so there is no change \
             failure rate."
        );
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
                ("1.0.0-a0a0a0a", Outcome::Replaced, Some(at(2000))),
                ("1.1.0-b1b1b1b", Outcome::Aborted, Some(at(1460))),
                ("1.2.0-c2c2c2c", Outcome::Replaced, Some(at(2060))),
                ("1.3.0-d3d3d3d", Outcome::Live, None),
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
        // None rolled back; 1.1 stopped in time.
        assert_eq!(dora.change_failure_rate, Some(0.0));
        assert_eq!(dora.prevented.len(), 1);
        assert_eq!(dora.time_to_restore, None);
        // Every rollout of the week is listed, newest first; the changes counted too, each
        // with the release that brought it.
        assert_eq!(report.rollouts.len(), 5);
        assert_eq!(report.rollouts[0].outcome, Outcome::InProgress);
        assert_eq!(report.changes.len(), 3);
        assert_eq!(
            report.changes[0].url.as_deref(),
            Some("https://github.com/acme/shop/pull/43")
        );
        assert!(report.changes[0]
            .release
            .as_deref()
            .is_some_and(|r| r.ends_with("1.3.0-d3d3d3d")));
    }

    /// `fixtures/dora/two-changes.json`: the week again, with pull request #45 merged at
    /// 1950 whose merge commit was never built on its own, and GitHub's comparisons of the
    /// releases that went live one after the other (1.0...1.2 lists #41's, #45's and #42's
    /// commits; 1.2...1.3 #43's). 1.2 brings #41 (built as 1.1, which prod never took: 700
    /// min), #45 (50) and #42 (100); 1.0 #40 (60); 1.3 #43 (10) → sorted 10, 50, 60, 100, 700:
    /// median (rank 3) 60 min, p90 (rank 5) 700 min.
    #[test]
    fn changes_are_counted_by_ancestry_through_the_first_release_that_has_them() {
        let text = include_str!("../../fixtures/dora/two-changes.json");
        let snapshot = Snapshot::from_json(text).unwrap();
        let report = report([("shop", snapshot.clone())], 7, snapshot.now);
        let lead = report.dora.lead_time.as_ref().unwrap();
        assert_eq!((lead.median_sec, lead.p90_sec), (60 * 60, 700 * 60));
        assert_eq!(
            lead.counted,
            [
                "acme/shop#43",
                "acme/shop#45",
                "acme/shop#40",
                "acme/shop#42",
                "acme/shop#41"
            ]
        );
        let brought_by = |id: &str| {
            report
                .changes
                .iter()
                .find(|c| c.id == id)
                .and_then(|c| c.release.as_deref())
                .map(|r| r[r.len() - 13..].to_owned())
        };
        assert_eq!(brought_by("acme/shop#45").as_deref(), Some("1.2.0-c2c2c2c"));
        assert_eq!(brought_by("acme/shop#41").as_deref(), Some("1.2.0-c2c2c2c"));
    }

    /// `fixtures/dora/week-rolled-back.json`: the week where, after 1.3, prod went back to
    /// 1.2 — Argo Rollouts re-used 1.2's ReplicaSet and gave it the next revision (1.0 1,
    /// 1.1 2, 1.3 4, 1.2 5, 1.4 6). 1.3 was rolled back: 1 of the 3 that went live.
    #[test]
    fn a_rollback_is_read_from_the_revisions_argo_rollouts_gives() {
        let text = include_str!("../../fixtures/dora/week-rolled-back.json");
        let snapshot = Snapshot::from_json(text).unwrap();
        let outcomes: Vec<Outcome> = prod_rollouts(&snapshot, "shop")
            .iter()
            .map(|r| r.outcome)
            .collect();
        assert_eq!(
            outcomes,
            [
                Outcome::Replaced,
                Outcome::Aborted,
                Outcome::Replaced,
                Outcome::RolledBack,
                Outcome::InProgress
            ]
        );
        let report = report([("shop", snapshot.clone())], 7, snapshot.now);
        assert_eq!(report.dora.failed.len(), 1);
        assert_eq!(report.dora.change_failure_rate, Some(1.0 / 3.0));
        // When prod was on 1.2 again the cluster does not keep: no restore time is made up.
        assert_eq!(report.dora.time_to_restore, None);
    }
}
