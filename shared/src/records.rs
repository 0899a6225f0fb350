//! Release records: what a prod release's record says of it that a person can check by
//! hand. The **confidence score** is a fixed, documented formula (`docs/confidence.md`):
//! six factors, each read into a number from 0 to 1, times its weight (the weights add up to
//! 100), summed — so the score is 0 to 100 and every point of it is shown with its working.
//! The **human part** (summary, risk, how it was checked, sign-off) is validated here, so
//! the browser and the backend refuse the same bad input with the same field and message.
//!
//! Unknown inputs are said to be unknown and count as the worst case (a record claims no
//! confidence it cannot show), never as a guess.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::pipelines::Outcome;

/// What the score is computed from: facts the record already lists.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ConfidenceInputs {
    /// The build and test runs of the release: how many passed, of how many (`None`: no run
    /// seen).
    pub runs: Option<(u32, u32)>,
    /// The canary analysis: each measurement's value against the limit it had to stay
    /// under (`value < limit` passes), e.g. an error rate of 0.004 against 0.01. Empty: no
    /// analysis ran.
    pub measurements: Vec<(f64, f64)>,
    /// How long the release ran in staging before prod (`None`: unknown).
    pub soaked_seconds: Option<i64>,
    /// The supply-chain evidence present, of the four Tower looks for (signature,
    /// provenance, SBOM, transparency log entry).
    pub evidence: u32,
    /// The commits the release adds over the previous prod release (`None`: unknown).
    pub commits: Option<u32>,
    /// Rollbacks and aborted rollouts in this release's journey to prod.
    pub rollbacks: u32,
}

/// One factor of the score with its working.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Factor {
    /// Its name in `docs/confidence.md`.
    pub name: String,
    /// What was read, in words ("3 of 3 runs passed", "unknown: no run seen").
    pub read: String,
    /// The reading as a number from 0 to 1.
    pub value: f64,
    /// Its weight (the weights add up to 100).
    pub weight: u32,
    /// `value × weight`: its points in the score.
    pub points: f64,
}

/// The score and its working.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Confidence {
    /// The sum of the factors' points, rounded to one decimal: 0 to 100.
    pub score: f64,
    pub factors: Vec<Factor>,
}

/// The weights, in the order the factors are shown.
pub const WEIGHTS: [(&str, u32); 6] = [
    ("runs", 25),
    ("analysis", 20),
    ("soak", 15),
    ("evidence", 20),
    ("change size", 10),
    ("rollbacks", 10),
];

/// A day in staging counts in full.
pub const SOAK_FULL_SECONDS: i64 = 24 * 3_600;
/// The evidence Tower looks for.
pub const EVIDENCE_PIECES: u32 = 4;

