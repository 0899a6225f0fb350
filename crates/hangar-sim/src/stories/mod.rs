//! The world's stories. Each is a pure function from world time to the objects that exist
//! then, so the world can be replayed, jumped forward, or seen at any moment in a test.

pub mod app;
pub mod objects;

use chrono::{DateTime, Duration, Utc};
use serde_json::Value;

/// Something happening in the simulated platform.
pub trait Story: Send + Sync + std::fmt::Debug {
    /// The objects this story has in the world at `now`, with the cluster each lives on.
    fn objects_at(&self, now: DateTime<Utc>) -> Vec<(String, Value)>;

    /// The pull requests this story has on GitHub at `now`, in their state then.
    fn pull_requests_at(&self, _now: DateTime<Utc>) -> Vec<PullRequest> {
        Vec::new()
    }
}

/// A pull request as the simulated GitHub knows it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PullRequest {
    /// `owner/name`.
    pub repo: String,
    pub number: u64,
    pub title: String,
    pub body: String,
    pub user: String,
    pub head_ref: String,
    pub base_ref: String,
    pub created_at: DateTime<Utc>,
    pub merged_at: Option<DateTime<Utc>>,
    pub closed_at: Option<DateTime<Utc>>,
}

/// The demo's world, relative to when it starts: a NodeJS app created a minute in that goes
/// all the way to running healthy in dev, and a SpringBoot app whose source repository
/// cannot be created because the `provider-github-creds` Secret is missing.
pub fn demo_world(start: DateTime<Utc>) -> Vec<Box<dyn Story>> {
    let mut ledger = app::AppStory::new("ledger", "SpringBoot", start - Duration::minutes(3));
    ledger.repo_error = Some(
        "connect failed: cannot get credentials: cannot get credentials secret: Secret \"provider-github-creds\" not found"
            .to_owned(),
    );
    vec![
        Box::new(app::AppStory::new(
            "shop",
            "NodeJS",
            start + Duration::minutes(1),
        )),
        Box::new(ledger),
    ]
}
