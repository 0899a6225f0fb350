//! `tower serve --config tower.yaml`: which clusters, GitHub, Argo CD, Backstage and database
//! Tower reads, with environment overrides for what deployments usually inject.
//!
//! ```yaml
//! listen: 127.0.0.1:8080
//! controlPlaneCluster: dev
//! kubeconfig: /etc/tower/kubeconfig        # absent: $KUBECONFIG, ~/.kube/config
//! clusters:
//!   - name: dev
//!     context: dev                          # absent: the in-cluster service account
//!     tenantsRepo: acme/hangar-tenants      # requests; the XRs' source-info names it first
//!   - name: prod
//!     context: prod
//! github:
//!   apiUrl: https://api.github.com
//!   owner: acme
//!   token: ghp_…                            # or app: {appId, installationId, privateKeyFile}
//!   webhookSecret: …                        # optional: POST /webhooks/github, signed with it
//! argocd: {url: https://argocd-apps.example.com, token: …}
//! backstage: {url: https://backstage.example.com, token: …}  # appUrl: when pages live elsewhere
//!   # ingestorLocation: "cluster:"         # how the ingestor's entities' managed-by-location starts
//! prometheus:                               # optional: the Runtime tab's objectives
//!   url: http://prometheus.monitoring:9090
//!   deadlineSecs: 5                         # each query's; the default
//!   queries: {errorRatio: …, latencyP95: …, latencyP99: …, requests: …}  # $namespace, $window; defaults in docs/runtime.md
//! databaseUrl: sqlite:///var/lib/tower/history.db
//! dataDir: /var/lib/tower
//! frameAncestors: ["'self'"]                # Backstage's origin is always added
//! insecureOnNetwork: false                  # openApi / guestSignIn listen on loopback only unless true
//! worldClock: http://127.0.0.1:41234/clock  # only against a simulated world: tell time by its clock
//! proxy:                                    # optional: an authenticating proxy in front
//!   userHeader: X-Forwarded-User
//!   trustedAddresses: [10.0.3.17, 10.0.3.18]  # the proxy's own addresses; from anywhere else the header is ignored
//! ```
//!
//! Environment overrides (they win over the file): `TOWER_LISTEN`, `DATABASE_URL`,
//! `TOWER_DATA_DIR`, `TOWER_GITHUB_TOKEN`, `TOWER_GITHUB_API_URL`,
//! `TOWER_GITHUB_WEBHOOK_SECRET`, `TOWER_ARGOCD_URL`,
//! `TOWER_ARGOCD_TOKEN`, `TOWER_PROMETHEUS_URL`, `TOWER_BACKSTAGE_URL`, `TOWER_BACKSTAGE_TOKEN`, `TOWER_FRAME_ANCESTORS`
//! (comma-separated). Secrets are never printed: `Debug` redacts them.

use std::fmt;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use tower_shared::hangar::is_dns_label;

/// Why a config could not be used: names the field.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("reading {path}: {source}")]
    Read {
        path: String,
        source: std::io::Error,
    },
    #[error("{file}: {field}: {message}")]
    Invalid {
        file: String,
        field: String,
        message: String,
    },
}

/// A secret string: serialised as written, shown as `"***"` by `Debug`.
#[derive(Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Secret(pub String);

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("\"***\"")
    }
}

