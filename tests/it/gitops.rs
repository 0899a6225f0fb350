//! Tower's one GitHub write path (`tower_backend::gitops`) against the simulated GitHub:
//! a change pressed 50 times at once makes one commit, or one pull request; a file changed
//! since it was read is refused, never overwritten; and nothing is written to a cluster.

use tower_backend::gitops::{
    Committed, FileChange, Person, Proposal, Proposed, WriteError, Writer,
};

use crate::support::{busy_app, Live};

const PATH: &str = "glidepath/envs/staging.yaml";

fn ana() -> Person {
    Person {
        subject: "user:default/ana".to_owned(),
    }
}

/// Tower on the simulated platform, its writer, the busy app's GitOps repo and the blob sha
/// of its staging file there now (`None`: no such file yet).
async fn start() -> (Live, Writer, String, Option<String>) {
    let tower = Live::start(0.0).await.unwrap();
    let writer = Writer::new(tower.live.github().unwrap());
    let repo = format!("acme/gitops-{}", busy_app());
    let seen = writer
        .read_file(&repo, "main", PATH)
        .await
        .unwrap()
        .map(|(sha, _)| sha);
    (tower, writer, repo, seen)
}

fn commits_to(tower: &Live, repo: &str, branch: &str) -> usize {
    tower
        .world
        .platform
        .github_commits()
        .iter()
        .filter(|(r, b, p)| r == repo && b == branch && p == PATH)
        .count()
}

#[tokio::test]
async fn fifty_presses_at_once_make_one_commit_and_a_stale_file_is_refused() {
    let (tower, writer, repo, seen) = start().await;
    let content = "image: ghcr.io/acme/reports:1.900.0-abcdef0\n";
    let change = FileChange {
        repo: &repo,
        branch: "main",
        path: PATH,
        seen: seen.as_deref(),
        content,
        message: "Promote reports 1.900.0-abcdef0 to staging",
    };
    let by = ana();
    let presses = (0..50).map(|_| writer.commit_file(&change, &by));
    let outcomes = futures::future::join_all(presses).await;
    let made = outcomes
        .iter()
        .filter(|o| matches!(o, Ok(Committed::Made { .. })))
        .count();
    let already = outcomes
        .iter()
        .filter(|o| matches!(o, Ok(Committed::AlreadyThere)))
        .count();
    assert_eq!((made, already), (1, 49), "{outcomes:?}");
    assert_eq!(commits_to(&tower, &repo, "main"), 1);
    let (now_sha, text) = writer
        .read_file(&repo, "main", PATH)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(text, content);

    // Someone else changes the file after it was read: a write from that read is refused,
    // and their change stands.
    let theirs = "image: ghcr.io/acme/reports:1.901.0-0123456\n";
    let by_hand = FileChange {
        seen: Some(&now_sha),
        content: theirs,
        message: "By hand",
        ..change.clone()
    };
    assert!(matches!(
        writer.commit_file(&by_hand, &by).await,
        Ok(Committed::Made { .. })
    ));
    let stale = FileChange {
        seen: Some(&now_sha),
        content: "image: ghcr.io/acme/reports:1.902.0-7654321\n",
        ..change.clone()
    };
    let refused = writer.commit_file(&stale, &by).await;
    assert!(
        matches!(refused, Err(WriteError::Stale { .. })),
        "{refused:?}"
    );
    assert!(refused
        .unwrap_err()
        .to_string()
        .contains("changed since it was read"));
    let (_, text) = writer
        .read_file(&repo, "main", PATH)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(text, theirs);
    assert_eq!(commits_to(&tower, &repo, "main"), 2);
    assert_eq!(
        tower.world.served.writes(),
        0,
        "nothing written to a cluster"
    );
}

#[tokio::test]
async fn fifty_proposals_at_once_open_one_pull_request_naming_the_person() {
    let (tower, writer, repo, seen) = start().await;
    let branch = "tower/promote-prod-1.900.0-abcdef0";
    let proposal = Proposal {
        file: FileChange {
            repo: &repo,
            branch,
            path: PATH,
            seen: seen.as_deref(),
            content: "image: ghcr.io/acme/reports:1.900.0-abcdef0\n",
            message: "Promote reports 1.900.0-abcdef0 to prod",
        },
        base: "main",
        title: "Promote reports 1.900.0-abcdef0 to prod",
        body: "Pull requests in this release: #1731.",
        labels: &["tower-promotion"],
    };
    let by = ana();
    let outcomes = futures::future::join_all((0..50).map(|_| writer.propose(&proposal, &by))).await;
    let numbers: std::collections::BTreeSet<u64> = outcomes
        .iter()
        .map(|o| o.as_ref().map(Proposed::number).unwrap())
        .collect();
    assert_eq!(numbers.len(), 1, "{outcomes:?}");
    let opened = outcomes
        .iter()
        .filter(|o| matches!(o, Ok(Proposed::Opened { .. })))
        .count();
    assert_eq!(opened, 1, "{outcomes:?}");
    assert_eq!(commits_to(&tower, &repo, branch), 1);
    assert_eq!(
        commits_to(&tower, &repo, "main"),
        0,
        "main is changed by the merge"
    );

    // GitHub lists exactly one open pull request from the branch, naming the person.
    let github = format!("http://{}", tower.world.served.github);
    let pulls: serde_json::Value = reqwest::get(format!(
        "{github}/repos/{repo}/pulls?state=open&head=acme:{branch}"
    ))
    .await
    .unwrap()
    .json()
    .await
    .unwrap();
    let pulls = pulls.as_array().unwrap();
    assert_eq!(pulls.len(), 1, "{pulls:?}");
    assert!(pulls[0]["body"]
        .as_str()
        .unwrap()
        .ends_with("Requested in Tower by user:default/ana"));
    // Proposed again later: the same pull request.
    let again = writer.propose(&proposal, &by).await.unwrap();
    assert!(matches!(again, Proposed::Existing { .. }), "{again:?}");
    assert_eq!(again.number(), *numbers.first().unwrap());
    assert_eq!(
        tower.world.served.writes(),
        0,
        "nothing written to a cluster"
    );
}

