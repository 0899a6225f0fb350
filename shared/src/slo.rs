//! Service level objectives and error budgets, as the SRE workbook computes them
//! ("Alerting on SLOs", multiwindow, multi-burn-rate alerts).
//!
//! An objective of 99.9 % allows an error ratio of 0.1 % — the error budget. Over a window,
//! the **burn rate** is the error ratio seen divided by the budget: 1 spends the budget in
//! exactly the SLO period (30 days), 14.4 spends 2 % of it in one hour. The budget **left**
//! over the period is 1 − the period's burn rate. The workbook's alerts, each needing its
//! long *and* short window over the threshold (so an alert stops soon after the burning
//! does): page at 14.4 over 1 h and 5 min, page at 6 over 6 h and 30 min, ticket at 1 over
//! 3 days and 6 h. A window Prometheus did not answer for is unknown, never zero: an alert
//! needing it is not raised, and says why.

use std::borrow::Cow;

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// The error ratios over the windows the alerts read (`None`: not known).
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Ratios {
    pub m5: Option<f64>,
    pub m30: Option<f64>,
    pub h1: Option<f64>,
    pub h6: Option<f64>,
    pub d3: Option<f64>,
    pub d30: Option<f64>,
}

/// How loudly an alert asks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    Page,
    Ticket,
}

impl Severity {
    /// As the wire says it: `page`, `ticket`.
    pub fn word(self) -> &'static str {
        match self {
            Severity::Page => "page",
            Severity::Ticket => "ticket",
        }
    }
}

/// One of the workbook's alerts (a constant of [`ALERTS`]).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BurnAlert {
    pub severity: Severity,
    /// The burn rate both windows must exceed.
    pub threshold: f64,
    /// The long and the short window, in words (`1h`, `5m`).
    pub long: Cow<'static, str>,
    pub short: Cow<'static, str>,
}

/// The workbook's three alerts.
pub const ALERTS: [BurnAlert; 3] = [
    BurnAlert {
        severity: Severity::Page,
        threshold: 14.4,
        long: Cow::Borrowed("1h"),
        short: Cow::Borrowed("5m"),
    },
    BurnAlert {
        severity: Severity::Page,
        threshold: 6.0,
        long: Cow::Borrowed("6h"),
        short: Cow::Borrowed("30m"),
    },
    BurnAlert {
        severity: Severity::Ticket,
        threshold: 1.0,
        long: Cow::Borrowed("3d"),
        short: Cow::Borrowed("6h"),
    },
];

/// The burn rate of `error_ratio` against `objective` (e.g. 0.999); `None` when the
/// objective leaves no budget (1 or more) or the ratio is unknown.
pub fn burn_rate(error_ratio: Option<f64>, objective: f64) -> Option<f64> {
    let budget = 1.0 - objective;
    (budget > 0.0)
        .then(|| error_ratio.map(|r| r / budget))
        .flatten()
}

/// The share of the period's budget left (1 − the period's burn rate; below 0 when
/// overspent); `None` when unknown.
pub fn budget_left(period_ratio: Option<f64>, objective: f64) -> Option<f64> {
    burn_rate(period_ratio, objective).map(|b| 1.0 - b)
}

/// What one alert says now (the Runtime tab's alerts, on the wire as they are here).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AlertState {
    #[serde(flatten)]
    pub alert: BurnAlert,
    pub long_burn: Option<f64>,
    pub short_burn: Option<f64>,
    /// Both windows over the threshold; `None` when a window is unknown.
    pub firing: Option<bool>,
    /// The alert in words: `page at 14.4× over 1h and 5m: burning 0.2× and 0.3× — quiet`.
    pub said: String,
}

