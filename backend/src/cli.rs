//! The `tower` command line.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::sync::Arc;

use anyhow::Context;
use clap::{Args, Parser, Subcommand};

use crate::clock::Clock;
use crate::config::Config;
use crate::state::AppState;
use crate::views::View;
use crate::{assets, demo, live, offline, server, source};
use tower_shared::fleet::Fleet;
use tower_shared::snapshot::Snapshot;

/// Tower: the delivery console for the Hangar platform.
///
/// Tower reads clusters and GitHub and never writes to a cluster: every change it makes is
/// a Git commit or a pull request.
#[derive(Debug, Parser)]
#[command(name = "tower", version, about, long_about)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run Tower against its built-in demo data and print the URL to open.
    ///
    /// Serves the built frontend and the JSON API from one process on 127.0.0.1; nothing
    /// is built at run time. Stop it with Ctrl-C.
    Demo(DemoArgs),
    /// Serve Tower: live from the clusters and GitHub in `--config`, or from a snapshot file.
    ///
    /// With `--config tower.yaml` (see the `config` module docs for the format and the
    /// environment overrides) Tower watches every listed cluster, polls GitHub, and keeps
    /// the provisioning history in SQLite or PostgreSQL.
    Serve(ServeArgs),
    /// Print the provisioning progress derived from a snapshot file, as JSON.
    ///
    /// Reads the snapshot format of docs/snapshot.md (cluster objects, pull requests, catalog,
    /// cicd.yaml texts, history, the observer's memory, and `now`) and prints
    /// `{"services": [...]}` with every step, its status, times, typical duration and events.
    /// Works offline: nothing is fetched.
    Provisioning(OfflineArgs),
    /// Print the cloud Deployments view (ECS, Lambda, Container Apps) of one service, as JSON.
    ///
    /// Reads the same snapshot format as `tower provisioning`; `--service` is required.
    CloudDeploys(ServiceArgs),
    /// Print the whole Deployments tab of one service, as JSON.
    ///
    /// A cloud target's deploys, or for Kubernetes each environment in promotion order: its
    /// Argo CD Application and its Argo Rollout — phase, steps, stable and canary ReplicaSets,
    /// analysis and measurements — in plain words. Same snapshot format as `tower provisioning`.
    Deployments(ServiceArgs),
    /// Print one service's Tekton runs, newest first, as JSON — or, with `--run`, that run's
    /// graph of tasks.
    ///
    /// Each run with its pipeline, outcome, times, commit, image and trigger; a run's graph
    /// with each task's status, start, end, steps, skipped reason, `runAfter` and
    /// result-reference edges and its place in the drawing. Same snapshot format as
    /// `tower provisioning` (docs/snapshot.md).
    Pipelines(PipelinesArgs),
    /// Print one service's release matrix, as JSON: its releases newest first, each across
    /// its environments in promotion order, and each release's one next action.
    ///
    /// A cell says whether the release is live there, the canary (at its weight), rolled
    /// back, not yet there or superseded; `next` names the environment it goes to next and
    /// how (`commit`, or `pull-request` for prod), with the open pull request already
    /// proposing it. Same snapshot format as `tower provisioning` (docs/snapshot.md).
    Releases(ServiceArgs),
    /// Print the fleet as JSON: every app the snapshot's Argo CD Applications deploy, each
    /// environment's cell its state (docs/state.md), trouble first.
    ///
    /// With `--service`, that app's row only. Same snapshot format as `tower provisioning`.
    Fleet(OfflineArgs),
    /// Print one service's state in each environment, as JSON (docs/state.md): what runs,
    /// what is arriving at its actual and desired weight, every trouble with its source,
    /// and what is only a wait.
    ///
    /// The fleet's cells and the Deployments tab's attention are these states. Same
    /// snapshot format as `tower provisioning`.
    State(ServiceArgs),
    /// Print one prod release's record (docs/release-records.md) as JSON, a self-contained
    /// HTML page or a PDF.
    ///
    /// Drafted from the snapshot as Tower drafts it live: transitions, every gate, the
    /// evidence and the confidence score with its working. Offline nothing is compared on
    /// GitHub, so the pull requests that went in are said to be unknown.
    ReleaseRecord(RecordArgs),
    /// Print DORA's four keys of one app, or of every app, as JSON: deployment frequency,
    /// lead time for changes, change failure rate and time to restore over the `--days`
    /// before the snapshot's `now`, with the prod rollouts and changes they counted.
    ///
    /// The rules are docs/dora.md's. Same snapshot format as `tower provisioning`.
    Dora(DoraArgs),
}

