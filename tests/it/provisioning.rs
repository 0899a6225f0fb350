//! The provisioning derivation, point by point of `provisioning.md`, over
//! `fixtures/provisioning/` (each fixture pins its own `now`).

use serde_json::{json, Value};
use tower_shared::provisioning::{
    derive_provisioning, record_of, remember, Group, Provisioning, ResourceState, ServiceKind,
    ServiceProgress, Step, StepId, StepStatus, TypicalSource,
};
use tower_shared::snapshot::Snapshot;

use crate::support::root;

pub fn fixture(name: &str) -> Value {
    let path = root().join(format!("fixtures/provisioning/{name}.json"));
    serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap()
}

pub fn derive(snapshot: &Value) -> Provisioning {
    derive_provisioning(&Snapshot::from_json(&snapshot.to_string()).unwrap())
}

fn service<'a>(p: &'a Provisioning, name: &str) -> &'a ServiceProgress {
    p.services
        .iter()
        .find(|s| &*s.name == name)
        .unwrap_or_else(|| panic!("{name} is not in {:?}", names(p)))
}

/// How many of a service's steps are done.
pub fn done_steps(s: &ServiceProgress) -> usize {
    s.steps
        .iter()
        .filter(|st| st.status == StepStatus::Done)
        .count()
}

fn names(p: &Provisioning) -> Vec<&str> {
    p.services.iter().map(|s| &*s.name).collect()
}

fn step(s: &ServiceProgress, id: StepId) -> &Step {
    s.steps
        .iter()
        .find(|st| st.id == id)
        .unwrap_or_else(|| panic!("{} has no {id:?} step", s.name))
}

fn shop(fixture_name: &str) -> ServiceProgress {
    service(&derive(&fixture(fixture_name)), "shop").clone()
}

/// Removes objects of `kind` (and name, when given) from every cluster.
fn without(mut snapshot: Value, kind: &str, name: Option<&str>) -> Value {
    for objects in snapshot["clusters"].as_object_mut().unwrap().values_mut() {
        objects
            .as_array_mut()
            .unwrap()
            .retain(|o| o["kind"] != kind || name.is_some_and(|n| o["metadata"]["name"] != n));
    }
    snapshot
}

fn object_mut<'a>(snapshot: &'a mut Value, kind: &str, name: &str) -> &'a mut Value {
    snapshot["clusters"]["dev"]
        .as_array_mut()
        .unwrap()
        .iter_mut()
        .find(|o| o["kind"] == kind && o["metadata"]["name"] == name)
        .unwrap()
}

#[test]
fn every_fixture_matches_its_snapshot() {
    insta::glob!("../../fixtures/provisioning", "*.json", |path| {
        let text = std::fs::read_to_string(path).unwrap();
        insta::assert_json_snapshot!(derive_provisioning(&Snapshot::from_json(&text).unwrap()));
    });
}

#[test]
fn the_nodejs_story_moves_forward_step_by_step() {
    let phases = [
        ("nodejs-1-pending-open", Some(Group::Pending)),
        ("nodejs-2-pending-merged", Some(Group::Pending)),
        ("nodejs-3-early", Some(Group::InFlight)),
        ("nodejs-4-onboarding-prs", Some(Group::InFlight)),
        ("nodejs-5-building", Some(Group::InFlight)),
        ("nodejs-6-rollout-progressing", Some(Group::InFlight)),
        ("nodejs-7-finished", Some(Group::Finished)),
        ("nodejs-8-finished-dropped", None),
    ];
    let mut done_before = 0;
    for (name, group) in phases {
        let p = derive(&fixture(name));
        let shop = p.services.iter().find(|s| &*s.name == "shop");
        assert_eq!(shop.map(|s| s.group), group, "{name}");
        if let Some(shop) = shop {
            assert_eq!(shop.steps.len(), 10, "{name}");
            let done = done_steps(shop);
            assert!(
                done >= done_before,
                "{name}: {done} done after {done_before}"
            );
            done_before = done;
        }
    }
    assert_eq!(done_before, 10);
}

