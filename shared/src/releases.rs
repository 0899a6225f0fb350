//! The Releases tab's matrix: rows are a service's releases (the images its builds
//! published, and any image an environment runs that no visible build made), newest first;
//! columns its environments in promotion order. Each cell says whether the release runs
//! there now — stable, as the canary at its weight, or rolled back by an abort — and, for a
//! release not there, whether it is newer than what runs there (not yet) or older
//! (superseded). A release goes next to one place only: the environment after the
//! furthest one where it runs stable and healthy, if what runs there is older; staging by a
//! commit, prod by a reviewed pull request.
//!
//! Built from the same views as the Pipelines and Deployments tabs, so a release reads the
//! same everywhere.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::argo::{replica_set_image, RolloutPhase};
use crate::cicd::Promotion;
use crate::deployments::{Deployments, RolloutView};
use crate::hangar;
use crate::pipelines::{Pipelines, Trigger};

/// Where a release stands in one environment.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CellState {
    /// It is the stable version there.
    Live,
    /// It is the canary (or blue-green preview) there.
    Canary,
    /// Its canary there was aborted: traffic went back to the stable version.
    RolledBack,
    /// Not there, and newer than what is.
    NotYet,
    /// Not there, and older than what is (it ran there before, or was skipped).
    Superseded,
    /// Tower does not know what runs there.
    Unknown,
}

/// One release in one environment.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Cell {
    pub environment: String,
    pub state: CellState,
    /// The canary's share of the traffic, in per cent, while it is the canary: the actual
    /// weight, as `kubectl argo rollouts get` reports it (0 while no canary pod is
    /// available), `None` when unknown.
    pub weight: Option<u32>,
    /// The weight its canary step set (`setWeight`), which the actual one follows.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub desired_weight: Option<u32>,
    /// Why the release is not offered here although it is live in the environment before
    /// (that environment is not healthy and synced as Argo CD says, or its Rollout is not
    /// Healthy): said on the cell where the button would be.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub held: Option<String>,
    /// When it arrived there: the environment's last Argo CD sync, when that sync is the
    /// one that brought it (the canary's, or the stable version's with no canary beside
    /// it). `None` when not known — an earlier arrival leaves no trace Tower reads.
    pub arrived_at: Option<DateTime<Utc>>,
}

/// Where a release can go next, and how.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Next {
    pub environment: String,
    pub how: Promotion,
    /// The open pull request already proposing it (on [`hangar::promotion_branch`]): the
    /// button reads "Review PR #N" instead.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pull: Option<PullRef>,
}

/// A pull request on GitHub: its number and page.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PullRef {
    pub number: u64,
    pub url: Option<String>,
}

/// `text` (an environment file) with its top-level `image:` set to `image`, every other
/// line — comments, order, quoting style — as it was; `None` when the file has no
/// top-level `image:` key to change.
pub fn set_image(text: &str, image: &str) -> Option<String> {
    let mut found = false;
    let lines: Vec<String> = text
        .split_inclusive('\n')
        .map(|line| {
            let Some(rest) = line.strip_prefix("image:").filter(|_| !found) else {
                return line.to_owned();
            };
            found = true;
            let value_and_end = rest.trim_start();
            let ending = if line.ends_with("\r\n") {
                "\r\n"
            } else if line.ends_with('\n') {
                "\n"
            } else {
                ""
            };
            // A comment after the value stays; a quoted value stays quoted.
            let body = value_and_end.trim_end_matches(['\r', '\n']);
            let (value, comment) = match body.find(" #") {
                Some(at) => (&body[..at], &body[at..]),
                None => (body, ""),
            };
            let quote = value
                .chars()
                .next()
                .filter(|c| *c == '"' || *c == '\'')
                .map(String::from)
                .unwrap_or_default();
            format!("image: {quote}{image}{quote}{comment}{ending}")
        })
        .collect();
    found.then(|| lines.concat())
}

/// The value of `text`'s top-level `image:` key (quotes and a trailing comment dropped).
pub fn image_in(text: &str) -> Option<&str> {
    text.lines().find_map(|line| {
        let value = line.strip_prefix("image:")?.trim();
        let value = value.split(" #").next().unwrap_or(value).trim();
        Some(value.trim_matches(['"', '\'']))
    })
}

/// One row of the matrix.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Release {
    /// The image without its digest (`ghcr.io/acme/shop:1.4.0-3a8423b`).
    pub image: String,
    /// The tag's version and commit prefix, when the tag follows Hangar's rule.
    pub version: Option<String>,
    pub short_sha: Option<String>,
    /// The build that published it (`None` when no visible run did): its run, full commit
    /// and start.
    pub run: Option<String>,
    pub commit: Option<String>,
    pub built_at: Option<DateTime<Utc>>,
    /// One cell per environment, in the matrix's column order.
    pub cells: Vec<Cell>,
    pub next: Option<Next>,
}

