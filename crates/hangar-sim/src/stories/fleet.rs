//! The steady fleet: apps provisioned long ago, released again and again through dev,
//! staging and prod. Each app releases on its own cadence: a build on `main`, the new
//! image in dev, an hour later in staging, three hours later a release PR to prod merged
//! and rolled out. One app's prod canary is paused at 40 % while a background AnalysisRun
//! measures its error rate.
//!
//! Which apps exist, their kinds and cadences come from a seed; everything else is a
//! function of world time, like every story.

use chrono::{DateTime, Duration, Utc};
use serde_json::{json, Value};

use super::objects::{self, condition, ts, RunRef, RunState};
use super::{CatalogEntity, PullRequest, Story};

/// Environments in promotion order, and the cluster each runs on.
pub const ENVIRONMENTS: [(&str, &str); 3] = [("dev", "dev"), ("staging", "prod"), ("prod", "prod")];

const NAMES: [&str; 30] = [
    "billing",
    "catalog-api",
    "checkout",
    "search",
    "recommender",
    "inventory",
    "payments",
    "notifications",
    "auth-gateway",
    "profile",
    "reviews",
    "shipping",
    "pricing",
    "carts",
    "wishlist",
    "loyalty",
    "invoices",
    "returns",
    "media",
    "geo",
    "tax",
    "fraud-check",
    "mailer",
    "reports",
    "audit-log",
    "feature-flags",
    "webhooks",
    "ledger-sync",
    "quotes",
    "status-page",
];
const KINDS: [&str; 4] = ["NodeJS", "SpringBoot", "Python", "Go"];
const BUILD_TASKS: [&str; 4] = ["fetch-source", "unit-tests", "build-image", "update-gitops"];
/// A build takes this long; a release reaches staging and prod this long after it.
const BUILD_TAKES: i64 = 6 * 60;
const TO_STAGING: i64 = 3_600;
const TO_PROD: i64 = 3 * 3_600;
/// The canary's analysis measures every 5 minutes.
const MEASURE_EVERY: i64 = 300;

/// A small, stable random sequence (SplitMix64), so a seed means the same fleet in every
/// version of the simulator.
#[derive(Clone, Copy, Debug)]
struct SplitMix(u64);

impl SplitMix {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// One app of the fleet.
#[derive(Clone, Debug)]
pub struct SteadyApp {
    pub name: String,
    pub kind: &'static str,
    /// Seconds between releases.
    pub cadence: i64,
    /// Where in its cadence the app was at the epoch.
    pub offset: i64,
    /// Its prod rollout is a canary paused at 40 % under analysis.
    pub canary: bool,
}

/// The steady fleet.
#[derive(Clone, Debug)]
pub struct SteadyFleet {
    pub apps: Vec<SteadyApp>,
    /// When every app was provisioned (long before the demo starts).
    pub provisioned: DateTime<Utc>,
}

impl SteadyFleet {
    /// About 30 apps chosen by `seed`, the third of them the paused canary, provisioned 40
    /// days before `start`.
    pub fn new(seed: u64, start: DateTime<Utc>) -> Self {
        let mut rng = SplitMix(seed);
        let count = 26 + rng.below(5) as usize;
        let mut names: Vec<&str> = NAMES.to_vec();
        for i in (1..names.len()).rev() {
            names.swap(i, rng.below(i as u64 + 1) as usize);
        }
        let apps = names
            .into_iter()
            .take(count)
            .enumerate()
            .map(|(i, name)| SteadyApp {
                name: name.to_owned(),
                kind: KINDS[rng.below(KINDS.len() as u64) as usize],
                cadence: (4 + rng.below(9) as i64) * 3_600,
                offset: rng.below(12 * 3_600) as i64,
                canary: i == 2,
            })
            .collect();
        Self {
            apps,
            provisioned: start - Duration::days(40),
        }
    }
}

/// A release of an app: number `n` built at `at`.
#[derive(Clone, Copy, Debug)]
struct Release {
    n: i64,
    at: DateTime<Utc>,
}

impl SteadyApp {
    /// The release whose build started most recently before `now`, minus `behind` seconds.
    fn release_before(&self, now: DateTime<Utc>, behind: i64) -> Release {
        let t = now.timestamp() - behind + self.offset;
        let n = t.div_euclid(self.cadence);
        let at = DateTime::from_timestamp(n * self.cadence - self.offset, 0).unwrap_or(now);
        Release { n, at }
    }

    fn tag(&self, release: Release) -> String {
        let commit = crate::store::uid_of(&format!("{}/{}", self.name, release.n));
        format!("1.{}.0-{}", release.n % 1_000, &commit[..7])
    }

