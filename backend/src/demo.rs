//! `tower demo`'s world: the simulated Hangar platform, started in-process.

use std::path::Path;

use anyhow::Context as _;
use chrono::{DateTime, Utc};
use hangar_sim::stories::scenario::Scenario;
use hangar_sim::stories::Story;

/// What the demo's world is made of.
#[derive(Debug)]
pub enum World {
    /// The demo's stories from `start`, with the steady fleet chosen by `seed`.
    Stories { start: DateTime<Utc>, seed: u64 },
    /// A captured world (`--scenario FILE`).
    Scenario(Scenario),
}

/// Reads `--scenario FILE`, naming the file and the problem when it is not a snapshot.
pub fn read_scenario(path: &Path) -> anyhow::Result<Scenario> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    Scenario::parse(&text).with_context(|| format!("{} is not a snapshot file", path.display()))
}

/// Starts the simulated Hangar platform (clusters `dev` and `prod`, plus any a scenario
/// uses; world time running at `speed`), prints each API's address and writes a kubeconfig
/// for the clusters (path printed). The platform runs until the returned value is dropped.
pub async fn start_world(
    world: World,
    speed: f64,
    kubeconfig: Option<std::path::PathBuf>,
) -> anyhow::Result<(
    std::sync::Arc<hangar_sim::platform::Platform>,
    hangar_sim::platform::Served,
)> {
    use std::io::Write;

    let mut clusters = vec!["dev", "prod"];
    let (now, stories): (DateTime<Utc>, Vec<Box<dyn Story>>) = match &world {
        World::Stories { start, seed } => (*start, hangar_sim::stories::demo_world(*start, *seed)),
        World::Scenario(scenario) => {
            clusters.extend(scenario.clusters());
            (scenario.now, vec![Box::new(scenario.clone())])
        }
    };
    clusters.sort_unstable();
    clusters.dedup();
    let clock = hangar_sim::clock::Clock::new(now, speed);
    let platform = std::sync::Arc::new(hangar_sim::platform::Platform::new(
        clock, &clusters, stories,
    ));
    let served = std::sync::Arc::clone(&platform)
        .serve(
            hangar_sim::kube_api::Config::default(),
            std::time::Duration::from_millis(500),
        )
        .await?;
    let path = match kubeconfig {
        Some(path) => path,
        None => {
            let dir = std::env::temp_dir().join(format!("tower-demo-{}", std::process::id()));
            std::fs::create_dir_all(&dir)?;
            dir.join("kubeconfig")
        }
    };
    served.write_kubeconfig(&path)?;
    let mut out = std::io::stdout().lock();
    for (cluster, addr) in &served.clusters {
        writeln!(out, "Simulated cluster {cluster}: http://{addr}")?;
    }
    writeln!(out, "Simulated GitHub API: http://{}", served.github)?;
    writeln!(out, "Simulated Argo CD API: http://{}", served.argocd)?;
    writeln!(
        out,
        "Simulated Backstage: http://{} (static token {})",
        served.backstage,
        hangar_sim::backstage::STATIC_TOKEN
    )?;
    writeln!(
        out,
        "Kubeconfig for the simulated clusters: {}",
        path.display()
    )?;
    out.flush()?;
    Ok((platform, served))
}
