//! The Pull requests tab: a service's pull requests (its source and GitOps repositories, by
//! the platform's naming rules), open ones and those merged or closed in the last
//! [`RECENT_DAYS`] days, newest first — each stitched by commit to the pipeline runs of its
//! head (Pipelines-as-Code's `sha`), and a merged one to the image its merge commit built
//! and the environments running that image now: the story from PR to build to image to
//! environments.

use std::cmp::Reverse;

use chrono::{DateTime, Duration, Utc};
use serde::{Deserialize, Serialize};

use crate::deployments::Deployments;
use crate::github::{CheckRun, CommitStatus, PullRequest, Review};
use crate::hangar;
use crate::image::without_digest;
use crate::pipelines::{Outcome, Pipelines, RunSummary};
use crate::snapshot::Snapshot;

/// Closed pull requests are listed this many days after they close.
pub const RECENT_DAYS: i64 = 30;

/// Where a pull request is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PrState {
    Open,
    Draft,
    Merged,
    /// Closed without being merged.
    Closed,
}

/// One pipeline run of a pull request's commit (its head's, or its merge's build).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Check {
    pub run: String,
    pub pipeline: Option<String>,
    pub outcome: Outcome,
    pub started_at: Option<DateTime<Utc>>,
}

impl Check {
    fn of(run: &RunSummary) -> Self {
        Self {
            run: run.name.clone(),
            pipeline: run.pipeline.clone(),
            outcome: run.outcome,
            started_at: run.started_at,
        }
    }
}

/// Where a pull request's review stands, as GitHub's own review decision reads it: each
/// reviewer's latest approving, change-requesting or dismissed review counts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ReviewState {
    Approved,
    ChangesRequested,
    /// Someone was asked to review and nobody has decided yet.
    ReviewRequired,
    /// No review asked for or given.
    Unreviewed,
}

/// The people who left `reviews` (oldest first), each once, in the order they first did.
pub fn reviewers_of(reviews: &[Review]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for review in reviews {
        if let Some(user) = &review.user {
            if review.state != "PENDING" && !out.contains(&user.login) {
                out.push(user.login.clone());
            }
        }
    }
    out
}

impl ReviewState {
    /// The decision `reviews` (oldest first) and the reviewers still asked make.
    pub fn of(reviews: &[Review], requested: usize) -> Self {
        let mut latest: std::collections::BTreeMap<Option<&str>, &str> = Default::default();
        for review in reviews {
            if matches!(
                review.state.as_str(),
                "APPROVED" | "CHANGES_REQUESTED" | "DISMISSED"
            ) {
                latest.insert(
                    review.user.as_ref().map(|u| u.login.as_str()),
                    &review.state,
                );
            }
        }
        if latest.values().any(|s| *s == "CHANGES_REQUESTED") {
            Self::ChangesRequested
        } else if latest.values().any(|s| *s == "APPROVED") {
            Self::Approved
        } else if requested > 0 {
            Self::ReviewRequired
        } else {
            Self::Unreviewed
        }
    }
}

/// The GitHub App slug of Pipelines-as-Code: its check runs mirror the Tekton runs
/// [`PullView::checks`] already shows, so they are not listed twice.
pub const PAC_APP: &str = "pipelines-as-code";

/// A check GitHub reports on a pull request's head besides its Tekton runs: a check run of
/// another app, or a commit status.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GitHubCheck {
    pub name: String,
    pub outcome: Outcome,
    pub url: Option<String>,
}

impl GitHubCheck {
    fn of_run(run: &CheckRun) -> Self {
        let outcome = match (run.status.as_str(), run.conclusion.as_deref()) {
            ("queued", _) => Outcome::Pending,
            ("in_progress", _) => Outcome::Running,
            // GitHub counts a neutral conclusion as passing.
            (_, Some("success" | "neutral")) => Outcome::Succeeded,
            (_, Some("failure")) => Outcome::Failed,
            (_, Some("cancelled")) => Outcome::Cancelled,
            (_, Some("timed_out")) => Outcome::TimedOut,
            (_, Some("skipped")) => Outcome::Skipped,
            // `action_required`, or a conclusion GitHub may add later.
            _ => Outcome::Unknown,
        };
        Self {
            name: run.name.clone(),
            outcome,
            url: run.html_url.clone(),
        }
    }

