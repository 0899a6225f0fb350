//! An application (NodeJS, SpringBoot, Python, Go) provisioned from its XR's creation to
//! running healthy in dev, the way Crossplane, provider-github, Glidepath, Tekton, Argo CD
//! and Argo Rollouts move it along. The world at any moment is a function of time alone.

use chrono::{DateTime, Duration, Utc};
use serde_json::{json, Value};

use super::objects::{self, condition, RunState};
use super::{CatalogEntity, PullRequest, Story};

/// Seconds after the XR's creation at which each thing happens (negative: before it).
#[derive(Clone, Copy, Debug)]
pub struct Timeline {
    pub request_opened: i64,
    pub request_merged: i64,
    pub onboarding_source_opened: i64,
    pub onboarding_gitops_opened: i64,
    pub onboarding_source_merged: i64,
    pub onboarding_gitops_merged: i64,
    pub synced: i64,
    pub dev_cluster: i64,
    pub repo_source: i64,
    pub argo_created: i64,
    pub repo_gitops: i64,
    pub file_catalog: i64,
    pub file_cicd: i64,
    pub argo_healthy: i64,
    pub cicd: i64,
    pub xr_ready: i64,
    pub secrets_created: i64,
    pub secrets_ready: i64,
    pub build_start: i64,
    /// Seconds per build task.
    pub task: i64,
    pub rollout_created: i64,
    pub rollout_healthy: i64,
}

/// The pace of a typical provision (about 17 minutes, two of them people merging PRs).
pub const TYPICAL: Timeline = Timeline {
    request_opened: -720,
    request_merged: -240,
    onboarding_source_opened: 150,
    onboarding_gitops_opened: 155,
    onboarding_source_merged: 540,
    onboarding_gitops_merged: 600,
    synced: 5,
    dev_cluster: 20,
    repo_source: 55,
    argo_created: 60,
    repo_gitops: 65,
    file_catalog: 80,
    file_cicd: 85,
    argo_healthy: 120,
    cicd: 130,
    xr_ready: 140,
    secrets_created: 140,
    secrets_ready: 170,
    build_start: 545,
    task: 50,
    rollout_created: 905,
    rollout_healthy: 1010,
};

pub const BUILD_TASKS: [&str; 7] = [
    "fetch-source",
    "unit-tests",
    "build-image",
    "sast-scan",
    "generate-sbom",
    "sign-image",
    "update-gitops",
];

/// One deploy run of a cloud-deployed service.
#[derive(Clone, Debug)]
pub struct CloudDeploy {
    /// Seconds after the XR's creation the run starts.
    pub at: i64,
    /// The image tag (its trailing hex is the commit).
    pub tag: String,
    pub environment: String,
    /// Tekton's message when the cloud task fails.
    pub fails_with: Option<String>,
}

/// How a service reaches its first environment.
#[derive(Clone, Debug)]
pub enum Deployment {
    /// Glidepath's deploy-to-dev stage creates an Argo Rollout.
    Rollout,
    /// Deploy PipelineRuns push to a cloud target (`aws-ecs`, `aws-lambda`,
    /// `azure-container-apps`) described by `config` (the `config-json` result).
    Cloud {
        target: &'static str,
        config: Value,
        image: String,
        deploys: Vec<CloudDeploy>,
    },
}

/// One application's provisioning story.
#[derive(Clone, Debug)]
pub struct AppStory {
    pub name: String,
    /// NodeJS, SpringBoot, Python or Go.
    pub kind: &'static str,
    /// When the XR is created.
    pub created: DateTime<Utc>,
    pub timeline: Timeline,
    /// A provider error that keeps the source repository from being created.
    pub repo_error: Option<String>,
    /// The request PR's number in the tenants repo.
    pub request_number: u64,
    pub deployment: Deployment,
}

impl AppStory {
    pub fn new(name: &str, kind: &'static str, created: DateTime<Utc>) -> Self {
        Self {
            name: name.to_owned(),
            kind,
            created,
            timeline: TYPICAL,
            repo_error: None,
            request_number: 100 + name.bytes().map(u64::from).sum::<u64>() % 900,
            deployment: Deployment::Rollout,
        }
    }

    fn is_function(&self) -> bool {
        self.kind.ends_with("Function")
    }

