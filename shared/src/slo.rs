//! Service level objectives and error budgets, as the SRE workbook computes them
//! ("Alerting on SLOs", multiwindow, multi-burn-rate alerts).
//!
//! An objective of 99.9 % allows an error ratio of 0.1 % — the error budget. Over a window,
//! the **burn rate** is the error ratio seen divided by the budget: 1 spends the budget in
//! exactly the SLO period ([`PERIOD_HOURS`], 30 days), 14.4 spends 2 % of a 30-day budget in
//! one hour. The budget **left** over the period is 1 − the period's burn rate.
//!
//! The workbook's alerts ([`TABLE`]) each name a share of the period's budget spent within a
//! long window, and need the long *and* a short window over the burn rate that spends it (so
//! an alert stops soon after the burning does): page on 2 % in 1 h (short window 5 min), page
//! on 5 % in 6 h (30 min), ticket on 10 % in 1 day (2 h), ticket on 10 % in 3 days (6 h). The
//! burn rate is that share × the period ÷ the long window — 14.4, 6, 3 and 1 for 30 days, and
//! as that arithmetic gives for another period ([`BurnAlert::for_period`]). A window
//! Prometheus did not answer for is unknown, never zero: an alert needing it is not raised,
//! and says why. Nor is one whose short window (and so its long one, which holds it) saw
//! fewer than [`MIN_REQUESTS`] requests: too few to judge.

use std::borrow::Cow;

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// A figure over each window the alerts read — the error ratio, or the count of requests
/// (`None`: not known).
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ByWindow {
    pub m5: Option<f64>,
    pub m30: Option<f64>,
    pub h1: Option<f64>,
    pub h2: Option<f64>,
    pub h6: Option<f64>,
    pub h24: Option<f64>,
    pub d3: Option<f64>,
    pub d30: Option<f64>,
}

impl ByWindow {
    /// The figure over `window`.
    fn over(&self, window: Window) -> Option<f64> {
        match window {
            Window::M5 => self.m5,
            Window::M30 => self.m30,
            Window::H1 => self.h1,
            Window::H2 => self.h2,
            Window::H6 => self.h6,
            Window::H24 => self.h24,
            Window::D3 => self.d3,
            Window::D30 => self.d30,
        }
    }
}

/// The fewest requests a short window must hold for its alert to be judged: below it one
/// failure weighs too much (1 in 50 is 2 %, twenty times a 99.9 % budget).
pub const MIN_REQUESTS: f64 = 100.0;

/// Tower's SLO period: the window the budget left is read over.
pub const PERIOD: Window = Window::D30;

/// Tower's SLO period, in hours.
pub const PERIOD_HOURS: u32 = PERIOD.minutes() / 60;

/// A window the alerts and the budget read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Window {
    M5,
    M30,
    H1,
    H2,
    H6,
    H24,
    D3,
    D30,
}

impl Window {
    /// As Prometheus and the readings name it: `5m`, `24h`.
    pub const fn word(self) -> &'static str {
        match self {
            Window::M5 => "5m",
            Window::M30 => "30m",
            Window::H1 => "1h",
            Window::H2 => "2h",
            Window::H6 => "6h",
            Window::H24 => "24h",
            Window::D3 => "3d",
            Window::D30 => "30d",
        }
    }

    /// Its length in minutes.
    pub const fn minutes(self) -> u32 {
        match self {
            Window::M5 => 5,
            Window::M30 => 30,
            Window::H1 => 60,
            Window::H2 => 120,
            Window::H6 => 360,
            Window::H24 => 1440,
            Window::D3 => 3 * 1440,
            Window::D30 => 30 * 1440,
        }
    }
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

/// One row of the workbook's table: raise `severity` when `budget_spent` of the period's
/// error budget is spent within `long`, and the burning goes on over `short`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Row {
    pub severity: Severity,
    /// The share of the period's budget (0.02 for 2 %).
    pub budget_spent: f64,
    pub long: Window,
    pub short: Window,
}

/// The workbook's multiwindow, multi-burn-rate table.
pub const TABLE: [Row; 4] = [
    Row {
        severity: Severity::Page,
        budget_spent: 0.02,
        long: Window::H1,
        short: Window::M5,
    },
    Row {
        severity: Severity::Page,
        budget_spent: 0.05,
        long: Window::H6,
        short: Window::M30,
    },
    Row {
        severity: Severity::Ticket,
        budget_spent: 0.10,
        long: Window::H24,
        short: Window::H2,
    },
    Row {
        severity: Severity::Ticket,
        budget_spent: 0.10,
        long: Window::D3,
        short: Window::H6,
    },
];

/// One of the workbook's alerts for an SLO period, on the wire as [`AlertState`] carries it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BurnAlert {
    pub severity: Severity,
    /// The burn rate both windows must exceed: the row's share of the budget × the period
    /// ÷ the long window.
    pub threshold: f64,
    /// The long and the short window, in words (`1h`, `5m`).
    pub long: Cow<'static, str>,
    pub short: Cow<'static, str>,
}