fn plural(n: u32, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// The score of `inputs`, with its working (see the module docs and `docs/confidence.md`).
pub fn confidence(inputs: &ConfidenceInputs) -> Confidence {
    let runs = match inputs.runs {
        Some((passed, total)) if total > 0 => (
            f64::from(passed.min(total)) / f64::from(total),
            format!("{passed} of {} passed", plural(total, "run", "runs")),
        ),
        _ => (0.0, "unknown: no build or test run seen".to_owned()),
    };
    // Each measurement's margin under its limit (1 at zero, 0 at or over the limit); the
    // analysis counts its weakest measurement.
    let margins = inputs.measurements.iter().map(|&(value, limit)| {
        if limit > 0.0 && value.is_finite() {
            (1.0 - value / limit).clamp(0.0, 1.0)
        } else {
            0.0
        }
    });
    let analysis = match margins.reduce(f64::min) {
        Some(weakest) => (
            weakest,
            format!(
                "{}; the highest reached {:.0}% of its limit",
                plural(
                    u32::try_from(inputs.measurements.len()).unwrap_or(u32::MAX),
                    "measurement",
                    "measurements"
                ),
                (1.0 - weakest) * 100.0
            ),
        ),
        None => (0.0, "no analysis ran".to_owned()),
    };
    #[allow(clippy::cast_precision_loss)]
    let soak = match inputs.soaked_seconds {
        Some(s) => (
            (s.max(0) as f64 / SOAK_FULL_SECONDS as f64).min(1.0),
            format!("{} in staging", crate::time::compact_duration(s.max(0))),
        ),
        None => (0.0, "unknown: no arrival in staging seen".to_owned()),
    };
    let pieces = inputs.evidence.min(EVIDENCE_PIECES);
    let evidence = (
        f64::from(pieces) / f64::from(EVIDENCE_PIECES),
        format!("{pieces} of {EVIDENCE_PIECES} pieces of evidence"),
    );
    // One commit counts in full; each five more halve what is left.
    let size = match inputs.commits {
        Some(n) => (
            1.0 / (1.0 + f64::from(n.saturating_sub(1)) / 5.0),
            plural(n, "commit", "commits"),
        ),
        None => (0.0, "unknown: the change was not compared".to_owned()),
    };
    let rollbacks = (
        1.0 / (1.0 + f64::from(inputs.rollbacks)),
        plural(inputs.rollbacks, "rollback", "rollbacks"),
    );
    let factors: Vec<Factor> = [runs, analysis, soak, evidence, size, rollbacks]
        .into_iter()
        .zip(WEIGHTS)
        .map(|((value, read), (name, weight))| Factor {
            name: name.to_owned(),
            read,
            value,
            weight,
            points: value * f64::from(weight),
        })
        .collect();
    let total: f64 = factors.iter().map(|f| f.points).sum();
    Confidence {
        score: (total * 10.0).round() / 10.0,
        factors,
    }
}

/// The record file's schema (documented in `docs/release-records.md`); a new field that
/// older readers may ignore keeps it, anything else bumps it.
pub const SCHEMA: &str = "tower.hangar.io/release-record/v1";

/// A prod release's record: what Tower reads of it (the human part added by people).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Record {
    pub schema: String,
    pub service: String,
    /// The release's name: its image's tag (`image::release_name`), which names the file.
    pub release: String,
    pub image: String,
    pub version: Option<String>,
    pub commit: Option<String>,
    /// The image's digest in prod, when Tower read one.
    pub digest: Option<String>,
    /// The build that published it and how it ended (`None`: no visible run).
    pub build: Option<(String, Outcome)>,
    /// The pull requests since the previous prod release (`None`: not compared).
    pub pulls: Option<Vec<crate::releases::ComparedPull>>,
    /// When it reached each environment, in promotion order, and how long after the one
    /// before (`None` where Tower cannot tell).
    pub transitions: Vec<Transition>,
    /// Every gate it passed or met on the way into prod.
    pub gates: Vec<Gate>,
    /// What vouches for the image in prod; `None` when Tower found nothing to read.
    pub evidence: Option<EvidenceRead>,
    pub confidence: Confidence,
    /// The part people add by a pull request (`None`: not written yet).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub human: Option<HumanPart>,
}

impl Record {
    /// The record with only links Tower may put on a page: a pull request's `url` in the
    /// file is anyone's text (Git holds what was committed), kept only when it is a GitHub
    /// web link ([`crate::links::github`], on github.com or `enterprise`).
    pub fn links_checked(mut self, enterprise: Option<&str>) -> Self {
        for pull in self.pulls.iter_mut().flatten() {
            pull.url = pull
                .url
                .take()
                .and_then(|url| crate::links::github(&url, enterprise))
                .map(crate::links::Checked::into_string);
        }
        self
    }

