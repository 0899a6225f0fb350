//! Prometheus' HTTP API as far as Tower reads it: `GET`/`POST /api/v1/query` (`query`,
//! `time`) and `/api/v1/query_range` (`query`, `start`, `end`, `step`), answered in the real
//! shapes — `{"status": "success", "data": {"resultType": "vector"|"matrix", "result":
//! [{"metric": {}, "value": [ts, "v"]}]}}` — from the stories' [`Signals`]: an error ratio
//! or a latency quantile over a window is the mean of the story's signal over it.
//!
//! It understands the queries Tower ships as defaults (`docs/runtime.md`): the 5xx ratio of
//! `http_requests_total`, the requests counted by it (`increase`), and `histogram_quantile(0.95|0.99, …http_request_duration_seconds_bucket…)`,
//! each for `namespace="<ns>"` over a `[<window>]`. Any other query is refused as Prometheus
//! refuses a query it cannot parse (400, `errorType: bad_data`); a namespace no story runs
//! has no series (an empty result). Past 11,000 points a range query is refused, as
//! Prometheus does. Switched off, it takes requests and answers none (a hung server).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use axum::extract::{Form, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use chrono::{DateTime, Duration, Utc};
use serde::Deserialize;
use serde_json::{json, Value};

use crate::platform::Platform;
use crate::stories::Signals;

/// Prometheus' limit on the points of one series a range query may return.
pub const MAX_POINTS: i64 = 11_000;

/// The simulated Prometheus: the platform whose stories it measures, its switch and its
/// request count.
#[derive(Clone, Debug)]
pub struct Prometheus {
    platform: Arc<Platform>,
    answering: tokio::sync::watch::Receiver<bool>,
    requests: Arc<AtomicU64>,
}

#[derive(Debug, Default, Deserialize)]
struct Params {
    query: Option<String>,
    time: Option<String>,
    start: Option<String>,
    end: Option<String>,
    step: Option<String>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Measure {
    ErrorRatio,
    P95,
    P99,
    Requests,
}

/// What a query asks: a measure of a namespace over a window (seconds).
#[derive(Clone, Debug, PartialEq, Eq)]
struct Parsed {
    measure: Measure,
    namespace: String,
    window: i64,
}

fn bad(message: &str) -> Response {
    (
        StatusCode::BAD_REQUEST,
        Json(json!({"status": "error", "errorType": "bad_data", "error": message})),
    )
        .into_response()
}

/// A Prometheus duration (`5m`, `1h`, `30d`, `1h30m`) in seconds.
fn duration(text: &str) -> Option<i64> {
    let mut total = 0i64;
    let mut digits = String::new();
    let mut chars = text.chars().peekable();
    if text.is_empty() {
        return None;
    }
    while let Some(c) = chars.next() {
        if c.is_ascii_digit() {
            digits.push(c);
            continue;
        }
        let n: i64 = digits.parse().ok()?;
        digits.clear();
        let unit = match (c, chars.peek()) {
            ('m', Some('s')) => {
                chars.next();
                0
            }
            ('s', _) => 1,
            ('m', _) => 60,
            ('h', _) => 3_600,
            ('d', _) => 86_400,
            ('w', _) => 7 * 86_400,
            ('y', _) => 365 * 86_400,
            _ => return None,
        };
        total = total.checked_add(n.checked_mul(unit)?)?;
    }
    digits.is_empty().then_some(total).filter(|t| *t > 0)
}

/// A time parameter: unix seconds (with a fraction) or RFC 3339.
fn instant(text: &str) -> Option<DateTime<Utc>> {
    if let Ok(seconds) = text.parse::<f64>() {
        #[allow(clippy::cast_possible_truncation)]
        return DateTime::from_timestamp_millis((seconds * 1000.0).round() as i64);
    }
    text.parse().ok()
}

fn step(text: &str) -> Option<i64> {
    #[allow(clippy::cast_possible_truncation)]
    text.parse::<f64>()
        .ok()
        .map(|s| s.round() as i64)
        .filter(|s| *s > 0)
        .or_else(|| duration(text))
}

fn between<'a>(text: &'a str, open: &str, close: char) -> Option<&'a str> {
    let start = text.find(open)? + open.len();
    let rest = &text[start..];
    Some(&rest[..rest.find(close)?])
}

