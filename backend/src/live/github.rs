//! GitHub through octocrab: conditional GETs (`If-None-Match` → 304 costs no rate limit),
//! a 45-second cache per URL, bounded in entries and bytes ([`CacheLimits`]), and rate-limit
//! handling (`retry-after`, `x-ratelimit-reset`): while limited, Tower answers from its
//! cache instead of asking.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};
use http::header::{HeaderMap, HeaderValue, ETAG, IF_NONE_MATCH};
use http::StatusCode;
use octocrab::Octocrab;
use serde_json::Value;
use tower_shared::api::GitHubTrouble;
use tower_shared::github::{CheckRun, CommitStatus, GitHubUser, GitRef, PullRequest, Review};

use crate::clock::Clock;
use crate::config::GitHubConfig;

/// How long an answer is reused before GitHub is asked again.
pub const CACHE_FOR: Duration = Duration::from_secs(45);

/// What went wrong asking GitHub (never carries the token).
#[derive(Debug, thiserror::Error)]
pub enum GitHubError {
    #[error("GitHub answered {status} for {path}: {message}")]
    Status {
        status: u16,
        path: String,
        message: String,
    },
    /// `until` on Tower's clock; `retry_after_secs` in real seconds.
    #[error("GitHub rate limit reached; retrying after {until}")]
    RateLimited {
        until: DateTime<Utc>,
        retry_after_secs: u64,
    },
    #[error("GitHub could not be reached: {0}")]
    Unreachable(String),
    #[error("GitHub sent something unexpected for {path}: {message}")]
    Malformed { path: String, message: String },
}

impl GitHubError {
    pub fn is_not_found(&self) -> bool {
        matches!(self, GitHubError::Status { status: 404, .. })
    }
}

#[derive(Debug)]
struct Cached {
    etag: Option<HeaderValue>,
    /// `None`: GitHub said 404 (cached too, so a repo not created yet costs one request
    /// per cache period, not one per poll; dropped once older than [`CACHE_FOR`]).
    value: Option<Arc<Value>>,
    /// The pull requests read from `value`, once a caller asked for them: an unchanged
    /// (cached or 304) answer is not read again.
    pulls: Option<Arc<Vec<PullRequest>>>,
    /// The size of GitHub's answer, counted against [`CacheLimits::bytes`].
    bytes: usize,
    fetched: Instant,
    /// When a caller last read it: the least recently used go first.
    used: Instant,
    /// GitHub said the resource changed (a webhook): ask again whatever its age.
    expired: bool,
}

impl Cached {
    fn new(etag: Option<HeaderValue>, value: Option<Arc<Value>>, bytes: usize) -> Self {
        let now = Instant::now();
        Self {
            etag,
            value,
            pulls: None,
            bytes,
            fetched: now,
            used: now,
            expired: false,
        }
    }
}

/// How much of GitHub's answers Tower keeps: whichever bound is met first evicts the least
/// recently used answers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CacheLimits {
    pub entries: usize,
    pub bytes: usize,
}

impl Default for CacheLimits {
    /// Room for 10,000 services' pull requests and `cicd.yaml`s; 128 MiB at most.
    fn default() -> Self {
        Self {
            entries: 30_000,
            bytes: 128 << 20,
        }
    }
}

/// GitHub's answers by path, within [`CacheLimits`].
#[derive(Debug, Default)]
struct Cache {
    entries: HashMap<String, Cached>,
    bytes: usize,
    limits: CacheLimits,
    /// When 404 answers older than [`CACHE_FOR`] were last dropped.
    swept: Option<Instant>,
}

impl Cache {
    fn new(limits: CacheLimits) -> Self {
        Self {
            limits,
            ..Self::default()
        }
    }

    fn get(&self, path: &str) -> Option<&Cached> {
        self.entries.get(path)
    }

    /// The entry for `path`, marked as used `now`.
    fn touch(&mut self, path: &str, now: Instant) -> Option<&mut Cached> {
        let cached = self.entries.get_mut(path)?;
        cached.used = now;
        Some(cached)
    }

    /// The pull requests read from `value`, while it is still the answer kept for `path`.
    fn pulls_of(
        &mut self,
        path: &str,
        value: &Arc<Value>,
    ) -> Option<&mut Option<Arc<Vec<PullRequest>>>> {
        let cached = self.entries.get_mut(path)?;
        let same = cached.value.as_ref().is_some_and(|v| Arc::ptr_eq(v, value));
        same.then_some(&mut cached.pulls)
    }

