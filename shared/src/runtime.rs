//! The Runtime tab: where an app runs in each environment (its Rollout's pods, the
//! autoscaler, recent Kubernetes Events) and how it performs there — its service level
//! objectives from Prometheus' figures, drawn with a marker at each release's arrival so
//! "did the release hurt?" is answered by looking.
//!
//! [`places`] reads a snapshot; [`slo`] reads what Prometheus answered ([`Readings`], asked
//! by the backend with the queries [`ASKED`] names) against the app's [`Targets`]. Nothing
//! Prometheus did not answer is shown as zero: a window without a figure is unknown.

use chrono::{DateTime, Duration, Utc};
use serde::{Deserialize, Serialize};

use crate::cicd::Targets;
use crate::hangar;

use crate::slo;
pub use crate::slo::{millis, Asked, Measure, Readings, ASKED, JUDGED};
use crate::snapshot::Snapshot;
pub use crate::workload::{Autoscaler, Event, Pod, Termination};

/// Events shown per environment (warnings first, then the newest).
pub const EVENTS_SHOWN: usize = 20;

/// A release's arrival in the environment (its ReplicaSet made): a chart marker.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Arrived {
    /// The release's tag (`1.42.0-ab12cd3`), or the image when it has none.
    pub release: String,
    pub at: DateTime<Utc>,
}

/// Where the app runs in one environment.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Place {
    pub environment: String,
    /// The cluster its objects were read on; `None` when none were.
    pub cluster: Option<String>,
    pub namespace: String,
    pub pods: Vec<Pod>,
    pub autoscaler: Option<Autoscaler>,
    pub events: Vec<Event>,
    /// Releases that arrived, oldest first.
    pub arrivals: Vec<Arrived>,
}

/// What the Runtime tab knows of an app before Prometheus is asked: where it runs and the
/// objectives it is held to. Made once per change of the app's objects.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Runtime {
    pub places: Vec<Place>,
    pub targets: Targets,
}

/// `service`'s [`Runtime`] from its part of the snapshot.
pub fn derive(snapshot: &Snapshot, service: &str) -> Runtime {
    Runtime {
        places: places(snapshot, service),
        targets: snapshot.cicd_of(service).slo.unwrap_or_default(),
    }
}

/// Where `service` runs in each of its environments, in promotion order.
pub fn places(snapshot: &Snapshot, service: &str) -> Vec<Place> {
    let arrivals = crate::releases::arrivals(snapshot, service);
    crate::config::environments(snapshot, service)
        .into_iter()
        .map(|environment| {
            let namespace = hangar::env_namespace(service, &environment);
            let mut place = Place {
                environment,
                cluster: None,
                namespace,
                pods: Vec::new(),
                autoscaler: None,
                events: Vec::new(),
                arrivals: Vec::new(),
            };
            for (cluster, objects) in &snapshot.clusters {
                for object in objects
                    .iter()
                    .filter(|o| o.namespace() == Some(&place.namespace))
                {
                    match object.kind.as_str() {
                        "Pod" if crate::workload::is_rollout_pod(object) => {
                            place.pods.push(crate::workload::pod(object));
                        }
                        "Event" => place.events.push(crate::workload::event(object)),
                        "HorizontalPodAutoscaler" => {
                            place.autoscaler = Some(crate::workload::autoscaler(object))
                        }
                        "Rollout" | "ReplicaSet" => {}
                        _ => continue,
                    }
                    place.cluster.get_or_insert_with(|| cluster.clone());
                }
            }
            place.pods.sort_by(|a, b| a.name.cmp(&b.name));
            place
                .events
                .sort_by(|a, b| b.warning.cmp(&a.warning).then(b.last_at.cmp(&a.last_at)));
            place.events.truncate(EVENTS_SHOWN);
            place.arrivals = arrivals
                .iter()
                .filter(|a| a.environment == place.environment)
                .map(|a| Arrived {
                    release: crate::image::short(&a.image).to_owned(),
                    at: a.at,
                })
                .collect();
            place.arrivals.sort_by_key(|a| a.at);
            place.arrivals.dedup_by(|a, b| a.release == b.release);
            place
        })
        .collect()
}

