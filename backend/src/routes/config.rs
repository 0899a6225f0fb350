//! The Config tab: an app's config files as forms that open reviewed pull requests, and what
//! the platform made for it.
//!
//! - `GET /api/config?service=` — the app's environments and its secrets and composed
//!   resources ([`tower_shared::config`]), derived once per change.
//! - `GET /api/config/file?service=&file=` — one file (`env:<name>` or `cicd`) read from
//!   GitHub now: from the branch of Tower's open pull request for it when there is one (a
//!   save adds to it), else from `main`; a file that does not exist yet is a starter. With
//!   its form, its blob sha (`seen`), the open config pull requests and who may save.
//! - `POST /api/config/check` — the draft with the form's edits written in (comments and
//!   order kept), its form and problems, its diff against the text loaded. Pure: the same
//!   [`tower_shared::values`] functions the save runs, so both name the same field.
//! - `POST /api/config/save` — for the app's owners (or a tool granted the route): refused
//!   with 422 and every problem when the schema refuses the result; else a pull request
//!   through [`crate::gitops`] — never a commit to `main`, never a cluster write. Tower's
//!   open pull request for the file gets a commit instead of a twin; a file changed since
//!   it was loaded is refused (409 `seen`).

use axum::extract::State;
use axum::http::HeaderMap;
use axum::{Extension, Json};
use tower_shared::api::{
    ConfigChecked, ConfigDraft, ConfigFile, ConfigFileRef, ConfigPull, ConfigSaved,
};
use tower_shared::hangar::{self, ServiceKind};
use tower_shared::snapshot::Snapshot;
use tower_shared::values::{self, FileKind};

use super::params::{self, JsonBody, Query, ServiceName};
use super::upstream::{check_sha, service_part, upstream, writer};
use super::ApiError;
use crate::auth::Caller;
use crate::gitops::{Committed, FileChange, Person, Proposal, Proposed};
use crate::state::AppState;

const SAVE_ROUTE: &str = super::CONFIG_SAVE;

const SAVE: crate::access::Act<'static> = crate::access::Act {
    route: SAVE_ROUTE,
    verb: "change the config of",
};

/// Which schema a file id names: `env:<name>` or `cicd`; 400 naming `field` otherwise.
fn kind_of(file: &str, field: &'static str) -> Result<FileKind, ApiError> {
    match file {
        "cicd" => Ok(FileKind::Cicd),
        _ => match file.strip_prefix("env:") {
            Some(env) if hangar::is_dns_label(env) => Ok(FileKind::EnvValues),
            _ => Err(ApiError::bad(
                field,
                format!("{field} must be `cicd` or `env:<environment>`, not {file:?}"),
            )),
        },
    }
}

/// The file `file` names for `service`: its repository and path, by Hangar's rules.
fn file_ref(
    state: &AppState,
    snapshot: &Snapshot,
    service: &str,
    file: &str,
    field: &'static str,
) -> Result<ConfigFileRef, ApiError> {
    let kind = kind_of(file, field)?;
    let owner = super::upstream::github(state)?.owner();
    let (repo, path, label) = match kind {
        FileKind::Cicd => {
            let (repo, path) = hangar::cicd_location(snapshot.control_plane(), owner, service);
            (repo, path, "cicd.yaml".to_owned())
        }
        FileKind::EnvValues => {
            let env = file.trim_start_matches("env:");
            let environments = tower_shared::config::environments(snapshot, service);
            // An InfraService starts with none: its first file is dev's.
            let first = environments.is_empty() && env == "dev";
            if !first && !environments.iter().any(|e| e == env) {
                return Err(ApiError::Unknown {
                    field,
                    message: format!(
                        "{service} has no environment {env} (it has {})",
                        if environments.is_empty() {
                            "none yet".to_owned()
                        } else {
                            environments.join(", ")
                        }
                    ),
                });
            }
            (
                gitops_of(owner, snapshot, service),
                hangar::env_file(env),
                format!("{env} values"),
            )
        }
    };
    Ok(ConfigFileRef {
        id: file.to_owned(),
        kind,
        label,
        repo,
        path,
    })
}

