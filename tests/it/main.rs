//! Tower's integration tests: one binary, a module per area.
//!
//! - [`support`] — starting `tower demo` and a headless Chromium for a test.
//! - [`tidy`] — invariants of the code base itself (the `shared` crate stays pure).
//! - [`provisioning`] — the provisioning derivation over `fixtures/provisioning/`.
//! - [`provisioning_props`] — invariants under shuffled and corrupted snapshots (proptest).
//! - [`simulator`] — the simulated platform through kubectl and a kube-rs watcher.
//! - [`http`] — the demo's HTTP surface through a real socket.
//! - [`cloud_deploys`] — the cloud deploy derivation over `fixtures/cloud-deploys/`.
//! - [`cli`] — the `tower` command line and its errors.
//! - [`browser`] — the app in headless Chromium, driven through chromedriver.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

mod browser;
mod cli;
mod cloud_deploys;
mod http;
mod provisioning;
mod provisioning_props;
mod simulator;
mod support;
mod tidy;