#[test]
fn application_steps_come_in_the_specs_order() {
    let ids: Vec<StepId> = shop("nodejs-5-building")
        .steps
        .iter()
        .map(|s| s.id)
        .collect();
    assert_eq!(
        ids,
        [
            StepId::RequestPrMerged,
            StepId::RequestApplied,
            StepId::DevCluster,
            StepId::CicdOnboarded,
            StepId::Repositories,
            StepId::Catalog,
            StepId::OnboardingPrs,
            StepId::Secrets,
            StepId::FirstBuild,
            StepId::RunningHealthy,
        ]
    );
}

#[test]
fn request_pr_times_and_the_applied_duration() {
    let pending = service(&derive(&fixture("nodejs-1-pending-open")), "shop").clone();
    let merged = step(&pending, StepId::RequestPrMerged);
    assert_eq!(merged.status, StepStatus::Running);
    assert_eq!(
        merged.detail.as_deref(),
        Some("Merge the request PR to start provisioning")
    );
    assert_eq!(
        step(&pending, StepId::RequestApplied).status,
        StepStatus::Waiting
    );
    assert!(pending.steps[2..]
        .iter()
        .all(|s| s.status == StepStatus::Waiting));

    let applied = service(&derive(&fixture("nodejs-2-pending-merged")), "shop").clone();
    let running = step(&applied, StepId::RequestApplied);
    assert_eq!(running.status, StepStatus::Running);
    assert!(running.detail.as_deref().unwrap().contains("ArgoCD polls"));

    let shop = shop("nodejs-3-early");
    let merged = step(&shop, StepId::RequestPrMerged);
    assert_eq!(
        (merged.status, merged.duration_sec),
        (StepStatus::Done, Some(480))
    );
    assert_eq!(
        merged.links[0].url,
        "https://github.com/acme/hangar-tenants/pull/404"
    );
    // Merge (T0 − 4 min) to XR creation (T0).
    assert_eq!(step(&shop, StepId::RequestApplied).duration_sec, Some(240));
}

#[test]
fn an_unseen_request_pr_is_blank_never_zero() {
    let mut snapshot = fixture("nodejs-3-early");
    snapshot["pullRequests"] = json!([]);
    let shop = service(&derive(&snapshot), "shop").clone();
    let merged = step(&shop, StepId::RequestPrMerged);
    assert_eq!(merged.status, StepStatus::Done);
    assert_eq!(
        (merged.started_at, merged.ended_at, merged.duration_sec),
        (None, None, None)
    );
    let applied = step(&shop, StepId::RequestApplied);
    assert_eq!((applied.started_at, applied.duration_sec), (None, None));
    assert!(applied.ended_at.is_some(), "the XR's creation is known");

    // Times remembered from the pending phase survive the PR dropping out of the lookup.
    snapshot["observed"]["shop"]["request-pr-merged"] =
        json!({"runningSince": "2026-11-30T07:48:00Z", "doneAt": "2026-11-30T07:56:00Z"});
    let shop = service(&derive(&snapshot), "shop").clone();
    assert_eq!(step(&shop, StepId::RequestPrMerged).duration_sec, Some(480));
    assert_eq!(step(&shop, StepId::RequestApplied).duration_sec, Some(240));
}

#[test]
fn dev_cluster_and_cicd_follow_the_xr_conditions_and_argo() {
    let early = shop("nodejs-3-early");
    assert_eq!(step(&early, StepId::DevCluster).duration_sec, Some(20));
    let cicd = step(&early, StepId::CicdOnboarded);
    assert_eq!(cicd.status, StepStatus::Running);
    assert_eq!(
        cicd.detail.as_deref(),
        Some("Waiting for the source repository")
    );

    let later = fixture("nodejs-4-onboarding-prs");
    assert_eq!(
        step(
            &service(&derive(&later), "shop").clone(),
            StepId::CicdOnboarded
        )
        .status,
        StepStatus::Done
    );

    // The condition is true but the platform's Argo CD app is not healthy yet.
    let mut unhealthy = later.clone();
    let app = object_mut(&mut unhealthy, "Application", "shop-cicd");
    app["status"]["sync"]["status"] = json!("OutOfSync");
    let s = service(&derive(&unhealthy), "shop").clone();
    let cicd = step(&s, StepId::CicdOnboarded);
    assert_eq!(cicd.status, StepStatus::Running);
    assert_eq!(
        cicd.detail.as_deref(),
        Some("Argo CD application shop-cicd is OutOfSync and Healthy")
    );

    // No read grant on the platform's Applications: the condition alone.
    let no_grant = without(later, "Application", None);
    let s = service(&derive(&no_grant), "shop").clone();
    assert_eq!(step(&s, StepId::CicdOnboarded).status, StepStatus::Done);
}

