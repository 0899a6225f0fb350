//! The fleet's recent activity, newest first: releases reaching an environment and canaries
//! starting, pausing, aborting and completing (from each app's ReplicaSets, Rollout and the
//! Rollout's Events), builds failing (PipelineRuns), provisions finishing, and the pull
//! requests Tower opened for config changes and promotions being opened and merged. Each
//! item says what happened in a sentence and names the tab that shows it.
//!
//! Derived per service from its part of the snapshot ([`of_objects`], so a large fleet is
//! derived an app at a time), from the pull requests ([`of_pulls`]) and provisioning
//! ([`of_provisioning`]), then put together by [`latest`].

use chrono::{DateTime, Duration, Utc};
use serde::{Deserialize, Serialize};

use crate::argo::replica_set_image;
use crate::github::PullRequest;
use crate::hangar;
use crate::image;
use crate::kube::{array_at, str_at, time, Object};
use crate::provisioning::{Group, ServiceProgress};
use crate::snapshot::Snapshot;
use crate::tekton;

/// How far back the feed looks.
pub const WINDOW: Duration = Duration::hours(24);
/// The most items the feed holds.
pub const MOST: usize = 50;

/// What happened.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Kind {
    /// A release reached an environment that promotes it at once.
    Promoted,
    CanaryStarted,
    CanaryPaused,
    CanaryAborted,
    CanaryCompleted,
    BuildFailed,
    Provisioned,
    ConfigPrOpened,
    ConfigPrMerged,
    PromotionPrOpened,
    PromotionPrMerged,
}

/// One thing that happened.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Activity {
    pub at: DateTime<Utc>,
    pub service: String,
    pub kind: Kind,
    /// In a sentence: "storefront 1.4.0-3a8423b reached staging."
    pub said: String,
    /// The tab that shows it (`releases`, `deployments`, `pipelines`, `provisioning`,
    /// `pulls`).
    pub tab: String,
    /// The environment, for a release or a canary.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub environment: Option<String>,
    /// The PipelineRun, for a failed build.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run: Option<String>,
    /// The pull request's page, for one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
}

impl Activity {
    fn new(at: DateTime<Utc>, service: &str, kind: Kind, said: String, tab: &str) -> Self {
        Self {
            at,
            service: service.to_owned(),
            kind,
            said,
            tab: tab.to_owned(),
            environment: None,
            run: None,
            url: None,
        }
    }
}

