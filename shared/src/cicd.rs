//! The app's `cicd.yaml` as derivations read it: its environments in promotion order (which
//! comes first, and on which cluster), how a release is promoted to each, and its objectives.
//!
//! `deploy.environments` is a list; each entry is a name (`- dev`) or a map with `name`,
//! an optional `type` (`ground` or `flight`; `tier` and `kind` are read too) and, for a
//! Flight environment, the `cluster` it runs on. Ground environments run on the dev cluster.
//! An entry may say how a release is promoted to it (`promotion: commit` or `promotion: pr`);
//! otherwise prod by a pull request and the rest by a commit.

use serde::{Deserialize, Serialize};
#[cfg(feature = "yaml")]
use serde_yaml_ng::Value;

/// What one `cicd.yaml` says that derivations read.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CicdRead {
    /// The environment the "Running healthy in <env>" step watches ([`first_environment`]).
    pub first: FirstEnvironment,
    /// The declared environments in promotion order ([`environments`]).
    pub environments: Option<Vec<String>>,
    /// How a release is promoted to the environments that say ([`promotions`]).
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub promotions: std::collections::BTreeMap<String, Promotion>,
    /// The objectives its `slo:` section declares ([`slo_targets`]); `None`: Tower's defaults.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slo: Option<Targets>,
}

impl CicdRead {
    /// `text` read (absent, unreadable, or — without the `yaml` feature — unread: dev assumed,
    /// no environments declared).
    pub fn of(text: Option<&str>) -> Self {
        #[cfg(feature = "yaml")]
        return Self {
            first: first_environment(text),
            environments: environments(text),
            promotions: promotions(text),
            slo: slo_targets(text),
        };
        #[cfg(not(feature = "yaml"))]
        {
            let _ = text;
            Self {
                first: FirstEnvironment::assumed_dev(None),
                environments: None,
                promotions: std::collections::BTreeMap::new(),
                slo: None,
            }
        }
    }
}

/// How a promotion is made: both through Git, never a write to a cluster.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Promotion {
    /// A direct commit to the app's GitOps repo.
    Commit,
    /// A branch and a pull request someone reviews.
    PullRequest,
}

/// An app's objectives: `cicd.yaml`'s `slo:` section, or Tower's defaults
/// ([`Targets::default`], `docs/runtime.md`).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Targets {
    /// The share of requests that must succeed (0.999 for 99.9 %).
    pub availability: f64,
    pub latency_p95_ms: f64,
    pub latency_p99_ms: f64,
    /// Whether `cicd.yaml` declared them (else Tower's defaults).
    pub declared: bool,
}

impl Default for Targets {
    /// 99.9 % of requests succeed; p95 under 300 ms, p99 under 500 ms.
    fn default() -> Self {
        Self {
            availability: 0.999,
            latency_p95_ms: 300.0,
            latency_p99_ms: 500.0,
            declared: false,
        }
    }
}

/// The environment the "Running healthy in <env>" step watches.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FirstEnvironment {
    pub name: String,
    /// The cluster to read its Rollout on; `None` means the control-plane (dev) cluster.
    pub cluster: Option<String>,
    pub flight: bool,
    /// Whether cicd.yaml was read and declared it (otherwise dev is assumed).
    pub declared: bool,
    /// Whether cicd.yaml names a `deploy-to-<env>` stage; `None` when it was not read.
    pub has_deploy_stage: Option<bool>,
}

impl FirstEnvironment {
    fn assumed_dev(has_deploy_stage: Option<bool>) -> Self {
        Self {
            name: "dev".to_owned(),
            cluster: None,
            flight: false,
            declared: false,
            has_deploy_stage,
        }
    }
}

#[cfg(feature = "yaml")]
/// The environments `cicd.yaml` declares, in promotion order (each entry's name, or its
/// `name`); `None` when the text is absent, unreadable or declares none.
pub fn environments(cicd: Option<&str>) -> Option<Vec<String>> {
    let doc = serde_yaml_ng::from_str::<Value>(cicd?).ok()?;
    let names: Vec<String> = doc
        .get("deploy")?
        .get("environments")?
        .as_sequence()?
        .iter()
        .filter_map(|env| env.as_str().or_else(|| env.get("name")?.as_str()))
        .map(str::to_owned)
        .collect();
    (!names.is_empty()).then_some(names)
}

#[cfg(feature = "yaml")]
/// The environments whose `cicd.yaml` entry says how a release reaches them:
/// `promotion: commit`, or `promotion: pr` (`pull-request` too).
pub fn promotions(cicd: Option<&str>) -> std::collections::BTreeMap<String, Promotion> {
    let Some(doc) = cicd.and_then(|text| serde_yaml_ng::from_str::<Value>(text).ok()) else {
        return std::collections::BTreeMap::new();
    };
    doc.get("deploy")
        .and_then(|d| d.get("environments"))
        .and_then(Value::as_sequence)
        .into_iter()
        .flatten()
        .filter_map(|env| {
            let name = env.get("name")?.as_str()?;
            let how = match env.get("promotion")?.as_str()? {
                "commit" => Promotion::Commit,
                "pr" | "pull-request" => Promotion::PullRequest,
                _ => return None,
            };
            Some((name.to_owned(), how))
        })
        .collect()
}