/// A promotion of `tag` to prod, as a proposal for `path` (borrowing its strings from `at`).
fn promotion<'a>(at: &'a (String, String, String, String), seen: Option<&'a str>) -> Proposal<'a> {
    let (repo, path, branch, content) = at;
    Proposal {
        file: FileChange {
            repo,
            branch,
            path,
            seen,
            content,
            message: "Promote reports to prod",
        },
        base: "main",
        title: "Promote reports to prod",
        body: "Pull requests in this release: none that Tower saw.",
        labels: &["tower-promotion"],
    }
}

/// `(repo, path, branch, content)` of a promotion of `1.<minor>.0` to `path`.
fn promoting(repo: &str, path: &str, minor: u32) -> (String, String, String, String) {
    (
        repo.to_owned(),
        path.to_owned(),
        format!("tower/promote-prod-1.{minor}.0-abcdef0"),
        format!("image: ghcr.io/acme/reports:1.{minor}.0-abcdef0\n"),
    )
}

#[tokio::test]
async fn a_file_has_at_most_one_open_pull_request_even_when_twenty_changes_race_for_it() {
    let (tower, _, repo, seen) = start().await;
    // Replicas take turns through the database, per file.
    let writer = Writer::new(tower.live.github().unwrap()).coordinated(tower.live.history());
    let changes: Vec<_> = (0..20).map(|i| promoting(&repo, PATH, 900 + i)).collect();
    let by = ana();
    let outcomes = futures::future::join_all(
        changes
            .iter()
            .map(|c| async { writer.propose(&promotion(c, seen.as_deref()), &by).await }),
    )
    .await;
    let opened: Vec<u64> = outcomes
        .iter()
        .filter_map(|o| match o {
            Ok(Proposed::Opened { number, .. }) => Some(*number),
            _ => None,
        })
        .collect();
    assert_eq!(opened.len(), 1, "{outcomes:?}");
    for outcome in &outcomes {
        match outcome {
            Ok(Proposed::Opened { .. }) => {}
            Err(WriteError::AlreadyProposed { number, path, .. }) => {
                assert_eq!((*number, path.as_str()), (opened[0], PATH), "{outcome:?}");
            }
            other => panic!("a second change to {PATH}: {other:?}"),
        }
    }
    let towers = crate::records::open_pulls(&tower, &repo, "tower/promote-prod-1.9").await;
    assert_eq!(towers.len(), 1, "{towers:?}");
    // The refused changes wrote nothing: one branch holds a commit.
    let commits = tower.world.platform.github_commits();
    let written = changes
        .iter()
        .filter(|c| commits.iter().any(|(r, b, _)| *r == repo && *b == c.2))
        .count();
    assert_eq!(written, 1);
}

#[tokio::test]
async fn a_person_writing_in_a_loop_is_stopped_before_github_is_and_others_are_not() {
    let (tower, _, repo, _) = start().await;
    let budget = std::sync::Arc::new(tower_backend::auth::Budget::new(
        tower_backend::auth::GITHUB_WRITE_BURST,
        tower_backend::auth::GITHUB_WRITES_PER_SECOND,
    ));
    let writer = Writer::new(tower.live.github().unwrap()).charged(budget);
    // A pull request costs four writes: ten fit in the burst, each to its own file.
    let files: Vec<_> = (0..11)
        .map(|i| promoting(&repo, &format!("glidepath/envs/loop-{i}.yaml"), 900 + i))
        .collect();
    let by = ana();
    for file in &files[..10] {
        let done = writer.propose(&promotion(file, None), &by).await;
        assert!(matches!(done, Ok(Proposed::Opened { .. })), "{done:?}");
    }
    let refused = writer.propose(&promotion(&files[10], None), &by).await;
    let Err(WriteError::TooMany { subject, wait }) = refused else {
        panic!("the eleventh pull request in a row: {refused:?}");
    };
    assert_eq!(subject, by.subject);
    assert!((1..=120).contains(&wait), "try again in {wait} s");
    // Refused before anything was written: no branch, no commit.
    assert!(
        !tower
            .world
            .platform
            .github_commits()
            .iter()
            .any(|(r, b, _)| *r == repo && *b == files[10].2),
        "the refused pull request wrote its commit"
    );
    // Proposing again what is open costs nothing; someone else still has their budget.
    let again = writer.propose(&promotion(&files[0], None), &by).await;
    assert!(matches!(again, Ok(Proposed::Existing { .. })), "{again:?}");
    let bob = Person {
        subject: "user:default/bob".to_owned(),
    };
    let theirs = writer.propose(&promotion(&files[10], None), &bob).await;
    assert!(matches!(theirs, Ok(Proposed::Opened { .. })), "{theirs:?}");
}
