//! The API contract, checked by outside tools and against the wire types:
//! - `openapi-spec-validator` accepts `backend/openapi.yaml`;
//! - every field every `shared::api` answer type serialises is in the document's schema for
//!   it (a type that gains a field the document lacks fails here);
//! - Schemathesis, run against a `tower demo` signed in as its guest, finds nothing: no 5xx,
//!   no undocumented status, no answer off its schema, no valid request refused, no invalid
//!   one accepted.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::Command;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
use serde::Serialize;
use serde_json::{json, Value};
use tower_shared::api::*;
use tower_shared::argo::{HealthStatus, RolloutPhase, SyncStatus};
use tower_shared::cicd::FirstEnvironment;
use tower_shared::fleet::{Fleet, FleetApp, FleetCell, RolloutState};
use tower_shared::github::{GitHubUser, PullRequest};
use tower_shared::hangar::ServiceKind;
use tower_shared::kube::Object;
use tower_shared::provisioning::{
    CreatedResource, Event, Group, Link, ResourceState, ServiceProgress, Step, StepId, StepStatus,
    TypicalSource,
};
use tower_shared::snapshot::{CatalogEntity, CatalogMetadata, RecordedRun, Snapshot};
use tower_shared::values::{DiffLine, LineChange};

use crate::support::{root, Demo};

/// A tool `cargo xtask test` installed, named by `env`.
fn tool(env: &str) -> anyhow::Result<PathBuf> {
    let path = std::env::var_os(env).map(PathBuf::from).with_context(|| {
        format!("{env} is not set: run the tests with `cargo xtask test` (it installs the tool)")
    })?;
    anyhow::ensure!(path.is_file(), "{} is missing", path.display());
    Ok(path)
}

fn document() -> Value {
    serde_yaml_ng::from_str(tower_backend::routes::OPENAPI_YAML).expect("openapi.yaml is YAML")
}

#[test]
fn the_openapi_document_is_valid() {
    let validator = tool("TOWER_OPENAPI_SPEC_VALIDATOR").unwrap();
    let out = Command::new(validator)
        .arg(root().join("backend/openapi.yaml"))
        .output()
        .unwrap();
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "openapi-spec-validator: {said}");
    assert!(said.contains("OK"), "{said}");
}

/// The schema `schema` names, following `$ref`s.
fn resolve<'d>(doc: &'d Value, schema: &'d Value) -> &'d Value {
    match schema.get("$ref").and_then(Value::as_str) {
        Some(reference) => {
            let pointer = reference.trim_start_matches('#');
            resolve(
                doc,
                doc.pointer(pointer)
                    .unwrap_or_else(|| panic!("no {reference}")),
            )
        }
        None => schema,
    }
}

/// Every place in `value` whose key the schema does not declare, as JSON pointers.
fn undeclared(doc: &Value, schema: &Value, value: &Value, at: &str, out: &mut Vec<String>) {
    let schema = resolve(doc, schema);
    // allOf: every part applies; oneOf/anyOf: the parts that declare anything for this value.
    let parts: Vec<&Value> = ["allOf", "oneOf", "anyOf"]
        .iter()
        .flat_map(|k| {
            schema
                .get(*k)
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
        })
        .map(|p| resolve(doc, p))
        .collect();
    match value {
        Value::Object(map) => {
            let mut properties: BTreeMap<&str, &Value> = BTreeMap::new();
            let mut additional: Option<&Value> = schema.get("additionalProperties");
            let mut open = schema.get("properties").is_none()
                && schema.get("additionalProperties").is_none()
                && parts.is_empty();
            for s in std::iter::once(schema).chain(parts.iter().copied()) {
                if let Some(p) = s.get("properties").and_then(Value::as_object) {
                    properties.extend(p.iter().map(|(k, v)| (k.as_str(), v)));
                }
                if s.get("additionalProperties").is_some() {
                    additional = s.get("additionalProperties");
                }
                if s.get("type") == Some(&json!("object"))
                    && s.get("properties").is_none()
                    && s.get("additionalProperties").is_none()
                {
                    open = true;
                }
            }
            for (key, child) in map {
                let here = format!("{at}/{key}");
                match (properties.get(key.as_str()), additional) {
                    (Some(s), _) => undeclared(doc, s, child, &here, out),
                    (None, Some(s)) if s.is_object() => undeclared(doc, s, child, &here, out),
                    _ if open => {}
                    _ => out.push(here),
                }
            }
        }
        Value::Array(items) => {
            let item_schema = std::iter::once(schema)
                .chain(parts.iter().copied())
                .find_map(|s| s.get("items"));
            if let Some(item_schema) = item_schema {
                for (i, item) in items.iter().enumerate() {
                    undeclared(doc, item_schema, item, &format!("{at}/{i}"), out);
                }
            }
        }
        _ => {}
    }
}

