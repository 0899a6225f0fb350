//! Tower's backend: a thin axum service that serves the built frontend and the JSON API.
//!
//! Module map:
//! - [`auth`] — Backstage user tokens verified against the Backstage JWKS.
//! - [`cli`] — the `tower` command line (clap): `demo`, `serve`, `provisioning`, `cloud-deploys`.
//! - [`config`] — `tower.yaml` and its environment overrides.
//! - [`live`] — the live source: kube-rs watch caches per cluster ([`live::kube`]), GitHub
//!   through octocrab ([`live::github`]), and the deriver thread.
//! - [`history`] — provisioning history in SQLite or PostgreSQL (sqlx).
//! - [`metrics`] — `/metrics`.
//! - [`app`] — [`app::router`] builds the whole HTTP surface from an [`app::AppState`];
//!   tests call it directly.
//! - [`routes`] — one module per JSON endpoint.
//! - [`assets`] — the built frontend: content types, precompressed files, cache headers.
//! - [`offline`] — `tower provisioning` and `tower cloud-deploys`: snapshot file in, JSON out.
//! - [`demo`] — `tower demo`: starts the simulated platform and writes Tower's config for it.
//! - [`server`] — binding, the "running at" line, graceful shutdown.
//! - [`source`] — where the views' objects come from (a snapshot file, or live).
//!
//! Invariant: Tower never writes to a cluster. Every change it makes is a Git commit or a
//! pull request.

pub mod app;
pub mod assets;
pub mod auth;
pub mod cli;
pub mod config;
pub mod demo;
pub mod history;
pub mod live;
pub mod metrics;
pub mod offline;
pub mod routes;
pub mod server;
pub mod source;