    /// Keeps `cached` for `path`, then drops expired 404s (at most once per [`CACHE_FOR`])
    /// and the least recently used answers until both limits hold again, with a tenth to
    /// spare so eviction does not run on every insert.
    fn insert(&mut self, path: String, cached: Cached, now: Instant) {
        self.bytes += cached.bytes;
        if let Some(old) = self.entries.insert(path, cached) {
            self.bytes -= old.bytes;
        }
        if self
            .swept
            .is_none_or(|at| now.saturating_duration_since(at) >= CACHE_FOR)
        {
            self.swept = Some(now);
            let bytes = &mut self.bytes;
            self.entries.retain(|_, c| {
                let keep =
                    c.value.is_some() || now.saturating_duration_since(c.fetched) < CACHE_FOR;
                if !keep {
                    *bytes -= c.bytes;
                }
                keep
            });
        }
        let over = |entries: usize, bytes: usize| {
            entries > self.limits.entries || bytes > self.limits.bytes
        };
        if !over(self.entries.len(), self.bytes) {
            return;
        }
        let (keep_entries, keep_bytes) = (self.limits.entries / 10 * 9, self.limits.bytes / 10 * 9);
        let mut by_use: Vec<(Instant, &String, usize)> = self
            .entries
            .iter()
            .map(|(p, c)| (c.used, p, c.bytes))
            .collect();
        by_use.sort_unstable();
        let (mut entries, mut bytes) = (self.entries.len(), self.bytes);
        let mut evict = Vec::new();
        for (_, path, size) in by_use {
            if entries <= keep_entries && bytes <= keep_bytes {
                break;
            }
            evict.push(path.clone());
            entries -= 1;
            bytes -= size;
        }
        for path in evict {
            if let Some(old) = self.entries.remove(&path) {
                self.bytes -= old.bytes;
            }
        }
    }
}

fn answer(path: &str, cached: &Cached) -> Result<Arc<Value>, GitHubError> {
    cached.value.clone().ok_or_else(|| GitHubError::Status {
        status: 404,
        path: path.to_owned(),
        message: "Not Found".to_owned(),
    })
}

/// Until when GitHub said not to ask: in real time (how long Tower waits) and on Tower's
/// clock (what pages show).
#[derive(Clone, Copy, Debug)]
struct Limit {
    until: Instant,
    shown_until: DateTime<Utc>,
}

impl Limit {
    fn error(&self) -> GitHubError {
        GitHubError::RateLimited {
            until: self.shown_until,
            retry_after_secs: self
                .until
                .saturating_duration_since(Instant::now())
                .as_secs()
                .max(1),
        }
    }
}

#[derive(Debug, Default)]
struct State {
    cache: Cache,
    limited_until: Option<Limit>,
    /// The last failure other than a rate limit or 404, until GitHub answers again.
    failing: Option<String>,
    requests: u64,
    not_modified: u64,
}

/// Tower's GitHub client. Cheap to clone.
#[derive(Clone, Debug)]
pub struct GitHub {
    octocrab: Octocrab,
    owner: String,
    /// Tower's login when configured ([`GitHub::login`]).
    login: Option<String>,
    clock: Clock,
    state: Arc<Mutex<State>>,
}

/// One pull request's reviews and the checks on its head, as last read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PullDetails {
    /// The head commit the checks were read for.
    pub head: Option<String>,
    pub reviews: Vec<Review>,
    pub check_runs: Option<Vec<CheckRun>>,
    pub statuses: Option<Vec<CommitStatus>>,
}

impl PullDetails {
    /// Fills `pr` with what was read about it; checks only while its head is the same.
    pub fn fill(&self, pr: &mut PullRequest) {
        pr.reviews = Some(self.reviews.clone());
        if self.head.is_some() && self.head.as_deref() == pr.head.as_ref().map(|h| h.sha.as_str()) {
            pr.check_runs.clone_from(&self.check_runs);
            pr.statuses.clone_from(&self.statuses);
        }
    }
}

/// Counters for `/metrics`.
#[derive(Clone, Copy, Debug, Default)]
pub struct GitHubCounters {
    pub requests: u64,
    pub not_modified: u64,
    /// Answers kept, and their bytes.
    pub cached: usize,
    pub cached_bytes: usize,
}

