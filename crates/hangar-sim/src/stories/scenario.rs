//! A world loaded from a file in Tower's snapshot format (`docs/snapshot.md`): the objects
//! and pull requests exactly as captured, standing still at the moment they were captured.
//! `tower demo --scenario FILE` serves one, so a fixture can be looked at in the browser and
//! through kubectl.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use serde::Deserialize;
use serde_json::Value;

use super::{PullRequest, Story};

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct File {
    now: DateTime<Utc>,
    #[serde(default)]
    clusters: BTreeMap<String, Vec<Value>>,
    #[serde(default)]
    pull_requests: Option<Vec<FilePull>>,
}

#[derive(Deserialize)]
struct FilePull {
    repo: String,
    number: u64,
    title: String,
    #[serde(default)]
    created_at: Option<DateTime<Utc>>,
    #[serde(default)]
    merged_at: Option<DateTime<Utc>>,
    #[serde(default)]
    closed_at: Option<DateTime<Utc>>,
    #[serde(default)]
    user: Option<Login>,
    #[serde(default)]
    draft: bool,
    #[serde(default)]
    head: Option<FileRef>,
    #[serde(default)]
    merge_commit_sha: Option<String>,
}

#[derive(Deserialize)]
struct FileRef {
    #[serde(rename = "ref")]
    branch: String,
    sha: String,
}

#[derive(Deserialize)]
struct Login {
    login: String,
}

/// A captured world.
#[derive(Clone, Debug)]
pub struct Scenario {
    /// When it was captured: where the world clock starts.
    pub now: DateTime<Utc>,
    objects: Vec<(String, Value)>,
    pull_requests: Vec<PullRequest>,
}

impl Scenario {
    /// Reads a snapshot file's text. Objects without a kind or name are left out (the API
    /// server could not serve them).
    pub fn parse(text: &str) -> Result<Self, serde_json::Error> {
        let file: File = serde_json::from_str(text)?;
        let objects = file
            .clusters
            .into_iter()
            .flat_map(|(cluster, objects)| objects.into_iter().map(move |o| (cluster.clone(), o)))
            .filter(|(_, o)| o["kind"].is_string() && o["metadata"]["name"].is_string())
            .collect();
        let now = file.now;
        let pull_requests = file
            .pull_requests
            .unwrap_or_default()
            .into_iter()
            .map(|pr| PullRequest {
                head_ref: pr
                    .head
                    .as_ref()
                    .map_or_else(|| format!("pr-{}", pr.number), |h| h.branch.clone()),
                head_sha: pr.head.map(|h| h.sha),
                merge_commit_sha: pr.merge_commit_sha,
                draft: pr.draft,
                labels: Vec::new(),
                base_ref: "main".to_owned(),
                body: String::new(),
                user: pr.user.map_or_else(|| "unknown".to_owned(), |u| u.login),
                created_at: pr.created_at.unwrap_or(now),
                merged_at: pr.merged_at,
                closed_at: pr.closed_at,
                repo: pr.repo,
                number: pr.number,
                title: pr.title,
            })
            .collect();
        Ok(Self {
            now,
            objects,
            pull_requests,
        })
    }

    /// The clusters the file has objects on.
    pub fn clusters(&self) -> Vec<&str> {
        let mut clusters: Vec<&str> = self.objects.iter().map(|(c, _)| c.as_str()).collect();
        clusters.sort_unstable();
        clusters.dedup();
        clusters
    }
}

impl Story for Scenario {
    fn objects_at(&self, _now: DateTime<Utc>) -> Vec<(String, Value)> {
        self.objects.clone()
    }

    fn pull_requests_at(&self, _now: DateTime<Utc>) -> Vec<PullRequest> {
        self.pull_requests.clone()
    }
}
