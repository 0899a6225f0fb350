//! `cargo bench -p tower-backend --bench fleet_scale`: one Tower, a 10,000-app fleet, 100
//! people watching.
//!
//! This process runs the simulated platform — `SteadyFleet::sized`: `--apps` apps (10,000)
//! across dev, staging and prod on three clusters, each releasing on its own cadence, so a
//! few objects change every second — and `--viewers` viewers (100). Tower runs apart, as
//! `tower serve` against the world's `tower.yaml` in a child process, so its memory and CPU
//! are its own. Each viewer is what an open fleet page does: it holds `/api/events` open and,
//! on every `change` event, fetches `/api/fleet` again with the `ETag` it has
//! (`Accept-Encoding: br`, signed in as the simulated Backstage's guest).
//!
//! Printed, in this order:
//! - time from Tower's start to its first complete answer (`/readyz` ready, then `/api/fleet`
//!   naming every app);
//! - Tower's resident memory, and that divided by the objects the clusters hold (what one
//!   cached object costs, everything else Tower holds included);
//! - change → event at each viewer: `--rounds` times (20), 3 s apart, a marked change is made
//!   to one app's prod Application on the control plane (a different app each time) and each
//!   viewer's wait for the first `change` event naming it is timed from when the change was
//!   in the cluster, then its refetch of `/api/fleet` too: p50/p95/max over all viewers and
//!   rounds;
//! - `/api/activity` and `/api/dora` (the fleet's week, worked out on first demand): how
//!   long each took and its size;
//! - `/api/fleet`: its size as the viewers receive it (brotli), and the p50/p99 of every
//!   fetch the viewers made;
//! - Tower's CPU over `--steady` seconds (30) with the viewers connected and only the
//!   fleet's own trickle of changes;
//! - Kubernetes API requests per minute per cluster from ready to the end (LIST, WATCH,
//!   GET), and that Tower asked for no write.
//!
//! Options (after `--`): `--apps N` (10000), `--viewers V` (100), `--rounds R` (20),
//! `--steady S` (30), `--tick S` (2: seconds between the simulator's ticks).

use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::Context as _;
use tokio::io::AsyncBufReadExt as _;
use tower_backend::demo;

#[derive(Debug)]
struct Options {
    apps: usize,
    viewers: usize,
    rounds: usize,
    steady: u64,
    tick: f64,
}

fn options() -> anyhow::Result<Options> {
    let mut options = Options {
        apps: 10_000,
        viewers: 100,
        rounds: 20,
        steady: 30,
        tick: 2.0,
    };
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut value = || args.next().with_context(|| format!("{arg} needs a value"));
        match arg.as_str() {
            "--apps" => options.apps = value()?.parse()?,
            "--viewers" => options.viewers = value()?.parse()?,
            "--rounds" => options.rounds = value()?.parse()?,
            "--steady" => options.steady = value()?.parse()?,
            "--tick" => options.tick = value()?.parse()?,
            // cargo bench passes `--bench`; libtest filters are not ours.
            _ => {}
        }
    }
    Ok(options)
}

fn main() -> anyhow::Result<()> {
    let options = options()?;
    tokio::runtime::Runtime::new()?.block_on(measure(&options))
}

/// What the viewers saw.
#[derive(Debug, Default)]
struct Seen {
    /// Per marked change (round), each viewer's wait for its event, and for the refetch
    /// after it.
    events: Vec<Duration>,
    refetched: Vec<Duration>,
    /// Every `/api/fleet` fetch: latency, bytes on the wire, whether it was a 304.
    fetches: Vec<(Duration, usize, bool)>,
    failures: u64,
}

/// The marked changes so far: each Application's name and when it was changed.
type Marks = Arc<Mutex<std::collections::HashMap<String, Instant>>>;

fn percentile(mut values: Vec<Duration>, q: f64) -> Duration {
    values.sort_unstable();
    #[allow(
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss,
        clippy::cast_precision_loss
    )]
    let index = ((values.len() as f64 - 1.0) * q).round() as usize;
    values.get(index).copied().unwrap_or_default()
}

fn ms(d: Duration) -> String {
    format!("{:.0} ms", d.as_secs_f64() * 1000.0)
}

/// `/proc/<pid>/status`'s `VmRSS`, in bytes.
fn resident(pid: u32) -> anyhow::Result<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))?;
    let kb: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next())
        .context("no VmRSS")?
        .parse()?;
    Ok(kb * 1024)
}

/// CPU seconds `pid` has used (`utime + stime` of `/proc/<pid>/stat`, at 100 ticks/s).
fn cpu_seconds(pid: u32) -> anyhow::Result<f64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat"))?;
    // The fields after the command name (which may hold spaces) end with `)`.
    let rest = stat.rsplit_once(')').context("no command in stat")?.1;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks: u64 = fields
        .get(11)
        .zip(fields.get(12))
        .context("short stat")
        .and_then(|(u, s)| Ok(u.parse::<u64>()? + s.parse::<u64>()?))?;
    #[allow(clippy::cast_precision_loss)]
    Ok(ticks as f64 / 100.0)
}