fn at(text: &str) -> chrono::DateTime<chrono::Utc> {
    text.parse().unwrap()
}

/// One value of each answer type with every optional part present (a struct literal: a new
/// field must be written here, and then the document must declare it).
fn samples() -> Vec<(&'static str, Value)> {
    fn json_of(value: impl Serialize) -> Value {
        serde_json::to_value(value).unwrap()
    }
    let time = at("2026-11-30T10:00:00Z");
    let health = Health {
        stale: vec![StaleCluster {
            name: "dev".to_owned(),
            last_seen_at: Some(time),
            error: Some("refused".to_owned()),
        }],
        github: Some(GitHubTrouble::RateLimited { until: time }),
    };
    let pr = PullRequest {
        repo: "acme/gitops-shop".to_owned(),
        number: 7,
        title: "Onboarding: re-sync".to_owned(),
        state: "closed".to_owned(),
        created_at: Some(time),
        merged_at: Some(time),
        closed_at: Some(time),
        html_url: Some("https://github.com/acme/gitops-shop/pull/7".to_owned()),
        user: Some(GitHubUser {
            login: "dana".to_owned(),
        }),
        draft: false,
        head: Some(tower_shared::github::GitRef {
            branch: "resync".to_owned(),
            sha: "4f2d9c0e7a1b3c5d6e8f9a0b1c2d3e4f5a6b7c8d".to_owned(),
        }),
        merge_commit_sha: Some("9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c4d3e2f1a0b".to_owned()),
        requested_reviewers: vec![GitHubUser {
            login: "ana".to_owned(),
        }],
        reviews: Some(vec![tower_shared::github::Review {
            user: Some(GitHubUser {
                login: "bo".to_owned(),
            }),
            state: "APPROVED".to_owned(),
            submitted_at: Some(time),
        }]),
        check_runs: Some(vec![tower_shared::github::CheckRun {
            name: "commitlint".to_owned(),
            status: "completed".to_owned(),
            conclusion: Some("success".to_owned()),
            html_url: Some("https://github.com/acme/gitops-shop/runs/71".to_owned()),
            app: Some(tower_shared::github::CheckApp {
                slug: "github-actions".to_owned(),
            }),
        }]),
        statuses: Some(vec![tower_shared::github::CommitStatus {
            context: "dco".to_owned(),
            state: "success".to_owned(),
            description: Some("All commits are signed off".to_owned()),
            target_url: None,
        }]),
        labels: vec!["tower-promotion".to_owned()],
    };
    let step = Step {
        id: StepId::FirstBuild,
        title: "First build and checks".into(),
        status: StepStatus::Running,
        started_at: Some(time),
        ended_at: Some(time),
        duration_sec: Some(12),
        typical_sec: 420,
        typical_source: TypicalSource::Measured,
        detail: Some("3 of 5 tasks finished".into()),
        links: Arc::from(vec![Link {
            title: "Request PR #1".into(),
            url: "https://github.com/acme/hangar-tenants/pull/1".to_owned(),
        }]),
    };
    let service = ServiceProgress {
        name: "shop".into(),
        kind: Some(ServiceKind::NodeJS),
        group: Group::InFlight,
        created_at: Some(time),
        steps: vec![step],
        events: Arc::from(vec![Event {
            at_sec: 4,
            text: "▸ First build and checks started".to_owned(),
        }]),
        created: Arc::from(vec![CreatedResource {
            kind: "Repository".to_owned(),
            name: "shop".to_owned(),
            state: ResourceState::Ready,
        }]),
    };
    let object: Arc<Object> = Arc::new(
        Object::from_value(json!({"apiVersion": "tekton.dev/v1", "kind": "PipelineRun",
            "metadata": {"name": "build-1", "namespace": "app-shop-cicd", "uid": "u",
                         "resourceVersion": "9", "creationTimestamp": "2026-11-30T10:00:00Z",
                         "labels": {"tekton.dev/pipeline": "build"}, "annotations": {"a": "b"}},
            "spec": {}, "status": {"conditions": []}}))
        .unwrap(),
    );
    let run = RecordedRun {
        service: "shop".to_owned(),
        kind: "NodeJS".to_owned(),
        started_at: time,
        finished_at: time,
        steps: [("first-build".to_owned(), 300)].into(),
    };
    let mut snapshot = Snapshot::empty(time);
    snapshot.clusters = [("dev".to_owned(), vec![Arc::clone(&object)])].into();
    snapshot.pull_requests = Some(vec![pr.clone()]);
    snapshot.catalog = Some(vec![CatalogEntity {
        kind: "Component".to_owned(),
        metadata: CatalogMetadata {
            name: "shop".to_owned(),
            namespace: Some("default".to_owned()),
            annotations: [("a".to_owned(), "b".to_owned())].into(),
        },
    }]);
    snapshot.cicd = [("shop".to_owned(), "deploy: {}".to_owned())].into();
    snapshot.history = vec![run.clone()];
    snapshot.infisical_url = Some("https://infisical.example".to_owned());
    let request = RequestPr {
        kind: Some(ServiceKind::Go),
        name: "pay".to_owned(),
        pull_request: pr.clone(),
    };
    // The fleet's paused canary, for the Deployments and Releases examples.
    let paused = {
        let path = crate::support::root().join("fixtures/deployments/paused-canary.json");
        let text = std::fs::read_to_string(path).unwrap();
        tower_shared::snapshot::Snapshot::from_json(&text).unwrap()
    };
    vec![
        (
            "Error",
            json_of(ErrorBody {
                error: "e".to_owned(),
                field: Some("f".to_owned()),
                path: Some("/p".to_owned()),
                problems: vec![tower_shared::values::Problem {
                    path: "/replicas".to_owned(),
                    message: "0 is less than the minimum of 1".to_owned(),
                }],
            }),
        ),
        (
            "ProvisioningAnswer",
            json_of(ProvisioningAnswer {
                now: time,
                services: vec![service.clone()],
                health: health.clone(),
            }),
        ),
        (
            "Summary",
            json_of(Summary::of(std::slice::from_ref(&service), health.clone())),
        ),
        (
            "SnapshotAnswer",
            json_of(SnapshotAnswer {
                snapshot,
                health: health.clone(),
            }),
        ),
        (
            "DeploymentsAnswer",
            json_of(tower_shared::api::DeploymentsAnswer {
                deployments: tower_shared::deployments::derive_deployments(&paused, "flight-api"),
                health: health.clone(),
            }),
        ),
        (
            "ReleasesAnswer",
            json_of(tower_shared::api::ReleasesAnswer {
                releases: tower_shared::releases::of_snapshot(&paused, "flight-api"),
                health: health.clone(),
            }),
        ),
        (
            "Fleet",
            json_of(Fleet {
                generated_at: time,
                environments: vec!["dev".to_owned()],
                apps: vec![FleetApp {
                    name: "pay".to_owned(),
                    kind: "Go".to_owned(),
                    cells: vec![FleetCell {
                        environment: "dev".to_owned(),
                        namespace: None,
                        cloud: None,
                        sync: SyncStatus::Synced,
                        health: HealthStatus::Healthy,
                        running: Some("ghcr.io/acme/pay:1.0.0-abc1234".to_owned()),
                        arriving: Some(tower_shared::state::Arriving {
                            image: Some("ghcr.io/acme/pay:1.1.0-def5678".to_owned()),
                            weight: Some(0),
                            desired_weight: Some(40),
                            step: Some(1),
                            steps: 4,
                        }),
                        rollout: Some(RolloutState {
                            phase: RolloutPhase::Paused,
                            message: Some("CanaryPauseStep".to_owned()),
                            blue_green: true,
                        }),
                        troubles: vec![tower_shared::state::Trouble {
                            source: tower_shared::state::Source::Secrets,
                            severity: tower_shared::state::Severity::Attention,
                            words: "Secret pay-secrets stale".to_owned(),
                        }],
                        waits: vec!["Canary paused, a timed pause of 10m".to_owned()],
                        until: None,
                    }],
                    platform: vec!["Project pay-secrets failing: quota".to_owned()],
                    provisioning: None,
                }],
            }),
        ),
        (
            "LiveRuns",
            json_of(LiveRuns {
                app: "shop".to_owned(),
                cluster: "dev".to_owned(),
                namespace: "app-shop-cicd".to_owned(),
                pipeline_runs: vec![Arc::clone(&object)],
                task_runs: vec![object],
                stale: health.stale.clone(),
            }),
        ),
        (
            "PullRequests",
            json_of(PullRequests {
                repo: "acme/gitops-shop".to_owned(),
                pull_requests: vec![pr],
            }),
        ),
        ("RequestPr", json_of(request.clone())),
        (
            "PendingRequests",
            json_of(PendingRequests {
                repo: "acme/hangar-tenants".to_owned(),
                now: time,
                requests: vec![request],
            }),
        ),
        (
            "CicdConfig",
            json_of(CicdConfig {
                app: "shop".to_owned(),
                repo: "acme/gitops-shop".to_owned(),
                path: "glidepath/cicd.yaml".to_owned(),
                config: json!({"deploy": {}}),
                environments: Some(json!(["dev"])),
                first_environment: FirstEnvironment {
                    name: "dev".to_owned(),
                    cluster: Some("dev".to_owned()),
                    flight: false,
                    declared: true,
                    has_deploy_stage: Some(true),
                },
            }),
        ),
        ("RecordedRuns", json_of(RecordedRuns { runs: vec![run] })),
        (
            "TypicalDurations",
            json_of(TypicalDurations {
                kind: ServiceKind::Go,
                steps: vec![TypicalStep {
                    id: StepId::FirstBuild,
                    seconds: 420,
                    source: TypicalSource::Estimate,
                }],
            }),
        ),
        (
            "CatalogRefresh",
            json_of(CatalogRefresh {
                status: RefreshStatus::AlreadyRunning,
                message: "m".to_owned(),
            }),
        ),
        (
            "CatalogLookup",
            json_of(CatalogLookup {
                found: true,
                entity: Some(json!({"kind": "Component"})),
            }),
        ),
        (
            "AuthConfig",
            json_of(AuthConfig {
                backstage_origin: Some("http://b".to_owned()),
                guest_sign_in: true,
                open: false,
                proxy_user: Some("jane".to_owned()),
            }),
        ),
        (
            "GuestToken",
            json_of(GuestToken {
                token: "t".to_owned(),
            }),
        ),
        (
            "Access",
            json_of(Access {
                service: "shop".to_owned(),
                subject: "user:default/ana".to_owned(),
                owner: Some("group:default/team-b".to_owned()),
                may_promote: false,
                why_not: Some("user:default/ana is not in group:default/team-b".to_owned()),
            }),
        ),
        (
            "PromotionPreview",
            json_of(PromotionPreview {
                service: "shop".to_owned(),
                image: "ghcr.io/acme/shop:1.2.0-bbbbbbb".to_owned(),
                environment: "prod".to_owned(),
                how: tower_shared::cicd::Promotion::PullRequest,
                repo: "acme/gitops-shop".to_owned(),
                path: "glidepath/envs/prod.yaml".to_owned(),
                branch: "tower/promote-prod-1.2.0-bbbbbbb".to_owned(),
                seen: "0123abcd".to_owned(),
                diff: vec![
                    DiffLine {
                        change: LineChange::Removed,
                        text: "image: ghcr.io/acme/shop:1.1.0-aaaaaaa".to_owned(),
                    },
                    DiffLine {
                        change: LineChange::Added,
                        text: "image: ghcr.io/acme/shop:1.2.0-bbbbbbb".to_owned(),
                    },
                ],
                already: false,
                pull: Some(tower_shared::releases::PullRef {
                    number: 7,
                    url: Some("https://github.com/acme/gitops-shop/pull/7".to_owned()),
                }),
                access: Access {
                    service: "shop".to_owned(),
                    subject: "tool:release-bot".to_owned(),
                    owner: None,
                    may_promote: true,
                    why_not: None,
                },
            }),
        ),
        (
            "Comparison",
            json_of(tower_shared::releases::Comparison {
                service: "shop".to_owned(),
                from: "ghcr.io/acme/shop:1.1.0-aaaaaaa".to_owned(),
                to: "ghcr.io/acme/shop:1.2.0-bbbbbbb".to_owned(),
                repo: "acme/shop".to_owned(),
                url: Some("https://github.com/acme/shop/compare/a...b".to_owned()),
                commits: vec![tower_shared::releases::ComparedCommit {
                    sha: "b".repeat(40),
                    title: "Change 2".to_owned(),
                    author: Some("ana".to_owned()),
                    at: Some(time),
                    url: None,
                }],
                total: 1,
                pulls: vec![tower_shared::releases::ComparedPull {
                    number: 2,
                    title: "Change 2".to_owned(),
                    url: None,
                    author: Some("ana".to_owned()),
                    reviewers: Some(vec!["ben".to_owned()]),
                }],
                runs: vec!["shop-build-2".to_owned()],
                files_changed: 2,
                config: vec![tower_shared::releases::ConfigChange {
                    path: ".glidepath/cicd.yaml".to_owned(),
                    status: "modified".to_owned(),
                    patch: Some("-a\n+b".to_owned()),
                }],
            }),
        ),
        (
            "ArgoSyncAnswer",
            json_of(ArgoSyncAnswer {
                application: "shop-staging".to_owned(),
                force: true,
                message: "Argo CD is syncing shop-staging".to_owned(),
            }),
        ),
        (
            "RolloutActionsAnswer",
            json_of(tower_shared::api::RolloutActionsAnswer {
                application: "shop-prod".to_owned(),
                rollout: "shop".to_owned(),
                seen: "abc/3/1/false".to_owned(),
                actions: vec![tower_shared::rollout_actions::OfferedAction {
                    action: tower_shared::rollout_actions::RolloutAction::Abort,
                    label: "Abort: all traffic back to shop:1.1.0-aaaaaaa".to_owned(),
                    confirm: Some("Confirm abort".to_owned()),
                }],
            }),
        ),
        (
            "RolloutActionAnswer",
            json_of(tower_shared::api::RolloutActionAnswer {
                application: "shop-prod".to_owned(),
                action: tower_shared::rollout_actions::RolloutAction::Resume,
                message: "Argo CD ran resume".to_owned(),
            }),
        ),
        (
            "PromoteAnswer",
            json_of(PromoteAnswer {
                outcome: PromoteOutcome::PullRequestOpened,
                commit: None,
                pull: Some(tower_shared::releases::PullRef {
                    number: 7,
                    url: None,
                }),
                message: "Opened pull request #7".to_owned(),
            }),
        ),
        ("RecordsPage", json_of(record_page())),
        ("RecordAnswer", json_of(record_answer())),
        (
            "NotesAnswer",
            json_of(tower_shared::api::NotesAnswer {
                outcome: PromoteOutcome::PullRequestOpened,
                pull: tower_shared::releases::PullRef {
                    number: 8,
                    url: Some("https://github.com/acme/gitops-shop/pull/8".to_owned()),
                },
                message: "Opened pull request #8".to_owned(),
            }),
        ),
        (
            "ConfigAnswer",
            json_of(tower_shared::api::ConfigAnswer {
                service: "shop".to_owned(),
                environments: vec!["dev".to_owned(), "prod".to_owned()],
                made: tower_shared::config::Made {
                    secrets: vec![tower_shared::config::SecretSync {
                        kind: "ExternalSecret".to_owned(),
                        name: "shop-secrets".to_owned(),
                        namespace: "app-shop-prod".to_owned(),
                        cluster: "prod".to_owned(),
                        environment: Some("prod".to_owned()),
                        store: Some("infisical".to_owned()),
                        target: Some("shop-env".to_owned()),
                        keys: vec!["DATABASE_URL".to_owned()],
                        ready: Some(false),
                        reason: Some("SecretSyncedError".to_owned()),
                        message: Some("could not get secret data from provider".to_owned()),
                        last_refresh: Some(time),
                        refresh_interval_sec: Some(3600),
                        stale: true,
                    }],
                    composed: Some(tower_shared::config::Composed {
                        kind: "Go".to_owned(),
                        name: "shop".to_owned(),
                        ready: Some(false),
                        synced: Some(true),
                        error: Some("Unready resources: project".to_owned()),
                        resources: vec![tower_shared::config::ComposedResource {
                            api_version: "repo.github.m.upbound.io/v1alpha1".to_owned(),
                            kind: "Repository".to_owned(),
                            name: "shop-gitops".to_owned(),
                            ready: Some(true),
                            synced: Some(false),
                            error: Some("403 Forbidden".to_owned()),
                            external_name: Some("gitops-shop".to_owned()),
                            link: Some("https://github.com/acme/gitops-shop".to_owned()),
                        }],
                    }),
                },
                health: Health::default(),
            }),
        ),
        ("RuntimeAnswer", json_of(runtime_answer())),
        ("DoraAnswer", json_of(dora_answer())),
        (
            "ActivityAnswer",
            json_of(tower_shared::api::ActivityAnswer {
                items: vec![tower_shared::activity::Activity {
                    at: time,
                    service: "shop".to_owned(),
                    kind: tower_shared::activity::Kind::BuildFailed,
                    said: "shop's build run shop-build-7 failed.".to_owned(),
                    tab: "pipelines".to_owned(),
                    environment: Some("prod".to_owned()),
                    run: Some("shop-build-7".to_owned()),
                    url: Some("https://github.com/acme/shop/pull/7".to_owned()),
                }],
            }),
        ),
        ("ConfigFile", json_of(config_file())),
        (
            "ConfigDraft",
            json_of(tower_shared::api::ConfigDraft {
                service: "shop".to_owned(),
                file: "env:prod".to_owned(),
                base: "replicas: 3\n".to_owned(),
                text: "replicas: 3\n".to_owned(),
                edits: vec![tower_shared::values::Edit {
                    path: "/replicas".to_owned(),
                    value: Some("4".to_owned()),
                }],
                seen: Some("0123abcd".to_owned()),
            }),
        ),
        (
            "ConfigChecked",
            json_of(tower_shared::api::ConfigChecked {
                text: "replicas: 4\n".to_owned(),
                form: config_file().form,
                diff: vec![DiffLine {
                    change: LineChange::Added,
                    text: "replicas: 4".to_owned(),
                }],
                unchanged: false,
            }),
        ),
        (
            "ConfigSaved",
            json_of(tower_shared::api::ConfigSaved {
                outcome: "opened".to_owned(),
                pull: config_file().pull.unwrap(),
                message: "Opened pull request #8".to_owned(),
            }),
        ),
        (
            "Readiness",
            json_of(Readiness {
                ready: false,
                waiting: vec!["GitHub".to_owned()],
            }),
        ),
    ]
}