/// The workbook's alerts over `ratios` against `objective`.
pub fn alerts(ratios: &Ratios, objective: f64) -> [AlertState; 3] {
    let pick = |window: &str| match window {
        "5m" => ratios.m5,
        "30m" => ratios.m30,
        "1h" => ratios.h1,
        "6h" => ratios.h6,
        "3d" => ratios.d3,
        _ => ratios.d30,
    };
    ALERTS.map(|alert| {
        let long_burn = burn_rate(pick(&alert.long), objective);
        let short_burn = burn_rate(pick(&alert.short), objective);
        let firing = match (long_burn, short_burn) {
            (Some(l), Some(s)) => Some(l > alert.threshold && s > alert.threshold),
            _ => None,
        };
        let burn = |b: Option<f64>| b.map_or_else(|| "unknown".to_owned(), |b| format!("{b:.1}×"));
        let state = match firing {
            Some(true) => "firing",
            Some(false) => "quiet",
            None => "cannot tell",
        };
        let said = format!(
            "{} at {}× over {} and {}: burning {} and {} — {state}",
            alert.severity.word(),
            alert.threshold,
            alert.long,
            alert.short,
            burn(long_burn),
            burn(short_burn)
        );
        AlertState {
            alert,
            long_burn,
            short_burn,
            firing,
            said,
        }
    })
}

/// What Tower asks Prometheus for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Measure {
    /// Failed requests ÷ all requests (5xx by default).
    ErrorRatio,
    LatencyP95,
    LatencyP99,
}

impl Measure {
    pub fn key(self) -> &'static str {
        match self {
            Self::ErrorRatio => "errorRatio",
            Self::LatencyP95 => "latencyP95",
            Self::LatencyP99 => "latencyP99",
        }
    }
}

/// One query: a measure over a window, at one moment (`range: false`) or as a series over
/// [`CHART_SPAN`] every [`CHART_STEP`] (each point over `window`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Asked {
    pub measure: Measure,
    pub window: &'static str,
    pub range: bool,
}

impl Asked {
    /// Its key in [`Readings`]: `errorRatio:1h`, or `errorRatio:series`.
    pub fn key(&self) -> String {
        if self.range {
            format!("{}:series", self.measure.key())
        } else {
            format!("{}:{}", self.measure.key(), self.window)
        }
    }
}

const fn at(measure: Measure, window: &'static str) -> Asked {
    Asked {
        measure,
        window,
        range: false,
    }
}

/// Every query per environment: the error ratio over the burn-rate alerts' windows and the
/// shown ones, the latencies over the shown ones, and the two charted series.
pub const ASKED: [Asked; 15] = [
    at(Measure::ErrorRatio, "5m"),
    at(Measure::ErrorRatio, "30m"),
    at(Measure::ErrorRatio, "1h"),
    at(Measure::ErrorRatio, "6h"),
    at(Measure::ErrorRatio, "24h"),
    at(Measure::ErrorRatio, "3d"),
    at(Measure::ErrorRatio, "30d"),
    at(Measure::LatencyP95, "1h"),
    at(Measure::LatencyP95, "24h"),
    at(Measure::LatencyP95, "30d"),
    at(Measure::LatencyP99, "1h"),
    at(Measure::LatencyP99, "24h"),
    at(Measure::LatencyP99, "30d"),
    Asked {
        measure: Measure::ErrorRatio,
        window: "5m",
        range: true,
    },
    Asked {
        measure: Measure::LatencyP99,
        window: "5m",
        range: true,
    },
];

/// What an environment's state is judged by ([`crate::state`]): the error ratio over the
/// burn-rate alerts' windows and the month, the latencies over the last hour — figures
/// only, no series.
pub const JUDGED: [Asked; 8] = [
    at(Measure::ErrorRatio, "5m"),
    at(Measure::ErrorRatio, "30m"),
    at(Measure::ErrorRatio, "1h"),
    at(Measure::ErrorRatio, "6h"),
    at(Measure::ErrorRatio, "3d"),
    at(Measure::ErrorRatio, "30d"),
    at(Measure::LatencyP95, "1h"),
    at(Measure::LatencyP99, "1h"),
];

