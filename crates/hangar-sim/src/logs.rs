//! Container logs, derived from a pod and world time: a line every few seconds while the
//! container runs, and a last line when it ends (its failure message, if it failed).

use chrono::{DateTime, Duration, Utc};
use serde_json::Value;

/// World seconds between log lines.
pub const EVERY: i64 = 5;

/// What a container has written, and whether it has ended.
#[derive(Debug)]
pub struct Log {
    pub lines: Vec<(DateTime<Utc>, String)>,
    pub ended: bool,
}

/// The lines `container` of `pod` has written by `until`; `None` when the pod has no such
/// container.
pub fn lines(pod: &Value, container: &str, until: DateTime<Utc>) -> Option<Log> {
    let status = pod["status"]["containerStatuses"]
        .as_array()?
        .iter()
        .find(|c| c["name"] == container)?;
    let time = |v: &Value| {
        v.as_str()
            .and_then(|t| DateTime::parse_from_rfc3339(t).ok())
            .map(|t| t.with_timezone(&Utc))
    };
    let state = &status["state"];
    let started =
        time(&state["running"]["startedAt"]).or_else(|| time(&state["terminated"]["startedAt"]))?;
    let finished = time(&state["terminated"]["finishedAt"]);
    let step = container.strip_prefix("step-").unwrap_or(container);
    let end = finished.map_or(until, |f| f.min(until));
    let mut out = vec![(started, format!("[{step}] starting"))];
    let mut at = started + Duration::seconds(EVERY);
    let mut n = 1;
    while at < end {
        out.push((at, format!("[{step}] working ({n})")));
        at += Duration::seconds(EVERY);
        n += 1;
    }
    let ended = finished.is_some_and(|f| f <= until);
    if let (true, Some(f)) = (ended, finished) {
        let exit = state["terminated"]["exitCode"].as_i64().unwrap_or(0);
        let message = pod["metadata"]["annotations"]["hangar-sim.io/failure"].as_str();
        out.push((
            f,
            match (exit, message) {
                (0, _) => format!("[{step}] done"),
                (code, Some(m)) => format!("[{step}] {m} (exit code {code})"),
                (code, None) => format!("[{step}] failed with exit code {code}"),
            },
        ));
    }
    Some(Log { lines: out, ended })
}
