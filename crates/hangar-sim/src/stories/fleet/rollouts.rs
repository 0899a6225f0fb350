//! How a steady app's releases roll out: its role's canary steps played over world time,
//! the Rollout, its ReplicaSets and AnalysisRuns at each moment.

use super::*;

impl SteadyApp {
    /// What a rollout playing `role` that started at `started` is doing at `now`, left to
    /// itself.
    pub(super) fn play(role: Role, started: DateTime<Utc>, now: DateTime<Utc>) -> Prod {
        let e = (now - started).num_seconds();
        match role {
            Role::Steady => Prod::Promoted { completed: None },
            Role::PausedCanary | Role::CompletingCanary => {
                Self::walk(Self::steps(role), 0, 0, started, now)
            }
            Role::AbortedCanary => {
                let fails_at = (STEP_FAILURES - 1) * STEP_MEASURE_EVERY + 1;
                if e < fails_at {
                    Prod::Analysing {
                        since: started,
                        measured: (e / STEP_MEASURE_EVERY + 1).clamp(1, STEP_FAILURES),
                    }
                } else {
                    Prod::Aborted {
                        at: started + Duration::seconds(fails_at),
                        analysis: Some(started),
                    }
                }
            }
            Role::BlueGreen => Prod::Preview { since: started },
        }
    }

    /// What the rollout is doing at `now` with the actions Argo CD ran on it (`acts`,
    /// oldest first), each as the Rollouts controller takes it: `resume` ends the pause
    /// and walks on (a blue-green preview becomes active), `promote-full` makes the new
    /// version stable at once, `abort` puts all traffic back on stable, `retry` starts an
    /// aborted rollout again from its first step. An action that does not apply (a resume
    /// of a rollout not paused) changes nothing.
    pub(super) fn played(
        role: Role,
        started: DateTime<Utc>,
        now: DateTime<Utc>,
        acts: &[Acted],
    ) -> Prod {
        let acts = &acts[..acts.iter().take_while(|a| a.at <= now).count()];
        let Some((last, earlier)) = acts.split_last() else {
            return Self::play(role, started, now);
        };
        let before = Self::played(role, started, last.at, earlier);
        match (last.action, before) {
            (RolloutAction::Resume, Prod::Canary(c)) => Self::walk(
                Self::steps(role),
                c.step as usize + 1,
                c.weight,
                last.at,
                now,
            ),
            (RolloutAction::Resume, Prod::Preview { .. })
            | (
                RolloutAction::PromoteFull,
                Prod::Canary(_) | Prod::Analysing { .. } | Prod::Preview { .. },
            ) => Prod::Promoted {
                completed: Some(last.at),
            },
            (
                RolloutAction::Abort,
                Prod::Canary(_) | Prod::Analysing { .. } | Prod::Preview { .. },
            ) => Prod::Aborted {
                at: last.at,
                analysis: None,
            },
            (RolloutAction::Retry, Prod::Aborted { .. }) => Self::play(role, last.at, now),
            _ => Self::played(role, started, now, earlier),
        }
    }

    /// The release in `env` at `now`, when its rollout started (`None`: promoted at once),
    /// the role it plays and what it is doing. A release promoted in Git walks in as a
    /// canary; one its cadence brought plays the app's role in prod; either as Argo CD's
    /// actions on it say.
    pub(super) fn rollout_in(
        &self,
        env: &str,
        now: DateTime<Utc>,
        promoted: &[Promoted],
        acted: &[Acted],
    ) -> (Arrival, Option<DateTime<Utc>>, Role, Prod) {
        let arrival = self.arrival(env, now, promoted);
        let release = arrival.release;
        let (started, role) = match arrival.replaced {
            Some(_) => (Some(arrival.at), Role::CompletingCanary),
            None if env == "prod" => (Some(Self::prod_at(release)), self.role),
            None => (None, self.role),
        };
        let acts: Vec<Acted> = acted
            .iter()
            .filter(|a| a.env == env && a.release == release.n)
            .copied()
            .collect();
        let prod = started.map_or(Prod::Promoted { completed: None }, |started| {
            Self::played(role, started, now, &acts)
        });
        (arrival, started, role, prod)
    }

