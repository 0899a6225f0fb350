//! Typical step durations: the median of that step over the newest 20 recorded runs of the
//! same kind, else of all kinds, needing at least 3 values; else the built-in estimate.

use std::collections::HashMap;

use crate::snapshot::RecordedRun;

use super::model::{ServiceKind, StepId, TypicalSource};

pub const NEWEST_RUNS: usize = 20;
pub const MIN_SAMPLES: usize = 3;

/// Typical durations, computed once per snapshot.
#[derive(Debug, Default)]
pub struct Typicals {
    by_kind: HashMap<(Option<ServiceKind>, StepId), u64>,
}

impl Typicals {
    pub fn new(history: &[RecordedRun]) -> Self {
        let mut runs: Vec<&RecordedRun> = history.iter().collect();
        // Newest first; ties by service so the choice never depends on input order.
        runs.sort_by(|a, b| {
            b.started_at
                .cmp(&a.started_at)
                .then_with(|| a.service.cmp(&b.service))
                .then_with(|| a.kind.cmp(&b.kind))
        });
        let mut by_kind = HashMap::new();
        let kinds = ServiceKind::ALL.into_iter().map(Some).chain([None]);
        for kind in kinds {
            let newest: Vec<&RecordedRun> = runs
                .iter()
                .filter(|r| kind.is_none_or(|k| r.kind == k.as_str()))
                .take(NEWEST_RUNS)
                .copied()
                .collect();
            for step in StepId::ALL {
                let mut values: Vec<u64> = newest
                    .iter()
                    .filter_map(|r| r.steps.get(step.as_str()).copied())
                    .collect();
                if values.len() >= MIN_SAMPLES {
                    by_kind.insert((kind, step), median(&mut values));
                }
            }
        }
        Self { by_kind }
    }

    /// The typical duration of `step` for `kind`, and where it came from.
    pub fn get(&self, kind: Option<ServiceKind>, step: StepId) -> (u64, TypicalSource) {
        kind.and_then(|k| self.by_kind.get(&(Some(k), step)))
            .or_else(|| self.by_kind.get(&(None, step)))
            .map_or((step.estimate_sec(), TypicalSource::Estimate), |&v| {
                (v, TypicalSource::Measured)
            })
    }
}

fn median(values: &mut [u64]) -> u64 {
    values.sort_unstable();
    let mid = values.len() / 2;
    if values.len() % 2 == 0 {
        values[mid - 1] / 2 + values[mid] / 2 + (values[mid - 1] % 2 + values[mid] % 2) / 2
    } else {
        values[mid]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::{DateTime, Duration, Utc};

    fn run(kind: &str, minutes_ago: i64, build: Option<u64>) -> RecordedRun {
        let now: DateTime<Utc> = "2026-11-30T10:00:00Z".parse().unwrap();
        let started_at = now - Duration::minutes(minutes_ago);
        RecordedRun {
            service: format!("svc-{minutes_ago}"),
            kind: kind.to_owned(),
            started_at,
            finished_at: started_at + Duration::minutes(30),
            steps: build
                .map(|b| [("first-build".to_owned(), b)].into_iter().collect())
                .unwrap_or_default(),
        }
    }

    #[test]
    fn median_of_odd_and_even() {
        assert_eq!(median(&mut [5, 1, 3]), 3);
        assert_eq!(median(&mut [4, 1, 3, 2]), 2);
        assert_eq!(median(&mut [u64::MAX, u64::MAX]), u64::MAX);
    }

    #[test]
    fn same_kind_then_all_kinds_then_estimate() {
        let history = vec![
            run("Go", 1, Some(100)),
            run("Go", 2, Some(200)),
            run("Go", 3, Some(300)),
            run("NodeJS", 4, Some(1000)),
        ];
        let t = Typicals::new(&history);
        assert_eq!(
            t.get(Some(ServiceKind::Go), StepId::FirstBuild),
            (200, TypicalSource::Measured)
        );
        // NodeJS has one run: fall back to all kinds (100, 200, 300, 1000).
        assert_eq!(
            t.get(Some(ServiceKind::NodeJS), StepId::FirstBuild),
            (250, TypicalSource::Measured)
        );
        assert_eq!(
            t.get(Some(ServiceKind::Go), StepId::Catalog),
            (StepId::Catalog.estimate_sec(), TypicalSource::Estimate)
        );
    }

    #[test]
    fn only_the_newest_twenty_count() {
        let mut history: Vec<RecordedRun> = (0..20).map(|i| run("Go", i, Some(60))).collect();
        history.extend((20..40).map(|i| run("Go", i, Some(6000))));
        let t = Typicals::new(&history);
        assert_eq!(t.get(Some(ServiceKind::Go), StepId::FirstBuild).0, 60);
    }

    #[test]
    fn runs_without_the_step_are_not_zero() {
        let history = vec![
            run("Go", 1, None),
            run("Go", 2, None),
            run("Go", 3, Some(90)),
        ];
        let t = Typicals::new(&history);
        assert_eq!(
            t.get(Some(ServiceKind::Go), StepId::FirstBuild).1,
            TypicalSource::Estimate
        );
    }
}