impl Secret {
    pub fn expose(&self) -> &str {
        &self.0
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Config {
    #[serde(default = "default_listen")]
    pub listen: SocketAddr,
    /// The cluster holding the Hangar XRs, Tekton runs and the platform's Argo CD.
    #[serde(default = "default_control_plane")]
    pub control_plane_cluster: String,
    /// The kubeconfig the clusters' contexts come from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kubeconfig: Option<PathBuf>,
    #[serde(default)]
    pub clusters: Vec<ClusterConfig>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub github: Option<GitHubConfig>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub argocd: Option<HttpService>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backstage: Option<HttpService>,
    /// Where the Runtime tab's figures come from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prometheus: Option<PrometheusConfig>,
    /// `sqlite://…` (default: `history.db` in the data dir) or `postgres://…`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub database_url: Option<Secret>,
    /// Where Tower keeps its files (the SQLite history by default).
    #[serde(default = "default_data_dir")]
    pub data_dir: PathBuf,
    /// Origins allowed to embed Tower in a frame besides Backstage's own, which always may
    /// (see [`Config::frame_ancestors`]).
    #[serde(default = "default_frame_ancestors")]
    pub frame_ancestors: Vec<String>,
    /// Tools' static bearer tokens, each with a subject and the routes it may call.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tokens: Vec<ToolToken>,
    /// An authenticating proxy in front of Tower (oauth2-proxy, an ingress with SSO): the
    /// user it names in a header is the caller — believed only from the proxy's addresses.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub proxy: Option<ProxyConfig>,
    /// Ask no one for a token. Only for looking at a snapshot or fleet file on one's own
    /// machine; Tower logs a warning when it is on.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub open_api: bool,
    /// Lets `openApi` or `backstage.guestSignIn` — where anyone who reaches Tower is a
    /// caller — listen on an address other than loopback. Off: Tower refuses to start so.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub insecure_on_network: bool,
    /// A simulated world's clock (`GET` answers `{"now", "rate"}`) for Tower to tell time
    /// by instead of the system clock: `tower demo` writes it, so a second Tower served
    /// with the demo's `tower.yaml` reads the world on the world's time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub world_clock: Option<String>,
}

/// An authenticating proxy: `{userHeader: X-Forwarded-User, trustedAddresses: [10.0.3.17]}`.
/// Name the proxy's own addresses: anything else on a trusted network could name any user.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ProxyConfig {
    /// The header the proxy sets to the signed-in user (`X-Forwarded-User`,
    /// `X-Auth-Request-Email`, …).
    pub user_header: String,
    /// Where the proxy connects from: its addresses (`10.0.3.17`), or a network (`10.0.3.16/30`)
    /// only when every address in it is the proxy. The header from any other peer is ignored.
    pub trusted_addresses: Vec<String>,
}

impl ProxyConfig {
    /// The trusted networks; `Err((index, message))` for one that does not parse.
    pub fn networks(&self) -> Result<Vec<ipnet::IpNet>, (usize, String)> {
        self.trusted_addresses
            .iter()
            .enumerate()
            .map(|(i, text)| {
                text.parse::<ipnet::IpNet>()
                    .or_else(|_| text.parse::<std::net::IpAddr>().map(ipnet::IpNet::from))
                    .map_err(|_| {
                        (
                            i,
                            format!("{text:?} is not an address or network (10.0.0.0/8)"),
                        )
                    })
            })
            .collect()
    }
}

/// A tool's static token.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ToolToken {
    /// Who the tool is, for the audit log (`tool:release-bot`).
    pub subject: String,
    pub token: Secret,
    /// Route paths it may call (a trailing `*` allows a prefix), e.g.
    /// `["/api/provisioning", "/provisioning-history/*"]`.
    pub routes: Vec<String>,
}