/// The service's GitOps repository as `owner/name` (`gitops-infra-<s>` for an
/// InfraService, by its XR's kind).
fn gitops_of(owner: &str, snapshot: &Snapshot, service: &str) -> String {
    let kind = snapshot
        .control_plane()
        .iter()
        .find(|o| hangar::is_xr(o) && o.name() == service)
        .and_then(|o| ServiceKind::from_kind(&o.kind));
    format!("{owner}/{}", hangar::gitops_repo(service, kind))
}

/// The text a file that does not exist yet starts from.
fn starter(service: &str, file: &ConfigFileRef) -> String {
    match file.kind {
        FileKind::EnvValues => format!(
            "# {service}: {}. Argo CD deploys what this file says.\nreplicas: 1\nenv:\n  LOG_FORMAT: json\n",
            file.label
        ),
        FileKind::Cicd => format!(
            "# How Glidepath builds and deploys {service}.\ndeploy:\n  environments:\n    - name: dev\n      type: ground\nstages:\n  - build\n  - deploy-to-dev\n"
        ),
    }
}

/// Tower's open config pull requests on `repo`, newest first: opened by Tower's login and
/// labelled [`hangar::CONFIG_LABEL`] — one someone else opened from a branch of the name
/// Tower gives its own is not adopted.
async fn open_config_pulls(state: &AppState, repo: &str) -> Result<Vec<ConfigPull>, ApiError> {
    let github = super::upstream::github(state)?;
    let read = |err| super::upstream::from_github(err, "file");
    let login = github.login().await.map_err(read)?;
    let pulls = github.pull_requests(repo).await.map_err(read)?;
    Ok(pulls
        .iter()
        .filter(|p| p.is_open())
        .filter(|p| p.user.as_ref().is_some_and(|user| user.login == login))
        .filter(|p| p.labels.iter().any(|label| label == hangar::CONFIG_LABEL))
        .filter_map(|p| {
            let branch = &p.head.as_ref()?.branch;
            branch
                .starts_with(hangar::CONFIG_BRANCH_PREFIX)
                .then(|| ConfigPull {
                    number: p.number,
                    url: p.html_url.clone(),
                    title: p.title.clone(),
                    branch: branch.clone(),
                })
        })
        .collect())
}

/// `GET /api/config/file?service=&file=`.
pub async fn file(
    State(state): State<AppState>,
    caller: Option<Extension<Caller>>,
    headers: HeaderMap,
    ServiceName(service): ServiceName,
    query: Query,
) -> Result<Json<ConfigFile>, ApiError> {
    let service = service.as_str();
    let id = params::required(&query, "file")?;
    let snapshot = service_part(&state.source.derived(), service)?;
    let file = file_ref(&state, &snapshot, service, id, "file")?;
    super::upstream::spend_read(&state, caller.as_ref())?;
    let writer = writer(&state)?;
    let mut pulls = open_config_pulls(&state, &file.repo).await?;
    // The file's own pull request lives in its repository (where a save looks for it too).
    let pull = pulls
        .iter()
        .find(|p| hangar::is_config_branch(&p.branch, &file.id))
        .cloned();
    // The list shows the GitOps repository's too, when `cicd.yaml` lives elsewhere.
    let gitops = gitops_of(super::upstream::github(&state)?.owner(), &snapshot, service);
    if gitops != file.repo {
        pulls.extend(open_config_pulls(&state, &gitops).await?);
    }
    let branch = pull
        .as_ref()
        .map_or(hangar::DEFAULT_BRANCH, |p| p.branch.as_str());
    let read = writer
        .read_file(&file.repo, branch, &file.path)
        .await
        .map_err(upstream)?;
    let (seen, text) = match read {
        Some((sha, text)) => (Some(sha), text),
        None => (None, starter(service, &file)),
    };
    let access =
        crate::access::may(&state, caller.as_deref(), &headers, service, SAVE_ROUTE).await?;
    Ok(Json(ConfigFile {
        service: service.to_owned(),
        form: values::form(file.kind, &text),
        branch: branch.to_owned(),
        file,
        seen,
        text,
        pull,
        pulls,
        access,
    }))
}