/// The windows each figure is shown over.
pub const SHOWN: [&str; 3] = ["1h", "24h", "30d"];
/// What the charts span, and their step.
pub const CHART_SPAN: Duration = Duration::hours(24);
pub const CHART_STEP: Duration = Duration::minutes(10);

/// The figures of one window.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Window {
    pub window: String,
    /// 1 − the error ratio.
    pub availability: Option<f64>,
    pub p95_ms: Option<f64>,
    pub p99_ms: Option<f64>,
    /// Each against its target; `None` when unknown.
    pub availability_met: Option<bool>,
    pub p95_met: Option<bool>,
    pub p99_met: Option<bool>,
}

/// A value placed on a chart's axis (`at`: the pixel), with its words.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Mark {
    pub at: f64,
    pub label: String,
}

/// A chart laid out for drawing: SVG polylines in a `width` × `height` box whose plot area
/// is `left..right` × `top..bottom`; a line per run of known points (a gap is unknown).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Chart {
    pub title: String,
    pub width: f64,
    pub height: f64,
    pub left: f64,
    pub right: f64,
    pub top: f64,
    pub bottom: f64,
    pub lines: Vec<String>,
    /// The objective's line (its y).
    pub target: Option<Mark>,
    /// Each release's arrival (its x).
    pub markers: Vec<Mark>,
    pub y_ticks: Vec<Mark>,
    pub x_ticks: Vec<Mark>,
    /// The chart in one sentence (what a screen reader says, and the caption).
    pub summary: String,
}

/// An environment's objectives and how it meets them.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Slo {
    pub targets: Targets,
    pub windows: Vec<Window>,
    /// The share of the 30-day error budget left (below 0 when overspent).
    pub budget_left: Option<f64>,
    /// The budget left and the objectives in words.
    pub budget: String,
    pub alerts: Vec<slo::AlertState>,
    pub charts: Vec<Chart>,
    /// The environment's objectives in one sentence.
    pub sentence: String,
}

/// `0.9995` → `99.95 %`.
pub fn percent(share: f64) -> String {
    let p = share * 100.0;
    let text = if (p - p.round()).abs() < 1e-9 {
        format!("{p:.0}")
    } else if (p * 10.0 - (p * 10.0).round()).abs() < 1e-9 {
        format!("{p:.1}")
    } else {
        format!("{p:.2}")
    };
    format!("{text} %")
}

const WIDTH: f64 = 640.0;
const HEIGHT: f64 = 180.0;
const LEFT: f64 = 56.0;
const RIGHT: f64 = 628.0;
const TOP: f64 = 12.0;
const BOTTOM: f64 = 156.0;

/// A round top for a y axis at or above `max`: 1, 2 or 5 × a power of ten.
fn round_up(max: f64) -> f64 {
    if max <= 0.0 || !max.is_finite() {
        return 1.0;
    }
    let power = 10f64.powf(max.log10().floor());
    [1.0, 2.0, 5.0, 10.0]
        .into_iter()
        .map(|m| m * power)
        .find(|top| *top >= max)
        .unwrap_or(10.0 * power)
}