impl ToolToken {
    /// Whether this token may call `path`.
    pub fn allows(&self, path: &str) -> bool {
        self.routes
            .iter()
            .any(|route| match route.strip_suffix('*') {
                Some(prefix) => path.starts_with(prefix),
                None => path == route,
            })
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ClusterConfig {
    /// The name Tower and the Hangar objects use for the cluster (`dev`, `prod`, …).
    pub name: String,
    /// The kubeconfig context; absent means the in-cluster service account.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context: Option<String>,
    /// `owner/name` of the GitOps repo where this cluster's tenants are requested.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tenants_repo: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct GitHubConfig {
    #[serde(default = "default_github_api")]
    pub api_url: String,
    /// The organisation owning the app and GitOps repos.
    pub owner: String,
    /// Tower's own login (the author of its pull requests): read from `GET /user` when not
    /// set; a GitHub App's (`<app-slug>[bot]`) must be set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub login: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token: Option<Secret>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub app: Option<GitHubApp>,
    /// The secret GitHub signs its webhooks with; set it (and point the organisation's
    /// webhook at `/webhooks/github`, events "Pull requests" and "Pushes") and pages follow
    /// PRs within seconds rather than at the next 45 s poll.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub webhook_secret: Option<Secret>,
}

impl GitHubConfig {
    /// A GitHub Enterprise Server's host (its pages and API share it), for links; `None`
    /// for github.com.
    pub fn enterprise_host(&self) -> Option<String> {
        let host = reqwest::Url::parse(&self.api_url)
            .ok()?
            .host_str()?
            .to_ascii_lowercase();
        (host != "api.github.com").then_some(host)
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct GitHubApp {
    pub app_id: u64,
    pub installation_id: u64,
    pub private_key_file: PathBuf,
}

/// Prometheus' HTTP API and the queries Tower asks it, each written with `$namespace`
/// (the environment's, `app-<s>-<env>`) and `$window` (`5m` … `30d`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PrometheusConfig {
    pub url: String,
    /// A bearer token, when Prometheus sits behind one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token: Option<Secret>,
    /// How long each query may take before Prometheus counts as not answering.
    #[serde(default = "default_prometheus_deadline")]
    pub deadline_secs: u64,
    #[serde(default)]
    pub queries: PrometheusQueries,
}

fn default_prometheus_deadline() -> u64 {
    5
}

/// The queries, for the common `http_requests_total` counter (with a `code` label) and the
/// `http_request_duration_seconds` histogram.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PrometheusQueries {
    /// Failed requests ÷ all requests.
    #[serde(default = "PrometheusQueries::error_ratio")]
    pub error_ratio: String,
    #[serde(default = "PrometheusQueries::latency_p95")]
    pub latency_p95: String,
    #[serde(default = "PrometheusQueries::latency_p99")]
    pub latency_p99: String,
    /// How many requests were served (a burn-rate alert is not judged on fewer than
    /// `tower_shared::slo::MIN_REQUESTS`).
    #[serde(default = "PrometheusQueries::requests")]
    pub requests: String,
}

impl PrometheusQueries {
    fn error_ratio() -> String {
        r#"sum(rate(http_requests_total{namespace="$namespace",code=~"5.."}[$window])) / sum(rate(http_requests_total{namespace="$namespace"}[$window]))"#.to_owned()
    }

    fn quantile(q: &str) -> String {
        format!(
            r#"histogram_quantile({q}, sum by (le) (rate(http_request_duration_seconds_bucket{{namespace="$namespace"}}[$window])))"#
        )
    }

    fn latency_p95() -> String {
        Self::quantile("0.95")
    }

    fn latency_p99() -> String {
        Self::quantile("0.99")
    }

    fn requests() -> String {
        r#"sum(increase(http_requests_total{namespace="$namespace"}[$window]))"#.to_owned()
    }

    /// The query for `measure`.
    pub fn of(&self, measure: tower_shared::runtime::Measure) -> &str {
        use tower_shared::runtime::Measure;
        match measure {
            Measure::ErrorRatio => &self.error_ratio,
            Measure::LatencyP95 => &self.latency_p95,
            Measure::LatencyP99 => &self.latency_p99,
            Measure::Requests => &self.requests,
        }
    }
}

impl Default for PrometheusQueries {
    fn default() -> Self {
        Self {
            error_ratio: Self::error_ratio(),
            latency_p95: Self::latency_p95(),
            latency_p99: Self::latency_p99(),
            requests: Self::requests(),
        }
    }
}

/// A service Tower calls over HTTP.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct HttpService {
    pub url: String,
    /// A token Tower sends (Argo CD: read-only account; Backstage: a static token used for
    /// catalog reads only — refreshes always use the caller's own token).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token: Option<Secret>,
    /// Backstage only: a page opened on its own signs in as Backstage's guest (the demo; a
    /// Backstage in development mode).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub guest_sign_in: bool,
    /// Backstage only: where its pages are served, when not from `url` (the app and the
    /// backend on different hosts). Its origin frames Tower and hands it the token.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub app_url: Option<String>,
    /// Backstage only: how the `backstage.io/managed-by-location` of every entity Hangar's
    /// catalog ingestor writes starts (default [`INGESTOR_LOCATION`]). Only such an entity's
    /// owner may act on a service: one registered from anywhere else (a `url:` location
    /// anyone may add) is not believed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ingestor_location: Option<String>,
}

/// How the location of the entities Hangar's ingestor writes starts: it reads the clusters,
/// and names the cluster and object (`cluster:dev/shop`).
pub const INGESTOR_LOCATION: &str = "cluster:";

impl HttpService {
    /// The origin of `appUrl`, else of `url`, as a browser writes it (lower case, no default
    /// port, no credentials): for Backstage, the page origin allowed to frame Tower and hand
    /// it the user's token. `None` for a URL without one (not http or https).
    pub fn origin(&self) -> Option<String> {
        let url = reqwest::Url::parse(self.app_url.as_deref().unwrap_or(&self.url)).ok()?;
        matches!(url.scheme(), "http" | "https").then(|| url.origin().ascii_serialization())
    }
}

fn default_listen() -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], 8080))
}

