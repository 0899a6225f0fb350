//! The simulated Hangar platform, through real clients: kubectl against `tower demo`'s
//! kubeconfig, and a kube-rs watcher against an in-process platform whose clock the test moves.

use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};
use futures::StreamExt;
use hangar_sim::clock::Clock;
use hangar_sim::platform::Platform;
use hangar_sim::stories::app::AppStory;
use hangar_sim::stories::Story;
use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind};
use kube::runtime::watcher;
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, BufReader};

use crate::support::{Demo, ReadJson as _};

/// The kubectl the tests drive: `$KUBECTL` (`cargo xtask test` sets it to the one it found
/// or installed), else `kubectl` on `PATH`.
pub(crate) fn kubectl_path() -> std::path::PathBuf {
    let path = std::env::var_os("KUBECTL").map_or_else(
        || {
            std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())
                .map(|dir| dir.join("kubectl"))
                .find(|p| p.is_file())
                .unwrap_or_else(|| "kubectl".into())
        },
        std::path::PathBuf::from,
    );
    assert!(
        path.is_file(),
        "kubectl is missing ({}): the simulator's kubectl tests need it; `cargo xtask test` installs it",
        path.display()
    );
    path
}

async fn kubectl(demo: &Demo, args: &[&str]) -> String {
    let out = tokio::process::Command::new(kubectl_path())
        .arg("--kubeconfig")
        .arg(&demo.kubeconfig)
        .args(args)
        .output()
        .await
        .unwrap();
    assert!(
        out.status.success(),
        "kubectl {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

#[tokio::test]
async fn kubectl_lists_gets_and_watches_the_simulated_world() {
    // At 400× a world minute passes in 0.15 s: the NodeJS app's build starts within seconds.
    let demo = Demo::start_with(&["--speed", "400"]).await.unwrap();
    let mut build = None;
    for _ in 0..100 {
        let json: Value = serde_json::from_str(
            &kubectl(
                &demo,
                &["get", "pipelineruns.tekton.dev", "-A", "-o", "json"],
            )
            .await,
        )
        .unwrap();
        assert_eq!(json["kind"], "List");
        build = json["items"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| {
                r["metadata"]["labels"]["tekton.dev/pipeline"] == "build"
                    && r["metadata"]["namespace"] == "app-shop-cicd"
            })
            .cloned();
        if build.is_some() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let build = build.expect("the NodeJS story's build run appears");
    assert_eq!(build["metadata"]["name"], "shop-build-7hq2x");

    // Plain `kubectl get` (it asks for a Table, gets a list, and prints columns).
    let table = kubectl(&demo, &["get", "nodejs.catalog.hangar.io", "-n", "tenants"]).await;
    assert!(table.contains("shop"), "{table}");
    let one: Value = serde_json::from_str(
        &kubectl(
            &demo,
            &[
                "get",
                "nodejs.catalog.hangar.io",
                "shop",
                "-n",
                "tenants",
                "-o",
                "json",
            ],
        )
        .await,
    )
    .unwrap();
    assert_eq!(one["metadata"]["name"], "shop");
    assert!(one["status"]["conditions"]
        .as_array()
        .is_some_and(|c| !c.is_empty()));

    // `kubectl get -w` streams changes as the world moves on.
    let mut watch = tokio::process::Command::new(kubectl_path())
        .arg("--kubeconfig")
        .arg(&demo.kubeconfig)
        .args([
            "get",
            "taskruns.tekton.dev",
            "-n",
            "app-shop-cicd",
            "-w",
            "-o",
            "name",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(watch.stdout.take().unwrap()).lines();
    let mut seen = std::collections::BTreeSet::new();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    while seen.len() < 7 && tokio::time::Instant::now() < deadline {
        match tokio::time::timeout(Duration::from_secs(5), lines.next_line()).await {
            Ok(Ok(Some(line))) => {
                seen.insert(line);
            }
            _ => break,
        }
    }
    assert!(
        seen.iter()
            .any(|l| l.contains("shop-build-7hq2x-update-gitops")),
        "the watch saw {seen:?}"
    );
}

fn taskruns() -> ApiResource {
    ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("tekton.dev", "v1", "TaskRun"),
        "taskruns",
    )
}

#[tokio::test]
async fn a_kube_rs_watcher_sees_changes_and_relists_after_410() {
    let start: DateTime<Utc> = "2026-11-30T08:00:00Z".parse().unwrap();
    let clock = Clock::new(start, 0.0);
    let stories: Vec<Box<dyn Story>> = vec![Box::new(AppStory::new("shop", "NodeJS", start))];
    let platform = Arc::new(Platform::new(clock.clone(), &["dev"], stories));
    let served = Arc::clone(&platform)
        .serve(
            hangar_sim::kube_api::Config {
                bookmark_every: Duration::from_millis(200),
                ..Default::default()
            },
            Duration::from_secs(3600),
        )
        .await
        .unwrap();
    let config = kube::Config::new(served.url("dev").unwrap().parse().unwrap());
    let client = kube::Client::try_from(config).unwrap();
    let api: Api<DynamicObject> = Api::namespaced_with(client, "app-shop-cicd", &taskruns());
    let mut events = watcher(api, watcher::Config::default()).boxed();

    // Nothing yet: the initial list is empty.
    assert_eq!(until_init_done(&mut events).await, 0);

    // The build starts 545 s in: its first TaskRun appears, then more.
    clock.advance(chrono::Duration::seconds(550));
    platform.tick();
    let first = match next(&mut events).await {
        watcher::Event::Apply(o) => o,
        other => panic!("expected the first TaskRun, got {other:?}"),
    };
    assert_eq!(
        first.metadata.name.as_deref(),
        Some("shop-build-7hq2x-fetch-source")
    );
    clock.advance(chrono::Duration::seconds(60));
    platform.tick();
    let mut names = Vec::new();
    while names.len() < 2 {
        if let watcher::Event::Apply(o) = next(&mut events).await {
            names.push(o.metadata.name.unwrap());
        }
    }
    assert!(
        names.contains(&"shop-build-7hq2x-unit-tests".to_owned()),
        "{names:?}"
    );

    // A compaction ends the watch; resuming from the old version gets 410 Gone, and the
    // watcher lists again, seeing everything that exists now.
    platform.store("dev").unwrap().compact();
    clock.advance(chrono::Duration::seconds(60));
    platform.tick();
    let listed = until_init_done(&mut events).await;
    // 670 s in: tasks started at 545, 595 and 645 s; the fourth starts at 695 s.
    assert_eq!(
        listed, 3,
        "fetch-source, unit-tests and build-image after the re-list"
    );
    drop(served);
}

type Events =
    futures::stream::BoxStream<'static, Result<watcher::Event<DynamicObject>, watcher::Error>>;

/// The next event, skipping the watcher's errors (a 410 is reported, then handled).
async fn next(events: &mut Events) -> watcher::Event<DynamicObject> {
    loop {
        match tokio::time::timeout(Duration::from_secs(10), events.next()).await {
            Ok(Some(Ok(event))) => return event,
            Ok(Some(Err(err))) => eprintln!("watcher reported: {err}"),
            Ok(None) => panic!("the watcher ended"),
            Err(_) => panic!("no watch event within 10 s"),
        }
    }
}

/// Reads up to the end of a (re-)list and returns how many objects it carried.
async fn until_init_done(events: &mut Events) -> usize {
    let mut listed = 0;
    let mut started = false;
    loop {
        match next(events).await {
            watcher::Event::Init => started = true,
            watcher::Event::InitApply(_) if started => listed += 1,
            watcher::Event::InitDone if started => return listed,
            _ => {}
        }
    }
}

#[test]
fn the_nodejs_story_changes_objects_in_order_and_tower_follows_it() {
    use tower_shared::provisioning::{derive_provisioning, Group, StepStatus};
    use tower_shared::snapshot::Snapshot;

    let start: DateTime<Utc> = "2026-11-30T08:00:00Z".parse().unwrap();
    let clock = Clock::new(start, 0.0);
    let stories: Vec<Box<dyn Story>> = vec![Box::new(AppStory::new("shop", "NodeJS", start))];
    let platform = Platform::new(clock.clone(), &["dev"], stories);
    let store = platform.store("dev").unwrap();

    let mut done_before = 0;
    let mut group = None;
    for _ in 0..=20 {
        platform.tick();
        let snapshot = Snapshot::from_json(
            &serde_json::json!({"now": clock.now(), "clusters": {"dev": store.objects()}})
                .to_string(),
        )
        .unwrap();
        let derived = derive_provisioning(&snapshot);
        let shop = derived
            .services
            .iter()
            .find(|s| &*s.name == "shop")
            .unwrap();
        let done = crate::provisioning::done_steps(shop);
        assert!(
            done >= done_before,
            "at {}: {done} steps done after {done_before}",
            clock.now()
        );
        assert!(
            shop.steps.iter().all(|s| s.status != StepStatus::Failed),
            "{shop:?}"
        );
        done_before = done;
        group = Some(shop.group);
        clock.advance(chrono::Duration::minutes(1));
    }
    assert_eq!(done_before, 10, "every step done by the end of the story");
    assert_eq!(group, Some(Group::Finished));

    // The changes themselves, in the order the controllers make them.
    let milestone = |pred: &dyn Fn(&hangar_sim::store::Event) -> bool| {
        store
            .history()
            .iter()
            .position(|e| pred(e))
            .expect("milestone reached")
    };
    let condition = |e: &hangar_sim::store::Event, kind: &str, type_: &str| {
        e.object["kind"] == kind
            && e.object["status"]["conditions"]
                .as_array()
                .is_some_and(|c| {
                    c.iter()
                        .any(|c| c["type"] == type_ && c["status"] == "True")
                })
    };
    let order = [
        milestone(&|e| e.object["kind"] == "NodeJS"),
        milestone(&|e| condition(e, "NodeJS", "DevClusterReady")),
        milestone(&|e| condition(e, "Repository", "Ready")),
        milestone(&|e| condition(e, "NodeJS", "CicdOnboarded")),
        milestone(&|e| condition(e, "SecretStore", "Ready")),
        milestone(&|e| {
            e.object["kind"] == "PipelineRun"
                && e.object["metadata"]["labels"]["tekton.dev/pipeline"] == "build"
        }),
        milestone(&|e| {
            condition(e, "PipelineRun", "Succeeded")
                && e.object["metadata"]["labels"]["tekton.dev/pipeline"] == "build"
        }),
        milestone(&|e| e.object["kind"] == "Rollout"),
        milestone(&|e| e.object["kind"] == "Rollout" && e.object["status"]["phase"] == "Healthy"),
    ];
    assert!(
        order.windows(2).all(|w| w[0] < w[1]),
        "milestones out of order: {order:?}"
    );
}

async fn github_platform() -> (Arc<Platform>, hangar_sim::platform::Served, String) {
    let start: DateTime<Utc> = "2026-11-30T08:00:00Z".parse().unwrap();
    let clock = Clock::new(start, 0.0);
    // The XR is created 20 minutes in; its request PR opens 12 minutes before that.
    let story = AppStory::new("shop", "NodeJS", start + chrono::Duration::minutes(20));
    let (platform, served) = serve_dev_cluster(clock, vec![Box::new(story)]).await;
    let url = format!("http://{}", served.github);
    (platform, served, url)
}

/// A platform with a `dev` cluster and `stories`, served on loopback; it moves only when the
/// test moves `clock` and ticks it.
async fn serve_dev_cluster(
    clock: Clock,
    stories: Vec<Box<dyn Story>>,
) -> (Arc<Platform>, hangar_sim::platform::Served) {
    let platform = Arc::new(Platform::new(clock, &["dev"], stories));
    let served = Arc::clone(&platform)
        .serve(
            hangar_sim::kube_api::Config::default(),
            Duration::from_secs(3600),
        )
        .await
        .unwrap();
    (platform, served)
}

#[tokio::test]
async fn octocrab_sees_the_request_pr_open_then_merge() {
    let (platform, _served, url) = github_platform().await;
    let octo = octocrab::Octocrab::builder()
        .base_uri(url.as_str())
        .unwrap()
        .build()
        .unwrap();
    let list = || async {
        octo.pulls("acme", "hangar-tenants")
            .list()
            .state(octocrab::params::State::All)
            .send()
            .await
            .unwrap()
            .items
    };
    assert!(
        list().await.is_empty(),
        "no request before the story starts"
    );

    platform.clock().advance(chrono::Duration::minutes(9));
    let open = list().await;
    assert_eq!(open.len(), 1);
    assert_eq!(open[0].title.as_deref(), Some("Create NodeJS shop"));
    assert!(open[0].merged_at.is_none());

    platform.clock().advance(chrono::Duration::minutes(8));
    let merged = list().await;
    assert!(
        merged[0].merged_at.is_some(),
        "merged 4 minutes before the XR"
    );
    let search = octo
        .search()
        .issues_and_pull_requests("repo:acme/hangar-tenants is:pr in:title \"Create NodeJS shop\"")
        .send()
        .await
        .unwrap();
    assert_eq!(search.items.len(), 1);
}

#[tokio::test]
async fn github_etags_writes_and_conflicts() {
    let (_platform, _served, url) = github_platform().await;
    let client = reqwest::Client::new();
    let get = |path: &str, etag: Option<&str>| {
        let mut request = client.get(format!("{url}{path}"));
        if let Some(etag) = etag {
            request = request.header("If-None-Match", etag);
        }
        request.send()
    };
    let first = get("/repos/acme/hangar-tenants/pulls?state=all", None)
        .await
        .unwrap();
    assert_eq!(first.status(), 200);
    let etag = first.headers()["etag"].to_str().unwrap().to_owned();
    let remaining: u32 = first.headers()["x-ratelimit-remaining"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    let again = get("/repos/acme/hangar-tenants/pulls?state=all", Some(&etag))
        .await
        .unwrap();
    assert_eq!(again.status(), 304);
    let after: u32 = again.headers()["x-ratelimit-remaining"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert_eq!(after, remaining, "a 304 costs no budget");

    // A branch, a file on it, an update with a stale sha, and a pull request from it.
    let post = |path: &str, body: Value| client.post(format!("{url}{path}")).json(&body).send();
    let put = |path: &str, body: Value| client.put(format!("{url}{path}")).json(&body).send();
    let main: Value = get("/repos/acme/hangar-tenants/git/ref/heads/main", None)
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let created = post(
        "/repos/acme/hangar-tenants/git/refs",
        serde_json::json!({"ref": "refs/heads/tower/edit", "sha": main["object"]["sha"]}),
    )
    .await
    .unwrap();
    assert_eq!(created.status(), 201);
    let again = post(
        "/repos/acme/hangar-tenants/git/refs",
        serde_json::json!({"ref": "refs/heads/tower/edit", "sha": main["object"]["sha"]}),
    )
    .await
    .unwrap();
    assert_eq!(again.status(), 422);
    let file = put(
        "/repos/acme/hangar-tenants/contents/tenants/dev/x.yaml",
        serde_json::json!({"message": "add", "content": "a2luZDogWA==", "branch": "tower/edit"}),
    )
    .await
    .unwrap();
    assert_eq!(file.status(), 201);
    let stale = put("/repos/acme/hangar-tenants/contents/tenants/dev/x.yaml",
        serde_json::json!({"message": "edit", "content": "a2luZDogWQ==", "branch": "tower/edit", "sha": "0000"})).await.unwrap();
    assert_eq!(stale.status(), 409);
    let read: Value = get(
        "/repos/acme/hangar-tenants/contents/tenants/dev/x.yaml?ref=tower/edit",
        None,
    )
    .await
    .unwrap()
    .json()
    .await
    .unwrap();
    assert_eq!(read["content"].as_str().unwrap().trim(), "a2luZDogWA==");
    let pr = post(
        "/repos/acme/hangar-tenants/pulls",
        serde_json::json!({"title": "Edit X", "head": "tower/edit", "base": "main"}),
    )
    .await
    .unwrap();
    assert_eq!(pr.status(), 201);
    let pr: Value = pr.json().await.unwrap();
    assert_eq!(pr["state"], "open");
    let duplicate = post(
        "/repos/acme/hangar-tenants/pulls",
        serde_json::json!({"title": "Edit X", "head": "tower/edit", "base": "main"}),
    )
    .await
    .unwrap();
    assert_eq!(duplicate.status(), 422);
}

#[tokio::test]
async fn github_knows_story_repositories_only() {
    let (platform, _served, url) = github_platform().await;
    platform.clock().advance(chrono::Duration::minutes(30));
    let repo: Value = reqwest::get(format!("{url}/repos/acme/gitops-shop"))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(repo["full_name"], "acme/gitops-shop");
    assert_eq!(repo["default_branch"], "main");
    let missing = reqwest::get(format!("{url}/repos/acme/nothing-here"))
        .await
        .unwrap();
    assert_eq!(missing.status(), 404);
}

/// Tower's derivation of the simulated world at the clock's `now`, for one service.
fn derive_now(platform: &Platform, service: &str) -> tower_shared::provisioning::ServiceProgress {
    let objects = platform.store("dev").unwrap().objects();
    // A catalog that has every service in it.
    let catalog: Vec<Value> = ["bus", "cache"]
        .iter()
        .map(|n| serde_json::json!({"kind": "Component", "metadata": {"name": n}}))
        .collect();
    let snapshot = tower_shared::snapshot::Snapshot::from_json(
        &serde_json::json!({"now": platform.clock().now(), "clusters": {"dev": objects}, "catalog": catalog})
            .to_string(),
    )
    .unwrap();
    tower_shared::provisioning::derive_provisioning(&snapshot)
        .services
        .into_iter()
        .find(|s| &*s.name == service)
        .unwrap()
}

#[test]
fn an_infra_service_without_its_environment_file_stalls_and_with_it_finishes() {
    use hangar_sim::stories::infra::InfraStory;
    use tower_shared::provisioning::{Group, StepId, StepStatus};

    let start: DateTime<Utc> = "2026-11-30T08:00:00Z".parse().unwrap();
    let story = |name: &str, environment_added| -> Box<dyn Story> {
        Box::new(InfraStory {
            name: name.to_owned(),
            created: start,
            environment_added,
        })
    };
    let clock = Clock::new(start, 0.0);
    let platform = Platform::new(
        clock.clone(),
        &["dev"],
        vec![story("bus", None), story("cache", Some(600))],
    );

    // 20 minutes in: cache's environment came up at 14 minutes; bus still has none.
    clock.advance(chrono::Duration::minutes(20));
    platform.tick();
    let bus = derive_now(&platform, "bus");
    assert_eq!(bus.group, Group::InFlight);
    assert_eq!(bus.steps.len(), 8);
    let env = bus
        .steps
        .iter()
        .find(|s| s.id == StepId::FirstEnvironment)
        .unwrap();
    assert_eq!(env.status, StepStatus::Running);
    assert!(env
        .detail
        .as_deref()
        .unwrap()
        .contains("glidepath/envs/dev.yaml in gitops-infra-bus"));
    let cache = derive_now(&platform, "cache");
    assert_eq!(
        cache.group,
        Group::Finished,
        "{:#?}",
        cache
            .steps
            .iter()
            .map(|s| (s.id, s.status, s.detail.clone()))
            .collect::<Vec<_>>()
    );

    clock.advance(chrono::Duration::hours(4));
    platform.tick();
    assert_eq!(derive_now(&platform, "bus").group, Group::Stalled);
}

#[tokio::test]
async fn argo_cd_serves_the_argocd_apps_instance() {
    use hangar_sim::stories::infra::InfraStory;

    let start: DateTime<Utc> = "2026-11-30T08:00:00Z".parse().unwrap();
    let clock = Clock::new(start + chrono::Duration::hours(1), 0.0);
    let story: Box<dyn Story> = Box::new(InfraStory {
        name: "cache".to_owned(),
        created: start,
        environment_added: Some(600),
    });
    let (_platform, served) = serve_dev_cluster(clock, vec![story]).await;
    let url = format!("http://{}", served.argocd);
    let list: Value = reqwest::get(format!("{url}/api/v1/applications"))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let names: Vec<&str> = list["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|a| a["metadata"]["name"].as_str())
        .collect();
    // Only the argocd-apps instance: the platform's cache-cicd app lives in `argocd`.
    assert_eq!(names, ["cache-dev"]);
    let app: Value = reqwest::get(format!("{url}/api/v1/applications/cache-dev"))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(app["status"]["health"]["status"], "Healthy");
    let missing = reqwest::get(format!("{url}/api/v1/applications/nope"))
        .await
        .unwrap();
    assert_eq!(missing.status(), 404);
    let body: Value = missing.json().await.unwrap();
    assert_eq!(body["code"], 5);
    assert!(body["message"]
        .as_str()
        .unwrap()
        .contains("\"nope\" not found"));
    let none: Value = reqwest::get(format!("{url}/api/v1/applications?projects=other"))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert!(none["items"].as_array().unwrap().is_empty());
}

#[tokio::test]
async fn pod_logs_are_served_and_follow_streams_until_the_step_ends() {
    let start: DateTime<Utc> = "2026-11-30T08:00:00Z".parse().unwrap();
    let clock = Clock::new(start, 0.0);
    let platform = Arc::new(Platform::new(
        clock.clone(),
        &["dev"],
        vec![Box::new(AppStory::new("shop", "NodeJS", start))],
    ));
    let served = Arc::clone(&platform)
        .serve(
            hangar_sim::kube_api::Config::default(),
            Duration::from_millis(100),
        )
        .await
        .unwrap();
    // The build's first task starts at 545 s and ends at 590 s.
    clock.advance(chrono::Duration::seconds(556));
    platform.tick();
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = dir.path().join("kubeconfig");
    served.write_kubeconfig(&kubeconfig).unwrap();
    let pod = "shop-build-7hq2x-fetch-source-pod";
    let out = tokio::process::Command::new(kubectl_path())
        .arg("--kubeconfig")
        .arg(&kubeconfig)
        .args([
            "logs",
            "-n",
            "app-shop-cicd",
            pod,
            "-c",
            "step-fetch-source",
        ])
        .output()
        .await
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    assert_eq!(
        text.lines().collect::<Vec<_>>(),
        [
            "\x1b[1m[fetch-source] starting\x1b[0m",
            "[fetch-source] working (1)",
            "[fetch-source] working (2)"
        ]
    );

    // Follow: the stream grows as world time passes and ends with the step.
    let url = format!(
        "{}/api/v1/namespaces/app-shop-cicd/pods/{pod}/log?container=step-fetch-source&follow=true&timestamps=true",
        served.url("dev").unwrap()
    );
    let response = reqwest::get(&url).await.unwrap();
    assert_eq!(response.headers()["content-type"], "text/plain");
    let reader = tokio::spawn(async move { response.text().await.unwrap() });
    // Once the stream is open, the world moves on past the step's end.
    crate::support::eventually(Duration::from_secs(5), "the log followed", || async {
        (served.api_requests()["dev"].log_streams_open == 1).then_some(())
    })
    .await
    .unwrap();
    clock.advance(chrono::Duration::seconds(60));
    let followed = tokio::time::timeout(Duration::from_secs(10), reader)
        .await
        .expect("the stream ends")
        .unwrap();
    let last = followed.lines().last().unwrap();
    assert!(
        last.ends_with("\x1b[32m[fetch-source] done\x1b[0m"),
        "{followed}"
    );
    assert!(
        last.starts_with("2026-11-30T08:09:50"),
        "timestamps are world time: {last}"
    );
    assert!(followed.lines().count() > 3);

    let bad = reqwest::get(format!(
        "{}/api/v1/namespaces/app-shop-cicd/pods/{pod}/log?container=nope",
        served.url("dev").unwrap()
    ))
    .await
    .unwrap();
    assert_eq!(bad.status(), 400);
}

#[tokio::test]
async fn backstage_signs_guest_tokens_serves_the_catalog_and_its_ingestor_task() {
    use hangar_sim::backstage::{INGESTOR_TASK, RUN_TAKES, STATIC_TOKEN};

    // `shop`'s catalog-info.yaml is readable 80 s after its XR; the clock stands 2 minutes
    // after an ingestor run (on the 10-minute grid), so only a triggered run can show it.
    let start: DateTime<Utc> = "2026-11-30T08:00:00Z".parse().unwrap();
    let clock = Clock::new(start + chrono::Duration::seconds(120), 0.0);
    let story: Box<dyn Story> = Box::new(AppStory::new("shop", "NodeJS", start));
    let (_platform, served) = serve_dev_cluster(clock, vec![story]).await;
    let api = format!("http://{}/api", served.backstage);
    let http = reqwest::Client::new();

    // A guest token, checked by an independent JWT library against the JWKS.
    let refresh: Value = http
        .get(format!("{api}/auth/guest/refresh"))
        .read_json()
        .await;
    let token = refresh["backstageIdentity"]["token"].as_str().unwrap();
    let jwks: jsonwebtoken::jwk::JwkSet = serde_json::from_value(
        http.get(format!("{api}/auth/.well-known/jwks.json"))
            .read_json()
            .await,
    )
    .unwrap();
    let header = jsonwebtoken::decode_header(token).unwrap();
    assert_eq!(header.alg, jsonwebtoken::Algorithm::ES256);
    let jwk = jwks.find(header.kid.as_deref().unwrap()).unwrap();
    let mut validation = jsonwebtoken::Validation::new(jsonwebtoken::Algorithm::ES256);
    validation.set_audience(&["backstage"]);
    let claims = jsonwebtoken::decode::<Value>(
        token,
        &jsonwebtoken::DecodingKey::from_jwk(jwk).unwrap(),
        &validation,
    )
    .unwrap()
    .claims;
    assert_eq!(claims["sub"], "user:development/guest");
    assert_eq!(claims["iss"], format!("{api}/auth"));
    // A token signed by anyone else fails that check.
    let mut forged = token.to_owned();
    forged.replace_range(forged.len() - 4.., "AAAA");
    assert!(jsonwebtoken::decode::<Value>(
        &forged,
        &jsonwebtoken::DecodingKey::from_jwk(jwk).unwrap(),
        &validation
    )
    .is_err());

    let by_name = |bearer: Option<String>| {
        let mut request = http.get(format!(
            "{api}/catalog/entities/by-name/component/default/shop"
        ));
        if let Some(bearer) = bearer {
            request = request.bearer_auth(bearer);
        }
        request.send()
    };
    let trigger = |bearer: &str, id: &str| {
        http.post(format!(
            "{api}/catalog/.backstage/scheduler/v1/tasks/{id}/trigger"
        ))
        .bearer_auth(bearer)
        .send()
    };

    // Without a token, or with a forged one: 401 in Backstage's error shape.
    let anonymous = by_name(None).await.unwrap();
    assert_eq!(anonymous.status(), 401);
    let body: Value = anonymous.json().await.unwrap();
    assert_eq!(body["error"]["name"], "AuthenticationError");
    assert_eq!(by_name(Some(forged.clone())).await.unwrap().status(), 401);
    assert_eq!(trigger(&forged, INGESTOR_TASK).await.unwrap().status(), 401);

    // Not ingested yet.
    let missing = by_name(Some(token.to_owned())).await.unwrap();
    assert_eq!(missing.status(), 404);
    let body: Value = missing.json().await.unwrap();
    assert_eq!(body["error"]["name"], "NotFoundError");
    assert_eq!(
        body["error"]["message"],
        "No entity named 'shop' found, with kind 'component' in namespace 'default'"
    );

    // Trigger: 200, then 409 while the run lasts, 404 for an unknown task.
    assert_eq!(trigger(token, INGESTOR_TASK).await.unwrap().status(), 200);
    let again = trigger(STATIC_TOKEN, INGESTOR_TASK).await.unwrap();
    assert_eq!(again.status(), 409);
    let body: Value = again.json().await.unwrap();
    assert_eq!(
        body["error"]["message"],
        format!("Task {INGESTOR_TASK} is currently running")
    );
    assert_eq!(trigger(token, "nope").await.unwrap().status(), 404);

    // After the run the entity is there, for users and for tools.
    tokio::time::sleep(RUN_TAKES + Duration::from_millis(200)).await;
    let found: Value = by_name(Some(token.to_owned()))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(found["kind"], "Component");
    assert_eq!(
        found["metadata"]["annotations"]["backstage.io/kubernetes-id"],
        "shop"
    );
    assert_eq!(
        by_name(Some(STATIC_TOKEN.to_owned()))
            .await
            .unwrap()
            .status(),
        200
    );
    assert_eq!(trigger(token, INGESTOR_TASK).await.unwrap().status(), 200);
}

#[tokio::test]
async fn demo_serves_a_scenario_file_and_the_same_seed_gives_the_same_fleet() {
    let fixture = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../fixtures/provisioning/nodejs-5-building.json"
    );
    let demo = Demo::start_with(&["--scenario", fixture, "--speed", "0"])
        .await
        .unwrap();
    // The captured world, through kubectl and through Tower.
    let runs = kubectl(
        &demo,
        &["get", "pipelineruns.tekton.dev", "-A", "-o", "name"],
    )
    .await;
    assert!(runs.contains("shop-build-"), "{runs}");
    let snapshot: Value = demo.get_json("api/snapshot?service=shop").await.unwrap();
    let captured: Value = serde_json::from_str(&std::fs::read_to_string(fixture).unwrap()).unwrap();
    assert_eq!(
        snapshot["now"], captured["now"],
        "the clock starts at the capture"
    );
    drop(demo);

    let fleet_of = |seed: &'static str| async move {
        let demo = Demo::start_with(&["--seed", seed, "--speed", "0"])
            .await
            .unwrap();
        let fleet: Value = demo.get_json("api/fleet").await.unwrap();
        let mut names: Vec<String> = fleet["apps"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| format!("{} {}", a["name"], a["kind"]))
            .collect();
        names.sort();
        names
    };
    let (a, b, c) = (
        fleet_of("7").await,
        fleet_of("7").await,
        fleet_of("8").await,
    );
    assert_eq!(a, b);
    assert_ne!(a, c);
}

/// A kube-rs client for the platform's `dev` cluster (the identity of its kubeconfig).
async fn dev_client(served: &hangar_sim::platform::Served) -> kube::Client {
    let config = kube::Config::new(served.url("dev").unwrap().parse().unwrap());
    kube::Client::try_from(config).unwrap()
}

fn api_status(err: kube::Error) -> kube::core::Status {
    match err {
        kube::Error::Api(status) => *status,
        other => panic!("expected the API's Status, got {other}"),
    }
}

#[tokio::test]
async fn the_simulated_api_server_refuses_every_write_and_counts_it() {
    let start: DateTime<Utc> = "2026-11-30T08:00:00Z".parse().unwrap();
    let story = AppStory::new("shop", "NodeJS", start);
    let (_platform, served) =
        serve_dev_cluster(Clock::new(start, 0.0), vec![Box::new(story)]).await;
    let client = dev_client(&served).await;
    let runs: Api<DynamicObject> =
        Api::namespaced_with(client.clone(), "app-shop-cicd", &taskruns());
    let object: DynamicObject = serde_json::from_value(serde_json::json!({
        "apiVersion": "tekton.dev/v1", "kind": "TaskRun",
        "metadata": {"name": "written", "namespace": "app-shop-cicd"}}))
    .unwrap();
    let created = runs.create(&Default::default(), &object).await.unwrap_err();
    let status = api_status(created);
    assert_eq!(
        (status.code, status.reason.as_str()),
        (405, "MethodNotAllowed")
    );
    let deleted = runs
        .delete("anything", &Default::default())
        .await
        .unwrap_err();
    assert_eq!(api_status(deleted).code, 405);
    let patch = kube::api::Patch::Merge(serde_json::json!({"metadata": {"labels": {"a": "b"}}}));
    let patched = runs
        .patch("anything", &Default::default(), &patch)
        .await
        .unwrap_err();
    assert_eq!(api_status(patched).code, 405);
    assert_eq!(served.writes(), 3);
    assert_eq!(served.api_requests()["dev"].writes, 3);
    // Reads still work, and the counts are in /metrics for a test in another process.
    assert!(runs.list(&Default::default()).await.is_ok());
    let metrics = reqwest::get(format!("{}/metrics", served.url("dev").unwrap()))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(
        metrics.contains("hangar_sim_requests_total{verb=\"write\"} 3\n"),
        "{metrics}"
    );
    assert!(
        metrics.contains("hangar_sim_requests_total{verb=\"list\"} 1\n"),
        "{metrics}"
    );
}

#[tokio::test]
async fn rbac_rules_forbid_a_kind_across_the_cluster_or_in_one_namespace() {
    use hangar_sim::kube_api::Forbidden;
    let start: DateTime<Utc> = "2026-11-30T08:00:00Z".parse().unwrap();
    let story = AppStory::new("shop", "NodeJS", start);
    let (_platform, served) =
        serve_dev_cluster(Clock::new(start, 0.0), vec![Box::new(story)]).await;
    let client = dev_client(&served).await;
    served.access("dev").unwrap().forbid(Forbidden {
        group: "tekton.dev".into(),
        plural: "taskruns".into(),
        namespace: Some("app-shop-cicd".into()),
    });
    let everywhere: Api<DynamicObject> = Api::all_with(client.clone(), &taskruns());
    let status = api_status(everywhere.list(&Default::default()).await.unwrap_err());
    assert_eq!((status.code, status.reason.as_str()), (403, "Forbidden"));
    assert_eq!(
        status.message,
        "taskruns.tekton.dev is forbidden: User \"tower-reader\" cannot list resource \"taskruns\" \
         in API group \"tekton.dev\" at the cluster scope"
    );
    let there: Api<DynamicObject> =
        Api::namespaced_with(client.clone(), "app-shop-cicd", &taskruns());
    assert_eq!(
        api_status(there.list(&Default::default()).await.unwrap_err()).code,
        403
    );
    assert_eq!(api_status(there.get("any").await.unwrap_err()).code, 403);
    // Another namespace is readable; so is everything once the rule is lifted.
    let elsewhere: Api<DynamicObject> =
        Api::namespaced_with(client.clone(), "app-shop-dev", &taskruns());
    assert!(elsewhere.list(&Default::default()).await.is_ok());
    assert_eq!(served.api_requests()["dev"].forbidden, 3);
    served.access("dev").unwrap().allow_all();
    assert!(everywhere.list(&Default::default()).await.is_ok());
}

#[tokio::test]
async fn a_hung_api_server_accepts_and_answers_nothing_until_let_go() {
    let start: DateTime<Utc> = "2026-11-30T08:00:00Z".parse().unwrap();
    let story = AppStory::new("shop", "NodeJS", start);
    let (_platform, served) =
        serve_dev_cluster(Clock::new(start, 0.0), vec![Box::new(story)]).await;
    let client = dev_client(&served).await;
    let runs: Api<DynamicObject> = Api::all_with(client, &taskruns());
    served.access("dev").unwrap().set_hung(true);
    let mut asked =
        tokio::spawn(async move { runs.list(&Default::default()).await.map(|l| l.items.len()) });
    // The connection is accepted (not refused) and the request waits.
    let address = served.clusters["dev"];
    assert!(tokio::net::TcpStream::connect(address).await.is_ok());
    // Nothing comes back while it hangs (half a second stands for "ever").
    let waited = tokio::time::timeout(Duration::from_millis(500), &mut asked).await;
    assert!(waited.is_err(), "a hung server answered");
    served.access("dev").unwrap().set_hung(false);
    let answered = tokio::time::timeout(Duration::from_secs(10), asked)
        .await
        .expect("no answer 10 s after the server was let go")
        .unwrap();
    assert!(answered.is_ok());
}
