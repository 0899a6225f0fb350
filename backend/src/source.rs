//! Where the views come from: a snapshot file ([`Fixed`], `tower serve --snapshot-file`) or
//! the live clusters and GitHub ([`crate::live::Live`]). Either way a [`Derived`] is ready
//! before anyone asks, so routes only pick bytes.

use std::sync::Arc;

use tower_shared::api::{DeploymentsAnswer, Health, SnapshotAnswer};
use tower_shared::fleet::Fleet;
use tower_shared::pipelines::Pipelines;
use tower_shared::provisioning::derive_provisioning;
use tower_shared::pulls::Pulls;
use tower_shared::snapshot::Snapshot;

use crate::clock::Clock;
use crate::derived::{Derived, Inputs, ServiceViews};
use crate::filed::Filing;
use crate::views::View;

/// Something that can say what Tower knows right now, derived.
pub trait Source: Send + Sync + std::fmt::Debug {
    /// The clock the derivations describe.
    fn clock(&self) -> &Clock;
    /// The latest derivation.
    fn derived(&self) -> Arc<Derived>;
    /// One service's snapshot view; `None` when nothing of it is known.
    fn service_snapshot(&self, service: &str) -> Option<Arc<View>>;
    /// One service's Deployments tab; `None` for a service Tower does not know.
    fn service_deployments(&self, service: &str) -> Option<Arc<View>>;
    /// One service's runs and their graphs; `None` for a service Tower does not know.
    fn service_pipelines(&self, service: &str) -> Option<Arc<Pipelines>>;
    /// One service's pull requests, stitched; `None` for a service Tower does not know.
    fn service_pulls(&self, service: &str) -> Option<Arc<Pulls>>;
    /// One service's release matrix; `None` for a service Tower does not know.
    fn service_releases(&self, service: &str) -> Option<Arc<View>>;
    /// One service's Config tab (environments, secrets, composed resources); `None` for a
    /// service Tower does not know.
    fn service_config(&self, service: &str) -> Option<Arc<View>>;
    /// DORA's four keys under `key` ([`crate::derived::dora_key`]); `None` for an app Tower
    /// does not know. Made on first demand: call it off the async workers.
    fn dora(&self, key: &str) -> Option<Arc<View>>;
}

/// A snapshot read once from a file, derived once; time stands still at its `now`.
#[derive(Debug)]
pub struct Fixed {
    clock: Clock,
    derived: Arc<Derived>,
    services: ServiceViews<SnapshotAnswer>,
    deployments: ServiceViews<DeploymentsAnswer>,
    pipelines: ServiceViews<Pipelines>,
    pulls: ServiceViews<Pulls>,
    releases: ServiceViews<tower_shared::api::ReleasesAnswer>,
    config: ServiceViews<tower_shared::api::ConfigAnswer>,
    dora: ServiceViews<tower_shared::api::DoraAnswer>,
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
            services: ServiceViews::default(),
            deployments: ServiceViews::default(),
            pipelines: ServiceViews::default(),
            pulls: ServiceViews::default(),
            releases: ServiceViews::default(),
            config: ServiceViews::default(),
            dora: ServiceViews::default(),
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

    fn service_snapshot(&self, service: &str) -> Option<Arc<View>> {
        self.services.get(&self.derived, service)
    }

    fn service_deployments(&self, service: &str) -> Option<Arc<View>> {
        self.deployments.get(&self.derived, service)
    }

    fn service_pipelines(&self, service: &str) -> Option<Arc<Pipelines>> {
        self.pipelines.answer(&self.derived, service)
    }

    fn service_pulls(&self, service: &str) -> Option<Arc<Pulls>> {
        self.pulls.answer(&self.derived, service)
    }

    fn service_releases(&self, service: &str) -> Option<Arc<View>> {
        self.releases.get(&self.derived, service)
    }

    fn service_config(&self, service: &str) -> Option<Arc<View>> {
        self.config.get(&self.derived, service)
    }

    fn dora(&self, key: &str) -> Option<Arc<View>> {
        self.dora.get(&self.derived, key)
    }
}

impl Source for crate::live::Live {
    fn clock(&self) -> &Clock {
        crate::live::Live::clock(self)
    }

    fn derived(&self) -> Arc<Derived> {
        crate::live::Live::derived(self)
    }

    fn service_snapshot(&self, service: &str) -> Option<Arc<View>> {
        crate::live::Live::service_snapshot(self, service)
    }

    fn service_deployments(&self, service: &str) -> Option<Arc<View>> {
        crate::live::Live::service_deployments(self, service)
    }

    fn service_pipelines(&self, service: &str) -> Option<Arc<Pipelines>> {
        crate::live::Live::service_pipelines(self, service)
    }

    fn service_pulls(&self, service: &str) -> Option<Arc<Pulls>> {
        crate::live::Live::service_pulls(self, service)
    }

    fn service_releases(&self, service: &str) -> Option<Arc<View>> {
        crate::live::Live::service_releases(self, service)
    }

    fn service_config(&self, service: &str) -> Option<Arc<View>> {
        crate::live::Live::service_config(self, service)
    }

    fn dora(&self, key: &str) -> Option<Arc<View>> {
        crate::live::Live::dora(self, key)
    }
}
