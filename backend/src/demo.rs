//! The built-in data set `tower demo` serves until the simulated platform lands.

use chrono::{DateTime, Utc};
use tower_shared::fleet::Fleet;

const FLEET_JSON: &str = include_str!("../../fixtures/demo/fleet.json");

/// The demo fleet, stamped as generated at `now`.
pub fn fleet(now: DateTime<Utc>) -> Result<Fleet, serde_json::Error> {
    let mut fleet: Fleet = serde_json::from_str(FLEET_JSON)?;
    fleet.generated_at = now;
    Ok(fleet)
}

/// Starts the simulated Hangar platform (clusters `dev` and `prod`, the demo's stories,
/// world time from `now` at `speed`), prints each cluster's address and writes a kubeconfig
/// for them (path printed). The platform runs until the returned value is dropped.
pub async fn start_world(
    now: DateTime<Utc>,
    speed: f64,
    kubeconfig: Option<std::path::PathBuf>,
) -> anyhow::Result<(
    std::sync::Arc<hangar_sim::platform::Platform>,
    hangar_sim::platform::Served,
)> {
    use std::io::Write;

    let clock = hangar_sim::clock::Clock::new(now, speed);
    let platform = std::sync::Arc::new(hangar_sim::platform::Platform::new(
        clock,
        &["dev", "prod"],
        hangar_sim::stories::demo_world(now),
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

#[cfg(test)]
mod tests {
    use super::*;
    use tower_shared::fleet::{attention, Severity};

    #[test]
    fn demo_fleet_parses_and_has_the_paused_canary() {
        let now = "2026-11-30T10:00:00Z".parse().unwrap();
        let fleet = fleet(now).unwrap();
        assert_eq!(fleet.generated_at, now);
        let flight = fleet.apps.iter().find(|a| a.name == "flight-api").unwrap();
        let prod = flight
            .cells
            .iter()
            .find(|c| c.environment == "prod")
            .unwrap();
        let a = attention(prod).unwrap();
        assert_eq!(a.severity, Severity::Attention);
        assert_eq!(a.reason, "Canary paused at 40% traffic");
    }
}
