//! Where the views' objects come from: a snapshot file ([`Fixed`], `tower serve
//! --snapshot-file`) or the live clusters and GitHub ([`crate::live::Live`]).

use std::sync::Arc;

use chrono::{DateTime, Utc};
use tower_shared::snapshot::Snapshot;

/// Something that can say what Tower knows right now.
pub trait SnapshotSource: Send + Sync + std::fmt::Debug {
    /// Everything known (its `now` is when it was taken).
    fn snapshot(&self) -> Arc<Snapshot>;
    /// The moment derivations should describe.
    fn now(&self) -> DateTime<Utc>;
}

/// A snapshot read once from a file; time stands still at its `now`.
#[derive(Debug)]
pub struct Fixed(pub Arc<Snapshot>);

impl SnapshotSource for Fixed {
    fn snapshot(&self) -> Arc<Snapshot> {
        Arc::clone(&self.0)
    }

    fn now(&self) -> DateTime<Utc> {
        self.0.now
    }
}

impl SnapshotSource for crate::live::Live {
    fn snapshot(&self) -> Arc<Snapshot> {
        Arc::clone(&self.derived().snapshot)
    }

    fn now(&self) -> DateTime<Utc> {
        crate::live::Live::now(self)
    }
}
