//! Release records, read from Git (`glidepath/releases/<release>.yaml` in `gitops-<app>`):
//! the records on `main` and those still proposed by an open pull request.
//!
//! - `GET /api/records?service=&page=&risk=&signedOff=` — a page of the service's records,
//!   newest in prod first, 20 a page ([`tower_shared::records::page_of`]).
//! - `GET /api/records/record?service=&release=` — one record, where it is (merged, or the
//!   pull request proposing it), the pull requests open on its human part, and whether the
//!   caller may propose one.
//! - `GET /api/records/export?service=&release=&format=html|pdf` — the record as a
//!   self-contained HTML page or a PDF ([`crate::export`]).
//! - `POST /api/records/notes {service, release, human, seen}` — the human part of a merged
//!   record, validated by `tower_shared::records::validate` (the browser's rules), proposed
//!   as a pull request through [`crate::gitops`] against the file as the caller read it.

use axum::extract::State;
use axum::http::{header, HeaderMap, HeaderValue};
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json};
use tower_shared::api::{NotesAnswer, NotesRequest, PromoteOutcome, RecordAnswer};
use tower_shared::hangar;
use tower_shared::records::{self, Record, RecordFilter, RecordRow, RecordsPage, Risk};
use tower_shared::releases::PullRef;

use super::params::{self, JsonBody, Query, ServiceName};
use super::ApiError;
use crate::auth::Caller;
use crate::gitops::{FileChange, Person, Proposal, Proposed};
use crate::live::github::GitHub;
use crate::records::{file_text, read_file, repo_of};
use crate::state::AppState;

const NOTES: crate::access::Act<'static> = crate::access::Act {
    route: super::RECORD_NOTES,
    verb: "write the human part of a release record of",
};

/// A record Tower found, and where.
struct Found {
    record: Record,
    /// The file's blob sha on `main`, once merged.
    seen: Option<String>,
    /// The open pull request proposing it, before.
    proposed: Option<PullRef>,
}

fn pull_ref(pr: &tower_shared::github::PullRequest) -> PullRef {
    PullRef {
        number: pr.number,
        url: pr.html_url.clone(),
    }
}

fn branch_of(pr: &tower_shared::github::PullRequest) -> &str {
    pr.head.as_ref().map_or("", |h| h.branch.as_str())
}

/// The release a record pull request proposes (not a human part's).
fn proposed_release(pr: &tower_shared::github::PullRequest) -> Option<&str> {
    let release = branch_of(pr).strip_prefix("tower/record-")?;
    (pr.state == "open"
        && !release.contains("-notes-")
        && tower_shared::image::is_release_name(release))
    .then_some(release)
}

/// `service` when Tower knows it; 404 naming the field otherwise.
fn known<'s>(state: &AppState, ServiceName(service): &'s ServiceName) -> Result<&'s str, ApiError> {
    if !state.source.derived().knows(service) {
        return Err(ApiError::no_service("service", service));
    }
    Ok(service)
}

fn release_param(query: &Query) -> Result<&str, ApiError> {
    let release = params::required(query, "release")?;
    check_release(release)?;
    Ok(release)
}

fn check_release(release: &str) -> Result<(), ApiError> {
    if tower_shared::image::is_release_name(release) {
        Ok(())
    } else {
        Err(ApiError::bad(
            "release",
            "release must be a release's image tag such as 1.4.0-3a8423b",
        ))
    }
}

fn from_github(err: crate::live::github::GitHubError) -> ApiError {
    super::upstream::from_github(err, "service")
}

/// A record file read, or why not (a file Tower cannot read is not a record it shows).
fn parsed(repo: &str, path: &str, text: &str) -> Option<Record> {
    read_file(text)
        .inspect_err(
            |err| tracing::warn!(repo, path, error = %err, "a release record Tower cannot read"),
        )
        .ok()
}

