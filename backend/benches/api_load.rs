//! `cargo bench -p tower-backend --bench api_load`: the views under load, and what it costs
//! the clusters.
//!
//! Starts a simulated platform with 1,000 services at every point of a provision (world
//! time running at real speed), Tower's live source reading it through kube-rs and
//! octocrab, and Tower's HTTP server. Load then comes from a second process (this binary
//! again, with `--load`), 32 connections back to back, as a browser asks (`Accept-Encoding:
//! br, gzip`, signed in with a Backstage guest token), in phases of `--seconds` each:
//! 1. `GET /api/summary` (what every page reads), back to back: the most Tower answers, and
//!    the latency when every connection waits behind the others;
//! 2. `GET /api/summary` at `--rate` requests per second over the same connections (each
//!    sends on a schedule; latency counts from when the request was due, so a slow answer
//!    that delays the next one is not hidden);
//! 3. `GET /api/summary` with `If-None-Match` (a page checking again) at `--rate`: `304`
//!    round trips — an answer that changed in between comes back whole and is counted apart;
//! 4. `GET /api/provisioning` (every service with durations, for tools), back to back.
//!
//! Meanwhile the parent counts the requests Tower sends each simulated Kubernetes API, over
//! an observation window of `--observe` seconds from when Tower is ready (long enough to see
//! kube-rs re-open its watches, which the API server ends every 290 s).
//!
//! The simulated world is brought up to its clock every 2 s (ticking 21,000 objects costs the
//! simulator about 0.4 s of CPU, on the machine Tower and the load share).
//!
//! Options (after `--`): `--services N` (1000), `--seconds S` (15), `--connections C` (32),
//! `--rate R` (1000 requests/s in all), `--observe S` (300), `--speed X` (1: world time at
//! real speed), `--tick S` (2).

use std::process::Stdio;
use std::time::{Duration, Instant};

use anyhow::Context as _;
use tokio::io::AsyncBufReadExt as _;
use tower_backend::{app, assets, demo, live, state};

#[derive(Debug)]
struct Options {
    services: usize,
    seconds: u64,
    connections: usize,
    observe: u64,
    /// Requests per second over all connections; 0: back to back.
    rate: u64,
    /// World seconds per real second (0: the world stands still).
    speed: f64,
    /// Seconds between the simulator's ticks.
    tick: f64,
    load: Option<String>,
    conditional: bool,
}

fn options() -> anyhow::Result<Options> {
    let mut options = Options {
        services: 1_000,
        seconds: 15,
        connections: 32,
        observe: 300,
        rate: 1_000,
        speed: 1.0,
        tick: 2.0,
        load: None,
        conditional: false,
    };
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut value = || args.next().with_context(|| format!("{arg} needs a value"));
        match arg.as_str() {
            "--services" => options.services = value()?.parse()?,
            "--seconds" => options.seconds = value()?.parse()?,
            "--connections" => options.connections = value()?.parse()?,
            "--observe" => options.observe = value()?.parse()?,
            "--rate" => options.rate = value()?.parse()?,
            "--speed" => options.speed = value()?.parse()?,
            "--tick" => options.tick = value()?.parse()?,
            "--load" => options.load = Some(value()?),
            "--conditional" => options.conditional = true,
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

/// What one worker saw.
#[derive(Debug, Default)]
struct Seen {
    /// Full answers: latency and bytes on the wire.
    full: Vec<(Duration, usize)>,
    not_modified: Vec<Duration>,
    failures: u64,
}

fn percentile(sorted: &[Duration], q: f64) -> u128 {
    #[allow(
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss,
        clippy::cast_precision_loss
    )]
    let index = ((sorted.len() as f64 - 1.0) * q).round() as usize;
    sorted.get(index).map_or(0, Duration::as_micros)
}

