//! Tower's integration tests: one binary, a module per area.
//!
//! - [`support`] — starting `tower demo` and a headless Chromium for a test.
//! - [`auth`] — Backstage user tokens: every way one can be wrong, key rotation, the simulated Backstage's.
//! - [`backstage`] — catalog refresh and lookup against a real Backstage backend.
//! - [`tidy`] — invariants of the code base itself (the `shared` crate stays pure).
//! - [`provisioning`] — the provisioning derivation over `fixtures/provisioning/`.
//! - [`provisioning_props`] — invariants under shuffled and corrupted snapshots (proptest).
//! - [`simulator`] — the simulated platform through kubectl and a kube-rs watcher.
//! - [`steady_world`] — proptest: the demo world keeps what world tests rely on at any start.
//! - [`hostile_input`] — proptest: parsers and the history POST never panic and name the field.
//! - [`http`] — the demo's HTTP surface through a real socket.
//! - [`filing`] — the backend's filing of objects by service derives what the whole snapshot does,
//!   however objects arrive and move.
//! - [`faults`] — GitHub rate limits injected into the simulator: waited out, not hammered.
//! - [`history`] — 1,000 concurrent POSTs of one run to `tower serve`, SQLite and PostgreSQL.
//! - [`routes`] — every backend route against the simulated platform through the real clients.
//! - [`cloud_deploys`] — the cloud deploy derivation over `fixtures/cloud-deploys/`.
//! - [`cli`] — the `tower` command line and its errors.
//! - [`contract`] — the OpenAPI document: valid, declaring every field the answer types send,
//!   and Schemathesis finding nothing against `tower demo`.
//! - [`browser`] — the app in headless Chromium, driven through chromedriver, a module per page.
//! - [`deployments`], [`canary_actions`], [`releases`], [`promotions`], [`records`],
//!   [`runtime`], [`config`], [`dora`], [`activity`], [`pipelines`] — each tab's derivation and
//!   routes, and the writes it makes through Git or Argo CD.
//! - [`state`] — one truth per service and environment: `tower state` and `tower fleet`.
//! - [`gitops`] — the one GitHub write path: fifty presses make one commit.
//! - [`replicas`] — two `tower serve` on one PostgreSQL, one killed mid-rollout.
//! - [`image`] — the OCI image: read as a registry would, its binary run.
//! - [`deploy`] — the Kubernetes manifests in `deploy/`, rendered by kubectl.
//! - [`change_to_screen`] — a PR merge and Kubernetes changes reaching an open page, and the
//!   page telling Tower's time like the API at 20×.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

mod activity;
mod auth;
mod backstage;
mod browser;
mod canary_actions;
mod change_to_screen;
mod cli;
mod cloud_deploys;
mod config;
mod contract;
mod deploy;
mod deployments;
mod dora;
mod faults;
mod filing;
mod gitops;
mod history;
mod hostile_input;
mod http;
mod image;
mod pipelines;
mod promotions;
mod provisioning;
mod provisioning_props;
mod records;
mod releases;
mod replicas;
mod routes;
mod runtime;
mod simulator;
mod state;
mod steady_world;
mod support;
mod tidy;