/// A DORA answer with every figure given, from the week `fixtures/dora/two-changes.json`
/// holds (a change brought by ancestry, a canary stopped), with a rollback's restore time
/// (the clusters keep none, `docs/dora.md`, so it is set here for the document's check).
fn dora_answer() -> tower_shared::api::DoraAnswer {
    let text = std::fs::read_to_string(root().join("fixtures/dora/two-changes.json")).unwrap();
    let snapshot = tower_shared::snapshot::Snapshot::from_json(&text).unwrap();
    let mut answer = tower_backend::tabs::dora_answer(
        Some("shop"),
        7,
        [("shop", snapshot.clone())],
        snapshot.now,
        &Health::default(),
    );
    let dora = &mut answer.report.dora;
    assert!(dora.lead_time.is_some() && !dora.prevented.is_empty() && dora.history_from.is_some());
    dora.time_to_restore = Some(tower_shared::dora::Durations {
        median_sec: 1800,
        p90_sec: 1800,
        counted: vec!["ghcr.io/acme/shop:1.3.0-d3d3d3d".to_owned()],
    });
    answer
}

/// A Runtime answer with every field given: a pod OOMKilled, an autoscaler, an Event, an
/// arrival, and figures over every window and series.
fn runtime_answer() -> tower_shared::api::RuntimeAnswer {
    use tower_shared::runtime;
    let time = at("2026-11-30T10:00:00Z");
    let arrivals = vec![runtime::Arrived {
        release: "1.42.0-ab12cd3".to_owned(),
        at: at("2026-11-30T04:00:00Z"),
    }];
    let mut readings = runtime::Readings::default();
    for asked in runtime::ASKED {
        if asked.range {
            let points = (0..=144)
                .map(|i| (time.timestamp() - 86_400 + i * 600, 0.0004))
                .collect();
            readings.series.insert(asked.key(), points);
        } else {
            readings.figures.insert(asked.key(), 0.0004);
        }
    }
    let slo = runtime::slo(
        &readings,
        &tower_shared::cicd::Targets::default(),
        &arrivals,
        time,
    );
    tower_shared::api::RuntimeAnswer {
        service: "shop".to_owned(),
        environments: vec![tower_shared::api::RuntimeEnvironment {
            place: runtime::Place {
                environment: "prod".to_owned(),
                cluster: Some("prod".to_owned()),
                namespace: "app-shop-prod".to_owned(),
                pods: vec![runtime::Pod {
                    name: "shop-6b7f9-x2kq1".to_owned(),
                    image: Some("ghcr.io/acme/shop:1.42.0-ab12cd3".to_owned()),
                    ready: "1/1".to_owned(),
                    phase: Some("Running".to_owned()),
                    restarts: 3,
                    last_termination: Some(runtime::Termination {
                        container: "app".to_owned(),
                        reason: "OOMKilled".to_owned(),
                        exit_code: Some(137),
                        at: Some(time),
                    }),
                    waiting: Some("CrashLoopBackOff".to_owned()),
                    created_at: Some(time),
                    node: Some("ip-10-0-1-10.ec2.internal".to_owned()),
                }],
                autoscaler: Some(runtime::Autoscaler {
                    name: "shop".to_owned(),
                    min: Some(3),
                    max: Some(6),
                    current: Some(3),
                    desired: Some(5),
                }),
                events: vec![runtime::Event {
                    warning: true,
                    reason: "BackOff".to_owned(),
                    message: "Back-off restarting failed container".to_owned(),
                    object: "Pod/shop-6b7f9-x2kq1".to_owned(),
                    count: Some(3),
                    last_at: Some(time),
                }],
                arrivals,
            },
            slo: Some(slo),
            measured_at: Some(time),
        }],
        prometheus: tower_shared::api::PrometheusState {
            state: tower_shared::api::PrometheusAnswers::NotAnswering,
            message: Some("Prometheus did not answer within 5 s".to_owned()),
            since: Some(time),
        },
        health: Health::default(),
    }
}