/// The load process: `connections` workers GET `url` back to back for `seconds`; prints one
/// JSON line with counts and latency percentiles (µs) of full and `304` answers.
async fn load(url: &str, options: &Options) -> anyhow::Result<()> {
    // The parent signs in as the simulated Backstage's guest and hands the token over.
    let mut headers = reqwest::header::HeaderMap::new();
    if let Ok(token) = std::env::var("TOWER_BENCH_TOKEN") {
        headers.insert(
            reqwest::header::AUTHORIZATION,
            reqwest::header::HeaderValue::from_str(&format!("Bearer {token}"))?,
        );
    }
    headers.insert(
        reqwest::header::ACCEPT_ENCODING,
        reqwest::header::HeaderValue::from_static("br, gzip"),
    );
    let client = reqwest::Client::builder()
        .pool_max_idle_per_host(options.connections)
        .default_headers(headers)
        .build()?;
    let begin = Instant::now();
    let until = begin + Duration::from_secs(options.seconds);
    let conditional = options.conditional;
    // Paced: each connection sends every `period`, the connections spread over it.
    let period = (options.rate > 0)
        .then(|| Duration::from_secs_f64(options.connections as f64 / options.rate as f64));
    let workers = (0..options.connections).map(|i| {
        let client = client.clone();
        let url = url.to_owned();
        let mut due = begin
            + period.map_or(Duration::ZERO, |p| {
                p * i as u32 / options.connections as u32
            });
        tokio::spawn(async move {
            let mut seen = Seen::default();
            let mut etag: Option<String> = None;
            while Instant::now() < until {
                let started = match period {
                    Some(period) => {
                        tokio::time::sleep_until(due.into()).await;
                        let scheduled = due;
                        due += period;
                        scheduled
                    }
                    None => Instant::now(),
                };
                let mut request = client.get(&url);
                if let (true, Some(etag)) = (conditional, &etag) {
                    request = request.header(reqwest::header::IF_NONE_MATCH, etag);
                }
                let Ok(response) = request.send().await else {
                    seen.failures += 1;
                    continue;
                };
                let status = response.status();
                let tag = response
                    .headers()
                    .get(reqwest::header::ETAG)
                    .and_then(|v| v.to_str().ok())
                    .map(str::to_owned);
                match (status.as_u16(), response.bytes().await) {
                    (304, Ok(_)) => seen.not_modified.push(started.elapsed()),
                    (200, Ok(body)) => {
                        seen.full.push((started.elapsed(), body.len()));
                        etag = tag;
                    }
                    _ => seen.failures += 1,
                }
            }
            seen
        })
    });
    let mut full: Vec<(Duration, usize)> = Vec::new();
    let mut not_modified = Vec::new();
    let mut failures = 0;
    for worker in futures::future::join_all(workers).await {
        let seen = worker?;
        full.extend(seen.full);
        not_modified.extend(seen.not_modified);
        failures += seen.failures;
    }
    let bytes = full.iter().map(|(_, b)| *b).sum::<usize>() / full.len().max(1);
    let mut full: Vec<Duration> = full.into_iter().map(|(d, _)| d).collect();
    full.sort_unstable();
    not_modified.sort_unstable();
    println!(
        "{}",
        serde_json::json!({
            "full": full.len(), "notModified": not_modified.len(), "failures": failures,
            "bytesPerFullAnswer": bytes,
            "full_p50_us": percentile(&full, 0.50), "full_p90_us": percentile(&full, 0.90),
            "full_p99_us": percentile(&full, 0.99), "full_max_us": percentile(&full, 1.0),
            "nm_p50_us": percentile(&not_modified, 0.50), "nm_p90_us": percentile(&not_modified, 0.90),
            "nm_p99_us": percentile(&not_modified, 0.99), "nm_max_us": percentile(&not_modified, 1.0),
        })
    );
    Ok(())
}

/// Runs one load phase from a second process; its report.
async fn phase(
    url: &str,
    conditional: bool,
    rate: u64,
    token: &str,
    options: &Options,
) -> anyhow::Result<serde_json::Value> {
    let mut command = tokio::process::Command::new(std::env::current_exe()?);
    command
        .args(["--load", url])
        .args(["--rate", &rate.to_string()])
        .args(["--seconds", &options.seconds.to_string()])
        .args(["--connections", &options.connections.to_string()])
        .env("TOWER_BENCH_TOKEN", token)
        .stdout(Stdio::piped());
    if conditional {
        command.arg("--conditional");
    }
    let mut child = command.spawn().context("starting the load process")?;
    let stdout = child.stdout.take().context("no stdout")?;
    let line = tokio::io::BufReader::new(stdout)
        .lines()
        .next_line()
        .await?
        .context("the load process printed nothing")?;
    child.wait().await?;
    Ok(serde_json::from_str(&line)?)
}