/// What Prometheus answered for one environment, by [`Asked::key`]: a figure, or a series
/// of `(unix seconds, value)`. Latencies are in seconds, as histograms record them. A key
/// that is absent was not answered (or had no series); NaN answers are left out.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Readings {
    #[serde(default)]
    pub figures: BTreeMap<String, f64>,
    #[serde(default)]
    pub series: BTreeMap<String, Vec<(i64, f64)>>,
}

impl Readings {
    /// The figure of `measure` over `window`, when Prometheus answered it.
    pub fn figure(&self, measure: Measure, window: &str) -> Option<f64> {
        self.figures
            .get(&format!("{}:{window}", measure.key()))
            .copied()
    }

    /// The error ratios over the burn-rate alerts' windows.
    pub fn error_ratios(&self) -> Ratios {
        let r = |w| self.figure(Measure::ErrorRatio, w);
        Ratios {
            m5: r("5m"),
            m30: r("30m"),
            h1: r("1h"),
            h6: r("6h"),
            d3: r("3d"),
            d30: r("30d"),
        }
    }

    /// Keeps `older`'s answers where this has none (Prometheus answered some queries only).
    pub fn or_older(mut self, older: &Readings) -> Readings {
        for (key, value) in &older.figures {
            self.figures.entry(key.clone()).or_insert(*value);
        }
        for (key, value) in &older.series {
            self.series
                .entry(key.clone())
                .or_insert_with(|| value.clone());
        }
        self
    }
}

/// Seconds as whole milliseconds: `890 ms`.
pub fn millis(seconds: f64) -> String {
    format!("{:.0} ms", seconds * 1000.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: Option<f64>, b: f64) -> bool {
        a.is_some_and(|a| (a - b).abs() < 1e-9)
    }

    #[test]
    fn burn_rates_and_budget_worked_by_hand() {
        // 99.9 %: the budget is 0.1 %. 1.44 % errors over an hour burn at 14.4.
        assert!(close(burn_rate(Some(0.0144), 0.999), 14.4));
        // 0.05 % over 30 days: half the budget spent, half left.
        assert!(close(budget_left(Some(0.0005), 0.999), 0.5));
        // 0.3 % over 30 days: three budgets spent, two overspent.
        assert!(close(budget_left(Some(0.003), 0.999), -2.0));
        assert_eq!(burn_rate(Some(0.01), 1.0), None, "no budget to burn");
        assert_eq!(burn_rate(None, 0.999), None, "unknown is not zero");
    }

    #[test]
    fn an_alert_needs_its_long_and_short_window() {
        // A brief outage: 2 % errors in the last 5 minutes, 1.5 % over the hour (burn 20 and
        // 15, both over 14.4): page. Over 6 h 0.5 % (burn 5, under 6): the second page is
        // quiet; 3 days at 0.2 % (burn 2) and 6 h at burn 5: ticket.
        let ratios = Ratios {
            m5: Some(0.02),
            m30: Some(0.01),
            h1: Some(0.015),
            h6: Some(0.005),
            d3: Some(0.002),
            d30: Some(0.0004),
        };
        let [fast, slow, ticket] = alerts(&ratios, 0.999);
        assert_eq!(fast.firing, Some(true));
        assert!(close(fast.long_burn, 15.0) && close(fast.short_burn, 20.0));
        assert_eq!(slow.firing, Some(false));
        assert!(close(slow.long_burn, 5.0) && close(slow.short_burn, 10.0));
        assert_eq!(ticket.firing, Some(true));
        // The burning stopped 5 minutes ago: the short window clears the page at once.
        let stopped = Ratios {
            m5: Some(0.0),
            ..ratios
        };
        assert_eq!(alerts(&stopped, 0.999)[0].firing, Some(false));
        // Prometheus did not answer for the hour: that alert is unknown, not quiet.
        let unknown = Ratios { h1: None, ..ratios };
        assert_eq!(alerts(&unknown, 0.999)[0].firing, None);
    }
}
