//! Every backend route against the simulated platform, through Tower's real clients:
//! kube-rs watch caches, octocrab with conditional requests, reqwest to Backstage — a
//! module per area, as the frontend's tabs. Here: what they share.
//!
//! Module map: [`provisioning`], [`pulls`], [`pipelines`], [`deployments`], [`releases`],
//! [`github`], and [`platform`] (what every route shares).

mod deployments;
mod github;
mod pipelines;
mod platform;
mod provisioning;
mod pulls;
mod releases;

use std::collections::BTreeSet;
use std::time::Duration;

use reqwest::StatusCode;
use serde_json::{json, Value};

use crate::support::{eventually, Live, ReadJson as _};

/// The world stands still (speed 0), so what the routes say can be checked exactly.
async fn frozen() -> Live {
    Live::start(0.0).await.unwrap()
}

fn names(list: &Value, key: &str) -> BTreeSet<String> {
    list.as_array()
        .unwrap()
        .iter()
        .map(|v| v[key].as_str().unwrap().to_owned())
        .collect()
}