#[test]
fn repositories_count_composed_objects_and_name_a_failing_one() {
    let early = shop("nodejs-3-early");
    let repos = step(&early, StepId::Repositories);
    assert_eq!(repos.detail.as_deref(), Some("1 of 4 ready"));
    assert_eq!(repos.links[0].title, "Source repo");

    let ledger = service(&derive(&fixture("springboot-repo-creds-missing")), "ledger").clone();
    let repos = step(&ledger, StepId::Repositories);
    assert_eq!(repos.status, StepStatus::Failed);
    let detail = repos.detail.as_deref().unwrap();
    assert!(
        detail.starts_with("Repository ledger-source: connect failed"),
        "{detail}"
    );
    assert!(detail.contains("provider-github-creds"), "{detail}");

    // Without a read grant on the provider's objects, the XR's Ready decides.
    let no_grant = without(
        without(fixture("nodejs-5-building"), "Repository", None),
        "RepositoryFile",
        None,
    );
    let s = service(&derive(&no_grant), "shop").clone();
    let repos = step(&s, StepId::Repositories);
    assert_eq!(repos.status, StepStatus::Done);
    assert!(repos.links.is_empty());
}

#[test]
fn catalog_runs_alongside_and_waits_only_when_it_cannot_know() {
    let early = shop("nodejs-3-early");
    assert_eq!(step(&early, StepId::Catalog).status, StepStatus::Running);
    // Seen running, then seen done: its duration is the observer's.
    let built = shop("nodejs-5-building");
    let catalog = step(&built, StepId::Catalog);
    assert_eq!(catalog.status, StepStatus::Done);
    assert_eq!(catalog.duration_sec, Some(664));

    let p = derive(&fixture("python-catalog-unknown-before-build"));
    assert_eq!(
        step(service(&p, "pricing"), StepId::Catalog).status,
        StepStatus::Waiting
    );
    let p = derive(&fixture("python-catalog-unknown-after-build"));
    let catalog = step(service(&p, "pricing"), StepId::Catalog);
    assert_eq!(
        (catalog.status, catalog.duration_sec),
        (StepStatus::Done, None)
    );
}

#[test]
fn steps_first_seen_done_have_no_duration() {
    let late = shop("nodejs-observer-opened-late");
    for id in [StepId::Catalog, StepId::RunningHealthy] {
        let s = step(&late, id);
        assert_eq!(s.status, StepStatus::Done, "{id:?}");
        assert_eq!((s.ended_at, s.duration_sec), (None, None), "{id:?}");
    }
    let watched = shop("nodejs-7-finished");
    assert_eq!(
        step(&watched, StepId::RunningHealthy).duration_sec,
        Some(119)
    );
}

#[test]
fn onboarding_prs_are_done_when_both_merged_or_a_build_exists() {
    let open = shop("nodejs-4-onboarding-prs");
    let prs = step(&open, StepId::OnboardingPrs);
    assert_eq!(prs.status, StepStatus::Running);
    assert_eq!(
        prs.detail.as_deref(),
        Some("Merge gitops-shop#1 and shop#1")
    );
    assert_eq!(prs.links.len(), 2);

    let merged = shop("nodejs-5-building");
    assert_eq!(step(&merged, StepId::OnboardingPrs).duration_sec, Some(450));

    // Unmerged PRs, but the build already ran: done.
    let mut snapshot = fixture("nodejs-5-building");
    for pr in snapshot["pullRequests"].as_array_mut().unwrap() {
        if pr["title"].as_str().unwrap().starts_with("Onboarding") {
            pr["merged_at"] = Value::Null;
            pr["state"] = json!("open");
        }
    }
    let s = service(&derive(&snapshot), "shop").clone();
    let prs = step(&s, StepId::OnboardingPrs);
    assert_eq!((prs.status, prs.ended_at), (StepStatus::Done, None));

    // GitHub unknown: waiting, not "no PRs".
    let mut unknown = fixture("nodejs-3-early");
    unknown["pullRequests"] = Value::Null;
    let s = service(&derive(&unknown), "shop").clone();
    let prs = step(&s, StepId::OnboardingPrs);
    assert_eq!(prs.status, StepStatus::Waiting);
    assert!(prs.detail.as_deref().unwrap().contains("GitHub"));
}

