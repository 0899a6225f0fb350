//! Hostile input (proptest, where a fuzzer would need a nightly toolchain): the snapshot
//! parser, cicd.yaml, the config file and the history POST body never panic, and a refusal
//! always names what was wrong.

use std::sync::{Arc, OnceLock};

use axum::body::Body;
use http::{Request, StatusCode};
use proptest::prelude::*;
use serde_json::{json, Value};
use tower::ServiceExt as _;
use tower_backend::{app, assets, config, history};
use tower_shared::cicd::first_environment;
use tower_shared::provisioning::derive_provisioning;
use tower_shared::snapshot::Snapshot;

/// Any JSON value, a few levels deep.
fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        (-1e12f64..1e12).prop_map(Value::from),
        ".{0,24}".prop_map(Value::from),
        "20[0-9]{2}-[01][0-9]-[0-3][0-9]T[0-2][0-9]:[0-5][0-9]:[0-5][0-9]Z".prop_map(Value::from),
    ];
    leaf.prop_recursive(3, 48, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::from),
            prop::collection::btree_map("[a-zA-Z-]{0,12}", inner, 0..6)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

/// A history run with every field possibly wrong: real keys, any values.
fn run_body() -> impl Strategy<Value = Value> {
    let field = |key: &'static str, good: Value| {
        prop_oneof![
            3 => Just(Some(good)),
            1 => Just(None),
            2 => json_value().prop_map(Some),
        ]
        .prop_map(move |v| (key, v))
    };
    (
        field("service", json!("svc-a")),
        field("kind", json!("NodeJS")),
        field("startedAt", json!("2026-11-30T08:00:00Z")),
        field("finishedAt", json!("2026-11-30T08:20:00Z")),
        field("steps", json!({"repositories": 60})),
        prop::collection::btree_map("[a-z]{1,8}", json_value(), 0..2),
    )
        .prop_map(|(a, b, c, d, e, extra)| {
            let mut object: serde_json::Map<String, Value> = extra.into_iter().collect();
            for (key, value) in [a, b, c, d, e] {
                if let Some(value) = value {
                    object.insert(key.to_owned(), value);
                }
            }
            Value::Object(object)
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn the_snapshot_parser_never_panics(text in ".{0,200}", value in json_value()) {
        if let Err(err) = Snapshot::from_json(&text) {
            prop_assert!(!err.path.is_empty());
        }
        // Any JSON where a snapshot's fields go: parsed or refused, and derivable if parsed.
        let mut snapshot = json!({"now": "2026-11-30T10:00:00Z"});
        if let Some(fields) = value.as_object() {
            for (key, v) in fields {
                snapshot[key] = v.clone();
            }
        }
        snapshot["clusters"] = json!({"dev": [value.clone()]});
        match Snapshot::from_json(&snapshot.to_string()) {
            Ok(parsed) => { derive_provisioning(&parsed); }
            Err(err) => prop_assert!(!err.path.is_empty()),
        }
    }

    #[test]
    fn cicd_yaml_never_panics(text in "(deploy:|environments:|  - |name: |type: flight|cluster: |[a-z]{1,6}|\n| ){0,40}") {
        let env = first_environment(Some(&text));
        prop_assert!(!env.name.is_empty());
    }

    #[test]
    fn the_config_parser_names_the_field(text in "(clusters:|  - name: |listen: |github:|  owner: |databaseUrl: |frameAncestors: |[a-zA-Z0-9:/._-]{1,12}|\n| ){0,30}") {
        if let Err(err) = config::Config::parse(&text, "tower.yaml", |_| None) {
            prop_assert!(err.to_string().starts_with("tower.yaml: "), "{}", err);
        }
    }
}

/// The token of the tool that records runs in [`tower`].
const RECORDER: &str = "run-recorder-token-0123456789";

/// Tower with a fixed snapshot and SQLite history, driven in-process; the history's runs
/// come from a tool ([`RECORDER`]), which may record runs of services Tower does not see.
fn tower() -> &'static (tokio::runtime::Runtime, axum::Router, tempfile::TempDir) {
    static TOWER: OnceLock<(tokio::runtime::Runtime, axum::Router, tempfile::TempDir)> =
        OnceLock::new();
    TOWER.get_or_init(|| {
        let runtime = tokio::runtime::Runtime::new().unwrap();
        let dir = tempfile::tempdir().unwrap();
        let url = format!("sqlite://{}?mode=rwc", dir.path().join("h.db").display());
        let history = runtime.block_on(history::History::connect(&url)).unwrap();
        let snapshot = Snapshot::empty(crate::support::test_start());
        let mut config = config::Config::default();
        config.tokens.push(config::ToolToken {
            subject: "tool:run-recorder".to_owned(),
            token: config::Secret(RECORDER.to_owned()),
            routes: vec!["/provisioning-history/*".to_owned()],
        });
        let state = tower_backend::state::AppState::fixed(
            None,
            Arc::new(tower_backend::source::Fixed::new(snapshot, None)),
            history,
            tower_backend::auth::Gate::from_config(&config, reqwest::Client::new()),
        );
        let dist = dir.path().join("dist");
        std::fs::create_dir_all(&dist).unwrap();
        std::fs::write(dist.join("index.html"), "<!doctype html>").unwrap();
        let router = app::router(state, &assets::Dist::open(&dist).unwrap());
        (runtime, router, dir)
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn history_posts_are_stored_or_refused_by_field(body in run_body()) {
        let (runtime, router, _) = tower();
        let request = Request::post("/provisioning-history/runs")
            .header("content-type", "application/json")
            .header("authorization", format!("Bearer {RECORDER}"))
            .body(Body::from(body.to_string()))
            .unwrap();
        let response = runtime.block_on(router.clone().oneshot(request)).unwrap();
        let status = response.status();
        let bytes = runtime.block_on(axum::body::to_bytes(response.into_body(), 1 << 20)).unwrap();
        let answer: Value = serde_json::from_slice(&bytes).unwrap();
        prop_assert!(
            [StatusCode::CREATED, StatusCode::OK, StatusCode::BAD_REQUEST, StatusCode::CONFLICT]
                .contains(&status),
            "{status} for {body}: {answer}"
        );
        if status == StatusCode::BAD_REQUEST {
            prop_assert!(answer["field"].as_str().is_some_and(|f| !f.is_empty()), "{answer}");
        } else if status == StatusCode::CONFLICT {
            // svc-a has as many runs as a service may.
            prop_assert_eq!(&answer["field"], "service", "{}", answer);
        } else {
            // Stored exactly as the first record of this service and start said.
            prop_assert_eq!(&answer["service"], &body["service"]);
        }
    }
}
