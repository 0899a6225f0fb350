//! Where the views come from: a snapshot file ([`Fixed`], `tower serve --snapshot-file`) or
//! the live clusters and GitHub ([`crate::live::Live`]). Either way a [`Derived`] is ready
//! before anyone asks, so routes only pick bytes.

use std::sync::Arc;

use tower_shared::api::Health;
use tower_shared::fleet::Fleet;
use tower_shared::provisioning::derive_provisioning;
use tower_shared::snapshot::Snapshot;

use crate::clock::Clock;
use crate::derived::{Derived, Inputs};
use crate::filed::Filing;
use crate::tabs::Tabs;

/// Something that can say what Tower knows right now, derived.
pub trait Source: Send + Sync + std::fmt::Debug {
    /// The clock the derivations describe.
    fn clock(&self) -> &Clock;
    /// The latest derivation.
    fn derived(&self) -> Arc<Derived>;
    /// Every service's tabs, made from [`Source::derived`] on first demand. A DORA answer for
    /// the fleet is slow to make: ask for it off the async workers.
    fn tabs(&self) -> &Tabs;
}

/// A snapshot read once from a file, derived once; time stands still at its `now`.
#[derive(Debug)]
pub struct Fixed {
    clock: Clock,
    derived: Arc<Derived>,
    tabs: Tabs,
}

impl Fixed {
    /// Derives `snapshot` at its `now` (with `fleet` instead of the derived fleet, if given).
    pub fn new(snapshot: Snapshot, fleet: Option<Fleet>) -> Self {
        // What a file holds reaches every signed-in user: only what derivations read.
        let snapshot = snapshot.trimmed();
        let now = snapshot.now;
        let (filing, base) = Filing::of(snapshot);
        let provisioning = derive_provisioning(&filing.provisioning_snapshot(&base));
        let derived = Derived::next(
            None,
            Inputs {
                base: Arc::new(base),
                filed: Arc::new(filing.filed()),
                fleet_apps: Some(filing.fleet_apps()),
                object_activity: Some(filing.activity(now)),
                provisioning,
                now,
                health: Health::default(),
                fleet_file: fleet.map(Arc::new),
                generation: 0,
                github_answered: false,
            },
        );
        Self {
            clock: Clock::stopped(now),
            derived: Arc::new(derived),
            tabs: Tabs::default(),
        }
    }
}

impl Source for Fixed {
    fn clock(&self) -> &Clock {
        &self.clock
    }

    fn derived(&self) -> Arc<Derived> {
        Arc::clone(&self.derived)
    }

    fn tabs(&self) -> &Tabs {
        &self.tabs
    }
}

impl Source for crate::live::Live {
    fn clock(&self) -> &Clock {
        crate::live::Live::clock(self)
    }

    fn derived(&self) -> Arc<Derived> {
        crate::live::Live::derived(self)
    }

    fn tabs(&self) -> &Tabs {
        crate::live::Live::tabs(self)
    }
}