#[test]
fn secrets_follow_the_secret_store() {
    let built = shop("nodejs-5-building");
    let secrets = step(&built, StepId::Secrets);
    assert_eq!(secrets.status, StepStatus::Done);
    assert!(secrets.links[0]
        .url
        .starts_with("https://infisical.hangar.example/projects/secret-management/"));

    let mut failing = fixture("nodejs-5-building");
    let store = object_mut(&mut failing, "SecretStore", "shop-secrets");
    store["status"]["conditions"] = json!([{
        "type": "Synced", "status": "False", "reason": "ReconcileError",
        "message": "cannot resolve Infisical machine identity", "lastTransitionTime": "2026-11-30T08:03:00Z"
    }]);
    let s = service(&derive(&failing), "shop").clone();
    let secrets = step(&s, StepId::Secrets);
    assert_eq!(secrets.status, StepStatus::Failed);
    assert!(secrets
        .detail
        .as_deref()
        .unwrap()
        .contains("machine identity"));

    // No SecretStore does not hold a built app open.
    let none = without(fixture("nodejs-7-finished"), "SecretStore", None);
    let s = service(&derive(&none), "shop").clone();
    assert_eq!(s.group, Group::Finished);
    assert_eq!(step(&s, StepId::Secrets).status, StepStatus::Done);
    let early = without(fixture("nodejs-3-early"), "SecretStore", None);
    let s = service(&derive(&early), "shop").clone();
    assert_eq!(step(&s, StepId::Secrets).status, StepStatus::Waiting);
}

#[test]
fn first_build_ignores_glidepaths_own_runs_and_counts_tasks() {
    // nodejs-4 has a finished onboarding-resync run in the namespace, and no build.
    let before = shop("nodejs-4-onboarding-prs");
    assert_eq!(
        step(&before, StepId::FirstBuild).status,
        StepStatus::Waiting
    );
    let building = shop("nodejs-5-building");
    let build = step(&building, StepId::FirstBuild);
    assert_eq!(build.status, StepStatus::Running);
    assert_eq!(
        build.detail.as_deref(),
        Some("3 of 7 tasks finished (shop-build-7hq2x)")
    );
    let failed = shop("nodejs-build-failed");
    let build = step(&failed, StepId::FirstBuild);
    assert_eq!(build.status, StepStatus::Failed);
    assert!(build
        .detail
        .as_deref()
        .unwrap()
        .starts_with("build-image failed: \"step-build-and-push\""));
}

#[test]
fn running_healthy_watches_the_first_environment() {
    let progressing = shop("nodejs-6-rollout-progressing");
    let step_ = step(&progressing, StepId::RunningHealthy);
    assert_eq!(&*step_.title, "Running healthy in dev");
    assert_eq!(step_.status, StepStatus::Running);
    assert!(step_
        .detail
        .as_deref()
        .unwrap()
        .contains("1 of 2 replicas available"));

    let p = derive(&fixture("go-flight-first-env-healthy"));
    let fares = service(&p, "fares");
    let healthy = step(fares, StepId::RunningHealthy);
    assert_eq!(&*healthy.title, "Running healthy in prod");
    assert_eq!(healthy.status, StepStatus::Done);
    // The same Rollout on the dev cluster would not count: Flight envs live on their cluster.
    let mut moved = fixture("go-flight-first-env-healthy");
    let rollout = moved["clusters"]["prod"].as_array().unwrap()[0].clone();
    moved["clusters"]["prod"] = json!([]);
    moved["clusters"]["dev"]
        .as_array_mut()
        .unwrap()
        .push(rollout);
    let fares = service(&derive(&moved), "fares").clone();
    assert_eq!(
        step(&fares, StepId::RunningHealthy).status,
        StepStatus::Running
    );
}

