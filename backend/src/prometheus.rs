//! Prometheus' HTTP API, asked for the Runtime tab's figures: the queries of `tower.yaml`
//! (`config::PrometheusQueries`) for each environment's namespace, every one of
//! [`tower_shared::runtime::ASKED`] at Tower's `now` (`/api/v1/query`) or as a series over the
//! last day (`/api/v1/query_range`), all at once, each within the configured deadline.
//!
//! What Prometheus answered is kept per namespace and reused for [`FRESH_FOR`]; when it does
//! not answer (down, hung past the deadline, refusing), the last figures stand and
//! [`PrometheusState`] says since when it has not — never zeros.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};
use serde_json::Value;
use tower_shared::api::{PrometheusAnswers, PrometheusState};
use tower_shared::runtime::{Asked, Readings, ASKED, CHART_SPAN, CHART_STEP, JUDGED};

use crate::config::PrometheusConfig;

/// How long an answer is reused (real time) before Prometheus is asked again.
pub const FRESH_FOR: Duration = Duration::from_secs(10);

/// How many environments' figures [`Prometheus::judged`] asks for at a time.
const JUDGED_AT_ONCE: usize = 4;

/// The figures of one namespace and when they were measured (Tower's time).
#[derive(Clone, Debug)]
struct Known {
    readings: Readings,
    measured_at: DateTime<Utc>,
    asked: Instant,
}

/// Prometheus, its deadline, and what it last answered.
#[derive(Debug)]
pub struct Prometheus {
    http: reqwest::Client,
    config: PrometheusConfig,
    known: Mutex<HashMap<String, Known>>,
    /// Since when (Tower's time) and why it has not answered.
    down: Mutex<Option<(DateTime<Utc>, String)>>,
    /// One asking per namespace at a time: viewers arriving together share one answer.
    asking: Mutex<HashMap<String, Arc<tokio::sync::Mutex<()>>>>,
}

/// One namespace's figures as the Runtime tab shows them.
#[derive(Clone, Debug, Default)]
pub struct Measured {
    pub readings: Option<Readings>,
    pub measured_at: Option<DateTime<Utc>>,
}

fn locked<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// A number Prometheus wrote (`"0.0004"`); NaN and infinities are no figure.
fn figure(value: &Value) -> Option<f64> {
    value
        .as_str()?
        .parse::<f64>()
        .ok()
        .filter(|v| v.is_finite())
}

impl Prometheus {
    pub fn new(config: PrometheusConfig) -> Self {
        let deadline = Duration::from_secs(config.deadline_secs);
        let http = reqwest::Client::builder()
            .connect_timeout(deadline)
            .timeout(deadline)
            .build()
            .unwrap_or_default();
        Self {
            http,
            config,
            known: Mutex::default(),
            down: Mutex::default(),
            asking: Mutex::default(),
        }
    }

    /// Whether Prometheus answered last time, in the answer's words.
    pub fn state(&self) -> PrometheusState {
        match locked(&self.down).clone() {
            None => PrometheusState {
                state: PrometheusAnswers::Answering,
                message: None,
                since: None,
            },
            Some((since, message)) => PrometheusState {
                state: PrometheusAnswers::NotAnswering,
                message: Some(message),
                since: Some(since),
            },
        }
    }

    /// The figures for each of `namespaces` at `now`: asked now unless answered within
    /// [`FRESH_FOR`] for the same moment; within the deadline whatever Prometheus does.
    pub async fn measure(&self, namespaces: &[String], now: DateTime<Utc>) -> Vec<Measured> {
        let asks = namespaces.iter().map(|ns| self.measure_one(ns, now));
        futures::future::join_all(asks).await
    }

    async fn measure_one(&self, namespace: &str, now: DateTime<Utc>) -> Measured {
        let turn = Arc::clone(
            locked(&self.asking)
                .entry(namespace.to_owned())
                .or_default(),
        );
        let _turn = turn.lock().await;
        let known = locked(&self.known).get(namespace).cloned();
        // Reused only for about the same moment: a clock moved by hand, or running fast,
        // asks again.
        let fresh = known.as_ref().is_some_and(|k| {
            k.asked.elapsed() < FRESH_FOR && (now - k.measured_at).num_seconds().abs() < 300
        });
        if fresh {
            return Measured {
                measured_at: known.as_ref().map(|k| k.measured_at),
                readings: known.map(|k| k.readings),
            };
        }
        let (readings, failure) = self.ask_all(namespace, &ASKED, now).await;
        match failure {
            Some(why) => {
                self.went_down(now, why);
                // What it answered (if anything) on top of what it answered before; the
                // moment measured stays the last whole answer's.
                let mut known_now = locked(&self.known);
                let entry = known_now.get_mut(namespace);
                match entry {
                    Some(k) => {
                        k.readings = readings.or_older(&k.readings);
                        k.asked = Instant::now();
                        Measured {
                            readings: Some(k.readings.clone()),
                            measured_at: Some(k.measured_at),
                        }
                    }
                    None => Measured::default(),
                }
            }
            None => {
                *locked(&self.down) = None;
                let known = Known {
                    readings: readings.clone(),
                    measured_at: now,
                    asked: Instant::now(),
                };
                locked(&self.known).insert(namespace.to_owned(), known);
                Measured {
                    readings: Some(readings),
                    measured_at: Some(now),
                }
            }
        }
    }