    /// The deploy runs and their TaskRuns that exist at `elapsed` seconds.
    fn cloud_runs(&self, elapsed: i64, namespace: &str, out: &mut Vec<Value>) {
        let Deployment::Cloud {
            target,
            config,
            image,
            deploys,
        } = &self.deployment
        else {
            return;
        };
        let cloud_task = match *target {
            "aws-ecs" => "deploy-aws-ecs",
            "aws-lambda" => "deploy-aws-lambda",
            _ => "deploy-azure-containerapps",
        };
        let tasks = ["resolve-deploy-target", "resolve-image-ref", cloud_task];
        for (i, deploy) in deploys.iter().enumerate() {
            if elapsed < deploy.at {
                continue;
            }
            let name = format!("{}-deploy-{}", self.name, 1 + i);
            let run = objects::RunRef {
                name: &name,
                namespace,
                pipeline: "deploy",
            };
            let image_ref = format!("{image}:{}", deploy.tag);
            // Resolving takes 10 s each; the cloud task 4 minutes.
            let ends = [deploy.at + 10, deploy.at + 20, deploy.at + 260];
            let mut finished = 0;
            let mut failed = false;
            for (t, task) in tasks.iter().enumerate() {
                let start = if t == 0 { deploy.at } else { ends[t - 1] };
                if elapsed < start {
                    break;
                }
                let done = elapsed >= ends[t];
                let fails = done && t == 2 && deploy.fails_with.is_some();
                let state = match (done, fails) {
                    (false, _) => RunState::Running,
                    (true, true) => RunState::Failed,
                    (true, false) => RunState::Succeeded,
                };
                let mut task_run = objects::task_run(
                    run,
                    task,
                    self.at(start),
                    state,
                    done.then(|| self.at(ends[t])),
                    deploy.fails_with.as_deref(),
                );
                let results = match t {
                    0 => json!([{"name": "target", "type": "string", "value": target},
                                {"name": "config-json", "type": "string", "value": config.to_string()}]),
                    1 => json!([{"name": "image-ref", "type": "string", "value": image_ref}]),
                    _ => json!([]),
                };
                if done && t < 2 {
                    task_run["status"]["results"] = results;
                }
                if t == 2 {
                    task_run["spec"]["params"] = json!([{"name": "env", "value": deploy.environment},
                                                        {"name": "image-ref", "value": image_ref}]);
                }
                out.push(task_run);
                finished += usize::from(done && !fails);
                failed |= fails;
            }
            let state = if failed {
                RunState::Failed
            } else if finished == tasks.len() {
                RunState::Succeeded
            } else {
                RunState::Running
            };
            let completed = (state != RunState::Running).then(|| self.at(ends[2] + 1));
            out.push(objects::pipeline_run(
                run,
                self.at(deploy.at),
                &tasks,
                finished,
                state,
                completed,
            ));
        }
    }

    /// The commit its first build builds: for a cloud target, one whose prefix its first
    /// deploy's tag names.
    fn first_commit(&self) -> String {
        let made =
            |key: &str| crate::store::uid_of(&format!("{}/{key}", self.name)).replace('-', "");
        let long = made("first-build") + &made("first-build/more");
        let prefix = match &self.deployment {
            Deployment::Cloud { deploys, .. } => deploys
                .first()
                .and_then(|d| d.tag.rsplit('-').next())
                .unwrap_or_default()
                .to_owned(),
            Deployment::Rollout => String::new(),
        };
        format!("{prefix}{}", &long[..40 - prefix.len().min(40)])
    }

    /// The image its first build publishes: the cloud target's image at its first deploy's
    /// tag, or `ghcr.io/acme/<name>:1.0.0-<commit>` for the Rollout it deploys to dev.
    fn first_image(&self) -> String {
        match &self.deployment {
            Deployment::Cloud { image, deploys, .. } => match deploys.first() {
                Some(first) => format!("{image}:{}", first.tag),
                None => image.clone(),
            },
            Deployment::Rollout => {
                format!(
                    "ghcr.io/acme/{}:1.0.0-{}",
                    self.name,
                    &self.first_commit()[..7]
                )
            }
        }
    }

    fn at(&self, seconds: i64) -> DateTime<Utc> {
        self.created + Duration::seconds(seconds)
    }

    fn build_end(&self) -> i64 {
        self.timeline.build_start
            + self.timeline.task * i64::try_from(BUILD_TASKS.len()).unwrap_or(7)
    }
}

impl Story for AppStory {
    fn catalog_at(&self, now: DateTime<Utc>) -> Vec<CatalogEntity> {
        let readable_since = self.created + Duration::seconds(self.timeline.file_catalog);
        if self.repo_error.is_some() || now < readable_since {
            return Vec::new();
        }
        vec![CatalogEntity {
            entity: super::component(&self.name, "service", "group:default/team-a"),
            readable_since,
        }]
    }