#[test]
fn a_built_app_without_a_rollout_says_what_is_missing_after_five_minutes() {
    let hint = |f: &str| {
        step(&shop(f), StepId::RunningHealthy)
            .detail
            .as_deref()
            .unwrap()
            .to_owned()
    };
    assert_eq!(
        hint("nodejs-no-rollout-hint"),
        "No Rollout in app-shop-dev yet: cicd.yaml has no deploy-to-dev stage"
    );
    assert!(hint("nodejs-no-rollout-unknown-cicd").contains("glidepath/envs/dev.yaml"));
    // Right after the build: no hint yet.
    let mut fresh = fixture("nodejs-no-rollout-hint");
    fresh["now"] = json!("2026-11-30T08:15:00Z");
    let s = service(&derive(&fresh), "shop").clone();
    assert_eq!(
        step(&s, StepId::RunningHealthy).detail.as_deref(),
        Some("Waiting for a Rollout in app-shop-dev")
    );
}

#[test]
fn infra_services_have_eight_steps_and_wait_for_their_environment() {
    let p = derive(&fixture("infraservice-waiting-for-env"));
    let bus = service(&p, "events-bus");
    assert_eq!(bus.kind, Some(ServiceKind::InfraService));
    assert_eq!(bus.steps.len(), 8);
    assert_eq!(bus.steps.last().unwrap().id, StepId::FirstEnvironment);
    // The scaffold cicd.yaml left resourceRefs: only the repository is counted.
    assert_eq!(step(bus, StepId::Repositories).status, StepStatus::Done);
    let env = step(bus, StepId::FirstEnvironment);
    assert_eq!(env.status, StepStatus::Running);
    assert!(env
        .detail
        .as_deref()
        .unwrap()
        .contains("glidepath/envs/dev.yaml in gitops-infra-events-bus"));

    let up = derive(&fixture("infraservice-up"));
    let env = step(service(&up, "events-bus"), StepId::FirstEnvironment);
    assert_eq!(env.status, StepStatus::Done);
    assert_eq!(
        env.ended_at.unwrap().to_rfc3339(),
        "2026-11-30T08:50:00+00:00"
    );

    let degraded = derive(&fixture("infraservice-degraded"));
    let env = step(service(&degraded, "events-bus"), StepId::FirstEnvironment);
    assert_eq!(env.status, StepStatus::Failed);
    assert!(env.detail.as_deref().unwrap().contains("RabbitMQ"));

    let stalled = derive(&fixture("infraservice-stalled"));
    assert_eq!(service(&stalled, "events-bus").group, Group::Stalled);
}

#[test]
fn functions_have_one_onboarding_pr_and_a_deploy_step() {
    let p = derive(&fixture("lambda-first-deploy-failed"));
    let f = service(&p, "thumbnailer");
    assert_eq!(&*step(f, StepId::Repositories).title, "Source repo created");
    let prs = step(f, StepId::OnboardingPrs);
    assert_eq!(&*prs.title, "Application onboarding PR");
    assert_eq!(prs.links.len(), 1);
    let deployed = step(f, StepId::Deployed);
    assert_eq!(&*deployed.title, "Deployed to AWS Lambda");
    assert_eq!(deployed.status, StepStatus::Failed);
    let detail = deployed.detail.as_deref().unwrap();
    assert!(detail.starts_with("deploy-aws-lambda failed:"), "{detail}");
    assert!(detail.contains("ResourceConflictException"), "{detail}");

    let waiting = derive(&fixture("lambda-waiting-for-deploy"));
    let deployed = step(service(&waiting, "thumbnailer"), StepId::Deployed);
    assert_eq!(deployed.status, StepStatus::Waiting);
}

