//! Tower's backend: a thin axum service that serves the built frontend and the JSON API.
//!
//! Module map (arrows point down: `app` → `routes` → `state` → `live`/`source` → …):
//! - [`cli`] — the `tower` command line (clap): `demo`, `serve`, `provisioning`, `cloud-deploys`.
//! - [`server`] — binding, the "running at" line, graceful shutdown.
//! - [`app`] — [`app::router`] builds the whole HTTP surface from a [`state::AppState`];
//!   tests call it directly.
//! - [`routes`] — one module per JSON endpoint; answers are `tower_shared::api` types.
//! - [`auth`] — who is calling: Backstage user tokens, tool tokens, an authenticating proxy;
//!   [`access`] — who may act on a service (its catalog owner, or a granted tool).
//! - [`gitops`] — the one GitHub write path: commits and pull requests on GitOps repos.
//! - [`state`] — [`state::AppState`], what the routes read.
//! - [`source`] — where derivations come from: a snapshot file, or [`live`].
//! - [`live`] — the live source: kube-rs watch caches per cluster, GitHub through octocrab,
//!   Backstage's catalog, and the deriver thread that keeps every view ready.
//! - [`filed`] — objects at rest (compact JSON), filed by service, and what each service's
//!   part feeds the fleet and provisioning, re-derived only where a change touched.
//! - [`derived`] — a derivation and its fleet-wide views; [`tabs`] — every service's tabs,
//!   made once per change; [`views`] — a view as bytes (ETag, brotli, gzip, 304).
//! - [`history`] — provisioning history in SQLite or PostgreSQL (sqlx).
//! - [`records`] — the release recorder: each prod release's record proposed once, by pull
//!   request; [`export`] — a record as HTML and PDF.
//! - [`prometheus`] — Prometheus' query API for the Runtime tab, within a deadline.
//! - [`metrics`] — `/metrics`.
//! - [`config`] — `tower.yaml` and its environment overrides.
//! - [`clock`] — Tower's clock, the one place time is read; [`outbound`] — the HTTP client
//!   for Argo CD and Backstage.
//! - [`assets`] — the built frontend: content types, precompressed files, cache headers.
//! - [`offline`] — `tower provisioning` and `tower cloud-deploys`: snapshot file in, JSON out.
//! - [`demo`] — `tower demo`: starts the simulated platform and writes Tower's config for it.
//!
//! Invariant: Tower never writes to a cluster. Every change it makes is a Git commit or a
//! pull request.

pub mod access;
pub mod app;
pub mod assets;
pub mod auth;
pub mod cli;
pub mod clock;
pub mod config;
pub mod demo;
pub mod derived;
pub mod export;
pub mod filed;
pub mod gitops;
pub mod history;
pub mod live;
pub mod metrics;
pub mod offline;
pub mod outbound;
pub mod prometheus;
pub mod records;
pub mod routes;
pub mod server;
pub mod source;
pub mod state;
pub mod tabs;
pub mod views;
