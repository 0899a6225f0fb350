//! `tower demo`'s world: the simulated Hangar platform, started in-process.

use std::path::{Path, PathBuf};

use anyhow::Context as _;
use chrono::{DateTime, Utc};
use hangar_sim::stories::scenario::Scenario;
use hangar_sim::stories::Story;

use crate::config::{ClusterConfig, Config, GitHubConfig, HttpService, Secret};

/// What the demo's world is made of.
#[derive(Debug)]
pub enum World {
    /// The demo's stories from `start`, with the steady fleet chosen by `seed`.
    Stories { start: DateTime<Utc>, seed: u64 },
    /// A captured world (`--scenario FILE`).
    Scenario(Scenario),
    /// Any stories, from `start` (for benchmarks and tests), on `dev`, `prod` and the
    /// `clusters` named besides.
    Custom {
        start: DateTime<Utc>,
        stories: Vec<Box<dyn Story>>,
        clusters: Vec<String>,
    },
}

/// Reads `--scenario FILE`, naming the file and the problem when it is not a snapshot.
pub fn read_scenario(path: &Path) -> anyhow::Result<Scenario> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    Scenario::parse(&text).with_context(|| format!("{} is not a snapshot file", path.display()))
}

/// The running demo world and the config pointing Tower's real clients at it.
#[derive(Debug)]
pub struct Demo {
    pub platform: std::sync::Arc<hangar_sim::platform::Platform>,
    /// Stops the simulated servers when dropped.
    pub served: hangar_sim::platform::Served,
    pub config: Config,
}

impl Demo {
    /// A user token for the simulated Backstage's guest, as a page signing in gets one.
    pub async fn guest_token(&self) -> anyhow::Result<String> {
        let backstage = format!("http://{}", self.served.backstage);
        guest_token(&backstage).await
    }

    /// The world's clock as Tower's clock (so durations move with world time), at the speed
    /// the world runs now.
    pub fn clock(&self) -> crate::clock::Clock {
        let platform = std::sync::Arc::clone(&self.platform);
        let speed = self.platform.clock().speed();
        crate::clock::Clock::new(move || platform.clock().now(), speed)
    }
}

/// A user token for the guest of the Backstage at `backstage` (`http://host:port`).
pub async fn guest_token(backstage: &str) -> anyhow::Result<String> {
    let body: serde_json::Value = reqwest::get(format!("{backstage}/api/auth/guest/refresh"))
        .await?
        .json()
        .await?;
    body["backstageIdentity"]["token"]
        .as_str()
        .map(str::to_owned)
        .context("no guest token")
}

/// The secret the simulated GitHub signs its webhooks to the demo's Tower with.
pub const WEBHOOK_SECRET: &str = "demo-webhook-secret";

/// The tenants repo of the simulated platform.
pub const TENANTS_REPO: &str = "acme/hangar-tenants";

/// Starts the simulated Hangar platform (clusters `dev` and `prod`, plus any a scenario
/// uses; world time running at `speed`), writes a kubeconfig for its clusters and a
/// `tower.yaml` pointing Tower's real clients (kube-rs, octocrab, HTTP) at it, and prints
/// every address and both paths. The platform runs until the returned value is dropped.
///
/// `dir` holds the kubeconfig (unless `kubeconfig` says where), `tower.yaml` and the
/// history database.
pub async fn start_world(
    world: World,
    speed: f64,
    dir: &Path,
    kubeconfig: Option<PathBuf>,
    listen: std::net::SocketAddr,
) -> anyhow::Result<Demo> {
    start_world_ticking(world, speed, dir, kubeconfig, listen, TICK_EVERY).await
}

/// How often the simulated world is brought up to its clock.
pub const TICK_EVERY: std::time::Duration = std::time::Duration::from_millis(500);