    /// When it arrived in prod, if Tower read it.
    pub fn prod_at(&self) -> Option<DateTime<Utc>> {
        self.transitions
            .iter()
            .find(|t| crate::hangar::is_production(&t.environment))
            .and_then(|t| t.arrived_at)
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Transition {
    pub environment: String,
    pub arrived_at: Option<DateTime<Utc>>,
    /// Seconds after it reached the environment before (after its build, for the first).
    pub after_seconds: Option<i64>,
}

/// One gate: a canary step, an analysis metric, Argo CD's sync and health.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Gate {
    pub name: String,
    /// `true` passed, `false` failed, `None` not reached or not known.
    pub passed: Option<bool>,
    pub detail: String,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EvidenceRead {
    pub signing: crate::evidence::Signing,
    pub provenance: bool,
    pub signature: bool,
    pub sbom: bool,
    pub transparency: bool,
    pub summary: String,
}

/// A limit a success condition sets (`result[0] < 0.01` → 0.01), when it is one Tower
/// reads: a single `<` or `<=` against a number.
pub fn limit_of(condition: &str) -> Option<f64> {
    let (_, limit) = condition.split_once('<')?;
    limit.trim_start_matches('=').trim().parse().ok()
}

/// The pull request among `pulls` that promoted `image` to prod (Tower's branch for it,
/// `hangar::promotion_branch`).
pub fn promotion_of<'a>(
    pulls: impl IntoIterator<Item = &'a crate::github::PullRequest>,
    image: &str,
) -> Option<&'a crate::github::PullRequest> {
    let branch = crate::hangar::promotion_branch("prod", image);
    pulls
        .into_iter()
        .find(|pr| pr.head.as_ref().is_some_and(|h| h.branch == branch))
}