/// The draft's text with its edits written in, or 422 naming the edit's field.
fn applied(kind: FileKind, draft: &ConfigDraft) -> Result<String, ApiError> {
    values::apply(kind, &draft.text, &draft.edits).map_err(|err| ApiError::Invalid {
        problems: vec![err.0],
    })
}

fn read_draft(body: &[u8]) -> Result<ConfigDraft, ApiError> {
    let draft: ConfigDraft = params::json_body(body, "the config draft")?;
    params::check_dns_label(&draft.service, "service")?;
    if let Some(seen) = &draft.seen {
        check_sha(seen, "seen")?;
    }
    Ok(draft)
}

/// `POST /api/config/check`.
pub async fn check(
    State(state): State<AppState>,
    JsonBody(body): JsonBody,
) -> Result<Json<ConfigChecked>, ApiError> {
    let draft = read_draft(&body)?;
    if !state.source.derived().knows(&draft.service) {
        return Err(ApiError::no_service("service", &draft.service));
    }
    let kind = kind_of(&draft.file, "file")?;
    let text = applied(kind, &draft)?;
    Ok(Json(ConfigChecked {
        form: values::form(kind, &text),
        diff: values::diff(&draft.base, &text),
        unchanged: text == draft.base,
        text,
    }))
}

/// A config pull request's description: the file, where, the schema it was checked
/// against, and the diff from `before` (the file on the base branch) to `after` (what the
/// branch holds) — what merging it changes, line for line.
fn described(file: &ConfigFileRef, before: &str, after: &str) -> String {
    use tower_shared::values::LineChange;
    let changed: Vec<String> = values::diff(before, after)
        .iter()
        .filter_map(|line| match line.change {
            LineChange::Same => None,
            LineChange::Added => Some(format!("+{}", line.text)),
            LineChange::Removed => Some(format!("-{}", line.text)),
        })
        .collect();
    format!(
        "Changes `{}` in `{}` as edited on Tower's Config tab (checked against {}).\n\n\
         ```diff\n{}\n```",
        file.path,
        file.repo,
        file.kind.schema_id(),
        changed.join("\n")
    )
}