/// Lays `points` (unix seconds, value in the chart's unit) out over `[from, to]` with the
/// target line and the arrivals as markers; `label` writes a value of the unit.
fn chart(
    title: &str,
    points: &[(i64, f64)],
    target: Option<f64>,
    arrivals: &[Arrived],
    (from, to): (DateTime<Utc>, DateTime<Utc>),
    label: &dyn Fn(f64) -> String,
) -> Chart {
    let span = (to - from).num_seconds().max(1) as f64;
    let x = |t: i64| LEFT + (t - from.timestamp()) as f64 / span * (RIGHT - LEFT);
    let max = points
        .iter()
        .map(|(_, v)| *v)
        .chain(target)
        .fold(0.0, f64::max);
    let top = round_up(max * 1.1);
    let y = |v: f64| BOTTOM - v / top * (BOTTOM - TOP);
    let mut lines = Vec::new();
    let mut line = String::new();
    let gap = CHART_STEP.num_seconds() * 2;
    let mut last: Option<i64> = None;
    for &(t, v) in points
        .iter()
        .filter(|(t, _)| *t >= from.timestamp() && *t <= to.timestamp())
    {
        if last.is_some_and(|l| t - l > gap) && !line.is_empty() {
            lines.push(std::mem::take(&mut line));
        }
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(&format!("{:.1},{:.1}", x(t), y(v)));
        last = Some(t);
    }
    if !line.is_empty() {
        lines.push(line);
    }
    let markers: Vec<Mark> = arrivals
        .iter()
        .filter(|a| a.at >= from && a.at <= to)
        .map(|a| Mark {
            at: x(a.at.timestamp()),
            label: a.release.clone(),
        })
        .collect();
    let y_ticks = [0.0, top / 2.0, top]
        .into_iter()
        .map(|v| Mark {
            at: y(v),
            label: label(v),
        })
        .collect();
    let x_ticks = (0..=4)
        .map(|i| {
            let t = from + Duration::seconds((span as i64) * i / 4);
            Mark {
                at: x(t.timestamp()),
                label: t.format("%H:%M").to_string(),
            }
        })
        .collect();
    let summary = chart_summary(title, points, (arrivals, target), (from, to), label);
    Chart {
        title: title.to_owned(),
        width: WIDTH,
        height: HEIGHT,
        left: LEFT,
        right: RIGHT,
        top: TOP,
        bottom: BOTTOM,
        lines,
        target: target.map(|t| Mark {
            at: y(t),
            label: format!("target {}", label(t)),
        }),
        markers,
        y_ticks,
        x_ticks,
        summary,
    }
}

fn mean(values: impl Iterator<Item = f64>) -> Option<f64> {
    let (sum, n) = values.fold((0.0, 0usize), |(s, n), v| (s + v, n + 1));
    (n > 0).then(|| sum / n as f64)
}

/// "p99 latency: rose from 240 ms to 910 ms after 1.42.0 arrived" — the newest arrival in
/// the span read against the series' mean before and after it: a change by half either
/// way, and by at least a quarter of the target, is said; otherwise the level.
fn chart_summary(
    title: &str,
    points: &[(i64, f64)],
    (arrivals, target): (&[Arrived], Option<f64>),
    (from, to): (DateTime<Utc>, DateTime<Utc>),
    label: &dyn Fn(f64) -> String,
) -> String {
    let inside: Vec<&(i64, f64)> = points
        .iter()
        .filter(|(t, _)| *t >= from.timestamp() && *t <= to.timestamp())
        .collect();
    if inside.is_empty() {
        return format!("{title}: Prometheus has no figures for the last 24 hours.");
    }
    if let Some(newest) = arrivals.iter().rev().find(|a| a.at > from && a.at < to) {
        let cut = newest.at.timestamp();
        let before = mean(inside.iter().filter(|(t, _)| *t < cut).map(|(_, v)| *v));
        let after = mean(inside.iter().filter(|(t, _)| *t > cut).map(|(_, v)| *v));
        if let (Some(b), Some(a)) = (before, after) {
            let felt = target.is_none_or(|t| (a - b).abs() >= t / 4.0);
            let moved = if !felt {
                None
            } else if a > b * 1.5 {
                Some("rose")
            } else if a < b / 1.5 {
                Some("fell")
            } else {
                None
            };
            return match moved {
                Some(word) => format!(
                    "{title}: {word} from {} to {} after {} arrived.",
                    label(b),
                    label(a),
                    newest.release
                ),
                None => format!(
                    "{title}: about {} before and after {} arrived.",
                    label(a),
                    newest.release
                ),
            };
        }
    }
    let (low, high) = inside.iter().fold((f64::MAX, f64::MIN), |(l, h), (_, v)| {
        (l.min(*v), h.max(*v))
    });
    format!(
        "{title}: between {} and {} over the last 24 hours.",
        label(low),
        label(high)
    )
}