/// A service's release matrix.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Releases {
    pub service: String,
    /// The columns: its environments, in promotion order.
    pub environments: Vec<String>,
    /// Newest first.
    pub releases: Vec<Release>,
}

/// GitHub's comparison of two commits (`GET /repos/{o}/{r}/compare/{base}...{head}`), as
/// far as Tower reads it.
#[derive(Clone, Debug, PartialEq, Deserialize)]
pub struct GitHubCompare {
    #[serde(default)]
    pub html_url: Option<String>,
    /// `ahead`, `behind`, `identical` or `diverged`.
    pub status: String,
    pub ahead_by: u64,
    pub behind_by: u64,
    /// The commits `head` has that `base` lacks, oldest first (GitHub lists up to 250).
    #[serde(default)]
    pub commits: Vec<GitHubCommit>,
    /// The files those commits changed (GitHub lists up to 300).
    #[serde(default)]
    pub files: Vec<GitHubFile>,
}

#[derive(Clone, Debug, PartialEq, Deserialize)]
pub struct GitHubCommit {
    pub sha: String,
    #[serde(default)]
    pub html_url: Option<String>,
    pub commit: GitHubCommitDetail,
}

#[derive(Clone, Debug, PartialEq, Deserialize)]
pub struct GitHubCommitDetail {
    pub message: String,
    #[serde(default)]
    pub author: Option<GitHubSignature>,
}

#[derive(Clone, Debug, PartialEq, Deserialize)]
pub struct GitHubSignature {
    #[serde(default)]
    pub name: Option<String>,
    #[serde(default)]
    pub date: Option<DateTime<Utc>>,
}

#[derive(Clone, Debug, PartialEq, Deserialize)]
pub struct GitHubFile {
    pub filename: String,
    pub status: String,
    #[serde(default)]
    pub patch: Option<String>,
}

