//! Release records (`docs/release-records.md`): Tower writes one up when a release becomes
//! fully live in prod — the backend does it, whether or not anyone has a page open — as
//! `glidepath/releases/<release>.yaml` in the app's GitOps repository, proposed by a pull
//! request through [`crate::gitops`] like a prod promotion.
//!
//! One record per release, whatever the replicas or restarts: the file's branch is named for
//! the release (`hangar::record_branch`), so every replica finds the same pull request, and a
//! record already on `main` is never proposed again. A release that reached prod more than
//! [`CATCH_UP`] before this replica started is left alone: Tower writes up what it saw
//! happen (and what it missed while restarting), not the fleet's history.

use std::collections::HashSet;
use std::time::Duration;

use chrono::{DateTime, Utc};
use tower_shared::argo::{HealthStatus, SyncStatus};
use tower_shared::hangar;
use tower_shared::records::{self, Record};
use tower_shared::releases::{CellState, ComparedPull, Comparison, Release, Releases};

use crate::derived::Derived;
use crate::gitops::{FileChange, Person, Proposal, Proposed, WriteError, Writer};
use crate::live::github::GitHub;
use crate::state::AppState;

/// Who Tower's own records are written by, in their commits and pull requests.
pub const RECORDER: &str = "tower:release-recorder";

/// How long before this replica started a release may have reached prod and still be
/// written up (what a restart missed).
pub const CATCH_UP: chrono::Duration = chrono::Duration::hours(1);

/// How often the recorder looks when no derivation wakes it.
const LOOK_EVERY: Duration = Duration::from_secs(30);

/// The first line of every record file.
const HEADER: &str = "# A release record written by Tower (docs/release-records.md). Add the human part from\n# the record's page in Tower: it is proposed as a pull request like this one.\n";

/// The record as its file says it.
pub fn file_text(record: &Record) -> String {
    let yaml = serde_yaml_ng::to_string(record).unwrap_or_default();
    format!("{HEADER}{yaml}")
}

/// A record file read back; the error says what is wrong with it.
pub fn read_file(text: &str) -> Result<Record, String> {
    let record: Record = serde_yaml_ng::from_str(text).map_err(|err| err.to_string())?;
    if record.schema != records::SCHEMA {
        return Err(format!(
            "schema {:?} is not {:?}",
            record.schema,
            records::SCHEMA
        ));
    }
    Ok(record)
}

/// The GitOps repository of `service`, as `owner/name`.
pub fn repo_of(github: &GitHub, service: &str) -> String {
    format!("{}/{}", github.owner(), hangar::gitops_repo(service, None))
}

/// The release fully live in prod in `matrix`, with its row.
pub fn live_in_prod(matrix: &Releases) -> Option<(usize, &Release)> {
    matrix.releases.iter().enumerate().find(|(_, r)| {
        r.cells
            .iter()
            .any(|c| hangar::is_production(&c.environment) && c.state == CellState::Live)
    })
}

/// The release that ran in prod before `release`: the image of the last prod ReplicaSet
/// made before its own (Argo Rollouts keeps old ones, scaled to zero), as its matrix row
/// when it has one, else as its tag reads (`None` when Tower sees none).
pub fn previous_in_prod(
    matrix: &Releases,
    snapshot: &tower_shared::snapshot::Snapshot,
    release: &Release,
) -> Option<Release> {
    let arrived = release
        .cells
        .iter()
        .find(|c| hangar::is_production(&c.environment))?
        .arrived_at?;
    let image = tower_shared::releases::arrivals(snapshot, &matrix.service)
        .into_iter()
        .filter(|a| {
            hangar::is_production(&a.environment) && a.at < arrived && a.image != release.image
        })
        .max_by_key(|a| a.at)?
        .image;
    if let Some(row) = matrix.releases.iter().find(|r| r.image == image) {
        return Some(row.clone());
    }
    let (version, sha) = tower_shared::image::release_tag(&image).unzip();
    Some(Release {
        image: image.clone(),
        version: version.map(str::to_owned),
        short_sha: sha.map(str::to_owned),
        run: None,
        commit: None,
        built_at: None,
        cells: Vec::new(),
        next: None,
    })
}