/// Every record of `service`: those on `main`, then those proposed and not yet merged.
async fn all_records(github: &GitHub, service: &str) -> Result<Vec<Found>, ApiError> {
    let repo = repo_of(github, service);
    let mut found = Vec::new();
    let names = github
        .folder(&repo, hangar::RECORDS_DIR)
        .await
        .map_err(from_github)?
        .unwrap_or_default();
    for name in names {
        let Some(release) = name.strip_suffix(".yaml") else {
            continue;
        };
        let path = hangar::record_path(release);
        if let Some((sha, text)) = github
            .file_at(&repo, &path, None)
            .await
            .map_err(from_github)?
        {
            if let Some(record) = parsed(&repo, &path, &text) {
                found.push(Found {
                    record,
                    seen: Some(sha),
                    proposed: None,
                });
            }
        }
    }
    let pulls = github.pull_requests(&repo).await.map_err(from_github)?;
    for pr in pulls.iter() {
        let Some(release) = proposed_release(pr) else {
            continue;
        };
        if found.iter().any(|f| f.record.release == release) {
            continue;
        }
        found.extend(proposed_record(github, &repo, pr, release).await?);
    }
    Ok(found)
}

/// The record of `release` that `pr` proposes, read from its branch (`None`: none there
/// that Tower can read).
async fn proposed_record(
    github: &GitHub,
    repo: &str,
    pr: &tower_shared::github::PullRequest,
    release: &str,
) -> Result<Option<Found>, ApiError> {
    let path = hangar::record_path(release);
    let Some((_, text)) = github
        .file_at(repo, &path, Some(branch_of(pr)))
        .await
        .map_err(from_github)?
    else {
        return Ok(None);
    };
    Ok(parsed(repo, &path, &text).map(|record| Found {
        record,
        seen: None,
        proposed: Some(pull_ref(pr)),
    }))
}

/// GitHub Enterprise's web host, when Tower reads one.
fn enterprise(state: &AppState) -> Option<String> {
    state.source.derived().base.github_host.clone()
}

/// One record of `service`, merged or proposed, with only the links a page may show
/// ([`Record::links_checked`]: GitHub's web host, or `enterprise`); 404 naming `release` when
/// there is none.
async fn one_record(
    github: &GitHub,
    enterprise: Option<&str>,
    service: &str,
    release: &str,
) -> Result<Found, ApiError> {
    let mut found = one_record_as_written(github, service, release).await?;
    found.record = found.record.links_checked(enterprise);
    Ok(found)
}

/// One record of `service` as its file says.
async fn one_record_as_written(
    github: &GitHub,
    service: &str,
    release: &str,
) -> Result<Found, ApiError> {
    let repo = repo_of(github, service);
    let path = hangar::record_path(release);
    if let Some((sha, text)) = github
        .file_at(&repo, &path, None)
        .await
        .map_err(from_github)?
    {
        let record = read_file(&text).map_err(|err| ApiError::Conflict {
            field: "release",
            message: format!("{path} in {repo} is not a record Tower can read: {err}"),
        })?;
        return Ok(Found {
            record,
            seen: Some(sha),
            proposed: None,
        });
    }
    let pulls = github.pull_requests(&repo).await.map_err(from_github)?;
    if let Some(pr) = pulls
        .iter()
        .find(|pr| proposed_release(pr) == Some(release))
    {
        if let Some(found) = proposed_record(github, &repo, pr, release).await? {
            return Ok(found);
        }
    }
    Err(ApiError::Unknown {
        field: "release",
        message: format!("{service} has no release record of {release} (yet)"),
    })
}