    pub(super) fn rollout_base(&self, namespace: &str, release: Release, role: Role) -> Value {
        let strategy = match role {
            Role::BlueGreen => json!({"blueGreen": {
                "activeService": format!("{}-active", self.name),
                "previewService": format!("{}-preview", self.name),
                "autoPromotionEnabled": false}}),
            Role::AbortedCanary | Role::CompletingCanary => {
                json!({"canary": {"steps": Self::steps_json(role)}})
            }
            Role::Steady | Role::PausedCanary => json!({"canary": {
                "analysis": {"templates": [{"templateName": "error-rate"}], "startingStep": 1},
                "steps": Self::steps_json(role)}}),
        };
        json!({"apiVersion": "argoproj.io/v1alpha1", "kind": "Rollout",
            "metadata": {"name": self.name, "namespace": namespace, "generation": 1,
                         "labels": {"app.kubernetes.io/name": self.name}},
            "spec": {"replicas": 3,
                "selector": {"matchLabels": {"app": self.name}},
                "template": {"metadata": {"labels": {"app": self.name}},
                             "spec": {"containers": [{"name": "app", "image": self.image(release)}]}},
                "strategy": strategy}})
    }

    /// The canary steps of a rollout playing `role` (none for blue-green).
    pub(super) fn steps(role: Role) -> &'static [CanaryStep] {
        match role {
            Role::BlueGreen => &[],
            Role::CompletingCanary => &WALKING_STEPS,
            Role::AbortedCanary => &ANALYSED_STEPS,
            Role::Steady | Role::PausedCanary => &PAUSING_STEPS,
        }
    }

    pub(super) fn steps_json(role: Role) -> Value {
        Self::steps(role)
            .iter()
            .map(|step| match *step {
                Weight(w) => json!({"setWeight": w}),
                Pause(None) => json!({"pause": {}}),
                Pause(Some(s)) if s % 60 == 0 => {
                    json!({"pause": {"duration": format!("{}m", s / 60)}})
                }
                Pause(Some(s)) => json!({"pause": {"duration": format!("{s}s")}}),
                Analyse => json!({"analysis": {"templates": [{"templateName": "error-rate"}]}}),
            })
            .collect()
    }

    /// The release before `release`.
    pub(super) fn previous(&self, release: Release) -> Release {
        Release {
            n: release.n - 1,
            at: release.at - Duration::seconds(self.cadence),
        }
    }

    /// The ReplicaSet Argo Rollouts keeps for `release`'s pod template, all `replicas` ready.
    pub(super) fn replica_set(&self, namespace: &str, release: Release, replicas: u32) -> Value {
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

    pub(super) fn pod_hash(&self, release: Release) -> String {
        crate::store::uid_of(&self.tag(release))[..10].replace('-', "")
    }

    pub(super) fn healthy_rollout(&self, namespace: &str, release: Release, role: Role) -> Value {
        let mut rollout = self.rollout_base(namespace, release, role);
        let hash = self.pod_hash(release);
        rollout["status"] = json!({"phase": "Healthy", "replicas": 3, "updatedReplicas": 3,
            "readyReplicas": 3, "availableReplicas": 3, "observedGeneration": "1",
            "currentPodHash": hash, "stableRS": hash,
            "conditions": [
                condition("Available", true, "AvailableReason", release.at, Some("Rollout has minimum availability")),
                condition("Healthy", true, "RolloutHealthy", release.at, Some("Rollout is healthy")),
                condition("Completed", true, "RolloutCompleted", release.at, Some("Rollout completed update to revision"))]});
        if role == Role::BlueGreen {
            rollout["status"]["blueGreen"] =
                json!({"activeSelector": hash, "previewSelector": hash});
        } else {
            rollout["status"]["currentStepIndex"] = json!(Self::steps(role).len());
            rollout["status"]["canary"] = json!({"weights": {
                "canary": {"weight": 0, "podTemplateHash": hash},
                "stable": {"weight": 100, "podTemplateHash": hash}}});
        }
        rollout
    }

    /// A canary pausing at step `at.step` with `at.weight` % of traffic, the previous
    /// release still stable.
    pub(super) fn canary_rollout(
        &self,
        namespace: &str,
        (release, stable): (Release, Release),
        at: CanaryAt,
        now: DateTime<Utc>,
        role: Role,
    ) -> Value {
        let mut rollout = self.rollout_base(namespace, release, role);
        let (hash, stable_hash) = (self.pod_hash(release), self.pod_hash(stable));
        let paused_at = at.paused_since.unwrap_or(now);
        let canary = canary_replicas(at.weight);
        rollout["status"] = json!({"phase": "Paused", "message": "CanaryPauseStep",
            "replicas": 3 + canary, "updatedReplicas": canary, "readyReplicas": 3 + canary,
            "availableReplicas": 3 + canary,
            "observedGeneration": "1", "currentPodHash": hash, "stableRS": stable_hash,
            "currentStepIndex": at.step, "controllerPause": true,
            "pauseConditions": [{"reason": "CanaryPauseStep", "startTime": ts(paused_at)}],
            "canary": {
                "weights": {"canary": {"weight": at.weight, "podTemplateHash": hash},
                            "stable": {"weight": 100 - at.weight, "podTemplateHash": stable_hash}}},
            "conditions": [
                condition("Available", true, "AvailableReason", release.at, Some("Rollout has minimum availability")),
                condition("Paused", true, "RolloutPaused", paused_at, Some("Rollout is paused")),
                condition("Healthy", false, "RolloutHealthyFalse", paused_at, Some("Rollout is not healthy"))]});
        if role == Role::PausedCanary {
            rollout["status"]["canary"]["currentBackgroundAnalysisRunStatus"] =
                json!({"name": self.analysis_name(release), "status": "Running"});
        }
        rollout
    }

    /// The aborting canary while its step analysis measures, at 20 %.
    pub(super) fn analysing_rollout(
        &self,
        namespace: &str,
        (release, stable): (Release, Release),
        since: DateTime<Utc>,
    ) -> Value {
        let mut rollout = self.rollout_base(namespace, release, self.role);
        let (hash, stable_hash) = (self.pod_hash(release), self.pod_hash(stable));
        let canary = canary_replicas(20);
        rollout["status"] = json!({"phase": "Progressing",
            "replicas": 3 + canary, "updatedReplicas": canary, "readyReplicas": 3 + canary,
            "availableReplicas": 3 + canary,
            "observedGeneration": "1", "currentPodHash": hash, "stableRS": stable_hash,
            "currentStepIndex": 1,
            "canary": {
                "weights": {"canary": {"weight": 20, "podTemplateHash": hash},
                            "stable": {"weight": 80, "podTemplateHash": stable_hash}},
                "currentStepAnalysisRunStatus": {"name": self.step_analysis_name(release), "status": "Running"}},
            "conditions": [
                condition("Available", true, "AvailableReason", release.at, Some("Rollout has minimum availability")),
                condition("Progressing", true, "ReplicaSetUpdated", since, Some("ReplicaSet is progressing")),
                condition("Healthy", false, "RolloutHealthyFalse", since, Some("Rollout is not healthy"))]});
        rollout
    }

    /// An aborted rollout — by its failed step analysis (`by_analysis`), or by hand: all
    /// traffic back on stable, the canary scaled to zero.
    pub(super) fn aborted_rollout(
        &self,
        namespace: &str,
        (release, stable): (Release, Release),
        at: DateTime<Utc>,
        (role, by_analysis): (Role, bool),
    ) -> Value {
        let mut rollout = self.rollout_base(namespace, release, role);
        let (hash, stable_hash) = (self.pod_hash(release), self.pod_hash(stable));
        let why = step_failure(STEP_FAILURES);
        let message = if by_analysis {
            format!(
                "RolloutAborted: Rollout aborted update to revision {}: {why}",
                release.n
            )
        } else {
            format!(
                "RolloutAborted: Rollout aborted update to revision {}",
                release.n
            )
        };
        rollout["status"] = json!({"phase": "Degraded", "message": message, "abort": true,
            "abortedAt": ts(at), "replicas": 3, "updatedReplicas": 0, "readyReplicas": 3,
            "availableReplicas": 3, "observedGeneration": "1", "currentPodHash": hash,
            "stableRS": stable_hash, "currentStepIndex": 0,
            "canary": {
                "weights": {"canary": {"weight": 0, "podTemplateHash": hash},
                            "stable": {"weight": 100, "podTemplateHash": stable_hash}},
                "currentStepAnalysisRunStatus": {"name": self.step_analysis_name(release),
                                                 "status": "Failed", "message": why}},
            "conditions": [
                condition("Available", true, "AvailableReason", release.at, Some("Rollout has minimum availability")),
                condition("Progressing", false, "RolloutAborted", at, Some(&message)),
                condition("Healthy", false, "RolloutHealthyFalse", at, Some("Rollout is not healthy"))]});
        if !by_analysis {
            let status = &mut rollout["status"];
            if let Some(canary) = status["canary"].as_object_mut() {
                canary.remove("currentStepAnalysisRunStatus");
            }
            if role == Role::BlueGreen {
                if let Some(fields) = status.as_object_mut() {
                    fields.remove("canary");
                    fields.remove("currentStepIndex");
                }
                status["blueGreen"] =
                    json!({"activeSelector": stable_hash, "previewSelector": stable_hash});
            }
        }
        rollout
    }

    /// Blue-green: the new version up as the preview, paused for a promotion.
    pub(super) fn preview_rollout(
        &self,
        namespace: &str,
        (release, stable): (Release, Release),
        since: DateTime<Utc>,
    ) -> Value {
        let mut rollout = self.rollout_base(namespace, release, self.role);
        let (hash, stable_hash) = (self.pod_hash(release), self.pod_hash(stable));
        rollout["status"] = json!({"phase": "Paused", "message": "BlueGreenPause",
            "replicas": 6, "updatedReplicas": 3, "readyReplicas": 6, "availableReplicas": 6,
            "observedGeneration": "1", "currentPodHash": hash, "stableRS": stable_hash,
            "controllerPause": true,
            "pauseConditions": [{"reason": "BlueGreenPause", "startTime": ts(since)}],
            "blueGreen": {"activeSelector": stable_hash, "previewSelector": hash},
            "conditions": [
                condition("Available", true, "AvailableReason", release.at, Some("Rollout has minimum availability")),
                condition("Paused", true, "RolloutPaused", since, Some("Rollout is paused")),
                condition("Healthy", false, "RolloutHealthyFalse", since, Some("Rollout is not healthy"))]});
        rollout
    }

    pub(super) fn analysis_name(&self, release: Release) -> String {
        format!(
            "{}-{}-{}",
            self.name,
            self.pod_hash(release),
            release.n % 1_000
        )
    }

    /// Argo Rollouts names a step's AnalysisRun after the step's index.
    pub(super) fn step_analysis_name(&self, release: Release) -> String {
        format!("{}-1", self.analysis_name(release))
    }

    /// The background analysis: one error-rate measurement every 5 minutes since the canary
    /// started, all under the 1 % threshold so far.
    pub(super) fn analysis_run(
        &self,
        namespace: &str,
        release: Release,
        started: DateTime<Utc>,
        now: DateTime<Utc>,
    ) -> Value {
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
            "spec": {"metrics": [self.error_rate_metric("5m", 0.01, 2)]},
            "status": {"phase": "Running", "startedAt": ts(started),
                "runSummary": {"count": 1},
                "metricResults": [{"name": "error-rate", "phase": "Running",
                    "count": count, "successful": count, "measurements": measurements}]}})
    }

    pub(super) fn error_rate_metric(
        &self,
        interval: &str,
        below: f64,
        failure_limit: i64,
    ) -> Value {
        json!({"name": "error-rate", "interval": interval,
            "successCondition": format!("result[0] < {below}"), "failureLimit": failure_limit,
            "provider": {"prometheus": {"address": "http://prometheus.monitoring:9090",
                "query": format!("sum(rate(http_requests_total{{app=\"{}\",code=~\"5..\"}}[5m])) / sum(rate(http_requests_total{{app=\"{}\"}}[5m]))", self.name, self.name)}}})
    }

    /// The aborting canary's step analysis after `measured` measurements a minute apart,
    /// every one failing (an error rate of 7–9 % against a 5 % limit); `failed_at` once the
    /// run has failed.
    pub(super) fn step_analysis_run(
        &self,
        namespace: &str,
        release: Release,
        started: DateTime<Utc>,
        measured: i64,
        failed_at: Option<DateTime<Utc>>,
    ) -> Value {
        let measurements: Vec<Value> = (0..measured)
            .map(|i| {
                let at = started + Duration::seconds(i * STEP_MEASURE_EVERY);
                let rate = 0.07 + ((release.n + i) % 3) as f64 * 0.01;
                json!({"phase": "Failed", "value": format!("[{rate:.4}]"),
                       "startedAt": ts(at), "finishedAt": ts(at + Duration::seconds(1))})
            })
            .collect();
        let why = step_failure(measured);
        let phase = if failed_at.is_some() {
            "Failed"
        } else {
            "Running"
        };
        let mut status = json!({"phase": phase, "startedAt": ts(started),
            "runSummary": {"count": 1, "failed": i64::from(failed_at.is_some())},
            "metricResults": [{"name": "error-rate", "phase": phase,
                "count": measured, "failed": measured, "measurements": measurements}]});
        if let Some(at) = failed_at {
            status["message"] = json!(why);
            status["completedAt"] = json!(ts(at));
            status["metricResults"][0]["message"] = json!(why);
        }
        json!({"apiVersion": "argoproj.io/v1alpha1", "kind": "AnalysisRun",
            "metadata": {"name": self.step_analysis_name(release), "namespace": namespace,
                "labels": {"rollout-type": "Step", "step-index": "1",
                           "rollouts-pod-template-hash": self.pod_hash(release)},
                "annotations": {"rollout.argoproj.io/revision": release.n.to_string()},
                "ownerReferences": [{"apiVersion": "argoproj.io/v1alpha1", "kind": "Rollout",
                                     "name": self.name, "controller": true}]},
            "spec": {"metrics": [self.error_rate_metric("1m", 0.05, STEP_FAILURES - 1)]},
            "status": status})
    }
}