    fn image(&self, release: Release) -> String {
        format!("ghcr.io/acme/{}:{}", self.name, self.tag(release))
    }

    /// The release running in `env` at `now`.
    fn running_in(&self, env: &str, now: DateTime<Utc>) -> Release {
        let behind = match env {
            "dev" => BUILD_TAKES,
            "staging" => BUILD_TAKES + TO_STAGING,
            _ => BUILD_TAKES + TO_PROD,
        };
        self.release_before(now, behind)
    }

    fn objects(&self, now: DateTime<Utc>, long_ago: DateTime<Utc>) -> Vec<(String, Value)> {
        let name = self.name.as_str();
        let mut out = vec![(
            "dev".to_owned(),
            json!({"apiVersion": "catalog.hangar.io/v1alpha1", "kind": self.kind,
                "metadata": {"name": name, "creationTimestamp": ts(long_ago),
                             "labels": {"hangar.io/team": "team-a"}},
                "spec": {"parameters": {"name": name}},
                "status": {"conditions": [
                    condition("Synced", true, "ReconcileSuccess", long_ago, None),
                    condition("Ready", true, "Available", long_ago, None),
                    condition("DevClusterReady", true, "Available", long_ago, None),
                    condition("CicdOnboarded", true, "Available", long_ago, None)]}}),
        )];
        out.extend(self.builds(now));
        for (env, cluster) in ENVIRONMENTS {
            let release = self.running_in(env, now);
            let namespace = format!("app-{name}-{env}");
            let paused = self.canary && env == "prod";
            let (health, rollout) = if paused {
                ("Suspended", self.paused_canary(&namespace, release, now))
            } else {
                ("Healthy", self.healthy_rollout(&namespace, release))
            };
            let mut app = objects::application(
                &format!("{name}-{env}"),
                "argocd",
                "Synced",
                health,
                release.at,
                &format!("https://github.com/acme/gitops-{name}.git"),
            );
            app["metadata"]["labels"] =
                json!({"hangar.io/app": name, "hangar.io/environment": env});
            app["spec"]["destination"] = json!({"name": cluster, "namespace": namespace});
            app["status"]["summary"] = json!({"images": [self.image(release)]});
            out.push(("dev".to_owned(), app));
            out.push((cluster.to_owned(), objects::namespace(&namespace)));
            out.push((cluster.to_owned(), rollout));
            if paused {
                out.push((
                    cluster.to_owned(),
                    self.analysis_run(&namespace, release, now),
                ));
                // The canary's pods beside the previous release's, still stable.
                let stable = self.previous(release);
                out.push((cluster.to_owned(), self.replica_set(&namespace, stable, 3)));
                out.push((cluster.to_owned(), self.replica_set(&namespace, release, 2)));
            } else {
                out.push((cluster.to_owned(), self.replica_set(&namespace, release, 3)));
            }
        }
        out
    }

    /// The newest build on `main` and the one before it.
    fn builds(&self, now: DateTime<Utc>) -> Vec<(String, Value)> {
        let namespace = format!("app-{}-cicd", self.name);
        let mut out = vec![("dev".to_owned(), objects::namespace(&namespace))];
        for back in [0, self.cadence] {
            let release = self.release_before(now, back);
            let elapsed = (now - release.at).num_seconds();
            let per_task = BUILD_TAKES / BUILD_TASKS.len() as i64;
            let finished = usize::try_from(elapsed / per_task)
                .unwrap_or(0)
                .min(BUILD_TASKS.len());
            let done = finished == BUILD_TASKS.len();
            let name = format!("{}-build-{}", self.name, release.n % 100_000);
            let run = objects::pipeline_run(
                RunRef {
                    name: &name,
                    namespace: &namespace,
                    pipeline: "build",
                },
                release.at,
                &BUILD_TASKS,
                finished,
                if done {
                    RunState::Succeeded
                } else {
                    RunState::Running
                },
                done.then(|| release.at + Duration::seconds(BUILD_TAKES)),
            );
            out.push(("dev".to_owned(), run));
        }
        out
    }

    fn rollout_base(&self, namespace: &str, release: Release) -> Value {
        json!({"apiVersion": "argoproj.io/v1alpha1", "kind": "Rollout",
            "metadata": {"name": self.name, "namespace": namespace, "generation": 1,
                         "labels": {"app.kubernetes.io/name": self.name}},
            "spec": {"replicas": 3,
                "selector": {"matchLabels": {"app": self.name}},
                "template": {"metadata": {"labels": {"app": self.name}},
                             "spec": {"containers": [{"name": "app", "image": self.image(release)}]}},
                "strategy": {"canary": {
                    "analysis": {"templates": [{"templateName": "error-rate"}], "startingStep": 1},
                    "steps": [{"setWeight": 20}, {"pause": {"duration": "10m"}},
                              {"setWeight": 40}, {"pause": {}}, {"setWeight": 80}]}}}})
    }

