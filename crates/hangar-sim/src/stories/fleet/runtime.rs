//! What a steady app's runtime shows: its pods, autoscaler and Events in each environment,
//! and the Prometheus signals its stories play (the regressed release, the outage).

use super::*;

impl SteadyApp {
    /// The first release of the [`Trouble::Regressed`] app that is slow: the one in prod
    /// at the fleet's start.
    pub(super) fn regressed_from(&self, long_ago: DateTime<Utc>) -> Option<i64> {
        (self.trouble == Some(Trouble::Regressed))
            .then(|| self.running_in("prod", fleet_start(long_ago)).n)
    }

    /// Where the app runs in `env` besides its Rollout: a pod per replica of each
    /// ReplicaSet scaled up, the prod autoscaler, and the Events a cluster keeps about them
    /// — the rollout updated, a canary paused or aborted, the regressed release's pod
    /// OOMKilled and backing off, the outage's failed readiness probes.
    pub(super) fn runtime_objects(
        &self,
        env: &str,
        namespace: &str,
        replica_sets: &[Value],
        (arrival, prod, long_ago): (&Arrival, &Prod, DateTime<Utc>),
        now: DateTime<Utc>,
    ) -> Vec<Value> {
        let name = self.name.as_str();
        let mut out = Vec::new();
        let event = |object: (&str, &str),
                     (kind, reason, message): (&str, &str, String),
                     at: DateTime<Utc>,
                     count: u32| {
            json!({"apiVersion": "v1", "kind": "Event",
                "metadata": {"name": format!("{}.{}", object.1, &crate::store::uid_of(&format!("{namespace}/{reason}/{}", object.1)).replace('-', "")[16..]),
                             "namespace": namespace, "creationTimestamp": ts(at)},
                "involvedObject": {"kind": object.0, "name": object.1, "namespace": namespace},
                "reason": reason, "message": message, "type": kind, "count": count,
                "firstTimestamp": ts(at), "lastTimestamp": ts(at),
                "source": {"component": if object.0 == "Rollout" { "rollouts-controller" } else { "kubelet" }}})
        };
        let slow_from = self.regressed_from(long_ago);
        let oom_at = arrival.at + Duration::seconds(OOM_AFTER);
        for rs in replica_sets {
            let replicas = rs["spec"]["replicas"].as_u64().unwrap_or(0);
            let hash = rs["metadata"]["labels"]["rollouts-pod-template-hash"]
                .as_str()
                .unwrap_or_default();
            let image = &rs["spec"]["template"]["spec"]["containers"][0]["image"];
            let since = rs["metadata"]["creationTimestamp"].clone();
            let revision = revision_of(rs);
            for i in 0..replicas {
                let uid = crate::store::uid_of(&format!("{namespace}/{hash}/{i}"));
                let pod_name = format!("{name}-{hash}-{}", &uid[uid.len() - 5..]);
                let mut status = json!({"name": "app", "ready": true, "restartCount": 0,
                    "image": image, "state": {"running": {"startedAt": since}}});
                let oomed = env == "prod"
                    && i == 0
                    && revision == Some(arrival.release.n)
                    && slow_from.is_some_and(|n| arrival.release.n >= n)
                    && now >= oom_at;
                if oomed {
                    status["restartCount"] = json!(3);
                    status["state"] =
                        json!({"running": {"startedAt": ts(oom_at + Duration::seconds(20))}});
                    status["lastState"] = json!({"terminated": {"reason": "OOMKilled", "exitCode": 137,
                        "startedAt": ts(oom_at - Duration::seconds(600)), "finishedAt": ts(oom_at)}});
                    out.push(event(
                        ("Pod", &pod_name),
                        (
                            "Warning",
                            "BackOff",
                            "Back-off restarting failed container app in pod ".to_owned()
                                + &pod_name,
                        ),
                        oom_at,
                        3,
                    ));
                }
                out.push(json!({"apiVersion": "v1", "kind": "Pod",
                    "metadata": {"name": pod_name, "namespace": namespace, "creationTimestamp": since,
                        "labels": {"app.kubernetes.io/name": name, "rollouts-pod-template-hash": hash}},
                    "spec": {"containers": [{"name": "app", "image": image}],
                             "nodeName": format!("ip-10-0-{}-{}.ec2.internal", i % 3 + 1, 10 + i * 7)},
                    "status": {"phase": "Running", "startTime": since, "containerStatuses": [status]}}));
            }
        }
        let revision = arrival.release.n;
        out.push(event(
            ("Rollout", name),
            (
                "Normal",
                "RolloutUpdated",
                format!("Rollout updated to revision {revision}"),
            ),
            arrival.at,
            1,
        ));
        match prod {
            Prod::Canary(CanaryAt {
                paused_since: Some(at),
                ..
            }) => out.push(event(
                ("Rollout", name),
                (
                    "Normal",
                    "RolloutPaused",
                    "Rollout is paused (CanaryPauseStep)".to_owned(),
                ),
                *at,
                1,
            )),
            Prod::Aborted { at, .. } => out.push(event(
                ("Rollout", name),
                (
                    "Warning",
                    "RolloutAborted",
                    format!("Rollout aborted update to revision {revision}"),
                ),
                *at,
                1,
            )),
            Prod::Promoted {
                completed: Some(at),
            } => out.push(event(
                ("Rollout", name),
                (
                    "Normal",
                    "RolloutCompleted",
                    format!("Rollout completed update to revision {revision}"),
                ),
                *at,
                1,
            )),
            _ => {}
        }
        if env == "prod" {
            out.push(json!({"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
                "metadata": {"name": name, "namespace": namespace, "creationTimestamp": ts(long_ago)},
                "spec": {"minReplicas": 3, "maxReplicas": 6,
                         "scaleTargetRef": {"apiVersion": "argoproj.io/v1alpha1", "kind": "Rollout", "name": name}},
                "status": {"currentReplicas": 3, "desiredReplicas": if slow_from.is_some() { 5 } else { 3 }}}));
            if self.trouble == Some(Trouble::Outage) {
                let (_, ended) = outage(long_ago);
                out.push(event(
                    ("Rollout", name),
                    (
                        "Warning",
                        "Unhealthy",
                        "Readiness probe failed: HTTP probe failed with statuscode: 503".to_owned(),
                    ),
                    ended,
                    24,
                ));
            }
        }
        out
    }