    fn of_status(status: &CommitStatus) -> Self {
        let outcome = match status.state.as_str() {
            "success" => Outcome::Succeeded,
            "pending" => Outcome::Running,
            "failure" | "error" => Outcome::Failed,
            _ => Outcome::Unknown,
        };
        Self {
            name: status.context.clone(),
            outcome,
            url: status.target_url.clone(),
        }
    }

    /// The checks of `pr`'s head besides Pipelines-as-Code's; `None` when not read.
    fn of(pr: &PullRequest) -> Option<Vec<Self>> {
        if pr.check_runs.is_none() && pr.statuses.is_none() {
            return None;
        }
        let runs = pr
            .check_runs
            .iter()
            .flatten()
            .filter(|run| run.app.as_ref().is_none_or(|app| app.slug != PAC_APP))
            .map(Self::of_run);
        let statuses = pr.statuses.iter().flatten().map(Self::of_status);
        Some(runs.chain(statuses).collect())
    }
}

/// How an environment runs a merged pull request's image.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Landed {
    pub environment: String,
    /// `false`: the stable version is it; `true`: it is the canary, at `weight` per cent of
    /// the traffic (`None` when the weight is not known).
    pub canary: bool,
    pub weight: Option<u32>,
}

/// One pull request, stitched.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PullView {
    pub repo: String,
    /// On the app's source repository (a merge there is built); else on a GitOps one.
    pub source: bool,
    pub number: u64,
    pub title: String,
    pub author: Option<String>,
    pub branch: Option<String>,
    pub url: Option<String>,
    pub state: PrState,
    pub created_at: Option<DateTime<Utc>>,
    /// When it was merged or closed.
    pub ended_at: Option<DateTime<Utc>>,
    pub head_sha: Option<String>,
    /// `None` until Tower has read its reviews.
    pub review: Option<ReviewState>,
    /// Who reviewed it (approved, asked for changes or commented), in the order they first
    /// did; `None` until Tower has read its reviews.
    #[serde(default)]
    pub reviewers: Option<Vec<String>>,
    /// The pipeline runs of its head commit, newest first.
    pub checks: Vec<Check>,
    /// Other checks GitHub reports on its head (`None` until read).
    pub github_checks: Option<Vec<GitHubCheck>>,
    /// Merged: its merge commit, the newest run building that commit (`None` while Tower
    /// sees none; running while the image is being made), the image that build published
    /// (`None` until it has), and the environments running that image.
    pub merge_commit: Option<String>,
    #[serde(default)]
    pub build: Option<Check>,
    pub image: Option<String>,
    pub landed: Vec<Landed>,
}

/// A service's pull requests, newest first.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Pulls {
    pub service: String,
    /// The repositories read (names, of the configured owner).
    pub repos: Vec<String>,
    /// Whether GitHub has answered: without it, no pull requests means "unknown", not none.
    pub read: bool,
    pub pulls: Vec<PullView>,
}

/// [`derive`] from the service's part of a snapshot, its runs and deployments derived here.
pub fn of(snapshot: &Snapshot, service: &str, now: DateTime<Utc>) -> Pulls {
    derive(
        snapshot,
        service,
        &crate::pipelines::derive(snapshot, service),
        &crate::deployments::derive_deployments(snapshot, service),
        now,
    )
}

