//! What Tower reads besides the clusters, and the tasks that read it: GitHub's pull
//! requests and `cicd.yaml` files, Backstage's catalog, the history database. Each change
//! they find is noted ([`Live::note`]) with the service it concerns.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

use tokio_stream::wrappers::errors::BroadcastStreamRecvError;
use tokio_stream::wrappers::BroadcastStream;
use tokio_stream::StreamExt as _;
use tower_shared::api::{Change, ChangeSource};
use tower_shared::github::PullRequest;
use tower_shared::hangar;
use tower_shared::provisioning::{StepId, StepStatus};
use tower_shared::snapshot::{CatalogEntity, RecordedRun};

use super::{backstage, Live};
use crate::config::Secret;

/// What was read from GitHub, Backstage and the history database.
#[derive(Debug, Default)]
pub(super) struct Remote {
    /// Pull requests by repository (`owner/name`), as last fetched.
    pub pulls: BTreeMap<String, Arc<Vec<PullRequest>>>,
    /// GitHub has answered at least one lookup.
    pub github_answered: bool,
    /// Repositories a webhook named: read at the next poll, whatever the schedule.
    pub due_repos: BTreeSet<String>,
    /// Pull requests a page shows (repo, number, head): their reviews and checks are read
    /// at the next poll.
    pub due_details: BTreeSet<(String, u64, Option<String>)>,
    /// What was read of them, by repo and number.
    pub details: BTreeMap<(String, u64), Arc<super::github::PullDetails>>,
    /// GitHub's comparisons of consecutive prod releases' commits, by (service, base, head):
    /// the commits `head` has that `base` lacks (`None`: GitHub knows no such commits). A
    /// pair's answer never changes, so each is asked once.
    pub compared: BTreeMap<(String, String, String), Option<Vec<String>>>,
    /// Each service's `cicd.yaml` text, once read.
    pub cicd: BTreeMap<String, String>,
    /// The newest recorded runs (for typical durations).
    pub history: Vec<RecordedRun>,
    /// Catalog entities found so far, by name; `catalog_answered` once Backstage answered.
    pub catalog: BTreeMap<String, CatalogEntity>,
    pub catalog_answered: bool,
    /// The services asked about and not found (yet): with `catalog`'s, every service the
    /// catalog has answered for. Any other is unknown to it, not absent.
    pub catalog_missing: BTreeSet<String>,
    /// What Prometheus last answered for each service's environments (by service, then
    /// environment): the figures their objectives are judged by ([`super::objectives`]).
    pub measured: BTreeMap<String, BTreeMap<String, tower_shared::runtime::Readings>>,
    /// The fleet's places (service, environment, namespace) Prometheus was last asked
    /// about; `None` before it was.
    pub judged: Option<Vec<(String, String, String)>>,
    /// What the tenants' Argo CD instance answered ([`super::tenant_apps`]).
    pub tenant_apps: super::tenant_apps::TenantApps,
}

/// How often the pollers look for what is due (GitHub answers are reused for 45 s, so an
/// unchanged repo costs nothing in between).
const POLL_EVERY: Duration = Duration::from_secs(5);
/// Fleet apps whose consecutive prod releases are looked at per poll, in turn, and
/// comparisons GitHub is asked for per poll at most (each pair once, ever).
const APPS_COMPARED_PER_POLL: usize = 8;
const COMPARES_PER_POLL: usize = 4;

/// Fleet apps' repos asked about per poll, in turn (besides what is due at once): the PR
/// tab's pull requests for every tracked app, at most ~5,800 conditional requests an hour —
/// mostly 304s, which GitHub does not count against the rate limit.
const APP_REPOS_PER_POLL: usize = 8;

/// The services whose pull requests differ between `old` and `new`: a request PR's by its
/// title, any other by its repository's name — unless the repo is a tenants repo, which
/// belongs to no service.
fn services_changed(
    repo: &str,
    tenants: bool,
    old: &[PullRequest],
    new: &[PullRequest],
) -> BTreeSet<Option<String>> {
    let repo_name = repo.rsplit('/').next().unwrap_or(repo);
    let service_of = |pr: &PullRequest| {
        hangar::parse_request_title(&pr.title)
            .map(|t| t.name)
            .or_else(|| {
                (!tenants)
                    .then(|| hangar::service_of_repo(repo_name))
                    .flatten()
            })
            .map(str::to_owned)
    };
    let added = new.iter().filter(|pr| !old.contains(pr));
    let gone = old
        .iter()
        .filter(|pr| !new.iter().any(|n| n.number == pr.number));
    added.chain(gone).map(service_of).collect()
}

