//! `/metrics` in the Prometheus text format: requests per route and status, and — read at
//! scrape time — each cluster cache's freshness and size, GitHub requests and 304s.

use std::sync::Arc;

use axum::extract::{MatchedPath, Request, State};
use axum::middleware::Next;
use axum::response::Response;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;

use crate::live::Live;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RouteLabels {
    route: String,
    status: u16,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ClusterLabels {
    cluster: String,
}

/// Tower's metrics.
#[derive(Debug)]
pub struct Metrics {
    registry: Registry,
    requests: Family<RouteLabels, Counter>,
    stale: Family<ClusterLabels, Gauge>,
    synced: Family<ClusterLabels, Gauge>,
    objects: Family<ClusterLabels, Gauge>,
    github_requests: Gauge,
    github_not_modified: Gauge,
    github_cached: Gauge,
    github_cached_bytes: Gauge,
    provisioning_services: Gauge,
    rebuilds: Gauge,
    log_streams: Gauge,
    rebuild_seconds: Gauge<f64, std::sync::atomic::AtomicU64>,
}

/// A new metric of type `M`, registered as `name` with `help`.
fn register<M>(registry: &mut Registry, name: &str, help: &str) -> M
where
    M: Default + Clone + prometheus_client::registry::Metric,
{
    let metric = M::default();
    registry.register(name, help, metric.clone());
    metric
}

impl Default for Metrics {
    fn default() -> Self {
        let mut registry = Registry::with_prefix("tower");
        let requests: Family<RouteLabels, Counter> = register(
            &mut registry,
            "http_requests",
            "HTTP requests answered, by route and status",
        );
        let stale: Family<ClusterLabels, Gauge> = register(
            &mut registry,
            "cluster_stale",
            "1 while a cluster cannot be reached and its last data is served",
        );
        let synced: Family<ClusterLabels, Gauge> = register(
            &mut registry,
            "cluster_synced",
            "1 once every watched type of a cluster has been listed",
        );
        let objects: Family<ClusterLabels, Gauge> = register(
            &mut registry,
            "cluster_cached_objects",
            "Objects held in a cluster's watch cache",
        );
        let github_requests: Gauge = register(
            &mut registry,
            "github_requests",
            "Requests sent to GitHub since start",
        );
        let github_not_modified: Gauge = register(
            &mut registry,
            "github_not_modified",
            "GitHub answers that were 304 Not Modified (no rate limit spent)",
        );
        let github_cached: Gauge = register(
            &mut registry,
            "github_cached_answers",
            "GitHub answers Tower keeps (bounded: the least recently used go first)",
        );
        let github_cached_bytes: Gauge = register(
            &mut registry,
            "github_cached_bytes",
            "Bytes of the GitHub answers Tower keeps",
        );
        let provisioning_services: Gauge = register(
            &mut registry,
            "provisioning_services",
            "Services in the current provisioning derivation",
        );
        let rebuilds: Gauge = register(
            &mut registry,
            "deriver_rebuilds",
            "Times the deriver rebuilt its snapshot since start (one per batch of changes)",
        );
        let rebuild_seconds: Gauge<f64, std::sync::atomic::AtomicU64> = register(
            &mut registry,
            "deriver_last_rebuild_seconds",
            "How long the last rebuild took: reading the caches, indexing, deriving, making the views",
        );
        let log_streams: Gauge = register(
            &mut registry,
            "log_streams_open",
            "Pipeline step logs being streamed now (one pods/log request upstream each)",
        );
        Self {
            rebuilds,
            log_streams,
            rebuild_seconds,
            registry,
            requests,
            stale,
            synced,
            objects,
            github_requests,
            github_not_modified,
            github_cached,
            github_cached_bytes,
            provisioning_services,
        }
    }
}

impl Metrics {
    /// The text exposition, after reading the live source's gauges (when there is one).
    pub fn render(&self, live: Option<&Live>) -> String {
        if let Some(live) = live {
            let counts = live.clusters().object_counts();
            for status in live.clusters().status() {
                let labels = ClusterLabels {
                    cluster: status.name.clone(),
                };
                self.stale
                    .get_or_create(&labels)
                    .set(i64::from(status.stale));
                self.synced
                    .get_or_create(&labels)
                    .set(i64::from(status.synced));
                let count = counts.get(&status.name).copied().unwrap_or(0);
                self.objects
                    .get_or_create(&labels)
                    .set(i64::try_from(count).unwrap_or(i64::MAX));
            }
            self.provisioning_services
                .set(i64::try_from(live.derived().provisioning.services.len()).unwrap_or(i64::MAX));
            let (rebuilds, last) = live.rebuilds();
            self.rebuilds
                .set(i64::try_from(rebuilds).unwrap_or(i64::MAX));
            self.rebuild_seconds.set(last.as_secs_f64());
            self.log_streams
                .set(i64::try_from(live.open_logs()).unwrap_or(i64::MAX));
        }
        if let Some(github) = live.and_then(Live::github) {
            let counters = github.counters();
            self.github_requests
                .set(i64::try_from(counters.requests).unwrap_or(i64::MAX));
            self.github_not_modified
                .set(i64::try_from(counters.not_modified).unwrap_or(i64::MAX));
            self.github_cached
                .set(i64::try_from(counters.cached).unwrap_or(i64::MAX));
            self.github_cached_bytes
                .set(i64::try_from(counters.cached_bytes).unwrap_or(i64::MAX));
        }
        let mut text = String::new();
        // Writing to a String cannot fail.
        let _ = prometheus_client::encoding::text::encode(&mut text, &self.registry);
        text
    }
}

/// Counts every answer by its route template (not the raw path, which would let callers
/// create unbounded label values).
pub async fn count_requests(
    State(metrics): State<Arc<Metrics>>,
    request: Request,
    next: Next,
) -> Response {
    let route = request
        .extensions()
        .get::<MatchedPath>()
        .map_or_else(|| "other".to_owned(), |p| p.as_str().to_owned());
    let response = next.run(request).await;
    metrics
        .requests
        .get_or_create(&RouteLabels {
            route,
            status: response.status().as_u16(),
        })
        .inc();
    response
}