#[test]
fn cloud_apps_end_with_their_deploy_not_a_rollout() {
    let p = derive(&fixture("go-ecs-deploying"));
    let app = service(&p, "orders-api");
    assert!(app.steps.iter().all(|s| s.id != StepId::RunningHealthy));
    let deployed = step(app, StepId::Deployed);
    assert_eq!(&*deployed.title, "Deployed to AWS ECS");
    assert_eq!(deployed.status, StepStatus::Running);

    let p = derive(&fixture("go-ecs-deployed"));
    let app = service(&p, "orders-api");
    assert_eq!(app.group, Group::Finished);
    let deployed = step(app, StepId::Deployed);
    assert_eq!(deployed.links[0].title, "Open in console");
    assert!(deployed.links[0]
        .url
        .contains("/ecs/v2/clusters/apps-dev/services/orders-api"));
}

#[test]
fn pending_requests_become_services_until_the_xr_exists() {
    let p = derive(&fixture("pending-requests"));
    let pending: Vec<&str> = p
        .services
        .iter()
        .filter(|s| s.group == Group::Pending)
        .map(|s| &*s.name)
        .collect();
    // Open, and merged 10 minutes ago; not merged 2 h ago, not abandoned, not other PRs.
    assert_eq!(pending, ["cache-warmer", "fares-v2"]);
    assert_eq!(service(&p, "fares-v2").kind, Some(ServiceKind::Go));
    assert_eq!(service(&p, "cache-warmer").kind, None);
    // The applied request is the XR's service now, not a pending one.
    assert_eq!(service(&p, "shop").group, Group::InFlight);
}

#[test]
fn stalled_finished_and_dropped() {
    assert_eq!(shop("nodejs-stalled").group, Group::Stalled);
    assert_eq!(shop("nodejs-7-finished").group, Group::Finished);
    assert!(derive(&fixture("nodejs-8-finished-dropped"))
        .services
        .is_empty());
    assert!(derive(&fixture("nodejs-9-too-old")).services.is_empty());
}

#[test]
fn events_come_from_step_times_only() {
    let shop = shop("nodejs-3-early");
    let texts: Vec<(u64, &str)> = shop
        .events
        .iter()
        .map(|e| (e.at_sec, e.text.as_str()))
        .collect();
    assert_eq!(texts[0], (0, "▸ Request PR merged started"));
    assert!(texts.contains(&(740, "✓ Dev cluster chosen done")));
    // Waiting steps have no line.
    assert!(!texts.iter().any(|(_, t)| t.contains("First build")));
    let mut times: Vec<u64> = texts.iter().map(|(t, _)| *t).collect();
    let sorted = {
        times.sort_unstable();
        times.clone()
    };
    assert_eq!(times, sorted);
}

#[test]
fn typical_durations_say_where_they_come_from() {
    let measured = shop("nodejs-typical-measured");
    let build = step(&measured, StepId::FirstBuild);
    assert_eq!(
        (build.typical_sec, build.typical_source),
        (430, TypicalSource::Measured)
    );
    let prs = step(&measured, StepId::OnboardingPrs);
    assert_eq!(prs.typical_source, TypicalSource::Estimate);
}

#[test]
fn what_gets_created_marks_kinds_tower_cannot_read() {
    let shop = shop("nodejs-5-building");
    let state = |kind: &str| {
        shop.created
            .iter()
            .find(|c| c.kind == kind)
            .map(|c| c.state)
    };
    assert_eq!(state("Repository"), Some(ResourceState::Ready));
    assert_eq!(state("AppCicd"), Some(ResourceState::Ready));
    assert_eq!(state("Object"), Some(ResourceState::NotTracked));
    assert_eq!(state("SecretStore"), Some(ResourceState::Ready));
}