#[cfg(feature = "yaml")]
/// The objectives `cicd.yaml` declares: `slo: {availability: 99.9, latencyP95Ms: 300,
/// latencyP99Ms: 500}` (availability in percent); a key left out keeps Tower's default.
/// `None` without an `slo:` map.
pub fn slo_targets(cicd: Option<&str>) -> Option<Targets> {
    let doc = serde_yaml_ng::from_str::<Value>(cicd?).ok()?;
    let slo = doc.get("slo")?.as_mapping()?;
    let number = |key: &str| {
        slo.get(key)
            .and_then(Value::as_f64)
            .filter(|n| n.is_finite() && *n > 0.0)
    };
    let default = Targets::default();
    Some(Targets {
        availability: number("availability")
            .filter(|p| *p < 100.0)
            .map_or(default.availability, |p| p / 100.0),
        latency_p95_ms: number("latencyP95Ms").unwrap_or(default.latency_p95_ms),
        latency_p99_ms: number("latencyP99Ms").unwrap_or(default.latency_p99_ms),
        declared: true,
    })
}

#[cfg(feature = "yaml")]
/// The first environment from `cicd.yaml` text; dev on the dev cluster when the text is
/// absent, unreadable or declares none.
pub fn first_environment(cicd: Option<&str>) -> FirstEnvironment {
    let Some(text) = cicd else {
        return FirstEnvironment::assumed_dev(None);
    };
    let Ok(doc) = serde_yaml_ng::from_str::<Value>(text) else {
        return FirstEnvironment::assumed_dev(None);
    };
    let first = doc
        .get("deploy")
        .and_then(|d| d.get("environments"))
        .and_then(Value::as_sequence)
        .and_then(|envs| envs.first());
    let stage = |env: &str| Some(text.contains(&format!("deploy-to-{env}")));
    let Some(first) = first else {
        return FirstEnvironment::assumed_dev(stage("dev"));
    };
    let field = |keys: &[&str]| {
        keys.iter()
            .find_map(|k| first.get(*k).and_then(Value::as_str))
            .map(str::to_owned)
    };
    let name = first
        .as_str()
        .map(str::to_owned)
        .or_else(|| field(&["name"]))
        .unwrap_or_else(|| "dev".to_owned());
    let flight = field(&["type", "tier", "kind"]).is_some_and(|t| t.eq_ignore_ascii_case("flight"));
    let cluster = if flight { field(&["cluster"]) } else { None };
    FirstEnvironment {
        has_deploy_stage: stage(&name),
        name,
        cluster,
        flight,
        declared: true,
    }
}

#[cfg(all(test, feature = "yaml"))]
mod tests {
    use super::*;

    #[test]
    fn slo_targets_are_read_in_percent_and_milliseconds() {
        let read = slo_targets(Some("slo:\n  availability: 99.5\n  latencyP99Ms: 800\n")).unwrap();
        assert!((read.availability - 0.995).abs() < 1e-12);
        assert_eq!((read.latency_p95_ms, read.latency_p99_ms), (300.0, 800.0));
        assert!(read.declared);
        // Nonsense keeps the default; no section is no declaration.
        let odd = slo_targets(Some("slo: {availability: 100, latencyP95Ms: -3}")).unwrap();
        assert_eq!((odd.availability, odd.latency_p95_ms), (0.999, 300.0));
        assert_eq!(slo_targets(Some("deploy: {}")), None);
        assert_eq!(slo_targets(None), None);
    }

    #[test]
    fn absent_or_broken_means_dev() {
        for text in [
            None,
            Some("deploy: [unclosed"),
            Some("deploy: {}"),
            Some(""),
        ] {
            let env = first_environment(text);
            assert_eq!(env.name, "dev", "{text:?}");
            assert_eq!(env.cluster, None);
            assert!(!env.declared);
        }
    }

    #[test]
    fn an_environment_may_say_how_it_is_promoted_to() {
        let read = CicdRead::of(Some(
            "deploy:\n  environments:\n    - dev\n    - name: staging\n      promotion: pr\n    - name: prod\n      promotion: commit\n    - name: qa\n      promotion: sometimes\n",
        ));
        assert_eq!(
            read.promotions.into_iter().collect::<Vec<_>>(),
            [
                ("prod".to_owned(), Promotion::Commit),
                ("staging".to_owned(), Promotion::PullRequest)
            ]
        );
        assert!(CicdRead::of(None).promotions.is_empty());
    }

    #[test]
    fn names_and_maps() {
        let env = first_environment(Some("deploy:\n  environments: [staging, prod]\n"));
        assert_eq!(env.name, "staging");
        assert!(env.declared && !env.flight);
        assert_eq!(env.has_deploy_stage, Some(false));

        let env = first_environment(Some(
            "deploy:\n  environments:\n    - name: prod\n      type: Flight\n      cluster: prod-eu\nstages:\n  - deploy-to-prod\n",
        ));
        assert_eq!(env.name, "prod");
        assert!(env.flight);
        assert_eq!(env.cluster.as_deref(), Some("prod-eu"));
        assert_eq!(env.has_deploy_stage, Some(true));
    }
}
