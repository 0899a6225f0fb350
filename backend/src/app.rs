//! The whole HTTP surface, built from state so tests can drive it without a socket.

use std::sync::Arc;

use axum::routing::get;
use axum::Router;
use tower_http::compression::CompressionLayer;
use tower_http::set_header::SetResponseHeaderLayer;
use tower_http::trace::TraceLayer;
use tower_shared::fleet::Fleet;

use crate::assets::Dist;
use crate::config::HttpService;
use crate::history::History;
use crate::live::github::GitHub;
use crate::live::Live;
use crate::metrics::Metrics;
use crate::routes;
use crate::source::SnapshotSource;

/// What the routes read. Cheap to clone: everything is behind `Arc`.
#[derive(Clone, Debug)]
pub struct AppState {
    /// A fixed fleet (`tower serve --fleet-file`); `None`: derived from `source` on each
    /// request.
    pub fleet: Option<Arc<Fleet>>,
    /// The objects the views derive from.
    pub source: Arc<dyn SnapshotSource>,
    /// The live clusters and GitHub, when configured (not for a snapshot file).
    pub live: Option<Live>,
    /// GitHub, when configured.
    pub github: Option<GitHub>,
    /// Backstage, when configured.
    pub backstage: Option<Arc<HttpService>>,
    /// Argo CD (the `argocd-apps` instance), when configured.
    pub argocd: Option<Arc<HttpService>>,
    pub history: History,
    /// For Argo CD and Backstage.
    pub http: reqwest::Client,
    pub metrics: Arc<Metrics>,
    /// Who may embed Tower in a frame (`Content-Security-Policy: frame-ancestors …`).
    pub frame_ancestors: Arc<[String]>,
    /// Who may call the API.
    pub gate: Arc<crate::auth::Gate>,
}

impl AppState {
    /// State for a fixed snapshot: no clusters or GitHub; callers checked by `gate`.
    pub fn fixed(
        fleet: Option<Fleet>,
        source: Arc<dyn SnapshotSource>,
        history: History,
        gate: crate::auth::Gate,
    ) -> Self {
        Self {
            fleet: fleet.map(Arc::new),
            source,
            live: None,
            github: None,
            backstage: None,
            argocd: None,
            history,
            http: http_client(),
            metrics: Arc::default(),
            frame_ancestors: Arc::from(vec!["'self'".to_owned()]),
            gate: Arc::new(gate),
        }
    }

    /// State reading the live clusters and GitHub.
    pub fn live(live: Live) -> Self {
        let config = live.config();
        let http = http_client();
        Self {
            fleet: None,
            source: Arc::new(live.clone()),
            github: live.github().cloned(),
            backstage: config.backstage.clone().map(Arc::new),
            argocd: config.argocd.clone().map(Arc::new),
            history: live.history().clone(),
            gate: Arc::new(crate::auth::Gate::from_config(config, http.clone())),
            http,
            metrics: Arc::default(),
            frame_ancestors: Arc::from(config.frame_ancestors()),
            live: Some(live),
        }
    }
}

/// The JSON API, `/healthz`, `/readyz`, `/metrics`, `/openapi.json`, and the built frontend
/// for every other path. Responses are compressed (brotli or gzip, as the client accepts)
/// unless already encoded or a Server-Sent Events stream.
pub fn router(state: AppState, dist: &Dist) -> Router {
    let metrics = Arc::clone(&state.metrics);
    let policy = format!(
        "object-src 'none'; base-uri 'none'; frame-ancestors {}",
        state.frame_ancestors.join(" ")
    );
    let policy = http::HeaderValue::from_str(&policy).unwrap_or(http::HeaderValue::from_static(
        "object-src 'none'; base-uri 'none'; frame-ancestors 'self'",
    ));
    let gate = Arc::clone(&state.gate);
    Router::new()
        .merge(
            routes::api()
                .with_state(state)
                .route_layer(axum::middleware::from_fn_with_state(
                    gate,
                    crate::auth::require_caller,
                ))
                .layer(axum::middleware::from_fn(json_only_writes))
                .layer(axum::extract::DefaultBodyLimit::max(MAX_BODY_BYTES)),
        )
        .route("/healthz", get(|| async { "ok" }))
        .merge(dist.router())
        .layer(axum::middleware::from_fn_with_state(
            metrics,
            crate::metrics::count_requests,
        ))
        .layer(CompressionLayer::new().compress_when({
            use tower_http::compression::predicate::{NotForContentType, Predicate as _};
            tower_http::compression::DefaultPredicate::new()
                .and(NotForContentType::const_new("text/event-stream"))
        }))
        .layer(SetResponseHeaderLayer::if_not_present(
            http::header::CONTENT_SECURITY_POLICY,
            policy,
        ))
        .layer(SetResponseHeaderLayer::overriding(
            http::header::X_CONTENT_TYPE_OPTIONS,
            http::HeaderValue::from_static("nosniff"),
        ))
        .layer(SetResponseHeaderLayer::overriding(
            http::header::REFERRER_POLICY,
            http::HeaderValue::from_static("no-referrer"),
        ))
        .layer(TraceLayer::new_for_http())
}

/// The largest request body the API reads (a history run is well under 1 KiB).
pub const MAX_BODY_BYTES: usize = 64 * 1024;

/// State-changing requests must be JSON (`Content-Type: application/json`): a cross-site
/// form cannot send that without a CORS preflight, which Tower never grants. GETs never
/// change anything.
async fn json_only_writes(
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> axum::response::Response {
    use axum::response::IntoResponse as _;
    let writes = crate::auth::is_write(request.method());
    let json = request
        .headers()
        .get(http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .is_some_and(|v| v.trim().eq_ignore_ascii_case("application/json"));
    if writes && !json {
        let body = serde_json::json!({
            "error": "send JSON: `Content-Type: application/json`",
            "field": "content-type",
        });
        return (http::StatusCode::UNSUPPORTED_MEDIA_TYPE, axum::Json(body)).into_response();
    }
    next.run(request).await
}

/// The HTTP client for Argo CD and Backstage: every call has a deadline.
pub fn http_client() -> reqwest::Client {
    reqwest::Client::builder()
        .connect_timeout(std::time::Duration::from_secs(5))
        .timeout(std::time::Duration::from_secs(15))
        .build()
        .unwrap_or_default()
}

impl AppState {
    /// Clusters whose data is the last known because they cannot be reached now, and
    /// whether GitHub is rate limited or failing. Its times are on Tower's clock (the
    /// answers' `now`), which in `tower demo` is the simulated world's, not the wall's.
    pub fn health(&self) -> crate::live::Health {
        use crate::live::github::GitHubTrouble;
        let Some(live) = &self.live else {
            return crate::live::Health::default();
        };
        let wall = chrono::Utc::now();
        let offset = live.now() - wall;
        let stale = live
            .clusters()
            .status(wall)
            .into_iter()
            .filter(|c| c.stale)
            .map(|mut c| {
                c.last_seen_at = c.last_seen_at.map(|at| at + offset);
                c
            })
            .collect();
        let github = live
            .github()
            .and_then(crate::live::github::GitHub::trouble)
            .map(|trouble| match trouble {
                GitHubTrouble::RateLimited { until } => GitHubTrouble::RateLimited {
                    until: until + offset,
                },
                failing @ GitHubTrouble::Failing { .. } => failing,
            });
        crate::live::Health { stale, github }
    }
}