/// The service's pull requests at `now`, from the snapshot's pull requests, its runs and its
/// deployments.
pub fn derive(
    snapshot: &Snapshot,
    service: &str,
    pipelines: &Pipelines,
    deployments: &Deployments,
    now: DateTime<Utc>,
) -> Pulls {
    // Every repository the rules may give it (whatever its kind); GitHub is read for the
    // configured owner only.
    let repos = hangar::repos(service, None);
    let since = now - Duration::days(RECENT_DAYS);
    let mut pulls: Vec<PullView> = snapshot
        .pull_requests
        .iter()
        .flatten()
        .filter(|pr| repos.iter().any(|r| r == pr.repo_name()))
        .filter(|pr| pr.is_open() || pr.merged_at.or(pr.closed_at).is_some_and(|t| t >= since))
        .map(|pr| stitch(pr, hangar::source_repo(service), pipelines, deployments))
        .collect();
    pulls.sort_by(newer_first);
    Pulls {
        service: service.to_owned(),
        repos,
        read: snapshot.pull_requests.is_some(),
        pulls,
    }
}

/// Newest first; then by repository and number, so the order is total.
fn order(
    created_at: Option<DateTime<Utc>>,
    repo: &str,
    number: u64,
) -> (Reverse<Option<DateTime<Utc>>>, &str, Reverse<u64>) {
    (Reverse(created_at), repo, Reverse(number))
}

fn newer_first(a: &PullView, b: &PullView) -> std::cmp::Ordering {
    order(a.created_at, &a.repo, a.number).cmp(&order(b.created_at, &b.repo, b.number))
}

fn stitch(
    pr: &PullRequest,
    source_repo: &str,
    pipelines: &Pipelines,
    deployments: &Deployments,
) -> PullView {
    let source = pr.repo_name() == source_repo;
    let head_sha = pr.head.as_ref().map(|h| h.sha.clone());
    let checks = head_sha
        .as_deref()
        .map(|sha| {
            pipelines
                .runs
                .iter()
                .filter(|r| r.commit.as_deref() == Some(sha))
                .map(Check::of)
                .collect()
        })
        .unwrap_or_default();
    let merge_commit = pr.merge_commit_sha.clone().filter(|_| pr.is_merged());
    // Only a source repository's merge is built: its runs, newest first.
    let builds: Vec<&RunSummary> = merge_commit
        .as_deref()
        .filter(|_| source)
        .map(|sha| {
            pipelines
                .runs
                .iter()
                .filter(|r| r.commit.as_deref() == Some(sha))
                .collect()
        })
        .unwrap_or_default();
    let image = builds.iter().find_map(|r| r.image.clone());
    let build = builds.first().map(|r| Check::of(r));
    let landed = image
        .as_deref()
        .map(|image| landed(image, deployments))
        .unwrap_or_default();
    PullView {
        repo: pr.repo.clone(),
        source,
        number: pr.number,
        title: pr.title.clone(),
        author: pr.user.as_ref().map(|u| u.login.clone()),
        branch: pr.head.as_ref().map(|h| h.branch.clone()),
        url: pr.html_url.clone(),
        state: if pr.is_merged() {
            PrState::Merged
        } else if !pr.is_open() {
            PrState::Closed
        } else if pr.draft {
            PrState::Draft
        } else {
            PrState::Open
        },
        created_at: pr.created_at,
        ended_at: pr.merged_at.or(pr.closed_at),
        head_sha,
        review: pr
            .reviews
            .as_deref()
            .map(|reviews| ReviewState::of(reviews, pr.requested_reviewers.len())),
        reviewers: pr.reviews.as_deref().map(reviewers_of),
        checks,
        github_checks: GitHubCheck::of(pr),
        merge_commit,
        build,
        image,
        landed,
    }
}

/// The environments where `image` runs, as their state says ([`crate::state`], the fleet
/// cell's): what runs there (all the traffic but a canary's share), or arriving as the canary
/// at its actual weight.
fn landed(image: &str, deployments: &Deployments) -> Vec<Landed> {
    let image = without_digest(image);
    let is = |other: Option<&str>| other.is_some_and(|i| without_digest(i) == image);
    deployments
        .environments
        .iter()
        .flatten()
        .filter_map(|env| {
            let state = env.state.as_ref()?;
            let arriving = state.arriving.as_ref();
            let blue_green = state.rollout.as_ref().is_some_and(|r| r.blue_green);
            if let Some(canary) = arriving.filter(|a| is(a.image.as_deref())) {
                Some(Landed {
                    environment: env.name.clone(),
                    canary: true,
                    weight: if blue_green { Some(0) } else { canary.weight },
                })
            } else if is(state.running.as_deref()) {
                Some(Landed {
                    environment: env.name.clone(),
                    canary: false,
                    weight: match arriving {
                        Some(canary) if !blue_green => canary.weight.map(|w| 100 - w.min(100)),
                        _ => Some(100),
                    },
                })
            } else {
                None
            }
        })
        .collect()
}

