//! The history under load: 1,000 concurrent POSTs of the same run to `tower serve` (its own
//! process, configured by the `tower.yaml` the demo writes) leave exactly one row and no
//! 5xx, in SQLite and in PostgreSQL.

use std::collections::BTreeMap;

use serde_json::{json, Value};
use tower_backend::demo;

use crate::support::{postgres_database, Demo, ReadJson as _};

async fn thousand_concurrent_posts(database_url: Option<String>) {
    let dir = tempfile::tempdir().unwrap();
    let world = demo::World::Stories {
        start: crate::support::test_start(),
        seed: 1,
    };
    let listen = "127.0.0.1:0".parse().unwrap();
    let _world = demo::start_world(world, 1.0, dir.path(), None, listen)
        .await
        .unwrap();
    let env: Vec<(&str, &str)> = database_url
        .as_deref()
        .map(|url| ("DATABASE_URL", url))
        .into_iter()
        .collect();
    let tower = Demo::serve(&dir.path().join("tower.yaml"), &env)
        .await
        .unwrap();

    let client = tower.client().await.unwrap();
    // A service Tower observes (a person records runs of no other).
    let service = hangar_sim::stories::fleet::AWAITING_PROMOTION;
    let run = json!({"service": service, "kind": "Python",
        "startedAt": "2026-11-30T08:00:00Z", "finishedAt": "2026-11-30T08:20:00Z",
        "steps": {"repositories": 61, "first-build": 402}});
    // Once Tower has read the world and knows the service (it serves before that).
    crate::support::eventually(
        std::time::Duration::from_secs(60),
        "the service on the fleet",
        || async {
            let fleet: Value = client
                .get(format!("{}api/fleet", tower.url))
                .read_json()
                .await;
            fleet["apps"]
                .as_array()
                .is_some_and(|apps| apps.iter().any(|a| a["name"] == service))
                .then_some(())
        },
    )
    .await
    .unwrap();
    let url = format!("{}provisioning-history/runs", tower.url);
    let posts = (0..1000).map(|i| {
        let mut body = run.clone();
        // Every poster measured slightly differently: only the first record may win.
        body["steps"]["repositories"] = json!(61 + i);
        // Each request has a deadline, so a stuck server fails the test instead of hanging it.
        let request = client
            .post(&url)
            .json(&body)
            .timeout(std::time::Duration::from_secs(60));
        async move {
            let response = request.send().await.expect("answered within 60 s");
            let status = response.status();
            (
                status,
                response
                    .json::<Value>()
                    .await
                    .expect("a JSON body within 60 s"),
            )
        }
    });
    let answers = futures::future::join_all(posts).await;
    let mut statuses = BTreeMap::new();
    for (status, _) in &answers {
        *statuses.entry(status.as_u16()).or_insert(0) += 1;
    }
    assert_eq!(
        statuses,
        BTreeMap::from([(200, 999), (201, 1)]),
        "one insert, 999 repeats"
    );
    let stored: Vec<&Value> = answers.iter().map(|(_, body)| body).collect();
    assert!(
        stored.iter().all(|b| b == &stored[0]),
        "every poster got the one stored run"
    );

    let listed: Value = client
        .get(format!("{}provisioning-history/runs?limit=100", tower.url))
        .read_json()
        .await;
    let crowded: Vec<&Value> = listed["runs"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["service"] == service)
        .collect();
    assert_eq!(crowded.len(), 1, "{listed}");
    assert_eq!(crowded[0], stored[0]);

    // Straight from the database: one row.
    let url = database_url
        .unwrap_or_else(|| format!("sqlite://{}", dir.path().join("history.db").display()));
    let history = tower_backend::history::History::connect(&url)
        .await
        .unwrap();
    let rows = history.newest(Some("Python"), 100).await.unwrap();
    assert_eq!(rows.iter().filter(|r| r.service == service).count(), 1);
    assert_eq!(tower.interrupt().await.unwrap().code(), Some(0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_thousand_concurrent_posts_leave_one_row_in_sqlite() {
    thousand_concurrent_posts(None).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_thousand_concurrent_posts_leave_one_row_in_postgres() {
    thousand_concurrent_posts(Some(postgres_database().await.unwrap())).await;
}

/// Singleton work takes turns through PostgreSQL: one replica holds a lock at a time, the
/// others are told no (or wait), and the lock ends with its holder.
#[tokio::test]
async fn replicas_take_turns_through_postgres_advisory_locks() {
    use std::time::Duration;
    use tower_backend::history::History;
    let url = postgres_database().await.unwrap();
    let (one, two) = (
        History::connect(&url).await.unwrap(),
        History::connect(&url).await.unwrap(),
    );
    let held = one
        .try_exclusive("tower:release-recorder")
        .await
        .unwrap()
        .expect("nobody holds it yet");
    assert!(two
        .try_exclusive("tower:release-recorder")
        .await
        .unwrap()
        .is_none());
    // Not even the same replica twice: the lock is its holder's alone.
    assert!(one
        .try_exclusive("tower:release-recorder")
        .await
        .unwrap()
        .is_none());
    // Another name is another lock.
    assert!(two
        .try_exclusive("pull request acme/x b")
        .await
        .unwrap()
        .is_some());
    // A waiter gets it once the holder lets go (its connection closed).
    let waiter = tokio::spawn(async move {
        two.exclusive("tower:release-recorder", Duration::from_secs(10))
            .await
            .unwrap()
            .is_some()
    });
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(!waiter.is_finished(), "it waits while the lock is held");
    drop(held);
    assert!(waiter.await.unwrap(), "taken once the holder let go");
    let dir = tempfile::tempdir().unwrap();
    let sqlite = History::connect(&format!(
        "sqlite://{}?mode=rwc",
        dir.path().join("h.db").display()
    ))
    .await
    .unwrap();
    // In SQLite (one replica) no other replica can hold it; this process's tasks take turns.
    let a = sqlite.try_exclusive("x").await.unwrap().expect("free");
    assert!(
        sqlite.try_exclusive("x").await.unwrap().is_none(),
        "held by a"
    );
    assert!(
        sqlite.try_exclusive("y").await.unwrap().is_some(),
        "another lock"
    );
    drop(a);
    assert!(sqlite.try_exclusive("x").await.unwrap().is_some(), "let go");
}