/// What `service`'s objects in its part of a snapshot tell: each release's arrival in each
/// environment (a canary's start where the Rollout walks canary steps), the current
/// canary's pause and abort (from the Rollout's status), its completion (the Rollout's
/// `RolloutCompleted` Event) and its failed builds.
pub fn of_objects(part: &Snapshot, service: &str) -> Vec<Activity> {
    let mut out = Vec::new();
    let objects = || part.clusters.values().flatten().map(|o| &**o);
    // The namespaces whose Rollout walks canary steps: a release arriving there starts one.
    let canaries: Vec<&str> = objects()
        .filter(|r| r.kind == "Rollout")
        .filter(|r| !array_at(&r.spec, &["strategy", "canary", "steps"]).is_empty())
        .filter_map(Object::namespace)
        .collect();
    for object in objects() {
        match object.kind.as_str() {
            "ReplicaSet" => {
                let (Some(env), Some(at)) = (
                    hangar::environment_of(object, service),
                    object.metadata.creation_timestamp,
                ) else {
                    continue;
                };
                let Some(image) = replica_set_image(object) else {
                    continue;
                };
                let (kind, said) = if canaries.contains(&object.namespace().unwrap_or_default()) {
                    (
                        Kind::CanaryStarted,
                        format!(
                            "{service} {} started its canary in {env}.",
                            image::short(image)
                        ),
                    )
                } else {
                    (
                        Kind::Promoted,
                        format!("{service} {} reached {env}.", image::short(image)),
                    )
                };
                let mut item = Activity::new(at, service, kind, said, "releases");
                item.environment = Some(env.to_owned());
                out.push(item);
            }
            "Rollout" if object.group() == "argoproj.io" => {
                let Some(env) = hangar::environment_of(object, service) else {
                    continue;
                };
                let status = &object.status;
                let mut said = |at: Option<DateTime<Utc>>, kind: Kind, what: &str| {
                    if let Some(at) = at {
                        let mut item = Activity::new(
                            at,
                            service,
                            kind,
                            format!("{service}'s canary in {env} {what}."),
                            "deployments",
                        );
                        item.environment = Some(env.to_owned());
                        out.push(item);
                    }
                };
                if status["abort"] == true {
                    let at = status.get("abortedAt").and_then(time);
                    said(
                        at,
                        Kind::CanaryAborted,
                        "was aborted: traffic is back on stable",
                    );
                } else {
                    let paused = array_at(status, &["pauseConditions"])
                        .iter()
                        .filter_map(|p| p.get("startTime").and_then(time))
                        .max();
                    said(paused, Kind::CanaryPaused, "paused");
                }
            }
            "Event" => {
                let (Some(env), Some("Rollout"), Some("RolloutCompleted")) = (
                    hangar::environment_of(object, service),
                    str_at(&object.status, &["involvedObject", "kind"]),
                    str_at(&object.status, &["reason"]),
                ) else {
                    continue;
                };
                let at = object
                    .status
                    .get("lastTimestamp")
                    .and_then(time)
                    .or(object.metadata.creation_timestamp);
                if let Some(at) = at {
                    let mut item = Activity::new(
                        at,
                        service,
                        Kind::CanaryCompleted,
                        format!("{service}'s rollout in {env} completed."),
                        "deployments",
                    );
                    item.environment = Some(env.to_owned());
                    out.push(item);
                }
            }
            "PipelineRun" => {
                let Some(run) = tekton::PipelineRun::new(object) else {
                    continue;
                };
                // Builds only: a pull request's checks fail on the Pull requests tab.
                let checks =
                    object.label("pipelinesascode.tekton.dev/event-type") == Some("pull_request");
                if checks || run.status() != tekton::RunStatus::Failed {
                    continue;
                }
                let Some(at) = run.completed_at() else {
                    continue;
                };
                let said = format!(
                    "{service}'s {} run {} failed.",
                    run.pipeline().unwrap_or("pipeline"),
                    run.name()
                );
                let mut item = Activity::new(at, service, Kind::BuildFailed, said, "pipelines");
                item.run = Some(run.name().to_owned());
                out.push(item);
            }
            _ => {}
        }
    }
    out
}

/// The pull requests Tower opened for config changes and promotions: opened, and merged.
pub fn of_pulls(pulls: &[PullRequest]) -> Vec<Activity> {
    let mut out = Vec::new();
    for pr in pulls {
        let branch = pr.head.as_ref().map_or("", |h| h.branch.as_str());
        let (opened, merged, what) = if branch.starts_with(hangar::CONFIG_BRANCH_PREFIX) {
            (Kind::ConfigPrOpened, Kind::ConfigPrMerged, "config change")
        } else if branch.starts_with("tower/promote-") {
            (
                Kind::PromotionPrOpened,
                Kind::PromotionPrMerged,
                "promotion",
            )
        } else {
            continue;
        };
        let Some(service) = hangar::service_of_repo(pr.repo_name()) else {
            continue;
        };
        let mut push = |at: Option<DateTime<Utc>>, kind: Kind, verb: &str| {
            if let Some(at) = at {
                let said = format!(
                    "{service}: {what} pull request #{} {verb}: {}.",
                    pr.number, pr.title
                );
                let mut item = Activity::new(at, service, kind, said, "pulls");
                item.url.clone_from(&pr.html_url);
                out.push(item);
            }
        };
        push(pr.created_at, opened, "opened");
        push(pr.merged_at, merged, "merged");
    }
    out
}