#[test]
fn the_observer_remembers_running_then_done() {
    let mut snapshot = fixture("nodejs-3-early");
    snapshot["observed"] = json!({});
    let first = Snapshot::from_json(&snapshot.to_string()).unwrap();
    let memory = remember(&first.observed, &derive_provisioning(&first), first.now);
    let catalog = &memory["shop"]["catalog"];
    assert_eq!(catalog.running_since, Some(first.now));
    assert_eq!(catalog.done_at, None);

    // Later the component is in the catalog: done at the first look after.
    let mut later = fixture("nodejs-5-building");
    later["observed"] = serde_json::to_value(&memory).unwrap();
    let later = Snapshot::from_json(&later.to_string()).unwrap();
    let memory = remember(&later.observed, &derive_provisioning(&later), later.now);
    assert_eq!(memory["shop"]["catalog"].done_at, Some(later.now));
    assert_eq!(memory["shop"]["catalog"].running_since, Some(first.now));

    // A step first seen done is not given a time.
    let mut fresh = fixture("nodejs-5-building");
    fresh["observed"] = json!({});
    let fresh = Snapshot::from_json(&fresh.to_string()).unwrap();
    let memory = remember(&fresh.observed, &derive_provisioning(&fresh), fresh.now);
    assert!(!memory["shop"].contains_key("catalog"));
}

#[test]
fn a_finished_provision_becomes_a_history_record_without_unknowns() {
    let finished = shop("nodejs-7-finished");
    let record = record_of(&finished).unwrap();
    assert_eq!(record.kind, "NodeJS");
    assert_eq!(record.steps["first-build"], 350);
    assert_eq!(record.steps.len(), 10);
    let late = shop("nodejs-observer-opened-late");
    let record = record_of(&late).unwrap();
    assert!(
        !record.steps.contains_key("catalog"),
        "unknown durations are left out"
    );
    assert!(record_of(&shop("nodejs-5-building")).is_none());
}

#[test]
fn a_step_first_seen_done_late_ends_now_so_the_provision_is_recorded() {
    // The rollout turned healthy long ago, but the observer (which had seen it running)
    // only now sees it done: Tower was not looking meanwhile. The step ends now — what the
    // observer's memory will say — so the provision is finished now and gets recorded,
    // rather than being "finished long ago" and dropped unrecorded.
    let mut snapshot = fixture("nodejs-7-finished");
    snapshot["observed"]["shop"]["running-healthy"]
        .as_object_mut()
        .unwrap()
        .remove("doneAt");
    let late = "2026-11-30T09:00:00Z";
    snapshot["now"] = json!(late);
    let shop = service(&derive(&snapshot), "shop").clone();
    let healthy = step(&shop, StepId::RunningHealthy);
    assert_eq!(healthy.status, StepStatus::Done);
    assert_eq!(healthy.ended_at, Some(late.parse().unwrap()));
    assert_eq!(shop.group, Group::Finished);
    assert_eq!(
        record_of(&shop).unwrap().finished_at,
        late.parse::<chrono::DateTime<chrono::Utc>>().unwrap()
    );

    // Without having seen it running first, no time is invented: the step has no end, and
    // the provision finished when its last known step did (too long ago to list).
    snapshot["observed"]["shop"]
        .as_object_mut()
        .unwrap()
        .remove("running-healthy");
    assert!(!names(&derive(&snapshot)).contains(&"shop"));
}

/// Tower keeps objects trimmed (`tower_shared::trim::object`): every view derived from a trimmed
/// snapshot equals the one derived from the whole snapshot, for every fixture and for the
/// simulated platform's world (whose objects carry env, Helm values and secret params).
#[test]
fn trimmed_objects_derive_exactly_what_whole_ones_do() {
    use tower_shared::cloud::derive_cloud_deploys;
    use tower_shared::fleet::derive_fleet;
    let mut snapshots = Vec::new();
    for dir in ["fixtures/provisioning", "fixtures/cloud-deploys"] {
        for entry in std::fs::read_dir(root().join(dir)).unwrap() {
            let path = entry.unwrap().path();
            let text = std::fs::read_to_string(&path).unwrap();
            snapshots.push((
                path.display().to_string(),
                Snapshot::from_json(&text).unwrap(),
            ));
        }
    }
    snapshots.push(("the simulated world".into(), simulated_world()));
    assert!(snapshots.len() > 30);
    for (name, whole) in snapshots {
        let trimmed = whole.clone().trimmed();
        assert_eq!(
            derive_provisioning(&trimmed),
            derive_provisioning(&whole),
            "{name}"
        );
        assert_eq!(derive_fleet(&trimmed), derive_fleet(&whole), "{name}");
        for service in whole.known_services() {
            assert_eq!(
                derive_cloud_deploys(&trimmed, service),
                derive_cloud_deploys(&whole, service),
                "{name}: {service}"
            );
        }
    }
}