/// The objectives of one environment from `readings`, at `now`, with `arrivals` as the
/// charts' markers.
pub fn slo(
    readings: &Readings,
    targets: &Targets,
    arrivals: &[Arrived],
    now: DateTime<Utc>,
) -> Slo {
    let windows: Vec<Window> = SHOWN
        .iter()
        .map(|w| {
            let availability = readings.figure(Measure::ErrorRatio, w).map(|r| 1.0 - r);
            let p95 = readings.figure(Measure::LatencyP95, w).map(|s| s * 1000.0);
            let p99 = readings.figure(Measure::LatencyP99, w).map(|s| s * 1000.0);
            Window {
                window: (*w).to_owned(),
                availability,
                p95_ms: p95,
                p99_ms: p99,
                availability_met: availability.map(|a| a >= targets.availability),
                p95_met: p95.map(|p| p <= targets.latency_p95_ms),
                p99_met: p99.map(|p| p <= targets.latency_p99_ms),
            }
        })
        .collect();
    let ratios = readings.error_ratios();
    let budget_left = slo::budget_left(ratios.d30, targets.availability);
    let alerts = slo::alerts(&ratios, &readings.requests(), targets.availability).to_vec();
    let span = (now - CHART_SPAN, now);
    let empty = Vec::new();
    let series = |m: Measure| {
        readings
            .series
            .get(&format!("{}:series", m.key()))
            .unwrap_or(&empty)
    };
    let errors: Vec<(i64, f64)> = series(Measure::ErrorRatio)
        .iter()
        .map(|(t, r)| (*t, r * 100.0))
        .collect();
    let latency: Vec<(i64, f64)> = series(Measure::LatencyP99)
        .iter()
        .map(|(t, s)| (*t, s * 1000.0))
        .collect();
    let charts = vec![
        chart(
            "Error rate",
            &errors,
            Some((1.0 - targets.availability) * 100.0),
            arrivals,
            span,
            &|v| format!("{v:.2} %"),
        ),
        chart(
            "p99 latency",
            &latency,
            Some(targets.latency_p99_ms),
            arrivals,
            span,
            &|v| format!("{v:.0} ms"),
        ),
    ];
    let sentence = sentence(&windows, budget_left, &alerts, targets);
    let budget = format!(
        "Error budget left (30 days): {}. Objectives{}: {} of requests succeed, p95 under {}, p99 under {}.",
        budget_left.map_or_else(|| "unknown".to_owned(), percent),
        if targets.declared {
            " from cicd.yaml"
        } else {
            " (Tower's defaults)"
        },
        percent(targets.availability),
        millis(targets.latency_p95_ms / 1000.0),
        millis(targets.latency_p99_ms / 1000.0)
    );
    Slo {
        targets: *targets,
        windows,
        budget_left,
        budget,
        alerts,
        charts,
        sentence,
    }
}

