//! The Pipelines tab: live runs from the watch cache, pages by cursor with each run's graph, step
//! logs read on request.

use super::*;

#[tokio::test]
async fn live_runs_come_from_the_watch_cache() {
    let tower = frozen().await;
    let (status, body) = tower.get("/live-runs?app=orders-api").await.unwrap();
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["namespace"], "app-orders-api-cicd");
    assert_eq!(body["cluster"], "dev");
    let runs = body["pipelineRuns"].as_array().unwrap();
    assert!(!runs.is_empty(), "orders-api has build and deploy runs");
    assert!(
        runs.iter()
            .all(|r| r["kind"] == "PipelineRun"
                && r["metadata"]["namespace"] == "app-orders-api-cicd")
    );
    assert!(!body["taskRuns"].as_array().unwrap().is_empty());
    assert!(body.get("stale").is_none(), "every cluster answers: {body}");

    // An InfraService's runs live in infra-<name>-cicd.
    let (status, body) = tower.get("/live-runs?app=events-bus").await.unwrap();
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["namespace"], "infra-events-bus-cicd");

    for (path, code, field) in [
        ("/live-runs?app=Orders_API", StatusCode::BAD_REQUEST, "app"),
        ("/live-runs", StatusCode::BAD_REQUEST, "app"),
        (
            "/live-runs?app=orders-api&namespace=not%20a%20namespace",
            StatusCode::BAD_REQUEST,
            "namespace",
        ),
        ("/live-runs?app=no-such-app", StatusCode::NOT_FOUND, "app"),
    ] {
        let refusal = tower.refusal(path).await.unwrap();
        assert_eq!(refusal, (code, Some(field.to_owned())), "{path}");
    }
}