/// `GET /api/records?service=&page=&risk=&signedOff=`.
pub async fn list(
    State(state): State<AppState>,
    caller: Option<Extension<Caller>>,
    service: ServiceName,
    query: Query,
) -> Result<Json<RecordsPage>, ApiError> {
    let service = known(&state, &service)?;
    let page = match query.get("page") {
        None => 1,
        Some(page) => page
            .parse::<usize>()
            .ok()
            .filter(|p| (1..=10_000).contains(p))
            .ok_or_else(|| ApiError::bad("page", "page must be a number from 1 to 10000"))?,
    };
    let risk = match query.get("risk") {
        None => None,
        Some(word) => Some(
            Risk::parse(word)
                .ok_or_else(|| ApiError::bad("risk", "risk must be low, medium or high"))?,
        ),
    };
    let signed_off = match query.get("signedOff").map(String::as_str) {
        None => None,
        Some("true") => Some(true),
        Some("false") => Some(false),
        Some(_) => {
            return Err(ApiError::bad(
                "signedOff",
                "signedOff must be true or false",
            ))
        }
    };
    let github = super::upstream::github(&state)?;
    super::upstream::spend_read(&state, caller.as_ref())?;
    let rows = all_records(github, service)
        .await?
        .iter()
        .map(|f| RecordRow::of(&f.record, f.proposed.clone()))
        .collect();
    Ok(Json(records::page_of(
        service,
        rows,
        RecordFilter { risk, signed_off },
        page,
    )))
}

/// `GET /api/records/record?service=&release=`.
pub async fn record(
    State(state): State<AppState>,
    caller: Option<Extension<Caller>>,
    headers: HeaderMap,
    service: ServiceName,
    query: Query,
) -> Result<Json<RecordAnswer>, ApiError> {
    let service = known(&state, &service)?;
    let release = release_param(&query)?;
    let github = super::upstream::github(&state)?;
    super::upstream::spend_read(&state, caller.as_ref())?;
    let found = one_record(github, enterprise(&state).as_deref(), service, release).await?;
    let repo = repo_of(github, service);
    let prefix = format!("{}-notes-", hangar::record_branch(release));
    let notes = github
        .pull_requests(&repo)
        .await
        .map_err(from_github)?
        .iter()
        .filter(|pr| pr.state == "open" && branch_of(pr).starts_with(&prefix))
        .map(pull_ref)
        .collect();
    let access =
        crate::access::may(&state, caller.as_deref(), &headers, service, NOTES.route).await?;
    Ok(Json(RecordAnswer {
        record: found.record,
        path: hangar::record_path(release),
        repo,
        seen: found.seen,
        proposed: found.proposed,
        notes,
        access,
    }))
}

/// `GET /api/records/export?service=&release=&format=html|pdf`.
pub async fn export(
    State(state): State<AppState>,
    caller: Option<Extension<Caller>>,
    service: ServiceName,
    query: Query,
) -> Result<Response, ApiError> {
    let service = known(&state, &service)?;
    let release = release_param(&query)?;
    let format = params::required(&query, "format")?;
    if !matches!(format, "html" | "pdf") {
        return Err(ApiError::bad("format", "format must be html or pdf"));
    }
    let github = super::upstream::github(&state)?;
    super::upstream::spend_read(&state, caller.as_ref())?;
    let found = one_record(github, enterprise(&state).as_deref(), service, release).await?;
    let (body, kind) = match format {
        "pdf" => (crate::export::pdf(&found.record), "application/pdf"),
        _ => (
            crate::export::html(&found.record).into_bytes(),
            "text/html; charset=utf-8",
        ),
    };
    let disposition = format!("attachment; filename=\"{service}-{release}.{format}\"");
    let mut response = body.into_response();
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(kind));
    if let Ok(value) = HeaderValue::from_str(&disposition) {
        headers.insert(header::CONTENT_DISPOSITION, value);
    }
    Ok(response)
}