fn parse(query: &str) -> Result<Parsed, String> {
    let compact: String = query.chars().filter(|c| !c.is_whitespace()).collect();
    let measure = if compact.contains("histogram_quantile(0.99,") {
        Measure::P99
    } else if compact.contains("histogram_quantile(0.95,") {
        Measure::P95
    } else if compact.contains("http_requests_total{") && compact.contains("code=~\"5..\"") {
        Measure::ErrorRatio
    } else if compact.starts_with("sum(increase(http_requests_total{") && !compact.contains("code=")
    {
        Measure::Requests
    } else {
        return Err(format!(
            "1:1: parse error: the simulated Prometheus answers only Tower's default queries, not {query:?}"
        ));
    };
    if matches!(measure, Measure::P95 | Measure::P99)
        && !compact.contains("http_request_duration_seconds_bucket{")
    {
        return Err("1:1: parse error: a quantile of an unknown histogram".to_owned());
    }
    let namespace = between(&compact, "namespace=\"", '"')
        .ok_or("1:1: parse error: no namespace=\"…\" matcher")?
        .to_owned();
    let window = between(&compact, "[", ']')
        .and_then(duration)
        .ok_or("1:1: parse error: no range [<duration>]")?;
    Ok(Parsed {
        measure,
        namespace,
        window,
    })
}

impl Prometheus {
    pub fn new(
        platform: Arc<Platform>,
        answering: tokio::sync::watch::Receiver<bool>,
        requests: Arc<AtomicU64>,
    ) -> Self {
        Self {
            platform,
            answering,
            requests,
        }
    }

    pub fn router(self) -> Router {
        Router::new()
            .route("/api/v1/query", get(query).post(query_form))
            .route("/api/v1/query_range", get(range).post(range_form))
            .with_state(self)
    }

    /// The measure over the window ending at `at`: the mean of the story's signal sampled
    /// on a grid of whole multiples of the spacing (a minute, five for windows past 3 days),
    /// so the same moment always reads the same; the requests, that mean rate over the
    /// window's seconds. `None`: no story runs the namespace.
    fn value(&self, parsed: &Parsed, at: DateTime<Utc>) -> Option<f64> {
        let spacing = if parsed.window > 3 * 86_400 { 300 } else { 60 };
        let end = at.timestamp().div_euclid(spacing) * spacing;
        let samples = (parsed.window / spacing).max(1);
        let mut sum = 0.0;
        for k in 0..samples {
            let t = DateTime::from_timestamp(end - k * spacing, 0)?;
            let Signals {
                error_ratio,
                latency_p95,
                latency_p99,
                requests_per_second,
            } = self.platform.signals(&parsed.namespace, t)?;
            sum += match parsed.measure {
                Measure::ErrorRatio => error_ratio,
                Measure::P95 => latency_p95,
                Measure::P99 => latency_p99,
                Measure::Requests => requests_per_second,
            };
        }
        #[allow(clippy::cast_precision_loss)]
        let mean = sum / samples as f64;
        // The requests counted are the mean rate over the window's seconds.
        #[allow(clippy::cast_precision_loss)]
        Some(match parsed.measure {
            Measure::Requests => mean * parsed.window as f64,
            Measure::ErrorRatio | Measure::P95 | Measure::P99 => mean,
        })
    }

    /// Waits while switched off (a hung server: the caller's deadline decides).
    async fn answers(&self) {
        self.requests.fetch_add(1, Ordering::Relaxed);
        let mut answering = self.answering.clone();
        let _ = answering.wait_for(|on| *on).await;
    }
}

#[allow(clippy::cast_precision_loss)]
fn stamp(t: DateTime<Utc>) -> Value {
    let seconds = t.timestamp_millis() as f64 / 1000.0;
    json!(seconds)
}

fn number(v: f64) -> String {
    format!("{v}")
}

async fn query(State(p): State<Prometheus>, Query(params): Query<Params>) -> Response {
    instant_query(p, params).await
}

async fn query_form(State(p): State<Prometheus>, Form(params): Form<Params>) -> Response {
    instant_query(p, params).await
}

async fn range(State(p): State<Prometheus>, Query(params): Query<Params>) -> Response {
    range_query(p, params).await
}

async fn range_form(State(p): State<Prometheus>, Form(params): Form<Params>) -> Response {
    range_query(p, params).await
}

