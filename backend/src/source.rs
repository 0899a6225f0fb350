//! Where the per-service views' objects come from.
//!
//! [`Fixed`] serves a snapshot file (`tower serve --snapshot-file`). [`Simulated`] reads the
//! in-process simulated platform of `tower demo` directly. The live source — watch-based
//! kube-rs caches and octocrab — lands with the backend's clients and takes the same place.

use std::sync::Arc;

use hangar_sim::platform::Platform;
use tower_shared::kube::Object;
use tower_shared::snapshot::{GitHubUser, PullRequest, Snapshot};

/// Something that can say what Tower knows right now.
pub trait SnapshotSource: Send + Sync + std::fmt::Debug {
    fn snapshot(&self) -> Snapshot;
}

/// A snapshot read once from a file.
#[derive(Debug)]
pub struct Fixed(pub Snapshot);

impl SnapshotSource for Fixed {
    fn snapshot(&self) -> Snapshot {
        self.0.clone()
    }
}

/// The simulated platform, read in-process at its clock's `now`.
#[derive(Debug)]
pub struct Simulated(pub Arc<Platform>);

impl SnapshotSource for Simulated {
    fn snapshot(&self) -> Snapshot {
        let platform = &self.0;
        let mut snapshot = Snapshot::empty(platform.clock().now());
        for (cluster, store) in platform.clusters() {
            let objects = store
                .objects()
                .into_iter()
                .filter_map(Object::from_value)
                .collect();
            snapshot.clusters.insert(cluster.to_owned(), objects);
        }
        let pulls = platform.pull_requests().into_iter().map(|pr| PullRequest {
            html_url: Some(format!("https://github.com/{}/pull/{}", pr.repo, pr.number)),
            state: if pr.closed_at.is_some() {
                "closed"
            } else {
                "open"
            }
            .to_owned(),
            number: pr.number,
            title: pr.title,
            created_at: Some(pr.created_at),
            merged_at: pr.merged_at,
            closed_at: pr.closed_at,
            user: Some(GitHubUser { login: pr.user }),
            repo: pr.repo,
        });
        snapshot.pull_requests = Some(pulls.collect());
        snapshot
    }
}
