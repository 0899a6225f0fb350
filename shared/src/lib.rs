//! Tower's domain crate: the types that cross the wire between the backend and the
//! browser, and the pure derivations both sides run on them.
//!
//! Invariants (checked by `tests/it/tidy.rs`):
//! - no IO and no clock reads: every derivation that depends on time takes `now`;
//! - no async runtime, Kubernetes, GitHub, database or browser crates in the dependency tree;
//! - builds for `wasm32-unknown-unknown` and native alike.
//!
//! Module map:
//! - [`fleet`] — the fleet overview: every app in every environment, and which cells
//!   need someone's attention.
//! - [`kube`] — Kubernetes objects of any kind, read leniently, with their conditions.
//! - [`time`] — human wording for ages and durations, given `now`.

pub mod fleet;
pub mod kube;
pub mod time;