fn default_control_plane() -> String {
    "dev".to_owned()
}

fn default_github_api() -> String {
    "https://api.github.com".to_owned()
}

fn default_data_dir() -> PathBuf {
    PathBuf::from("tower-data")
}

fn default_frame_ancestors() -> Vec<String> {
    vec!["'self'".to_owned()]
}

impl Default for Config {
    fn default() -> Self {
        Self {
            listen: default_listen(),
            control_plane_cluster: default_control_plane(),
            kubeconfig: None,
            clusters: Vec::new(),
            github: None,
            argocd: None,
            backstage: None,
            prometheus: None,
            database_url: None,
            data_dir: default_data_dir(),
            frame_ancestors: default_frame_ancestors(),
            tokens: Vec::new(),
            proxy: None,
            open_api: false,
            insecure_on_network: false,
            world_clock: None,
        }
    }
}

impl Config {
    /// The origins allowed to frame Tower (CSP `frame-ancestors`): `frameAncestors`, and
    /// Backstage's origin, which embeds Tower and hands it the user's token.
    pub fn frame_ancestors(&self) -> Vec<String> {
        let mut origins = self.frame_ancestors.clone();
        if let Some(backstage) = self.backstage.as_ref().and_then(HttpService::origin) {
            if !origins.contains(&backstage) {
                origins.push(backstage);
            }
        }
        origins
    }