/// The pull requests, builds and configuration between `older` and `newer` of `service` (for
/// `GET /api/releases/compare` and the recorder),
/// from GitHub's comparison of their commits.
pub async fn compared(
    state: &AppState,
    github: &GitHub,
    service: &str,
    (older, newer): (&Release, &Release),
) -> Result<Option<Comparison>, crate::live::github::GitHubError> {
    let commit = |r: &Release| r.commit.clone().or_else(|| r.short_sha.clone());
    let (Some(base), Some(head)) = (commit(older), commit(newer)) else {
        return Ok(None);
    };
    let repo = format!("{}/{}", github.owner(), hangar::source_repo(service));
    let found = github.compare(&repo, &base, &head).await?;
    let derived = state.source.derived();
    let tabs = state.source.tabs();
    let pulls = tabs
        .answer::<tower_shared::pulls::Pulls>(&derived, service)
        .map(|p| p.pulls.clone())
        .unwrap_or_default();
    let Some(pipelines) = tabs.answer::<tower_shared::pipelines::Pipelines>(&derived, service)
    else {
        return Ok(None);
    };
    Ok(Some(tower_shared::releases::compare(
        service,
        (older, newer),
        &repo,
        found,
        &pulls,
        &pipelines,
    )))
}

/// The record of the release live in prod for `service` as Tower reads it now, with
/// the reviewers of the pull requests that went in read from GitHub. `None` when no
/// release is fully live in prod.
pub async fn draft_now(
    state: &AppState,
    github: &GitHub,
    derived: &Derived,
    service: &str,
) -> Option<Record> {
    let snapshot = derived.service(service);
    let matrix = tower_shared::releases::of_snapshot(&snapshot, service);
    let (_, release) = live_in_prod(&matrix)?;
    let mut comparison = match previous_in_prod(&matrix, &snapshot, release) {
        Some(older) => compared(state, github, service, (&older, release))
            .await
            .inspect_err(
                |err| tracing::warn!(service, error = %err, "comparing releases for a record"),
            )
            .ok()
            .flatten(),
        None => None,
    };
    if let Some(comparison) = comparison.as_mut() {
        // The source repository's pull requests read from GitHub itself: the pollers visit
        // each app's repositories in turn, and a record is written once.
        if let Ok(all) = github.pull_requests(&comparison.repo).await {
            let shas: Vec<&str> = comparison.commits.iter().map(|c| c.sha.as_str()).collect();
            let merged: Vec<ComparedPull> = all
                .iter()
                .filter(|pr| {
                    pr.merge_commit_sha
                        .as_deref()
                        .is_some_and(|sha| shas.contains(&sha))
                        && !comparison.pulls.iter().any(|p| p.number == pr.number)
                })
                .map(|pr| ComparedPull {
                    number: pr.number,
                    title: pr.title.clone(),
                    url: pr.html_url.clone(),
                    author: pr.user.as_ref().map(|u| u.login.clone()),
                    reviewers: None,
                })
                .collect();
            comparison.pulls.extend(merged);
            comparison.pulls.sort_by_key(|p| p.number);
        }
        for pull in comparison
            .pulls
            .iter_mut()
            .filter(|p| p.reviewers.is_none())
        {
            if let Ok(details) = github
                .pull_details(&comparison.repo, pull.number, None)
                .await
            {
                pull.reviewers = Some(tower_shared::pulls::reviewers_of(&details.reviews));
            }
        }
    }
    let pipelines = state
        .source
        .tabs()
        .answer::<tower_shared::pipelines::Pipelines>(&state.source.derived(), service)
        .unwrap_or_else(|| {
            std::sync::Arc::new(tower_shared::pipelines::derive(&snapshot, service))
        });
    let deployments = tower_shared::deployments::derive_deployments(&snapshot, service);
    let prod = deployments
        .environments
        .iter()
        .flatten()
        .find(|e| hangar::is_production(&e.name));
    // The pull request that promoted it, read from the GitOps repository itself (the
    // pollers visit each app's repositories in turn).
    let gitops = github
        .pull_requests(&repo_of(github, service))
        .await
        .inspect_err(|err| tracing::warn!(service, error = %err, "reading promotions for a record"))
        .ok();
    let promotion = records::promotion_of(gitops.as_deref().into_iter().flatten(), &release.image);
    Some(records::draft(
        release,
        service,
        &pipelines,
        prod,
        comparison.as_ref(),
        promotion,
    ))
}