/// Where a page of pull requests ends: the last one's start, repository and number.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Cursor {
    pub created_at: Option<DateTime<Utc>>,
    pub repo: String,
    pub number: u64,
}

impl Cursor {
    /// `<created in ms, or ->.<number>.<owner/repo>`: opaque to callers.
    pub fn encode(&self) -> String {
        let at = self
            .created_at
            .map_or_else(|| "-".to_owned(), |t| t.timestamp_millis().to_string());
        format!("{at}.{}.{}", self.number, self.repo)
    }

    pub fn decode(text: &str) -> Option<Self> {
        let mut parts = text.splitn(3, '.');
        let at = match parts.next()? {
            "-" => None,
            ms => Some(DateTime::from_timestamp_millis(ms.parse().ok()?)?),
        };
        let number = parts.next()?.parse().ok()?;
        let repo = parts.next()?;
        let (owner, name) = repo.split_once('/')?;
        let plain = |s: &str| {
            !s.is_empty()
                && s.len() <= 100
                && s.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b))
        };
        (plain(owner) && plain(name)).then(|| Self {
            created_at: at,
            repo: repo.to_owned(),
            number,
        })
    }
}

/// `limit` pull requests after `after` (from the first without it), and the cursor of the
/// next page when there is more.
pub fn page<'a>(
    pulls: &'a [PullView],
    after: Option<&Cursor>,
    limit: usize,
) -> (Vec<&'a PullView>, Option<Cursor>) {
    let mut rest = pulls.iter().filter(|p| {
        after.is_none_or(|c| {
            order(c.created_at, &c.repo, c.number) < order(p.created_at, &p.repo, p.number)
        })
    });
    let page: Vec<&PullView> = rest.by_ref().take(limit).collect();
    let next = match (rest.next(), page.last()) {
        (Some(_), Some(last)) => Some(Cursor {
            created_at: last.created_at,
            repo: last.repo.clone(),
            number: last.number,
        }),
        _ => None,
    };
    (page, next)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pull(repo: &str, number: u64, minutes: Option<i64>) -> PullView {
        let at = |m: i64| DateTime::from_timestamp(1_800_000_000 + m * 60, 0).unwrap();
        PullView {
            repo: repo.to_owned(),
            source: true,
            number,
            title: format!("#{number}"),
            author: None,
            branch: None,
            url: None,
            state: PrState::Open,
            created_at: minutes.map(at),
            ended_at: None,
            head_sha: None,
            review: None,
            reviewers: None,
            checks: Vec::new(),
            github_checks: None,
            merge_commit: None,
            build: None,
            image: None,
            landed: Vec::new(),
        }
    }

    fn review(who: &str, state: &str) -> Review {
        Review {
            user: Some(crate::github::GitHubUser {
                login: who.to_owned(),
            }),
            state: state.to_owned(),
            submitted_at: None,
        }
    }

    #[test]
    fn each_reviewers_latest_decision_counts() {
        use ReviewState::*;
        let of = |reviews: &[Review], requested| ReviewState::of(reviews, requested);
        assert_eq!(of(&[], 0), Unreviewed);
        assert_eq!(of(&[], 1), ReviewRequired);
        // A comment decides nothing.
        assert_eq!(of(&[review("ana", "COMMENTED")], 1), ReviewRequired);
        assert_eq!(of(&[review("ana", "APPROVED")], 0), Approved);
        // One reviewer's request for changes stands over another's approval…
        assert_eq!(
            of(
                &[review("ana", "APPROVED"), review("bo", "CHANGES_REQUESTED")],
                0
            ),
            ChangesRequested
        );
        // … until that reviewer approves, or the request is dismissed.
        let changed = [
            review("bo", "CHANGES_REQUESTED"),
            review("ana", "APPROVED"),
            review("bo", "APPROVED"),
        ];
        assert_eq!(of(&changed, 0), Approved);
        let dismissed = [review("bo", "CHANGES_REQUESTED"), review("bo", "DISMISSED")];
        assert_eq!(of(&dismissed, 0), Unreviewed);
        // A later comment does not undo an approval.
        assert_eq!(
            of(&[review("ana", "APPROVED"), review("ana", "COMMENTED")], 0),
            Approved
        );
    }

    #[test]
    fn github_checks_leave_out_pipelines_as_codes_own_and_read_statuses() {
        let run = |name: &str, slug: &str, status: &str, conclusion: Option<&str>| CheckRun {
            name: name.to_owned(),
            status: status.to_owned(),
            conclusion: conclusion.map(str::to_owned),
            html_url: None,
            app: Some(crate::github::CheckApp {
                slug: slug.to_owned(),
            }),
        };
        let mut pr: PullRequest = serde_json::from_value(serde_json::json!({
            "repo": "acme/shop", "number": 1, "title": "t", "state": "open"
        }))
        .unwrap();
        assert_eq!(GitHubCheck::of(&pr), None, "not read is not none");
        pr.check_runs = Some(vec![
            run("pull-request", PAC_APP, "completed", Some("failure")),
            run("commitlint", "github-actions", "completed", Some("success")),
            run("codeql", "github-actions", "in_progress", None),
            run("sonar", "sonarcloud", "completed", Some("action_required")),
        ]);
        pr.statuses = Some(vec![CommitStatus {
            context: "dco".to_owned(),
            state: "failure".to_owned(),
            description: None,
            target_url: None,
        }]);
        let checks: Vec<(String, Outcome)> = GitHubCheck::of(&pr)
            .unwrap()
            .into_iter()
            .map(|c| (c.name, c.outcome))
            .collect();
        assert_eq!(
            checks,
            [
                ("commitlint".to_owned(), Outcome::Succeeded),
                ("codeql".to_owned(), Outcome::Running),
                ("sonar".to_owned(), Outcome::Unknown),
                ("dco".to_owned(), Outcome::Failed),
            ]
        );
    }

    #[test]
    fn pages_walk_every_pull_request_once_in_order() {
        let mut pulls = vec![
            pull("acme/shop", 3, Some(30)),
            pull("acme/gitops-shop", 9, Some(30)),
            pull("acme/shop", 2, Some(10)),
            pull("acme/shop", 1, None),
            pull("acme/shop", 4, Some(50)),
        ];
        pulls.sort_by(newer_first);
        let order: Vec<u64> = pulls.iter().map(|p| p.number).collect();
        assert_eq!(
            order,
            [4, 9, 3, 2, 1],
            "newest first, then repo; unknown times last"
        );
        for limit in 1..=5 {
            let mut seen = Vec::new();
            let mut after: Option<Cursor> = None;
            loop {
                let (shown, next) = page(&pulls, after.as_ref(), limit);
                seen.extend(shown.iter().map(|p| p.number));
                match next {
                    Some(next) => after = Some(Cursor::decode(&next.encode()).unwrap()),
                    None => break,
                }
            }
            assert_eq!(seen, order, "pages of {limit}");
        }
    }

    #[test]
    fn a_cursor_is_read_back_or_refused() {
        let cursor = Cursor {
            created_at: DateTime::from_timestamp_millis(1_800_000_000_123),
            repo: "acme/gitops-shop".to_owned(),
            number: 42,
        };
        assert_eq!(Cursor::decode(&cursor.encode()), Some(cursor));
        for bad in [
            "",
            "yesterday",
            "1.2",
            "x.1.acme/shop",
            "1.x.acme/shop",
            "1.1.noslash",
            "1.1.acme/sh op",
        ] {
            assert_eq!(Cursor::decode(bad), None, "{bad:?}");
        }
    }
}