    /// The figures each of `namespaces`' state is judged by ([`JUDGED`]) at `now`, asked
    /// now, a few environments at a time, each within the deadline; `None` where
    /// Prometheus did not answer them all. Not kept: the caller keeps what it needs.
    pub async fn judged(&self, namespaces: &[String], now: DateTime<Utc>) -> Vec<Option<Readings>> {
        let mut out = Vec::with_capacity(namespaces.len());
        // A few environments at a time: a fleet's worth at once would crowd out the
        // Runtime tab's own questions.
        for some in namespaces.chunks(JUDGED_AT_ONCE) {
            let asks = some.iter().map(|namespace| self.judge_one(namespace, now));
            out.extend(futures::future::join_all(asks).await);
        }
        out
    }

    async fn judge_one(&self, namespace: &str, now: DateTime<Utc>) -> Option<Readings> {
        match self.ask_all(namespace, &JUDGED, now).await {
            (readings, None) => {
                *locked(&self.down) = None;
                Some(readings)
            }
            (_, Some(why)) => {
                self.went_down(now, why);
                None
            }
        }
    }

    /// Every query of `asked` for `namespace` at once: what was answered, and why not all
    /// were (the last failure), if so.
    async fn ask_all(
        &self,
        namespace: &str,
        asked: &[Asked],
        now: DateTime<Utc>,
    ) -> (Readings, Option<String>) {
        let answers =
            futures::future::join_all(asked.iter().map(|a| self.ask(namespace, a, now))).await;
        let mut readings = Readings::default();
        let mut failure = None;
        for (asked, answer) in asked.iter().zip(answers) {
            match answer {
                Ok(Answer::Figure(Some(v))) => {
                    readings.figures.insert(asked.key(), v);
                }
                Ok(Answer::Series(points)) if !points.is_empty() => {
                    readings.series.insert(asked.key(), points);
                }
                Ok(_) => {}
                Err(why) => failure = Some(why),
            }
        }
        (readings, failure)
    }

    /// Notes that Prometheus did not answer at `now`, and why (since when stays the first).
    fn went_down(&self, now: DateTime<Utc>, why: String) {
        let mut down = locked(&self.down);
        if down.is_none() {
            tracing::warn!(%why, "Prometheus did not answer");
        }
        match down.as_mut() {
            Some(down) => down.1 = why,
            None => *down = Some((now, why)),
        }
    }

    /// One query, answered within the deadline or not at all.
    async fn ask(
        &self,
        namespace: &str,
        asked: &Asked,
        now: DateTime<Utc>,
    ) -> Result<Answer, String> {
        let query = self
            .config
            .queries
            .of(asked.measure)
            .replace("$namespace", namespace)
            .replace("$window", asked.window);
        let base = self.config.url.trim_end_matches('/');
        let step = CHART_STEP.num_seconds();
        let (url, form) = if asked.range {
            // Whole steps, so the same moment reads the same series.
            let end = now.timestamp().div_euclid(step) * step;
            let start = end - CHART_SPAN.num_seconds();
            (
                format!("{base}/api/v1/query_range"),
                vec![
                    ("query", query),
                    ("start", start.to_string()),
                    ("end", end.to_string()),
                    ("step", step.to_string()),
                ],
            )
        } else {
            (
                format!("{base}/api/v1/query"),
                vec![("query", query), ("time", now.timestamp().to_string())],
            )
        };
        let mut request = self.http.post(url).form(&form);
        if let Some(token) = &self.config.token {
            request = request.bearer_auth(token.expose());
        }
        // The client's timeout covers the whole request, body included: one deadline.
        let unanswered = |e: reqwest::Error| {
            if e.is_timeout() {
                format!(
                    "Prometheus did not answer within {} s",
                    self.config.deadline_secs
                )
            } else {
                format!("Prometheus could not be reached: {e}")
            }
        };
        let response = request.send().await.map_err(unanswered)?;
        let status = response.status();
        let answered: Value = response.json().await.map_err(|e| {
            if e.is_timeout() {
                unanswered(e)
            } else {
                format!("Prometheus answered {status} with no JSON: {e}")
            }
        })?;
        if answered["status"] != "success" {
            return Err(format!(
                "Prometheus refused the {} query ({status}): {}",
                asked.measure.key(),
                answered["error"].as_str().unwrap_or("no reason given")
            ));
        }
        let result = &answered["data"]["result"][0];
        Ok(if asked.range {
            Answer::Series(
                result["values"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(|p| {
                        #[allow(clippy::cast_possible_truncation)]
                        let t = p[0].as_f64()? as i64;
                        Some((t, figure(&p[1])?))
                    })
                    .collect(),
            )
        } else {
            Answer::Figure(figure(&result["value"][1]))
        })
    }
}

/// What one query gave.
enum Answer {
    Figure(Option<f64>),
    Series(Vec<(i64, f64)>),
}
