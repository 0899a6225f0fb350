//! The one place Tower changes anything: a commit to a GitOps repository, or a branch and a
//! pull request on one. Tower never writes to a cluster; Argo CD deploys what Git says.
//!
//! Every write here is
//! - **checked against what the person saw**: a file is changed only while its blob `sha` is
//!   the one the caller read (GitHub's `PUT contents` refuses a stale `sha`); a file changed
//!   since is [`WriteError::Stale`], never overwritten;
//! - **idempotent and race-safe**: a file already as asked is [`Committed::AlreadyThere`],
//!   so a double click, two tabs or two replicas make one commit; a proposal's branch is
//!   named by its caller for the change, so the same proposal finds the pull request the
//!   first one opened ([`Proposed::Existing`]) — GitHub itself refuses a second branch or
//!   pull request of that name;
//! - **named and audited**: the commit message and pull request body name the person
//!   ([`Person`]), and each outcome is logged with target `tower::audit`.
//!
//! Reads here go to GitHub directly, never through the 45 s read cache: a write is decided
//! on the file as it is now.

use base64::Engine as _;
use http::{Method, StatusCode};
use serde_json::{json, Value};

use crate::history::{History, Lease};
use crate::live::github::GitHub;

/// Who asked for a change: the caller's subject (`user:default/ana`, `tool:release-bot`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Person {
    pub subject: String,
}

impl Person {
    /// How the line naming the person starts.
    const TRAILER: &'static str = "Requested in Tower by ";

    /// The line every commit message and pull request body ends with.
    fn trailer(&self) -> String {
        format!("{}{}", Self::TRAILER, self.subject)
    }
}

/// A file to write: `content` at `path` on `branch`, if the file is still what the caller
/// read (`seen`: its blob sha; `None`: it did not exist).
#[derive(Clone, Debug)]
pub struct FileChange<'a> {
    pub repo: &'a str,
    pub branch: &'a str,
    pub path: &'a str,
    pub seen: Option<&'a str>,
    pub content: &'a str,
    pub message: &'a str,
}

/// What a commit did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Committed {
    /// This call made the commit.
    Made { commit: String },
    /// The file already is as asked (made by an earlier press, another replica, or by hand).
    AlreadyThere,
}

/// A change proposed as a pull request from `branch` (named for the change, so the same
/// proposal finds its pull request again) into `base`.
#[derive(Clone, Debug)]
pub struct Proposal<'a> {
    pub file: FileChange<'a>,
    pub base: &'a str,
    pub title: &'a str,
    pub body: &'a str,
    /// Put on the pull request once opened, so it can be found by label too.
    pub labels: &'a [&'a str],
}

/// What a proposal did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Proposed {
    Opened {
        number: u64,
        url: String,
    },
    /// The pull request for this branch was already open.
    Existing {
        number: u64,
        url: String,
    },
}