/// The request's `query` read, or why Prometheus refuses it.
fn query_of(params: &Params) -> Result<Parsed, String> {
    let text = params
        .query
        .as_deref()
        .ok_or("1:1: parse error: no expression found in input")?;
    parse(text)
}

async fn instant_query(p: Prometheus, params: Params) -> Response {
    p.answers().await;
    let parsed = match query_of(&params) {
        Ok(parsed) => parsed,
        Err(message) => return bad(&format!("invalid parameter \"query\": {message}")),
    };
    let at = match params.time.as_deref() {
        None => p.platform.clock().now(),
        Some(t) => match instant(t) {
            Some(at) => at,
            None => {
                return bad(&format!(
                    "invalid parameter \"time\": cannot parse {t:?} to a valid timestamp"
                ))
            }
        },
    };
    let result: Vec<Value> = p
        .value(&parsed, at)
        .map(|v| json!({"metric": {}, "value": [stamp(at), number(v)]}))
        .into_iter()
        .collect();
    Json(json!({"status": "success", "data": {"resultType": "vector", "result": result}}))
        .into_response()
}

async fn range_query(p: Prometheus, params: Params) -> Response {
    p.answers().await;
    let parsed = match query_of(&params) {
        Ok(parsed) => parsed,
        Err(message) => return bad(&format!("invalid parameter \"query\": {message}")),
    };
    let field = |name: &str, value: Option<&str>| {
        value.and_then(instant).ok_or_else(|| {
            format!("invalid parameter \"{name}\": cannot parse {value:?} to a valid timestamp")
        })
    };
    let (start, end) = match (
        field("start", params.start.as_deref()),
        field("end", params.end.as_deref()),
    ) {
        (Ok(s), Ok(e)) => (s, e),
        (Err(why), _) | (_, Err(why)) => return bad(&why),
    };
    if end < start {
        return bad("end timestamp must not be before start time");
    }
    let Some(every) = params.step.as_deref().and_then(step) else {
        return bad("invalid parameter \"step\": zero or negative query resolution step widths are not accepted. Try a positive integer");
    };
    if (end - start).num_seconds() / every > MAX_POINTS {
        return bad("exceeded maximum resolution of 11,000 points per timeseries. Try decreasing the query resolution (?step=XX)");
    }
    let mut values = Vec::new();
    let mut t = start;
    while t <= end {
        match p.value(&parsed, t) {
            Some(v) => values.push(json!([stamp(t), number(v)])),
            None => break,
        }
        t += Duration::seconds(every);
    }
    let result: Vec<Value> = (!values.is_empty())
        .then(|| json!({"metric": {}, "values": values}))
        .into_iter()
        .collect();
    Json(json!({"status": "success", "data": {"resultType": "matrix", "result": result}}))
        .into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_tower_s_default_queries_and_refuses_others() {
        let errors = r#"sum(rate(http_requests_total{namespace="app-shop-prod",code=~"5.."}[30m])) / sum(rate(http_requests_total{namespace="app-shop-prod"}[30m]))"#;
        assert_eq!(
            parse(errors),
            Ok(Parsed {
                measure: Measure::ErrorRatio,
                namespace: "app-shop-prod".to_owned(),
                window: 1_800
            })
        );
        let p99 = r#"histogram_quantile(0.99, sum by (le) (rate(http_request_duration_seconds_bucket{namespace="app-shop-dev"}[30d])))"#;
        assert_eq!(
            parse(p99).map(|p| (p.measure, p.window)),
            Ok((Measure::P99, 2_592_000))
        );
        let requests = r#"sum(increase(http_requests_total{namespace="app-shop-prod"}[5m]))"#;
        assert_eq!(
            parse(requests).map(|p| (p.measure, p.window)),
            Ok((Measure::Requests, 300))
        );
        assert!(parse("up").is_err());
        assert!(parse(r#"histogram_quantile(0.99, rate(x_bucket{namespace="a"}[5m]))"#).is_err());
        assert_eq!(duration("1h30m"), Some(5_400));
        assert_eq!(duration("500ms"), None, "under a second is no window");
        assert_eq!(duration("5x"), None);
        assert_eq!(step("60"), Some(60));
        assert_eq!(step("10m"), Some(600));
        assert_eq!(
            instant("1764496800.5"),
            DateTime::from_timestamp_millis(1_764_496_800_500)
        );
    }
}