/// [`start_world`], bringing the world up to its clock every `tick_every` (a large world's
/// tick costs CPU: benchmarks tick less often).
pub async fn start_world_ticking(
    world: World,
    speed: f64,
    dir: &Path,
    kubeconfig: Option<PathBuf>,
    listen: std::net::SocketAddr,
    tick_every: std::time::Duration,
) -> anyhow::Result<Demo> {
    use std::io::Write;

    let mut clusters: Vec<String> = vec!["dev".to_owned(), "prod".to_owned()];
    let (now, stories): (DateTime<Utc>, Vec<Box<dyn Story>>) = match world {
        World::Stories { start, seed } => (start, hangar_sim::stories::demo_world(start, seed)),
        World::Scenario(scenario) => {
            clusters.extend(scenario.clusters().into_iter().map(str::to_owned));
            (scenario.now, vec![Box::new(scenario)])
        }
        World::Custom {
            start,
            stories,
            clusters: more,
        } => {
            clusters.extend(more);
            (start, stories)
        }
    };
    clusters.sort_unstable();
    clusters.dedup();
    let clock = hangar_sim::clock::Clock::new(now, speed);
    let clusters: Vec<&str> = clusters.iter().map(String::as_str).collect();
    let platform = std::sync::Arc::new(hangar_sim::platform::Platform::new(
        clock, &clusters, stories,
    ));
    let served = std::sync::Arc::clone(&platform)
        .serve(hangar_sim::kube_api::Config::default(), tick_every)
        .await?;
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let kubeconfig = kubeconfig.unwrap_or_else(|| dir.join("kubeconfig"));
    served.write_kubeconfig(&kubeconfig)?;
    let config = config_for(&served, &kubeconfig, dir, listen);
    // GitHub tells Tower when a pull request changes, as an organisation webhook would.
    platform.set_github_webhook(Some(hangar_sim::platform::Webhook {
        url: format!("http://{listen}/webhooks/github"),
        secret: WEBHOOK_SECRET.to_owned(),
    }));
    let config_path = dir.join("tower.yaml");
    std::fs::write(&config_path, config.to_yaml())
        .with_context(|| format!("writing {}", config_path.display()))?;

    let mut out = std::io::stdout().lock();
    for (cluster, addr) in &served.clusters {
        writeln!(out, "Simulated cluster {cluster}: http://{addr}")?;
    }
    writeln!(out, "Simulated GitHub API: http://{}", served.github)?;
    writeln!(out, "Simulated Argo CD API: http://{}", served.argocd)?;
    writeln!(out, "Simulated Prometheus: http://{}", served.prometheus)?;
    writeln!(out, "The world's clock: http://{}/clock", served.clock)?;
    writeln!(
        out,
        "Simulated Backstage: http://{} (static token {})",
        served.backstage,
        hangar_sim::backstage::STATIC_TOKEN
    )?;
    writeln!(
        out,
        "Tower inside the simulated Backstage (signed in by postMessage): {}",
        backstage_page(&served, listen)
    )?;
    writeln!(
        out,
        "Kubeconfig for the simulated clusters: {}",
        kubeconfig.display()
    )?;
    writeln!(
        out,
        "Tower's config for them (tower serve --config): {}",
        config_path.display()
    )?;
    out.flush()?;
    Ok(Demo {
        platform,
        served,
        config,
    })
}

/// The simulated Backstage's page framing Tower at `listen` (embedded, services view).
pub fn backstage_page(
    served: &hangar_sim::platform::Served,
    listen: std::net::SocketAddr,
) -> String {
    let tower = format!("http://{listen}/tower?view=services&embed=1");
    reqwest::Url::parse_with_params(
        &format!("http://{}/tower", served.backstage),
        [("tower", tower.as_str())],
    )
    .map_or_else(
        |_| format!("http://{}/tower", served.backstage),
        String::from,
    )
}

/// Tower's config for a served simulated platform: every cluster by its kubeconfig
/// context (the first is the control plane), the simulated GitHub, Argo CD and Backstage,
/// and the history in `data_dir`.
pub fn config_for(
    served: &hangar_sim::platform::Served,
    kubeconfig: &Path,
    data_dir: &Path,
    listen: std::net::SocketAddr,
) -> Config {
    let clusters = served
        .clusters
        .keys()
        .map(|name| ClusterConfig {
            name: name.clone(),
            context: Some(name.clone()),
            tenants_repo: Some(TENANTS_REPO.to_owned()),
        })
        .collect();
    Config {
        listen,
        control_plane_cluster: served
            .clusters
            .keys()
            .next()
            .cloned()
            .unwrap_or_else(|| "dev".to_owned()),
        kubeconfig: Some(kubeconfig.to_owned()),
        clusters,
        github: Some(GitHubConfig {
            api_url: format!("http://{}", served.github),
            owner: "acme".to_owned(),
            login: None,
            token: Some(Secret("demo-token".to_owned())),
            app: None,
            webhook_secret: Some(Secret(WEBHOOK_SECRET.to_owned())),
        }),
        argocd: Some(HttpService {
            url: format!("http://{}", served.argocd),
            token: None,
            guest_sign_in: false,
            app_url: None,
            ingestor_location: None,
        }),
        prometheus: Some(crate::config::PrometheusConfig {
            url: format!("http://{}", served.prometheus),
            token: None,
            deadline_secs: 5,
            queries: crate::config::PrometheusQueries::default(),
        }),
        backstage: Some(HttpService {
            url: format!("http://{}", served.backstage),
            token: Some(Secret(hangar_sim::backstage::STATIC_TOKEN.to_owned())),
            // The demo signs its pages in as the simulated Backstage's guest.
            guest_sign_in: true,
            app_url: None,
            ingestor_location: None,
        }),
        database_url: None,
        data_dir: data_dir.to_owned(),
        frame_ancestors: vec!["'self'".to_owned()],
        tokens: Vec::new(),
        proxy: None,
        open_api: false,
        insecure_on_network: false,
        world_clock: Some(format!("http://{}/clock", served.clock)),
    }
}
