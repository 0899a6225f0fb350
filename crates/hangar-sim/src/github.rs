//! The subset of GitHub's REST API Tower uses: repositories, pull requests (list, get, create,
//! search by title), git refs and file contents — with ETags (`If-None-Match` → 304) and
//! rate-limit headers. Pull requests come from the stories, on the world's clock; what
//! clients create (refs, files, pull requests) is kept.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use axum::body::Bytes;
use axum::extract::{Path, Query, State};
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use base64::Engine as _;
use chrono::{DateTime, Utc};
use serde_json::{json, Value};

use crate::platform::Platform;
use crate::stories::PullRequest;

/// A fault the API can be told to answer with (see `Platform::inject_github_fault`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fault {
    /// A secondary rate limit: every request refused 429 for `retry_after` seconds, each
    /// with `retry-after` saying how many are left.
    TooManyRequests { retry_after: u64 },
    /// The primary rate limit spent: every request refused 403 with
    /// `x-ratelimit-remaining: 0` and `x-ratelimit-reset` at the window's end, `reset_in`
    /// seconds after it began; no `retry-after`.
    RateLimitSpent { reset_in: u64 },
    /// 403 for lack of access (not a rate limit) to what the trigger names, for good.
    Forbidden,
}

/// A fault waiting for its trigger, then answering for as long as it lasts.
#[derive(Debug)]
pub(crate) struct Armed {
    fault: Fault,
    trigger: String,
    /// When the trigger was met, once it was.
    opened: Option<Instant>,
}

impl Armed {
    pub(crate) fn new(fault: Fault, trigger: &str) -> Self {
        Self {
            fault,
            trigger: trigger.to_owned(),
            opened: None,
        }
    }

    /// How long a rate limit refuses once met.
    fn lasts(&self) -> Option<Duration> {
        match self.fault {
            Fault::TooManyRequests { retry_after: secs }
            | Fault::RateLimitSpent { reset_in: secs } => Some(Duration::from_secs(secs)),
            Fault::Forbidden => None,
        }
    }

    /// A rate limit met and over (no access to a repo is never over).
    pub(crate) fn ended(&self, now: Instant) -> bool {
        match (self.opened, self.lasts()) {
            (Some(opened), Some(lasts)) => now.duration_since(opened) >= lasts,
            _ => false,
        }
    }

    /// Whether this fault answers a request for `path` at `now`: an open rate limit
    /// answers every request; otherwise, requests about its trigger.
    pub(crate) fn meets(&self, path: &str, now: Instant) -> bool {
        match (self.opened, self.lasts()) {
            (Some(opened), Some(lasts)) => now.duration_since(opened) < lasts,
            _ => path.contains(&self.trigger),
        }
    }

    /// Opens the fault (if it was waiting) and says how it answers: the fault and how long
    /// it has left (a rate limit's `retry-after` / reset).
    pub(crate) fn answer(&mut self, now: Instant) -> Option<(Fault, Duration)> {
        let opened = *self.opened.get_or_insert(now);
        let left = self.lasts().map_or(Duration::ZERO, |lasts| {
            lasts.saturating_sub(now.duration_since(opened))
        });
        Some((self.fault, left))
    }
}

/// Requests per hour before the simulated primary rate limit answers 403.
pub const RATE_LIMIT: u32 = 5_000;

#[derive(Debug, Default)]
struct Written {
    /// (repo, branch) → commit sha.
    refs: BTreeMap<(String, String), String>,
    /// (repo, branch, path) → content.
    files: BTreeMap<(String, String, String), Vec<u8>>,
    pulls: Vec<PullRequest>,
    used: u32,
    /// (repo, branch) → who committed on a branch clients made, in order.
    authors: BTreeMap<(String, String), Vec<String>>,
}

/// The simulated GitHub, reading the platform's stories.
#[derive(Clone, Debug)]
pub struct GitHub {
    platform: Arc<Platform>,
    written: Arc<Mutex<Written>>,
    /// Wakes the webhook deliverer (a pull request changed through the API).
    changed: Arc<tokio::sync::Notify>,
}

/// Tower's login here: whoever calls with any token but a named user's.
pub const TOWER_LOGIN: &str = "tower-bot";
/// A token acting as another GitHub user: `sim-user-<login>` (a person who opens a branch or
/// a pull request by hand, in a test).
pub const USER_TOKEN_PREFIX: &str = "sim-user-";

/// Who a request acts as: the login its token names ([`USER_TOKEN_PREFIX`]), else Tower's.
fn login_of(headers: &axum::http::HeaderMap) -> String {
    headers
        .get(header::AUTHORIZATION)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.split_whitespace().last())
        .and_then(|token| token.strip_prefix(USER_TOKEN_PREFIX))
        .map_or_else(|| TOWER_LOGIN.to_owned(), str::to_owned)
}

/// `GET /user`: the user the token acts as.
async fn current_user(headers: axum::http::HeaderMap) -> Json<Value> {
    Json(user_json(&login_of(&headers)))
}

fn error(status: StatusCode, message: &str) -> Response {
    (
        status,
        Json(json!({"message": message, "documentation_url": "https://docs.github.com/rest"})),
    )
        .into_response()
}

/// A JSON request body; anything else is answered as GitHub does, 400 "Problems parsing JSON".
struct Body(Value);

impl<S: Send + Sync> axum::extract::FromRequest<S> for Body {
    type Rejection = Response;

    async fn from_request(request: axum::extract::Request, state: &S) -> Result<Self, Response> {
        let bytes = Bytes::from_request(request, state)
            .await
            .map_err(|_| error(StatusCode::BAD_REQUEST, "Problems parsing JSON"))?;
        serde_json::from_slice(&bytes)
            .map(Body)
            .map_err(|_| error(StatusCode::BAD_REQUEST, "Problems parsing JSON"))
    }
}