    /// The release before `release`.
    fn previous(&self, release: Release) -> Release {
        Release {
            n: release.n - 1,
            at: release.at - Duration::seconds(self.cadence),
        }
    }

    /// The ReplicaSet Argo Rollouts keeps for `release`'s pod template, all `replicas` ready.
    fn replica_set(&self, namespace: &str, release: Release, replicas: u32) -> Value {
        let hash = self.pod_hash(release);
        json!({"apiVersion": "apps/v1", "kind": "ReplicaSet",
            "metadata": {"name": format!("{}-{hash}", self.name), "namespace": namespace,
                "labels": {"app": self.name, "rollouts-pod-template-hash": hash},
                "annotations": {"rollout.argoproj.io/revision": release.n.to_string()},
                "ownerReferences": [{"apiVersion": "argoproj.io/v1alpha1", "kind": "Rollout",
                                     "name": self.name, "controller": true}]},
            "spec": {"replicas": replicas,
                "selector": {"matchLabels": {"app": self.name, "rollouts-pod-template-hash": hash}},
                "template": {"metadata": {"labels": {"app": self.name, "rollouts-pod-template-hash": hash}},
                             "spec": {"containers": [{"name": "app", "image": self.image(release)}]}}},
            "status": {"replicas": replicas, "readyReplicas": replicas, "availableReplicas": replicas,
                       "observedGeneration": 1}})
    }

    fn pod_hash(&self, release: Release) -> String {
        crate::store::uid_of(&self.tag(release))[..10].replace('-', "")
    }

    fn healthy_rollout(&self, namespace: &str, release: Release) -> Value {
        let mut rollout = self.rollout_base(namespace, release);
        let hash = self.pod_hash(release);
        rollout["status"] = json!({"phase": "Healthy", "replicas": 3, "updatedReplicas": 3,
            "readyReplicas": 3, "availableReplicas": 3, "observedGeneration": "1",
            "currentPodHash": hash, "stableRS": hash, "currentStepIndex": 5,
            "canary": {"weights": {"canary": {"weight": 0, "podTemplateHash": hash},
                                   "stable": {"weight": 100, "podTemplateHash": hash}}},
            "conditions": [
                condition("Available", true, "AvailableReason", release.at, Some("Rollout has minimum availability")),
                condition("Healthy", true, "RolloutHealthy", release.at, Some("Rollout is healthy")),
                condition("Completed", true, "RolloutCompleted", release.at, Some("Rollout completed update to revision"))]});
        rollout
    }

    /// Paused at step 3 (`setWeight: 40` done, waiting for a promote), the previous
    /// release still stable.
    fn paused_canary(&self, namespace: &str, release: Release, now: DateTime<Utc>) -> Value {
        let stable = self.previous(release);
        let mut rollout = self.rollout_base(namespace, release);
        let (hash, stable_hash) = (self.pod_hash(release), self.pod_hash(stable));
        let paused_at =
            release.at + Duration::seconds(BUILD_TAKES + TO_PROD + 600).min(now - release.at);
        rollout["status"] = json!({"phase": "Paused", "message": "CanaryPauseStep",
            "replicas": 4, "updatedReplicas": 2, "readyReplicas": 4, "availableReplicas": 4,
            "observedGeneration": "1", "currentPodHash": hash, "stableRS": stable_hash,
            "currentStepIndex": 3, "controllerPause": true,
            "pauseConditions": [{"reason": "CanaryPauseStep", "startTime": ts(paused_at)}],
            "canary": {
                "weights": {"canary": {"weight": 40, "podTemplateHash": hash},
                            "stable": {"weight": 60, "podTemplateHash": stable_hash}},
                "currentBackgroundAnalysisRunStatus": {"name": self.analysis_name(release), "status": "Running"}},
            "conditions": [
                condition("Available", true, "AvailableReason", release.at, Some("Rollout has minimum availability")),
                condition("Paused", true, "RolloutPaused", paused_at, Some("Rollout is paused")),
                condition("Healthy", false, "RolloutHealthyFalse", paused_at, Some("Rollout is not healthy"))]});
        rollout
    }

    fn analysis_name(&self, release: Release) -> String {
        format!(
            "{}-{}-{}",
            self.name,
            self.pod_hash(release),
            release.n % 1_000
        )
    }

