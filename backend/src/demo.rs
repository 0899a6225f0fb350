//! The built-in data set `tower demo` serves until the simulated Hangar platform lands.

use chrono::{DateTime, Utc};
use tower_shared::fleet::Fleet;

const FLEET_JSON: &str = include_str!("../../fixtures/demo/fleet.json");

/// The demo fleet, stamped as generated at `now`.
pub fn fleet(now: DateTime<Utc>) -> Result<Fleet, serde_json::Error> {
    let mut fleet: Fleet = serde_json::from_str(FLEET_JSON)?;
    fleet.generated_at = now;
    Ok(fleet)
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
