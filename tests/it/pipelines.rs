//! The Pipelines tab's derivation over the fixtures in `fixtures/pipelines/` (`tower
//! pipelines`): runs with commit, image and trigger; a run's graph of tasks; pages by cursor.

use proptest::prelude::*;
use tower_shared::pipelines::{
    derive, page, Cursor, EdgeKind, Filter, Outcome, Pipelines, RunGraph, RunSummary, Trigger,
};
use tower_shared::snapshot::Snapshot;

use crate::support::root;

/// Each fixture and the run it is about (every fixture is about `shop`).
const FIXTURES: &[(&str, &str)] = &[
    ("passing", "shop-build-7"),
    ("failed", "shop-build-8"),
    ("cancelled", "shop-build-9"),
    ("running", "shop-build-10"),
    ("skipped-when", "shop-build-11"),
    ("stopping", "shop-build-12"),
    ("pending", "shop-build-13"),
    ("timed-out", "shop-build-14"),
    ("retried", "shop-build-15"),
];

fn snapshot(fixture: &str) -> Snapshot {
    let text =
        std::fs::read_to_string(root().join(format!("fixtures/pipelines/{fixture}.json"))).unwrap();
    Snapshot::from_json(&text).unwrap()
}

fn pipelines(fixture: &str) -> Pipelines {
    derive(&snapshot(fixture), "shop")
}

fn graph(fixture: &str) -> RunGraph {
    let run = FIXTURES.iter().find(|(f, _)| *f == fixture).unwrap().1;
    pipelines(fixture).graph(run).unwrap().clone()
}

fn task<'g>(graph: &'g RunGraph, name: &str) -> &'g tower_shared::pipelines::TaskNode {
    graph
        .tasks
        .iter()
        .find(|t| t.name == name)
        .unwrap_or_else(|| panic!("no task {name}"))
}

#[test]
fn every_fixture_matches_its_snapshot() {
    crate::support::fixtures_are_exactly("pipelines", FIXTURES.iter().map(|(f, _)| *f));
    for (fixture, _) in FIXTURES {
        insta::assert_json_snapshot!(format!("pipelines-{fixture}"), pipelines(fixture));
    }
}

/// Each kind of run Tekton reports, as its reasons say and `tkn` shows them: a run failed
/// and waiting for its running task is stopping; a pending one has no start; a run out of
/// time ends its running task's step as timed out, not failed; a retried task is one node
/// with its attempts; a failure `onError: continue` let pass is said as ignored; a TaskRun
/// whose pod cannot be placed is pending.
#[test]
fn runs_of_every_kind_read_as_tekton_says_them() {
    let stopping = graph("stopping");
    assert_eq!(stopping.run.outcome, Outcome::Stopping);
    assert!(!stopping.run.outcome.is_final());
    assert_eq!(task(&stopping, "unit-tests").outcome, Outcome::Failed);
    assert_eq!(task(&stopping, "unit-tests").steps[0].exit_code, Some(2));
    assert_eq!(task(&stopping, "lint").outcome, Outcome::Running);

    let pending = graph("pending");
    assert_eq!(pending.run.outcome, Outcome::Pending);
    assert_eq!(pending.run.started_at, None, "not started: no start time");
    assert!(pending.run.created_at.is_some());
    assert!(pending.tasks.iter().all(|t| t.outcome == Outcome::Pending));
    // Not started, it still sorts by when it was made: newest first among the others.
    let mut runs: Vec<RunSummary> = FIXTURES
        .iter()
        .flat_map(|(f, _)| pipelines(f).runs)
        .collect();
    runs.sort_by(tower_shared::pipelines::newest_first);
    let at = runs.iter().position(|r| r.name == "shop-build-13").unwrap();
    assert!(runs[..at]
        .iter()
        .all(|r| r.sorted_at() >= pending.run.created_at));

    let timed_out = graph("timed-out");
    assert_eq!(timed_out.run.outcome, Outcome::TimedOut);
    let tests = task(&timed_out, "unit-tests");
    assert_eq!(tests.outcome, Outcome::TimedOut);
    assert_eq!(
        tests.steps[0].outcome,
        Outcome::TimedOut,
        "ended by its TaskRun"
    );
    assert_eq!(tests.steps[0].exit_code, Some(1));

    let retried = graph("retried");
    assert_eq!(retried.run.outcome, Outcome::Running);
    let tests = task(&retried, "unit-tests");
    assert_eq!((tests.outcome, tests.attempts), (Outcome::Succeeded, 3));
    assert_eq!(
        retried
            .tasks
            .iter()
            .filter(|t| t.name == "unit-tests")
            .count(),
        1,
        "a retried task is one node"
    );
    assert_eq!(task(&retried, "lint").outcome, Outcome::FailureIgnored);
    assert!(!Outcome::FailureIgnored.is_failure());
    let image = task(&retried, "build-image");
    assert_eq!(image.outcome, Outcome::Pending, "ExceededNodeResources");
    assert_eq!(image.reason.as_deref(), Some("ExceededNodeResources"));
    assert_eq!(task(&retried, "fetch-source").attempts, 1);

    // The cancelled run's running step was ended by its TaskRun: cancelled, not failed.
    let cancelled = graph("cancelled");
    assert_eq!(
        task(&cancelled, "build-image").steps[0].outcome,
        Outcome::Cancelled
    );
}

