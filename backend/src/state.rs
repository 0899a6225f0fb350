//! What the routes read: [`AppState`]. It sits below the routes and the router, so arrows
//! point one way (`app` → `routes` → `state`).

use std::sync::Arc;

use tower_shared::fleet::Fleet;

use crate::config::{HttpService, Secret};
use crate::history::History;
use crate::live::github::GitHub;
use crate::live::Live;
use crate::metrics::Metrics;
use crate::source::Source;
use crate::views::View;

/// What the routes read. Cheap to clone: everything is behind `Arc`.
#[derive(Clone, Debug)]
pub struct AppState {
    /// The derivations the views come from.
    pub source: Arc<dyn Source>,
    /// A fixed fleet (`tower serve --fleet-file`) served instead of the derived one.
    pub fleet_file: Option<Arc<View>>,
    /// The live clusters and GitHub, when configured (not for a snapshot file).
    pub live: Option<Live>,
    /// GitHub, when configured.
    pub github: Option<GitHub>,
    /// The secret GitHub signs its webhooks with (`github.webhookSecret`).
    pub webhook_secret: Option<Secret>,
    /// Backstage, when configured.
    pub backstage: Option<Arc<HttpService>>,
    /// Argo CD (the `argocd-apps` instance), when configured.
    pub argocd: Option<Arc<HttpService>>,
    /// Prometheus, when configured (the Runtime tab's figures).
    pub prometheus: Option<Arc<crate::prometheus::Prometheus>>,
    pub history: History,
    /// For Argo CD and Backstage.
    pub http: reqwest::Client,
    pub metrics: Arc<Metrics>,
    /// Who may embed Tower in a frame (`Content-Security-Policy: frame-ancestors …`).
    pub frame_ancestors: Arc<[String]>,
    /// Who may call the API.
    pub gate: Arc<crate::auth::Gate>,
    /// `/readyz`'s last answer and when it was found: one check at a time, reused for
    /// [`READINESS_FOR`], so a public route cannot make Tower hammer Argo CD or the database.
    pub readiness:
        Arc<tokio::sync::Mutex<Option<(tokio::time::Instant, tower_shared::api::Readiness)>>>,
    /// The Argo CD actions this replica is running now, by Application and Rollout: a second
    /// press while the first is under way does nothing.
    pub acting: Arc<std::sync::Mutex<std::collections::HashSet<String>>>,
}

/// How long a `/readyz` answer is reused.
pub const READINESS_FOR: std::time::Duration = std::time::Duration::from_secs(2);

impl AppState {
    /// State for a fixed snapshot: no clusters or GitHub; callers checked by `gate`.
    pub fn fixed(
        fleet: Option<Fleet>,
        source: Arc<dyn Source>,
        history: History,
        gate: crate::auth::Gate,
    ) -> Self {
        Self {
            fleet_file: fleet.map(|f| Arc::new(View::ready(&f))),
            source,
            live: None,
            github: None,
            webhook_secret: None,
            backstage: None,
            argocd: None,
            prometheus: None,
            history,
            http: crate::outbound::http_client(),
            metrics: Arc::default(),
            frame_ancestors: Arc::from(vec!["'self'".to_owned()]),
            gate: Arc::new(gate),
            readiness: Arc::default(),
            acting: Arc::default(),
        }
    }

    /// State reading the live clusters and GitHub.
    pub fn live(live: Live) -> Self {
        let config = live.config();
        let http = crate::outbound::http_client();
        Self {
            fleet_file: None,
            source: Arc::new(live.clone()),
            github: live.github().cloned(),
            webhook_secret: config
                .github
                .as_ref()
                .and_then(|g| g.webhook_secret.clone()),
            backstage: config.backstage.clone().map(Arc::new),
            argocd: config.argocd.clone().map(Arc::new),
            prometheus: live.prometheus().cloned(),
            history: live.history().clone(),
            gate: Arc::new(crate::auth::Gate::from_config(config, http.clone())),
            http,
            metrics: Arc::default(),
            frame_ancestors: Arc::from(config.frame_ancestors()),
            live: Some(live),
            readiness: Arc::default(),
            acting: Arc::default(),
        }
    }

    /// Tower's clock.
    pub fn clock(&self) -> &crate::clock::Clock {
        self.source.clock()
    }
}
