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
//! - **one at a time per file**: at most one of Tower's pull requests is open for a file
//!   (each body carries the file it changes, [`file_mark`]); a proposal of another change to a
//!   file that has one is [`WriteError::AlreadyProposed`], and replicas take turns per file;
//! - **budgeted per person**: a writer made [`Writer::charged`] takes what its writes cost
//!   GitHub (a pull request four calls, a commit or a description one) from the person's
//!   [`crate::auth::Budget`] before the first of them — a runaway loop is refused
//!   ([`WriteError::TooMany`]) before it spends Tower's GitHub quota, and nothing is left
//!   half-written;
//! - **named and audited**: the commit message and pull request body name the person
//!   ([`Person`]), and each outcome is logged with target `tower::audit`.
//!
//! Reads here go to GitHub directly, never through the 45 s read cache: a write is decided
//! on the file as it is now.

use base64::Engine as _;
use http::{Method, StatusCode};
use serde_json::{json, Value};

use std::sync::Arc;

use crate::auth::Budget;
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
    /// Tower's pull request #`number` already changes the file: one open at a time.
    #[error(
        "pull request #{number} already changes {path} in {repo}; merge or close it first ({url})"
    )]
    AlreadyProposed {
        repo: String,
        path: String,
        number: u64,
        url: String,
    },
    /// The person spent their budget of GitHub writes ([`Writer::charged`]).
    #[error("{subject} has made many GitHub writes in quick succession; try again in {wait} s")]
    TooMany { subject: String, wait: u64 },
}

/// What each sort of write costs the person's budget: the GitHub calls that write.
const PROPOSAL_COST: f64 = 4.0; // branch, contents, pull request, label
const COMMIT_COST: f64 = 1.0;
const DESCRIPTION_COST: f64 = 1.0;

/// The line in each pull request body Tower opens that names the file it changes (an HTML
/// comment: GitHub shows nothing), by which a second proposal for the file finds the first.
pub fn file_mark(repo: &str, path: &str) -> String {
    format!("{FILE_MARK}{repo}/{path} -->")
}

const FILE_MARK: &str = "<!-- tower:changes ";

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
    /// Whose writes cost what ([`Writer::charged`]).
    budget: Option<Arc<Budget>>,
}

/// How many pages of a hundred open pull requests a proposal reads to find Tower's own for
/// the same file.
const MARK_PAGES: u32 = 10;

/// How long a write waits for another replica's write of the same file or branch before
/// going ahead anyway (Git's own checks still make the pair one change).
const TURN_WAIT: std::time::Duration = std::time::Duration::from_secs(10);

impl Writer {
    pub fn new(github: &GitHub) -> Self {
        Self {
            github: github.clone(),
            turns: None,
            budget: None,
        }
    }

    /// This writer, taking what each write costs from the person's part of `budget` before
    /// the first GitHub call that writes (see the module's notes).
    pub fn charged(self, budget: Arc<Budget>) -> Self {
        Self {
            budget: Some(budget),
            ..self
        }
    }

    fn charge(&self, by: &Person, cost: f64) -> Result<(), WriteError> {
        let Some(budget) = &self.budget else {
            return Ok(());
        };
        budget
            .take_n(&by.subject, cost)
            .map_err(|wait| WriteError::TooMany {
                subject: by.subject.clone(),
                wait,
            })
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
        let outcome = self.commit_once(change, by, COMMIT_COST).await;
        audit("commit", change, by, &outcome);
        outcome
    }

    /// The commit of [`Writer::commit_file`], charging `cost` before it writes.
    async fn commit_once(
        &self,
        change: &FileChange<'_>,
        by: &Person,
        cost: f64,
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
        self.charge(by, cost)?;
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
        // Everyone who asked, and the file the pull request changes, stay said.
        let mut kept: Vec<&str> = current.body["body"]
            .as_str()
            .unwrap_or_default()
            .lines()
            .filter(|line| line.starts_with(Person::TRAILER) || line.starts_with(FILE_MARK))
            .collect();
        if !kept.contains(&mine.as_str()) {
            kept.push(&mine);
        }
        self.charge(by, DESCRIPTION_COST)?;
        let described = self
            .send(
                Method::PATCH,
                &path,
                Some(&json!({"body": format!("{body}\n\n{}", kept.join("\n"))})),
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
        let pulls = self
            .open_pulls(repo, &format!("head={}:{branch}", self.github.owner()))
            .await?;
        Ok(pulls.iter().find_map(|pr| {
            let (number, url) = numbered(pr)?;
            let author = pr["user"]["login"].as_str().unwrap_or_default().to_owned();
            Some((number, url, author))
        }))
    }

    /// The open pull requests of `repo` that `query` picks (`head=…`, `per_page=…&page=…`),
    /// as GitHub lists them.
    async fn open_pulls(&self, repo: &str, query: &str) -> Result<Vec<Value>, WriteError> {
        let answer = self
            .send(
                Method::GET,
                &format!("/repos/{repo}/pulls?state=open&{query}"),
                None,
            )
            .await?;
        if !answer.status.is_success() {
            return Err(answer.refused("listing pull requests"));
        }
        Ok(match answer.body {
            Value::Array(pulls) => pulls,
            _ => Vec::new(),
        })
    }

    /// Tower's open pull request in `repo` whose body carries `mark` ([`file_mark`]), if
    /// any: its number and page. Reads open pull requests a hundred at a time, newest first.
    async fn towers_open_pull_marked(
        &self,
        repo: &str,
        mark: &str,
        login: &str,
    ) -> Result<Option<(u64, String)>, WriteError> {
        for page in 1..=MARK_PAGES {
            let pulls = self
                .open_pulls(repo, &format!("per_page=100&page={page}"))
                .await?;
            let found = pulls
                .iter()
                .filter(|pr| pr["user"]["login"].as_str() == Some(login))
                .filter(|pr| {
                    pr["body"]
                        .as_str()
                        .is_some_and(|body| body.lines().any(|line| line == mark))
                })
                .find_map(numbered);
            if found.is_some() || pulls.len() < 100 {
                return Ok(found);
            }
        }
        Ok(None)
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
        // One turn per file: two proposals for it (the same or different changes) one after
        // the other, so the second finds the first's pull request.
        let _turn = self
            .turn(&format!(
                "pull request {} {}",
                proposal.file.repo, proposal.file.path
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
        let mark = file_mark(repo, file.path);
        if let Some((number, url)) = self.towers_open_pull_marked(repo, &mark, &login).await? {
            return Err(WriteError::AlreadyProposed {
                repo: repo.to_owned(),
                path: file.path.to_owned(),
                number,
                url,
            });
        }
        self.charge(by, PROPOSAL_COST)?;
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
        self.commit_once(file, by, 0.0).await?;
        let opened = self
            .send(
                Method::POST,
                &format!("/repos/{repo}/pulls"),
                Some(&json!({
                    "title": proposal.title,
                    "head": file.branch,
                    "base": proposal.base,
                    "body": format!("{}\n\n{mark}\n{}", proposal.body, by.trailer()),
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

/// A listed pull request's number and page.
fn numbered(pr: &Value) -> Option<(u64, String)> {
    Some((
        pr["number"].as_u64()?,
        pr["html_url"].as_str().unwrap_or_default().to_owned(),
    ))
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
