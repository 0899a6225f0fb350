//! Promotions: the one button of the release matrix, and who may press it.
//!
//! - `GET /api/access?service=NAME` — whether the caller may promote the service
//!   ([`crate::access`]); the caller's own answer.
//! - `GET /api/releases/promotion?service=&image=&environment=` — exactly what promoting
//!   the release there changes: the diff of `glidepath/envs/<env>.yaml` in the app's GitOps
//!   repository, the blob sha it was read at, an open pull request already proposing it.
//! - `GET /api/releases/compare?service=&from=&to=` — what changed between two releases:
//!   GitHub's comparison of their commits in the source repo, the pull requests merged and
//!   the builds run for them, the configuration changed.
//! - `POST /api/releases/promote {service, image, environment, seen}` — makes it, through
//!   [`crate::gitops`] only: a commit to `main` (staging), or a branch and a labelled pull
//!   request (prod). Idempotent: a promotion already in Git (by Tower or by hand) is
//!   recognised, an open pull request found again; a file changed since `seen` is refused
//!   (409), never overwritten; a caller who may not promote gets 403 with the reason.

use axum::extract::State;
use axum::http::HeaderMap;
use axum::{Extension, Json};
use std::sync::Arc;

use tower_shared::api::{
    Access, PromoteAnswer, PromoteOutcome, PromoteRequest, PromotionPreview, ReleasesAnswer,
};
use tower_shared::cicd::Promotion;
use tower_shared::hangar;
use tower_shared::releases::{self, PullRef, Release};

use super::params::{self, JsonBody, Query, ServiceName};
use super::upstream::{check_sha, upstream, writer};
use super::ApiError;
use crate::auth::Caller;
use crate::gitops::{Committed, FileChange, Person, Proposal, Proposed, Writer};
use crate::state::AppState;
use crate::tabs::Whole;

/// `GET /api/access?service=NAME`.
pub async fn access(
    State(state): State<AppState>,
    caller: Option<Extension<Caller>>,
    headers: HeaderMap,
    ServiceName(service): ServiceName,
) -> Result<Json<Access>, ApiError> {
    let service = service.as_str();
    if !state.source.derived().knows(service) {
        return Err(ApiError::no_service("service", service));
    }
    crate::access::may_promote(&state, caller.as_deref(), &headers, service)
        .await
        .map(Json)
}

const PROMOTE: crate::access::Act<'static> = crate::access::Act {
    route: crate::access::PROMOTE_ROUTE,
    verb: "promote",
};

/// What promoting one release to one environment would write.
struct Plan {
    release: Release,
    how: Promotion,
    repo: String,
    path: String,
    branch: String,
    /// The file on `main` as read now: its blob sha and text.
    seen: String,
    text: String,
    /// The file with the release's image.
    changed: String,
    /// The file already names the image.
    already: bool,
}

/// The service's matrix, as its Releases tab shows it, or 404 naming `service`.
fn matrix(state: &AppState, service: &str) -> Result<Arc<Whole<ReleasesAnswer>>, ApiError> {
    state
        .source
        .tabs()
        .answer::<Whole<ReleasesAnswer>>(&state.source.derived(), service)
        .ok_or_else(|| ApiError::no_service("service", service))
}