impl Live {
    /// Forwards the watchers' object changes as notes (a lagging forwarder notes that
    /// anything may have changed).
    pub(super) async fn forward_cluster_changes(self) {
        let mut changes = BroadcastStream::new(self.inner.clusters.changes());
        while let Some(item) = changes.next().await {
            match item {
                Ok(change) => self.note(change),
                Err(BroadcastStreamRecvError::Lagged(_)) => self.note(Change {
                    action: Some("resynced".to_owned()),
                    ..Change::of(ChangeSource::Kubernetes, None)
                }),
            }
        }
    }

    /// Asks GitHub, every few seconds (and at once when a webhook names a repo), for what
    /// is due: the tenants repos' PRs, the repos of services still onboarding, repos a
    /// webhook or a page named, and [`APP_REPOS_PER_POLL`] of the fleet apps' repos in
    /// turn; and reads each tracked service's `cicd.yaml` once. Each answer is
    /// reused for 45 s and re-asked conditionally, so an unchanged repo costs no rate limit.
    pub(super) async fn poll_github(self) {
        let Some(github) = self.inner.github.clone() else {
            return;
        };
        let mut ticker = tokio::time::interval(POLL_EVERY);
        let mut derivations = self.derivations();
        let mut known: Vec<Arc<str>> = Vec::new();
        // Where the turns through the fleet's repos, and its apps' releases, are.
        let mut turn = 0_usize;
        let mut compare_turn = 0_usize;
        loop {
            // Every 5 s, at once when a service appears or goes, or a webhook arrives.
            tokio::select! {
                _ = ticker.tick() => {}
                () = self.inner.github_due.notified() => {}
                changed = derivations.changed() => {
                    if changed.is_err() {
                        return;
                    }
                    let names: Vec<Arc<str>> = derivations
                        .borrow_and_update()
                        .provisioning
                        .services
                        .iter()
                        .map(|s| Arc::clone(&s.name))
                        .collect();
                    if names == known {
                        continue;
                    }
                    known = names;
                }
            }
            let derived = self.derived();
            let tenants = self.tenants_repos();
            let mut repos: BTreeSet<String> = tenants.iter().cloned().collect();
            repos.extend(std::mem::take(&mut self.remote().due_repos));
            let mut cicd_wanted = Vec::new();
            for service in &derived.provisioning.services {
                if !self.remote().cicd.contains_key(&*service.name) {
                    cicd_wanted.push(service.name.to_string());
                }
                let Some(kind) = service.kind else { continue };
                // Until its onboarding PRs are read done — also when the step is done by
                // other signs, and after the service finished: a replica started after they
                // merged then shows them as the others do. (A service is listed here for
                // 15 minutes after it finished, so this stays a handful of repos.)
                let onboarding_read = service.steps.iter().any(|s| {
                    s.id == StepId::OnboardingPrs
                        && s.status == StepStatus::Done
                        && s.started_at.is_some()
                });
                if !kind.is_infra() && !onboarding_read {
                    repos.extend(
                        hangar::repos(&service.name, Some(kind))
                            .into_iter()
                            .map(|repo| format!("{}/{repo}", github.owner())),
                    );
                }
            }
            // Every fleet app's repos in turn, so later PRs reach Tower too.
            let app_repos: Vec<String> = derived
                .fleet
                .apps
                .iter()
                .flat_map(|app| hangar::repos(&app.name, hangar::ServiceKind::from_kind(&app.kind)))
                .map(|repo| format!("{}/{repo}", github.owner()))
                .collect();
            if !app_repos.is_empty() {
                turn %= app_repos.len();
                repos.extend(
                    app_repos
                        .iter()
                        .cycle()
                        .skip(turn)
                        .take(APP_REPOS_PER_POLL.min(app_repos.len()))
                        .cloned(),
                );
                turn += APP_REPOS_PER_POLL;
            }
            for repo in repos {
                // A cached answer needs no await: let requests in between repos.
                tokio::task::yield_now().await;
                let fetched = match github.pull_requests(&repo).await {
                    Ok(pulls) => Some(pulls),
                    // Not created yet: no pull requests, which is an answer too.
                    Err(err) if err.is_not_found() => Some(Arc::new(Vec::new())),
                    Err(err) => {
                        tracing::warn!(%repo, error = %err, "GitHub pull request lookup");
                        None
                    }
                };
                let Some(pulls) = fetched else { continue };
                let mut remote = self.remote();
                remote.github_answered = true;
                let services = match remote.pulls.get(&repo) {
                    Some(old) if Arc::ptr_eq(old, &pulls) => BTreeSet::new(),
                    old => services_changed(
                        &repo,
                        tenants.contains(&repo),
                        old.map_or(&[][..], |o| o.as_slice()),
                        &pulls,
                    ),
                };
                if pulls.is_empty() {
                    remote.pulls.remove(&repo);
                } else {
                    remote.pulls.insert(repo.clone(), pulls);
                }
                drop(remote);
                for service in services {
                    self.note(Change {
                        repo: Some(repo.clone()),
                        ..Change::of(ChangeSource::GitHub, service)
                    });
                }
            }
            let due_details = std::mem::take(&mut self.remote().due_details);
            for (repo, number, head) in due_details {
                tokio::task::yield_now().await;
                match github.pull_details(&repo, number, head.as_deref()).await {
                    Ok(details) => {
                        let key = (repo.clone(), number);
                        let changed = self
                            .remote()
                            .details
                            .get(&key)
                            .is_none_or(|d| **d != details);
                        if changed {
                            self.remote().details.insert(key, Arc::new(details));
                            let repo_name = repo.rsplit('/').next().unwrap_or(&repo);
                            self.note(Change {
                                repo: Some(repo.clone()),
                                ..Change::of(
                                    ChangeSource::GitHub,
                                    hangar::service_of_repo(repo_name).map(str::to_owned),
                                )
                            });
                        }
                    }
                    Err(err) => {
                        tracing::warn!(%repo, number, error = %err, "GitHub pull request details");
                    }
                }
            }
            // DORA's lead time by ancestry: GitHub's comparison of each pair of prod releases
            // that went live one after the other, a few apps and pairs per poll.
            let apps: Vec<&str> = derived.fleet.apps.iter().map(|a| a.name.as_str()).collect();
            if !apps.is_empty() {
                compare_turn %= apps.len();
                let looked: Vec<&str> = apps
                    .iter()
                    .cycle()
                    .skip(compare_turn)
                    .take(APPS_COMPARED_PER_POLL.min(apps.len()))
                    .copied()
                    .collect();
                compare_turn += APPS_COMPARED_PER_POLL;
                let wanted: Vec<(String, String, String)> = looked
                    .iter()
                    .flat_map(|app| {
                        let rollouts =
                            tower_shared::dora::prod_rollouts(&derived.service(app), app);
                        tower_shared::dora::comparisons_wanted(&rollouts)
                    })
                    .filter(|pair| !self.remote().compared.contains_key(pair))
                    .take(COMPARES_PER_POLL)
                    .collect();
                for (service, base, head) in wanted {
                    tokio::task::yield_now().await;
                    let repo = format!("{}/{}", github.owner(), hangar::source_repo(&service));
                    let commits = match github.compare(&repo, &base, &head).await {
                        Ok(compared) => Some(compared.commits.into_iter().map(|c| c.sha).collect()),
                        Err(err) if err.is_not_found() => None,
                        Err(err) => {
                            tracing::warn!(%repo, %base, %head, error = %err, "GitHub compare");
                            continue;
                        }
                    };
                    self.remote()
                        .compared
                        .insert((service.clone(), base, head), commits);
                    self.note(Change {
                        repo: Some(repo),
                        ..Change::of(ChangeSource::GitHub, Some(service))
                    });
                }
            }
            // Forget what was read of pull requests GitHub no longer lists.
            {
                let mut remote = self.remote();
                let Remote { pulls, details, .. } = &mut *remote;
                details.retain(|(repo, number), _| {
                    pulls
                        .get(repo)
                        .is_some_and(|listed| listed.iter().any(|pr| pr.number == *number))
                });
            }
            for service in cicd_wanted {
                let part = derived.service(&service);
                let (repo, path) =
                    hangar::cicd_location(part.control_plane(), github.owner(), &service);
                match github.file(&repo, &path).await {
                    Ok(Some(text)) => {
                        self.remote().cicd.insert(service.clone(), text);
                        self.note(Change {
                            repo: Some(repo),
                            ..Change::of(ChangeSource::GitHub, Some(service))
                        });
                    }
                    Ok(None) => {}
                    Err(err) => tracing::warn!(%repo, %path, error = %err, "reading cicd.yaml"),
                }
            }
            // GitHub's trouble is part of the health the deriver reads.
            if self.derived().health.github != github.trouble() {
                self.poke();
            }
        }
    }

