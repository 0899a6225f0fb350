//! Tower's domain crate: the types that cross the wire between the backend and the
//! browser, and the pure derivations both sides run on them.
//!
//! Invariants (checked by `tests/it/tidy.rs`):
//! - no IO and no clock reads: every derivation that depends on time takes `now`;
//! - no async runtime, Kubernetes, GitHub, database or browser crates in the dependency tree;
//! - builds for `wasm32-unknown-unknown` and native alike.
//!
//! Module map:
//! - [`activity`] — the fleet's recent activity: releases, canaries, failed builds,
//!   finished provisions and Tower's pull requests, newest first.
//! - [`ansi`] — a log line's ANSI colours as runs of text with classes.
//! - [`api`] — every JSON answer of Tower's HTTP API and the events of `/api/events`.
//! - [`cloud`] — cloud deploys (ECS, Lambda, Container Apps) from Tekton deploy runs.
//! - [`config`] — the Config tab's read-only half: an app's synchronised secrets (stale or
//!   not) and the resources its Crossplane XR composes.
//! - [`dora`] — DORA's four keys from prod rollouts and merged changes (`docs/dora.md`).
//! - [`deployments`] — the Deployments tab: cloud deploys, or each environment's Argo CD
//!   Application and Argo Rollout (phase, steps, ReplicaSets, analysis) in plain words.
//! - [`evidence`] — supply-chain evidence for a deployed image: its build, Tekton Chains'
//!   signing, provenance, signature, transparency log entry and SBOM.
//! - [`fleet`] — the fleet overview: every app in every environment, and which cells
//!   need someone's attention.
//! - [`hangar`] — the platform's rules: how it names namespaces, repos and Applications,
//!   its XR kinds, request PRs, the kinds Tower watches.
//! - [`links`] — links from cluster and GitHub data: `https:` on the expected host only.
//! - [`kube`] — Kubernetes objects of any kind, read leniently, with their conditions.
//! - [`pipelines`] — the Pipelines tab: a service's runs (commit, image, trigger, outcome),
//!   paged by cursor, and each run's graph of tasks laid out in columns.
//! - [`pulls`] — the Pull requests tab: a service's PRs stitched by commit to their runs,
//!   and a merged one to its image and the environments running it.
//! - [`provisioning`] — provisioning progress: steps, groups, events, typical durations.
//! - [`slo`] — error budgets and the SRE workbook's multiwindow burn-rate alerts.
//! - [`snapshot`] — the derivations' input: cluster objects, pull requests, catalog, history, memory.
//! - [`tekton`] — PipelineRuns and TaskRuns: status, times, results, params.
//! - [`time`] — human wording for ages and durations, given `now`.
//! - [`values`] — config files as forms: their schemas, fields, lossless edits and problems.

pub mod activity;
pub mod ansi;
pub mod api;
pub mod cloud;
pub mod config;
pub mod deployments;
pub mod dora;
pub mod evidence;
pub mod fleet;
pub mod hangar;
pub mod kube;
pub mod links;
pub mod pipelines;
pub mod provisioning;
pub mod pulls;
pub mod records;
pub mod releases;
pub mod rollout_actions;
pub mod runtime;
pub mod slo;
pub mod snapshot;
pub mod tekton;
pub mod time;
pub mod values;