/// The provisions that finished, when their last step ended.
pub fn of_provisioning(services: &[ServiceProgress]) -> Vec<Activity> {
    services
        .iter()
        .filter(|s| s.group == Group::Finished)
        .filter_map(|s| {
            let at = s.steps.iter().filter_map(|step| step.ended_at).max()?;
            Some(Activity::new(
                at,
                &s.name,
                Kind::Provisioned,
                format!("{} is provisioned: every step done.", s.name),
                "provisioning",
            ))
        })
        .collect()
}

/// The newest [`MOST`] of `items` within [`WINDOW`] before `now` (none after it), newest
/// first; ties in a fixed order.
pub fn latest<'a>(
    items: impl IntoIterator<Item = &'a Activity>,
    now: DateTime<Utc>,
) -> Vec<Activity> {
    let since = now - WINDOW;
    let mut within: Vec<&Activity> = items
        .into_iter()
        .filter(|a| a.at >= since && a.at <= now)
        .collect();
    let order = |a: &&Activity, b: &&Activity| {
        (b.at, &a.service, &a.said).cmp(&(a.at, &b.service, &b.said))
    };
    if within.len() > MOST {
        within.select_nth_unstable_by(MOST, order);
        within.truncate(MOST);
    }
    within.sort_by(order);
    within.into_iter().cloned().collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn snapshot(text: &str) -> Snapshot {
        Snapshot::from_json(text).unwrap()
    }

    fn at(text: &str) -> DateTime<Utc> {
        text.parse().unwrap()
    }

    #[test]
    fn aborted_and_paused_canaries_are_read_off_the_rollout() {
        let aborted = snapshot(include_str!(
            "../../fixtures/deployments/analysis-failed-aborted.json"
        ));
        let items = of_objects(&aborted, "ledger");
        let abort: Vec<&Activity> = items
            .iter()
            .filter(|a| a.kind == Kind::CanaryAborted)
            .collect();
        assert_eq!(abort.len(), 1);
        assert_eq!(abort[0].at, at("2026-11-30T15:46:00Z"));
        assert_eq!(
            abort[0].said,
            "ledger's canary in prod was aborted: traffic is back on stable."
        );
        assert_eq!(abort[0].environment.as_deref(), Some("prod"));
        // The abort is what the Rollout says now: no pause besides it.
        assert!(items.iter().all(|a| a.kind != Kind::CanaryPaused));

        let paused = snapshot(include_str!(
            "../../fixtures/deployments/paused-canary.json"
        ));
        let items = of_objects(&paused, "flight-api");
        let pause: Vec<&Activity> = items
            .iter()
            .filter(|a| a.kind == Kind::CanaryPaused)
            .collect();
        assert_eq!(pause.len(), 1);
        assert_eq!(pause[0].at, at("2026-11-30T15:40:00Z"));
        assert_eq!(pause[0].tab, "deployments");
    }

    #[test]
    fn arrivals_start_canaries_where_the_rollout_walks_steps() {
        let week = snapshot(include_str!("../../fixtures/dora/week.json"));
        let items = of_objects(&week, "shop");
        let started: Vec<(&str, DateTime<Utc>)> = items
            .iter()
            .filter(|a| a.kind == Kind::CanaryStarted)
            .map(|a| (a.said.as_str(), a.at))
            .collect();
        assert_eq!(started.len(), 5);
        assert!(started.contains(&(
            "shop 1.1.0-b1b1b1b started its canary in prod.",
            at("2026-11-02T00:00:00Z")
        )));
        // Its builds all passed: no failure.
        assert!(items.iter().all(|a| a.kind != Kind::BuildFailed));
    }

    #[test]
    fn failed_builds_count_and_failed_pull_request_checks_do_not() {
        let run = |name: &str, event: &str| {
            format!(
                r#"{{"apiVersion": "tekton.dev/v1", "kind": "PipelineRun",
                "metadata": {{"name": "{name}", "namespace": "app-shop-cicd",
                  "labels": {{"tekton.dev/pipeline": "build",
                              "pipelinesascode.tekton.dev/event-type": "{event}"}}}},
                "status": {{"completionTime": "2026-11-30T10:05:00Z",
                  "conditions": [{{"type": "Succeeded", "status": "False", "reason": "Failed"}}]}}}}"#
            )
        };
        let text = format!(
            r#"{{"now": "2026-11-30T11:00:00Z", "clusters": {{"dev": [{}, {}]}}}}"#,
            run("shop-build-9", "push"),
            run("shop-pr-3", "pull_request")
        );
        let items = of_objects(&snapshot(&text), "shop");
        assert_eq!(items.len(), 1, "{items:?}");
        assert_eq!(items[0].kind, Kind::BuildFailed);
        assert_eq!(items[0].said, "shop's build run shop-build-9 failed.");
        assert_eq!(items[0].run.as_deref(), Some("shop-build-9"));
        assert_eq!(items[0].at, at("2026-11-30T10:05:00Z"));
    }

    #[test]
    fn towers_pull_requests_are_opened_and_merged() {
        let pr = |number: u64, branch: &str, merged: Option<&str>| PullRequest {
            repo: "acme/gitops-shop".to_owned(),
            number,
            title: format!("Change {number}"),
            state: if merged.is_some() { "closed" } else { "open" }.to_owned(),
            created_at: Some(at("2026-11-30T09:00:00Z")),
            merged_at: merged.map(at),
            html_url: Some(format!("https://github.com/acme/gitops-shop/pull/{number}")),
            head: Some(crate::github::GitRef {
                branch: branch.to_owned(),
                sha: "a".repeat(40),
            }),
            ..PullRequest::default()
        };
        let items = of_pulls(&[
            pr(
                1,
                "tower/config-env-prod-3a8423b1",
                Some("2026-11-30T10:00:00Z"),
            ),
            pr(2, "tower/promote-prod-1.4.0-3a8423b", None),
            pr(3, "feature/other", Some("2026-11-30T10:00:00Z")),
        ]);
        let kinds: Vec<(Kind, u64)> = items
            .iter()
            .map(|a| {
                (
                    a.kind,
                    a.url
                        .as_ref()
                        .unwrap()
                        .rsplit('/')
                        .next()
                        .unwrap()
                        .parse()
                        .unwrap(),
                )
            })
            .collect();
        assert_eq!(
            kinds,
            [
                (Kind::ConfigPrOpened, 1),
                (Kind::ConfigPrMerged, 1),
                (Kind::PromotionPrOpened, 2)
            ]
        );
        assert_eq!(
            items[1].said,
            "shop: config change pull request #1 merged: Change 1."
        );
        assert!(items
            .iter()
            .all(|a| a.service == "shop" && a.tab == "pulls"));
    }

    #[test]
    fn the_latest_are_newest_first_within_the_day_and_at_most_fifty() {
        let now = at("2026-11-30T12:00:00Z");
        let item = |minutes: i64, service: &str| {
            Activity::new(
                now - Duration::minutes(minutes),
                service,
                Kind::Promoted,
                format!("{service} {minutes}"),
                "releases",
            )
        };
        let mut items: Vec<Activity> = (0..100).map(|m| item(m * 10, "a")).collect();
        items.push(item(-5, "future"));
        items.push(item(30, "b"));
        let latest = latest(&items, now);
        assert_eq!(latest.len(), MOST);
        assert_eq!(latest[0].said, "a 0");
        // Ties: by service, then sentence.
        assert_eq!(
            (latest[3].said.as_str(), latest[4].said.as_str()),
            ("a 30", "b 30")
        );
        assert!(latest.windows(2).all(|w| w[0].at >= w[1].at));
        assert!(latest.iter().all(|a| a.service != "future"));
        let old = [item(24 * 60 + 1, "a")];
        assert!(super::latest(&old, now).is_empty());
    }
}