async fn measure(options: &Options) -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let start = tower_backend::clock::wall();
    let fleet = hangar_sim::stories::fleet::SteadyFleet::sized(1, start, options.apps);
    let names: Vec<String> = fleet.apps.iter().map(|a| a.name.clone()).collect();
    let port = std::net::TcpListener::bind("127.0.0.1:0")?.local_addr()?;
    eprintln!(
        "starting the simulated platform with {} apps…",
        options.apps
    );
    let began = Instant::now();
    let world = demo::start_world_ticking(
        demo::World::Custom {
            start,
            stories: fleet.into_stories(),
            clusters: vec!["staging".to_owned()],
        },
        1.0,
        dir.path(),
        None,
        port,
        Duration::from_secs_f64(options.tick),
    )
    .await?;
    let objects: usize = world
        .platform
        .clusters()
        .map(|(_, store)| store.objects().len())
        .sum();
    eprintln!(
        "{objects} objects in the clusters after {:.1} s; starting Tower…",
        began.elapsed().as_secs_f64()
    );

    // Tower, apart.
    let mut tower = tokio::process::Command::new(env!("CARGO_BIN_EXE_tower"))
        .args(["serve", "--config"])
        .arg(dir.path().join("tower.yaml"))
        .args(["--listen", &port.to_string()])
        .env("RUST_LOG", "warn,tower_http=off")
        .stdout(Stdio::piped())
        .kill_on_drop(true)
        .spawn()?;
    let pid = tower.id().context("Tower exited at once")?;
    let started = Instant::now();
    let mut lines = tokio::io::BufReader::new(tower.stdout.take().context("no stdout")?).lines();
    tokio::time::timeout(Duration::from_secs(60), async {
        while let Some(line) = lines.next_line().await? {
            if line.starts_with("Tower is running at") {
                return anyhow::Ok(());
            }
        }
        anyhow::bail!("Tower ended before saying where it runs")
    })
    .await
    .context("Tower did not start listening within 60 s")??;
    let base = format!("http://{port}");
    let token = world.guest_token().await?;
    let client = reqwest::Client::builder()
        .default_headers({
            let mut h = reqwest::header::HeaderMap::new();
            h.insert(
                reqwest::header::AUTHORIZATION,
                format!("Bearer {token}").parse()?,
            );
            h.insert(reqwest::header::ACCEPT_ENCODING, "br".parse()?);
            h
        })
        .pool_max_idle_per_host(options.viewers * 2)
        .build()?;

    // The first complete answer: ready, and a fleet naming every app.
    let deadline = Instant::now() + Duration::from_secs(600);
    loop {
        anyhow::ensure!(
            Instant::now() < deadline,
            "Tower was not ready within 10 minutes"
        );
        let ready = client
            .get(format!("{base}/readyz"))
            .send()
            .await
            .ok()
            .filter(|r| r.status().is_success());
        if ready.is_some() {
            let fleet = client
                .get(format!("{base}/api/fleet"))
                .header(reqwest::header::ACCEPT_ENCODING, "identity")
                .send()
                .await?;
            if fleet.status().is_success() {
                let fleet: tower_shared::fleet::Fleet = fleet.json().await?;
                if fleet.apps.len() >= options.apps {
                    break;
                }
            }
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let first_answer = started.elapsed();
    let rss_ready = resident(pid)?;
    let before = world.served.api_requests();
    let window = Instant::now();

    // The viewers.
    let seen = Arc::new(Mutex::new(Seen::default()));
    let marks: Marks = Arc::default();
    let fleet_url = format!("{base}/api/fleet");
    let events_url = format!("{base}/api/events");
    let viewers: Vec<_> = (0..options.viewers)
        .map(|_| {
            let (client, seen, marks) = (client.clone(), Arc::clone(&seen), Arc::clone(&marks));
            let (fleet_url, events_url) = (fleet_url.clone(), events_url.clone());
            tokio::spawn(async move { view(client, &events_url, &fleet_url, seen, marks).await })
        })
        .collect();
    // Let every viewer open its stream and read the fleet once.
    tokio::time::sleep(Duration::from_secs(5)).await;

    // Steady: only the fleet's own changes.
    let cpu_before = cpu_seconds(pid)?;
    let steady_from = Instant::now();
    tokio::time::sleep(Duration::from_secs(options.steady)).await;
    let cpu = (cpu_seconds(pid)? - cpu_before) / steady_from.elapsed().as_secs_f64();

    // Marked changes: one app's prod Application turns Degraded with a round number.
    for round in 0..options.rounds {
        let app = &names[(round * 37 + 1) % names.len()];
        let name = format!("{app}-prod");
        // Looked up by key: copying the cluster's every object to find it would be the
        // bench's own load inside the window it measures.
        let key = hangar_sim::store::key_of(&serde_json::json!({
            "apiVersion": "argoproj.io/v1alpha1", "kind": "Application",
            "metadata": {"name": name, "namespace": "argocd"}}))
        .context("no key for an Application")?;
        let mut application = world
            .platform
            .store("dev")
            .context("no dev cluster")?
            .get(&key)
            .context("no prod Application")?;
        application["status"]["health"]["status"] = "Degraded".into();
        application["status"]["health"]["message"] = format!("bench round {round}").into();
        for stamped in ["resourceVersion", "uid", "creationTimestamp"] {
            if let Some(meta) = application["metadata"].as_object_mut() {
                meta.remove(stamped);
            }
        }
        // The change is made (and the world ticked) on a thread of its own: the viewers'
        // tasks go on meanwhile.
        let platform = Arc::clone(&world.platform);
        tokio::task::spawn_blocking(move || platform.set_object("dev", application)).await?;
        marks
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .insert(name, Instant::now());
        tokio::time::sleep(Duration::from_secs(3)).await;
    }
    // Late events still count.
    tokio::time::sleep(Duration::from_secs(10)).await;
    let minutes = window.elapsed().as_secs_f64() / 60.0;
    let after = world.served.api_requests();
    let rss_end = resident(pid)?;
    // How often Tower derived its views again, and what the last one cost (`/metrics`).
    let metrics = client
        .get(format!("{base}/metrics"))
        .header(reqwest::header::ACCEPT_ENCODING, "identity")
        .send()
        .await?
        .text()
        .await?;
    let metric = |name: &str| {
        metrics
            .lines()
            .find_map(|l| l.strip_prefix(name)?.strip_prefix(' '))
            .and_then(|v| v.trim().parse::<f64>().ok())
    };
    let (rebuilds, last_rebuild) = (
        metric("tower_deriver_rebuilds"),
        metric("tower_deriver_last_rebuild_seconds"),
    );
    // The fleet page's other answers: the recent activity (kept with every derivation) and
    // the fleet's DORA figures (worked out across every app on first demand).
    let timed = |path: &'static str| {
        let client = client.clone();
        let url = format!("{base}{path}");
        async move {
            let asked = Instant::now();
            let response = client.get(url).send().await?;
            anyhow::ensure!(
                response.status().is_success(),
                "{path}: {}",
                response.status()
            );
            let bytes = response.bytes().await?.len();
            anyhow::Ok((asked.elapsed(), bytes))
        }
    };
    let activity = timed("/api/activity").await?;
    let dora_first = timed("/api/dora").await?;
    let dora_again = timed("/api/dora").await?;
    for viewer in viewers {
        viewer.abort();
    }
    tower.kill().await.ok();

    let seen = std::mem::take(
        &mut *seen
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner),
    );
    let expected = options.rounds * options.viewers;
    println!(
        "fleet: {} apps on 3 clusters, {objects} objects; {} viewers from this process, Tower in its own; the run took {:.0} s",
        options.apps,
        options.viewers,
        began.elapsed().as_secs_f64()
    );
    println!(
        "first complete answer {:.1} s after Tower started",
        first_answer.as_secs_f64()
    );
    #[allow(clippy::cast_precision_loss)]
    let per_object = |rss: u64| rss as f64 / objects.max(1) as f64;
    println!(
        "Tower's resident memory: {:.0} MB when ready ({:.0} bytes per object held), {:.0} MB at the end ({:.0} bytes per object)",
        rss_ready as f64 / 1e6,
        per_object(rss_ready),
        rss_end as f64 / 1e6,
        per_object(rss_end)
    );
    println!(
        "change → event at each viewer ({} of {expected} seen): p50 {}, p95 {}, max {}; with the refetch of /api/fleet: p50 {}, p95 {}, max {}",
        seen.events.len(),
        ms(percentile(seen.events.clone(), 0.5)),
        ms(percentile(seen.events.clone(), 0.95)),
        ms(percentile(seen.events.clone(), 1.0)),
        ms(percentile(seen.refetched.clone(), 0.5)),
        ms(percentile(seen.refetched.clone(), 0.95)),
        ms(percentile(seen.refetched.clone(), 1.0)),
    );
    let full: Vec<&(Duration, usize, bool)> = seen.fetches.iter().filter(|f| !f.2).collect();
    let size = full.iter().map(|f| f.1).max().unwrap_or(0);
    let latencies: Vec<Duration> = seen.fetches.iter().map(|f| f.0).collect();
    println!(
        "/api/fleet: {size} bytes brotli; {} fetches ({} full, {} not modified): p50 {}, p99 {}; {} failures",
        seen.fetches.len(),
        full.len(),
        seen.fetches.len() - full.len(),
        ms(percentile(latencies.clone(), 0.5)),
        ms(percentile(latencies, 0.99)),
        seen.failures
    );
    println!(
        "Tower's CPU over {} s steady with the viewers connected: {:.0} % of one core; {} rebuilds of its views, the last took {}",
        options.steady,
        cpu * 100.0,
        rebuilds.map_or_else(|| "?".to_owned(), |n| format!("{n:.0}")),
        last_rebuild.map_or_else(|| "?".to_owned(), |s| ms(Duration::from_secs_f64(s)))
    );
    println!(
        "/api/activity: {} bytes brotli in {}; /api/dora (the fleet's week): first answer in {} ({} bytes brotli), asked again {}",
        activity.1,
        ms(activity.0),
        ms(dora_first.0),
        dora_first.1,
        ms(dora_again.0)
    );
    for (cluster, now) in &after {
        let then = before.get(cluster).copied().unwrap_or_default();
        #[allow(clippy::cast_precision_loss)]
        let per_minute = |a: u64, b: u64| (a - b) as f64 / minutes;
        println!(
            "Kubernetes API requests per minute over {minutes:.1} min from ready, cluster {cluster}: LIST {:.1}, WATCH {:.1}, GET {:.1}",
            per_minute(now.list, then.list),
            per_minute(now.watch, then.watch),
            per_minute(now.get, then.get),
        );
        anyhow::ensure!(
            now.writes == 0,
            "Tower asked {cluster} to write {} times",
            now.writes
        );
    }
    Ok(())
}

