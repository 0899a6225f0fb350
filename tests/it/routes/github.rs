//! Routes answered from GitHub (pull requests, request PRs, `cicd.yaml`), its read budget per
//! caller, its webhooks, and the poller reading every app's repositories in turn.

use super::*;

#[tokio::test]
async fn pull_requests_pending_requests_and_request_prs_come_from_github() {
    let tower = frozen().await;
    let (status, body) = tower
        .get("/pull-requests?owner=acme&repo=hangar-tenants")
        .await
        .unwrap();
    assert_eq!(status, StatusCode::OK, "{body}");
    let pulls = body["pullRequests"].as_array().unwrap().clone();
    let titles: BTreeSet<&str> = pulls.iter().map(|p| p["title"].as_str().unwrap()).collect();
    for title in [
        "Create Go orders-api",
        "Create SpringBoot ledger",
        "Create NodeJS shop",
    ] {
        assert!(titles.contains(title), "{title} in {titles:?}");
    }

    // Pending: open requests and those merged in the last 30 minutes (world time).
    let (status, body) = tower
        .get("/pending-requests?owner=acme&repo=hangar-tenants")
        .await
        .unwrap();
    assert_eq!(status, StatusCode::OK, "{body}");
    let now: chrono::DateTime<chrono::Utc> = body["now"].as_str().unwrap().parse().unwrap();
    let expected: BTreeSet<String> = pulls
        .iter()
        .filter(|p| p["title"].as_str().unwrap().starts_with("Create "))
        .filter(|p| {
            p["state"] == "open"
                || p["merged_at"].as_str().is_some_and(|at| {
                    let at: chrono::DateTime<chrono::Utc> = at.parse().unwrap();
                    now - at <= chrono::Duration::minutes(30)
                })
        })
        .map(|p| {
            p["title"]
                .as_str()
                .unwrap()
                .rsplit(' ')
                .next()
                .unwrap()
                .to_owned()
        })
        .collect();
    let pending = names(&body["requests"], "name");
    assert_eq!(pending, expected);
    assert!(
        pending.contains("shop") && pending.contains("ledger"),
        "{pending:?}"
    );
    assert!(!pending.contains("orders-api"), "merged two hours ago");

    let (status, body) = tower
        .get("/request-pr?owner=acme&repo=hangar-tenants&kind=Go&name=orders-api")
        .await
        .unwrap();
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["title"], "Create Go orders-api");
    assert_eq!(body["kind"], "Go");
    assert!(body["merged_at"].is_string());

    for (query, field, code) in [
        ("owner=acme", "repo", StatusCode::BAD_REQUEST),
        ("repo=hangar-tenants", "owner", StatusCode::BAD_REQUEST),
        ("owner=acme&repo=a%2Fb", "repo", StatusCode::BAD_REQUEST),
        (
            "owner=acme&repo=no-such-repo",
            "repo",
            StatusCode::NOT_FOUND,
        ),
    ] {
        let refusal = tower
            .refusal(&format!("/pull-requests?{query}"))
            .await
            .unwrap();
        assert_eq!(refusal, (code, Some(field.to_owned())), "{query}");
    }
    for (query, field, code) in [
        ("kind=Cobol&name=x", "kind", StatusCode::BAD_REQUEST),
        ("kind=Go&name=-x", "name", StatusCode::BAD_REQUEST),
        (
            "kind=Go&name=never-requested",
            "name",
            StatusCode::NOT_FOUND,
        ),
    ] {
        let refusal = tower
            .refusal(&format!(
                "/request-pr?owner=acme&repo=hangar-tenants&{query}"
            ))
            .await
            .unwrap();
        assert_eq!(refusal, (code, Some(field.to_owned())), "{query}");
    }

    // Only the configured owner's repositories of known services (or the tenants repo),
    // refused before GitHub is asked; letter case does not make a second cache entry.
    let asked = || tower.world.platform.github_requests().len();
    let before = asked();
    for (query, field) in [
        ("owner=someone-else&repo=hangar-tenants", "owner"),
        ("owner=acme&repo=private-payroll", "repo"),
        ("owner=acme&repo=gitops-no-such-service", "repo"),
    ] {
        for route in ["pull-requests", "pending-requests"] {
            let refusal = tower.refusal(&format!("/{route}?{query}")).await.unwrap();
            assert_eq!(
                refusal,
                (StatusCode::NOT_FOUND, Some(field.to_owned())),
                "{route}?{query}"
            );
        }
    }
    let refusal = tower
        .refusal("/config/cicd?app=no-such-service")
        .await
        .unwrap();
    assert_eq!(refusal, (StatusCode::NOT_FOUND, Some("app".to_owned())));
    assert_eq!(
        asked(),
        before,
        "GitHub was asked for what Tower may not read"
    );
    let (_, lower) = tower
        .get("/pull-requests?owner=acme&repo=hangar-tenants")
        .await
        .unwrap();
    let (status, upper) = tower
        .get("/pull-requests?owner=ACME&repo=Hangar-Tenants")
        .await
        .unwrap();
    assert_eq!(status, StatusCode::OK);
    assert_eq!(upper["repo"], "acme/hangar-tenants");
    assert_eq!(upper, lower);

    // Asking again within 45 s is served from Tower's cache: GitHub sees no new request.
    let before = tower.live.github().unwrap().counters();
    let (status, _) = tower
        .get("/pull-requests?owner=acme&repo=hangar-tenants")
        .await
        .unwrap();
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        tower.live.github().unwrap().counters().requests,
        before.requests
    );
}