/// The record of `release` as Tower reads it now: its build among `pipelines`' runs, its
/// prod environment among `deployments`, what `compared` found since the previous prod
/// release, the pull request that promoted it to prod (`promotion`, when Tower saw one) and
/// how many rollbacks its journey met.
pub fn draft(
    release: &crate::releases::Release,
    service: &str,
    pipelines: &crate::pipelines::Pipelines,
    prod: Option<&crate::deployments::Environment>,
    compared: Option<&crate::releases::Comparison>,
    promotion: Option<&crate::github::PullRequest>,
) -> Record {
    use crate::deployments::StepStatus;
    let build = release.run.as_ref().map(|name| {
        let outcome = pipelines
            .runs
            .iter()
            .find(|r| r.name == *name)
            .map_or(Outcome::Unknown, |r| r.outcome);
        (name.clone(), outcome)
    });
    let mut before = release.built_at;
    let transitions = release
        .cells
        .iter()
        .map(|cell| {
            let after_seconds = match (before, cell.arrived_at) {
                (Some(b), Some(a)) => Some((a - b).num_seconds()),
                _ => None,
            };
            before = cell.arrived_at;
            Transition {
                environment: cell.environment.clone(),
                arrived_at: cell.arrived_at,
                after_seconds,
            }
        })
        .collect::<Vec<_>>();
    let rollout = prod.and_then(|p| p.rollout.as_ref());
    let mut gates = Vec::new();
    if let Some((name, outcome)) = &build {
        gates.push(Gate {
            name: format!("build {name}"),
            passed: match outcome {
                Outcome::Succeeded => Some(true),
                Outcome::Failed | Outcome::Cancelled | Outcome::TimedOut => Some(false),
                _ => None,
            },
            detail: outcome.as_str().to_owned(),
        });
    }
    let mut measurements = Vec::new();
    for step in rollout.map(|r| r.steps.as_slice()).unwrap_or_default() {
        let what = match (step.weight, &step.duration) {
            (Some(w), _) => format!("{w}% of traffic"),
            (None, Some(Some(d))) => format!("pause {d}"),
            (None, Some(None)) => "pause until promoted".to_owned(),
            (None, None) => format!("{:?}", step.kind).to_lowercase(),
        };
        gates.push(Gate {
            name: format!("canary step {}: {what}", step.index + 1),
            passed: (step.status == StepStatus::Done).then_some(true),
            detail: format!("{:?}", step.status).to_lowercase(),
        });
    }
    for analysis in rollout.map(|r| r.analysis.as_slice()).unwrap_or_default() {
        for metric in &analysis.metrics {
            let limit = metric.success_condition.as_deref().and_then(limit_of);
            let values: Vec<f64> = metric.measurements.iter().filter_map(|m| m.value).collect();
            if let Some(limit) = limit {
                measurements.extend(values.iter().map(|v| (*v, limit)));
            }
            let failed = metric
                .measurements
                .iter()
                .filter(|m| m.phase.as_deref() == Some("Failed"))
                .count();
            gates.push(Gate {
                name: format!("analysis {}: {}", analysis.name, metric.name),
                passed: match metric.phase.as_deref() {
                    Some("Successful") => Some(true),
                    Some("Failed" | "Error") => Some(false),
                    _ => (failed == 0 && !values.is_empty()).then_some(true),
                },
                detail: format!(
                    "{} measured, {failed} failed; passes when {}",
                    metric.measurements.len(),
                    metric.success_condition.as_deref().unwrap_or("unknown")
                ),
            });
        }
    }
    if let Some(pr) = promotion {
        gates.push(Gate {
            name: format!("promotion to prod: pull request #{}", pr.number),
            passed: pr.merged_at.is_some().then_some(true),
            detail: format!(
                "opened by {}; {}",
                pr.user
                    .as_ref()
                    .map_or("someone Tower cannot name", |u| u.login.as_str()),
                pr.merged_at.map_or_else(
                    || "not merged".to_owned(),
                    |at| format!("merged {}", at.to_rfc3339())
                )
            ),
        });
    }
    if let Some(argo) = prod.and_then(|p| p.argo.as_ref()) {
        let sync = argo.sync.clone().unwrap_or_else(|| "unknown".to_owned());
        let health = argo.health.clone().unwrap_or_else(|| "unknown".to_owned());
        gates.push(Gate {
            name: format!("Argo CD {}", argo.name),
            passed: match (sync.as_str(), health.as_str()) {
                ("Synced", "Healthy") => Some(true),
                (_, "Degraded") => Some(false),
                _ => None,
            },
            detail: format!("{sync}, {health}"),
        });
    }
    let image = crate::image::without_digest(&release.image);
    let evidence = rollout
        .into_iter()
        .flat_map(|r| [r.canary.as_ref(), r.stable.as_ref()])
        .flatten()
        .filter(|set| set.image.as_deref().map(crate::image::without_digest) == Some(image))
        .find_map(|set| set.evidence.as_ref());
    let read = evidence.map(|e| EvidenceRead {
        signing: e.signing,
        provenance: e.provenance.is_some(),
        signature: e.signature.is_some(),
        sbom: e.sbom.is_some(),
        transparency: e.transparency.is_some(),
        summary: e.summary.clone(),
    });
    let arrival = |env: &str| {
        release
            .cells
            .iter()
            .find(|c| c.environment == env)
            .and_then(|c| c.arrived_at)
    };
    let inputs = ConfidenceInputs {
        runs: build.as_ref().and_then(|(_, outcome)| match outcome {
            Outcome::Succeeded => Some((1, 1)),
            Outcome::Failed | Outcome::Cancelled | Outcome::TimedOut => Some((0, 1)),
            _ => None,
        }),
        measurements,
        soaked_seconds: match (arrival("staging"), arrival("prod")) {
            (Some(s), Some(p)) => Some((p - s).num_seconds()),
            _ => None,
        },
        evidence: read.as_ref().map_or(0, |e| {
            u32::from(e.provenance)
                + u32::from(e.signature)
                + u32::from(e.sbom)
                + u32::from(e.transparency)
        }),
        commits: compared.map(|c| u32::try_from(c.total).unwrap_or(u32::MAX)),
        rollbacks: u32::try_from(
            release
                .cells
                .iter()
                .filter(|c| c.state == crate::releases::CellState::RolledBack)
                .count(),
        )
        .unwrap_or(u32::MAX),
    };
    Record {
        schema: SCHEMA.to_owned(),
        service: service.to_owned(),
        release: crate::image::release_name(&release.image)
            .unwrap_or_default()
            .to_owned(),
        image: release.image.clone(),
        version: release.version.clone(),
        commit: release.commit.clone(),
        digest: evidence.and_then(|e| e.digest.clone()),
        build,
        pulls: compared.map(|c| c.pulls.clone()),
        transitions,
        gates,
        evidence: read,
        confidence: confidence(&inputs),
        human: None,
    }
}

