//! Several replicas behind one Service, on one PostgreSQL: two `tower serve` processes read
//! the same simulated platform, a service finishes provisioning and a release goes to prod
//! through them while one of them is killed mid-way, and what is written is written once —
//! one history row, one release record pull request — and a fresh replica answers every
//! route as the survivor does.

use std::time::Duration as Wait;

use chrono::Duration;
use hangar_sim::stories::fleet::AWAITING_PROMOTION as APP;
use serde_json::{json, Value};
use tower_backend::demo;

use crate::promotions::{cell, going_to, merge_at, releases_path};
use crate::support::{eventually, postgres_database, Demo};

/// One `tower serve` of the test's world on the shared database, its data dir its own.
async fn replica(config: &std::path::Path, database: &str) -> (Demo, tempfile::TempDir) {
    let data = tempfile::tempdir().unwrap();
    let data_dir = data.path().to_string_lossy().into_owned();
    let tower = Demo::serve(
        config,
        &[("DATABASE_URL", database), ("TOWER_DATA_DIR", &data_dir)],
    )
    .await
    .unwrap();
    let client = reqwest::Client::new();
    eventually(Wait::from_secs(60), "the replica ready", || async {
        let ready = client
            .get(format!("{}readyz", tower.url))
            .send()
            .await
            .ok()?;
        ready.status().is_success().then_some(())
    })
    .await
    .unwrap();
    (tower, data)
}

/// `GET path` of a replica as `client`: status and JSON.
async fn get(client: &reqwest::Client, tower: &Demo, path: &str) -> Option<Value> {
    let response = client
        .get(format!("{}{}", tower.url, path.trim_start_matches('/')))
        .send()
        .await
        .ok()?;
    response.status().is_success().then_some(())?;
    response.json().await.ok()
}

/// Waits until `tower`'s matrix shows `image` in `env` as `state`.
async fn until(client: &reqwest::Client, tower: &Demo, image: &str, env: &str, state: &str) {
    eventually(
        Wait::from_secs(30),
        &format!("{image} {state} in {env}"),
        || async {
            let matrix = get(client, tower, &releases_path()).await?;
            (cell(&matrix, image, env)?.0 == state).then_some(())
        },
    )
    .await
    .unwrap();
}

/// Promotes `image` to `env` through `tower` (preview, then one press): its answer.
async fn promote(client: &reqwest::Client, tower: &Demo, image: &str, env: &str) -> Value {
    let preview = get(
        client,
        tower,
        &format!("/api/releases/promotion?service={APP}&image={image}&environment={env}"),
    )
    .await
    .expect("the promotion's preview");
    let answer = client
        .post(format!("{}api/releases/promote", tower.url))
        .json(&json!({"service": APP, "image": image, "environment": env,
                      "seen": preview["seen"]}))
        .send()
        .await
        .unwrap();
    assert_eq!(answer.status(), 200);
    answer.json().await.unwrap()
}