impl BurnAlert {
    /// `row`'s alert for an SLO period of `period_hours`.
    pub fn for_period(row: Row, period_hours: u32) -> Self {
        let threshold =
            row.budget_spent * f64::from(period_hours) * 60.0 / f64::from(row.long.minutes());
        BurnAlert {
            severity: row.severity,
            threshold,
            long: Cow::Borrowed(row.long.word()),
            short: Cow::Borrowed(row.short.word()),
        }
    }
}

/// A burn-rate factor in words: `14.4`, `3`, `0.93` (two decimals at most).
fn factor(value: f64) -> String {
    let text = format!("{value:.2}");
    text.trim_end_matches('0').trim_end_matches('.').to_owned()
}

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

/// The workbook's alerts over the error ratios `errors` against `objective`, for Tower's
/// period ([`PERIOD_HOURS`]); `requests` counts the requests in each window (an unknown
/// count does not stop an alert being judged).
pub fn alerts(errors: &ByWindow, requests: &ByWindow, objective: f64) -> [AlertState; 4] {
    TABLE.map(|row| {
        let alert = BurnAlert::for_period(row, PERIOD_HOURS);
        let long_burn = burn_rate(errors.over(row.long), objective);
        let short_burn = burn_rate(errors.over(row.short), objective);
        let too_few = requests.over(row.short).filter(|n| *n < MIN_REQUESTS);
        let firing = match (too_few, long_burn, short_burn) {
            (None, Some(l), Some(s)) => Some(l > alert.threshold && s > alert.threshold),
            _ => None,
        };
        let burn = |b: Option<f64>| b.map_or_else(|| "unknown".to_owned(), |b| format!("{b:.1}×"));
        let state = match (firing, too_few) {
            (Some(true), _) => "firing".to_owned(),
            (Some(false), _) => "quiet".to_owned(),
            (None, Some(n)) => format!(
                "too few requests to judge ({n:.0} in {}, fewer than {MIN_REQUESTS:.0})",
                alert.short
            ),
            (None, None) => "cannot tell".to_owned(),
        };
        let said = format!(
            "{} at {}× over {} and {}: burning {} and {} — {state}",
            alert.severity.word(),
            factor(alert.threshold),
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
    /// How many requests were served.
    Requests,
}

impl Measure {
    pub fn key(self) -> &'static str {
        match self {
            Self::ErrorRatio => "errorRatio",
            Self::LatencyP95 => "latencyP95",
            Self::LatencyP99 => "latencyP99",
            Self::Requests => "requests",
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
/// shown ones, the requests over the alerts' short windows, the latencies over the shown
/// ones, and the two charted series.
pub const ASKED: [Asked; 20] = [
    at(Measure::ErrorRatio, "5m"),
    at(Measure::ErrorRatio, "30m"),
    at(Measure::ErrorRatio, "1h"),
    at(Measure::ErrorRatio, "2h"),
    at(Measure::ErrorRatio, "6h"),
    at(Measure::ErrorRatio, "24h"),
    at(Measure::ErrorRatio, "3d"),
    at(Measure::ErrorRatio, "30d"),
    at(Measure::Requests, "5m"),
    at(Measure::Requests, "30m"),
    at(Measure::Requests, "2h"),
    at(Measure::Requests, "6h"),
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
/// burn-rate alerts' windows and the month, the requests over their short windows, the
/// latencies over the last hour — figures only, no series.
pub const JUDGED: [Asked; 14] = [
    at(Measure::ErrorRatio, "5m"),
    at(Measure::ErrorRatio, "30m"),
    at(Measure::ErrorRatio, "1h"),
    at(Measure::ErrorRatio, "2h"),
    at(Measure::ErrorRatio, "6h"),
    at(Measure::ErrorRatio, "24h"),
    at(Measure::ErrorRatio, "3d"),
    at(Measure::ErrorRatio, "30d"),
    at(Measure::Requests, "5m"),
    at(Measure::Requests, "30m"),
    at(Measure::Requests, "2h"),
    at(Measure::Requests, "6h"),
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
    pub fn error_ratios(&self) -> ByWindow {
        self.by_window(Measure::ErrorRatio)
    }

    /// The requests counted over the burn-rate alerts' windows (asked for the short ones).
    pub fn requests(&self) -> ByWindow {
        self.by_window(Measure::Requests)
    }

    fn by_window(&self, measure: Measure) -> ByWindow {
        let r = |w: Window| self.figure(measure, w.word());
        ByWindow {
            m5: r(Window::M5),
            m30: r(Window::M30),
            h1: r(Window::H1),
            h2: r(Window::H2),
            h6: r(Window::H6),
            h24: r(Window::H24),
            d3: r(Window::D3),
            d30: r(Window::D30),
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
    fn the_workbooks_factors_for_30_days_and_scaled_for_28_and_7() {
        let factors = |period_days: u32| {
            TABLE.map(|row| BurnAlert::for_period(row, period_days * 24).threshold)
        };
        let expect = |got: [f64; 4], want: [f64; 4]| {
            for (g, w) in got.iter().zip(want) {
                assert!((g - w).abs() < 1e-9, "{got:?} is not {want:?}");
            }
        };
        // The workbook's table: 2 % in 1 h, 5 % in 6 h, 10 % in 1 day, 10 % in 3 days.
        expect(factors(30), [14.4, 6.0, 3.0, 1.0]);
        assert_eq!(PERIOD_HOURS, 30 * 24);
        // The same shares of a shorter budget: share × period ÷ long window.
        expect(factors(28), [13.44, 5.6, 2.8, 28.0 * 0.1 / 3.0]);
        expect(factors(7), [3.36, 1.4, 0.7, 7.0 * 0.1 / 3.0]);
        // Each row's short window is a twelfth of its long one, as the workbook advises.
        for row in TABLE {
            assert_eq!(row.long.minutes(), 12 * row.short.minutes(), "{row:?}");
        }
        assert_eq!(factor(14.4), "14.4");
        assert_eq!(factor(1.0), "1");
        assert_eq!(factor(28.0 * 0.1 / 3.0), "0.93");
    }

    #[test]
    fn an_alert_needs_its_long_and_short_window() {
        // A brief outage: 2 % errors in the last 5 minutes, 1.5 % over the hour (burn 20 and
        // 15, both over 14.4): page. Over 6 h 0.5 % (burn 5, under 6): the second page is
        // quiet; a day at 0.4 % and 2 h at 0.8 % (burn 4 and 8, over 3): ticket; 3 days at
        // 0.2 % (burn 2) and 6 h at burn 5: ticket.
        let ratios = ByWindow {
            m5: Some(0.02),
            m30: Some(0.01),
            h1: Some(0.015),
            h2: Some(0.008),
            h6: Some(0.005),
            h24: Some(0.004),
            d3: Some(0.002),
            d30: Some(0.0004),
        };
        // Thousands of requests in every window; how many is not always known.
        let busy = ByWindow {
            m5: Some(3_000.0),
            h2: None,
            ..ByWindow::default()
        };
        let [fast, slow, day, days] = alerts(&ratios, &busy, 0.999);
        assert_eq!(fast.firing, Some(true));
        assert!(close(fast.long_burn, 15.0) && close(fast.short_burn, 20.0));
        assert_eq!(
            fast.said,
            "page at 14.4× over 1h and 5m: burning 15.0× and 20.0× — firing"
        );
        assert_eq!(slow.firing, Some(false));
        assert!(close(slow.long_burn, 5.0) && close(slow.short_burn, 10.0));
        assert_eq!(day.firing, Some(true));
        assert!(close(day.long_burn, 4.0) && close(day.short_burn, 8.0));
        assert_eq!(
            day.said,
            "ticket at 3× over 24h and 2h: burning 4.0× and 8.0× — firing"
        );
        assert_eq!(days.firing, Some(true));
        // The burning stopped 5 minutes ago: the short window clears the page at once.
        let stopped = ByWindow {
            m5: Some(0.0),
            ..ratios
        };
        assert_eq!(alerts(&stopped, &busy, 0.999)[0].firing, Some(false));
        // The day's burning has slowed in the last 2 h (0.2 %, burn 2): that ticket clears.
        let slowed = ByWindow {
            h2: Some(0.002),
            ..ratios
        };
        assert_eq!(alerts(&slowed, &busy, 0.999)[2].firing, Some(false));
        // Prometheus did not answer for the hour: that alert is unknown, not quiet.
        let unknown = ByWindow { h1: None, ..ratios };
        assert_eq!(alerts(&unknown, &busy, 0.999)[0].firing, None);
        assert!(alerts(&unknown, &busy, 0.999)[0]
            .said
            .ends_with("burning unknown and 20.0× — cannot tell"));
        // A quiet night: 40 requests in the last 5 minutes, so their 2 % is a single failure
        // — too few to page on; the 30 minutes' 400 requests are enough for the slower page.
        let night = ByWindow {
            m5: Some(40.0),
            m30: Some(400.0),
            ..busy
        };
        let [fast, slow, ..] = alerts(&ratios, &night, 0.999);
        assert_eq!(fast.firing, None);
        assert_eq!(
            fast.said,
            "page at 14.4× over 1h and 5m: burning 15.0× and 20.0× — too few requests to judge (40 in 5m, fewer than 100)"
        );
        assert_eq!(slow.firing, Some(false));
        // None at all: not zero errors, too few to judge.
        let none = ByWindow {
            m5: Some(0.0),
            ..busy
        };
        assert!(alerts(&ratios, &none, 0.999)[0].said.contains("(0 in 5m"));
    }
}
