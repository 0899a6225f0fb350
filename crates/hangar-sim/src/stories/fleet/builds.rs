//! A steady app's Tekton runs and pull requests: the build of each release on `main`
//! (with Tekton Chains' annotations), the busy app's pull-request runs, and the pull
//! requests GitHub holds for them.

use super::*;

impl SteadyApp {
    /// The newest three builds on `main` (the oldest is what a paused canary's stable
    /// version came from); each publishes its image from `build-image`, which Tekton
    /// Chains signs as the app's [`Chains`] says.
    pub(super) fn builds(&self, now: DateTime<Utc>) -> Vec<(String, Value)> {
        let namespace = format!("app-{}-cicd", self.name);
        let mut out = vec![("dev".to_owned(), objects::namespace(&namespace))];
        for back in [0, self.cadence, 2 * self.cadence] {
            let release = self.release_before(now, back);
            let elapsed = (now - release.at).num_seconds();
            let per_task = BUILD_TAKES / BUILD_TASKS.len() as i64;
            let finished = usize::try_from(elapsed / per_task)
                .unwrap_or(0)
                .min(BUILD_TASKS.len());
            let done = finished == BUILD_TASKS.len();
            let name = format!("{}-build-{}", self.name, release.n % 100_000);
            let run = RunRef {
                name: &name,
                namespace: &namespace,
                pipeline: "build",
            };
            let mut pipeline_run = objects::pipeline_run(
                run,
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
            if self.detailed {
                self.pac(&mut pipeline_run, &self.commit(release), "push", None);
            }
            out.push(("dev".to_owned(), pipeline_run));
            for (k, task) in BUILD_TASKS.iter().enumerate().take(finished + 1) {
                let started = release.at + Duration::seconds(k as i64 * per_task);
                if *task == "build-image" && k < finished {
                    out.push(("dev".to_owned(), self.image_build(run, release, per_task)));
                } else if self.detailed && started <= now {
                    let ended = k < finished;
                    out.push((
                        "dev".to_owned(),
                        objects::task_run(
                            run,
                            task,
                            started,
                            if ended {
                                RunState::Succeeded
                            } else {
                                RunState::Running
                            },
                            ended.then(|| started + Duration::seconds(per_task)),
                            None,
                        ),
                    ));
                }
            }
        }
        if self.detailed {
            out.extend(pods_of(&out));
        }
        if self.busy {
            out.extend(self.pr_runs(now));
        }
        out
    }

    /// Pipelines-as-Code's keys on a run it started for `sha` on `event`
    /// (`pull_request` with the PR's number and branch, or `push` to `main`).
    pub(super) fn pac(&self, run: &mut Value, sha: &str, event: &str, pr: Option<(i64, &str)>) {
        const PAC: &str = "pipelinesascode.tekton.dev";
        let labels = &mut run["metadata"]["labels"];
        labels[format!("{PAC}/sha")] = json!(sha);
        labels[format!("{PAC}/event-type")] = json!(event);
        labels[format!("{PAC}/branch")] = json!("main");
        labels[format!("{PAC}/url-org")] = json!("acme");
        labels[format!("{PAC}/url-repository")] = json!(self.name);
        // One of four people, chosen by the commit.
        let who = usize::from(sha.bytes().next().unwrap_or(0)) % 4;
        labels[format!("{PAC}/sender")] = json!(["ana", "bo", "chen", "dara"][who]);
        let mut annotations = json!({
            format!("{PAC}/repo-url"): format!("https://github.com/acme/{}", self.name),
            format!("{PAC}/sha-url"): format!("https://github.com/acme/{}/commit/{sha}", self.name),
        });
        if let Some((number, branch)) = pr {
            labels[format!("{PAC}/pull-request")] = json!(number.to_string());
            annotations[format!("{PAC}/source-branch")] = json!(branch);
            annotations[format!("{PAC}/sha-title")] = json!(format!("Work on {branch}"));
        }
        run["metadata"]["annotations"] = annotations;
    }

    /// A busy app's pull-request runs: one every ten minutes, the newest
    /// [`PR_RUNS_KEPT`]; about one in nine fails its unit tests, one in 23 is cancelled.
    pub(super) fn pr_runs(&self, now: DateTime<Utc>) -> Vec<(String, Value)> {
        let namespace = format!("app-{}-cicd", self.name);
        let newest = now.timestamp().div_euclid(PR_EVERY);
        let mut out = Vec::new();
        for slot in (newest - PR_RUNS_KEPT + 1)..=newest {
            let Some(started) = DateTime::from_timestamp(slot * PR_EVERY, 0) else {
                continue;
            };
            let name = format!("{}-pr-{}", self.name, slot % 1_000_000);
            let run = RunRef {
                name: &name,
                namespace: &namespace,
                pipeline: "pull-request",
            };
            // Every run ends at its last task, the unit tests: most pass, about one in nine
            // fails them, one in 23 is cancelled half-way through them.
            let last = PR_TASKS.len() - 1;
            let state = if slot % 23 == 7 {
                RunState::Cancelled
            } else if slot % 9 == 4 {
                RunState::Failed
            } else {
                RunState::Succeeded
            };
            let take = |k: usize| started + Duration::seconds(k as i64 * PR_TASK_TAKES);
            let cancel_at = take(last) + Duration::seconds(PR_TASK_TAKES / 2);
            let end = if state == RunState::Cancelled {
                cancel_at
            } else {
                take(last + 1)
            };
            let done = now >= end;
            let finished = if done && state == RunState::Cancelled {
                last
            } else {
                usize::try_from((now - started).num_seconds() / PR_TASK_TAKES)
                    .unwrap_or(0)
                    .min(last + 1)
            };
            let mut pipeline_run = objects::pipeline_run(
                run,
                started,
                &PR_TASKS,
                finished,
                if done { state } else { RunState::Running },
                done.then_some(end),
            );
            let number = pr_number(slot);
            let branch = format!("feature-{number}");
            let sha = self.pr_sha(slot);
            self.pac(
                &mut pipeline_run,
                &sha,
                "pull_request",
                Some((number, &branch)),
            );
            out.push(("dev".to_owned(), pipeline_run));
            let first_task = out.len();
            for (k, task) in PR_TASKS.iter().enumerate().take(finished + 1) {
                let at = take(k);
                if at > now {
                    break;
                }
                let (task_state, ended) = match (done, k == last, state) {
                    (true, true, RunState::Cancelled) => (RunState::Cancelled, Some(cancel_at)),
                    (true, true, RunState::Failed) => (RunState::Failed, Some(take(k + 1))),
                    _ if k < finished => (RunState::Succeeded, Some(take(k + 1))),
                    _ => (RunState::Running, None),
                };
                out.push((
                    "dev".to_owned(),
                    objects::task_run(run, task, at, task_state, ended, None),
                ));
            }
            if slot > newest - PR_PODS_KEPT {
                let pods = pods_of(&out[first_task..]);
                out.extend(pods);
            }
        }
        out
    }

    /// The finished `build-image` TaskRun of `release`: its image in the results Chains
    /// reads, and Chains' annotations.
    pub(super) fn image_build(&self, run: RunRef<'_>, release: Release, per_task: i64) -> Value {
        let started = release.at + Duration::seconds(2 * per_task);
        let done = started + Duration::seconds(per_task);
        let mut task = objects::task_run(
            run,
            "build-image",
            started,
            RunState::Succeeded,
            Some(done),
            None,
        );
        let uid = crate::store::uid_of(&format!("{}/build-image", run.name));
        task["metadata"]["uid"] = json!(uid);
        let digest = self.digest(release);
        let mut results = vec![
            json!({"name": "IMAGE_URL", "type": "string", "value": self.image(release)}),
            json!({"name": "IMAGE_DIGEST", "type": "string", "value": digest}),
        ];
        match self.chains {
            Chains::Absent => {}
            Chains::Fails => {
                task["metadata"]["annotations"] =
                    json!({"chains.tekton.dev/signed": "failed", "chains.tekton.dev/retries": "3"});
            }
            Chains::Signs => {
                let hex = digest.trim_start_matches("sha256:");
                let statement = json!({"_type": "https://in-toto.io/Statement/v0.1",
                    "predicateType": "https://slsa.dev/provenance/v1",
                    "subject": [{"name": format!("ghcr.io/acme/{}", self.name), "digest": {"sha256": hex}}],
                    "predicate": {"buildDefinition": {"buildType": "https://tekton.dev/chains/v2/slsa",
                            "externalParameters": {"runSpec": {"pipelineRef": {"name": "build"}}},
                            "resolvedDependencies": [
                                {"uri": format!("git+https://github.com/acme/{}.git@refs/heads/main", self.name),
                                 "digest": {"sha1": self.commit(release)}},
                                {"uri": "oci://ghcr.io/acme/tasks/build-image",
                                 "digest": {"sha256": hex.chars().rev().collect::<String>()}}]},
                        "runDetails": {"builder": {"id": "https://tekton.dev/chains/v2"},
                            "metadata": {"invocationId": uid, "startedOn": ts(started), "finishedOn": ts(done)}}}});
                let payload =
                    base64::engine::general_purpose::STANDARD.encode(statement.to_string());
                let signature = base64::engine::general_purpose::STANDARD
                    .encode(format!("sim-signature/{uid}/{hex}"));
                // Rekor's public log grows by about one entry a second.
                let index = 100_000_000 + done.timestamp() % 1_000_000_000;
                task["metadata"]["annotations"] = json!({
                    "chains.tekton.dev/signed": "true",
                    "chains.tekton.dev/transparency":
                        format!("https://rekor.sigstore.dev/api/v1/log/entries?logIndex={index}"),
                    format!("chains.tekton.dev/payload-taskrun-{uid}"): payload,
                    format!("chains.tekton.dev/signature-taskrun-{uid}"): signature});
                results.push(json!({"name": "SBOM_URL", "type": "string",
                    "value": format!("ghcr.io/acme/{}:sha256-{}.sbom", self.name, &hex[..12])}));
                results.push(json!({"name": "SBOM_DIGEST", "type": "string",
                    "value": format!("sha256:{}", hex.chars().rev().collect::<String>())}));
            }
        }
        task["status"]["results"] = json!(results);
        task
    }

    /// Release PRs to prod on the GitOps repo: the newest (open until it is merged three
    /// hours after its build) and the one before it.
    pub(super) fn pull_requests(&self, now: DateTime<Utc>) -> Vec<PullRequest> {
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
                    ..PullRequest::default()
                }
            })
            // A held app's releases go to prod only by the promotions people make.
            .filter(|pr| {
                pr.created_at <= now
                    && self
                        .held
                        .is_none_or(|held| pr.merged_at.is_some_and(|m| m <= held))
            })
            .chain(self.source_pull_requests(now))
            .collect()
    }

    /// A detailed app's source repo: each of the newest three releases was a PR merged as
    /// its build began (its merge commit is the build's commit), opened at the release
    /// before; a busy app also has a PR an hour for its pull-request runs — the current
    /// hour's open, its head the newest run's commit, earlier ones closed unmerged.
    pub(super) fn source_pull_requests(&self, now: DateTime<Utc>) -> Vec<PullRequest> {
        if !self.detailed {
            return Vec::new();
        }
        let people = ["ana", "bo", "chen", "dara"];
        let repo = format!("acme/{}", self.name);
        let mut out: Vec<PullRequest> = [0, self.cadence, 2 * self.cadence]
            .into_iter()
            .map(|back| {
                let release = self.release_before(now, back);
                let opened = self.release_before(now, back + self.cadence).at;
                let n = release.n % 1_000;
                PullRequest {
                    repo: repo.clone(),
                    number: u64::try_from(n).unwrap_or(0) + 1_000,
                    title: format!("Change {n} of {}", self.name),
                    body: String::new(),
                    user: people[usize::try_from(n).unwrap_or(0) % people.len()].to_owned(),
                    head_ref: format!("change-{n}"),
                    base_ref: "main".to_owned(),
                    created_at: opened,
                    merged_at: Some(release.at),
                    closed_at: Some(release.at),
                    head_sha: Some(self.commit(release).chars().rev().collect::<String>()),
                    merge_commit_sha: Some(self.commit(release)),
                    draft: false,
                    labels: Vec::new(),
                }
            })
            .collect();
        if self.busy {
            let newest = now.timestamp().div_euclid(PR_EVERY);
            let oldest = newest - PR_RUNS_KEPT + 1;
            // A PR an hour (six runs), the runs of its hour pushed to it.
            for hour in oldest.div_euclid(6)..=newest.div_euclid(6) {
                let number = pr_number(hour * 6);
                let last_slot = (hour * 6 + 5).min(newest);
                let closed = (hour < newest.div_euclid(6))
                    .then(|| DateTime::from_timestamp((hour + 1) * 6 * PR_EVERY, 0))
                    .flatten();
                out.push(PullRequest {
                    repo: repo.clone(),
                    number: u64::try_from(number).unwrap_or(0),
                    title: format!("Try feature-{number}"),
                    body: String::new(),
                    user: people[usize::try_from(hour).unwrap_or(0) % people.len()].to_owned(),
                    head_ref: format!("feature-{number}"),
                    base_ref: "main".to_owned(),
                    created_at: DateTime::from_timestamp(hour * 6 * PR_EVERY, 0).unwrap_or(now),
                    merged_at: None,
                    closed_at: closed,
                    head_sha: Some(self.pr_sha(last_slot)),
                    merge_commit_sha: None,
                    draft: false,
                    labels: Vec::new(),
                });
            }
        }
        out
    }

    /// The commit a busy app's pull-request run of `slot` ran.
    pub(super) fn pr_sha(&self, slot: i64) -> String {
        let sha = crate::store::uid_of(&format!("{}/pr/{slot}", self.name)).replace('-', "");
        format!("{sha}{}", &sha[..8])
    }
}

/// The PR a busy app's pull-request run of `slot` runs for: one an hour, numbered 400–459.
pub(super) fn pr_number(slot: i64) -> i64 {
    400 + (slot / 6) % 60
}