fn sentence(
    windows: &[Window],
    budget_left: Option<f64>,
    alerts: &[slo::AlertState],
    t: &Targets,
) -> String {
    let month = windows.iter().find(|w| w.window == "30d");
    let hour = windows.iter().find(|w| w.window == "1h");
    let Some(availability) = month.and_then(|w| w.availability) else {
        return "Prometheus has no figures for the last 30 days: the objectives cannot be told."
            .to_owned();
    };
    let mut out = format!(
        "{} of requests succeeded over 30 days (objective {})",
        percent(availability),
        percent(t.availability)
    );
    match budget_left {
        Some(left) if left < 0.0 => out.push_str("; the error budget is spent"),
        Some(left) => out.push_str(&format!(
            "; {} of the error budget is left",
            percent(left.max(0.0))
        )),
        None => {}
    }
    if let Some(p99) = hour.and_then(|w| w.p99_ms) {
        let over = p99 > t.latency_p99_ms;
        out.push_str(&format!(
            "; p99 latency over the last hour is {} ({} its {} objective)",
            millis(p99 / 1000.0),
            if over { "above" } else { "within" },
            millis(t.latency_p99_ms / 1000.0)
        ));
    }
    out.push('.');
    if let Some(a) = alerts.iter().find(|a| a.firing == Some(true)) {
        out.push_str(&format!(
            " The error budget burns more than {}× as fast as it lasts over {} and over {}: {}.",
            a.alert.threshold,
            a.alert.long,
            a.alert.short,
            if a.alert.severity == slo::Severity::Page {
                "page someone"
            } else {
                "open a ticket"
            }
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(text: &str) -> DateTime<Utc> {
        text.parse().unwrap()
    }

    #[test]
    fn objectives_worked_by_hand() {
        let now = at("2026-11-30T12:00:00Z");
        let mut readings = Readings::default();
        // 0.05 % errors over 30 days against 99.9 %: half the budget spent.
        readings.figures.insert("errorRatio:30d".to_owned(), 0.0005);
        readings.figures.insert("errorRatio:1h".to_owned(), 0.02);
        readings.figures.insert("errorRatio:5m".to_owned(), 0.03);
        readings.figures.insert("latencyP99:1h".to_owned(), 0.9);
        // p99 at 200 ms until 06:00, then 800 ms; the release arrived at 06:00.
        let start = (now - CHART_SPAN).timestamp();
        let series = (0..=144)
            .map(|i| {
                let t = start + i * 600;
                (t, if t < start + 6 * 3600 { 0.2 } else { 0.8 })
            })
            .collect();
        readings
            .series
            .insert("latencyP99:series".to_owned(), series);
        let arrivals = [Arrived {
            release: "1.2.0-abcdef0".to_owned(),
            at: at("2026-11-29T18:00:00Z"),
        }];
        let slo = slo(&readings, &Targets::default(), &arrivals, now);
        assert!((slo.budget_left.unwrap() - 0.5).abs() < 1e-9);
        let month = &slo.windows[2];
        assert_eq!(month.window, "30d");
        assert_eq!(month.availability_met, Some(true));
        assert_eq!(month.p99_ms, None, "not asked is unknown");
        let hour = &slo.windows[0];
        assert_eq!(hour.p99_met, Some(false));
        // 2 % over the hour is a burn of 20, 3 % over 5 minutes 30: the first page fires.
        assert_eq!(slo.alerts[0].firing, Some(true));
        assert_eq!(slo.alerts[1].firing, None, "6 h is unknown");
        assert!(slo.sentence.starts_with(
            "99.95 % of requests succeeded over 30 days (objective 99.9 %); 50 % of the error budget is left; p99 latency over the last hour is 900 ms (above its 500 ms objective)."
        ), "{}", slo.sentence);
        let latency = &slo.charts[1];
        assert_eq!(
            latency.summary,
            "p99 latency: rose from 200 ms to 800 ms after 1.2.0-abcdef0 arrived."
        );
        // The arrival is a quarter of the way along the 24 hours.
        assert_eq!(latency.markers[0].at, LEFT + (RIGHT - LEFT) / 4.0);
        assert_eq!(latency.lines.len(), 1);
        let errors = &slo.charts[0];
        assert!(errors.lines.is_empty());
        assert_eq!(
            errors.summary,
            "Error rate: Prometheus has no figures for the last 24 hours."
        );
    }

    #[test]
    fn a_gap_in_a_series_is_left_unknown() {
        let now = at("2026-11-30T12:00:00Z");
        let start = (now - CHART_SPAN).timestamp();
        let points: Vec<(i64, f64)> = [0, 1, 2, 10, 11]
            .into_iter()
            .map(|i| (start + i * 600, 0.001))
            .collect();
        let mut readings = Readings::default();
        readings
            .series
            .insert("errorRatio:series".to_owned(), points);
        let slo = slo(&readings, &Targets::default(), &[], now);
        assert_eq!(slo.charts[0].lines.len(), 2);
        assert!(slo.sentence.starts_with("Prometheus has no figures"));
    }
}