    /// Reads a YAML config file, applies `env` overrides and checks it.
    pub fn load(path: &Path, env: impl Fn(&str) -> Option<String>) -> Result<Self, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
            path: path.display().to_string(),
            source,
        })?;
        Self::parse(&text, &path.display().to_string(), env)
    }

    /// No file: the defaults with `env` overrides.
    pub fn from_env(env: impl Fn(&str) -> Option<String>) -> Result<Self, ConfigError> {
        Self::parse("{}", "the environment", env)
    }

    /// Parses YAML text (`file` names it in errors), applies overrides and checks it.
    pub fn parse(
        text: &str,
        file: &str,
        env: impl Fn(&str) -> Option<String>,
    ) -> Result<Self, ConfigError> {
        let invalid = |field: String, message: String| ConfigError::Invalid {
            file: file.to_owned(),
            field,
            message,
        };
        let de = serde_yaml_ng::Deserializer::from_str(text);
        let mut config: Config = serde_path_to_error::deserialize(de).map_err(|err| {
            let field = err.path().to_string();
            invalid(field, err.into_inner().to_string())
        })?;
        config
            .apply_env(env)
            .map_err(|(field, message)| invalid(field.to_owned(), message))?;
        config
            .check()
            .map_err(|(field, message)| invalid(field, message))?;
        Ok(config)
    }

    fn apply_env(
        &mut self,
        env: impl Fn(&str) -> Option<String>,
    ) -> Result<(), (&'static str, String)> {
        if let Some(listen) = env("TOWER_LISTEN") {
            self.listen = listen
                .parse()
                .map_err(|_| ("TOWER_LISTEN", format!("{listen:?} is not an address")))?;
        }
        if let Some(url) = env("DATABASE_URL") {
            self.database_url = Some(Secret(url));
        }
        if let Some(dir) = env("TOWER_DATA_DIR") {
            self.data_dir = PathBuf::from(dir);
        }
        if let Some(token) = env("TOWER_GITHUB_TOKEN") {
            self.github_mut()?.token = Some(Secret(token));
        }
        if let Some(url) = env("TOWER_GITHUB_API_URL") {
            self.github_mut()?.api_url = url;
        }
        if let Some(secret) = env("TOWER_GITHUB_WEBHOOK_SECRET") {
            self.github_mut()?.webhook_secret = Some(Secret(secret));
        }
        for (service, url_var, token_var) in [
            (&mut self.argocd, "TOWER_ARGOCD_URL", "TOWER_ARGOCD_TOKEN"),
            (
                &mut self.backstage,
                "TOWER_BACKSTAGE_URL",
                "TOWER_BACKSTAGE_TOKEN",
            ),
        ] {
            if let Some(url) = env(url_var) {
                match service.as_mut() {
                    Some(service) => service.url = url,
                    None => {
                        *service = Some(HttpService {
                            url,
                            ..HttpService::default()
                        })
                    }
                }
            }
            if let Some(token) = env(token_var) {
                service
                    .as_mut()
                    .ok_or((token_var, "set the service's URL first".to_owned()))?
                    .token = Some(Secret(token));
            }
        }
        if let Some(url) = env("TOWER_PROMETHEUS_URL") {
            match self.prometheus.as_mut() {
                Some(prometheus) => prometheus.url = url,
                None => {
                    self.prometheus = Some(PrometheusConfig {
                        url,
                        token: None,
                        deadline_secs: default_prometheus_deadline(),
                        queries: PrometheusQueries::default(),
                    });
                }
            }
        }
        if let Some(origins) = env("TOWER_FRAME_ANCESTORS") {
            self.frame_ancestors = origins
                .split(',')
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(str::to_owned)
                .collect();
        }
        Ok(())
    }

    fn github_mut(&mut self) -> Result<&mut GitHubConfig, (&'static str, String)> {
        self.github.as_mut().ok_or((
            "github",
            "a GitHub override needs a `github` section (at least `owner`)".to_owned(),
        ))
    }

    fn check(&self) -> Result<(), (String, String)> {
        for (i, cluster) in self.clusters.iter().enumerate() {
            if !is_dns_label(&cluster.name) {
                return Err((
                    format!("clusters[{i}].name"),
                    format!("{:?} is not a DNS-1123 label", cluster.name),
                ));
            }
            if self.clusters[..i].iter().any(|c| c.name == cluster.name) {
                return Err((
                    format!("clusters[{i}].name"),
                    format!("cluster {:?} is listed twice", cluster.name),
                ));
            }
            if let Some(repo) = &cluster.tenants_repo {
                check_repo(repo).map_err(|m| (format!("clusters[{i}].tenantsRepo"), m))?;
            }
        }
        if !self.clusters.is_empty()
            && !self
                .clusters
                .iter()
                .any(|c| c.name == self.control_plane_cluster)
        {
            return Err((
                "controlPlaneCluster".to_owned(),
                format!(
                    "{:?} is not one of the listed clusters",
                    self.control_plane_cluster
                ),
            ));
        }
        if let Some(github) = &self.github {
            check_url(&github.api_url).map_err(|m| ("github.apiUrl".to_owned(), m))?;
            if github.token.is_some() && github.app.is_some() {
                return Err((
                    "github".to_owned(),
                    "give either `token` or `app`, not both".to_owned(),
                ));
            }
        }
        for (field, service) in [
            ("argocd.url", &self.argocd),
            ("backstage.url", &self.backstage),
        ] {
            if let Some(service) = service {
                check_url(&service.url).map_err(|m| (field.to_owned(), m))?;
            }
        }
        if let Some(prometheus) = &self.prometheus {
            check_url(&prometheus.url).map_err(|m| ("prometheus.url".to_owned(), m))?;
            if !(1..=60).contains(&prometheus.deadline_secs) {
                return Err((
                    "prometheus.deadlineSecs".to_owned(),
                    "give 1 to 60 seconds".to_owned(),
                ));
            }
            let q = &prometheus.queries;
            for (field, query) in [
                ("errorRatio", &q.error_ratio),
                ("latencyP95", &q.latency_p95),
                ("latencyP99", &q.latency_p99),
            ] {
                if !query.contains("$namespace") || !query.contains("$window") {
                    return Err((
                        format!("prometheus.queries.{field}"),
                        "a query names $namespace and $window (the environment's namespace and the window, e.g. 1h)".to_owned(),
                    ));
                }
            }
        }
        if let Some(app_url) = self.backstage.as_ref().and_then(|b| b.app_url.as_ref()) {
            check_url(app_url).map_err(|m| ("backstage.appUrl".to_owned(), m))?;
        }
        for (i, origin) in self.frame_ancestors.iter().enumerate() {
            let ok = !origin.is_empty()
                && origin
                    .bytes()
                    .all(|b| b.is_ascii_graphic() && !matches!(b, b';' | b',' | b'"'));
            if !ok {
                return Err((
                    format!("frameAncestors[{i}]"),
                    format!("{origin:?} is not a CSP source (e.g. 'self' or https://backstage.example.com)"),
                ));
            }
        }
        for (i, tool) in self.tokens.iter().enumerate() {
            if tool.token.expose().len() < 16 {
                return Err((
                    format!("tokens[{i}].token"),
                    "a tool token needs at least 16 characters".to_owned(),
                ));
            }
            if tool.routes.is_empty() {
                return Err((
                    format!("tokens[{i}].routes"),
                    "name at least one route the tool may call".to_owned(),
                ));
            }
        }
        if let Some(proxy) = &self.proxy {
            if http::HeaderName::from_bytes(proxy.user_header.as_bytes()).is_err() {
                return Err((
                    "proxy.userHeader".to_owned(),
                    format!("{:?} is not a header name", proxy.user_header),
                ));
            }
            if proxy.trusted_addresses.is_empty() {
                return Err((
                    "proxy.trustedAddresses".to_owned(),
                    "name the addresses the proxy connects from".to_owned(),
                ));
            }
            proxy
                .networks()
                .map_err(|(i, message)| (format!("proxy.trustedAddresses[{i}]"), message))?;
        }
        if let Some(url) = &self.world_clock {
            check_url(url).map_err(|m| ("worldClock".to_owned(), m))?;
        }
        if let Some(url) = &self.database_url {
            let url = url.expose();
            if !(url.starts_with("sqlite:")
                || url.starts_with("postgres://")
                || url.starts_with("postgresql://"))
            {
                return Err((
                    "databaseUrl".to_owned(),
                    "must start with sqlite:, postgres:// or postgresql://".to_owned(),
                ));
            }
        }
        Ok(())
    }

    /// The tenants repos, one per cluster that names one, without repeats.
    pub fn tenants_repos(&self) -> Vec<String> {
        let mut repos: Vec<String> = self
            .clusters
            .iter()
            .filter_map(|c| c.tenants_repo.clone())
            .collect();
        repos.sort_unstable();
        repos.dedup();
        repos
    }

    /// The history database: `databaseUrl`, else SQLite in the data dir.
    pub fn database_url(&self) -> String {
        match &self.database_url {
            Some(url) => url.expose().to_owned(),
            None => format!(
                "sqlite://{}?mode=rwc",
                self.data_dir.join("history.db").display()
            ),
        }
    }

    /// The config as YAML (what `tower demo` writes for its simulated platform).
    pub fn to_yaml(&self) -> String {
        serde_yaml_ng::to_string(self).unwrap_or_default()
    }
}