    fn files_at(&self, now: DateTime<Utc>) -> Vec<super::RepoFile> {
        let elapsed = (now - self.created).num_seconds();
        if self.repo_error.is_some() || elapsed < self.timeline.file_cicd {
            return Vec::new();
        }
        // What Glidepath scaffolds: the first environment and its deploy stage, and for a
        // cloud target where it deploys.
        let mut content =
            "deploy:\n  environments:\n    - name: dev\n      type: ground\n".to_owned();
        if let Deployment::Cloud { config, .. } = &self.deployment {
            if let Ok(target) = serde_yaml_ng::to_string(&config["deploy"]) {
                for line in target.lines() {
                    content.push_str("  ");
                    content.push_str(line);
                    content.push('\n');
                }
            }
        }
        content.push_str("stages:\n  - build\n  - deploy-to-dev\n");
        vec![super::RepoFile {
            repo: format!("acme/{}", self.name),
            path: ".glidepath/cicd.yaml".to_owned(),
            content,
        }]
    }

    fn pull_requests_at(&self, now: DateTime<Utc>) -> Vec<PullRequest> {
        let t = &self.timeline;
        let elapsed = (now - self.created).num_seconds();
        let pr =
            |repo: String, number: u64, title: String, user: &str, opened: i64, merged: i64| {
                (elapsed >= opened).then(|| {
                    let merged_at = (elapsed >= merged).then(|| self.at(merged));
                    PullRequest {
                        repo,
                        number,
                        title,
                        body: String::new(),
                        user: user.to_owned(),
                        head_ref: format!("hangar/{}-{number}", self.name),
                        base_ref: "main".to_owned(),
                        created_at: self.at(opened),
                        merged_at,
                        closed_at: merged_at,
                        ..PullRequest::default()
                    }
                })
            };
        let name = &self.name;
        let mut prs = vec![pr(
            "acme/hangar-tenants".to_owned(),
            self.request_number,
            format!("Create {} {name}", self.kind),
            "dana",
            t.request_opened,
            t.request_merged,
        )];
        if self.repo_error.is_none() {
            prs.push(pr(
                format!("acme/{name}"),
                1,
                format!("Onboarding: re-sync {name}"),
                "glidepath-bot",
                t.onboarding_source_opened,
                t.onboarding_source_merged,
            ));
            if !self.is_function() {
                prs.push(pr(
                    format!("acme/gitops-{name}"),
                    1,
                    format!("Onboarding: re-sync gitops-{name}"),
                    "glidepath-bot",
                    t.onboarding_gitops_opened,
                    t.onboarding_gitops_merged,
                ));
            }
        }
        prs.into_iter().flatten().collect()
    }