/// `POST /api/config/save`.
pub async fn save(
    State(state): State<AppState>,
    caller: Option<Extension<Caller>>,
    headers: HeaderMap,
    JsonBody(body): JsonBody,
) -> Result<Json<ConfigSaved>, ApiError> {
    let draft = read_draft(&body)?;
    let service = draft.service.as_str();
    let snapshot = service_part(&state.source.derived(), service)?;
    let file = file_ref(&state, &snapshot, service, &draft.file, "file")?;
    let text = applied(file.kind, &draft)?;
    let problems = values::check(file.kind, &text);
    if !problems.is_empty() {
        return Err(ApiError::Invalid { problems });
    }
    if text == draft.base {
        return Err(ApiError::Conflict {
            field: "text",
            message: "nothing changed: edit a value before saving".to_owned(),
        });
    }
    let access =
        crate::access::required(&state, caller.as_deref(), &headers, service, SAVE).await?;
    let writer = writer(&state)?;
    let by = Person {
        subject: access.subject,
    };
    let title = format!("Change {service}'s {}", file.label);
    let message = format!("{title} ({})", file.path);
    let pull = open_config_pulls(&state, &file.repo)
        .await?
        .into_iter()
        .find(|p| hangar::is_config_branch(&p.branch, &file.id));
    // The file as GitHub holds it where the change goes: the draft must start from it, so
    // what is committed differs from it by exactly the diff the pull request shows.
    let branch = pull
        .as_ref()
        .map_or(hangar::DEFAULT_BRANCH, |p| p.branch.as_str());
    let (held_sha, held) = match writer
        .read_file(&file.repo, branch, &file.path)
        .await
        .map_err(upstream)?
    {
        Some((sha, text)) => (Some(sha), text),
        None => (None, starter(service, &file)),
    };
    // Already there (a second press of the same save, or another replica's): nothing to
    // check it against, nothing to write.
    let already = held == text;
    if already && pull.is_none() {
        return Err(ApiError::Conflict {
            field: "text",
            message: format!("nothing changed: {} already says this", file.path),
        });
    }
    if !already && held_sha != draft.seen {
        return Err(ApiError::Conflict {
            field: "seen",
            message: format!(
                "{} in {} changed since it was read; load it again",
                file.path, file.repo
            ),
        });
    }
    if !already && draft.base != held {
        return Err(ApiError::Conflict {
            field: "base",
            message: format!(
                "the draft does not start from {} as {} holds it on {branch}; load it again",
                file.path, file.repo
            ),
        });
    }
    let saved = match pull {
        // Tower's open pull request for this file: one more commit on its branch, if the
        // branch still holds only Tower's.
        Some(pull) => {
            writer
                .only_towers_commits(&file.repo, hangar::DEFAULT_BRANCH, &pull.branch)
                .await
                .map_err(upstream)?;
            let change = FileChange {
                repo: &file.repo,
                branch: &pull.branch,
                path: &file.path,
                seen: draft.seen.as_deref(),
                content: &text,
                message: &message,
            };
            let committed = writer.commit_file(&change, &by).await.map_err(upstream)?;
            let (outcome, verb) = match committed {
                Committed::Made { .. } => ("updated", "Added the change to"),
                Committed::AlreadyThere => ("unchanged", "Already in"),
            };
            if matches!(committed, Committed::Made { .. }) {
                // The pull request now does more: its description says all of it, against
                // the file on the base branch.
                let base = writer
                    .read_file(&file.repo, hangar::DEFAULT_BRANCH, &file.path)
                    .await
                    .map_err(upstream)?
                    .map_or_else(|| starter(service, &file), |(_, text)| text);
                writer
                    .describe(
                        &file.repo,
                        pull.number,
                        &described(&file, &base, &text),
                        &by,
                    )
                    .await
                    .map_err(upstream)?;
            }
            ConfigSaved {
                outcome: outcome.to_owned(),
                message: format!(
                    "{verb} pull request #{} for {} in {}: Argo CD applies it once it is reviewed and merged.",
                    pull.number, file.path, file.repo
                ),
                pull,
            }
        }
        None => {
            let branch = hangar::config_branch(&file.id, draft.seen.as_deref());
            let body = described(&file, &held, &text);
            let proposal = Proposal {
                file: FileChange {
                    repo: &file.repo,
                    branch: &branch,
                    path: &file.path,
                    seen: draft.seen.as_deref(),
                    content: &text,
                    message: &message,
                },
                base: hangar::DEFAULT_BRANCH,
                title: &title,
                body: &body,
                labels: &[hangar::CONFIG_LABEL],
            };
            let proposed = writer.propose(&proposal, &by).await.map_err(upstream)?;
            let (outcome, verb) = match &proposed {
                Proposed::Opened { .. } => ("opened", "Opened"),
                Proposed::Existing { .. } => ("unchanged", "Found"),
            };
            let (Proposed::Opened { number, url } | Proposed::Existing { number, url }) = proposed;
            ConfigSaved {
                outcome: outcome.to_owned(),
                message: format!(
                    "{verb} pull request #{number} changing {} in {}: Argo CD applies it once it is reviewed and merged.",
                    file.path, file.repo
                ),
                pull: ConfigPull {
                    number,
                    url: Some(url),
                    title,
                    branch,
                },
            }
        }
    };
    if let Some(live) = &state.live {
        live.github_changed(&file.repo);
    }
    Ok(Json(saved))
}