#[tokio::test]
async fn cicd_config_is_read_where_the_scaffold_wrote_it() {
    let tower = frozen().await;
    let (status, body) = tower.get("/config/cicd?app=orders-api").await.unwrap();
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["repo"], "acme/orders-api");
    assert_eq!(body["path"], ".glidepath/cicd.yaml");
    assert_eq!(body["environments"][0]["name"], "dev");
    assert_eq!(body["config"]["deploy"]["target"], "aws-ecs");
    assert_eq!(body["firstEnvironment"]["name"], "dev");
    assert_eq!(body["firstEnvironment"]["hasDeployStage"], true);

    let (status, body) = tower.get("/config/cicd?app=events-bus").await.unwrap();
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["repo"], "acme/gitops-infra-events-bus");

    // ledger's repositories were never created (missing provider credentials).
    for (path, code) in [
        ("/config/cicd?app=ledger", StatusCode::NOT_FOUND),
        ("/config/cicd?app=", StatusCode::BAD_REQUEST),
    ] {
        let refusal = tower.refusal(path).await.unwrap();
        assert_eq!(refusal, (code, Some("app".to_owned())), "{path}");
    }
}

#[tokio::test]
async fn github_backed_reads_have_a_budget_per_caller() {
    use tower_backend::auth::{GITHUB_READS_PER_SECOND, GITHUB_READ_BURST};
    let tower = frozen().await;
    let tool = "prs-tool-token-0123456789";
    let router = tower.router_with_tool("tool:prs", tool, &["/pull-requests"]);
    let as_guest = |path: &str| {
        crate::support::call(&router, crate::support::get_with(path, &tower.token), "")
    };
    let started = std::time::Instant::now();
    let mut asked = 0;
    let refused = loop {
        asked += 1;
        let (status, body) = as_guest("/pull-requests?owner=acme&repo=hangar-tenants").await;
        if status == StatusCode::TOO_MANY_REQUESTS {
            break body;
        }
        assert_eq!(status, StatusCode::OK, "{body}");
        assert!(
            asked <= 1_000,
            "a thousand GitHub-backed reads and no refusal"
        );
    };
    // The burst, and whatever came back while asking: nothing more.
    let back = (started.elapsed().as_secs_f64() * GITHUB_READS_PER_SECOND).floor();
    assert!(
        f64::from(asked) > GITHUB_READ_BURST && f64::from(asked) <= GITHUB_READ_BURST + back + 1.0,
        "refused at read {asked}, {back} back"
    );
    assert_eq!(refused["field"], "authorization", "{refused}");
    assert!(
        refused["error"].as_str().unwrap().contains("try again in"),
        "{refused}"
    );
    // Every GitHub-backed route shares the budget; other routes and other callers do not.
    for path in [
        "/config/cicd?app=orders-api",
        "/api/releases/promotion?service=orders-api&image=ghcr.io/acme/orders-api:1.0.0-abc1234&environment=prod",
        "/api/argocd/rollout-actions?service=orders-api&environment=prod",
    ] {
        let (status, body) = as_guest(path).await;
        assert_eq!(status, StatusCode::TOO_MANY_REQUESTS, "{path}: {body}");
    }
    let (status, _) = as_guest("/api/fleet").await;
    assert_eq!(status, StatusCode::OK);
    let (status, body) = crate::support::call(
        &router,
        crate::support::get_with("/pull-requests?owner=acme&repo=hangar-tenants", tool),
        "",
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
}

#[tokio::test]
async fn github_webhooks_are_believed_only_when_signed() {
    use tower_backend::routes::webhooks::{sign, SIGNATURE_HEADER};
    let tower = frozen().await;
    let body = json!({"action": "closed", "number": 1,
                      "repository": {"full_name": "acme/never-polled"}})
    .to_string();
    let post = |signature: Option<String>, body: String| {
        let mut request = tower
            .client()
            .post(tower.url("/webhooks/github"))
            .header("content-type", "application/json")
            .header("x-github-event", "pull_request");
        if let Some(signature) = signature {
            request = request.header(SIGNATURE_HEADER, signature);
        }
        request.body(body).send()
    };
    let asked = || {
        tower
            .world
            .platform
            .github_requests()
            .iter()
            .filter(|(_, path)| path.starts_with("/repos/acme/never-polled/"))
            .count()
    };
    for (what, signature) in [
        ("no signature", None),
        (
            "another secret",
            Some(sign(b"not the secret", body.as_bytes())),
        ),
        ("not hex", Some("sha256=xyz".to_owned())),
    ] {
        let response = post(signature, body.clone()).await.unwrap();
        assert_eq!(response.status(), StatusCode::UNAUTHORIZED, "{what}");
        let answer: Value = response.json().await.unwrap();
        assert_eq!(answer["field"], SIGNATURE_HEADER, "{what}: {answer}");
    }
    // A signed body that was changed on the way is refused too.
    let signature = sign(
        tower_backend::demo::WEBHOOK_SECRET.as_bytes(),
        body.as_bytes(),
    );
    let tampered = body.replace("never-polled", "gitops-shop");
    let response = post(Some(signature.clone()), tampered).await.unwrap();
    assert_eq!(response.status(), StatusCode::UNAUTHORIZED);
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(asked(), 0, "an unsigned webhook made Tower ask GitHub");

    // Signed: accepted, and Tower asks GitHub about that repo at once.
    let response = post(Some(signature), body.clone()).await.unwrap();
    assert_eq!(response.status(), StatusCode::ACCEPTED);
    eventually(
        Duration::from_secs(3),
        "Tower asking about the repo",
        || async { (asked() > 0).then_some(()) },
    )
    .await
    .unwrap();
    let unsigned_ping = post(None, "{}".to_owned()).await.unwrap();
    assert_eq!(unsigned_ping.status(), StatusCode::UNAUTHORIZED);
}

/// Every tracked app's source and GitOps repos are read in turn, whether or not a page
/// shows them, so an app's later pull requests reach Tower without a webhook.
#[tokio::test]
async fn every_fleet_apps_repos_are_read_in_turn() {
    let tower = Live::start(0.0).await.unwrap();
    let (_, fleet) = tower.get("/api/fleet").await.unwrap();
    let repos: BTreeSet<String> = fleet["apps"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|app| {
            let kind = app["kind"]
                .as_str()
                .and_then(tower_shared::hangar::ServiceKind::from_kind);
            tower_shared::hangar::repos(app["name"].as_str().unwrap(), kind)
        })
        .collect();
    assert!(repos.len() > 40, "{repos:?}");
    // Eight repos every 5 s poll, and a poll or two to spare.
    let limit = Duration::from_secs(5 * (repos.len() as u64 / 8 + 3));
    eventually(limit, "every fleet app's repos read", || async {
        let asked: BTreeSet<String> = tower
            .world
            .platform
            .github_requests()
            .into_iter()
            .filter_map(|(_, path)| {
                let rest = path.strip_prefix("/repos/acme/")?;
                let (repo, tail) = rest.split_once('/')?;
                (tail == "pulls").then(|| repo.to_owned())
            })
            .collect();
        repos.is_subset(&asked).then_some(())
    })
    .await
    .unwrap();
}

/// The tenants repo is the one the XRs name in `terasky.backstage.io/source-info`: a Tower
/// whose config names none still lists the requests not yet applied (no XR of their own)
/// and answers for that repo.
#[tokio::test]
async fn requests_are_read_in_the_tenants_repo_the_xrs_name() {
    let tower = frozen().await;
    let mut config = tower.world.config.clone();
    for cluster in &mut config.clusters {
        cluster.tenants_repo = None;
    }
    assert!(config.tenants_repos().is_empty());
    let unconfigured = tower_backend::live::connect(config, tower.world.clock())
        .await
        .unwrap();
    assert!(unconfigured.wait_ready(Duration::from_secs(30)).await);
    assert_eq!(unconfigured.tenants_repos(), ["acme/hangar-tenants"]);
    // ledger's request is open and it has no XR: only the tenants repo says it exists.
    eventually(Duration::from_secs(30), "ledger's request read", || async {
        let derived = unconfigured.derived();
        derived
            .provisioning
            .services
            .iter()
            .any(|s| &*s.name == "ledger")
            .then_some(())
    })
    .await
    .unwrap();
}