impl GitHub {
    /// A client for `config`, stamping rate limits on `clock`.
    pub fn new(config: &GitHubConfig, clock: Clock) -> anyhow::Result<Self> {
        let mut builder = Octocrab::builder()
            .base_uri(config.api_url.as_str())?
            .set_connect_timeout(Some(Duration::from_secs(5)))
            .set_read_timeout(Some(Duration::from_secs(15)))
            .set_write_timeout(Some(Duration::from_secs(15)))
            // octocrab's default retries a 429 at once, three times, ignoring `retry-after`;
            // Tower waits the limit out itself (see `get`), so one attempt per ask.
            .add_retry_config(octocrab::service::middleware::retry::RetryConfig::None);
        if let Some(token) = &config.token {
            builder = builder.personal_token(token.expose().to_owned());
        }
        let mut octocrab = match &config.app {
            Some(app) => {
                let pem = std::fs::read(&app.private_key_file).map_err(|err| {
                    anyhow::anyhow!(
                        "github.app.privateKeyFile: reading {}: {err}",
                        app.private_key_file.display()
                    )
                })?;
                builder
                    .app_from_rsa_pem(app.app_id.into(), pem)
                    .map_err(|err| anyhow::anyhow!("github.app.privateKeyFile: {err}"))?
                    .build()?
            }
            None => builder.build()?,
        };
        if let Some(app) = &config.app {
            octocrab = octocrab.installation(app.installation_id.into())?;
        }
        Ok(Self {
            octocrab,
            owner: config.owner.clone(),
            login: config.login.clone(),
            clock,
            state: Arc::default(),
        })
    }

    /// Tower's own login on GitHub — the author of the pull requests and commits it makes:
    /// `github.login` when configured (a GitHub App's is `<app-slug>[bot]`), else what
    /// `GET /user` says of its token (asked once, then kept).
    pub async fn login(&self) -> Result<String, GitHubError> {
        if let Some(login) = &self.login {
            return Ok(login.clone());
        }
        let user = self.get("/user", Duration::from_secs(24 * 3600)).await?;
        user["login"]
            .as_str()
            .map(str::to_owned)
            .ok_or_else(|| GitHubError::Malformed {
                path: "/user".to_owned(),
                message: "no login".to_owned(),
            })
    }

    /// The same client keeping at most `limits` of GitHub's answers (see [`CacheLimits`]).
    pub fn with_cache_limits(self, limits: CacheLimits) -> Self {
        self.state().cache = Cache::new(limits);
        self
    }

    /// The organisation owning the app and GitOps repos.
    pub fn owner(&self) -> &str {
        &self.owner
    }

    /// The octocrab client, for writes (pull requests and commits only).
    pub fn octocrab(&self) -> &Octocrab {
        &self.octocrab
    }

    fn state(&self) -> MutexGuard<'_, State> {
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// What is wrong with GitHub now, if anything (a rate limit's end on Tower's clock).
    pub fn trouble(&self) -> Option<GitHubTrouble> {
        let state = self.state();
        match (state.limited_until, &state.failing) {
            (Some(limit), _) if Instant::now() < limit.until => Some(GitHubTrouble::RateLimited {
                until: limit.shown_until,
            }),
            (_, Some(error)) => Some(GitHubTrouble::Failing {
                error: error.clone(),
            }),
            _ => None,
        }
    }

    pub fn counters(&self) -> GitHubCounters {
        let state = self.state();
        GitHubCounters {
            requests: state.requests,
            not_modified: state.not_modified,
            cached: state.cache.entries.len(),
            cached_bytes: state.cache.bytes,
        }
    }

    /// GETs `path` (with its query), from the cache when fresh, conditionally otherwise.
    /// While rate-limited, a cached answer is served however old; without one, the limit
    /// is the error.
    pub async fn get(&self, path: &str, max_age: Duration) -> Result<Arc<Value>, GitHubError> {
        let etag = {
            let mut state = self.state();
            if let Some(cached) = state.cache.touch(path, Instant::now()) {
                if !cached.expired && cached.fetched.elapsed() < max_age {
                    return answer(path, cached);
                }
            }
            let cached = state.cache.get(path);
            if let Some(limit) = state.limited_until {
                if Instant::now() < limit.until {
                    return match cached {
                        Some(cached) => answer(path, cached),
                        None => Err(limit.error()),
                    };
                }
            }
            cached.and_then(|c| c.etag.clone())
        };
        let answer = self.ask(path, etag).await;
        let mut state = self.state();
        match &answer {
            Ok(_) => state.failing = None,
            Err(err) if err.is_not_found() => state.failing = None,
            // GitHub as a whole is failing: away, broken, or refusing Tower's credentials.
            Err(GitHubError::Unreachable(_)) => state.failing = Some(answer_error(&answer)),
            Err(GitHubError::Status { status, .. }) if *status >= 500 || *status == 401 => {
                state.failing = Some(answer_error(&answer));
            }
            // A rate limit is its own trouble; a 403 or a bad answer for one repo says
            // nothing about the others.
            Err(_) => {}
        }
        answer
    }

