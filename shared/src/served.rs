//! What every answer about a service is made from and carries: the sources' [`Health`]
//! (flattened into each answer pages read) and [`WholeTab`], a tab's answer served whole.
//!
//! The backend serves every tab [`crate::whole_tabs`] names at `GET /api/<id>?service=`,
//! made once per change of the snapshot on first demand: a new such tab is its module (its
//! answer, a `WholeTab` impl) and its line there.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::snapshot::Snapshot;

/// A tab's answer about one service, served whole at `GET /api/<ID>?service=NAME`.
pub trait WholeTab: Serialize + PartialEq + Send + Sync + Sized + 'static {
    /// The tab's name: its route `/api/<ID>` and its page's `view=` (e.g. `deployments`).
    const ID: &'static str;

    /// The answer about `service` from its part of the snapshot (the backend asks only about
    /// services Tower knows), with what is old or missing in it.
    fn derive(part: &Snapshot, service: &str, health: &Health) -> Self;
}

/// Something done with every tab served whole: [`crate::whole_tabs`] calls [`Self::tab`]
/// once for each (the backend routes each, for one).
pub trait EachWholeTab {
    fn tab<A: WholeTab>(&mut self);
}

/// A cluster whose objects are the last known, because it cannot be reached now.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StaleCluster {
    pub name: String,
    /// When it last answered (`None`: never, since Tower started).
    #[serde(default)]
    pub last_seen_at: Option<DateTime<Utc>>,
    /// The last failure, without credentials.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// Why what Tower shows from GitHub may be old or missing.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", tag = "state")]
pub enum GitHubTrouble {
    /// GitHub's rate limit is spent: Tower does not ask before `until`.
    RateLimited { until: DateTime<Utc> },
    /// GitHub's last answer was a failure (unreachable, 5xx, no access).
    Failing { error: String },
}

/// What in an answer is old or missing, flattened into the answers pages read: `stale`
/// (clusters serving their last known data) and `github` (rate limited or failing). Both
/// absent when all is well.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Health {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub stale: Vec<StaleCluster>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub github: Option<GitHubTrouble>,
}

impl Health {
    /// Every cluster answers and GitHub does too.
    pub fn is_clear(&self) -> bool {
        self.stale.is_empty() && self.github.is_none()
    }
}