/// Reads the environment file and decides what the promotion writes; refuses a release
/// that does not go to `environment` next (unless Git already has it there).
async fn plan(
    state: &AppState,
    writer: &Writer,
    service: &str,
    image: &str,
    environment: &str,
) -> Result<Plan, ApiError> {
    let answer = matrix(state, service)?;
    let matrix = &answer.releases;
    let release = matrix
        .releases
        .iter()
        .find(|r| r.image == tower_shared::image::without_digest(image))
        .cloned()
        .ok_or_else(|| ApiError::Unknown {
            field: "image",
            message: format!("{service} has no release {image}"),
        })?;
    if !matrix.environments.iter().any(|e| e == environment) {
        return Err(ApiError::Unknown {
            field: "environment",
            message: format!(
                "{service} has no environment {environment} (it has {})",
                matrix.environments.join(", ")
            ),
        });
    }
    let github = super::upstream::github(state)?;
    let repo = format!("{}/{}", github.owner(), hangar::gitops_repo(service, None));
    let path = hangar::env_file(environment);
    let Some((seen, text)) = writer
        .read_file(&repo, hangar::DEFAULT_BRANCH, &path)
        .await
        .map_err(upstream)?
    else {
        return Err(ApiError::Conflict {
            field: "environment",
            message: format!("{repo} has no {path} to promote {service} in"),
        });
    };
    let already = releases::image_in(&text).map(tower_shared::image::without_digest)
        == Some(release.image.as_str());
    // As the matrix says (the app's cicd.yaml may set it); by the platform's default for a
    // promotion Git already has.
    let how = match &release.next {
        Some(next) if next.environment == environment => next.how,
        _ => releases::promotion_to(environment),
    };
    if !already {
        match &release.next {
            Some(next) if next.environment == environment => {}
            Some(next) => {
                return Err(ApiError::Conflict {
                    field: "environment",
                    message: format!(
                        "{} goes to {} next, not {environment}",
                        release.image, next.environment
                    ),
                })
            }
            None => {
                return Err(ApiError::Conflict {
                    field: "environment",
                    message: format!(
                        "{} goes nowhere next: a release moves on only from the furthest \
                         environment it is live and healthy in",
                        release.image
                    ),
                })
            }
        }
    }
    let changed = releases::set_image(&text, &release.image).ok_or_else(|| ApiError::Conflict {
        field: "environment",
        message: format!("{path} in {repo} has no top-level `image:` for Tower to change"),
    })?;
    let branch = match how {
        Promotion::Commit => hangar::DEFAULT_BRANCH.to_owned(),
        Promotion::PullRequest => hangar::promotion_branch(environment, &release.image),
    };
    Ok(Plan {
        release,
        how,
        repo,
        path,
        branch,
        seen,
        text,
        changed,
        already,
    })
}

/// An image reference (`registry/name:tag`, optionally `@digest`): 1 to 300 of
/// `A-Z a-z 0-9 . _ / : @ + -` (the document's `ImageRef`).
fn check_image(value: &str, field: &'static str) -> Result<(), ApiError> {
    let fits = (1..=300).contains(&value.len())
        && value
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "._/:@+-".contains(c));
    if fits {
        Ok(())
    } else {
        Err(ApiError::bad(
            field,
            format!("{field} must be an image reference such as ghcr.io/acme/shop:1.4.0-3a8423b"),
        ))
    }
}

/// `GET /api/releases/promotion?service=&image=&environment=`.
pub async fn preview(
    State(state): State<AppState>,
    caller: Option<Extension<Caller>>,
    headers: HeaderMap,
    ServiceName(service): ServiceName,
    query: Query,
) -> Result<Json<PromotionPreview>, ApiError> {
    let service = service.as_str();
    let image = params::required(&query, "image")?;
    check_image(image, "image")?;
    let environment = params::dns_label(&query, "environment")?;
    // The preview reads the file and its pull request from GitHub: the caller's reads.
    super::upstream::spend_read(&state, caller.as_ref())?;
    let writer = writer(&state)?;
    let plan = plan(&state, &writer, service, image, environment).await?;
    let access = crate::access::may_promote(&state, caller.as_deref(), &headers, service).await?;
    let pull = match plan.how {
        Promotion::PullRequest => writer
            .open_pull(&plan.repo, &plan.branch)
            .await
            .map_err(upstream)?
            .map(|(number, url)| PullRef {
                number,
                url: Some(url),
            }),
        Promotion::Commit => None,
    };
    Ok(Json(PromotionPreview {
        service: service.to_owned(),
        image: plan.release.image.clone(),
        environment: environment.to_owned(),
        how: plan.how,
        diff: tower_shared::values::diff(&plan.text, &plan.changed),
        repo: plan.repo,
        path: plan.path,
        branch: plan.branch,
        seen: plan.seen,
        already: plan.already,
        pull,
        access,
    }))
}