/// One viewer: `/api/events` held open; each `change` event refetches the fleet with its
/// `ETag`. The first change naming a marked Application is timed from when it was made.
async fn view(
    client: reqwest::Client,
    events_url: &str,
    fleet_url: &str,
    seen: Arc<Mutex<Seen>>,
    marks: Marks,
) {
    let record = |f: &mut dyn FnMut(&mut Seen)| {
        f(&mut seen
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner));
    };
    let mut etag: Option<String> = None;
    let fetch = |etag: Option<String>| {
        let client = client.clone();
        async move {
            let begun = Instant::now();
            let mut request = client.get(fleet_url);
            if let Some(tag) = &etag {
                request = request.header(reqwest::header::IF_NONE_MATCH, tag);
            }
            let response = request.send().await.ok()?;
            let status = response.status();
            let tag = response
                .headers()
                .get(reqwest::header::ETAG)
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned);
            let bytes = response.bytes().await.ok()?;
            let not_modified = status == reqwest::StatusCode::NOT_MODIFIED;
            (status.is_success() || not_modified)
                .then(|| (begun.elapsed(), bytes.len(), not_modified, tag.or(etag)))
        }
    };
    match fetch(None).await {
        Some((took, size, nm, tag)) => {
            record(&mut |s| s.fetches.push((took, size, nm)));
            etag = tag;
        }
        None => record(&mut |s| s.failures += 1),
    }
    let Ok(mut response) = client.get(events_url).send().await else {
        record(&mut |s| s.failures += 1);
        return;
    };
    let mut buffer = String::new();
    let mut timed: std::collections::HashSet<String> = std::collections::HashSet::new();
    while let Ok(Some(chunk)) = response.chunk().await {
        buffer.push_str(&String::from_utf8_lossy(&chunk));
        while let Some(end) = buffer.find("\n\n") {
            let message: String = buffer.drain(..end + 2).collect();
            let Some(data) = message.lines().find_map(|l| l.strip_prefix("data:")) else {
                continue;
            };
            if !message.contains("event: change") && !message.contains("event:change") {
                continue;
            }
            let arrived = Instant::now();
            let named = serde_json::from_str::<serde_json::Value>(data.trim())
                .ok()
                .and_then(|c| c["name"].as_str().map(str::to_owned));
            let hit = named.filter(|n| !timed.contains(n)).and_then(|name| {
                let marks = marks
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner);
                let at = marks.get(&name).copied();
                at.map(|at| (name, at))
            });
            match fetch(etag.clone()).await {
                Some((took, size, nm, tag)) => {
                    record(&mut |s| s.fetches.push((took, size, nm)));
                    etag = tag;
                    if let Some((name, at)) = &hit {
                        let (event, refetched) = (arrived - *at, Instant::now() - *at);
                        record(&mut |s| {
                            s.events.push(event);
                            s.refetched.push(refetched);
                        });
                        timed.insert(name.clone());
                    }
                }
                None => record(&mut |s| s.failures += 1),
            }
        }
    }
}