fn ts(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

/// A stable fake object id, 40 hex digits.
fn sha_of(text: &str) -> String {
    let mut out = String::new();
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    while out.len() < 40 {
        for b in text.bytes().chain(out.clone().into_bytes()) {
            h = (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
        }
        out.push_str(&format!("{h:016x}"));
    }
    out.truncate(40);
    out
}

/// A user as GitHub's API embeds one (`simple-user`).
fn user_json(login: &str) -> Value {
    let id = 1_000 + login.bytes().map(u64::from).sum::<u64>();
    let api = format!("https://api.github.com/users/{login}");
    json!({"login": login, "id": id, "node_id": format!("U_kgDO{id}"),
           "avatar_url": format!("https://avatars.githubusercontent.com/u/{id}?v=4"), "gravatar_id": "",
           "url": api, "html_url": format!("https://github.com/{login}"),
           "followers_url": format!("{api}/followers"), "following_url": format!("{api}/following{{/other_user}}"),
           "gists_url": format!("{api}/gists{{/gist_id}}"), "starred_url": format!("{api}/starred{{/owner}}{{/repo}}"),
           "subscriptions_url": format!("{api}/subscriptions"), "organizations_url": format!("{api}/orgs"),
           "repos_url": format!("{api}/repos"), "events_url": format!("{api}/events{{/privacy}}"),
           "received_events_url": format!("{api}/received_events"),
           "type": if login.ends_with("-bot") { "Bot" } else { "User" }, "site_admin": false})
}

/// A repository as GitHub's API embeds one.
fn repo_json(full: &str) -> Value {
    let (owner, name) = full.split_once('/').unwrap_or(("acme", full));
    let id = 50_000 + full.bytes().map(u64::from).sum::<u64>();
    json!({"id": id, "node_id": format!("R_kgDO{id}"), "name": name, "full_name": full,
           "owner": user_json(owner), "private": true, "html_url": format!("https://github.com/{full}"),
           "url": format!("https://api.github.com/repos/{full}"), "default_branch": "main", "fork": false})
}

/// A label as GitHub shows it.
fn label_json(repo: &str, name: &str) -> Value {
    let id = 20_000
        + u64::from(
            name.bytes()
                .fold(0u16, |h, b| h.wrapping_mul(31).wrapping_add(u16::from(b))),
        );
    json!({"id": id, "node_id": format!("LA_kwDO{id}"),
           "url": format!("https://api.github.com/repos/{repo}/labels/{name}"),
           "name": name, "description": null, "color": "5319e7", "default": false})
}

/// A pull request as GitHub's REST API answers it: in a list, or alone (`single`, which adds
/// `merged` and `mergeable`).
pub fn pull_json(pr: &PullRequest, single: bool) -> Value {
    let owner = pr.repo.split_once('/').map_or("acme", |(o, _)| o);
    let url = format!("https://github.com/{}/pull/{}", pr.repo, pr.number);
    let mut v = json!({
        "id": 10_000 + pr.number, "number": pr.number, "title": pr.title, "body": pr.body,
        "state": if pr.closed_at.is_some() { "closed" } else { "open" },
        "node_id": format!("PR_kwDO{}", 10_000 + pr.number), "user": user_json(&pr.user),
        "created_at": ts(pr.created_at), "updated_at": ts(pr.merged_at.or(pr.closed_at).unwrap_or(pr.created_at)),
        "closed_at": pr.closed_at.map(ts), "merged_at": pr.merged_at.map(ts),
        "html_url": url, "url": format!("https://api.github.com/repos/{}/pulls/{}", pr.repo, pr.number),
        "draft": pr.draft, "locked": false, "merge_commit_sha": pr.merge_commit_sha,
        "labels": pr.labels.iter().map(|l| label_json(&pr.repo, l)).collect::<Vec<_>>(),
        "requested_reviewers": requested_of(pr).into_iter().map(user_json).collect::<Vec<_>>(),
        "head": {"ref": pr.head_ref, "sha": pr.head_sha.clone().unwrap_or_else(|| sha_of(&pr.head_ref)),
                 "label": format!("{owner}:{}", pr.head_ref),
                 "user": user_json(owner), "repo": repo_json(&pr.repo)},
        "base": {"ref": pr.base_ref, "sha": sha_of(&pr.base_ref), "label": format!("{owner}:{}", pr.base_ref),
                 "user": user_json(owner), "repo": repo_json(&pr.repo)},
    });
    if single {
        v["merged"] = json!(pr.merged_at.is_some());
        v["mergeable"] = Value::Null;
    }
    v
}

impl GitHub {
    pub fn new(platform: Arc<Platform>) -> Self {
        Self {
            platform,
            written: Arc::new(Mutex::new(Written::default())),
            changed: Arc::new(tokio::sync::Notify::new()),
        }
    }

    fn written(&self) -> MutexGuard<'_, Written> {
        self.written
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Every pull request now: the stories' and the ones clients opened.
    fn pulls(&self) -> Vec<PullRequest> {
        let mut all = self.platform.pull_requests();
        all.extend(self.written().pulls.iter().cloned());
        all
    }

    /// One repository's pull requests now: the stories' and the ones clients opened.
    fn pulls_of(&self, repo: &str) -> Vec<PullRequest> {
        let mut all = self.platform.pull_requests_of(repo);
        all.extend(
            self.written()
                .pulls
                .iter()
                .filter(|p| p.repo == repo)
                .cloned(),
        );
        all
    }

    fn known_repo(&self, repo: &str) -> bool {
        // `pulls_of` takes the lock itself: ask it first, then look at the refs.
        !self.pulls_of(repo).is_empty()
            || self.written().refs.keys().any(|(r, _)| r == repo)
            || self.platform.has_files(repo)
            || repo == "acme/hangar-tenants"
    }

    /// The router for the GitHub API.
    pub fn router(self) -> Router {
        Router::new()
            .route("/repos/{owner}/{repo}", get(repo))
            .route(
                "/repos/{owner}/{repo}/pulls",
                get(list_pulls).post(create_pull),
            )
            .route(
                "/repos/{owner}/{repo}/pulls/{number}",
                get(get_pull).patch(edit_pull),
            )
            .route(
                "/repos/{owner}/{repo}/pulls/{number}/merge",
                get(merged_or_not).put(merge_pull),
            )
            .route("/repos/{owner}/{repo}/pulls/{number}/reviews", get(reviews))
            .route(
                "/repos/{owner}/{repo}/commits/{sha}/check-runs",
                get(check_runs),
            )
            .route(
                "/repos/{owner}/{repo}/commits/{sha}/status",
                get(combined_status),
            )
            .route(
                "/repos/{owner}/{repo}/issues/{number}/labels",
                axum::routing::post(add_labels),
            )
            .route("/repos/{owner}/{repo}/git/ref/heads/{branch}", get(get_ref))
            .route(
                "/repos/{owner}/{repo}/git/refs",
                axum::routing::post(create_ref),
            )
            .route(
                "/repos/{owner}/{repo}/contents/{*path}",
                get(get_contents).put(put_contents),
            )
            .route("/repos/{owner}/{repo}/compare/{*basehead}", get(compare))
            .route("/search/issues", get(search))
            .route("/user", get(current_user))
            .layer(axum::middleware::from_fn_with_state(
                self.clone(),
                conditional_and_limited,
            ))
            .with_state(self)
    }
}

/// Rate-limit headers on every answer; 403 once the hour's budget is spent; and for GETs an
/// ETag, with `If-None-Match` answered 304 (which costs no budget, as on GitHub).
async fn conditional_and_limited(
    State(github): State<GitHub>,
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> Response {
    if let Some((fault, left)) = github.platform.next_github_fault(request.uri().path()) {
        return fault_response(fault, left);
    }
    let is_get = request.method() == axum::http::Method::GET;
    let if_none_match = request.headers().get(header::IF_NONE_MATCH).cloned();
    let reset = (github.platform.clock().start() + chrono::Duration::hours(1)).timestamp();
    let used = github.written().used;
    let limit_headers = |response: &mut Response, used: u32| {
        let h = response.headers_mut();
        h.insert("x-ratelimit-limit", HeaderValue::from(RATE_LIMIT));
        h.insert(
            "x-ratelimit-remaining",
            HeaderValue::from(RATE_LIMIT.saturating_sub(used)),
        );
        h.insert("x-ratelimit-used", HeaderValue::from(used));
        h.insert("x-ratelimit-reset", HeaderValue::from(reset));
        h.insert("x-ratelimit-resource", HeaderValue::from_static("core"));
    };
    if used >= RATE_LIMIT {
        let mut response = error(StatusCode::FORBIDDEN, "API rate limit exceeded");
        limit_headers(&mut response, used);
        return response;
    }
    let response = next.run(request).await;
    let (mut parts, body) = response.into_parts();
    let bytes = axum::body::to_bytes(body, 16 * 1024 * 1024)
        .await
        .unwrap_or_default();
    if is_get && parts.status == StatusCode::OK {
        let etag = format!("\"{}\"", sha_of(&String::from_utf8_lossy(&bytes)));
        if if_none_match.as_ref().and_then(|v| v.to_str().ok()) == Some(etag.as_str()) {
            let mut not_modified = StatusCode::NOT_MODIFIED.into_response();
            not_modified.headers_mut().insert(
                header::ETAG,
                HeaderValue::from_str(&etag).unwrap_or(HeaderValue::from_static("\"\"")),
            );
            limit_headers(&mut not_modified, used);
            return not_modified;
        }
        if let Ok(value) = HeaderValue::from_str(&etag) {
            parts.headers.insert(header::ETAG, value);
        }
    }
    let used = {
        let mut written = github.written();
        written.used += 1;
        written.used
    };
    let mut response = Response::from_parts(parts, axum::body::Body::from(bytes));
    limit_headers(&mut response, used);
    response
}

/// GitHub's answer for `fault`, with `left` of its window to run.
fn fault_response(fault: Fault, left: Duration) -> Response {
    // Whole seconds, rounded up: GitHub never says 0 while still refusing.
    let secs = left.as_secs() + u64::from(left.subsec_nanos() > 0);
    match fault {
        Fault::TooManyRequests { .. } => {
            let mut response = error(
                StatusCode::TOO_MANY_REQUESTS,
                "You have exceeded a secondary rate limit",
            );
            response
                .headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from(secs));
            response
        }
        Fault::RateLimitSpent { .. } => {
            let mut response = error(StatusCode::FORBIDDEN, "API rate limit exceeded");
            let reset =
                chrono::Utc::now().timestamp() + i64::try_from(secs).unwrap_or(i64::MAX / 2);
            let h = response.headers_mut();
            h.insert("x-ratelimit-remaining", HeaderValue::from(0));
            h.insert("x-ratelimit-reset", HeaderValue::from(reset));
            response
        }
        Fault::Forbidden => error(
            StatusCode::FORBIDDEN,
            "Resource not accessible by integration",
        ),
    }
}

async fn repo(
    State(github): State<GitHub>,
    Path((owner, name)): Path<(String, String)>,
) -> Response {
    let full = format!("{owner}/{name}");
    if !github.known_repo(&full) {
        return error(StatusCode::NOT_FOUND, "Not Found");
    }
    Json(repo_json(&full)).into_response()
}

async fn list_pulls(
    State(github): State<GitHub>,
    Path((owner, name)): Path<(String, String)>,
    Query(query): Query<BTreeMap<String, String>>,
) -> Response {
    let full = format!("{owner}/{name}");
    if !github.known_repo(&full) {
        return error(StatusCode::NOT_FOUND, "Not Found");
    }
    let state = query.get("state").map_or("open", String::as_str);
    let per_page = query
        .get("per_page")
        .and_then(|p| p.parse::<usize>().ok())
        .unwrap_or(30)
        .clamp(1, 100);
    let page = query
        .get("page")
        .and_then(|p| p.parse::<usize>().ok())
        .unwrap_or(1)
        .max(1);
    let head = query
        .get("head")
        .map(|h| h.rsplit(':').next().unwrap_or(h).to_owned());
    let mut pulls: Vec<PullRequest> = github
        .pulls_of(&full)
        .into_iter()
        .filter(|p| match state {
            "closed" => p.closed_at.is_some(),
            "all" => true,
            _ => p.closed_at.is_none(),
        })
        .filter(|p| head.as_ref().is_none_or(|h| &p.head_ref == h))
        .collect();
    pulls.sort_by(|a, b| {
        b.created_at
            .cmp(&a.created_at)
            .then(b.number.cmp(&a.number))
    });
    let items: Vec<Value> = pulls
        .iter()
        .skip((page - 1) * per_page)
        .take(per_page)
        .map(|p| pull_json(p, false))
        .collect();
    Json(Value::Array(items)).into_response()
}

async fn get_pull(
    State(github): State<GitHub>,
    Path((owner, name, number)): Path<(String, String, String)>,
) -> Response {
    let full = format!("{owner}/{name}");
    let Ok(number) = number.parse::<u64>() else {
        return error(StatusCode::NOT_FOUND, "Not Found");
    };
    match github.pulls_of(&full).iter().find(|p| p.number == number) {
        Some(pr) => Json(pull_json(pr, true)).into_response(),
        None => error(StatusCode::NOT_FOUND, "Not Found"),
    }
}

/// `PATCH …/pulls/{n}` `{"title"?, "body"?}`: edits a pull request a client opened (200 with
/// it); 404 for any other number (the stories' are not this client's to edit here), 422
/// when neither is a string.
async fn edit_pull(
    State(github): State<GitHub>,
    Path((owner, name, number)): Path<(String, String, String)>,
    Body(request): Body,
) -> Response {
    let full = format!("{owner}/{name}");
    let Ok(number) = number.parse::<u64>() else {
        return error(StatusCode::NOT_FOUND, "Not Found");
    };
    let (title, body) = (request["title"].as_str(), request["body"].as_str());
    if title.is_none() && body.is_none() {
        return error(
            StatusCode::UNPROCESSABLE_ENTITY,
            "Validation Failed: title or body is required",
        );
    }
    let mut written = github.written();
    let Some(pr) = written
        .pulls
        .iter_mut()
        .find(|p| p.repo == full && p.number == number)
    else {
        return error(StatusCode::NOT_FOUND, "Not Found");
    };
    if let Some(title) = title {
        title.clone_into(&mut pr.title);
    }
    if let Some(body) = body {
        body.clone_into(&mut pr.body);
    }
    let answer = pull_json(pr, true);
    drop(written);
    github.changed.notify_one();
    Json(answer).into_response()
}

/// The reviews of pull request `pr` up to `now`, by a rule of its number: every fourth is
/// commented on then approved, every fourth has changes requested (approved by the same
/// reviewer once merged), every fourth waits for its requested reviewer (who approves
/// before the merge), every fourth is approved at once.
fn reviews_of(pr: &PullRequest, now: DateTime<Utc>) -> Vec<(String, &'static str, DateTime<Utc>)> {
    let at = |minutes| pr.created_at + chrono::Duration::minutes(minutes);
    let before_merge = pr.merged_at.map(|m| m - chrono::Duration::minutes(2));
    let mut out = match pr.number % 4 {
        0 => vec![("chen", "COMMENTED", at(10)), ("bo", "APPROVED", at(25))],
        1 => {
            let mut v = vec![("dara", "CHANGES_REQUESTED", at(10))];
            v.extend(before_merge.map(|t| ("dara", "APPROVED", t)));
            v
        }
        2 => before_merge
            .map(|t| ("ana", "APPROVED", t))
            .into_iter()
            .collect(),
        _ => vec![("ana", "APPROVED", at(10))],
    };
    out.retain(|(_, _, t)| *t <= now);
    out.sort_by_key(|(_, _, t)| *t);
    out.into_iter()
        .map(|(who, state, t)| (who.to_owned(), state, t))
        .collect()
}

/// Who is asked to review `pr` and has not answered: every fourth open one waits for ana.
fn requested_of(pr: &PullRequest) -> Vec<&'static str> {
    if pr.number % 4 == 2 && pr.closed_at.is_none() {
        vec!["ana"]
    } else {
        Vec::new()
    }
}

/// `GET …/pulls/{n}/reviews`.
async fn reviews(
    State(github): State<GitHub>,
    Path((owner, name, number)): Path<(String, String, String)>,
) -> Response {
    let full = format!("{owner}/{name}");
    let now = github.platform.clock().now();
    let Some(pr) = number
        .parse::<u64>()
        .ok()
        .and_then(|n| github.pulls_of(&full).into_iter().find(|p| p.number == n))
    else {
        return error(StatusCode::NOT_FOUND, "Not Found");
    };
    let reviews: Vec<Value> = reviews_of(&pr, now)
        .into_iter()
        .enumerate()
        .map(|(i, (who, state, at))| {
            let id = pr.number * 100 + i as u64;
            json!({"id": id, "node_id": format!("PRR_kwDO{id}"), "user": user_json(&who),
                   "body": "", "state": state, "submitted_at": ts(at), "commit_id": pr.head_sha,
                   "html_url": format!("https://github.com/{full}/pull/{}#pullrequestreview-{id}", pr.number)})
        })
        .collect();
    Json(reviews).into_response()
}

/// The pull request of `repo` whose head is `sha`; GitHub's refusal otherwise: 404 for a
/// repo it does not know, 422 for a commit no pull request has at its head.
fn pull_at(github: &GitHub, repo: &str, sha: &str) -> Result<PullRequest, Box<Response>> {
    if !github.known_repo(repo) {
        return Err(Box::new(error(StatusCode::NOT_FOUND, "Not Found")));
    }
    github
        .pulls_of(repo)
        .into_iter()
        .find(|p| p.head_sha.clone().unwrap_or_else(|| sha_of(&p.head_ref)) == sha)
        .ok_or_else(|| {
            Box::new(error(
                StatusCode::UNPROCESSABLE_ENTITY,
                &format!("No commit found for SHA: {sha}"),
            ))
        })
}

/// `GET …/commits/{sha}/check-runs`: a pull request head's checks — Pipelines-as-Code's for
/// its Tekton run, and a GitHub Actions commit-message lint that takes two minutes. A commit
/// no pull request has at its head is unknown (422, as GitHub says of a missing commit).
async fn check_runs(
    State(github): State<GitHub>,
    Path((owner, name, sha)): Path<(String, String, String)>,
) -> Response {
    let full = format!("{owner}/{name}");
    let pr = match pull_at(&github, &full, &sha) {
        Ok(pr) => pr,
        Err(refused) => return *refused,
    };
    let now = github.platform.clock().now();
    let linted = pr.created_at + chrono::Duration::minutes(2);
    let run = |id: u64, name: &str, app: &str, done: Option<DateTime<Utc>>| {
        json!({"id": id, "head_sha": sha, "name": name, "external_id": "",
               "status": if done.is_some() { "completed" } else { "in_progress" },
               "conclusion": done.map(|_| "success"), "started_at": ts(pr.created_at),
               "completed_at": done.map(ts),
               "html_url": format!("https://github.com/{full}/runs/{id}"),
               "details_url": format!("https://github.com/{full}/runs/{id}"),
               "app": {"slug": app, "name": app}})
    };
    let check_runs = vec![
        run(
            pr.number * 10 + 1,
            "pull-request",
            "pipelines-as-code",
            Some(pr.created_at),
        ),
        run(
            pr.number * 10 + 2,
            "commitlint",
            "github-actions",
            (linted <= now).then_some(linted),
        ),
    ];
    Json(json!({"total_count": check_runs.len(), "check_runs": check_runs})).into_response()
}

/// `GET …/commits/{sha}/status`: a pull request head's combined status — its DCO sign-off.
async fn combined_status(
    State(github): State<GitHub>,
    Path((owner, name, sha)): Path<(String, String, String)>,
) -> Response {
    let full = format!("{owner}/{name}");
    let pr = match pull_at(&github, &full, &sha) {
        Ok(pr) => pr,
        Err(refused) => return *refused,
    };
    Json(json!({"state": "success", "sha": sha, "total_count": 1,
                "statuses": [{"context": "dco", "state": "success",
                              "description": "All commits are signed off",
                              "target_url": null, "created_at": ts(pr.created_at)}]}))
    .into_response()
}

/// `GET …/pulls/{n}/merge`: 204 when merged, 404 otherwise (GitHub's answer).
async fn merged_or_not(
    State(github): State<GitHub>,
    Path((owner, name, number)): Path<(String, String, String)>,
) -> Response {
    let full = format!("{owner}/{name}");
    let merged = number.parse::<u64>().ok().is_some_and(|number| {
        github
            .pulls_of(&full)
            .iter()
            .any(|p| p.number == number && p.merged_at.is_some())
    });
    if merged {
        StatusCode::NO_CONTENT.into_response()
    } else {
        error(StatusCode::NOT_FOUND, "Not Found")
    }
}

/// `PUT …/pulls/{n}/merge`: merges an open pull request (200 with the merge commit), as
/// GitHub does; 405 when it is closed or merged already, 404 when there is none.
async fn merge_pull(
    State(github): State<GitHub>,
    Path((owner, name, number)): Path<(String, String, String)>,
) -> Response {
    let full = format!("{owner}/{name}");
    let Ok(number) = number.parse::<u64>() else {
        return error(StatusCode::NOT_FOUND, "Not Found");
    };
    let Some(pr) = github
        .pulls_of(&full)
        .into_iter()
        .find(|p| p.number == number)
    else {
        return error(StatusCode::NOT_FOUND, "Not Found");
    };
    if pr.closed_at.is_some() {
        return error(
            StatusCode::METHOD_NOT_ALLOWED,
            "Pull Request is not mergeable",
        );
    }
    let now = github.platform.clock().now();
    let written = {
        let mut written = github.written();
        let head = match written
            .pulls
            .iter_mut()
            .find(|p| p.repo == full && p.number == number)
        {
            Some(mine) => {
                mine.merged_at = Some(now);
                mine.closed_at = Some(now);
                Some(mine.head_ref.clone())
            }
            None => None,
        };
        // The branch's files land on `main`.
        if let Some(head) = &head {
            let changed: Vec<(String, Vec<u8>)> = written
                .files
                .iter()
                .filter(|((repo, branch, _), _)| *repo == full && branch == head)
                .map(|((_, _, path), content)| (path.clone(), content.clone()))
                .collect();
            for (path, content) in changed {
                commit_to_main(&github, &mut written, &full, &path, content);
            }
        }
        head.is_some()
    };
    if !written {
        github.platform.override_pull_request(&full, number, true);
    }
    github.changed.notify_one();
    Json(
        json!({"sha": sha_of(&format!("{full}#{number}@{now}")), "merged": true,
                "message": "Pull Request successfully merged"}),
    )
    .into_response()
}

impl GitHub {
    /// Delivers a `pull_request` webhook for every pull request that appears or changes
    /// (stories moving with world time, merges through the API), checking every `every` and
    /// at once after an API change — as GitHub does for an organisation webhook. Deliveries
    /// are signed with the webhook's secret (`X-Hub-Signature-256`) and not retried.
    pub async fn deliver_webhooks(self, every: std::time::Duration) {
        let client = reqwest::Client::builder()
            .timeout(std::time::Duration::from_secs(10))
            .build()
            .unwrap_or_default();
        let mut seen: BTreeMap<(String, u64), PullRequest> = self
            .pulls()
            .into_iter()
            .map(|p| ((p.repo.clone(), p.number), p))
            .collect();
        let mut ticker = tokio::time::interval(every);
        let mut delivery: u64 = 0;
        loop {
            tokio::select! {
                _ = ticker.tick() => {}
                () = self.changed.notified() => {}
            }
            let now: BTreeMap<(String, u64), PullRequest> = self
                .pulls()
                .into_iter()
                .map(|p| ((p.repo.clone(), p.number), p))
                .collect();
            let Some(hook) = self.platform.github_webhook() else {
                seen = now;
                continue;
            };
            for (key, pr) in &now {
                let action = match seen.get(key) {
                    None => "opened",
                    Some(old) if old == pr => continue,
                    Some(old) if old.closed_at.is_some() && pr.closed_at.is_none() => "reopened",
                    Some(old) if old.closed_at.is_none() && pr.closed_at.is_some() => "closed",
                    Some(_) => "edited",
                };
                delivery += 1;
                let body = json!({"action": action, "number": pr.number,
                                  "pull_request": pull_json(pr, true),
                                  "repository": repo_json(&pr.repo),
                                  "sender": user_json(&pr.user)})
                .to_string();
                let key = ring::hmac::Key::new(ring::hmac::HMAC_SHA256, hook.secret.as_bytes());
                let tag = ring::hmac::sign(&key, body.as_bytes());
                let signature: String = tag.as_ref().iter().map(|b| format!("{b:02x}")).collect();
                let sent = client
                    .post(&hook.url)
                    .header("content-type", "application/json")
                    .header("user-agent", "GitHub-Hookshot/hangar-sim")
                    .header("x-github-event", "pull_request")
                    .header(
                        "x-github-delivery",
                        format!("00000000-0000-4000-8000-{delivery:012}"),
                    )
                    .header("x-hub-signature-256", format!("sha256={signature}"))
                    .body(body)
                    .send()
                    .await;
                if let Err(err) = sent {
                    tracing::warn!(url = %hook.url, error = %err, "delivering a webhook");
                }
            }
            seen = now;
        }
    }
}

async fn create_pull(
    State(github): State<GitHub>,
    Path((owner, name)): Path<(String, String)>,
    headers: axum::http::HeaderMap,
    Body(request): Body,
) -> Response {
    let full = format!("{owner}/{name}");
    let (Some(title), Some(head), Some(base)) = (
        request["title"].as_str(),
        request["head"].as_str(),
        request["base"].as_str(),
    ) else {
        return error(
            StatusCode::UNPROCESSABLE_ENTITY,
            "Validation Failed: title, head and base are required",
        );
    };
    let head = head.rsplit(':').next().unwrap_or(head).to_owned();
    // The stories' PRs first (that takes its own lock), then the check and the insert under
    // one lock: two requests at once make one pull request, as on GitHub.
    let mut existing = github.platform.pull_requests_of(&full);
    let mut written = github.written();
    existing.extend(written.pulls.iter().filter(|p| p.repo == full).cloned());
    if !written.refs.contains_key(&(full.clone(), head.clone())) {
        return error(
            StatusCode::UNPROCESSABLE_ENTITY,
            &format!("Validation Failed: head {head} does not exist"),
        );
    }
    if existing
        .iter()
        .any(|p| p.repo == full && p.head_ref == head && p.closed_at.is_none())
    {
        return error(
            StatusCode::UNPROCESSABLE_ENTITY,
            &format!("A pull request already exists for {owner}:{head}."),
        );
    }
    let number = existing
        .iter()
        .filter(|p| p.repo == full)
        .map(|p| p.number)
        .max()
        .unwrap_or(0)
        + 1;
    let pr = PullRequest {
        repo: full,
        number,
        title: title.to_owned(),
        body: request["body"].as_str().unwrap_or_default().to_owned(),
        user: login_of(&headers),
        head_ref: head,
        base_ref: base.to_owned(),
        created_at: github.platform.clock().now(),
        merged_at: None,
        closed_at: None,
        ..PullRequest::default()
    };
    let body = pull_json(&pr, true);
    written.pulls.push(pr);
    drop(written);
    github.changed.notify_one();
    (StatusCode::CREATED, Json(body)).into_response()
}

/// `POST …/issues/{n}/labels` `{"labels": [...]}`: adds labels to a pull request a client
/// opened (200 with all its labels); 404 for any other number, 422 without `labels`.
async fn add_labels(
    State(github): State<GitHub>,
    Path((owner, name, number)): Path<(String, String, String)>,
    Body(request): Body,
) -> Response {
    let full = format!("{owner}/{name}");
    let Some(labels) = request["labels"].as_array() else {
        return error(
            StatusCode::UNPROCESSABLE_ENTITY,
            "Validation Failed: labels is required",
        );
    };
    let labels: Vec<String> = labels
        .iter()
        .filter_map(Value::as_str)
        .map(str::to_owned)
        .collect();
    let mut written = github.written();
    let Some(pr) = written
        .pulls
        .iter_mut()
        .find(|p| p.repo == full && number.parse() == Ok(p.number))
    else {
        return error(StatusCode::NOT_FOUND, "Not Found");
    };
    for label in labels {
        if !pr.labels.contains(&label) {
            pr.labels.push(label);
        }
    }
    let all: Vec<Value> = pr.labels.iter().map(|l| label_json(&full, l)).collect();
    drop(written);
    github.changed.notify_one();
    Json(Value::Array(all)).into_response()
}

async fn get_ref(
    State(github): State<GitHub>,
    Path((owner, name, branch)): Path<(String, String, String)>,
) -> Response {
    let full = format!("{owner}/{name}");
    let sha = github
        .written()
        .refs
        .get(&(full.clone(), branch.clone()))
        .cloned();
    let sha = match sha {
        Some(sha) => sha,
        None if branch == "main" && github.known_repo(&full) => sha_of(&format!("{full}@main")),
        None => return error(StatusCode::NOT_FOUND, "Not Found"),
    };
    Json(json!({"ref": format!("refs/heads/{branch}"), "object": {"sha": sha, "type": "commit"}}))
        .into_response()
}

async fn create_ref(
    State(github): State<GitHub>,
    Path((owner, name)): Path<(String, String)>,
    Body(request): Body,
) -> Response {
    let full = format!("{owner}/{name}");
    let (Some(reference), Some(sha)) = (request["ref"].as_str(), request["sha"].as_str()) else {
        return error(
            StatusCode::UNPROCESSABLE_ENTITY,
            "Validation Failed: ref and sha are required",
        );
    };
    let Some(branch) = reference.strip_prefix("refs/heads/") else {
        return error(
            StatusCode::UNPROCESSABLE_ENTITY,
            "Validation Failed: ref must start with refs/heads/",
        );
    };
    let mut written = github.written();
    let key = (full, branch.to_owned());
    if written.refs.contains_key(&key) {
        return error(StatusCode::UNPROCESSABLE_ENTITY, "Reference already exists");
    }
    written.refs.insert(key, sha.to_owned());
    (
        StatusCode::CREATED,
        Json(json!({"ref": reference, "object": {"sha": sha, "type": "commit"}})),
    )
        .into_response()
}

fn content_json(repo: &str, path: &str, branch: &str, content: &[u8]) -> Value {
    let encoded = base64::engine::general_purpose::STANDARD.encode(content);
    let wrapped: Vec<String> = encoded
        .as_bytes()
        .chunks(60)
        .map(|c| String::from_utf8_lossy(c).into_owned())
        .collect();
    json!({"type": "file", "encoding": "base64", "name": path.rsplit('/').next().unwrap_or(path), "path": path,
           "sha": sha_of(&String::from_utf8_lossy(content)), "size": content.len(),
           "content": wrapped.join("\n") + "\n",
           "html_url": format!("https://github.com/{repo}/blob/{branch}/{path}")})
}

/// A file's content on `branch` as GitHub would show it: what clients wrote there; else, on a
/// branch clients made, what `main` has (the sim forks every branch from `main`'s present);
/// else the stories' files on `main`.
fn file_at(
    written: &Written,
    github: &GitHub,
    repo: &str,
    branch: &str,
    path: &str,
) -> Option<Vec<u8>> {
    if let Some(content) = written
        .files
        .get(&(repo.to_owned(), branch.to_owned(), path.to_owned()))
    {
        return Some(content.clone());
    }
    if branch != "main" {
        return written
            .refs
            .contains_key(&(repo.to_owned(), branch.to_owned()))
            .then(|| file_at(written, github, repo, "main", path))
            .flatten();
    }
    github
        .platform
        .file(repo, path)
        .map(|f| f.content.into_bytes())
}

async fn get_contents(
    State(github): State<GitHub>,
    Path((owner, name, path)): Path<(String, String, String)>,
    Query(query): Query<BTreeMap<String, String>>,
) -> Response {
    let full = format!("{owner}/{name}");
    let branch = query
        .get("ref")
        .cloned()
        .unwrap_or_else(|| "main".to_owned());
    let written = github.written();
    if let Some(content) = file_at(&written, &github, &full, &branch, &path) {
        return Json(content_json(&full, &path, &branch, &content)).into_response();
    }
    // A folder: GitHub lists what is in it (files only here), by name.
    let listed = folder_at(&written, &github, &full, &branch, &path);
    drop(written);
    if listed.is_empty() {
        return error(StatusCode::NOT_FOUND, "Not Found");
    }
    Json(Value::Array(
        listed
            .iter()
            .map(|(file, content)| {
                let mut entry = content_json(&full, file, &branch, content);
                if let Some(entry) = entry.as_object_mut() {
                    entry.remove("content");
                    entry.remove("encoding");
                }
                entry
            })
            .collect(),
    ))
    .into_response()
}

/// The files directly in folder `dir` on `branch`, by path, read as [`file_at`] reads one.
fn folder_at(
    written: &Written,
    github: &GitHub,
    repo: &str,
    branch: &str,
    dir: &str,
) -> BTreeMap<String, Vec<u8>> {
    let prefix = format!("{}/", dir.trim_end_matches('/'));
    let inside = |path: &str| {
        path.strip_prefix(&prefix)
            .is_some_and(|rest| !rest.is_empty() && !rest.contains('/'))
    };
    let mut paths: std::collections::BTreeSet<String> = github
        .platform
        .files_of(repo)
        .into_iter()
        .filter(|p| inside(p))
        .collect();
    let forked = branch == "main"
        || written
            .refs
            .contains_key(&(repo.to_owned(), branch.to_owned()));
    paths.extend(
        written
            .files
            .keys()
            .filter(|(r, b, p)| r == repo && (b == branch || (forked && b == "main")) && inside(p))
            .map(|(_, _, p)| p.clone()),
    );
    paths
        .into_iter()
        .filter_map(|p| {
            let content = file_at(written, github, repo, branch, &p)?;
            Some((p, content))
        })
        .collect()
}

/// `content` committed as `path` of `repo` on `main`: the stories' world follows it when it
/// is theirs (Argo CD syncs an environment file; the file then reads as the story says),
/// else it is kept as written.
fn commit_to_main(
    github: &GitHub,
    written: &mut Written,
    repo: &str,
    path: &str,
    content: Vec<u8>,
) {
    let key = (repo.to_owned(), "main".to_owned(), path.to_owned());
    if github
        .platform
        .written_to_main(repo, path, &String::from_utf8_lossy(&content))
    {
        written.files.remove(&key);
    } else {
        written.files.insert(key, content);
    }
    github.platform.note_github_commit(repo, "main", path);
}

async fn put_contents(
    State(github): State<GitHub>,
    Path((owner, name, path)): Path<(String, String, String)>,
    headers: axum::http::HeaderMap,
    Body(request): Body,
) -> Response {
    let full = format!("{owner}/{name}");
    let (Some(message), Some(content)) = (request["message"].as_str(), request["content"].as_str())
    else {
        return error(
            StatusCode::UNPROCESSABLE_ENTITY,
            "Validation Failed: message and content are required",
        );
    };
    let Ok(content) =
        base64::engine::general_purpose::STANDARD.decode(content.replace(['\n', '\r'], ""))
    else {
        return error(
            StatusCode::UNPROCESSABLE_ENTITY,
            "Validation Failed: content is not valid Base64",
        );
    };
    let branch = request["branch"].as_str().unwrap_or("main").to_owned();
    let mut written = github.written();
    if branch != "main" && !written.refs.contains_key(&(full.clone(), branch.clone())) {
        return error(StatusCode::NOT_FOUND, &format!("Branch {branch} not found"));
    }
    let key = (full.clone(), branch.clone(), path.clone());
    let current = file_at(&written, &github, &full, &branch, &path)
        .map(|c| sha_of(&String::from_utf8_lossy(&c)));
    match (current.as_deref(), request["sha"].as_str()) {
        (Some(_), None) => {
            return error(
                StatusCode::UNPROCESSABLE_ENTITY,
                "Invalid request.\n\n\"sha\" wasn't supplied.",
            )
        }
        (Some(have), Some(given)) if have != given => {
            return error(
                StatusCode::CONFLICT,
                &format!("{path} does not match {given}"),
            );
        }
        _ => {}
    }
    let created = current.is_none();
    if branch == "main" {
        commit_to_main(&github, &mut written, &full, &path, content.clone());
    } else {
        written.files.insert(key, content.clone());
        written
            .authors
            .entry((full.clone(), branch.clone()))
            .or_default()
            .push(login_of(&headers));
        github.platform.note_github_commit(&full, &branch, &path);
    }
    let commit = sha_of(&format!(
        "{full}/{branch}/{path}/{message}/{}",
        written.files.len()
    ));
    written
        .refs
        .insert((full.clone(), branch.clone()), commit.clone());
    let body = json!({"content": content_json(&full, &path, &branch, &content),
                      "commit": {"sha": commit, "message": message,
                                 "html_url": format!("https://github.com/{full}/commit/{commit}")}});
    (
        if created {
            StatusCode::CREATED
        } else {
            StatusCode::OK
        },
        Json(body),
    )
        .into_response()
}

/// `main...<branch>` for a branch a client made: its files against `main`'s, each with the
/// unified patch GitHub would show (`similar`, three lines of context, from the first hunk
/// header), and a commit per write on it naming who wrote it.
fn compare_written(github: &GitHub, full: &str, base: &str, head: &str) -> Option<Value> {
    let written = github.written();
    let tip = written.refs.get(&(full.to_owned(), head.to_owned()))?;
    if base != "main" {
        return None;
    }
    let files: Vec<Value> = written
        .files
        .iter()
        .filter(|((repo, branch, _), _)| repo == full && branch == head)
        .filter_map(|((_, _, path), content)| {
            let before = file_at(&written, github, full, "main", path);
            let old = String::from_utf8_lossy(before.as_deref().unwrap_or_default()).into_owned();
            let new = String::from_utf8_lossy(content).into_owned();
            if old == new {
                return None;
            }
            let unified = similar::TextDiff::from_lines(&old, &new)
                .unified_diff()
                .context_radius(3)
                .to_string();
            let patch = unified
                .lines()
                .skip_while(|l| !l.starts_with("@@"))
                .collect::<Vec<_>>()
                .join("\n");
            let lines = |mark: char| patch.lines().filter(|l| l.starts_with(mark)).count();
            Some(json!({"filename": path, "status": if before.is_some() { "modified" } else { "added" },
                        "additions": lines('+'), "deletions": lines('-'),
                        "changes": lines('+') + lines('-'), "patch": patch}))
        })
        .collect();
    // One commit per write on the branch, each by who wrote it (the tip's sha on the last).
    let authors = written
        .authors
        .get(&(full.to_owned(), head.to_owned()))
        .cloned()
        .unwrap_or_default();
    let commits: Vec<Value> = authors
        .iter()
        .enumerate()
        .map(|(i, login)| {
            let sha = if i + 1 == authors.len() {
                tip.clone()
            } else {
                sha_of(&format!("{full}/{head}/{i}"))
            };
            json!({"sha": sha, "author": user_json(login), "commit": {"author": {"name": login}}})
        })
        .collect();
    let ahead = commits.len();
    Some(json!({
        "url": format!("https://api.github.com/repos/{full}/compare/{base}...{head}"),
        "html_url": format!("https://github.com/{full}/compare/{base}...{head}"),
        "status": if ahead == 0 { "identical" } else { "ahead" }, "ahead_by": ahead, "behind_by": 0,
        "total_commits": ahead,
        "commits": commits,
        "files": files,
    }))
}

/// `GET …/compare/{base}...{head}`: GitHub's comparison of two commits — its status,
/// `ahead_by`/`behind_by`, the commits `head` has that `base` lacks (oldest first) and the
/// files they changed with their patches; 404 when either commit is unknown, as GitHub.
async fn compare(
    State(github): State<GitHub>,
    Path((owner, name, basehead)): Path<(String, String, String)>,
) -> Response {
    let full = format!("{owner}/{name}");
    let Some((base, head)) = basehead.split_once("...") else {
        return error(StatusCode::NOT_FOUND, "Not Found");
    };
    if let Some(compared) = compare_written(&github, &full, base, head) {
        return Json(compared).into_response();
    }
    let Some((ahead, behind)) = github.platform.commits_between(&full, base, head) else {
        return error(StatusCode::NOT_FOUND, "Not Found");
    };
    let status = match (ahead.is_empty(), behind.is_empty()) {
        (true, true) => "identical",
        (false, true) => "ahead",
        (true, false) => "behind",
        (false, false) => "diverged",
    };
    let commits: Vec<Value> = ahead
        .iter()
        .map(|c| {
            json!({"sha": c.sha, "html_url": format!("https://github.com/{full}/commit/{}", c.sha),
                   "commit": {"message": c.message,
                              "author": {"name": c.author, "email": format!("{}@acme.example", c.author),
                                         "date": ts(c.date)}},
                   "author": user_json(&c.author)})
        })
        .collect();
    let files: Vec<Value> = ahead
        .iter()
        .flat_map(|c| c.files.iter())
        .map(|(path, status, patch)| {
            let lines = |mark: char| patch.lines().filter(|l| l.starts_with(mark)).count();
            json!({"filename": path, "status": status, "additions": lines('+'),
                   "deletions": lines('-'), "changes": lines('+') + lines('-'), "patch": patch})
        })
        .collect();
    Json(json!({
        "url": format!("https://api.github.com/repos/{full}/compare/{basehead}"),
        "html_url": format!("https://github.com/{full}/compare/{basehead}"),
        "status": status, "ahead_by": ahead.len(), "behind_by": behind.len(),
        "total_commits": ahead.len(), "commits": commits, "files": files,
    }))
    .into_response()
}

/// A pull request as the issues API (and search) shows it.
fn issue_json(pr: &PullRequest) -> Value {
    let mut item = pull_json(pr, false);
    let api = format!(
        "https://api.github.com/repos/{}/issues/{}",
        pr.repo, pr.number
    );
    let html = format!("https://github.com/{}/pull/{}", pr.repo, pr.number);
    item["pull_request"] = json!({"url": item["url"], "html_url": html, "diff_url": format!("{html}.diff"),
                                  "patch_url": format!("{html}.patch"), "merged_at": item["merged_at"]});
    item["url"] = json!(api);
    item["repository_url"] = json!(format!("https://api.github.com/repos/{}", pr.repo));
    item["labels_url"] = json!(format!("{api}/labels{{/name}}"));
    item["comments_url"] = json!(format!("{api}/comments"));
    item["events_url"] = json!(format!("{api}/events"));
    item["labels"] = json!([]);
    item["assignees"] = json!([]);
    item["comments"] = json!(0);
    item
}

/// `GET /search/issues?q=repo:acme/x is:pr in:title "Create NodeJS"`: pull requests whose
/// title contains the quoted (or bare) words.
async fn search(
    State(github): State<GitHub>,
    Query(query): Query<BTreeMap<String, String>>,
) -> Response {
    let q = query.get("q").cloned().unwrap_or_default();
    let mut repo = None;
    let mut state = None;
    let mut words = Vec::new();
    let mut rest = q.as_str();
    while !rest.trim().is_empty() {
        rest = rest.trim_start();
        let (token, after) = if let Some(quoted) = rest.strip_prefix('"') {
            let end = quoted.find('"').unwrap_or(quoted.len());
            words.push(quoted[..end].to_lowercase());
            ("", quoted.get(end + 1..).unwrap_or(""))
        } else {
            let end = rest.find(' ').unwrap_or(rest.len());
            (&rest[..end], &rest[end..])
        };
        match token.split_once(':') {
            Some(("repo", r)) => repo = Some(r.to_owned()),
            Some(("is", s)) if s == "open" || s == "closed" || s == "merged" => {
                state = Some(s.to_owned())
            }
            Some(_) => {}
            None if !token.is_empty() => words.push(token.to_lowercase()),
            None => {}
        }
        rest = after;
    }
    let items: Vec<Value> = github
        .pulls()
        .iter()
        .filter(|p| repo.as_ref().is_none_or(|r| &p.repo == r))
        .filter(|p| match state.as_deref() {
            Some("open") => p.closed_at.is_none(),
            Some("closed") => p.closed_at.is_some(),
            Some("merged") => p.merged_at.is_some(),
            _ => true,
        })
        .filter(|p| words.iter().all(|w| p.title.to_lowercase().contains(w)))
        .map(issue_json)
        .collect();
    Json(json!({"total_count": items.len(), "incomplete_results": false, "items": items}))
        .into_response()
}