    /// Every 5 s, looks up in the catalog (with Tower's read token) each listed service not
    /// found there yet, so the server-side derivation knows when the ingestor picked it up.
    pub(super) async fn poll_catalog(self, backstage: backstage::Backstage, token: Secret) {
        let mut ticker = tokio::time::interval(POLL_EVERY);
        loop {
            ticker.tick().await;
            let derived = self.derived();
            // The services provisioning shows, and those it may show but cannot yet say
            // whether they finished: a replica started just after one finished shows it
            // only once the catalog has answered for it.
            let wanted: BTreeSet<Arc<str>> = derived
                .provisioning
                .services
                .iter()
                .filter(|s| s.kind.is_some())
                .map(|s| &s.name)
                .chain(derived.filed.tracked(derived.now))
                .filter(|name| !self.remote().catalog.contains_key(&***name))
                .cloned()
                .collect();
            // The catalog counts as answering only after a full pass: a partial list would
            // say "not in the catalog" for services nobody asked about.
            let mut answered = true;
            for name in wanted {
                match backstage
                    .entity("component", "default", &name, token.expose())
                    .await
                {
                    Ok(found) => {
                        let entity =
                            found.and_then(|v| serde_json::from_value::<CatalogEntity>(v).ok());
                        let mut remote = self.remote();
                        if let Some(entity) = entity {
                            remote.catalog_missing.remove(&*name);
                            remote.catalog.insert(name.to_string(), entity);
                            drop(remote);
                            self.note(Change::of(ChangeSource::Catalog, Some(name.to_string())));
                        } else if remote.catalog_missing.insert(name.to_string()) {
                            drop(remote);
                            self.note(Change::of(ChangeSource::Catalog, Some(name.to_string())));
                        }
                    }
                    Err(err) => {
                        tracing::warn!(service = %name, error = %err, "catalog lookup");
                        answered = false;
                        break;
                    }
                }
            }
            let first_answer = {
                let mut remote = self.remote();
                let first = answered && !remote.catalog_answered;
                remote.catalog_answered |= answered;
                first
            };
            if first_answer {
                self.note(Change::of(ChangeSource::Catalog, None));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pr(repo: &str, number: u64, title: &str, state: &str) -> PullRequest {
        PullRequest {
            repo: repo.to_owned(),
            number,
            title: title.to_owned(),
            state: state.to_owned(),
            created_at: None,
            merged_at: None,
            closed_at: None,
            ..PullRequest::default()
        }
    }

    #[test]
    fn a_changed_pr_names_its_service() {
        let tenants = "acme/hangar-tenants";
        let old = [
            pr(tenants, 1, "Create NodeJS shop", "open"),
            pr(tenants, 2, "Create Go pay", "open"),
        ];
        let new = [
            pr(tenants, 1, "Create NodeJS shop", "closed"),
            pr(tenants, 2, "Create Go pay", "open"),
            pr(tenants, 3, "Bump the tenants' quotas", "open"),
        ];
        let changed = services_changed(tenants, true, &old, &new);
        // The tenants repo is not a service's: a PR without a request title names none.
        assert_eq!(
            changed,
            [None, Some("shop".to_owned())].into_iter().collect()
        );
        let gitops = [pr("acme/gitops-shop", 7, "Onboarding: re-sync", "open")];
        assert_eq!(
            services_changed("acme/gitops-shop", false, &[], &gitops),
            [Some("shop".to_owned())].into_iter().collect()
        );
        assert!(services_changed("acme/gitops-shop", false, &gitops, &gitops).is_empty());
    }
}