/// A config file whose form has every kind of field, an unknown key and a problem.
fn config_file() -> tower_shared::api::ConfigFile {
    use tower_shared::values::{self, FileKind};
    let text = "image: ghcr.io/acme/shop:1.2.0-bbbbbbb\nreplicas: 0\nlogLevel: info\nenv:\n  A: b\nnote: kept\n";
    let pull = tower_shared::api::ConfigPull {
        number: 8,
        url: Some("https://github.com/acme/gitops-shop/pull/8".to_owned()),
        title: "Change shop's prod values".to_owned(),
        branch: "tower/config-env-prod-0123abcd".to_owned(),
    };
    tower_shared::api::ConfigFile {
        service: "shop".to_owned(),
        file: tower_shared::api::ConfigFileRef {
            id: "env:prod".to_owned(),
            kind: FileKind::EnvValues,
            label: "prod values".to_owned(),
            repo: "acme/gitops-shop".to_owned(),
            path: "glidepath/envs/prod.yaml".to_owned(),
        },
        branch: pull.branch.clone(),
        seen: Some("0123abcd".to_owned()),
        text: text.to_owned(),
        form: values::form(FileKind::EnvValues, text),
        pulls: vec![pull.clone()],
        pull: Some(pull),
        access: tower_shared::api::Access {
            service: "shop".to_owned(),
            subject: "user:default/ana".to_owned(),
            owner: Some("group:default/team-a".to_owned()),
            may_promote: true,
            why_not: None,
        },
    }
}