/// `GET /api/releases/compare?service=&from=&to=` (the two in either order).
pub async fn compare(
    State(state): State<AppState>,
    caller: Option<Extension<Caller>>,
    ServiceName(service): ServiceName,
    query: Query,
) -> Result<Json<releases::Comparison>, ApiError> {
    let service = service.as_str();
    let from = params::required(&query, "from")?;
    check_image(from, "from")?;
    let to = params::required(&query, "to")?;
    check_image(to, "to")?;
    let answer = matrix(&state, service)?;
    let matrix = &answer.releases;
    let row = |image: &str, field: &'static str| {
        matrix
            .releases
            .iter()
            .position(|r| r.image == tower_shared::image::without_digest(image))
            .ok_or_else(|| ApiError::Unknown {
                field,
                message: format!("{service} has no release {image}"),
            })
    };
    let (a, b) = (row(from, "from")?, row(to, "to")?);
    if a == b {
        return Err(ApiError::bad(
            "to",
            "pick two different releases to compare",
        ));
    }
    // Rows are newest first: the later row is the older release.
    let (older, newer) = (&matrix.releases[a.max(b)], &matrix.releases[a.min(b)]);
    let commit = |release: &Release, field: &'static str| {
        release
            .commit
            .clone()
            .or_else(|| release.short_sha.clone())
            .ok_or_else(|| ApiError::Conflict {
                field,
                message: format!("Tower knows no commit of {}", release.image),
            })
    };
    commit(older, "from")?;
    commit(newer, "to")?;
    let github = super::upstream::github(&state)?;
    super::upstream::spend_read(&state, caller.as_ref())?;
    crate::records::compared(&state, github, service, (older, newer))
        .await
        .map_err(|err| super::upstream::from_github(err, "from"))?
        .map(Json)
        .ok_or_else(|| ApiError::no_service("service", service))
}

/// The pull request body: what the release brings and where it was built.
fn proposal_body(state: &AppState, service: &str, plan: &Plan, environment: &str) -> String {
    let release = &plan.release;
    let mut body = format!(
        "Promotes `{}` to {environment}: `{}` in `{}`. Argo CD deploys it once this is merged.\n",
        release.image, plan.path, plan.repo
    );
    if let Some(run) = &release.run {
        body.push_str(&format!(
            "\nBuilt by the pipeline run `{run}` from commit `{}`.\n",
            release.commit.as_deref().unwrap_or("unknown")
        ));
    }
    let merged: Vec<(String, u64, String)> = state
        .source
        .tabs()
        .answer::<tower_shared::pulls::Pulls>(&state.source.derived(), service)
        .map(|pulls| {
            pulls
                .pulls
                .iter()
                .filter(|p| {
                    p.image.as_deref().map(tower_shared::image::without_digest)
                        == Some(&release.image)
                })
                .map(|p| (p.repo.clone(), p.number, p.title.clone()))
                .collect()
        })
        .unwrap_or_default();
    body.push_str(&pulls_in_release(&merged));
    body
}

/// The body's list of the pull requests a release brings (`owner/repo`, number, title), each
/// title as written ([`crate::gitops::verbatim`]): a title's `@mention`, `closes #N` or
/// image does nothing from Tower's pull request.
fn pulls_in_release(pulls: &[(String, u64, String)]) -> String {
    if pulls.is_empty() {
        return "\nPull requests in this release: none that Tower saw.\n".to_owned();
    }
    let listed: Vec<String> = pulls
        .iter()
        .map(|(repo, number, title)| {
            format!("- {repo}#{number} {}", crate::gitops::verbatim(title))
        })
        .collect();
    format!("\nPull requests in this release:\n{}\n", listed.join("\n"))
}