    /// One request to GitHub (conditional when `etag` is known); caches the answer.
    async fn ask(&self, path: &str, etag: Option<HeaderValue>) -> Result<Arc<Value>, GitHubError> {
        let mut headers = HeaderMap::new();
        if let Some(etag) = etag {
            headers.insert(IF_NONE_MATCH, etag);
        }
        let response = self
            .octocrab
            ._get_with_headers(path, Some(headers))
            .await
            .map_err(|err| GitHubError::Unreachable(describe(&err)))?;
        let status = response.status();
        let limit = rate_limited_for(status, response.headers()).map(|wait| Limit {
            until: Instant::now() + wait,
            shown_until: self.clock.now() + self.clock.span_of_real(wait.as_secs()),
        });
        let new_etag = response.headers().get(ETAG).cloned();
        if let Some(answer) = self.settle(path, status, limit) {
            return answer;
        }
        let body = self
            .octocrab
            .body_to_string(response)
            .await
            .map_err(|err| GitHubError::Unreachable(describe(&err)))?;
        if status == StatusCode::NOT_FOUND {
            let cached = Cached::new(None, None, path.len());
            let err = answer(path, &cached);
            self.state()
                .cache
                .insert(path.to_owned(), cached, Instant::now());
            return err;
        }
        if !status.is_success() {
            let message = serde_json::from_str::<Value>(&body)
                .ok()
                .and_then(|v| v["message"].as_str().map(str::to_owned))
                .unwrap_or_else(|| status.to_string());
            return Err(GitHubError::Status {
                status: status.as_u16(),
                path: path.to_owned(),
                message,
            });
        }
        let value: Value = serde_json::from_str(&body).map_err(|err| GitHubError::Malformed {
            path: path.to_owned(),
            message: err.to_string(),
        })?;
        let value = Arc::new(value);
        self.state().cache.insert(
            path.to_owned(),
            Cached::new(new_etag, Some(Arc::clone(&value)), path.len() + body.len()),
            Instant::now(),
        );
        Ok(value)
    }

    /// Counts a request and answers it from the cache when GitHub said 304 or that the
    /// rate limit is spent; `None` when the body must be read.
    fn settle(
        &self,
        path: &str,
        status: StatusCode,
        limit: Option<Limit>,
    ) -> Option<Result<Arc<Value>, GitHubError>> {
        let mut state = self.state();
        state.requests += 1;
        if let Some(limit) = limit {
            state.limited_until = Some(limit);
            return Some(match state.cache.get(path) {
                Some(cached) => answer(path, cached),
                None => Err(limit.error()),
            });
        }
        if status == StatusCode::NOT_MODIFIED {
            state.not_modified += 1;
            if let Some(cached) = state.cache.touch(path, Instant::now()) {
                cached.fetched = Instant::now();
                cached.expired = false;
                return Some(answer(path, cached));
            }
        }
        None
    }

    /// Makes every cached answer about `repo` (`owner/name`) due, so the next read asks
    /// GitHub (conditionally: an unchanged answer still costs no rate limit). For when GitHub
    /// says the repo changed (a webhook).
    pub fn expire_repo(&self, repo: &str) {
        let prefix = format!("/repos/{repo}/");
        for (path, cached) in &mut self.state().cache.entries {
            if path.starts_with(&prefix) {
                cached.expired = true;
            }
        }
    }