impl Config {
    /// Whether Tower may listen on `listen` as configured: with `openApi` or guest sign-in
    /// (anyone who reaches it is a caller) only on loopback, unless `insecureOnNetwork`.
    /// `Err((field, message))` names the setting that makes it unsafe.
    /// What makes anyone who reaches Tower a caller, if anything: the field, and what it
    /// does. The one place this is decided: [`Config::check_listen`] keeps such a Tower on
    /// loopback, and the server then accepts only loopback host names.
    pub fn open_to_anyone(&self) -> Option<(&'static str, &'static str)> {
        if self.open_api {
            Some(("openApi", "asks no caller for a token"))
        } else if self.backstage.as_ref().is_some_and(|b| b.guest_sign_in) {
            Some((
                "backstage.guestSignIn",
                "lets anyone sign in as Backstage's guest",
            ))
        } else {
            None
        }
    }

    pub fn check_listen(&self, listen: SocketAddr) -> Result<(), (String, String)> {
        if listen.ip().is_loopback() || self.insecure_on_network {
            return Ok(());
        }
        match self.open_to_anyone() {
            Some((field, what)) => Err((
                field.to_owned(),
                format!(
                    "{field} {what}, and Tower would listen on {listen}, which is not loopback: \
                     listen on 127.0.0.1, or set insecureOnNetwork: true if the network is yours alone"
                ),
            )),
            None => Ok(()),
        }
    }
}