    /// The background analysis: one error-rate measurement every 5 minutes since the canary
    /// started, all under the 1 % threshold so far.
    fn analysis_run(&self, namespace: &str, release: Release, now: DateTime<Utc>) -> Value {
        let started = release.at + Duration::seconds(BUILD_TAKES + TO_PROD);
        let count = ((now - started).num_seconds() / MEASURE_EVERY + 1).clamp(1, 48);
        let measurements: Vec<Value> = (0..count)
            .map(|i| {
                let at = started + Duration::seconds(i * MEASURE_EVERY);
                // A steady, plausible error rate between 0.20 % and 0.60 %.
                let rate = 0.002 + ((release.n + i) % 5) as f64 * 0.001;
                json!({"phase": "Successful", "value": format!("[{rate:.4}]"),
                       "startedAt": ts(at), "finishedAt": ts(at + Duration::seconds(1))})
            })
            .collect();
        json!({"apiVersion": "argoproj.io/v1alpha1", "kind": "AnalysisRun",
            "metadata": {"name": self.analysis_name(release), "namespace": namespace,
                "labels": {"rollout-type": "Background", "rollouts-pod-template-hash": self.pod_hash(release)},
                "annotations": {"rollout.argoproj.io/revision": release.n.to_string()},
                "ownerReferences": [{"apiVersion": "argoproj.io/v1alpha1", "kind": "Rollout",
                                     "name": self.name, "controller": true}]},
            "spec": {"metrics": [{"name": "error-rate", "interval": "5m",
                "successCondition": "result[0] < 0.01", "failureLimit": 2,
                "provider": {"prometheus": {"address": "http://prometheus.monitoring:9090",
                    "query": format!("sum(rate(http_requests_total{{app=\"{}\",code=~\"5..\"}}[5m])) / sum(rate(http_requests_total{{app=\"{}\"}}[5m]))", self.name, self.name)}}}]},
            "status": {"phase": "Running", "startedAt": ts(started),
                "runSummary": {"count": 1},
                "metricResults": [{"name": "error-rate", "phase": "Running",
                    "count": count, "successful": count, "measurements": measurements}]}})
    }

    /// Release PRs to prod on the GitOps repo: the newest (open until it is merged three
    /// hours after its build) and the one before it.
    fn pull_requests(&self, now: DateTime<Utc>) -> Vec<PullRequest> {
        [0, self.cadence]
            .into_iter()
            .map(|back| {
                let release = self.release_before(now, back);
                let opened = release.at + Duration::seconds(BUILD_TAKES + TO_STAGING);
                let merged_at = release.at + Duration::seconds(BUILD_TAKES + TO_PROD);
                let merged = (merged_at <= now).then_some(merged_at);
                PullRequest {
                    repo: format!("acme/gitops-{}", self.name),
                    number: u64::try_from(release.n % 10_000).unwrap_or(0) + 1,
                    title: format!("Release {} to prod", self.tag(release)),
                    body: format!("Promotes {} from staging to prod.", self.image(release)),
                    user: "glidepath[bot]".to_owned(),
                    head_ref: format!("release/prod-{}", self.tag(release)),
                    base_ref: "main".to_owned(),
                    created_at: opened,
                    merged_at: merged,
                    closed_at: merged,
                }
            })
            .filter(|pr| pr.created_at <= now)
            .collect()
    }
}

impl Story for SteadyFleet {
    fn objects_at(&self, now: DateTime<Utc>) -> Vec<(String, Value)> {
        self.apps
            .iter()
            .flat_map(|app| app.objects(now, self.provisioned))
            .collect()
    }

    fn pull_requests_at(&self, now: DateTime<Utc>) -> Vec<PullRequest> {
        self.apps
            .iter()
            .flat_map(|app| app.pull_requests(now))
            .collect()
    }

    fn catalog_at(&self, _now: DateTime<Utc>) -> Vec<CatalogEntity> {
        self.apps
            .iter()
            .map(|app| CatalogEntity {
                entity: super::component(&app.name, "service", "group:default/team-a"),
                readable_since: self.provisioned,
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn provisioned_apps_do_not_change_as_the_clock_moves() {
        // A timestamp that moved with the clock would turn every tick of the demo into a
        // watch event for every app.
        let start: DateTime<Utc> = "2026-11-30T08:00:00Z".parse().unwrap();
        let fleet = SteadyFleet::new(1, start);
        let xrs = |t: DateTime<Utc>| -> Vec<Value> {
            fleet
                .objects_at(t)
                .into_iter()
                .map(|(_, o)| o)
                .filter(|o| o["apiVersion"] == "catalog.hangar.io/v1alpha1")
                .collect()
        };
        let later = start + Duration::hours(5);
        assert_eq!(xrs(start).len(), fleet.apps.len());
        assert_eq!(xrs(start), xrs(later));
        assert_eq!(fleet.catalog_at(start), fleet.catalog_at(later));
    }
}