    /// Every pull request of `repo` (`owner/name`), newest first (one page of 100). The
    /// same answer is read once: asking again for an unchanged repo copies nothing.
    pub async fn pull_requests(&self, repo: &str) -> Result<Arc<Vec<PullRequest>>, GitHubError> {
        let path =
            format!("/repos/{repo}/pulls?state=all&per_page=100&sort=created&direction=desc");
        let value = self.get(&path, CACHE_FOR).await?;
        if let Some(Some(pulls)) = self.state().cache.pulls_of(&path, &value).cloned() {
            return Ok(pulls);
        }
        let pulls: Vec<octocrab::models::pulls::PullRequest> =
            serde_json::from_value((*value).clone()).map_err(|err| GitHubError::Malformed {
                path: path.clone(),
                message: err.to_string(),
            })?;
        let pulls: Arc<Vec<PullRequest>> =
            Arc::new(pulls.into_iter().map(|pr| pull_request(repo, pr)).collect());
        if let Some(slot) = self.state().cache.pulls_of(&path, &value) {
            *slot = Some(Arc::clone(&pulls));
        }
        Ok(pulls)
    }

    /// What a page shows of one pull request beyond the list: its reviews, and the check
    /// runs and commit statuses on `head` (its head commit, when known). Each of the three
    /// is cached and re-asked conditionally like any answer.
    pub async fn pull_details(
        &self,
        repo: &str,
        number: u64,
        head: Option<&str>,
    ) -> Result<PullDetails, GitHubError> {
        let reviews: Vec<Review> = self
            .parsed(&format!(
                "/repos/{repo}/pulls/{number}/reviews?per_page=100"
            ))
            .await?;
        let (check_runs, statuses) = match head {
            Some(sha) => {
                #[derive(serde::Deserialize)]
                struct CheckRuns {
                    check_runs: Vec<CheckRun>,
                }
                #[derive(serde::Deserialize)]
                struct Combined {
                    statuses: Vec<CommitStatus>,
                }
                let runs: CheckRuns = self
                    .parsed(&format!(
                        "/repos/{repo}/commits/{sha}/check-runs?per_page=100"
                    ))
                    .await?;
                let combined: Combined = self
                    .parsed(&format!("/repos/{repo}/commits/{sha}/status"))
                    .await?;
                (Some(runs.check_runs), Some(combined.statuses))
            }
            None => (None, None),
        };
        Ok(PullDetails {
            head: head.map(str::to_owned),
            reviews,
            check_runs,
            statuses,
        })
    }

    /// GETs `path` (through the cache) and reads it as `T`.
    async fn parsed<T: serde::de::DeserializeOwned>(&self, path: &str) -> Result<T, GitHubError> {
        let value = self.get(path, CACHE_FOR).await?;
        T::deserialize(&*value).map_err(|err| GitHubError::Malformed {
            path: path.to_owned(),
            message: err.to_string(),
        })
    }

    /// GitHub's comparison of `base...head` in `repo` (commits or prefixes; cached and asked
    /// again conditionally, like every read).
    pub async fn compare(
        &self,
        repo: &str,
        base: &str,
        head: &str,
    ) -> Result<tower_shared::releases::GitHubCompare, GitHubError> {
        self.parsed(&format!("/repos/{repo}/compare/{base}...{head}"))
            .await
    }

    /// A file's text on the default branch; `None` when the repo or file does not exist.
    pub async fn file(&self, repo: &str, path: &str) -> Result<Option<String>, GitHubError> {
        Ok(self.file_at(repo, path, None).await?.map(|(_, text)| text))
    }

    /// A file's blob sha and text on `reference` (the default branch when `None`); `None`
    /// when the repo or file does not exist.
    pub async fn file_at(
        &self,
        repo: &str,
        path: &str,
        reference: Option<&str>,
    ) -> Result<Option<(String, String)>, GitHubError> {
        let mut url = format!("/repos/{repo}/contents/{path}");
        if let Some(reference) = reference {
            url.push_str("?ref=");
            url.push_str(reference);
        }
        let value = match self.get(&url, CACHE_FOR).await {
            Ok(value) => value,
            Err(err) if err.is_not_found() => return Ok(None),
            Err(err) => return Err(err),
        };
        let malformed = |message: String| GitHubError::Malformed {
            path: url.clone(),
            message,
        };
        let (Some(sha), Some(content)) = (value["sha"].as_str(), value["content"].as_str()) else {
            return Err(malformed("not a file with `sha` and `content`".to_owned()));
        };
        use base64::Engine as _;
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(content.replace(['\n', '\r'], ""))
            .map_err(|err| malformed(err.to_string()))?;
        let text = String::from_utf8(bytes).map_err(|err| malformed(err.to_string()))?;
        Ok(Some((sha.to_owned(), text)))
    }