/// What changed between two releases: the commits, the pull requests merged and the builds
/// run for them, and the changes to the app's configuration.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Comparison {
    pub service: String,
    /// The older release's image, and the newer one's.
    pub from: String,
    pub to: String,
    /// The source repository (`owner/name`) and GitHub's page of the comparison.
    pub repo: String,
    pub url: Option<String>,
    /// Commits in the newer release that the older lacks, oldest first (as many as GitHub
    /// lists; `total` counts them all).
    pub commits: Vec<ComparedCommit>,
    pub total: u64,
    /// The pull requests those commits merged.
    pub pulls: Vec<ComparedPull>,
    /// The builds of those commits (push runs), newest first.
    pub runs: Vec<String>,
    /// How many files changed, and the configuration among them (`.glidepath/`,
    /// `glidepath/`, any `cicd.yaml`) with their patches.
    pub files_changed: usize,
    pub config: Vec<ConfigChange>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ComparedCommit {
    pub sha: String,
    /// Its message's first line.
    pub title: String,
    pub author: Option<String>,
    pub at: Option<DateTime<Utc>>,
    pub url: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ComparedPull {
    pub number: u64,
    pub title: String,
    pub url: Option<String>,
    #[serde(default)]
    pub author: Option<String>,
    /// Who reviewed it; `None` when Tower has not read its reviews.
    #[serde(default)]
    pub reviewers: Option<Vec<String>>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ConfigChange {
    pub path: String,
    /// GitHub's word: `added`, `modified`, `removed`, `renamed`.
    pub status: String,
    /// The unified diff GitHub shows (`None` for a binary or very large change).
    pub patch: Option<String>,
}

/// Whether `path` is the app's configuration rather than its code.
pub fn is_config(path: &str) -> bool {
    path.starts_with(".glidepath/") || path.starts_with("glidepath/") || path.ends_with("cicd.yaml")
}

impl Comparison {
    /// The comparison in one sentence: "1.4.2-bbbbbbb adds 3 commits (2 pull requests, 3
    /// builds) to 1.4.1-aaaaaaa; 5 files changed, 1 of them configuration."
    pub fn sentence(&self) -> String {
        let tag = |image: &str| crate::image::short(image).to_owned();
        let count =
            |n: usize, one: &str, many: &str| format!("{n} {}", if n == 1 { one } else { many });
        format!(
            "{} adds {} ({}, {}) to {}; {} changed, {} of them configuration.",
            tag(&self.to),
            count(
                usize::try_from(self.total).unwrap_or(usize::MAX),
                "commit",
                "commits"
            ),
            count(self.pulls.len(), "pull request", "pull requests"),
            count(self.runs.len(), "build", "builds"),
            tag(&self.from),
            count(self.files_changed, "file", "files"),
            self.config.len(),
        )
    }
}

/// What changed from release `from` to the newer `to`, given GitHub's comparison of their
/// commits: the pull requests among `pulls` that merged one of those commits, the push
/// builds among `pipelines` that built one, the configuration files changed.
pub fn compare(
    service: &str,
    (from, to): (&Release, &Release),
    repo: &str,
    github: GitHubCompare,
    pulls: &[crate::pulls::PullView],
    pipelines: &Pipelines,
) -> Comparison {
    let shas: Vec<&str> = github.commits.iter().map(|c| c.sha.as_str()).collect();
    let merged_here = |sha: &Option<String>| sha.as_deref().is_some_and(|s| shas.contains(&s));
    let pulls = pulls
        .iter()
        .filter(|p| p.source && merged_here(&p.merge_commit))
        .map(|p| ComparedPull {
            number: p.number,
            title: p.title.clone(),
            url: p.url.clone(),
            author: p.author.clone(),
            reviewers: p.reviewers.clone(),
        })
        .collect();
    let runs = pipelines
        .runs
        .iter()
        .filter(|r| matches!(r.trigger, Trigger::Push { .. }) && merged_here(&r.commit))
        .map(|r| r.name.clone())
        .collect();
    let config = github
        .files
        .iter()
        .filter(|f| is_config(&f.filename))
        .map(|f| ConfigChange {
            path: f.filename.clone(),
            status: f.status.clone(),
            patch: f.patch.clone(),
        })
        .collect();
    Comparison {
        service: service.to_owned(),
        from: from.image.clone(),
        to: to.image.clone(),
        repo: repo.to_owned(),
        url: github.html_url,
        total: github.ahead_by,
        files_changed: github.files.len(),
        commits: github
            .commits
            .into_iter()
            .map(|c| ComparedCommit {
                title: c
                    .commit
                    .message
                    .lines()
                    .next()
                    .unwrap_or_default()
                    .to_owned(),
                author: c.commit.author.as_ref().and_then(|a| a.name.clone()),
                at: c.commit.author.as_ref().and_then(|a| a.date),
                url: c.html_url,
                sha: c.sha,
            })
            .collect(),
        pulls,
        runs,
        config,
    }
}

/// A release's arrival in an environment: Argo Rollouts makes a ReplicaSet for a release
/// when it arrives and keeps the older ones, scaled to zero (`revisionHistoryLimit`), so
/// each tells when what ran there before came.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Arrival {
    pub environment: String,
    /// The image without its digest.
    pub image: String,
    pub at: DateTime<Utc>,
}

/// Every ReplicaSet of `service`'s environments (`app-<s>-<env>`) as an arrival.
pub fn arrivals(snapshot: &crate::snapshot::Snapshot, service: &str) -> Vec<Arrival> {
    snapshot
        .clusters
        .values()
        .flatten()
        .filter(|o| o.kind == "ReplicaSet")
        .filter_map(|rs| {
            Some(Arrival {
                environment: hangar::environment_of(rs, service)?.to_owned(),
                image: crate::image::without_digest(replica_set_image(rs)?).to_owned(),
                at: rs.metadata.creation_timestamp?,
            })
        })
        .collect()
}

/// How a release reaches `environment`: as the app's `cicd.yaml` says for it (`said`, see
/// [`crate::cicd::CicdRead::promotions`]), else [`promotion_to`].
pub fn promotion_for(
    environment: &str,
    said: &std::collections::BTreeMap<String, Promotion>,
) -> Promotion {
    said.get(environment)
        .copied()
        .unwrap_or_else(|| promotion_to(environment))
}

/// How a release reaches `environment` unless the app says otherwise: the production
/// environment by a reviewed pull request, any other by a commit.
pub fn promotion_to(environment: &str) -> Promotion {
    if hangar::is_production(environment) {
        Promotion::PullRequest
    } else {
        Promotion::Commit
    }
}

/// What runs in one environment: the stable and canary images, whether the canary was
/// aborted, and what keeps a release from going on from here.
struct Running<'a> {
    stable: Option<&'a str>,
    canary: Option<&'a str>,
    weight: Option<u32>,
    desired_weight: Option<u32>,
    aborted: bool,
    /// `None` when a release live here may go on; else why not, in words.
    unready: Option<String>,
    /// When the environment's Argo CD Application last synced.
    synced_at: Option<DateTime<Utc>>,
}