#[test]
fn a_passing_run_names_its_commit_image_and_trigger_newest_first() {
    let p = pipelines("passing");
    assert_eq!(p.namespace, "app-shop-cicd");
    let names: Vec<&str> = p.runs.iter().map(|r| r.name.as_str()).collect();
    assert_eq!(names, ["shop-build-7", "shop-build-6"], "newest first");
    let run = &p.runs[0];
    assert_eq!(run.outcome, Outcome::Succeeded);
    assert_eq!(
        run.commit.as_deref(),
        Some("9f2c1ab7e4d35c0a8b6f1e2d3c4b5a697887a6b5")
    );
    assert_eq!(
        run.commit_url.as_deref(),
        Some("https://github.com/acme/shop/commit/9f2c1ab7e4d35c0a8b6f1e2d3c4b5a697887a6b5")
    );
    assert_eq!(
        run.image.as_deref(),
        Some("ghcr.io/acme/shop:1.4.2-9f2c1ab@sha256:586789aa031fafc7d78a5393cdc772e0b55107ea54bb8bcf3f2cdac6c6da51ee"),
        "the build-image TaskRun's IMAGE_URL with its digest"
    );
    assert_eq!(
        run.trigger,
        Trigger::Push {
            branch: Some("main".to_owned())
        }
    );
    assert_eq!(
        p.runs[1].trigger,
        Trigger::PullRequest {
            number: 41,
            branch: Some("basket-badge".to_owned())
        }
    );
    // The older run's TaskRuns are gone: no image is invented for it.
    assert_eq!(p.runs[1].image, None);
}

#[test]
fn the_graph_follows_run_after_and_result_references_with_finally_last() {
    let g = graph("passing");
    let columns: Vec<(&str, u32)> = g
        .tasks
        .iter()
        .map(|t| (t.name.as_str(), t.column))
        .collect();
    assert_eq!(
        columns,
        [
            ("fetch-source", 0),
            ("unit-tests", 1),
            ("lint", 1),
            // runAfter unit-tests and lint, and reads fetch-source's result.
            ("build-image", 2),
            // No runAfter: only a result reference orders it.
            ("update-gitops", 3),
            ("deploy-prod", 4),
            ("notify", 5),
        ]
    );
    assert_eq!((g.columns, g.rows), (6, 2));
    assert_eq!((task(&g, "unit-tests").row, task(&g, "lint").row), (0, 1));
    let edge = |from: &str, to: &str| {
        g.edges
            .iter()
            .find(|e| e.from == from && e.to == to)
            .map(|e| e.kind)
    };
    assert_eq!(
        edge("fetch-source", "build-image"),
        Some(EdgeKind::Reference)
    );
    assert_eq!(edge("lint", "build-image"), Some(EdgeKind::RunAfter));
    assert_eq!(
        edge("build-image", "update-gitops"),
        Some(EdgeKind::Reference)
    );
    // `$(tasks.status)` is every task's status, not a task: finally has no edges.
    assert!(g.edges.iter().all(|e| e.to != "notify"), "{:?}", g.edges);
    assert!(task(&g, "notify").finally);
    // Display names ("nicknames") where the pipeline gives them.
    assert_eq!(
        task(&g, "build-image").display_name.as_deref(),
        Some("Build the image")
    );
    assert_eq!(task(&g, "lint").display_name, None);
    let step = &task(&g, "build-image").steps[0];
    assert_eq!(
        (step.name.as_str(), step.container.as_str(), step.outcome),
        ("build-and-push", "step-build-and-push", Outcome::Succeeded)
    );
}

