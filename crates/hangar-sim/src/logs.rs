//! Container logs, derived from a pod and world time, line by line so a followed log costs
//! only its new lines. A container writes a first line when it starts, then a line every
//! [`EVERY`] seconds while it runs — or, for a test runner (annotation
//! `hangar-sim.io/log: tests`), a test's result every [`TEST_EVERY_US`] µs up to
//! [`TEST_LINES`] — and a last line when it ends (its failure message, if it failed). Lines
//! carry ANSI colours as real tools print them.

use chrono::{DateTime, Duration, Utc};
use serde_json::Value;

/// World seconds between a plain container's log lines.
pub const EVERY: i64 = 5;
/// World microseconds between a test runner's lines (1,250 a second).
pub const TEST_EVERY_US: i64 = 800;
/// How many tests a test runner runs: its log's length, less its first and last lines.
pub const TEST_LINES: usize = 100_000;

const GREEN: &str = "\x1b[32m";
const RED: &str = "\x1b[31m";
const BOLD: &str = "\x1b[1m";
const RESET: &str = "\x1b[0m";

/// What one container of a pod writes.
#[derive(Debug)]
pub struct Script {
    step: String,
    started: DateTime<Utc>,
    finished: Option<DateTime<Utc>>,
    exit: i64,
    failure: Option<String>,
    tests: bool,
}

impl Script {
    /// `container` of `pod`; `None` when the pod has no such container or it has not
    /// started.
    pub fn of(pod: &Value, container: &str) -> Option<Script> {
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
        let started = time(&state["running"]["startedAt"])
            .or_else(|| time(&state["terminated"]["startedAt"]))?;
        let annotations = &pod["metadata"]["annotations"];
        Some(Script {
            step: container
                .strip_prefix("step-")
                .unwrap_or(container)
                .to_owned(),
            started,
            finished: time(&state["terminated"]["finishedAt"]),
            exit: state["terminated"]["exitCode"].as_i64().unwrap_or(0),
            failure: annotations["hangar-sim.io/failure"]
                .as_str()
                .map(str::to_owned),
            tests: annotations["hangar-sim.io/log"] == "tests",
        })
    }

    /// How many lines it has written by `until`, and whether it has ended (its last line
    /// among them).
    pub fn written(&self, until: DateTime<Utc>) -> (usize, bool) {
        let ended = self.finished.is_some_and(|f| f <= until);
        let end = self.finished.map_or(until, |f| f.min(until));
        let ran = (end - self.started).max(Duration::zero());
        let body = if self.tests {
            usize::try_from(ran.num_microseconds().unwrap_or(i64::MAX) / TEST_EVERY_US)
                .unwrap_or(usize::MAX)
                .min(TEST_LINES)
        } else {
            usize::try_from((ran.num_seconds() - 1).max(0) / EVERY).unwrap_or(0)
        };
        (1 + body + usize::from(ended), ended)
    }

    /// Line `n` (from 0) and when it was written; `ended` says whether the container has
    /// ended, making the line after the body its last.
    pub fn line(&self, n: usize, ended: bool, body: usize) -> (DateTime<Utc>, String) {
        let step = &self.step;
        if n == 0 {
            return (self.started, format!("{BOLD}[{step}] starting{RESET}"));
        }
        if ended && n == body + 1 {
            let at = self.finished.unwrap_or(self.started);
            let text = match (self.exit, &self.failure) {
                (0, _) => format!("{GREEN}[{step}] done{RESET}"),
                (code, Some(m)) => format!("{RED}[{step}] {m} (exit code {code}){RESET}"),
                (code, None) => format!("{RED}[{step}] failed with exit code {code}{RESET}"),
            };
            return (at, text);
        }
        let k = i64::try_from(n).unwrap_or(i64::MAX);
        if self.tests {
            let at = self.started + Duration::microseconds(k * TEST_EVERY_US);
            // The last test of a failing runner is the one that failed.
            let failed = self.exit != 0 && ended && n == body;
            let verdict = if failed {
                format!("{RED}FAILED{RESET}")
            } else {
                format!("{GREEN}ok{RESET}")
            };
            let test = n - 1;
            return (
                at,
                format!(
                    "test suite_{:03}::case_{:02} ... {verdict}",
                    test / 100,
                    test % 100
                ),
            );
        }
        (
            self.started + Duration::seconds(k * EVERY),
            format!("[{step}] working ({n})"),
        )
    }

