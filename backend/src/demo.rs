//! The built-in data set `tower demo` serves until the simulated platform lands.

use chrono::{DateTime, Utc};
use serde_json::Value;
use tower_shared::fleet::Fleet;
use tower_shared::snapshot::Snapshot;

const FLEET_JSON: &str = include_str!("../../fixtures/demo/fleet.json");
const SNAPSHOT_JSON: &str = include_str!("../../fixtures/demo/snapshot.json");

/// The demo fleet, stamped as generated at `now`.
pub fn fleet(now: DateTime<Utc>) -> Result<Fleet, serde_json::Error> {
    let mut fleet: Fleet = serde_json::from_str(FLEET_JSON)?;
    fleet.generated_at = now;
    Ok(fleet)
}

/// The demo snapshot (an ECS service with a success, an unfixed failure and a deploy in
/// progress; a Lambda function), with every timestamp moved so that its `now` is `now`.
pub fn snapshot(now: DateTime<Utc>) -> anyhow::Result<Snapshot> {
    let mut value: Value = serde_json::from_str(SNAPSHOT_JSON)?;
    let captured = value["now"]
        .as_str()
        .and_then(|t| DateTime::parse_from_rfc3339(t).ok())
        .ok_or_else(|| anyhow::anyhow!("the demo snapshot has no `now`"))?;
    shift_times(&mut value, now - captured.with_timezone(&Utc));
    Ok(Snapshot::from_json(&value.to_string())?)
}

/// Starts the simulated Hangar platform (clusters `dev` and `prod`, the demo's stories,
/// world time from `now` at `speed`), prints each cluster's address and writes a kubeconfig
/// for them (path printed). The platform runs until the returned value is dropped.
pub async fn start_world(
    now: DateTime<Utc>,
    speed: f64,
    kubeconfig: Option<std::path::PathBuf>,
) -> anyhow::Result<hangar_sim::platform::Served> {
    use std::io::Write;

    let clock = hangar_sim::clock::Clock::new(now, speed);
    let platform = std::sync::Arc::new(hangar_sim::platform::Platform::new(
        clock,
        &["dev", "prod"],
        hangar_sim::stories::demo_world(now),
    ));
    let served = platform
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
    writeln!(
        out,
        "Kubeconfig for the simulated clusters: {}",
        path.display()
    )?;
    out.flush()?;
    Ok(served)
}

/// Adds `by` to every RFC 3339 timestamp string in `value`.
fn shift_times(value: &mut Value, by: chrono::Duration) {
    match value {
        Value::String(text) => {
            if let Ok(time) = DateTime::parse_from_rfc3339(text) {
                let shifted = time.with_timezone(&Utc) + by;
                *text = shifted.to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(|v| shift_times(v, by)),
        Value::Object(map) => map.values_mut().for_each(|v| shift_times(v, by)),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tower_shared::cloud::{derive_cloud_deploys, CloudTarget};
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

    #[test]
    fn demo_snapshot_is_moved_to_now() {
        let now: DateTime<Utc> = "2027-01-15T12:00:00Z".parse().unwrap();
        let snapshot = snapshot(now).unwrap();
        assert_eq!(snapshot.now, now);
        let deploys = derive_cloud_deploys(&snapshot, "orders-api");
        assert_eq!(deploys.target, Some(CloudTarget::AwsEcs));
        let running = deploys.in_progress.unwrap();
        // Two minutes before the fixture's now, so two minutes before ours.
        assert_eq!(
            running.started_at.unwrap(),
            "2027-01-15T11:58:00Z".parse::<DateTime<Utc>>().unwrap()
        );
        assert!(deploys.latest_failure.is_some() && deploys.last_success.is_some());
    }
}