    /// What the app's requests look like in `env` at `at` (the simulated Prometheus'
    /// series): a steady error ratio near 0.04 % and p99 near 230 ms, wobbling over the day;
    /// in prod, the canary's share of its errors at its weight — the paused canary's
    /// AnalysisRun measures 0.2–0.6 %, the aborted one's 7–9 % —, the regressed release's
    /// latency, and the outage.
    pub fn signals(
        &self,
        env: &str,
        at: DateTime<Utc>,
        long_ago: DateTime<Utc>,
        promoted: &[Promoted],
        acted: &[Acted],
    ) -> crate::stories::Signals {
        let (arrival, started, role, prod) = self.rollout_in(env, at, promoted, acted);
        #[allow(clippy::cast_precision_loss)]
        let wobble = (at.timestamp() as f64 / 10_800.0 + self.offset as f64).sin();
        let mut error = 0.0004 + 0.0002 * wobble;
        let (mut p95, mut p99) = (0.110 + 0.010 * wobble, 0.230 + 0.020 * wobble);
        if env == "prod" {
            let n = arrival.release.n;
            #[allow(clippy::cast_precision_loss)]
            match prod {
                Prod::Canary(c) if role == Role::PausedCanary => {
                    let i = started.map_or(0, |s| (at - s).num_seconds() / MEASURE_EVERY);
                    let canary = 0.002 + ((n + i) % 5) as f64 * 0.001;
                    let w = f64::from(c.weight) / 100.0;
                    error = w * canary + (1.0 - w) * error;
                }
                Prod::Analysing { since, .. } => {
                    let i = (at - since).num_seconds() / STEP_MEASURE_EVERY;
                    let canary = 0.07 + ((n + i) % 3) as f64 * 0.01;
                    error = 0.2 * canary + 0.8 * error;
                }
                _ => {}
            }
            if self.regressed_from(long_ago).is_some_and(|from| n >= from) {
                (p95, p99) = (0.420 + 0.015 * wobble, 0.910 + 0.030 * wobble);
            }
            if self.trouble == Some(Trouble::Outage) {
                let (began, ended) = outage(long_ago);
                if at >= began && at < ended {
                    error = 0.35;
                }
            }
        }
        // Prod is busiest; every environment serves enough for its alerts to be judged
        // (`tower_shared::slo::MIN_REQUESTS` in 5 minutes is a third of a request a second).
        let base = match env {
            "prod" => 40.0,
            "staging" => 6.0,
            _ => 2.0,
        };
        crate::stories::Signals {
            error_ratio: error,
            latency_p95: p95,
            latency_p99: p99,
            requests_per_second: base * (1.0 + 0.25 * wobble),
        }
    }
}