    fn objects_at(&self, now: DateTime<Utc>) -> Vec<(String, Value)> {
        let t = &self.timeline;
        let elapsed = (now - self.created).num_seconds();
        if elapsed < 0 {
            return Vec::new();
        }
        let seen = |offset: i64| elapsed >= offset;
        let when = |offset: i64| seen(offset).then(|| self.at(offset));
        let name = self.name.as_str();
        let cicd_ns = format!("app-{name}-cicd");
        let broken = self.repo_error.is_some();
        let synced_at = self.at(t.synced);
        let mut out: Vec<Value> = Vec::new();

        // Composed repositories and starter files.
        let error = self.repo_error.as_deref();
        out.push(objects::repository(
            name,
            &format!("{name}-source"),
            name,
            if broken { None } else { when(t.repo_source) },
            synced_at,
            error,
        ));
        // A function has no GitOps repository.
        let function = self.is_function();
        if !function {
            out.push(objects::repository(
                name,
                &format!("{name}-gitops"),
                &format!("gitops-{name}"),
                when(t.repo_gitops),
                synced_at,
                None,
            ));
        }
        out.push(objects::repository_file(
            name,
            &format!("{name}-catalog-info"),
            name,
            "catalog-info.yaml",
            if broken { None } else { when(t.file_catalog) },
            synced_at,
        ));
        out.push(objects::repository_file(
            name,
            &format!("{name}-cicd-yaml"),
            name,
            ".glidepath/cicd.yaml",
            if broken { None } else { when(t.file_cicd) },
            synced_at,
        ));
        let cicd_done = seen(t.cicd) && !broken;
        out.push(json!({"apiVersion": "platform.hangar.io/v1alpha1", "kind": "AppCicd",
            "metadata": {"name": format!("{name}-cicd"), "namespace": "tenants", "labels": {"crossplane.io/composite": name}},
            "spec": {"appRef": {"name": name}},
            "status": {"conditions": [condition("Ready", cicd_done, if cicd_done { "Available" } else { "Creating" },
                                                if cicd_done { self.at(t.cicd) } else { synced_at }, None)]}}));

        // The XR.
        let ready = seen(t.xr_ready) && !broken;
        let mut conditions = vec![
            condition("Synced", true, "ReconcileSuccess", synced_at, None),
            condition(
                "Ready",
                ready,
                if ready { "Available" } else { "Creating" },
                if ready {
                    self.at(t.xr_ready)
                } else {
                    synced_at
                },
                (!ready).then_some("Unready resources: source-repo, gitops-repo"),
            ),
        ];
        conditions.push(if seen(t.dev_cluster) {
            condition(
                "DevClusterReady",
                true,
                "Available",
                self.at(t.dev_cluster),
                Some("Dev cluster dev-euw1 selected"),
            )
        } else {
            condition(
                "DevClusterReady",
                false,
                "Selecting",
                synced_at,
                Some("Choosing a dev cluster"),
            )
        });
        conditions.push(if cicd_done {
            condition(
                "CicdOnboarded",
                true,
                "Available",
                self.at(t.cicd),
                Some("Tekton namespace and Argo CD project ready"),
            )
        } else {
            condition(
                "CicdOnboarded",
                false,
                "WaitingForRepo",
                synced_at,
                Some("Waiting for the source repository"),
            )
        });
        let mut annotations = json!({"terasky.backstage.io/source-info":
            json!({"repo": "acme/hangar-tenants", "path": format!("tenants/dev/{name}.yaml")}).to_string()});
        if let Deployment::Cloud { target, .. } = &self.deployment {
            annotations["hangar.io/deploy-target"] = json!(target);
        }
        let refs: Vec<Value> = [
            (
                "repo.github.m.upbound.io/v1alpha1",
                "Repository",
                format!("{name}-source"),
            ),
            (
                "repo.github.m.upbound.io/v1alpha1",
                "Repository",
                format!("{name}-gitops"),
            ),
            (
                "repo.github.m.upbound.io/v1alpha1",
                "RepositoryFile",
                format!("{name}-catalog-info"),
            ),
            (
                "repo.github.m.upbound.io/v1alpha1",
                "RepositoryFile",
                format!("{name}-cicd-yaml"),
            ),
            (
                "platform.hangar.io/v1alpha1",
                "AppCicd",
                format!("{name}-cicd"),
            ),
            (
                "kubernetes.crossplane.io/v1alpha2",
                "Object",
                format!("{name}-namespaces"),
            ),
        ]
        .into_iter()
        .filter(|(_, _, n)| !function || !n.ends_with("-gitops"))
        .map(|(api_version, kind, n)| json!({"apiVersion": api_version, "kind": kind, "name": n}))
        .collect();
        out.push(json!({"apiVersion": "catalog.hangar.io/v1alpha1", "kind": self.kind,
            "metadata": {"name": name, "namespace": "tenants", "generation": 1,
                         "creationTimestamp": objects::ts(self.created),
                         "annotations": annotations,
                         "labels": {"crossplane.io/composite": name}},
            "spec": {"owner": "team-payments", "crossplane": {"compositionRef": {"name": format!("{}-default", self.kind.to_ascii_lowercase())},
                                                              "resourceRefs": refs}},
            "status": {"conditions": conditions}}));

        if broken {
            return out.into_iter().map(|o| ("dev".to_owned(), o)).collect();
        }
        // The platform's Argo CD application for the app's CI/CD.
        if seen(t.argo_created) {
            let healthy = seen(t.argo_healthy);
            out.push(objects::application(
                &format!("{name}-cicd"),
                "argocd",
                if healthy { "Synced" } else { "OutOfSync" },
                if healthy { "Healthy" } else { "Progressing" },
                self.at(if healthy {
                    t.argo_healthy
                } else {
                    t.argo_created
                }),
                "https://github.com/acme/gitops-platform",
            ));
        }
        if cicd_done {
            out.push(objects::namespace(&cicd_ns));
        }
        // Secrets, and Glidepath's own resync run (which provisioning must ignore).
        if seen(t.secrets_created) {
            let ready = seen(t.secrets_ready);
            let at = self.at(if ready {
                t.secrets_ready
            } else {
                t.secrets_created
            });
            out.push(json!({"apiVersion": "secrets.hangar.io/v1alpha1", "kind": "SecretStore",
                "metadata": {"name": format!("{name}-secrets"), "namespace": cicd_ns, "labels": {"crossplane.io/composite": format!("{name}-secrets")}},
                "spec": {"appRef": {"name": name}, "environments": ["dev"]},
                "status": {"conditions": [condition("Synced", true, "ReconcileSuccess", at, None),
                                          condition("Ready", ready, if ready { "Available" } else { "Creating" }, at, None)]}}));
            if ready {
                out.push(objects::project(
                    &format!("{name}-secrets"),
                    (name, &cicd_ns),
                    name,
                    &format!("6f1c{name}"),
                    vec![condition("Ready", true, "Available", at, None)],
                ));
            }
            let resync = format!("{name}-onboarding-resync-x1");
            let done = elapsed >= t.secrets_created + 30;
            let resync_run = objects::RunRef {
                name: &resync,
                namespace: &cicd_ns,
                pipeline: "onboarding-resync",
            };
            out.push(objects::pipeline_run(
                resync_run,
                self.at(t.secrets_created),
                &["resync"],
                usize::from(done),
                if done {
                    RunState::Succeeded
                } else {
                    RunState::Running
                },
                done.then(|| self.at(t.secrets_created + 30)),
            ));
        }
        // The first build starts when the source onboarding PR is merged.
        if seen(t.build_start) {
            let run_name = format!("{name}-build-7hq2x");
            let run = objects::RunRef {
                name: &run_name,
                namespace: &cicd_ns,
                pipeline: "build",
            };
            let done = usize::try_from(((elapsed - t.build_start) / t.task).max(0))
                .unwrap_or(0)
                .min(BUILD_TASKS.len());
            for (i, task) in BUILD_TASKS.iter().enumerate() {
                let start = t.build_start + t.task * i64::try_from(i).unwrap_or(0);
                if !seen(start) {
                    break;
                }
                let (state, end) = if i < done {
                    (RunState::Succeeded, Some(self.at(start + t.task - 5)))
                } else {
                    (RunState::Running, None)
                };
                let mut task_run = objects::task_run(run, task, self.at(start), state, end, None);
                // The image it publishes, as Tekton's build tasks report it.
                if *task == "build-image" && i < done {
                    let digest = crate::store::uid_of(&self.first_image()).replace('-', "");
                    task_run["status"]["results"] = json!([
                        {"name": "IMAGE_URL", "type": "string", "value": self.first_image()},
                        {"name": "IMAGE_DIGEST", "type": "string",
                         "value": format!("sha256:{digest}{digest}")}]);
                }
                out.push(task_run);
            }
            let finished = done == BUILD_TASKS.len();
            let mut pipeline_run = objects::pipeline_run(
                run,
                self.at(t.build_start),
                &BUILD_TASKS,
                done,
                if finished {
                    RunState::Succeeded
                } else {
                    RunState::Running
                },
                finished.then(|| self.at(self.build_end())),
            );
            // It builds the commit the source onboarding PR's merge made.
            pipeline_run["spec"]["params"][0]["value"] = json!(self.first_commit());
            out.push(pipeline_run);
        }
        // Cloud targets: the deploy stage's runs.
        self.cloud_runs(elapsed, &cicd_ns, &mut out);
        // The deploy-to-dev stage creates the Rollout, which turns healthy.
        let rollout = matches!(self.deployment, Deployment::Rollout);
        if rollout && seen(t.rollout_created) && seen(self.build_end()) {
            let namespace = format!("app-{name}-dev");
            out.push(objects::namespace(&namespace));
            let healthy = seen(t.rollout_healthy);
            let image = self.first_image();
            let (phase, available, since, message) = if healthy {
                ("Healthy", 2, self.at(t.rollout_healthy), None)
            } else {
                (
                    "Progressing",
                    1,
                    self.at(t.rollout_created),
                    Some("more replicas need to be updated"),
                )
            };
            out.push(objects::rollout(
                name, "dev", &image, phase, 2, available, since, message,
            ));
            out.extend(objects::rollout_replicas(
                name,
                "dev",
                &image,
                (2, available),
                self.at(t.rollout_created),
            ));
            // The Application the GitOps repo's dev environment makes, as Argo CD reports it.
            let mut app = objects::application(
                &format!("{name}-dev"),
                "argocd",
                "Synced",
                phase,
                since,
                &format!("https://github.com/acme/gitops-{name}.git"),
            );
            app["metadata"]["labels"] =
                json!({"hangar.io/app": name, "hangar.io/environment": "dev"});
            app["spec"]["destination"] = json!({"name": "dev", "namespace": namespace});
            app["status"]["summary"] = json!({"images": [image]});
            out.push(app);
        }
        // Every TaskRun runs in a pod.
        let pods: Vec<Value> = out
            .iter()
            .filter(|o| o["kind"] == "TaskRun")
            .map(objects::task_pod)
            .collect();
        out.extend(pods);
        out.into_iter().map(|o| ("dev".to_owned(), o)).collect()
    }
}