/// What a replica answers that is its own and not the platform's: the moment it derived
/// the answer (`now`, `generatedAt`), what ticks with it (how long a running step has run), and when it
/// last heard from each cluster. Everything else must be equal.
fn without_own_stamps(mut value: Value) -> Value {
    match &mut value {
        Value::Object(map) => {
            for own in ["now", "generatedAt", "lastSeenAt"] {
                map.remove(own);
            }
            if map.get("status").is_some_and(|s| s == "running") {
                map.remove("durationSec");
            }
            for v in map.values_mut() {
                *v = without_own_stamps(std::mem::take(v));
            }
        }
        Value::Array(items) => {
            for v in items.iter_mut() {
                *v = without_own_stamps(std::mem::take(v));
            }
        }
        _ => {}
    }
    value
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_replicas_on_one_postgres_write_once_and_answer_alike_when_one_is_killed() {
    let database = postgres_database().await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    // The world stands still at the suite's start, moved by the test; the replicas tell
    // time by its clock (the demo's tower.yaml names it: `worldClock`).
    let world = demo::World::Stories {
        start: crate::support::test_start(),
        seed: 1,
    };
    let world = demo::start_world(world, 0.0, dir.path(), None, "127.0.0.1:0".parse().unwrap())
        .await
        .unwrap();
    let config = dir.path().join("tower.yaml");
    let (first, _first_data) = replica(&config, &database).await;
    let (second, _second_data) = replica(&config, &database).await;
    // GitHub's webhooks go to the replica that stays (a Service would pick either).
    world
        .platform
        .set_github_webhook(Some(hangar_sim::platform::Webhook {
            url: format!("{}webhooks/github", second.url),
            secret: demo::WEBHOOK_SECRET.to_owned(),
        }));
    let client = crate::support::signed_in(&world.guest_token().await.unwrap());
    let advance = |minutes: i64| {
        world.platform.clock().advance(Duration::minutes(minutes));
    };

    // Staging by a commit through the first replica, prod by a pull request through the
    // second: each press lands once whichever replica takes it.
    let image = eventually(
        Wait::from_secs(30),
        "a release waiting for staging",
        || async { going_to(&get(&client, &first, &releases_path()).await?, "staging") },
    )
    .await
    .unwrap();
    let staged = promote(&client, &first, &image, "staging").await;
    assert_eq!(staged["outcome"], "committed", "{staged}");
    until(&client, &second, &image, "staging", "canary").await;
    advance(25);
    until(&client, &first, &image, "staging", "live").await;
    until(&client, &second, &image, "staging", "live").await;
    let proposed = promote(&client, &second, &image, "prod").await;
    let again = promote(&client, &first, &image, "prod").await;
    assert_eq!(
        again["pull"]["number"], proposed["pull"]["number"],
        "{again}"
    );
    let number = proposed["pull"]["number"].as_u64().unwrap();
    merge_at(&world.served, &format!("acme/gitops-{APP}"), number).await;
    until(&client, &second, &image, "prod", "canary").await;

    // One replica dies mid-rollout, as a node going away takes it; the other carries on.
    first.kill().await.unwrap();
    advance(25);
    until(&client, &second, &image, "prod", "live").await;

    // The release record: one pull request, whoever wrote it.
    let release = tower_shared::image::release_name(&image)
        .unwrap()
        .to_owned();
    let branch = tower_shared::hangar::record_branch(&release);
    let github = format!("http://{}", world.served.github);
    // The recorder writes up every app's release new in prod since an hour before it
    // started, one after another: this one's may come after a few dozen others.
    let records = eventually(
        Wait::from_secs(120),
        "the release record's pull request",
        || async {
            let pulls: Vec<Value> = reqwest::get(format!(
                "{github}/repos/acme/gitops-{APP}/pulls?state=all&per_page=100"
            ))
            .await
            .ok()?
            .json()
            .await
            .ok()?;
            let found: Vec<Value> = pulls
                .into_iter()
                .filter(|p| p["head"]["ref"] == branch.as_str())
                .collect();
            (!found.is_empty()).then_some(found)
        },
    )
    .await
    .unwrap();
    assert_eq!(records.len(), 1, "{records:?}");

    // The service created as the world started has finished provisioning: one history row.
    let history = tower_backend::history::History::connect(&database)
        .await
        .unwrap();
    let shop = eventually(Wait::from_secs(30), "shop's provision recorded", || async {
        let runs = history.newest(None, 100).await.ok()?;
        let shop: Vec<_> = runs.into_iter().filter(|r| r.service == "shop").collect();
        (!shop.is_empty()).then_some(shop)
    })
    .await
    .unwrap();
    assert_eq!(shop.len(), 1, "{shop:?}");
    // Nor any other finished provision twice.
    let runs = history.newest(None, 100).await.unwrap();
    let services: std::collections::BTreeSet<&str> =
        runs.iter().map(|r| r.service.as_str()).collect();
    assert_eq!(services.len(), runs.len(), "{runs:?}");

    // A replacement replica comes up and, once it has read the platform, answers every
    // route as the survivor does.
    let (replacement, _replacement_data) = replica(&config, &database).await;
    let paths = [
        "/api/fleet".to_owned(),
        "/api/provisioning".to_owned(),
        format!("/api/releases?service={APP}"),
        format!("/api/records?service={APP}"),
        format!("/api/deployments?service={APP}"),
        format!("/api/pipelines?service={APP}"),
        format!("/api/pulls?service={APP}"),
        format!("/api/records/record?service={APP}&release={release}"),
    ];
    for path in &paths {
        let last = std::sync::Mutex::new(None);
        let equal = eventually(Wait::from_secs(60), &format!("{path} alike"), || async {
            let one = without_own_stamps(get(&client, &second, path).await?);
            let two = without_own_stamps(get(&client, &replacement, path).await?);
            let same = one == two;
            *last.lock().unwrap() = Some((one, two));
            same.then_some(())
        })
        .await;
        if equal.is_err() {
            let (one, two) = last.into_inner().unwrap().unwrap_or_default();
            panic!("{path} differs between replicas:\n{one}\n{two}");
        }
    }
}

/// A replica started (or restarted) after a provision finished reads when it finished as
/// the others do: the catalog it looks up service by service answers only for the services
/// it asked about, so one finished long ago (shown nowhere, so never asked about) is unknown
/// to it — never "not in the catalog", which made it look as if it had just finished, shown
/// for a quarter of an hour by that replica alone.
#[tokio::test]
async fn a_replica_started_after_a_provision_finished_does_not_show_it_as_just_finished() {
    let tower = crate::support::Live::start(0.0).await.unwrap();
    // Fifty minutes on: shop finished provisioning half an hour ago.
    tower.advance_world(50 * 60);
    let shows_shop = |derived: &tower_backend::derived::Derived| {
        derived
            .provisioning
            .services
            .iter()
            .any(|s| &*s.name == "shop")
    };
    // The running replica's watches bring the finished XR after the clock has moved (a
    // derivation at the new instant may still hold the old objects), so it is waited for.
    eventually(
        Wait::from_secs(30),
        "the running replica no longer shows shop",
        || async {
            let derived = tower.live.derived();
            (derived.now >= tower.world_now() && !shows_shop(&derived)).then_some(())
        },
    )
    .await
    .unwrap();
    let late = tower_backend::live::connect(tower.world.config.clone(), tower.world.clock())
        .await
        .unwrap();
    assert!(late.wait_ready(Wait::from_secs(30)).await);
    // Every derivation of the late replica until its catalog has answered, and that one.
    let deadline = tokio::time::Instant::now() + Wait::from_secs(30);
    loop {
        let derived = late.derived();
        assert!(
            !shows_shop(&derived),
            "the late replica shows shop: {:?}",
            derived
                .provisioning
                .services
                .iter()
                .find(|s| &*s.name == "shop")
        );
        if derived.base.catalog.is_some() {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the catalog never answered"
        );
        tokio::time::sleep(Wait::from_millis(20)).await;
    }
    assert!(!shows_shop(&tower.live.derived()));
}