#[test]
fn a_failed_run_marks_the_failed_task_and_what_never_ran() {
    let g = graph("failed");
    assert_eq!(g.run.outcome, Outcome::Failed);
    let failed = task(&g, "unit-tests");
    assert_eq!(failed.outcome, Outcome::Failed);
    assert_eq!(
        failed.message.as_deref(),
        Some("\"step-test\" exited with code 1: Error")
    );
    assert_eq!(failed.steps[0].exit_code, Some(1));
    let build = task(&g, "build-image");
    assert_eq!(build.outcome, Outcome::Skipped);
    assert_eq!(
        build.skipped_reason.as_deref(),
        Some("PipelineRun was stopping")
    );
    assert_eq!(build.task_run, None);
    assert_eq!(task(&g, "notify").outcome, Outcome::Succeeded);
    assert_eq!(
        g.run.trigger,
        Trigger::PullRequest {
            number: 42,
            branch: Some("basket-badge".to_owned())
        }
    );
}

#[test]
fn cancelled_running_and_when_skipped_runs_say_so() {
    let g = graph("cancelled");
    assert_eq!(g.run.outcome, Outcome::Cancelled);
    assert_eq!(task(&g, "build-image").outcome, Outcome::Cancelled);
    assert_eq!(task(&g, "update-gitops").outcome, Outcome::NotRun);
    assert_eq!(task(&g, "build-image").steps[0].outcome, Outcome::Cancelled);

    let g = graph("running");
    assert_eq!(g.run.outcome, Outcome::Running);
    assert_eq!(g.run.completed_at, None);
    let build = task(&g, "build-image");
    assert_eq!(
        (build.outcome, build.completed_at),
        (Outcome::Running, None)
    );
    assert_eq!(build.steps[0].outcome, Outcome::Running);
    assert_eq!(task(&g, "update-gitops").outcome, Outcome::Pending);
    assert_eq!(task(&g, "notify").outcome, Outcome::Pending);

    let g = graph("skipped-when");
    assert_eq!(g.run.outcome, Outcome::Succeeded);
    assert_eq!(g.run.reason.as_deref(), Some("Completed"));
    let deploy = task(&g, "deploy-prod");
    assert_eq!(deploy.outcome, Outcome::Skipped);
    assert_eq!(
        deploy.skipped_reason.as_deref(),
        Some("When Expressions evaluated to false")
    );
}

#[test]
fn a_task_run_tower_does_not_see_is_unknown_not_invented() {
    let mut s = snapshot("passing");
    let objects = s.clusters.get_mut("dev").unwrap();
    objects.retain(|o| o.name() != "shop-build-7-lint");
    let g = derive(&s, "shop").graph("shop-build-7").unwrap().clone();
    let lint = task(&g, "lint");
    assert_eq!(lint.outcome, Outcome::Unknown);
    assert_eq!(lint.task_run.as_deref(), Some("shop-build-7-lint"));
    assert_eq!((lint.started_at, lint.pod.as_deref()), (None, None));
}

#[test]
fn trimmed_fixtures_derive_the_same_and_keep_no_secret() {
    for (fixture, _) in FIXTURES {
        let whole = snapshot(fixture);
        let trimmed = whole.clone().trimmed();
        assert_eq!(
            derive(&trimmed, "shop"),
            derive(&whole, "shop"),
            "{fixture}"
        );
        let text = serde_json::to_string(&trimmed).unwrap();
        assert!(
            !text.contains("sim-secret-4f1c"),
            "{fixture} keeps a secret"
        );
    }
}

/// Runs made from the passing fixture's two: `n` of them, a minute apart, some failed,
/// two Pipelines.
fn many(n: usize) -> Vec<RunSummary> {
    let template = pipelines("passing").runs[0].clone();
    let start = template.started_at.unwrap();
    let mut runs: Vec<RunSummary> = (0..n)
        .map(|i| RunSummary {
            name: format!("shop-run-{i}"),
            pipeline: Some(if i % 3 == 0 { "deploy" } else { "build" }.to_owned()),
            outcome: if i % 4 == 0 {
                Outcome::Failed
            } else {
                Outcome::Succeeded
            },
            // Two runs share each start: the name orders them.
            started_at: Some(start + chrono::Duration::minutes(i64::try_from(i / 2).unwrap())),
            ..template.clone()
        })
        .collect();
    runs.sort_by(tower_shared::pipelines::newest_first);
    runs
}