impl<'a> Running<'a> {
    /// What runs in `env`: its Rollout's versions, or without one the version its state
    /// says runs (the image Argo CD reports); `None` when neither is known.
    fn in_env(env: &'a crate::deployments::Environment) -> Option<Self> {
        if let Some(rollout) = &env.rollout {
            return Some(Self::of(env, rollout));
        }
        let stable = env.state.as_ref()?.running.as_deref()?;
        Some(Self {
            stable: Some(stable),
            canary: None,
            weight: None,
            desired_weight: None,
            aborted: false,
            unready: unready(env, None),
            synced_at: env.argo.as_ref().and_then(|a| a.last_synced_at),
        })
    }

    fn of(env: &'a crate::deployments::Environment, rollout: &'a RolloutView) -> Self {
        let image = |set: Option<&'a crate::deployments::ReplicaSetView>| {
            set.and_then(|s| s.image.as_deref())
                .map(crate::image::without_digest)
        };
        Self {
            stable: image(rollout.stable.as_ref()),
            canary: image(rollout.canary.as_ref()),
            weight: rollout.canary_weight,
            desired_weight: rollout.desired_weight,
            aborted: rollout.aborted,
            unready: unready(env, Some(rollout)),
            synced_at: env.argo.as_ref().and_then(|a| a.last_synced_at),
        }
    }
}

/// Why a release live in `env` may not go on to the next environment, or `None` when it
/// may: Kargo's and GitOps Promoter's gate — Argo CD says the Application is Healthy and
/// Synced, and its Rollout (if it has one) is Healthy. Read from the environment's state (the
/// fleet cell's); an Application the state does not know (unlabelled) from the tab's own
/// reading of it and its `rollout`.
fn unready(env: &crate::deployments::Environment, rollout: Option<&RolloutView>) -> Option<String> {
    // Argo CD's health and sync words and the Rollout's phase, from either reading.
    let (health, sync, phase) = match (&env.state, &env.argo) {
        (Some(state), _) => (
            format!("{:?}", state.health),
            format!("{:?}", state.sync),
            state.rollout.as_ref().map(|r| r.phase),
        ),
        (None, Some(argo)) => {
            let said = |word: &Option<String>| word.clone().unwrap_or_else(|| "Unknown".to_owned());
            (
                said(&argo.health),
                said(&argo.sync),
                rollout.map(|r| r.phase),
            )
        }
        (None, None) => {
            return Some(format!(
                "waits for {}: no Argo CD Application deploys it",
                env.name
            ))
        }
    };
    let mut why = Vec::new();
    if health != "Healthy" {
        why.push(format!("Argo CD says {health}"));
    }
    if sync != "Synced" {
        why.push(format!("Argo CD says {sync}"));
    }
    if let Some(phase) = phase.filter(|p| *p != RolloutPhase::Healthy) {
        why.push(format!("its Rollout is {phase:?}"));
    }
    (!why.is_empty()).then(|| format!("waits for {}: {}", env.name, why.join(", ")))
}

/// `service`'s release matrix from its part of the snapshot: from the same runs and
/// deployments as their tabs.
pub fn of_snapshot(snapshot: &crate::snapshot::Snapshot, service: &str) -> Releases {
    derive(
        service,
        &crate::pipelines::derive(snapshot, service),
        &crate::deployments::derive_deployments(snapshot, service),
        snapshot.pull_requests.as_deref().unwrap_or_default(),
        &arrivals(snapshot, service),
        &snapshot.cicd_of(service).promotions,
    )
}

