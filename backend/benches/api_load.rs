//! `cargo bench -p tower-backend --bench api_load`: `GET /api/provisioning` under load.
//!
//! Starts a simulated platform with 1,000 services at every point of a provision (world
//! time running at real speed), Tower's live source reading it through kube-rs and
//! octocrab, and Tower's HTTP server — then load comes from a second process (this binary
//! again, with `--load`), which keeps 32 connections busy for 15 s and reports latency
//! percentiles. The parent also reports how many requests Tower sent each simulated
//! Kubernetes API per minute meanwhile (the goal: no LIST after start-up).
//!
//! Options (after `--`): `--services N` (default 1000), `--seconds S` (15),
//! `--connections C` (32).

use std::process::Stdio;
use std::time::{Duration, Instant};

use anyhow::Context as _;
use tokio::io::AsyncBufReadExt as _;
use tower_backend::{app, assets, demo, live};

#[derive(Debug)]
struct Options {
    services: usize,
    seconds: u64,
    connections: usize,
    load: Option<String>,
}

fn options() -> anyhow::Result<Options> {
    let mut options = Options {
        services: 1_000,
        seconds: 15,
        connections: 32,
        load: None,
    };
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut value = || args.next().with_context(|| format!("{arg} needs a value"));
        match arg.as_str() {
            "--services" => options.services = value()?.parse()?,
            "--seconds" => options.seconds = value()?.parse()?,
            "--connections" => options.connections = value()?.parse()?,
            "--load" => options.load = Some(value()?),
            // cargo bench passes `--bench`; libtest filters are not ours.
            _ => {}
        }
    }
    Ok(options)
}

fn main() -> anyhow::Result<()> {
    let options = options()?;
    let runtime = tokio::runtime::Runtime::new()?;
    match &options.load {
        Some(url) => runtime.block_on(load(url, &options)),
        None => runtime.block_on(serve_and_measure(&options)),
    }
}

/// The load process: `connections` workers GET `url` back to back for `seconds`; prints
/// one JSON line with the count and latency percentiles in microseconds.
async fn load(url: &str, options: &Options) -> anyhow::Result<()> {
    // The parent signs in as the simulated Backstage's guest and hands the token over.
    let mut headers = reqwest::header::HeaderMap::new();
    if let Ok(token) = std::env::var("TOWER_BENCH_TOKEN") {
        headers.insert(
            reqwest::header::AUTHORIZATION,
            reqwest::header::HeaderValue::from_str(&format!("Bearer {token}"))?,
        );
    }
    let client = reqwest::Client::builder()
        .pool_max_idle_per_host(options.connections)
        .default_headers(headers)
        .build()?;
    let until = Instant::now() + Duration::from_secs(options.seconds);
    let workers = (0..options.connections).map(|_| {
        let client = client.clone();
        let url = url.to_owned();
        tokio::spawn(async move {
            let mut latencies = Vec::new();
            let mut failures = 0_u64;
            while Instant::now() < until {
                let started = Instant::now();
                match client.get(&url).send().await {
                    Ok(response) if response.status().is_success() => {
                        if response.bytes().await.is_ok() {
                            latencies.push(started.elapsed());
                        } else {
                            failures += 1;
                        }
                    }
                    _ => failures += 1,
                }
            }
            (latencies, failures)
        })
    });
    let mut latencies = Vec::new();
    let mut failures = 0;
    for worker in futures::future::join_all(workers).await {
        let (mine, failed) = worker?;
        latencies.extend(mine);
        failures += failed;
    }
    latencies.sort_unstable();
    let at = |q: f64| {
        latencies
            .get(((latencies.len() as f64 - 1.0) * q).round() as usize)
            .map_or(0, |d| d.as_micros())
    };
    println!(
        "{}",
        serde_json::json!({"requests": latencies.len(), "failures": failures,
            "p50_us": at(0.50), "p90_us": at(0.90), "p99_us": at(0.99), "max_us": at(1.0)})
    );
    Ok(())
}

async fn serve_and_measure(options: &Options) -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let dist = dir.path().join("dist");
    std::fs::create_dir_all(&dist)?;
    std::fs::write(
        dist.join("index.html"),
        "<!doctype html><title>Tower</title>",
    )?;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;

    let start = chrono::Utc::now();
    let world = demo::World::Custom {
        start,
        stories: hangar_sim::stories::crowd(start, options.services),
    };
    eprintln!(
        "starting the simulated platform with {} services…",
        options.services
    );
    let world = demo::start_world(world, 1.0, dir.path(), None, addr).await?;
    let started = Instant::now();
    let live = live::connect(world.config.clone(), world.clock()).await?;
    anyhow::ensure!(
        live.wait_ready(Duration::from_secs(300)).await,
        "Tower did not read the platform within 5 minutes"
    );
    let ready_after = started.elapsed();
    let services = live.derived().provisioning.services.len();
    let body_bytes = live.derived().services_json.get().len();
    let router = app::router(app::AppState::live(live), &assets::Dist::open(&dist)?);
    let server = tokio::spawn(async move { axum::serve(listener, router).await });

    let guest: serde_json::Value = reqwest::get(format!(
        "http://{}/api/auth/guest/refresh",
        world.served.backstage
    ))
    .await?
    .json()
    .await?;
    let token = guest["backstageIdentity"]["token"]
        .as_str()
        .context("no guest token")?
        .to_owned();
    let before = world.served.api_requests();
    let window = Instant::now();
    let mut child = tokio::process::Command::new(std::env::current_exe()?)
        .args(["--load", &format!("http://{addr}/api/provisioning")])
        .args(["--seconds", &options.seconds.to_string()])
        .args(["--connections", &options.connections.to_string()])
        .env("TOWER_BENCH_TOKEN", &token)
        .stdout(Stdio::piped())
        .spawn()
        .context("starting the load process")?;
    let stdout = child.stdout.take().context("no stdout")?;
    let line = tokio::io::BufReader::new(stdout)
        .lines()
        .next_line()
        .await?
        .context("the load process printed nothing")?;
    child.wait().await?;
    let minutes = window.elapsed().as_secs_f64() / 60.0;
    let after = world.served.api_requests();
    server.abort();

    let report: serde_json::Value = serde_json::from_str(&line)?;
    let ms = |key: &str| report[key].as_f64().unwrap_or(f64::NAN) / 1000.0;
    let requests = report["requests"].as_f64().unwrap_or(0.0);
    println!(
        "GET /api/provisioning — {services} services derived ({:.1} MB of JSON), {} connections from a second process, {} s",
        body_bytes as f64 / 1e6,
        options.connections,
        options.seconds
    );
    println!(
        "  {requests} requests ({:.0}/s), {} failed; latency p50 {:.2} ms, p90 {:.2} ms, p99 {:.2} ms, max {:.2} ms",
        requests / options.seconds as f64,
        report["failures"],
        ms("p50_us"),
        ms("p90_us"),
        ms("p99_us"),
        ms("max_us"),
    );
    println!(
        "  Tower had read the platform {:.1} s after start",
        ready_after.as_secs_f64()
    );
    for (cluster, now) in &after {
        let then = before.get(cluster).copied().unwrap_or_default();
        println!(
            "  Kubernetes API requests per minute meanwhile, cluster {cluster}: LIST {:.1}, WATCH {:.1}, GET {:.1}, other {:.1}",
            (now.list - then.list) as f64 / minutes,
            (now.watch - then.watch) as f64 / minutes,
            (now.get - then.get) as f64 / minutes,
            (now.other - then.other) as f64 / minutes,
        );
    }
    Ok(())
}