/// Rows a page of the records list shows.
pub const PER_PAGE: usize = 20;

/// One record in the list.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RecordRow {
    pub release: String,
    pub version: Option<String>,
    pub image: String,
    pub prod_at: Option<DateTime<Utc>>,
    pub score: f64,
    /// From the human part, once written.
    pub risk: Option<Risk>,
    pub signed_off: Option<SignOff>,
    /// Not merged yet: the pull request proposing the record.
    pub proposed: Option<crate::releases::PullRef>,
}

impl RecordRow {
    pub fn of(record: &Record, proposed: Option<crate::releases::PullRef>) -> Self {
        let human = record.human.as_ref();
        Self {
            release: record.release.clone(),
            version: record.version.clone(),
            image: record.image.clone(),
            prod_at: record.prod_at(),
            score: record.confidence.score,
            risk: human.map(|h| h.risk),
            signed_off: human.and_then(|h| h.signed_off.clone()),
            proposed,
        }
    }
}

/// Which records the list shows.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RecordFilter {
    pub risk: Option<Risk>,
    /// `true`: signed off only; `false`: not signed off only.
    pub signed_off: Option<bool>,
}

impl RecordFilter {
    pub fn keeps(&self, row: &RecordRow) -> bool {
        self.risk.is_none_or(|r| row.risk == Some(r))
            && self
                .signed_off
                .is_none_or(|s| row.signed_off.is_some() == s)
    }
}

/// One page of a service's records: newest in prod first (a record whose prod arrival is
/// unknown last), kept by `filter`, [`PER_PAGE`] a page; `page` counts from 1.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RecordsPage {
    pub service: String,
    pub filter: RecordFilter,
    pub page: usize,
    /// Pages in all (at least 1).
    pub pages: usize,
    /// Records the filter keeps, on every page.
    pub total: usize,
    pub rows: Vec<RecordRow>,
}

/// `rows` (in any order) cut into the page `page` of those `filter` keeps.
pub fn page_of(
    service: &str,
    mut rows: Vec<RecordRow>,
    filter: RecordFilter,
    page: usize,
) -> RecordsPage {
    rows.retain(|r| filter.keeps(r));
    rows.sort_by(|a, b| {
        b.prod_at
            .is_some()
            .cmp(&a.prod_at.is_some())
            .then(b.prod_at.cmp(&a.prod_at))
            .then_with(|| b.release.cmp(&a.release))
    });
    let total = rows.len();
    let pages = total.div_ceil(PER_PAGE).max(1);
    let page = page.max(1);
    let rows = rows
        .into_iter()
        .skip((page - 1).saturating_mul(PER_PAGE))
        .take(PER_PAGE)
        .collect();
    RecordsPage {
        service: service.to_owned(),
        filter,
        page,
        pages,
        total,
        rows,
    }
}

/// How risky a release felt to the person signing it off.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Risk {
    Low,
    Medium,
    High,
}

impl Risk {
    pub const ALL: [Risk; 3] = [Risk::Low, Risk::Medium, Risk::High];

    pub fn as_str(self) -> &'static str {
        match self {
            Risk::Low => "low",
            Risk::Medium => "medium",
            Risk::High => "high",
        }
    }

    pub fn parse(word: &str) -> Option<Risk> {
        Risk::ALL.into_iter().find(|r| r.as_str() == word)
    }
}

