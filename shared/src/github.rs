//! GitHub's wire types as Tower reads them: pull requests (with their reviews, check runs
//! and commit statuses, read when a page shows them) in GitHub's own field names.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

/// A GitHub pull request, in GitHub's own field names, plus the repository it belongs to.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct PullRequest {
    /// `owner/name`.
    pub repo: String,
    pub number: u64,
    pub title: String,
    /// `open` or `closed`.
    pub state: String,
    #[serde(default)]
    pub created_at: Option<DateTime<Utc>>,
    #[serde(default)]
    pub merged_at: Option<DateTime<Utc>>,
    #[serde(default)]
    pub closed_at: Option<DateTime<Utc>>,
    #[serde(default)]
    pub html_url: Option<String>,
    #[serde(default)]
    pub user: Option<GitHubUser>,
    #[serde(default)]
    pub draft: bool,
    /// The branch it comes from and the commit at its tip.
    #[serde(default)]
    pub head: Option<GitRef>,
    /// Merged: the commit the merge made on the base branch.
    #[serde(default)]
    pub merge_commit_sha: Option<String>,
    /// People asked to review who have not yet.
    #[serde(default)]
    pub requested_reviewers: Vec<GitHubUser>,
    /// Read when a page shows the pull request (`None`: not read): its reviews, oldest
    /// first, and the check runs and commit statuses on its head commit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reviews: Option<Vec<Review>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub check_runs: Option<Vec<CheckRun>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub statuses: Option<Vec<CommitStatus>>,
    /// Its labels' names, as GitHub listed them: how Tower knows its own pull requests
    /// (with their author); not part of Tower's answers.
    #[serde(skip)]
    pub labels: Vec<String>,
}

/// A pull request review (`GET /repos/{o}/{r}/pulls/{n}/reviews`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Review {
    #[serde(default)]
    pub user: Option<GitHubUser>,
    /// `APPROVED`, `CHANGES_REQUESTED`, `COMMENTED`, `DISMISSED` or `PENDING`.
    pub state: String,
    #[serde(default)]
    pub submitted_at: Option<DateTime<Utc>>,
}

/// A check run on a commit (`GET /repos/{o}/{r}/commits/{ref}/check-runs`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CheckRun {
    pub name: String,
    /// `queued`, `in_progress` or `completed`.
    pub status: String,
    /// Once completed: `success`, `failure`, `neutral`, `cancelled`, `skipped`,
    /// `timed_out` or `action_required`.
    #[serde(default)]
    pub conclusion: Option<String>,
    #[serde(default)]
    pub html_url: Option<String>,
    /// The GitHub App that made it.
    #[serde(default)]
    pub app: Option<CheckApp>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CheckApp {
    pub slug: String,
}

/// A commit status (`statuses[]` of `GET /repos/{o}/{r}/commits/{ref}/status`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CommitStatus {
    pub context: String,
    /// `success`, `pending`, `failure` or `error`.
    pub state: String,
    #[serde(default)]
    pub description: Option<String>,
    #[serde(default)]
    pub target_url: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct GitHubUser {
    pub login: String,
}

/// A branch and a commit on it (`head` and `base` of a pull request).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct GitRef {
    #[serde(rename = "ref")]
    pub branch: String,
    pub sha: String,
}

impl PullRequest {
    /// The repository's name without its owner.
    pub fn repo_name(&self) -> &str {
        self.repo.rsplit('/').next().unwrap_or(&self.repo)
    }

    pub fn is_merged(&self) -> bool {
        self.merged_at.is_some()
    }

    pub fn is_open(&self) -> bool {
        self.state == "open" && !self.is_merged()
    }

    /// Closed by someone without being merged.
    pub fn is_abandoned(&self) -> bool {
        self.state == "closed" && !self.is_merged()
    }
}

/// GitHub's comparison of two releases' commits of one app (`base...head`): the commits
/// `head` has that `base` lacks (read for DORA's lead time, `crate::dora`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Compared {
    pub service: String,
    pub base: String,
    pub head: String,
    pub commits: Vec<String>,
}
