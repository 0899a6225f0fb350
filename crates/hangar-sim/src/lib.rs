//! A simulated Hangar platform: Kubernetes API servers on loopback whose objects follow
//! scenario stories as a clock moves, faithful to the real wire formats (see
//! `../shared/reference/data-shapes.md`), so Tower's real clients can be exercised end to end.
//!
//! Module map:
//! - [`resources`] — the served resource types and discovery documents.
//! - [`selector`] — label and field selectors.
//! - [`store`] — one cluster's objects; desired state in, versioned watch events out.
//! - [`kube_api`] — the Kubernetes API over HTTP: discovery, list, get, watch.
//! - [`argocd`] — Argo CD's REST API for the `argocd-apps` instance.
//! - [`backstage`] — Backstage: guest user tokens (ES256, JWKS), catalog by name, the ingestor's scheduler task.
//! - [`github`] — the GitHub REST subset Tower uses: pulls, search, refs, contents; ETags; rate limits.
//! - [`prometheus`] — Prometheus' query API, measuring the stories' apps.
//! - [`logs`] — container logs derived from a pod and world time.
//! - [`clock`] — world time: a speed factor, or advanced by hand in tests.
//! - [`stories`] — the world's stories, each a pure function of world time.
//! - [`platform`] — clusters + clock + stories, served on loopback; writes a kubeconfig.

pub mod argocd;
pub mod backstage;
pub mod clock;
pub mod github;
pub mod kube_api;
pub mod logs;
pub mod platform;
pub mod prometheus;
pub mod resources;
pub mod selector;
pub mod store;
pub mod stories;