/// What writing a record came to.
#[derive(Debug, PartialEq, Eq)]
pub enum Written {
    /// Already on `main`.
    Merged,
    Proposed(Proposed),
}

/// Proposes `record`'s file unless `main` has it already.
pub async fn propose(writer: &Writer, repo: &str, record: &Record) -> Result<Written, WriteError> {
    let path = hangar::record_path(&record.release);
    if writer
        .read_file(repo, hangar::DEFAULT_BRANCH, &path)
        .await?
        .is_some()
    {
        return Ok(Written::Merged);
    }
    let text = file_text(record);
    let branch = hangar::record_branch(&record.release);
    let title = format!("Release record: {} {}", record.service, record.release);
    let body = format!(
        "Tower's record of `{}` in prod: the pull requests that went in, the builds, every gate \
         it passed and when it moved between environments, its evidence and its confidence score \
         ({:.1} of 100) with the working. Merge it to keep it; then add the human part from the \
         record's page in Tower.",
        record.image, record.confidence.score
    );
    let proposal = Proposal {
        file: FileChange {
            repo,
            branch: &branch,
            path: &path,
            seen: None,
            content: &text,
            message: &title,
        },
        base: hangar::DEFAULT_BRANCH,
        title: &title,
        body: &body,
        labels: &[hangar::RECORD_LABEL],
    };
    let by = Person {
        subject: RECORDER.to_owned(),
    };
    writer.propose(&proposal, &by).await.map(Written::Proposed)
}

/// Writes up every release that becomes fully live in prod, until the process ends.
#[derive(Debug)]
pub struct Recorder {
    state: AppState,
    github: GitHub,
    /// Prod arrivals before this are not written up.
    since: DateTime<Utc>,
    /// `(service, image tag)` already recorded (or not to be), by this replica.
    done: HashSet<(String, String)>,
}

impl Recorder {
    /// The recorder of a live `state` with GitHub (`None` otherwise); it writes up what
    /// reaches prod from [`CATCH_UP`] before now.
    pub fn new(state: AppState) -> Option<Self> {
        let github = state.github.clone()?;
        state.live.as_ref()?;
        let since = state.clock().now() - CATCH_UP;
        Some(Self {
            state,
            github,
            since,
            done: HashSet::new(),
        })
    }

    /// Starts the recorder of a live `state` with GitHub; `None` otherwise.
    pub fn spawn(state: AppState) -> Option<tokio::task::JoinHandle<()>> {
        let mut recorder = Self::new(state)?;
        let mut derivations = recorder.state.live.as_ref()?.derivations();
        Some(tokio::spawn(async move {
            loop {
                recorder.look().await;
                // Woken by a new derivation, or after a while anyway.
                if let Ok(Err(_)) = tokio::time::timeout(LOOK_EVERY, derivations.changed()).await {
                    return;
                }
            }
        }))
    }