    /// The names of the files in a folder on the default branch; `None` when the repo or
    /// folder does not exist.
    pub async fn folder(&self, repo: &str, path: &str) -> Result<Option<Vec<String>>, GitHubError> {
        let url = format!("/repos/{repo}/contents/{path}");
        let value = match self.get(&url, CACHE_FOR).await {
            Ok(value) => value,
            Err(err) if err.is_not_found() => return Ok(None),
            Err(err) => return Err(err),
        };
        let entries = value.as_array().ok_or_else(|| GitHubError::Malformed {
            path: url.clone(),
            message: "not a folder".to_owned(),
        })?;
        Ok(Some(
            entries
                .iter()
                .filter(|e| e["type"] == "file")
                .filter_map(|e| e["name"].as_str().map(str::to_owned))
                .collect(),
        ))
    }
}

fn answer_error(answer: &Result<Arc<Value>, GitHubError>) -> String {
    answer
        .as_ref()
        .err()
        .map(ToString::to_string)
        .unwrap_or_default()
}

fn pull_request(repo: &str, pr: octocrab::models::pulls::PullRequest) -> PullRequest {
    let state = match pr.state {
        Some(octocrab::models::IssueState::Open) => "open",
        _ => "closed",
    };
    PullRequest {
        repo: repo.to_owned(),
        number: pr.number,
        title: pr.title.unwrap_or_default(),
        state: state.to_owned(),
        created_at: pr.created_at,
        merged_at: pr.merged_at,
        closed_at: pr.closed_at,
        html_url: pr.html_url.map(|u| u.to_string()),
        user: pr.user.map(|u| GitHubUser { login: u.login }),
        draft: pr.draft.unwrap_or(false),
        head: (!pr.head.sha.is_empty()).then(|| GitRef {
            branch: pr.head.ref_field.clone(),
            sha: pr.head.sha.clone(),
        }),
        merge_commit_sha: pr.merge_commit_sha,
        requested_reviewers: pr
            .requested_reviewers
            .unwrap_or_default()
            .into_iter()
            .map(|u| GitHubUser { login: u.login })
            .collect(),
        labels: pr
            .labels
            .unwrap_or_default()
            .into_iter()
            .map(|label| label.name)
            .collect(),
        ..PullRequest::default()
    }
}

/// How long a 403/429 says not to ask (real time): `retry-after` seconds, else until
/// `x-ratelimit-reset` (epoch seconds on GitHub's wall clock) when `x-ratelimit-remaining`
/// is 0. Between a second and an hour.
fn rate_limited_for(status: StatusCode, headers: &HeaderMap) -> Option<Duration> {
    if status != StatusCode::FORBIDDEN && status != StatusCode::TOO_MANY_REQUESTS {
        return None;
    }
    let header = |name: &str| -> Option<i64> { headers.get(name)?.to_str().ok()?.parse().ok() };
    let wait = if let Some(seconds) = header("retry-after") {
        seconds
    } else if header("x-ratelimit-remaining") == Some(0) {
        header("x-ratelimit-reset")?.saturating_sub(crate::clock::wall().timestamp())
    } else {
        return None;
    };
    Some(Duration::from_secs(wait.clamp(1, 3600).unsigned_abs()))
}