/// The demo's world an hour in, as a snapshot of every object its clusters serve.
fn simulated_world() -> Snapshot {
    crate::support::simulated_worlds(&[60]).remove(0)
}

/// The browser reads no YAML: it derives from what the backend read of each `cicd.yaml`
/// (`cicdRead`). With that reading, a snapshot whose texts say nothing readable derives
/// exactly what the texts do — provisioning and the Deployments tab's environment order.
#[test]
fn what_the_backend_read_of_cicd_yaml_stands_for_the_text() {
    let mut checked = 0;
    let files = std::fs::read_dir(root().join("fixtures/provisioning"))
        .unwrap()
        .chain(std::fs::read_dir(root().join("fixtures/deployments")).unwrap());
    for entry in files {
        let path = entry.unwrap().path();
        let whole = Snapshot::from_json(&std::fs::read_to_string(&path).unwrap()).unwrap();
        if whole.cicd.is_empty() {
            continue;
        }
        let mut read = whole.clone().with_cicd_read();
        assert_eq!(read.cicd_read.len(), whole.cicd.len());
        for text in read.cicd.values_mut() {
            *text = "deploy: [not yaml".to_owned();
        }
        // Through the wire, as the browser gets it.
        let read = Snapshot::from_json(&serde_json::to_string(&read).unwrap()).unwrap();
        assert_eq!(
            derive_provisioning(&read),
            derive_provisioning(&whole),
            "{}",
            path.display()
        );
        for service in whole.cicd.keys() {
            assert_eq!(
                tower_shared::deployments::derive_deployments(&read, service),
                tower_shared::deployments::derive_deployments(&whole, service),
                "{} {service}",
                path.display()
            );
        }
        checked += 1;
    }
    assert!(checked >= 8, "only {checked} fixtures hold a cicd.yaml");
}

/// An InfraService's `<name>-dev` Application lives in the tenants' Argo CD instance
/// (`argocd-apps`), which Tower does not watch: Tower reads it through Argo CD's API, with
/// its real clients against the simulated platform, and the provision finishes live.
#[tokio::test]
async fn an_infra_service_finishes_live_from_the_tenants_argo_cd() {
    use hangar_sim::stories::infra::InfraStory;
    use std::time::Duration;
    use tower_shared::api::ProvisioningAnswer;

    let start = crate::support::test_start();
    let story: Box<dyn hangar_sim::stories::Story> = Box::new(InfraStory {
        name: "cache".to_owned(),
        created: start - chrono::Duration::minutes(10),
        environment_added: Some(600),
    });
    let tower = crate::support::Live::start_stories(0.0, vec![story])
        .await
        .unwrap();
    let first_environment = |answer: &ProvisioningAnswer| {
        let cache = answer.services.iter().find(|s| &*s.name == "cache")?;
        let step = cache
            .steps
            .iter()
            .find(|s| s.id == StepId::FirstEnvironment)?;
        Some((cache.group, step.status))
    };
    // Ten minutes in: its environment file has just been added, no Application yet.
    let (_, body) = tower.get("/api/provisioning").await.unwrap();
    let answer: ProvisioningAnswer = serde_json::from_value(body).unwrap();
    assert_eq!(
        first_environment(&answer),
        Some((Group::InFlight, StepStatus::Running))
    );
    // Five minutes on, Argo CD's ApplicationSet made cache-dev and it is healthy.
    tower.advance_world(300);
    crate::support::eventually(Duration::from_secs(30), "cache finished", || async {
        let (_, body) = tower.get("/api/provisioning").await.ok()?;
        let answer: ProvisioningAnswer = serde_json::from_value(body).ok()?;
        (first_environment(&answer) == Some((Group::Finished, StepStatus::Done))).then_some(())
    })
    .await
    .unwrap();
    // Not from a watch: Tower watches Applications in the platform's `argocd` only.
    let watched = tower_shared::hangar::WATCHED_KINDS
        .iter()
        .find(|w| w.kind == "Application")
        .unwrap();
    assert_eq!(watched.namespace, Some("argocd"));
}