fn all_pages(runs: &[RunSummary], filter: &Filter, limit: usize) -> Vec<String> {
    let mut out = Vec::new();
    let mut after: Option<Cursor> = None;
    for _ in 0..=runs.len() {
        let (page, next) = page(runs, filter, after.as_ref(), limit);
        assert!(page.len() <= limit);
        out.extend(page.iter().map(|r| r.name.clone()));
        match next {
            // What a caller sends back is the encoded cursor.
            Some(c) => after = Some(Cursor::decode(&c.encode()).unwrap()),
            None => return out,
        }
    }
    panic!("paging did not end");
}

proptest! {
    /// Page after page, by the cursor each gives, is the filtered list: nothing twice,
    /// nothing missed, in order.
    #[test]
    fn pages_by_cursor_are_the_filtered_list(n in 0usize..120, limit in 1usize..40, which in 0u8..4) {
        let runs = many(n);
        let filter = match which {
            0 => Filter::default(),
            1 => Filter { pipeline: Some("deploy".to_owned()), outcome: None },
            2 => Filter { pipeline: None, outcome: Some(Outcome::Failed) },
            _ => Filter { pipeline: Some("build".to_owned()), outcome: Some(Outcome::Succeeded) },
        };
        let expected: Vec<String> =
            runs.iter().filter(|r| filter.accepts(r)).map(|r| r.name.clone()).collect();
        prop_assert_eq!(all_pages(&runs, &filter, limit), expected);
    }
}

#[test]
fn a_new_run_does_not_shift_the_next_page() {
    let mut runs = many(50);
    let (first, next) = page(&runs, &Filter::default(), None, 20);
    let first: Vec<String> = first.iter().map(|r| r.name.clone()).collect();
    let next = next.unwrap();
    // A run starts meanwhile: it is newest, so on page one of a fresh read, not page two.
    let mut newer = runs[0].clone();
    newer.name = "shop-run-new".to_owned();
    newer.started_at = newer.started_at.map(|t| t + chrono::Duration::hours(1));
    runs.insert(0, newer);
    let (second, _) = page(&runs, &Filter::default(), Some(&next), 20);
    assert_eq!(second[0].name, runs[21].name);
    assert!(second.iter().all(|r| !first.contains(&r.name)));
}

#[test]
fn cursors_refuse_what_tower_did_not_give() {
    for bad in [
        "",
        "12",
        "x.shop-1",
        "12.",
        "12.Shop",
        "-.a/b",
        "99999999999999999999.a",
    ] {
        assert_eq!(Cursor::decode(bad), None, "{bad:?}");
    }
    let c = Cursor::decode("-.shop-build-1.v2").unwrap();
    assert_eq!((c.started_at, c.name.as_str()), (None, "shop-build-1.v2"));
}

#[test]
fn tower_pipelines_prints_runs_or_one_graph_and_names_bad_input() {
    let fixture = root().join("fixtures/pipelines/failed.json");
    let run = |args: &[&str]| {
        std::process::Command::new(crate::support::tower_bin())
            .args(["pipelines", "--service", "shop", "--snapshot"])
            .arg(&fixture)
            .args(args)
            .output()
            .unwrap()
    };
    let out = run(&[]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let printed: tower_shared::api::PipelineRunsAnswer =
        serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(printed.runs, pipelines("failed").runs);
    assert_eq!((printed.total, printed.next), (1, None));

    let out = run(&["--run", "shop-build-8"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let printed: tower_shared::api::PipelineRunAnswer =
        serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(printed.graph, graph("failed"));

    // Each kind of run, as the CLI prints it.
    for (fixture, name, word) in [
        ("stopping", "shop-build-12", "stopping"),
        ("pending", "shop-build-13", "pending"),
        ("timed-out", "shop-build-14", "timed-out"),
        ("retried", "shop-build-15", "running"),
    ] {
        let out = std::process::Command::new(crate::support::tower_bin())
            .args([
                "pipelines",
                "--service",
                "shop",
                "--run",
                name,
                "--snapshot",
            ])
            .arg(root().join(format!("fixtures/pipelines/{fixture}.json")))
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let printed: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(printed["run"]["outcome"], word, "{fixture}");
        assert_eq!(
            printed["tasks"],
            serde_json::to_value(&graph(fixture).tasks).unwrap()
        );
    }

    let out = run(&["--run", "shop-build-99"]);
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("shop-build-99") && stderr.contains("app-shop-cicd"),
        "{stderr}"
    );
}