/// A short name for `text`: the first 8 hex digits of its SHA-256.
fn short_hash(text: &str) -> String {
    let digest = ring::digest::digest(&ring::digest::SHA256, text.as_bytes());
    digest.as_ref()[..4]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// `POST /api/records/notes`.
pub async fn notes(
    State(state): State<AppState>,
    caller: Option<Extension<Caller>>,
    headers: HeaderMap,
    JsonBody(body): JsonBody,
) -> Result<Json<NotesAnswer>, ApiError> {
    let request: NotesRequest = params::json_body(&body, "the human part")?;
    params::check_dns_label(&request.service, "service")?;
    check_release(&request.release)?;
    super::upstream::check_sha(&request.seen, "seen")?;
    let now = state.clock().now();
    // The words are checked before anything is read; the sign-off is Tower's to write.
    if let Some(invalid) = records::validate(&request.human).into_iter().next() {
        return Err(ApiError::BadBody {
            field: format!("human.{}", invalid.field),
            message: invalid.message,
        });
    }
    let (service, release) = (request.service.as_str(), request.release.as_str());
    if !state.source.derived().knows(service) {
        return Err(ApiError::no_service("service", service));
    }
    let access =
        crate::access::required(&state, caller.as_deref(), &headers, service, NOTES).await?;
    let github = super::upstream::github(&state)?;
    let writer = super::upstream::writer(&state)?;
    let repo = repo_of(github, service);
    let path = hangar::record_path(release);
    let upstream = super::upstream::upstream;
    let Some((sha, text)) = writer
        .read_file(&repo, hangar::DEFAULT_BRANCH, &path)
        .await
        .map_err(upstream)?
    else {
        let found = one_record(github, enterprise(&state).as_deref(), service, release).await?;
        return Err(ApiError::Conflict {
            field: "release",
            message: match found.proposed {
                Some(pr) => format!(
                    "the record of {release} is not merged yet: merge pull request #{} first",
                    pr.number
                ),
                None => format!("the record of {release} is not merged yet"),
            },
        });
    };
    if sha != request.seen {
        return Err(ApiError::Conflict {
            field: "seen",
            message: format!("{path} in {repo} changed since it was read; look at it again"),
        });
    }
    let mut record = read_file(&text).map_err(|err| ApiError::Conflict {
        field: "release",
        message: format!("{path} in {repo} is not a record Tower can read: {err}"),
    })?;
    record.human = Some(
        request
            .human
            .signed(&access.subject, now, record.human.as_ref()),
    );
    let content = file_text(&record);
    // The branch is named for the words, not the moment Tower signed them: the same notes
    // sent twice (a double click, a second later) are one pull request.
    let mut words = record.clone();
    if let Some(sign) = words.human.as_mut().and_then(|h| h.signed_off.as_mut()) {
        sign.at = chrono::DateTime::UNIX_EPOCH;
    }
    let branch = hangar::record_notes_branch(release, &short_hash(&file_text(&words)));
    let title = format!("Release record: {service} {release} — the human part");
    let pr_body = format!(
        "The human part of the release record of `{}`: a plain summary, the risk ({}), how it \
         was checked{}.",
        record.image,
        request.human.risk.as_str(),
        if request.human.sign_off {
            " and the sign-off"
        } else {
            ""
        }
    );
    let proposal = Proposal {
        file: FileChange {
            repo: &repo,
            branch: &branch,
            path: &path,
            seen: Some(&sha),
            content: &content,
            message: &title,
        },
        base: hangar::DEFAULT_BRANCH,
        title: &title,
        body: &pr_body,
        labels: &[hangar::RECORD_LABEL],
    };
    let by = Person {
        subject: access.subject,
    };
    let proposed = writer.propose(&proposal, &by).await.map_err(upstream)?;
    if let Some(live) = &state.live {
        live.github_changed(&repo);
    }
    let (outcome, number, url, said) = match proposed {
        Proposed::Opened { number, url } => {
            (PromoteOutcome::PullRequestOpened, number, url, "Opened")
        }
        Proposed::Existing { number, url } => (
            PromoteOutcome::PullRequestExisting,
            number,
            url,
            "Already open:",
        ),
    };
    Ok(Json(NotesAnswer {
        outcome,
        message: format!("{said} pull request #{number} with the human part of {release}'s record; it is kept once merged."),
        pull: PullRef {
            number,
            url: Some(url),
        },
    }))
}
