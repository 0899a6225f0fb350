//! Tower's backend: a thin axum service that serves the built frontend and the JSON API.
//!
//! Module map:
//! - [`cli`] — the `tower` command line (clap): `demo`, `serve`.
//! - [`app`] — [`app::router`] builds the whole HTTP surface from an [`app::AppState`];
//!   tests call it directly.
//! - [`routes`] — one module per JSON endpoint.
//! - [`assets`] — the built frontend: content types, precompressed files, cache headers.
//! - [`offline`] — `tower provisioning` and `tower cloud-deploys`: snapshot file in, JSON out.
//! - [`demo`] — the built-in data set `tower demo` serves until the simulated platform lands.
//! - [`server`] — binding, the "running at" line, graceful shutdown.
//! - [`source`] — where the per-service views' objects come from (a file, the simulator).
//!
//! Invariant: Tower never writes to a cluster. Every change it makes is a Git commit or a
//! pull request.

pub mod app;
pub mod assets;
pub mod cli;
pub mod demo;
pub mod offline;
pub mod routes;
pub mod server;
pub mod source;