impl Proposed {
    pub fn number(&self) -> u64 {
        match self {
            Self::Opened { number, .. } | Self::Existing { number, .. } => *number,
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum WriteError {
    #[error("{path} in {repo} changed since it was read; look at it again before changing it")]
    Stale { repo: String, path: String },
    #[error("GitHub refused {what}: {status} {message}")]
    Refused {
        what: String,
        status: u16,
        message: String,
    },
    #[error("GitHub could not be reached: {0}")]
    Unreachable(String),
    /// A branch or pull request of the name Tower gives its own was made by someone else:
    /// Tower neither adopts it nor adds to it.
    #[error("{what} was not made by Tower ({by}); Tower does not add to it — close it or rename its branch")]
    NotTowers { what: String, by: String },
}

/// GitHub's answer: its status and JSON body (`null` when it had none).
struct Answer {
    status: StatusCode,
    body: Value,
}

impl Answer {
    fn message(&self) -> String {
        self.body["message"]
            .as_str()
            .map_or_else(|| self.status.to_string(), str::to_owned)
    }

    fn refused(&self, what: impl Into<String>) -> WriteError {
        WriteError::Refused {
            what: what.into(),
            status: self.status.as_u16(),
            message: self.message(),
        }
    }
}

/// Tower's GitHub writer. Cheap to clone.
#[derive(Clone, Debug)]
pub struct Writer {
    /// The client it writes with, and Tower's own login ([`GitHub::login`]).
    github: GitHub,
    /// Where replicas take turns ([`Writer::coordinated`]).
    turns: Option<History>,
}

/// How long a write waits for another replica's write of the same file or branch before
/// going ahead anyway (Git's own checks still make the pair one change).
const TURN_WAIT: std::time::Duration = std::time::Duration::from_secs(10);

impl Writer {
    pub fn new(github: &GitHub) -> Self {
        Self {
            github: github.clone(),
            turns: None,
        }
    }

    /// This writer, taking turns with other replicas through `history`'s database: two
    /// writes of one file, or two pull requests from one branch, run one after the other.
    pub fn coordinated(self, history: &History) -> Self {
        Self {
            turns: Some(history.clone()),
            ..self
        }
    }

    /// Waits for this replica's turn at `what` (see [`Writer::coordinated`]).
    async fn turn(&self, what: &str) -> Option<Lease> {
        let history = self.turns.as_ref()?;
        match history.exclusive(what, TURN_WAIT).await {
            Ok(Some(lease)) => Some(lease),
            Ok(None) => {
                tracing::warn!(what, "another replica's write took too long; going ahead");
                None
            }
            Err(err) => {
                tracing::warn!(what, error = %err, "taking turns through the database");
                None
            }
        }
    }

    async fn send(
        &self,
        method: Method,
        path: &str,
        body: Option<&Value>,
    ) -> Result<Answer, WriteError> {
        let unreachable = |err: octocrab::Error| WriteError::Unreachable(err.to_string());
        let octocrab = self.github.octocrab();
        let response = match method {
            Method::PUT => octocrab._put(path, body).await,
            Method::POST => octocrab._post(path, body).await,
            Method::PATCH => octocrab._patch(path, body).await,
            _ => octocrab._get(path).await,
        }
        .map_err(unreachable)?;
        let status = response.status();
        let text = octocrab
            .body_to_string(response)
            .await
            .map_err(unreachable)?;
        let body = serde_json::from_str(&text).unwrap_or(Value::Null);
        Ok(Answer { status, body })
    }

    /// `path` on `branch` of `repo` as it is now: its blob sha and text; `None` when absent.
    pub async fn read_file(
        &self,
        repo: &str,
        branch: &str,
        path: &str,
    ) -> Result<Option<(String, String)>, WriteError> {
        let answer = self
            .send(
                Method::GET,
                &format!("/repos/{repo}/contents/{path}?ref={branch}"),
                None,
            )
            .await?;
        if answer.status == StatusCode::NOT_FOUND {
            return Ok(None);
        }
        if !answer.status.is_success() {
            return Err(answer.refused(format!("reading {path}")));
        }
        let malformed = || WriteError::Refused {
            what: format!("reading {path}"),
            status: answer.status.as_u16(),
            message: "not a file with Base64 content".to_owned(),
        };
        let sha = answer.body["sha"]
            .as_str()
            .ok_or_else(malformed)?
            .to_owned();
        let encoded = answer.body["content"].as_str().ok_or_else(malformed)?;
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(encoded.replace(['\n', '\r'], ""))
            .map_err(|_| malformed())?;
        let text = String::from_utf8(bytes).map_err(|_| malformed())?;
        Ok(Some((sha, text)))
    }

    /// Writes `change` as one commit naming `by`, unless the file already is as asked;
    /// refuses when it changed since the caller read it.
    pub async fn commit_file(
        &self,
        change: &FileChange<'_>,
        by: &Person,
    ) -> Result<Committed, WriteError> {
        let _turn = self
            .turn(&format!(
                "commit {}/{} {}",
                change.repo, change.branch, change.path
            ))
            .await;
        let outcome = self.commit_once(change, by).await;
        audit("commit", change, by, &outcome);
        outcome
    }

    async fn commit_once(
        &self,
        change: &FileChange<'_>,
        by: &Person,
    ) -> Result<Committed, WriteError> {
        let stale = || WriteError::Stale {
            repo: change.repo.to_owned(),
            path: change.path.to_owned(),
        };
        let current = self
            .read_file(change.repo, change.branch, change.path)
            .await?;
        if current
            .as_ref()
            .is_some_and(|(_, text)| text == change.content)
        {
            return Ok(Committed::AlreadyThere);
        }
        if current.as_ref().map(|(sha, _)| sha.as_str()) != change.seen {
            return Err(stale());
        }
        let mut request = json!({
            "message": format!("{}\n\n{}", change.message, by.trailer()),
            "content": base64::engine::general_purpose::STANDARD.encode(change.content),
            "branch": change.branch,
        });
        if let Some(seen) = change.seen {
            request["sha"] = json!(seen);
        }
        let answer = self
            .send(
                Method::PUT,
                &format!("/repos/{}/contents/{}", change.repo, change.path),
                Some(&request),
            )
            .await?;
        match answer.status {
            StatusCode::OK | StatusCode::CREATED => Ok(Committed::Made {
                commit: answer.body["commit"]["sha"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned(),
            }),
            // Someone wrote it between the read and the write: done, if they wrote this.
            StatusCode::CONFLICT | StatusCode::UNPROCESSABLE_ENTITY => {
                match self
                    .read_file(change.repo, change.branch, change.path)
                    .await?
                {
                    Some((_, text)) if text == change.content => Ok(Committed::AlreadyThere),
                    _ => Err(stale()),
                }
            }
            _ => Err(answer.refused(format!("writing {}", change.path))),
        }
    }

    /// Rewrites the description of Tower's pull request `number` in `repo` to `body` (after
    /// a commit added to it changed what it does), keeping the names of everyone who asked
    /// for a change in it and adding `by`'s.
    pub async fn describe(
        &self,
        repo: &str,
        number: u64,
        body: &str,
        by: &Person,
    ) -> Result<(), WriteError> {
        let path = format!("/repos/{repo}/pulls/{number}");
        let current = self.send(Method::GET, &path, None).await?;
        if !current.status.is_success() {
            return Err(current.refused(format!("reading pull request #{number}")));
        }
        let mine = by.trailer();
        let mut asked: Vec<&str> = current.body["body"]
            .as_str()
            .unwrap_or_default()
            .lines()
            .filter(|line| line.starts_with(Person::TRAILER))
            .collect();
        if !asked.contains(&mine.as_str()) {
            asked.push(&mine);
        }
        let described = self
            .send(
                Method::PATCH,
                &path,
                Some(&json!({"body": format!("{body}\n\n{}", asked.join("\n"))})),
            )
            .await?;
        let outcome = if described.status.is_success() {
            Ok(())
        } else {
            Err(described.refused(format!("describing pull request #{number}")))
        };
        match &outcome {
            Ok(()) => tracing::info!(
                target: "tower::audit",
                who = %by.subject, action = "describe pull request", repo, number, "GitHub write"
            ),
            Err(err) => tracing::warn!(
                target: "tower::audit",
                who = %by.subject, action = "describe pull request", repo, number, error = %err,
                "GitHub write refused"
            ),
        }
        outcome
    }

    /// Tower's own login (the author of what it writes).
    async fn login(&self) -> Result<String, WriteError> {
        self.github
            .login()
            .await
            .map_err(|err| WriteError::Unreachable(format!("asking GitHub who Tower is: {err}")))
    }

    /// Tower's open pull request from `branch` in `repo`, if there is one: its number and
    /// page. One someone else opened from that branch is not Tower's (see
    /// [`WriteError::NotTowers`]).
    pub async fn open_pull(
        &self,
        repo: &str,
        branch: &str,
    ) -> Result<Option<(u64, String)>, WriteError> {
        let login = self.login().await?;
        Ok(self
            .any_open_pull(repo, branch)
            .await?
            .filter(|(_, _, author)| *author == login)
            .map(|(number, url, _)| (number, url)))
    }

    /// The open pull request from `branch` in `repo`, whoever opened it: its number, page
    /// and author's login.
    async fn any_open_pull(
        &self,
        repo: &str,
        branch: &str,
    ) -> Result<Option<(u64, String, String)>, WriteError> {
        let answer = self
            .send(
                Method::GET,
                &format!(
                    "/repos/{repo}/pulls?state=open&head={}:{branch}",
                    self.github.owner()
                ),
                None,
            )
            .await?;
        if !answer.status.is_success() {
            return Err(answer.refused("listing pull requests"));
        }
        Ok(answer.body.as_array().and_then(|pulls| {
            pulls.iter().find_map(|pr| {
                let number = pr["number"].as_u64()?;
                Some((
                    number,
                    pr["html_url"].as_str().unwrap_or_default().to_owned(),
                    pr["user"]["login"].as_str().unwrap_or_default().to_owned(),
                ))
            })
        }))
    }

    /// Refuses when `branch` holds a commit on top of `base` that Tower did not make (GitHub's
    /// compare names each commit's author).
    pub async fn only_towers_commits(
        &self,
        repo: &str,
        base: &str,
        branch: &str,
    ) -> Result<(), WriteError> {
        let login = self.login().await?;
        let compared = self
            .send(
                Method::GET,
                &format!("/repos/{repo}/compare/{base}...{branch}"),
                None,
            )
            .await?;
        if !compared.status.is_success() {
            return Err(compared.refused(format!("comparing {branch} with {base}")));
        }
        let others = compared.body["commits"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|commit| {
                commit["author"]["login"]
                    .as_str()
                    .unwrap_or("someone unknown")
            })
            .find(|author| *author != login);
        match others {
            Some(author) => Err(WriteError::NotTowers {
                what: format!("branch {branch} in {repo}"),
                by: author.to_owned(),
            }),
            None => Ok(()),
        }
    }

    /// Opens `proposal`'s pull request naming `by` — its branch from `base`, its file
    /// written there — or finds the one already open for its branch.
    pub async fn propose(
        &self,
        proposal: &Proposal<'_>,
        by: &Person,
    ) -> Result<Proposed, WriteError> {
        let _turn = self
            .turn(&format!(
                "pull request {} {}",
                proposal.file.repo, proposal.file.branch
            ))
            .await;
        let outcome = self.propose_once(proposal, by).await;
        audit("pull request", &proposal.file, by, &outcome);
        outcome
    }

    async fn propose_once(
        &self,
        proposal: &Proposal<'_>,
        by: &Person,
    ) -> Result<Proposed, WriteError> {
        let file = &proposal.file;
        let repo = file.repo;
        let existing = |(number, url)| Proposed::Existing { number, url };
        let login = self.login().await?;
        if let Some((number, url, author)) = self.any_open_pull(repo, file.branch).await? {
            if author != login {
                return Err(WriteError::NotTowers {
                    what: format!("pull request #{number} from {}", file.branch),
                    by: author,
                });
            }
            return Ok(existing((number, url)));
        }
        let base = self
            .send(
                Method::GET,
                &format!("/repos/{repo}/git/ref/heads/{}", proposal.base),
                None,
            )
            .await?;
        let Some(base_sha) = base.body["object"]["sha"]
            .as_str()
            .filter(|_| base.status.is_success())
        else {
            return Err(base.refused(format!("reading branch {}", proposal.base)));
        };
        let created = self
            .send(
                Method::POST,
                &format!("/repos/{repo}/git/refs"),
                Some(&json!({"ref": format!("refs/heads/{}", file.branch), "sha": base_sha})),
            )
            .await?;
        // 422: the branch exists already — an earlier press, or another replica, made it;
        // or someone else did, and then it is not Tower's to add to.
        if created.status == StatusCode::UNPROCESSABLE_ENTITY {
            self.only_towers_commits(repo, proposal.base, file.branch)
                .await?;
        } else if !created.status.is_success() {
            return Err(created.refused(format!("creating branch {}", file.branch)));
        }
        self.commit_once(file, by).await?;
        let opened = self
            .send(
                Method::POST,
                &format!("/repos/{repo}/pulls"),
                Some(&json!({
                    "title": proposal.title,
                    "head": file.branch,
                    "base": proposal.base,
                    "body": format!("{}\n\n{}", proposal.body, by.trailer()),
                })),
            )
            .await?;
        match opened.status {
            StatusCode::CREATED => {
                let number = opened.body["number"].as_u64().unwrap_or_default();
                if !proposal.labels.is_empty() {
                    let labelled = self
                        .send(
                            Method::POST,
                            &format!("/repos/{repo}/issues/{number}/labels"),
                            Some(&json!({"labels": proposal.labels})),
                        )
                        .await?;
                    if !labelled.status.is_success() {
                        // The pull request stands; only its label is missing.
                        tracing::warn!(repo, number, status = %labelled.status,
                            "labelling a pull request Tower opened");
                    }
                }
                Ok(Proposed::Opened {
                    number,
                    url: opened.body["html_url"]
                        .as_str()
                        .unwrap_or_default()
                        .to_owned(),
                })
            }
            // "A pull request already exists": opened by the press that won.
            StatusCode::UNPROCESSABLE_ENTITY => match self.open_pull(repo, file.branch).await? {
                Some(found) => Ok(existing(found)),
                None => Err(opened.refused("opening a pull request")),
            },
            _ => Err(opened.refused("opening a pull request")),
        }
    }
}

/// `text` read from elsewhere (a pull request's title) as it should stand in a pull request
/// body Tower writes: a Markdown code span, so GitHub renders it as written — no
/// `@mention` notifies anyone, no `closes #N` closes anything, no image or link is drawn.
/// The fence is one backtick longer than the longest run inside (CommonMark's rule), and a
/// line break is a space.
pub fn verbatim(text: &str) -> String {
    let text = text.replace(['\r', '\n'], " ");
    let longest = text
        .split(|c| c != '`')
        .map(str::len)
        .max()
        .unwrap_or_default();
    let fence = "`".repeat(longest + 1);
    // A space inside each fence, which CommonMark takes off again, keeps a backtick at
    // either end from joining the fence.
    format!("{fence} {text} {fence}")
}

/// One audit line per write Tower asked of GitHub, with the person and what came of it.
fn audit<T: std::fmt::Debug>(
    action: &str,
    change: &FileChange<'_>,
    by: &Person,
    outcome: &Result<T, WriteError>,
) {
    match outcome {
        Ok(done) => tracing::info!(
            target: "tower::audit",
            who = %by.subject, action, repo = change.repo, branch = change.branch,
            path = change.path, outcome = ?done, "GitHub write"
        ),
        Err(err) => tracing::warn!(
            target: "tower::audit",
            who = %by.subject, action, repo = change.repo, branch = change.branch,
            path = change.path, error = %err, "GitHub write refused"
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::verbatim;

    #[test]
    fn text_from_elsewhere_stands_in_a_body_as_a_code_span() {
        assert_eq!(verbatim("Faster checkout"), "` Faster checkout `");
        assert_eq!(
            verbatim("@ana closes #3 ![x](https://evil.example/x.png)"),
            "` @ana closes #3 ![x](https://evil.example/x.png) `"
        );
        assert_eq!(verbatim("a `b` ``c``"), "``` a `b` ``c`` ```");
        assert_eq!(verbatim("two\nlines"), "` two lines `");
    }
}