fn print_phase(what: &str, report: &serde_json::Value, seconds: u64) {
    let ms = |key: &str| report[key].as_f64().unwrap_or(f64::NAN) / 1000.0;
    let count = |key: &str| report[key].as_u64().unwrap_or(0);
    #[allow(clippy::cast_precision_loss)]
    let rate = |n: u64| n as f64 / seconds as f64;
    println!("{what}");
    println!(
        "  full answers: {} ({:.0}/s), {} bytes each on the wire; p50 {:.2} ms, p90 {:.2} ms, p99 {:.2} ms, max {:.2} ms",
        count("full"),
        rate(count("full")),
        count("bytesPerFullAnswer"),
        ms("full_p50_us"),
        ms("full_p90_us"),
        ms("full_p99_us"),
        ms("full_max_us"),
    );
    if count("notModified") > 0 {
        println!(
            "  304 answers: {} ({:.0}/s); p50 {:.2} ms, p90 {:.2} ms, p99 {:.2} ms, max {:.2} ms",
            count("notModified"),
            rate(count("notModified")),
            ms("nm_p50_us"),
            ms("nm_p90_us"),
            ms("nm_p99_us"),
            ms("nm_max_us"),
        );
    }
    println!("  failed: {}", count("failures"));
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

    let start = tower_backend::clock::wall();
    let world = demo::World::Custom {
        start,
        stories: hangar_sim::stories::crowd(start, options.services),
        clusters: Vec::new(),
    };
    eprintln!(
        "starting the simulated platform with {} services…",
        options.services
    );
    let world = demo::start_world_ticking(
        world,
        options.speed,
        dir.path(),
        None,
        addr,
        Duration::from_secs_f64(options.tick),
    )
    .await?;
    let started = Instant::now();
    let live = live::connect(world.config.clone(), world.clock()).await?;
    anyhow::ensure!(
        live.wait_ready(Duration::from_secs(300)).await,
        "Tower did not read the platform within 5 minutes"
    );
    let ready_after = started.elapsed();
    let derived = live.derived();
    let services = derived.provisioning.services.len();
    let summary_bytes = derived.views.summary.json().map_or(0, bytes::Bytes::len);
    let provisioning_bytes = serde_json::to_vec(&*derived.provisioning)?.len();
    let live_for_figures = live.clone();
    let router = app::router(state::AppState::live(live), &assets::Dist::open(&dist)?);
    let server = tokio::spawn(async move { axum::serve(listener, router).await });

    let token = world.guest_token().await?;
    let before = world.served.api_requests();
    let github = |live: &live::Live| live.github().map(live::github::GitHub::counters);
    let github_before = github(&live_for_figures);
    let window = Instant::now();
    let summary = format!("http://{addr}/api/summary");
    let provisioning = format!("http://{addr}/api/provisioning");
    let rate = options.rate;
    let reports = [
        (
            "GET /api/summary, back to back".to_owned(),
            phase(&summary, false, 0, &token, options).await?,
        ),
        (
            format!("GET /api/summary at {rate} requests/s"),
            phase(&summary, false, rate, &token, options).await?,
        ),
        (
            format!("GET /api/summary with If-None-Match at {rate} requests/s"),
            phase(&summary, true, rate, &token, options).await?,
        ),
        (
            "GET /api/provisioning, back to back".to_owned(),
            phase(&provisioning, false, 0, &token, options).await?,
        ),
    ];
    let observe = Duration::from_secs(options.observe);
    if let Some(rest) = observe.checked_sub(window.elapsed()) {
        eprintln!(
            "observing the Kubernetes API requests for {} s more…",
            rest.as_secs()
        );
        tokio::time::sleep(rest).await;
    }
    let minutes = window.elapsed().as_secs_f64() / 60.0;
    let (rebuilds, last_rebuild) = live_for_figures.rebuilds();
    let after = world.served.api_requests();
    let github_after = github(&live_for_figures);
    server.abort();

    println!(
        "{services} services derived; /api/summary {:.2} MB of JSON, /api/provisioning {:.2} MB; {} connections from a second process, {} s per phase",
        summary_bytes as f64 / 1e6,
        provisioning_bytes as f64 / 1e6,
        options.connections,
        options.seconds
    );
    for (what, report) in &reports {
        print_phase(what, report, options.seconds);
    }
    println!(
        "Tower had read the platform {:.1} s after start; {rebuilds} rebuilds since (the last took {:.0} ms)",
        ready_after.as_secs_f64(),
        last_rebuild.as_secs_f64() * 1000.0
    );
    for (cluster, now) in &after {
        let then = before.get(cluster).copied().unwrap_or_default();
        println!(
            "Kubernetes API requests per minute over {:.1} min from ready, cluster {cluster}: LIST {:.1}, WATCH {:.1}, GET {:.1}, other {:.1}",
            minutes,
            (now.list - then.list) as f64 / minutes,
            (now.watch - then.watch) as f64 / minutes,
            (now.get - then.get) as f64 / minutes,
            (now.other - then.other) as f64 / minutes,
        );
        anyhow::ensure!(
            now.writes == 0,
            "Tower asked cluster {cluster} to write {} times",
            now.writes
        );
    }
    println!("writes Tower asked of the clusters: 0 (each would have been refused with 405)");
    if let (Some(then), Some(now)) = (github_before, github_after) {
        // The pollers' repeat reads of pull requests and files, with ETags.
        let asked = now.requests - then.requests;
        let not_modified = now.not_modified - then.not_modified;
        println!(
            "GitHub requests over {minutes:.1} min from ready: {asked}, of which {not_modified} answered 304 Not Modified ({:.1} %; no rate limit spent)",
            if asked == 0 { 0.0 } else { not_modified as f64 * 100.0 / asked as f64 }
        );
    }
    Ok(())
}