/// The part of a record only people write.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct HumanPart {
    /// A plain summary of the release.
    pub summary: String,
    pub risk: Risk,
    /// How it was checked.
    pub checked: String,
    /// Who signed it off, and when (`None`: not signed off yet).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signed_off: Option<SignOff>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SignOff {
    pub by: String,
    pub at: DateTime<Utc>,
}

/// The human part as a person sends it (`POST /api/records/notes`): Tower signs it off in
/// the sender's name at its own time when `signOff` says so — nobody can send a sign-off
/// in another's name or at another time.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct HumanNotes {
    pub summary: String,
    pub risk: Risk,
    pub checked: String,
    /// Sign it off now, as the sender.
    #[serde(default)]
    pub sign_off: bool,
}

impl HumanNotes {
    /// The words alone, not signed off.
    pub fn unsigned(&self) -> HumanPart {
        HumanPart {
            summary: self.summary.clone(),
            risk: self.risk,
            checked: self.checked.clone(),
            signed_off: None,
        }
    }

    /// The human part these notes make when `subject` sends them at `now`: signed off by
    /// `subject` at `now` when asked. A sign-off the record already holds (`before`) by the
    /// same person over the same words is kept as it was: the same notes sent again make the
    /// same record.
    pub fn signed(
        &self,
        subject: &str,
        now: DateTime<Utc>,
        before: Option<&HumanPart>,
    ) -> HumanPart {
        let mut part = self.unsigned();
        if self.sign_off {
            let kept = before
                .filter(|before| {
                    (
                        before.summary.as_str(),
                        before.risk,
                        before.checked.as_str(),
                    ) == (part.summary.as_str(), part.risk, part.checked.as_str())
                })
                .and_then(|before| before.signed_off.clone())
                .filter(|kept| kept.by == subject);
            part.signed_off = Some(kept.unwrap_or_else(|| SignOff {
                by: subject.to_owned(),
                at: now,
            }));
        }
        part
    }
}

/// What is wrong with a field, for the browser to show beside it and the backend to answer
/// (HTTP 400 naming `field`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Invalid {
    /// The field's path in the JSON (`summary`, `checked`).
    pub field: String,
    pub message: String,
}

/// The longest summary and "how it was checked".
pub const TEXT_MAX: usize = 4_000;