/// `/api/pipelines` pages a busy app's 320 runs by cursor, filters them, answers 304 on a
/// matching ETag and names a bad parameter; `/api/pipelines/run` is one run's graph.
#[tokio::test]
async fn pipelines_are_paged_by_cursor_and_each_run_has_its_graph() {
    let tower = frozen().await;
    let (_, fleet) = tower.get("/api/fleet").await.unwrap();
    let mut busy = None;
    // (A service still only requested has no runs and no tabs yet: not known.)
    for app in fleet["apps"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|a| !a["cells"].as_array().unwrap().is_empty())
    {
        let name = app["name"].as_str().unwrap();
        let (status, page) = tower
            .get(&format!("/api/pipelines?service={name}"))
            .await
            .unwrap();
        assert_eq!(status, StatusCode::OK, "{page}");
        if page["total"].as_u64().unwrap() >= 300 {
            busy = Some((name.to_owned(), page));
            break;
        }
    }
    let (service, first) = busy.expect("an app with 300 runs or more");
    assert_eq!(
        first["runs"].as_array().unwrap().len(),
        25,
        "a page is 25 runs"
    );
    assert_eq!(first["pipelines"], json!(["build", "pull-request"]));

    // Page by page with `next`, 100 at a time: every run once, newest first.
    let total = first["total"].as_u64().unwrap();
    let mut seen: Vec<(String, String)> = Vec::new();
    let mut path = format!("/api/pipelines?service={service}&limit=100");
    for _ in 0..10 {
        let (status, page) = tower.get(&path).await.unwrap();
        assert_eq!(status, StatusCode::OK, "{page}");
        for run in page["runs"].as_array().unwrap() {
            seen.push((
                run["startedAt"].as_str().unwrap().to_owned(),
                run["name"].as_str().unwrap().to_owned(),
            ));
        }
        match page["next"].as_str() {
            Some(next) => {
                path = format!("/api/pipelines?service={service}&limit=100&continue={next}")
            }
            None => break,
        }
    }
    assert_eq!(seen.len() as u64, total);
    let mut sorted = seen.clone();
    sorted.sort_by(|a, b| b.cmp(a));
    assert_eq!(seen, sorted, "newest first, nothing twice");

    // Filters: only failed pull-request runs.
    let (_, failed) = tower
        .get(&format!(
            "/api/pipelines?service={service}&pipeline=pull-request&status=failed&limit=100"
        ))
        .await
        .unwrap();
    let runs = failed["runs"].as_array().unwrap();
    assert!(!runs.is_empty());
    assert!(runs
        .iter()
        .all(|r| r["outcome"] == "failed" && r["pipeline"] == "pull-request"));
    assert_eq!(failed["total"].as_u64().unwrap(), runs.len() as u64);
    assert_eq!(runs[0]["trigger"]["kind"], "pull-request", "{}", runs[0]);

    // One failed run's graph: the failed task marked, tasks one after another.
    let name = runs[0]["name"].as_str().unwrap();
    let path = format!("/api/pipelines/run?service={service}&run={name}");
    let response = tower.client().get(tower.url(&path)).send().await.unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    let etag = response.headers()["etag"].clone();
    let graph: Value = response.json().await.unwrap();
    let tasks = graph["tasks"].as_array().unwrap();
    let outcomes: Vec<(&str, &str, u64)> = tasks
        .iter()
        .map(|t| {
            (
                t["name"].as_str().unwrap(),
                t["outcome"].as_str().unwrap(),
                t["column"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        outcomes,
        [
            ("fetch-source", "succeeded", 0),
            ("lint", "succeeded", 1),
            ("unit-tests", "failed", 2)
        ]
    );
    assert_eq!(
        tower.revalidate(&path, &etag).await,
        StatusCode::NOT_MODIFIED
    );

    for (query, code, field) in [
        (
            format!("service={service}&limit=0"),
            StatusCode::BAD_REQUEST,
            "limit",
        ),
        (
            format!("service={service}&limit=101"),
            StatusCode::BAD_REQUEST,
            "limit",
        ),
        (
            format!("service={service}&status=fine"),
            StatusCode::BAD_REQUEST,
            "status",
        ),
        (
            format!("service={service}&continue=yesterday"),
            StatusCode::BAD_REQUEST,
            "continue",
        ),
        (
            format!("service={service}&pipeline=Build"),
            StatusCode::BAD_REQUEST,
            "pipeline",
        ),
        (
            "service=no-such-service".to_owned(),
            StatusCode::NOT_FOUND,
            "service",
        ),
    ] {
        let (status, body) = tower.get(&format!("/api/pipelines?{query}")).await.unwrap();
        assert_eq!(
            (status, body["field"].as_str()),
            (code, Some(field)),
            "{query}: {body}"
        );
    }
    let (status, body) = tower
        .get(&format!(
            "/api/pipelines/run?service={service}&run={service}-pr-0"
        ))
        .await
        .unwrap();
    assert_eq!(
        (status, body["field"].as_str()),
        (StatusCode::NOT_FOUND, Some("run")),
        "{body}"
    );
}

/// `/api/pipelines/log` reads a step's log from the cluster when asked: a failed run's whole
/// log (100,000 test lines, the failure last), a pod long gone as 410, and a running step's
/// log followed as it grows — one stream upstream, closed within 5 s of the reader going.
#[tokio::test]
async fn a_step_log_is_read_on_request_and_followed_until_the_reader_goes() {
    let tower = frozen().await;
    let service = crate::support::busy_app();
    let (_, failed) = tower
        .get(&format!(
            "/api/pipelines?service={service}&pipeline=pull-request&status=failed&limit=100"
        ))
        .await
        .unwrap();
    let failed = failed["runs"].as_array().unwrap();
    let log = |run: &str, rest: &str| {
        format!(
            "/api/pipelines/log?service={service}&run={run}&task=unit-tests&step=unit-tests{rest}"
        )
    };

    // The newest failed run (at most 90 minutes old): its pod is there, its log whole.
    let newest = failed[0]["name"].as_str().unwrap();
    let response = tower
        .client()
        .get(tower.url(&log(newest, "")))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(
        response.headers()["content-type"],
        "text/plain; charset=utf-8"
    );
    assert_eq!(response.headers()["cache-control"], "no-store");
    let text = response.text().await.unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), hangar_sim::logs::TEST_LINES + 2);
    assert!(lines[0].contains("[unit-tests] starting"), "{}", lines[0]);
    assert!(lines[lines.len() - 2].ends_with("\x1b[31mFAILED\x1b[0m"));
    assert!(
        lines[lines.len() - 1].contains("(exit code 1)"),
        "{}",
        lines[lines.len() - 1]
    );

    // The oldest (two days back): Kubernetes removed its pod, and the log with it.
    let oldest = failed.last().unwrap()["name"].as_str().unwrap();
    let (status, body) = tower.get(&log(oldest, "")).await.unwrap();
    assert_eq!(
        (status, body["field"].as_str()),
        (StatusCode::GONE, Some("task")),
        "{body}"
    );
    assert!(
        body["error"].as_str().unwrap().contains("is gone"),
        "{body}"
    );

    // Bad or unknown parameters are named.
    for (query, code, field) in [
        (
            format!("service={service}&run={newest}&step=unit-tests"),
            StatusCode::BAD_REQUEST,
            "task",
        ),
        (
            format!("service={service}&run={newest}&task=unit-tests"),
            StatusCode::BAD_REQUEST,
            "step",
        ),
        (
            format!("service={service}&run={newest}&task=deploy&step=deploy"),
            StatusCode::NOT_FOUND,
            "task",
        ),
        (
            format!("service={service}&run={newest}&task=unit-tests&step=lint"),
            StatusCode::NOT_FOUND,
            "step",
        ),
        (
            format!("service={service}&run={newest}&task=unit-tests&step=unit-tests&follow=maybe"),
            StatusCode::BAD_REQUEST,
            "follow",
        ),
        (
            format!("service={service}&run=no-such-run&task=unit-tests&step=unit-tests"),
            StatusCode::NOT_FOUND,
            "run",
        ),
    ] {
        let (status, body) = tower
            .get(&format!("/api/pipelines/log?{query}"))
            .await
            .unwrap();
        assert_eq!(
            (status, body["field"].as_str()),
            (code, Some(field)),
            "{query}: {body}"
        );
    }

    // The next pull-request run, 170 s in: its unit tests have run 10 s and go on.
    let running = tower.next_pr_run(&service, 170).await.unwrap();
    let cluster = "dev";
    let streams = || tower.world.served.api_requests()[cluster];
    let before = streams();
    let mut response = tower
        .client()
        .get(tower.url(&log(&running, "&follow=true")))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    let mut read = String::new();
    read_lines(&mut response, &mut read, 1 + 12_500).await;
    assert_eq!(
        read.lines().count(),
        1 + 12_500,
        "the first line and 10 s of tests at 1,250 a second"
    );
    // Two more world seconds: 2,500 more tests arrive on the same stream.
    tower.advance_world(2);
    read_lines(&mut response, &mut read, 1 + 15_000).await;
    let during = streams();
    assert_eq!(
        during.log_streams - before.log_streams,
        1,
        "one stream upstream"
    );
    assert_eq!(during.log_streams_open, 1);
    let metrics = tower
        .client()
        .get(tower.url("/metrics"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(metrics.contains("tower_log_streams_open 1"), "{metrics}");

    // The reader goes: the upstream stream closes within 5 s.
    drop(response);
    crate::support::eventually(
        Duration::from_secs(5),
        "the upstream log stream closed",
        || async { (streams().log_streams_open == 0).then_some(()) },
    )
    .await
    .unwrap();
    assert_eq!(
        streams().log_streams - before.log_streams,
        1,
        "and no other opened"
    );
}

/// Reads `response` into `read` until it holds `lines` whole lines; each chunk within 5 s.
async fn read_lines(response: &mut reqwest::Response, read: &mut String, lines: usize) {
    while !read.ends_with('\n') || read.lines().count() < lines {
        let chunk = tokio::time::timeout(Duration::from_secs(5), response.chunk())
            .await
            .expect("more of the log within 5 s")
            .unwrap()
            .expect("the log goes on");
        read.push_str(std::str::from_utf8(&chunk).unwrap());
    }
}
