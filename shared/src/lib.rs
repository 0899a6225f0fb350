//! Tower's domain crate: the types that cross the wire between the backend and the
//! browser, and the pure derivations both sides run on them.
//!
//! Invariants (checked by `tests/it/tidy.rs`):
//! - no IO and no clock reads: every derivation that depends on time takes `now`;
//! - no async runtime, Kubernetes, GitHub, database or browser crates in the dependency tree;
//! - builds for `wasm32-unknown-unknown` and native alike.
//!
//! Module map, in floors: a module imports only from its own floor or below, never in a
//! circle (`tests/it/tidy.rs` checks).
//!
//! The ground floor — the platform's and its tools' vocabulary:
//! - [`kube`] — Kubernetes objects of any kind, read leniently, with their conditions.
//! - [`image`] — container image references: repository, tag, digest, release name, commit.
//! - [`argo`] — Argo CD's and Argo Rollouts' words: sync and health, a Rollout's phase, its
//!   stable and current ReplicaSets, an AnalysisRun's measurements.
//! - [`tekton`] — PipelineRuns and TaskRuns: status, times, results, params.
//! - [`github`] — GitHub's pull requests, reviews, check runs and commit statuses.
//! - [`time`] — human wording for ages and durations, given `now`; [`ansi`] — a log line's
//!   ANSI colours as runs of text with classes; [`slo`] — error budgets and the SRE
//!   workbook's multiwindow burn-rate alerts.
//! - [`hangar`] — the platform's rules: how it names namespaces, repos and Applications,
//!   its XR kinds, request PRs, the kinds Tower watches.
//! - [`cicd`] — an app's `cicd.yaml`: environments in promotion order, how each is promoted
//!   to, objectives.
//! - [`trim`] — what Tower keeps of an object (never what may be secret); [`links`] — links
//!   from cluster and GitHub data: `https:` on the expected host only.
//! - [`workload`] — what runs in a namespace: pods, the autoscaler, Events.
//! - [`snapshot`] — the derivations' input: cluster objects, pull requests, catalog,
//!   history, memory; [`served`] — what every answer about a service carries (the sources'
//!   health) and [`WholeTab`](served::WholeTab), a tab's answer served whole.
//!
//! Derivations, each a pure function of a snapshot (and `now` where time matters):
//! - [`provisioning`] — provisioning progress: steps, groups, events, typical durations.
//! - [`cloud`] — cloud deploys (ECS, Lambda, Container Apps) from Tekton deploy runs.
//! - [`evidence`] — supply-chain evidence for a deployed image: its build, Tekton Chains'
//!   signing, provenance, signature, transparency log entry and SBOM.
//! - [`pipelines`] — the Pipelines tab: a service's runs (commit, image, trigger, outcome),
//!   paged by cursor, and each run's graph of tasks laid out in columns.
//! - [`config`] — the Config tab's read-only half: an app's synchronised secrets (stale or
//!   not) and the resources its Crossplane XR composes; [`values`] — config files as forms:
//!   their schemas, fields, lossless edits and problems.
//! - [`state`] — one truth per service and environment: what runs, what is arriving (at
//!   its actual and desired weight), every trouble with its source, and what is only a
//!   wait; the fleet and the Deployments tab read it.
//! - [`fleet`] — the fleet overview: every app in every environment, and which cells need
//!   someone's attention.
//! - [`deployments`] — the Deployments tab: cloud deploys, or each environment's Argo CD
//!   Application and Argo Rollout (phase, steps, ReplicaSets, analysis) in plain words;
//!   [`rollout_actions`] — the canary actions a Rollout's state offers.
//! - [`pulls`] — the Pull requests tab: a service's PRs stitched by commit to their runs,
//!   and a merged one to its image and the environments running it.
//! - [`releases`] — the release matrix: each release across the environments, and where it
//!   can go next; [`records`] — release records and their confidence score.
//! - [`runtime`] — the Runtime tab: where an app runs, and its objectives from Prometheus.
//! - [`dora`] — DORA's four keys from prod rollouts and merged changes (`docs/dora.md`).
//! - [`activity`] — the fleet's recent activity: releases, canaries, failed builds,
//!   finished provisions and Tower's pull requests, newest first.
//!
//! The top floor:
//! - [`api`] — every JSON answer of Tower's HTTP API and the events of `/api/events`.

pub mod activity;
pub mod ansi;
pub mod api;
pub mod argo;
pub mod cicd;
pub mod cloud;
pub mod config;
pub mod deployments;
pub mod dora;
pub mod evidence;
pub mod fleet;
pub mod github;
pub mod hangar;
pub mod image;
pub mod kube;
pub mod links;
pub mod pipelines;
pub mod provisioning;
pub mod pulls;
pub mod records;
pub mod releases;
pub mod rollout_actions;
pub mod runtime;
pub mod served;
pub mod slo;
pub mod snapshot;
pub mod state;
pub mod tekton;
pub mod time;
pub mod trim;
pub mod values;
pub mod workload;

/// Calls `each` with every tab the backend serves whole at `GET /api/<id>?service=`: a new
/// such tab is its module and its line here (`ARCHITECTURE.md` has the whole recipe).
pub fn whole_tabs(each: &mut impl served::EachWholeTab) {
    each.tab::<api::DeploymentsAnswer>();
    each.tab::<api::ReleasesAnswer>();
    each.tab::<api::ConfigAnswer>();
}