#[derive(Debug, Args)]
pub struct DoraArgs {
    #[command(flatten)]
    pub snapshot: OfflineArgs,
    /// The window: this many days before the snapshot's `now` (1 to 30).
    #[arg(long, default_value_t = 7, value_parser = clap::value_parser!(u32).range(1..=i64::from(tower_shared::dora::MAX_DAYS)))]
    pub days: u32,
}

#[derive(Debug, Args)]
pub struct RecordArgs {
    #[command(flatten)]
    pub service: ServiceArgs,
    /// The release: its version (`1.4.0`) or image tag (`1.4.0-3a8423b`).
    #[arg(long)]
    pub release: String,
    #[arg(long, value_enum, default_value_t = RecordFormat::Json)]
    pub format: RecordFormat,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum RecordFormat {
    Json,
    Html,
    Pdf,
}

#[derive(Debug, Args)]
pub struct PipelinesArgs {
    #[command(flatten)]
    pub service: ServiceArgs,
    /// Only this PipelineRun, with its graph of tasks.
    #[arg(long)]
    pub run: Option<String>,
}

#[derive(Debug, Args)]
pub struct OfflineArgs {
    /// The snapshot file (JSON, see docs/snapshot.md); `-` reads standard input.
    #[arg(long)]
    pub snapshot: PathBuf,
    /// Only this service.
    #[arg(long, value_parser = service_name)]
    pub service: Option<String>,
}

#[derive(Debug, Args)]
pub struct ServiceArgs {
    /// The snapshot file (JSON, see docs/snapshot.md); `-` reads standard input.
    #[arg(long)]
    pub snapshot: PathBuf,
    /// The service to show.
    #[arg(long, value_parser = service_name)]
    pub service: String,
}

fn speed(value: &str) -> Result<f64, String> {
    match value.parse::<f64>() {
        Ok(speed) if speed.is_finite() && (0.0..=10_000.0).contains(&speed) => Ok(speed),
        _ => Err(format!("{value:?} is not a speed between 0 and 10000")),
    }
}

fn instant(value: &str) -> Result<chrono::DateTime<chrono::Utc>, String> {
    chrono::DateTime::parse_from_rfc3339(value)
        .map(|t| t.with_timezone(&chrono::Utc))
        .map_err(|err| format!("{value:?} is not an RFC 3339 time ({err})"))
}

fn service_name(value: &str) -> Result<String, String> {
    if tower_shared::hangar::is_dns_label(value) {
        Ok(value.to_owned())
    } else {
        Err(format!(
            "{value:?} is not a service name (lowercase letters, digits and '-', at most 63)"
        ))
    }
}

#[derive(Debug, Args)]
pub struct FrontendArgs {
    /// The built frontend (`cargo xtask frontend`'s `dist/`); default: the one compiled into this
    /// binary (`cargo xtask image` builds it so), else the workspace's `dist/`.
    #[arg(long, env = "TOWER_DIST")]
    pub dist: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct DemoArgs {
    /// Port on 127.0.0.1; 0 picks any free port.
    #[arg(long, default_value_t = 8080)]
    pub port: u16,
    /// How much faster than real time the simulated world runs.
    #[arg(long, default_value_t = 20.0, value_parser = speed)]
    pub speed: f64,
    /// Chooses the steady fleet (which apps, their kinds and release cadences); the same
    /// seed gives the same world.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// When the simulated world's clock starts (RFC 3339, e.g. `2026-11-02T09:30:00Z`;
    /// default: now). The stories' releases fall on their cadences from the epoch, so the
    /// same start and seed give the same world.
    #[arg(long, value_parser = instant, conflicts_with = "scenario")]
    pub start: Option<chrono::DateTime<chrono::Utc>>,
    /// Serve the world captured in this snapshot file (docs/snapshot.md) instead of the
    /// demo's stories; the clock starts at its `now`.
    #[arg(long)]
    pub scenario: Option<PathBuf>,
    /// Where to write the kubeconfig for the simulated clusters (default: a new folder in
    /// the system's temporary directory).
    #[arg(long)]
    pub kubeconfig: Option<PathBuf>,
    /// What the simulated Backstage's guest (whom the demo's pages sign in as) stands for
    /// besides itself, as Backstage's `auth.providers.guest.ownershipEntityRefs` sets it:
    /// entity refs, comma-separated (default: `group:default/team-a`, owner of half the
    /// fleet). The guest may promote the apps these own.
    #[arg(long, value_delimiter = ',', value_parser = entity_ref)]
    pub guest_owns: Option<Vec<String>>,
    #[command(flatten)]
    pub frontend: FrontendArgs,
}

/// An entity ref as Backstage writes it: `kind:namespace/name`, lower case.
fn entity_ref(value: &str) -> Result<String, String> {
    let well_formed = value.split_once(':').is_some_and(|(kind, rest)| {
        let part = |p: &str| {
            !p.is_empty()
                && p.bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b"-_.".contains(&b))
        };
        rest.split_once('/')
            .is_some_and(|(namespace, name)| part(kind) && part(namespace) && part(name))
    });
    if well_formed {
        Ok(value.to_owned())
    } else {
        Err(format!(
            "{value:?} is not an entity ref (kind:namespace/name, e.g. group:default/team-b)"
        ))
    }
}

#[derive(Debug, Args)]
pub struct ServeArgs {
    /// Tower's config file (YAML): clusters, GitHub, Argo CD, Backstage, database.
    #[arg(long, env = "TOWER_CONFIG")]
    pub config: Option<PathBuf>,
    /// Address to listen on (default: the config's `listen`, else 127.0.0.1:8080).
    #[arg(long)]
    pub listen: Option<SocketAddr>,
    /// A fixed fleet to serve, as JSON in the `GET /api/fleet` format (default: derived
    /// from the snapshot).
    #[arg(long, env = "TOWER_FLEET_FILE")]
    pub fleet_file: Option<PathBuf>,
    /// Serve this snapshot (docs/snapshot.md) instead of live clusters; time stands still
    /// at its `now`.
    #[arg(long, env = "TOWER_SNAPSHOT_FILE", conflicts_with = "config")]
    pub snapshot_file: Option<PathBuf>,
    #[command(flatten)]
    pub frontend: FrontendArgs,
}

/// Runs one `tower` command to completion.
pub fn run(cli: Cli) -> anyhow::Result<()> {
    match cli.command {
        Command::Demo(args) => {
            let dist = assets::Dist::chosen(args.frontend.dist.as_deref())?;
            let world = match &args.scenario {
                Some(path) => demo::World::Scenario(demo::read_scenario(path)?),
                None => demo::World::Stories {
                    start: args.start.unwrap_or_else(crate::clock::wall),
                    seed: args.seed,
                },
            };
            let addr = SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), args.port);
            block_on(async move {
                // A new folder only this user may enter, under a name nobody can guess
                // ahead, removed when the demo stops.
                let dir = tempfile::Builder::new()
                    .prefix("tower-demo-")
                    .permissions(std::os::unix::fs::PermissionsExt::from_mode(0o700))
                    .tempdir()
                    .context("making the demo's folder")?;
                let dir = dir.path();
                // Bound first, so the simulated Backstage's page knows Tower's real port.
                let listener = server::bind(addr).await?;
                let addr = listener.local_addr()?;
                let demo = demo::start_world(world, args.speed, dir, args.kubeconfig, addr).await?;
                if let Some(refs) = args.guest_owns {
                    demo.platform.set_guest_owns(refs);
                }
                let live = live::connect(demo.config.clone(), demo.clock()).await?;
                if !live.wait_ready(std::time::Duration::from_secs(60)).await {
                    tracing::warn!("the simulated platform is not fully read yet; serving anyway");
                }
                server::serve(listener, AppState::live(live), dist).await
            })
        }
        Command::Serve(args) => {
            let dist = assets::Dist::chosen(args.frontend.dist.as_deref())?;
            let env = |var: &str| std::env::var(var).ok();
            let config = match &args.config {
                Some(path) => Config::load(path, env)?,
                None => Config::from_env(env)?,
            };
            let listen = args.listen.unwrap_or(config.listen);
            config
                .check_listen(listen)
                .map_err(|(field, message)| anyhow::anyhow!("{field}: {message}"))?;
            let fleet: Option<Fleet> = match &args.fleet_file {
                Some(path) => {
                    let text = std::fs::read_to_string(path)
                        .with_context(|| format!("reading {}", path.display()))?;
                    let mut fleet: Fleet = serde_json::from_str(&text)
                        .with_context(|| format!("{} is not a fleet", path.display()))?;
                    // Served as a derived fleet is: trouble first (pages do not sort again).
                    tower_shared::fleet::sort_by_trouble(&mut fleet.apps);
                    Some(fleet)
                }
                None => None,
            };
            block_on(async move {
                if !config.clusters.is_empty() {
                    let mut state = AppState::live(
                        live::connect(config.clone(), Clock::for_config(&config).await?).await?,
                    );
                    state.fleet_file = fleet.map(|f| Arc::new(View::ready(&f)));
                    return server::serve(server::bind(listen).await?, state, dist).await;
                }
                let snapshot = match &args.snapshot_file {
                    Some(path) => offline::read_snapshot(path)?,
                    None => Snapshot::empty(crate::clock::wall()),
                };
                let source: Arc<dyn source::Source> = Arc::new(source::Fixed::new(snapshot, fleet));
                let history = live::open_history(&config).await?;
                let gate = crate::auth::Gate::from_config(&config, crate::outbound::http_client());
                let state = AppState::fixed(None, source, history, gate);
                server::serve(server::bind(listen).await?, state, dist).await
            })
        }
        Command::Provisioning(args) => {
            let snapshot = offline::read_snapshot(&args.snapshot)?;
            offline::print_json(&offline::provisioning(&snapshot, args.service.as_deref()))
        }
        Command::CloudDeploys(args) => {
            let snapshot = offline::read_snapshot(&args.snapshot)?;
            offline::print_json(&tower_shared::cloud::derive_cloud_deploys(
                &snapshot,
                &args.service,
            ))
        }
        Command::Deployments(args) => {
            let snapshot = offline::read_snapshot(&args.snapshot)?;
            offline::print_json(&tower_shared::deployments::derive_deployments(
                &snapshot,
                &args.service,
            ))
        }
        Command::Releases(args) => {
            let snapshot = offline::read_snapshot(&args.snapshot)?;
            offline::print_json(&tower_shared::releases::of_snapshot(
                &snapshot,
                &args.service,
            ))
        }
        Command::Fleet(args) => {
            let snapshot = offline::read_snapshot(&args.snapshot)?;
            offline::fleet(&snapshot, args.service.as_deref())
        }
        Command::State(args) => {
            let snapshot = offline::read_snapshot(&args.snapshot)?;
            offline::state(&snapshot, &args.service)
        }
        Command::Pipelines(args) => {
            let snapshot = offline::read_snapshot(&args.service.snapshot)?;
            offline::pipelines(&snapshot, &args.service.service, args.run.as_deref())
        }
        Command::Dora(args) => {
            let snapshot = offline::read_snapshot(&args.snapshot.snapshot)?;
            offline::dora(&snapshot, args.snapshot.service.as_deref(), args.days)
        }
        Command::ReleaseRecord(args) => {
            let snapshot = offline::read_snapshot(&args.service.snapshot)?;
            offline::release_record(&snapshot, &args.service.service, &args.release, args.format)
        }
    }
}

fn block_on<F: std::future::Future<Output = anyhow::Result<()>>>(future: F) -> anyhow::Result<()> {
    tokio::runtime::Runtime::new()
        .context("starting the async runtime")?
        .block_on(future)
}