    /// One look over the fleet: the apps whose prod cell is synced and healthy with a tag
    /// not yet recorded are read closely, one at a time.
    pub async fn look(&mut self) {
        // One replica records at a time; the others look again at the next derivation.
        let _lease = match self.state.history.try_exclusive(RECORDER).await {
            Ok(Some(lease)) => Some(lease),
            Ok(None) => return,
            // Without the database, Git's checks alone keep a record to one pull request.
            Err(err) => {
                tracing::warn!(error = %err, "taking the recorder's lock");
                None
            }
        };
        let derived = self.state.source.derived();
        let candidates: Vec<(String, String)> = derived
            .fleet
            .apps
            .iter()
            .filter_map(|app| {
                let cell = app
                    .cells
                    .iter()
                    .find(|c| hangar::is_production(&c.environment))?;
                let settled =
                    cell.sync == SyncStatus::Synced && cell.health == HealthStatus::Healthy;
                let tag = cell.running_tag()?.to_owned();
                (settled && !self.done.contains(&(app.name.clone(), tag.clone())))
                    .then(|| (app.name.clone(), tag))
            })
            .collect();
        for (service, tag) in candidates {
            match self.record(&derived, &service).await {
                Ok(()) => {
                    self.done.insert((service, tag));
                }
                // Asked again at the next look.
                Err(err) => tracing::warn!(service, error = %err, "writing a release record"),
            }
        }
    }

    /// Writes up `service`'s release in prod if it is fully live there. `Ok` when there is
    /// nothing more to do for its prod tag (a settled prod cell whose release the matrix does
    /// not show live is left too: both are read from the same derivation).
    async fn record(&self, derived: &Derived, service: &str) -> Result<(), WriteError> {
        let Some(record) = draft_now(&self.state, &self.github, derived, service).await else {
            return Ok(());
        };
        if !tower_shared::image::is_release_name(&record.release) {
            tracing::warn!(
                service,
                image = record.image,
                "a release Tower cannot name a record file for"
            );
            return Ok(());
        }
        if record.prod_at().is_none_or(|at| at < self.since) {
            return Ok(());
        }
        let repo = repo_of(&self.github, service);
        let writer = Writer::new(&self.github).coordinated(&self.state.history);
        let written = propose(&writer, &repo, &record).await?;
        if let (Written::Proposed(_), Some(live)) = (written, &self.state.live) {
            live.github_changed(&repo);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_file_reads_back_as_written_and_refuses_another_schema() {
        let record = Record {
            schema: records::SCHEMA.to_owned(),
            service: "shop".to_owned(),
            release: "1.4.0-3a8423b".to_owned(),
            image: "ghcr.io/acme/shop:1.4.0-3a8423b".to_owned(),
            version: Some("1.4.0".to_owned()),
            commit: None,
            digest: None,
            build: None,
            pulls: None,
            transitions: Vec::new(),
            gates: Vec::new(),
            evidence: None,
            confidence: records::confidence(&records::ConfidenceInputs::default()),
            human: None,
        };
        let text = file_text(&record);
        assert!(text.starts_with("# A release record written by Tower"));
        assert_eq!(read_file(&text), Ok(record));
        let other = text.replace(records::SCHEMA, "tower.hangar.io/release-record/v0");
        assert!(read_file(&other).unwrap_err().contains("is not"));
        assert!(read_file("schema: [").is_err());

        // A pull request's link in the file is anyone's text: only a GitHub web link is
        // kept for a page (javascript:, another host, credentials before the host are not).
        let link = |url: &str| tower_shared::releases::ComparedPull {
            number: 7,
            title: "Faster checkout".to_owned(),
            url: Some(url.to_owned()),
            author: None,
            reviewers: None,
        };
        let edited = Record {
            pulls: Some(vec![
                link("https://github.com/acme/shop/pull/7"),
                link("javascript:alert(1)"),
                link("https://evil.example/acme/shop/pull/7"),
                link("https://github.com@evil.example/x"),
                link("https://git.acme.example/acme/shop/pull/7"),
            ]),
            ..read_file(&text).unwrap()
        };
        let kept = |enterprise| {
            edited
                .clone()
                .links_checked(enterprise)
                .pulls
                .unwrap()
                .into_iter()
                .map(|p| p.url)
                .collect::<Vec<_>>()
        };
        let github = Some("https://github.com/acme/shop/pull/7".to_owned());
        assert_eq!(kept(None), [github.clone(), None, None, None, None]);
        assert_eq!(
            kept(Some("git.acme.example"))[4].as_deref(),
            Some("https://git.acme.example/acme/shop/pull/7")
        );
    }
}