/// `POST /api/releases/promote`.
pub async fn promote(
    State(state): State<AppState>,
    caller: Option<Extension<Caller>>,
    headers: HeaderMap,
    JsonBody(body): JsonBody,
) -> Result<Json<PromoteAnswer>, ApiError> {
    let request: PromoteRequest = params::json_body(&body, "the promotion")?;
    params::check_dns_label(&request.service, "service")?;
    params::check_dns_label(&request.environment, "environment")?;
    check_image(&request.image, "image")?;
    check_sha(&request.seen, "seen")?;
    let service = request.service.as_str();
    let environment = request.environment.as_str();
    if !state.source.derived().knows(service) {
        return Err(ApiError::no_service("service", service));
    }
    let access =
        crate::access::required(&state, caller.as_deref(), &headers, service, PROMOTE).await?;
    let writer = writer(&state)?;
    let plan = plan(&state, &writer, service, &request.image, environment).await?;
    let image = plan.release.image.clone();
    let tag = plan.release.version.as_deref().map_or_else(
        || tower_shared::image::short(&image).to_owned(),
        |version| {
            format!(
                "{version}-{}",
                plan.release.short_sha.as_deref().unwrap_or("")
            )
        },
    );
    if plan.already {
        return Ok(Json(PromoteAnswer {
            outcome: PromoteOutcome::AlreadyThere,
            commit: None,
            pull: None,
            message: format!("{} already names {image}: nothing to do.", plan.path),
        }));
    }
    let by = Person {
        subject: access.subject,
    };
    let message = format!("Promote {service} {tag} to {environment}");
    let change = FileChange {
        repo: &plan.repo,
        branch: &plan.branch,
        path: &plan.path,
        seen: Some(&request.seen),
        content: &plan.changed,
        message: &message,
    };
    let answer = match plan.how {
        Promotion::Commit => match writer.commit_file(&change, &by).await.map_err(upstream)? {
            Committed::Made { commit } => PromoteAnswer {
                outcome: PromoteOutcome::Committed,
                message: format!(
                    "Committed {image} to {} on main; Argo CD deploys it to {environment}.",
                    plan.path
                ),
                commit: Some(commit),
                pull: None,
            },
            Committed::AlreadyThere => PromoteAnswer {
                outcome: PromoteOutcome::AlreadyThere,
                commit: None,
                pull: None,
                message: format!("{} already names {image}: nothing to do.", plan.path),
            },
        },
        Promotion::PullRequest => {
            let body = proposal_body(&state, service, &plan, environment);
            let proposal = Proposal {
                file: change,
                base: hangar::DEFAULT_BRANCH,
                title: &message,
                body: &body,
                labels: &[hangar::PROMOTION_LABEL],
            };
            let proposed = writer.propose(&proposal, &by).await.map_err(upstream)?;
            let (outcome, verb) = match &proposed {
                Proposed::Opened { .. } => (PromoteOutcome::PullRequestOpened, "Opened"),
                Proposed::Existing { .. } => (PromoteOutcome::PullRequestExisting, "Found"),
            };
            let (Proposed::Opened { number, url } | Proposed::Existing { number, url }) = proposed;
            PromoteAnswer {
                outcome,
                commit: None,
                message: format!(
                    "{verb} pull request #{number} to promote {image} to {environment}; \
                     Argo CD deploys it once it is reviewed and merged."
                ),
                pull: Some(PullRef {
                    number,
                    url: Some(url),
                }),
            }
        }
    };
    if let Some(live) = &state.live {
        // Read the repository again now: the matrix shows the pull request at once.
        live.github_changed(&plan.repo);
    }
    Ok(Json(answer))
}

#[cfg(test)]
mod tests {
    use super::pulls_in_release;

    #[test]
    fn a_promotion_lists_the_titles_it_brings_as_written() {
        let listed = pulls_in_release(&[(
            "acme/shop".to_owned(),
            12,
            "@ana closes #3 ![x](https://evil.example/x.png)".to_owned(),
        )]);
        assert_eq!(
            listed,
            "\nPull requests in this release:\n\
             - acme/shop#12 ` @ana closes #3 ![x](https://evil.example/x.png) `\n"
        );
        assert!(pulls_in_release(&[]).contains("none that Tower saw"));
    }
}