/// A record with every part filled: the human part, a sign-off, pulls, evidence.
fn record_sample() -> tower_shared::records::Record {
    use tower_shared::records::*;
    let time = at("2026-11-30T08:00:00Z");
    Record {
        schema: SCHEMA.to_owned(),
        service: "shop".to_owned(),
        release: "1.2.0-bbbbbbb".to_owned(),
        image: "ghcr.io/acme/shop:1.2.0-bbbbbbb".to_owned(),
        version: Some("1.2.0".to_owned()),
        commit: Some("b".repeat(40)),
        digest: Some(format!("sha256:{}", "c".repeat(64))),
        build: Some((
            "shop-build-2".to_owned(),
            tower_shared::pipelines::Outcome::Succeeded,
        )),
        pulls: Some(vec![tower_shared::releases::ComparedPull {
            number: 2,
            title: "Change 2".to_owned(),
            url: None,
            author: Some("ana".to_owned()),
            reviewers: Some(vec!["bo".to_owned()]),
        }]),
        transitions: vec![Transition {
            environment: "prod".to_owned(),
            arrived_at: Some(time),
            after_seconds: Some(3_600),
        }],
        gates: vec![Gate {
            name: "canary step 1: 20% of traffic".to_owned(),
            passed: Some(true),
            detail: "done".to_owned(),
        }],
        evidence: Some(EvidenceRead {
            signing: tower_shared::evidence::Signing::Signed,
            provenance: true,
            signature: true,
            sbom: true,
            transparency: false,
            summary: "Signed by Tekton Chains".to_owned(),
        }),
        confidence: confidence(&ConfidenceInputs::default()),
        human: Some(HumanPart {
            summary: "Faster checkout".to_owned(),
            risk: Risk::Low,
            checked: "Canary analysis".to_owned(),
            signed_off: Some(SignOff {
                by: "ana".to_owned(),
                at: time,
            }),
        }),
    }
}