fn check_url(url: &str) -> Result<(), String> {
    if url.starts_with("http://") || url.starts_with("https://") {
        Ok(())
    } else {
        Err(format!("{url:?} is not an http(s) URL"))
    }
}

/// `owner/name`, both parts GitHub names.
pub fn check_repo(repo: &str) -> Result<(), String> {
    let ok = repo.split_once('/').is_some_and(|(owner, name)| {
        is_github_name(owner) && is_github_name(name) && !name.contains('/')
    });
    if ok {
        Ok(())
    } else {
        Err(format!("{repo:?} is not an owner/name repository"))
    }
}

/// A GitHub owner or repository name: letters, digits, `-`, `_`, `.`, at most 100.
pub fn is_github_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 100
        && name != "."
        && name != ".."
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn no_env(_: &str) -> Option<String> {
        None
    }

    #[test]
    fn a_full_config_reads_and_overrides_win() {
        let text = "listen: 127.0.0.1:9000\nclusters:\n  - name: dev\n    context: dev\n    tenantsRepo: acme/hangar-tenants\ngithub:\n  owner: acme\n  token: secret-1\nbackstage:\n  url: http://127.0.0.1:7007\n";
        let config = Config::parse(text, "tower.yaml", |var| match var {
            "TOWER_GITHUB_TOKEN" => Some("secret-2".to_owned()),
            "DATABASE_URL" => Some("postgres://localhost/tower".to_owned()),
            _ => None,
        })
        .expect("valid");
        assert_eq!(config.listen.port(), 9000);
        let github = config.github.as_ref().expect("github");
        assert_eq!(github.token.as_ref().map(Secret::expose), Some("secret-2"));
        assert_eq!(config.database_url(), "postgres://localhost/tower");
        assert_eq!(config.tenants_repos(), ["acme/hangar-tenants"]);
        let shown = format!("{config:?}");
        assert!(!shown.contains("secret-2"), "Debug must not show tokens");
        // Backstage, which embeds Tower, may always frame it.
        assert_eq!(
            config.frame_ancestors(),
            ["'self'", "http://127.0.0.1:7007"]
        );
        // Its pages' origin, when they are served apart from its backend.
        let mut split = config.clone();
        if let Some(b) = split.backstage.as_mut() {
            b.app_url = Some("https://backstage.example.com/catalog".to_owned());
        }
        assert_eq!(
            split.frame_ancestors(),
            ["'self'", "https://backstage.example.com"]
        );
    }

    #[test]
    fn errors_name_the_field() {
        let cases = [
            ("clusters:\n  - name: Dev_1\n", "clusters[0].name"),
            (
                "clusters:\n  - name: dev\n    tenantsRepo: nope\n",
                "clusters[0].tenantsRepo",
            ),
            ("clusters:\n  - nmae: dev\n", "clusters[0]"),
            ("listen: here\n", "listen"),
            (
                "clusters:\n  - name: dev\ncontrolPlaneCluster: prod\n",
                "controlPlaneCluster",
            ),
            ("databaseUrl: mysql://x\n", "databaseUrl"),
            (
                "backstage: {url: http://127.0.0.1:7007, appUrl: backstage.example.com}\n",
                "backstage.appUrl",
            ),
            (
                "proxy: {userHeader: X-User, trustedAddresses: [10.0.0.0/8, nowhere]}\n",
                "proxy.trustedAddresses[1]",
            ),
            (
                "proxy: {userHeader: \"X User\", trustedAddresses: [10.0.0.1]}\n",
                "proxy.userHeader",
            ),
            (
                "proxy: {userHeader: X-User, trustedAddresses: []}\n",
                "proxy.trustedAddresses",
            ),
            (
                "frameAncestors: [\"https://a.example; script-src *\"]\n",
                "frameAncestors[0]",
            ),
        ];
        for (text, field) in cases {
            match Config::parse(text, "t.yaml", no_env) {
                Err(ConfigError::Invalid { field: got, .. }) => {
                    assert!(
                        got.starts_with(field),
                        "{text:?}: field {got:?}, want {field:?}"
                    )
                }
                other => panic!("{text:?}: {other:?}"),
            }
        }
    }

    #[test]
    fn backstages_origin_is_the_one_a_browser_reports() {
        let origin = |url: &str| {
            HttpService {
                url: url.to_owned(),
                ..HttpService::default()
            }
            .origin()
        };
        for (url, expected) in [
            (
                "HTTPS://Backstage.Example:443/catalog",
                Some("https://backstage.example"),
            ),
            ("http://127.0.0.1:7007/", Some("http://127.0.0.1:7007")),
            (
                "https://user:pw@backstage.example/",
                Some("https://backstage.example"),
            ),
            (
                "https://backstage.example?x=1#y",
                Some("https://backstage.example"),
            ),
            (
                "https://evil.example\\@backstage.example/",
                Some("https://evil.example"),
            ),
            ("ftp://backstage.example/", None),
            ("backstage.example", None),
        ] {
            assert_eq!(origin(url).as_deref(), expected, "{url}");
        }
    }

    #[test]
    fn modes_where_anyone_is_a_caller_stay_on_loopback() {
        let network: SocketAddr = "0.0.0.0:8080".parse().expect("address");
        let loopback: SocketAddr = "127.0.0.1:8080".parse().expect("address");
        let open = Config {
            open_api: true,
            ..Config::default()
        };
        assert_eq!(open.check_listen(loopback), Ok(()));
        let (field, message) = open.check_listen(network).expect_err("refused");
        assert_eq!(field, "openApi");
        assert!(message.contains("insecureOnNetwork"), "{message}");
        let guest = Config {
            backstage: Some(HttpService {
                url: "http://127.0.0.1:7007".to_owned(),
                guest_sign_in: true,
                ..HttpService::default()
            }),
            ..Config::default()
        };
        assert_eq!(
            guest
                .check_listen("[::]:8080".parse().expect("address"))
                .map_err(|e| e.0),
            Err("backstage.guestSignIn".to_owned())
        );
        assert_eq!(
            Config {
                insecure_on_network: true,
                ..guest
            }
            .check_listen(network),
            Ok(())
        );
        assert_eq!(Config::default().check_listen(network), Ok(()));
    }

    #[test]
    fn the_written_config_reads_back() {
        let mut config = Config::default();
        config.clusters.push(ClusterConfig {
            name: "dev".to_owned(),
            context: Some("dev".to_owned()),
            tenants_repo: Some("acme/hangar-tenants".to_owned()),
        });
        config.backstage = Some(HttpService {
            url: "http://127.0.0.1:1".to_owned(),
            token: Some(Secret("t".to_owned())),
            guest_sign_in: true,
            app_url: Some("https://backstage.example.com".to_owned()),
            ingestor_location: Some("cluster:".to_owned()),
        });
        let back = Config::parse(&config.to_yaml(), "x", no_env).expect("reads back");
        assert_eq!(back, config);
    }
}