/// Every problem with the words a person wrote, in field order; empty when they may be saved.
/// (The sign-off is not theirs to write: Tower signs in the sender's name at its own time,
/// [`HumanNotes::signed`].)
pub fn validate(notes: &HumanNotes) -> Vec<Invalid> {
    let mut out = Vec::new();
    let mut text = |field: &str, value: &str, what: &str| {
        let trimmed = value.trim();
        let message = if trimmed.is_empty() {
            Some(format!("write {what}"))
        } else if value.chars().count() > TEXT_MAX {
            Some(format!("{what} is over {TEXT_MAX} characters"))
        } else if value
            .chars()
            .any(|c| c.is_control() && c != '\n' && c != '\t')
        {
            Some(format!("{what} has control characters"))
        } else {
            None
        };
        if let Some(message) = message {
            out.push(Invalid {
                field: field.to_owned(),
                message,
            });
        }
    };
    text("summary", &notes.summary, "a plain summary");
    text("checked", &notes.checked, "how it was checked");
    out
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    fn sure() -> ConfidenceInputs {
        ConfidenceInputs {
            runs: Some((3, 3)),
            measurements: vec![(0.0, 0.01)],
            soaked_seconds: Some(SOAK_FULL_SECONDS),
            evidence: 4,
            commits: Some(1),
            rollbacks: 0,
        }
    }

    #[test]
    fn tower_signs_notes_off_in_the_senders_name_at_its_own_time() {
        use chrono::TimeZone as _;
        let at = |minute: u32| Utc.with_ymd_and_hms(2026, 12, 2, 9, minute, 0).unwrap();
        let notes = HumanNotes {
            summary: "Faster checkout".to_owned(),
            risk: Risk::Low,
            checked: "Canary analysis".to_owned(),
            sign_off: true,
        };
        let mine = notes.signed("user:default/ana", at(5), None);
        assert_eq!(
            mine.signed_off,
            Some(SignOff {
                by: "user:default/ana".to_owned(),
                at: at(5)
            })
        );
        // Sent again later over the same words: the sign-off stands as it was.
        assert_eq!(notes.signed("user:default/ana", at(9), Some(&mine)), mine);
        // Someone else, or other words: signed anew, by the sender, now.
        let theirs = notes.signed("user:default/bo", at(9), Some(&mine));
        assert_eq!(
            theirs.signed_off.map(|s| (s.by, s.at)),
            Some(("user:default/bo".to_owned(), at(9)))
        );
        let other = HumanNotes {
            risk: Risk::High,
            ..notes.clone()
        };
        assert_eq!(
            other
                .signed("user:default/ana", at(9), Some(&mine))
                .signed_off
                .map(|s| s.at),
            Some(at(9))
        );
        // Not asked: not signed off, whatever the record held.
        let plain = HumanNotes {
            sign_off: false,
            ..notes
        };
        assert_eq!(
            plain
                .signed("user:default/ana", at(9), Some(&mine))
                .signed_off,
            None
        );
        // A sender cannot name the signer: the notes have no such field.
        let forged = serde_json::json!({"summary": "s", "risk": "low", "checked": "c",
            "signedOff": {"by": "someone-else", "at": "2026-12-02T09:00:00Z"}});
        assert!(serde_json::from_value::<HumanNotes>(forged).is_err());
    }

    #[test]
    fn the_weights_add_up_to_a_hundred_and_a_sure_release_scores_them_all() {
        assert_eq!(WEIGHTS.iter().map(|(_, w)| w).sum::<u32>(), 100);
        let c = confidence(&sure());
        assert_eq!(c.score, 100.0);
        assert!(c.factors.iter().all(|f| f.points == f64::from(f.weight)));
    }

    #[test]
    fn a_score_is_worked_out_factor_by_factor() {
        let c = confidence(&ConfidenceInputs {
            runs: Some((2, 4)),
            measurements: vec![(0.004, 0.01), (0.002, 0.01)],
            soaked_seconds: Some(6 * 3_600),
            evidence: 3,
            commits: Some(6),
            rollbacks: 1,
        });
        let points: Vec<(String, f64)> = c
            .factors
            .iter()
            .map(|f| (f.name.clone(), (f.points * 100.0).round() / 100.0))
            .collect();
        // 25×0.5, 20×0.6, 15×0.25, 20×0.75, 10×0.5, 10×0.5
        assert_eq!(
            points,
            [
                ("runs".to_owned(), 12.5),
                ("analysis".to_owned(), 12.0),
                ("soak".to_owned(), 3.75),
                ("evidence".to_owned(), 15.0),
                ("change size".to_owned(), 5.0),
                ("rollbacks".to_owned(), 5.0),
            ]
        );
        assert_eq!(c.score, 53.3);
        assert_eq!(c.factors[0].read, "2 of 4 runs passed");
        assert_eq!(
            c.factors[1].read,
            "2 measurements; the highest reached 40% of its limit"
        );
    }

    #[test]
    fn unknown_inputs_are_said_and_count_as_the_worst_case() {
        let c = confidence(&ConfidenceInputs::default());
        assert_eq!(c.score, 10.0, "only 'no rollbacks' scores");
        assert!(c.factors[0].read.starts_with("unknown"));
        assert!(c.factors[2].read.starts_with("unknown"));
        assert!(c.factors[4].read.starts_with("unknown"));
    }

    fn inputs() -> impl Strategy<Value = ConfidenceInputs> {
        (
            proptest::option::of((0u32..50, 0u32..50)),
            proptest::collection::vec((0.0f64..0.05, 0.001f64..0.05), 0..6),
            proptest::option::of(-1_000i64..200_000),
            0u32..6,
            proptest::option::of(0u32..200),
            0u32..5,
        )
            .prop_map(
                |(runs, measurements, soaked_seconds, evidence, commits, rollbacks)| {
                    ConfidenceInputs {
                        runs,
                        measurements,
                        soaked_seconds,
                        evidence,
                        commits,
                        rollbacks,
                    }
                },
            )
    }

    proptest! {
        #[test]
        fn the_score_stays_within_0_and_100_and_is_the_sum_of_its_points(i in inputs()) {
            let c = confidence(&i);
            prop_assert!((0.0..=100.0).contains(&c.score));
            let sum: f64 = c.factors.iter().map(|f| f.points).sum();
            prop_assert!((sum - c.score).abs() <= 0.05 + 1e-9, "rounded to one decimal");
            prop_assert_eq!(confidence(&i), c, "the same inputs, the same score");
        }

        #[test]
        fn each_factor_moves_the_score_the_documented_way(i in inputs(), more in 1u32..10) {
            let base = confidence(&i).score;
            let better_runs = ConfidenceInputs {
                runs: i.runs.map(|(p, t)| ((p + more).min(t.max(1)), t.max(1))),
                ..i.clone()
            };
            prop_assert!(confidence(&better_runs).score >= base || i.runs.is_none());
            let longer = ConfidenceInputs {
                soaked_seconds: i.soaked_seconds.map(|s| s + i64::from(more) * 3_600),
                ..i.clone()
            };
            prop_assert!(confidence(&longer).score >= base);
            let more_evidence = ConfidenceInputs { evidence: i.evidence + more, ..i.clone() };
            prop_assert!(confidence(&more_evidence).score >= base);
            let bigger = ConfidenceInputs { commits: i.commits.map(|c| c + more), ..i.clone() };
            prop_assert!(confidence(&bigger).score <= base);
            let rolled_back = ConfidenceInputs { rollbacks: i.rollbacks + more, ..i.clone() };
            prop_assert!(confidence(&rolled_back).score < base + 1e-9);
            let closer = ConfidenceInputs {
                measurements: i.measurements.iter().map(|&(v, l)| (v * 1.5, l)).collect(),
                ..i.clone()
            };
            prop_assert!(confidence(&closer).score <= base);
        }
    }

    #[test]
    fn the_human_part_is_refused_field_by_field() {
        let good = HumanNotes {
            summary: "Faster checkout.".to_owned(),
            risk: Risk::Low,
            checked: "Canary at 40% for an hour, error rate flat.".to_owned(),
            sign_off: true,
        };
        assert!(validate(&good).is_empty());
        let bad = HumanNotes {
            summary: "  ".to_owned(),
            checked: format!("{}\u{7}", "x".repeat(TEXT_MAX + 1)),
            ..good.clone()
        };
        let fields: Vec<(String, String)> = validate(&bad)
            .into_iter()
            .map(|i| (i.field, i.message))
            .collect();
        assert_eq!(
            fields,
            [
                ("summary".to_owned(), "write a plain summary".to_owned()),
                (
                    "checked".to_owned(),
                    format!("how it was checked is over {TEXT_MAX} characters")
                ),
            ]
        );
        let ringing = HumanNotes {
            checked: "fine\u{7}".to_owned(),
            ..good
        };
        assert_eq!(
            validate(&ringing)
                .into_iter()
                .map(|i| (i.field, i.message))
                .collect::<Vec<_>>(),
            [(
                "checked".to_owned(),
                "how it was checked has control characters".to_owned()
            )]
        );
        let unknown: Result<HumanPart, _> =
            serde_json::from_str(r#"{"summary":"s","risk":"extreme","checked":"c"}"#);
        assert!(unknown.is_err(), "risk is low, medium or high");
    }
}