    /// Lines `from..` of what it has written by `until`, and whether it has ended.
    pub fn lines(&self, from: usize, until: DateTime<Utc>) -> (Vec<(DateTime<Utc>, String)>, bool) {
        let (count, ended) = self.written(until);
        let body = count - 1 - usize::from(ended);
        let lines = (from..count).map(|n| self.line(n, ended, body)).collect();
        (lines, ended)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn at(seconds: i64) -> DateTime<Utc> {
        DateTime::from_timestamp(1_800_000_000 + seconds, 0).unwrap()
    }

    fn pod(annotations: Value, finished: Option<(i64, i64)>) -> Value {
        let state = match finished {
            Some((secs, exit)) => json!({"terminated": {"startedAt": at(0).to_rfc3339(),
                "finishedAt": at(secs).to_rfc3339(), "exitCode": exit}}),
            None => json!({"running": {"startedAt": at(0).to_rfc3339()}}),
        };
        json!({"metadata": {"annotations": annotations},
               "status": {"containerStatuses": [{"name": "step-unit-tests", "state": state}]}})
    }

    #[test]
    fn a_plain_container_writes_every_few_seconds_and_a_last_line() {
        let running = Script::of(&pod(json!({}), None), "step-unit-tests").unwrap();
        let (lines, ended) = running.lines(0, at(12));
        assert!(!ended);
        let texts: Vec<&str> = lines.iter().map(|(_, t)| t.as_str()).collect();
        assert_eq!(
            texts,
            [
                "\x1b[1m[unit-tests] starting\x1b[0m",
                "[unit-tests] working (1)",
                "[unit-tests] working (2)"
            ]
        );
        let failed = Script::of(
            &pod(
                json!({"hangar-sim.io/failure": "2 tests failed"}),
                Some((12, 1)),
            ),
            "step-unit-tests",
        )
        .unwrap();
        let (lines, ended) = failed.lines(2, at(60));
        assert!(ended);
        assert_eq!(lines.len(), 2);
        assert_eq!(
            lines[1],
            (
                at(12),
                "\x1b[31m[unit-tests] 2 tests failed (exit code 1)\x1b[0m".to_owned()
            )
        );
        assert!(Script::of(&pod(json!({}), None), "step-lint").is_none());
    }

    #[test]
    fn a_test_runner_writes_a_hundred_thousand_lines_and_marks_its_failure() {
        let tests = json!({"hangar-sim.io/log": "tests"});
        let running = Script::of(&pod(tests.clone(), None), "step-unit-tests").unwrap();
        // 1,250 lines a second.
        assert_eq!(running.written(at(2)), (1 + 2_500, false));
        let failed = Script::of(&pod(tests, Some((90, 1))), "step-unit-tests").unwrap();
        let (count, ended) = failed.written(at(100));
        assert_eq!((count, ended), (TEST_LINES + 2, true));
        let (tail, _) = failed.lines(count - 2, at(100));
        assert_eq!(
            tail[0].1,
            "test suite_999::case_99 ... \x1b[31mFAILED\x1b[0m"
        );
        assert!(tail[1].1.contains("exit code 1"), "{tail:?}");
        let (head, _) = failed.lines(1, at(0) + Duration::microseconds(1_600));
        assert_eq!(head[0].1, "test suite_000::case_00 ... \x1b[32mok\x1b[0m");
    }
}