/// The matrix of `service` from its runs and its deployments.
pub fn derive(
    service: &str,
    pipelines: &Pipelines,
    deployments: &Deployments,
    pulls: &[crate::github::PullRequest],
    arrivals: &[Arrival],
    promotions: &std::collections::BTreeMap<String, Promotion>,
) -> Releases {
    let environments: Vec<(&str, Option<Running<'_>>)> = deployments
        .environments
        .iter()
        .flatten()
        .map(|env| (env.name.as_str(), Running::in_env(env)))
        .collect();
    // The builds' images, newest first (pull requests' runs publish none that ship).
    let mut rows: Vec<Release> = Vec::new();
    for run in &pipelines.runs {
        let Some(image) = run.image.as_deref().map(crate::image::without_digest) else {
            continue;
        };
        if matches!(run.trigger, Trigger::PullRequest { .. })
            || rows.iter().any(|r| r.image == image)
        {
            continue;
        }
        rows.push(row(image, Some(run)));
    }
    // Images running somewhere that no visible build made (its run pruned): older than
    // every build Tower sees, in the order the environments run them.
    for (_, running) in &environments {
        for image in running.iter().flat_map(|r| [r.stable, r.canary]).flatten() {
            if !rows.iter().any(|r| r.image == image) {
                rows.push(row(image, None));
            }
        }
    }
    for index in 0..rows.len() {
        let cells: Vec<Cell> = environments
            .iter()
            .map(|(name, running)| {
                let mut cell = cell(name, running.as_ref(), &rows, index);
                // What the last sync does not tell (a stable version beside its canary, what
                // ran here before), the release's ReplicaSet here does.
                if cell.arrived_at.is_none()
                    && matches!(cell.state, CellState::Live | CellState::Superseded)
                {
                    cell.arrived_at = arrivals
                        .iter()
                        .filter(|a| a.environment == *name && a.image == rows[index].image)
                        .map(|a| a.at)
                        .min();
                }
                cell
            })
            .collect();
        let mut cells = cells;
        let unready: Vec<Option<&str>> = environments
            .iter()
            .map(|(_, running)| match running {
                Some(r) => r.unready.as_deref(),
                None => Some("what runs there is unknown"),
            })
            .collect();
        rows[index].next = next(&mut cells, &unready).map(|mut next| {
            next.how = promotion_for(&next.environment, promotions);
            next.pull = proposed(service, &rows[index].image, &next.environment, pulls);
            next
        });
        rows[index].cells = cells;
    }
    Releases {
        service: service.to_owned(),
        environments: environments.iter().map(|(n, _)| (*n).to_owned()).collect(),
        releases: rows,
    }
}

fn row(image: &str, run: Option<&crate::pipelines::RunSummary>) -> Release {
    let (version, short_sha) = match crate::image::release_tag(image) {
        Some((version, sha)) => (Some(version.to_owned()), Some(sha.to_owned())),
        None => (None, None),
    };
    Release {
        image: image.to_owned(),
        version,
        short_sha,
        run: run.map(|r| r.name.clone()),
        commit: run.and_then(|r| r.commit.clone()),
        built_at: run.and_then(|r| r.started_at),
        cells: Vec::new(),
        next: None,
    }
}

/// Release `index` (of `rows`, newest first) in the environment `name` running `running`.
fn cell(name: &str, running: Option<&Running<'_>>, rows: &[Release], index: usize) -> Cell {
    let image = rows[index].image.as_str();
    let (state, weight) = match running {
        None => (CellState::Unknown, None),
        Some(r) if r.canary == Some(image) && r.aborted => (CellState::RolledBack, None),
        Some(r) if r.canary == Some(image) => (CellState::Canary, Some(r)),
        Some(r) if r.stable == Some(image) => (CellState::Live, None),
        Some(r) => match r
            .stable
            .and_then(|s| rows.iter().position(|row| row.image == s))
        {
            // Rows are newest first: a smaller index is newer than what runs there.
            Some(live) if index < live => (CellState::NotYet, None),
            Some(_) => (CellState::Superseded, None),
            None => (CellState::Unknown, None),
        },
    };
    // The last sync brought the canary if there is one, else the stable version.
    let arrived_at = running.and_then(|r| match state {
        CellState::Canary | CellState::RolledBack => r.synced_at,
        CellState::Live if r.canary.is_none() => r.synced_at,
        _ => None,
    });
    Cell {
        environment: name.to_owned(),
        state,
        weight: weight.and_then(|r| r.weight),
        desired_weight: weight.and_then(|r| r.desired_weight),
        held: None,
        arrived_at,
    }
}

/// The open pull request proposing `image` for `environment`, if there is one.
fn proposed(
    service: &str,
    image: &str,
    environment: &str,
    pulls: &[crate::github::PullRequest],
) -> Option<PullRef> {
    let branch = hangar::promotion_branch(environment, image);
    let repo = hangar::gitops_repo(service, None);
    pulls
        .iter()
        .find(|pr| {
            pr.state == "open"
                && pr.repo_name() == repo
                && pr.head.as_ref().is_some_and(|h| h.branch == branch)
        })
        .map(|pr| PullRef {
            number: pr.number,
            url: pr.html_url.clone(),
        })
}

/// The one place a release goes next: the environment after the furthest one where it is
/// live, if it is not yet there — and only while that one is ready (`unready`, by column,
/// says why not; the reason is put on the cell the release would go to).
fn next(cells: &mut [Cell], unready: &[Option<&str>]) -> Option<Next> {
    let furthest = cells.iter().rposition(|c| c.state == CellState::Live)?;
    let after = cells.get_mut(furthest + 1)?;
    if after.state != CellState::NotYet {
        return None;
    }
    if let Some(why) = unready.get(furthest).copied().unwrap_or(Some("unknown")) {
        after.held = Some(why.to_owned());
        return None;
    }
    Some(Next {
        environment: after.environment.clone(),
        how: promotion_to(&after.environment),
        pull: None,
    })
}

#[cfg(test)]
mod tests {
    use serde_json::{json, Value};

    use super::*;

    const SHOP: &str = "ghcr.io/acme/shop";

    fn derive_without_pulls(
        service: &str,
        pipelines: &Pipelines,
        deployments: &Deployments,
    ) -> Releases {
        derive(
            service,
            pipelines,
            deployments,
            &[],
            &[],
            &Default::default(),
        )
    }

    #[test]
    fn a_comparison_says_its_counts_in_one_sentence() {
        let mut compared = Comparison {
            service: "shop".to_owned(),
            from: format!("{SHOP}:1.1.0-aaaaaaa"),
            to: format!("{SHOP}:1.2.0-bbbbbbb"),
            repo: "acme/shop".to_owned(),
            url: None,
            commits: Vec::new(),
            total: 1,
            pulls: vec![ComparedPull {
                number: 2,
                title: "Change".to_owned(),
                url: None,
                author: None,
                reviewers: None,
            }],
            runs: vec!["shop-build-2".to_owned(), "shop-build-3".to_owned()],
            files_changed: 5,
            config: Vec::new(),
        };
        assert_eq!(
            compared.sentence(),
            "1.2.0-bbbbbbb adds 1 commit (1 pull request, 2 builds) to 1.1.0-aaaaaaa; 5 files changed, 0 of them configuration."
        );
        compared.total = 3;
        compared.pulls.clear();
        compared.files_changed = 1;
        assert_eq!(
            compared.sentence(),
            "1.2.0-bbbbbbb adds 3 commits (0 pull requests, 2 builds) to 1.1.0-aaaaaaa; 1 file changed, 0 of them configuration."
        );
    }

    #[test]
    fn set_image_changes_the_one_line_and_keeps_the_rest() {
        let text = "# shop in staging\nimage: \"ghcr.io/acme/shop:1.1.0-aaaaaaa\" # pinned\nreplicas: 3\n  image: nested-stays\n";
        let changed = set_image(text, "ghcr.io/acme/shop:1.2.0-bbbbbbb").unwrap();
        assert_eq!(
            changed,
            "# shop in staging\nimage: \"ghcr.io/acme/shop:1.2.0-bbbbbbb\" # pinned\nreplicas: 3\n  image: nested-stays\n"
        );
        assert_eq!(image_in(&changed), Some("ghcr.io/acme/shop:1.2.0-bbbbbbb"));
        assert_eq!(set_image("replicas: 3\n", "x"), None);
        assert_eq!(image_in("replicas: 3\n"), None);
    }

    fn image(n: u32) -> String {
        format!("{SHOP}:1.{n}.0-{:07x}", 0xa00_0000 + n)
    }

    /// A build of release `n` (newest first by `n`), or a pull request's run.
    fn run(n: u32, pull_request: bool) -> Value {
        let trigger = if pull_request {
            json!({"kind": "pull-request", "number": n})
        } else {
            json!({"kind": "push", "branch": "main"})
        };
        json!({"name": format!("shop-build-{n}"), "outcome": "succeeded",
               "startedAt": format!("2026-11-{:02}T10:00:00Z", n),
               "commit": format!("{:07x}{}", 0xa00_0000 + n, "0".repeat(33)),
               "image": format!("{}@sha256:{n:064}", image(n)), "trigger": trigger})
    }

    fn pipelines(runs: Vec<Value>) -> Pipelines {
        serde_json::from_value(json!({"service": "shop", "namespace": "app-shop-cicd",
                                      "runs": runs, "graphs": []}))
        .unwrap()
    }

    /// An environment running `stable` (and `canary` at `weight`), its rollout `phase`.
    fn env(
        name: &str,
        stable: u32,
        canary: Option<(u32, u32)>,
        aborted: bool,
        phase: &str,
    ) -> Value {
        let set = |n: u32| json!({"podHash": format!("h{n}"), "image": image(n)});
        json!({"name": name, "cluster": "dev", "namespace": format!("app-shop-{name}"),
               "argo": {"name": format!("shop-{name}"), "sync": "Synced", "health": "Healthy",
                        "lastSyncedAt": format!("2026-11-20T{:02}:00:00Z", stable + canary.map_or(0, |(n, _)| n))},
               "rollout": {"name": "shop", "phase": phase, "summary": "", "steps": [],
                           "aborted": aborted, "analysis": [], "stable": set(stable),
                           "canary": canary.map(|(n, _)| set(n)),
                           "canaryWeight": canary.map(|(_, w)| w)}})
    }

    fn deployments(envs: Vec<Value>) -> Deployments {
        serde_json::from_value(json!({"service": "shop", "capability": "k8s-runtime",
                                      "environments": envs}))
        .unwrap()
    }

    fn states(release: &Release) -> Vec<(CellState, Option<u32>)> {
        release.cells.iter().map(|c| (c.state, c.weight)).collect()
    }

    #[test]
    fn each_release_reads_across_its_environments_and_goes_next_to_one_place() {
        use CellState::*;
        // Builds 3 (newest), 2 and 1, and a pull request's run that ships nothing; dev runs
        // 3, staging 2, prod 1 with 2 as its canary at 40 %.
        let releases = derive_without_pulls(
            "shop",
            &pipelines(vec![
                run(9, true),
                run(3, false),
                run(2, false),
                run(1, false),
            ]),
            &deployments(vec![
                env("dev", 3, None, false, "Healthy"),
                env("staging", 2, None, false, "Healthy"),
                env("prod", 1, Some((2, 40)), false, "Paused"),
            ]),
        );
        assert_eq!(releases.environments, ["dev", "staging", "prod"]);
        let rows: Vec<&str> = releases.releases.iter().map(|r| r.image.as_str()).collect();
        assert_eq!(
            rows,
            [image(3), image(2), image(1)],
            "newest first, no digest"
        );
        let [three, two, one] = &releases.releases[..] else {
            panic!("{releases:?}")
        };
        assert_eq!(
            states(three),
            [(Live, None), (NotYet, None), (NotYet, None)]
        );
        assert_eq!(
            states(two),
            [(Superseded, None), (Live, None), (Canary, Some(40))]
        );
        assert_eq!(
            states(one),
            [(Superseded, None), (Superseded, None), (Live, None)]
        );
        // 3 goes to staging by a commit; 2 is already on its way to prod; 1 is at the end.
        assert_eq!(
            three.next,
            Some(Next {
                environment: "staging".to_owned(),
                how: Promotion::Commit,
                pull: None,
            })
        );
        assert_eq!(two.next, None);
        assert_eq!(one.next, None);
        assert_eq!(three.version.as_deref(), Some("1.3.0"));
        assert_eq!(three.short_sha.as_deref(), Some("a000003"));
        assert_eq!(three.run.as_deref(), Some("shop-build-3"));
        // Arrivals: the last sync brought dev's 3, staging's 2 and prod's canary 2; prod's
        // stable 1 came earlier, by a sync Tower no longer sees.
        let arrived = |r: &Release| -> Vec<Option<u32>> {
            r.cells
                .iter()
                .map(|c| c.arrived_at.map(|t| chrono::Timelike::hour(&t)))
                .collect()
        };
        assert_eq!(arrived(three), [Some(3), None, None]);
        assert_eq!(arrived(two), [None, Some(2), Some(3)]);
        assert_eq!(arrived(one), [None, None, None]);
    }

    #[test]
    fn prod_waits_until_staging_is_healthy_and_synced_as_argo_cd_says_and_says_why() {
        // Release 2 live in staging (its Rollout Healthy), 1 in prod: 2 goes to prod only
        // while staging's Application is Healthy and Synced — Kargo's and GitOps
        // Promoter's gate — and the prod cell says why not.
        let with_argo = |health: &str, sync: &str, phase: &str| {
            let mut staging = env("staging", 2, None, false, phase);
            staging["argo"]["health"] = json!(health);
            staging["argo"]["sync"] = json!(sync);
            derive_without_pulls(
                "shop",
                &pipelines(vec![run(2, false)]),
                &deployments(vec![staging, env("prod", 1, None, false, "Healthy")]),
            )
            .releases
            .remove(0)
        };
        let ready = with_argo("Healthy", "Synced", "Healthy");
        assert_eq!(ready.next.map(|n| n.environment).as_deref(), Some("prod"));
        assert_eq!(ready.cells[1].held, None);
        for (health, sync, phase, why) in [
            (
                "Degraded",
                "Synced",
                "Healthy",
                "waits for staging: Argo CD says Degraded",
            ),
            (
                "Healthy",
                "OutOfSync",
                "Healthy",
                "waits for staging: Argo CD says OutOfSync",
            ),
            (
                "Progressing",
                "OutOfSync",
                "Paused",
                "waits for staging: Argo CD says Progressing, Argo CD says OutOfSync, \
                 its Rollout is Paused",
            ),
        ] {
            let held = with_argo(health, sync, phase);
            assert_eq!(held.next, None, "{health} {sync} {phase}");
            assert_eq!(held.cells[1].state, CellState::NotYet);
            assert_eq!(held.cells[1].held.as_deref(), Some(why));
        }
    }

    #[test]
    fn prod_is_a_pull_request_an_abort_rolls_back_and_unhealthy_goes_nowhere() {
        use CellState::*;
        // Staging runs 2 healthy, prod 1 with 2's canary aborted.
        let aborted = derive_without_pulls(
            "shop",
            &pipelines(vec![run(2, false)]),
            &deployments(vec![
                env("staging", 2, None, false, "Healthy"),
                env("prod", 1, Some((2, 0)), true, "Degraded"),
            ]),
        );
        let two = &aborted.releases[0];
        assert_eq!(states(two), [(Live, None), (RolledBack, None)]);
        assert_eq!(
            two.next, None,
            "an aborted canary is not promoted again by a click"
        );
        // Release 1's build was pruned: still a row, known by its tag alone.
        let one = &aborted.releases[1];
        assert_eq!(
            (one.run.as_deref(), one.version.as_deref()),
            (None, Some("1.1.0"))
        );

        // Release 2 live and healthy in staging, 1 in prod: 2 goes to prod next.
        let ready = |pulls: &[crate::github::PullRequest],
                     said: &std::collections::BTreeMap<String, Promotion>| {
            derive(
                "shop",
                &pipelines(vec![run(2, false)]),
                &deployments(vec![
                    env("staging", 2, None, false, "Healthy"),
                    env("prod", 1, None, false, "Healthy"),
                ]),
                pulls,
                &[],
                said,
            )
        };
        assert_eq!(
            ready(&[], &Default::default()).releases[0].next,
            Some(Next {
                environment: "prod".to_owned(),
                how: Promotion::PullRequest,
                pull: None,
            })
        );
        // The app's cicd.yaml may say how an environment is promoted to.
        let said = std::collections::BTreeMap::from([("prod".to_owned(), Promotion::Commit)]);
        assert_eq!(
            ready(&[], &said).releases[0].next.as_ref().map(|n| n.how),
            Some(Promotion::Commit)
        );
        // Once its pull request is open (on the branch Tower names for it), the cell
        // points at it; a closed one, or one in another repository, does not count.
        let pull = |repo: &str, state: &str, number: u64| -> crate::github::PullRequest {
            serde_json::from_value(json!({"repo": repo, "number": number, "title": "Promote",
                "state": state, "html_url": format!("https://github.com/{repo}/pull/{number}"),
                "head": {"ref": format!("tower/promote-prod-1.2.0-{:07x}", 0xa00_0000 + 2),
                         "sha": "0".repeat(40)}}))
            .unwrap()
        };
        let proposed = ready(
            &[
                pull("acme/gitops-shop", "closed", 7),
                pull("acme/shop", "open", 8),
                pull("acme/gitops-shop", "open", 9),
            ],
            &Default::default(),
        );
        let next = proposed.releases[0].next.as_ref().unwrap();
        assert_eq!(
            next.pull,
            Some(PullRef {
                number: 9,
                url: Some("https://github.com/acme/gitops-shop/pull/9".to_owned())
            })
        );
        let degraded = derive_without_pulls(
            "shop",
            &pipelines(vec![run(2, false)]),
            &deployments(vec![
                env("staging", 2, None, false, "Degraded"),
                env("prod", 1, None, false, "Healthy"),
            ]),
        );
        assert_eq!(
            degraded.releases[0].next, None,
            "not while unhealthy where it is"
        );
    }

    #[test]
    fn replica_sets_tell_when_earlier_releases_arrived() {
        use CellState::*;
        // Staging runs 2 (synced just now); 1's ReplicaSet, scaled to zero, is from when 1
        // arrived there: a superseded cell that ran there says when.
        let at = |h: u32| -> DateTime<Utc> { format!("2026-11-20T{h:02}:00:00Z").parse().unwrap() };
        let arrivals = [
            Arrival {
                environment: "staging".to_owned(),
                image: image(1),
                at: at(9),
            },
            Arrival {
                environment: "staging".to_owned(),
                image: image(2),
                at: at(11),
            },
        ];
        let releases = derive(
            "shop",
            &pipelines(vec![run(2, false), run(1, false)]),
            &deployments(vec![env("staging", 2, None, false, "Healthy")]),
            &[],
            &arrivals,
            &Default::default(),
        );
        let one = &releases.releases[1];
        assert_eq!(one.cells[0].state, Superseded);
        assert_eq!(one.cells[0].arrived_at, Some(at(9)));
        // The stable version's arrival is still the sync's when the sync brought it.
        let two = &releases.releases[0];
        assert_eq!(two.cells[0].state, Live);
        assert_ne!(two.cells[0].arrived_at, Some(at(11)));
    }
}