fn record_page() -> tower_shared::records::RecordsPage {
    let record = record_sample();
    tower_shared::records::page_of(
        "shop",
        vec![tower_shared::records::RecordRow::of(
            &record,
            Some(tower_shared::releases::PullRef {
                number: 4,
                url: None,
            }),
        )],
        tower_shared::records::RecordFilter {
            risk: Some(tower_shared::records::Risk::Low),
            signed_off: Some(true),
        },
        1,
    )
}

fn record_answer() -> tower_shared::api::RecordAnswer {
    tower_shared::api::RecordAnswer {
        record: record_sample(),
        repo: "acme/gitops-shop".to_owned(),
        path: "glidepath/releases/1.2.0-bbbbbbb.yaml".to_owned(),
        seen: Some("abcdef0".to_owned()),
        proposed: None,
        notes: vec![tower_shared::releases::PullRef {
            number: 9,
            url: None,
        }],
        access: tower_shared::api::Access {
            service: "shop".to_owned(),
            subject: "user:default/ana".to_owned(),
            owner: Some("group:default/team-a".to_owned()),
            may_promote: true,
            why_not: None,
        },
    }
}

#[test]
fn the_document_declares_every_field_the_answer_types_send() {
    let doc = document();
    let mut missing = Vec::new();
    let samples = samples();
    for (name, value) in &samples {
        let schema = doc
            .pointer(&format!("/components/schemas/{name}"))
            .unwrap_or_else(|| panic!("the document has no schema {name}"));
        undeclared(&doc, schema, value, name, &mut missing);
    }
    assert!(
        missing.is_empty(),
        "fields sent but not in backend/openapi.yaml: {missing:#?}"
    );
    // The check sees a field the document lacks.
    let mut extra = samples[0].1.clone();
    extra["surprise"] = json!(1);
    let mut found = Vec::new();
    undeclared(
        &doc,
        &doc["components"]["schemas"]["Error"],
        &extra,
        "Error",
        &mut found,
    );
    assert_eq!(found, ["Error/surprise"]);
}