/// An octocrab error in one line, without request headers (which hold the token).
fn describe(err: &octocrab::Error) -> String {
    match err {
        octocrab::Error::Hyper { source, .. } => source.to_string(),
        octocrab::Error::Service { source, .. } => source.to_string(),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn an_unreachable_github_is_trouble_until_it_answers() {
        // A port nothing listens on.
        let closed = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let url = format!("http://{}", closed.local_addr().expect("addr"));
        drop(closed);
        let github = GitHub::new(
            &GitHubConfig {
                api_url: url,
                owner: "acme".to_owned(),
                login: None,
                token: None,
                app: None,
                webhook_secret: None,
            },
            Clock::system(),
        )
        .expect("client");
        assert_eq!(github.trouble(), None);
        let err = github.get("/repos/acme/x/pulls", CACHE_FOR).await;
        assert!(matches!(err, Err(GitHubError::Unreachable(_))), "{err:?}");
        match github.trouble() {
            Some(GitHubTrouble::Failing { error }) => {
                assert!(error.contains("could not be reached"), "{error}")
            }
            other => panic!("not failing: {other:?}"),
        }
    }

    fn found(bytes: usize, at: Instant) -> Cached {
        Cached {
            used: at,
            fetched: at,
            ..Cached::new(None, Some(Arc::new(Value::Null)), bytes)
        }
    }

    #[test]
    fn the_cache_keeps_to_its_entries_dropping_the_least_recently_used() {
        let mut cache = Cache::new(CacheLimits {
            entries: 10,
            bytes: usize::MAX,
        });
        let start = Instant::now();
        for i in 0..10u64 {
            cache.insert(
                format!("/p/{i}"),
                found(1, start + Duration::from_millis(i)),
                start,
            );
        }
        assert_eq!(cache.entries.len(), 10);
        // The oldest, read again, is the most recently used now.
        cache.touch("/p/0", start + Duration::from_secs(1));
        cache.insert(
            "/p/10".to_owned(),
            found(1, start + Duration::from_secs(2)),
            start,
        );
        // Over the limit: down to nine, the least recently used (1 and 2) gone.
        assert_eq!(cache.entries.len(), 9);
        assert_eq!(cache.bytes, 9);
        assert!(cache.get("/p/0").is_some(), "the one read again stays");
        assert!(cache.get("/p/1").is_none() && cache.get("/p/2").is_none());
        assert!(cache.get("/p/10").is_some());
    }

    #[test]
    fn the_cache_keeps_to_its_bytes_and_counts_a_replaced_answer_once() {
        let mut cache = Cache::new(CacheLimits {
            entries: usize::MAX,
            bytes: 1_000,
        });
        let start = Instant::now();
        cache.insert("/a".to_owned(), found(400, start), start);
        cache.insert("/a".to_owned(), found(500, start), start);
        assert_eq!(
            cache.bytes, 500,
            "a replaced answer's bytes are not counted twice"
        );
        cache.insert(
            "/b".to_owned(),
            found(400, start + Duration::from_millis(1)),
            start,
        );
        assert_eq!(cache.bytes, 900);
        cache.insert(
            "/c".to_owned(),
            found(300, start + Duration::from_millis(2)),
            start,
        );
        // 1,200 > 1,000: the oldest goes, leaving 700 ≤ 900.
        assert!(cache.get("/a").is_none());
        assert_eq!(cache.bytes, 700);
        assert_eq!(cache.entries.len(), 2);
    }

    #[test]
    fn not_found_answers_are_dropped_once_stale() {
        let mut cache = Cache::new(CacheLimits::default());
        let start = Instant::now();
        cache.insert(
            "/repos/acme/gone/pulls".to_owned(),
            Cached {
                fetched: start,
                used: start,
                ..Cached::new(None, None, 22)
            },
            start,
        );
        cache.insert("/repos/acme/here/pulls".to_owned(), found(10, start), start);
        let soon = start + CACHE_FOR / 2;
        cache.insert("/x".to_owned(), found(1, soon), soon);
        assert!(
            cache.get("/repos/acme/gone/pulls").is_some(),
            "fresh: still an answer"
        );
        let later = start + CACHE_FOR + Duration::from_secs(1);
        cache.insert("/y".to_owned(), found(1, later), later);
        assert!(
            cache.get("/repos/acme/gone/pulls").is_none(),
            "a stale 404 is dropped"
        );
        assert!(
            cache.get("/repos/acme/here/pulls").is_some(),
            "a found answer is kept"
        );
        assert_eq!(cache.bytes, 12);
    }

    #[test]
    fn rate_limits_are_read_from_either_header() {
        let mut headers = HeaderMap::new();
        headers.insert("retry-after", HeaderValue::from_static("30"));
        let wait = rate_limited_for(StatusCode::TOO_MANY_REQUESTS, &headers).expect("limited");
        assert_eq!(wait, Duration::from_secs(30));

        let mut headers = HeaderMap::new();
        let reset = (crate::clock::wall().timestamp() + 600).to_string();
        headers.insert("x-ratelimit-remaining", HeaderValue::from_static("0"));
        headers.insert(
            "x-ratelimit-reset",
            HeaderValue::from_str(&reset).expect("ascii"),
        );
        let wait = rate_limited_for(StatusCode::FORBIDDEN, &headers).expect("limited");
        assert!((595..=600).contains(&wait.as_secs()), "{wait:?}");

        // A 403 that is not about the rate limit (e.g. no access) is not a limit.
        assert!(rate_limited_for(StatusCode::FORBIDDEN, &HeaderMap::new()).is_none());
    }
}