/// The last `n` lines of `text`.
fn tail(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

#[tokio::test]
async fn schemathesis_finds_no_failure() {
    let st = tool("TOWER_SCHEMATHESIS").unwrap();
    // The world stands still at a fixed start, so the same seed makes the same run (the
    // stories' releases fall on their cadences from the epoch: another start, other data).
    let demo = Demo::start_with(&["--speed", "0", "--start", "2026-11-02T09:30:00Z"])
        .await
        .unwrap();
    let token = demo.guest_token().await.unwrap();
    let base = demo.url.trim_end_matches('/').to_owned();
    let schema = root().join("backend/openapi.yaml");
    // Schemathesis keeps a cache in its working directory: a folder of its own.
    let scratch = tempfile::tempdir().unwrap();
    let cwd = scratch.path().to_owned();
    let run = tokio::task::spawn_blocking(move || {
        Command::new(st)
            .current_dir(cwd)
            .arg("--config-file")
            .arg(root().join("tests/contract/schemathesis.toml"))
            .arg("run")
            .arg(&schema)
            .args(["--url", &base])
            .args(["--header", &format!("Authorization: Bearer {token}")])
            .args(["--exclude-path", "/api/events"])
            .args(["--seed", "1", "--max-examples", "50", "--no-color"])
            .args(["--generation-database", "none"])
            .args(["--request-timeout", "10"])
            .output()
    });
    let out = tokio::time::timeout(Duration::from_secs(600), run)
        .await
        .expect("Schemathesis ran over 10 minutes")
        .unwrap()
        .unwrap();
    let said = String::from_utf8_lossy(&out.stdout).into_owned();
    println!("{}", tail(&said, 30));
    assert!(
        out.status.success(),
        "Schemathesis found failures:\n{said}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // The figures README.md gives: "| N operations, at least M generated requests, 0 failures".
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    let row = readme
        .lines()
        .find(|l| l.starts_with("| API contract"))
        .expect("README.md's contract row");
    let figure = |after: &str| -> String {
        let words: Vec<&str> = row.split_whitespace().collect();
        let i = words.iter().position(|w| *w == after).expect(after);
        words[i - 1]
            .replace(',', "")
            .trim_start_matches('|')
            .to_owned()
    };
    let (operations, cases) = (figure("operations,"), figure("generated"));
    assert!(
        said.contains(&format!("Tested: {operations}\n")),
        "not the {operations} operations README.md gives:\n{said}"
    );
    // Hypothesis generates a case or two more on some machines: README gives the fewest,
    // "at least", and every case generated passed.
    let cases: u64 = cases.parse().expect("README's count");
    let generated = said
        .lines()
        .find_map(|line| {
            let (generated, rest) = line.trim().split_once(" generated, ")?;
            let passed = rest.split_once(" passed")?.0;
            Some((generated.parse::<u64>().ok()?, passed.parse::<u64>().ok()?))
        })
        .unwrap_or_else(|| panic!("no count of cases in:\n{said}"));
    assert!(
        generated.0 >= cases && generated.0 == generated.1,
        "{} generated and {} passed, not at least the {cases} README.md gives:\n{said}",
        generated.0,
        generated.1
    );
}
