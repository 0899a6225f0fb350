//! Cloud deploys: what Glidepath's Tekton deploy runs say about a service that runs on
//! AWS ECS, AWS Lambda or Azure Container Apps (spec: `cloud-deploys.md`).
//!
//! Tower reads no cloud API. Everything comes from the deploy PipelineRuns in
//! `app-<name>-cicd` and their TaskRuns: `resolve-deploy-target` publishes `target` and
//! `config-json`, `resolve-image-ref` publishes `image-ref`, and the cloud task
//! (`deploy-aws-*` / `deploy-azure-*`) takes the `env` param. Both resolve tasks publish
//! early, so a running deploy already shows its target and resource.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::hangar;
use crate::kube::{str_at, Object};
use crate::links;
use crate::snapshot::Snapshot;
use crate::tekton::{PipelineRun, RunStatus, TaskRun};

const RESOLVE_TARGET_TASK: &str = "resolve-deploy-target";
const RESOLVE_IMAGE_TASK: &str = "resolve-image-ref";

/// Where a cloud service runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CloudTarget {
    AwsEcs,
    AwsLambda,
    AzureContainerApps,
}

impl CloudTarget {
    /// Reads the id used by `hangar.io/deploy-target` and the `target` result.
    pub fn from_id(id: &str) -> Option<Self> {
        match id.trim() {
            "aws-ecs" => Some(Self::AwsEcs),
            "aws-lambda" => Some(Self::AwsLambda),
            "azure-container-apps" => Some(Self::AzureContainerApps),
            _ => None,
        }
    }

    pub fn id(self) -> &'static str {
        match self {
            Self::AwsEcs => "aws-ecs",
            Self::AwsLambda => "aws-lambda",
            Self::AzureContainerApps => "azure-container-apps",
        }
    }

    /// How people say it: "AWS ECS", "AWS Lambda", "Azure Container Apps".
    pub fn title(self) -> &'static str {
        match self {
            Self::AwsEcs => "AWS ECS",
            Self::AwsLambda => "AWS Lambda",
            Self::AzureContainerApps => "Azure Container Apps",
        }
    }

    /// The target a cloud task deploys to, from the task's name in the pipeline.
    pub fn from_task(task: &str) -> Option<Self> {
        match task {
            "deploy-aws-ecs" => Some(Self::AwsEcs),
            "deploy-aws-lambda" => Some(Self::AwsLambda),
            t if t.starts_with("deploy-azure-") => Some(Self::AzureContainerApps),
            _ => None,
        }
    }

    /// The key under `deploy` in the `config-json` result.
    fn config_key(self) -> &'static str {
        match self {
            Self::AwsEcs => "ecs",
            Self::AwsLambda => "lambda",
            Self::AzureContainerApps => "azureContainerApps",
        }
    }
}

fn is_cloud_task(task: &str) -> bool {
    task.starts_with("deploy-aws-") || task.starts_with("deploy-azure-")
}

/// Which variant of the Deployments tab a service gets. Never both.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Capability {
    CloudRuntime,
    K8sRuntime,
}

/// One deploy run, as the history table shows it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DeployRun {
    /// The PipelineRun's name (opens it in the Pipelines tab).
    pub run: String,
    pub status: RunStatus,
    pub environment: Option<String>,
    pub image: Option<String>,
    pub commit: Option<String>,
    pub started_at: Option<DateTime<Utc>>,
    pub finished_at: Option<DateTime<Utc>>,
    /// For a failed run: the pipeline task that failed (the cloud one when several did).
    pub failed_task: Option<String>,
    /// For a failed run: Tekton's message for that task.
    pub message: Option<String>,
    #[serde(skip)]
    target: Option<CloudTarget>,
    #[serde(skip)]
    place: Option<Place>,
}

/// The resource a run deployed to, from `config-json`.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Place {
    resource: Option<String>,
    region: Option<String>,
    /// ECS only: the cluster, for the console link.
    cluster: Option<String>,
}

/// The cloud Deployments tab for one service.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CloudDeploys {
    pub service: String,
    pub capability: Capability,
    pub target: Option<CloudTarget>,
    /// ECS service, Lambda function or Container App name.
    pub resource: Option<String>,
    pub region: Option<String>,
    pub console_url: Option<String>,
    pub last_success: Option<DeployRun>,
    pub in_progress: Option<DeployRun>,
    /// The newest failure that no newer success has fixed. The cloud may still be running
    /// the previous image.
    pub latest_failure: Option<DeployRun>,
    /// Every deploy run the cluster still keeps, newest first.
    pub history: Vec<DeployRun>,
}

/// The deploy target a service declares: `hangar.io/deploy-target` on its XR (annotation or
/// label), else on its catalog entity.
pub fn declared_target(snapshot: &Snapshot, service: &str) -> Option<CloudTarget> {
    let from_xr = snapshot
        .control_plane()
        .iter()
        .filter(|o| o.group() == hangar::XR_GROUP && o.name() == service)
        .find_map(|o| object_target(o));
    from_xr.or_else(|| {
        snapshot
            .catalog
            .iter()
            .flatten()
            .filter(|e| e.metadata.name == service)
            .find_map(|e| e.metadata.annotations.get(hangar::DEPLOY_TARGET_KEY))
            .and_then(|id| CloudTarget::from_id(id))
    })
}

/// `hangar.io/deploy-target` on one object.
pub fn object_target(object: &Object) -> Option<CloudTarget> {
    object
        .annotation(hangar::DEPLOY_TARGET_KEY)
        .or_else(|| object.label(hangar::DEPLOY_TARGET_KEY))
        .and_then(CloudTarget::from_id)
}

/// The cloud deploy view of `service` from a snapshot.
pub fn derive_cloud_deploys(snapshot: &Snapshot, service: &str) -> CloudDeploys {
    // A cloud service is an application or a function: never an InfraService.
    let namespace = hangar::cicd_namespace(service, None);
    let objects: Vec<&Object> = snapshot
        .control_plane()
        .iter()
        .filter(|o| o.namespace() == Some(namespace.as_str()))
        .map(|o| &**o)
        .collect();
    let runs: Vec<PipelineRun<'_>> = objects.iter().filter_map(|o| PipelineRun::new(o)).collect();
    let tasks: Vec<TaskRun<'_>> = objects.iter().filter_map(|o| TaskRun::new(o)).collect();
    derive_from_runs(service, declared_target(snapshot, service), &runs, &tasks)
}

/// The cloud deploy view from the PipelineRuns and TaskRuns of the service's CI/CD
/// namespace (any pipelines; the deploy runs are picked out here).
pub fn derive_from_runs(
    service: &str,
    declared: Option<CloudTarget>,
    runs: &[PipelineRun<'_>],
    tasks: &[TaskRun<'_>],
) -> CloudDeploys {
    let mut history: Vec<DeployRun> = runs
        .iter()
        .filter_map(|run| {
            let own = || {
                tasks
                    .iter()
                    .filter(|t| t.pipeline_run() == Some(run.name()))
                    .copied()
            };
            if !is_deploy_run(run, own()) {
                return None;
            }
            Some(deploy_run(run, &own().collect::<Vec<_>>()))
        })
        .collect();
    history.sort_by(|a, b| {
        b.started_at
            .cmp(&a.started_at)
            .then_with(|| b.run.cmp(&a.run))
    });

    let seen_target = history.iter().find_map(|r| r.target);
    let target = declared.or(seen_target);
    let Some(target) = target else {
        return CloudDeploys {
            service: service.to_owned(),
            capability: Capability::K8sRuntime,
            target: None,
            resource: None,
            region: None,
            console_url: None,
            last_success: None,
            in_progress: None,
            latest_failure: None,
            history: Vec::new(),
        };
    };

    let place = history
        .iter()
        .filter(|r| r.target.is_none_or(|t| t == target))
        .find_map(|r| r.place.clone());
    let Standing {
        last_success,
        in_progress,
        latest_failure,
    } = standing(&history);
    let (last_success, in_progress, latest_failure) = (
        last_success.cloned(),
        in_progress.cloned(),
        latest_failure.cloned(),
    );
    let (resource, region, cluster) =
        place.map_or((None, None, None), |p| (p.resource, p.region, p.cluster));
    CloudDeploys {
        service: service.to_owned(),
        capability: Capability::CloudRuntime,
        target: Some(target),
        console_url: console_url(
            target,
            resource.as_deref(),
            region.as_deref(),
            cluster.as_deref(),
        ),
        resource,
        region,
        last_success,
        in_progress,
        latest_failure,
        history,
    }
}

/// Where a service's deploys stand, from its deploy runs newest first.
#[derive(Debug)]
pub struct Standing<'a> {
    pub last_success: Option<&'a DeployRun>,
    pub in_progress: Option<&'a DeployRun>,
    /// The newest failure that no newer success has fixed.
    pub latest_failure: Option<&'a DeployRun>,
}

/// Where the deploys of `runs` (newest first) stand.
pub fn standing<'a>(runs: impl IntoIterator<Item = &'a DeployRun> + Clone) -> Standing<'a> {
    let find = |status| runs.clone().into_iter().find(|r| r.status == status);
    Standing {
        last_success: find(RunStatus::Succeeded),
        in_progress: find(RunStatus::Running),
        // Newest first, so any failure before the first success is unfixed.
        latest_failure: runs
            .clone()
            .into_iter()
            .take_while(|r| r.status != RunStatus::Succeeded)
            .find(|r| r.status == RunStatus::Failed),
    }
}

fn is_deploy_run<'a>(run: &PipelineRun<'a>, mut tasks: impl Iterator<Item = TaskRun<'a>>) -> bool {
    let named_task = |name: &str| name == RESOLVE_TARGET_TASK || is_cloud_task(name);
    run.pipeline() == Some("deploy")
        || run.task_names().any(named_task)
        || tasks.any(|t| t.pipeline_task().is_some_and(named_task))
}

/// The image a deploy run deploys: its `resolve-image-ref` task's `image-ref` result.
pub fn deployed_image<'a>(tasks: &[TaskRun<'a>]) -> Option<&'a str> {
    tasks
        .iter()
        .find(|t| t.pipeline_task() == Some(RESOLVE_IMAGE_TASK))
        .and_then(|t| t.result("image-ref"))
}

fn deploy_run(run: &PipelineRun<'_>, tasks: &[TaskRun<'_>]) -> DeployRun {
    let task = |name: &str| tasks.iter().find(|t| t.pipeline_task() == Some(name));
    let resolve = task(RESOLVE_TARGET_TASK);
    let cloud_task = tasks
        .iter()
        .find(|t| t.pipeline_task().is_some_and(is_cloud_task));
    let cloud_task_in_spec = run.task_names().find(|n| is_cloud_task(n));
    let target = resolve
        .and_then(|r| r.result("target"))
        .and_then(CloudTarget::from_id)
        .or_else(|| {
            cloud_task
                .and_then(|t| t.pipeline_task())
                .and_then(CloudTarget::from_task)
        })
        .or_else(|| cloud_task_in_spec.and_then(CloudTarget::from_task));
    let place = match (target, resolve.and_then(|r| r.result("config-json"))) {
        (Some(target), Some(json)) => read_place(target, json),
        _ => None,
    };
    let image = deployed_image(tasks).map(str::to_owned);
    let status = run.status();
    let (failed_task, message) = if status == RunStatus::Failed {
        let failed: Vec<&TaskRun<'_>> = tasks
            .iter()
            .filter(|t| t.status() == RunStatus::Failed)
            .collect();
        let first = failed
            .iter()
            .find(|t| t.pipeline_task().is_some_and(is_cloud_task))
            .or_else(|| failed.iter().min_by_key(|t| (t.completed_at(), t.name())));
        match first {
            Some(t) => (
                t.pipeline_task().map(str::to_owned),
                t.message().or_else(|| run.message()).map(str::to_owned),
            ),
            None => (None, run.message().map(str::to_owned)),
        }
    } else {
        (None, None)
    };
    DeployRun {
        run: run.name().to_owned(),
        status,
        environment: cloud_task.and_then(|t| t.param("env")).map(str::to_owned),
        commit: image
            .as_deref()
            .and_then(crate::image::commit)
            .map(str::to_owned),
        image,
        started_at: run.started_at(),
        finished_at: run.completed_at(),
        failed_task,
        message,
        target,
        place,
    }
}

/// Reads `deploy.<target>` from the `config-json` result; malformed JSON is unknown.
fn read_place(target: CloudTarget, json: &str) -> Option<Place> {
    let config: Value = serde_json::from_str(json).ok()?;
    let section = config.get("deploy")?.get(target.config_key())?;
    let first = |keys: &[&str]| {
        keys.iter()
            .find_map(|k| str_at(section, &[k]))
            .filter(|s| !s.is_empty())
            .map(str::to_owned)
    };
    let resource = match target {
        CloudTarget::AwsEcs => first(&["service", "serviceName", "name"]),
        CloudTarget::AwsLambda => first(&["functionName", "function", "name"]),
        CloudTarget::AzureContainerApps => first(&["name", "containerApp", "appName"]),
    };
    Some(Place {
        resource,
        region: first(&["region", "location"]),
        cluster: first(&["cluster", "clusterName"]),
    })
}

/// The console page of the deployed resource: the region only when shaped like an AWS
/// region (it is part of the host name), the cluster and resource encoded as path segments
/// (all three come from the deploy run's config, which the app's team writes). Azure's portal needs a subscription id Tower
/// does not have, so Azure opens the Container Apps list.
pub fn console_url(
    target: CloudTarget,
    resource: Option<&str>,
    region: Option<&str>,
    cluster: Option<&str>,
) -> Option<String> {
    match target {
        CloudTarget::AwsEcs => {
            let region = links::aws_region(region?)?;
            let base = format!("https://{region}.console.aws.amazon.com/ecs/v2");
            Some(
                match (cluster.map(links::segment), resource.map(links::segment)) {
                    (Some(cluster), Some(service)) => {
                        format!(
                            "{base}/clusters/{cluster}/services/{service}/health?region={region}"
                        )
                    }
                    (Some(cluster), None) => {
                        format!("{base}/clusters/{cluster}/services?region={region}")
                    }
                    _ => format!("{base}/clusters?region={region}"),
                },
            )
        }
        CloudTarget::AwsLambda => {
            let region = links::aws_region(region?)?;
            let base =
                format!("https://{region}.console.aws.amazon.com/lambda/home?region={region}");
            Some(match resource.map(links::segment) {
                Some(function) => format!("{base}#/functions/{function}"),
                None => format!("{base}#/functions"),
            })
        }
        CloudTarget::AzureContainerApps => {
            Some("https://portal.azure.com/#browse/Microsoft.App%2FcontainerApps".to_owned())
        }
    }
}

/// What the cloud tab cannot know, said plainly.
pub const BLIND_SPOTS: &str = "Tower reads no cloud API: it cannot see whether the service is \
healthy, how many tasks or instances are running, or a revision's status. A deploy that \
succeeded means the update was accepted and the wait finished, not that the service is serving.";

/// The note that goes with an unfixed failure.
pub const FAILURE_NOTE: &str =
    "Nothing newer has fixed this; the cloud may still be running the previous image.";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn console_links_need_a_region_for_aws_only() {
        assert_eq!(
            console_url(CloudTarget::AwsEcs, Some("shop"), None, Some("c")),
            None
        );
        assert_eq!(
            console_url(CloudTarget::AwsLambda, Some("fn"), Some("eu-west-1"), None).as_deref(),
            Some("https://eu-west-1.console.aws.amazon.com/lambda/home?region=eu-west-1#/functions/fn")
        );
        assert!(
            console_url(CloudTarget::AzureContainerApps, None, None, None)
                .unwrap()
                .contains("containerApps")
        );
    }

    #[test]
    fn console_links_stay_on_the_console_whatever_the_run_says() {
        assert_eq!(
            console_url(
                CloudTarget::AwsEcs,
                Some("s"),
                Some("evil.example/x#"),
                Some("c")
            ),
            None
        );
        assert_eq!(
            console_url(CloudTarget::AwsLambda, None, Some("evil.example?"), None),
            None
        );
        assert_eq!(
            console_url(CloudTarget::AwsEcs, Some("a/../../b?x#y"), Some("us-east-1"), Some("c/d"))
                .as_deref(),
            Some("https://us-east-1.console.aws.amazon.com/ecs/v2/clusters/c%2Fd/services/a%2F..%2F..%2Fb%3Fx%23y/health?region=us-east-1")
        );
        assert_eq!(
            console_url(CloudTarget::AwsLambda, Some("f#x"), Some("eu-west-1"), None).as_deref(),
            Some("https://eu-west-1.console.aws.amazon.com/lambda/home?region=eu-west-1#/functions/f%23x")
        );
    }

    #[test]
    fn malformed_config_json_is_unknown() {
        assert_eq!(read_place(CloudTarget::AwsEcs, "{not json"), None);
        assert_eq!(read_place(CloudTarget::AwsEcs, r#"{"deploy": {}}"#), None);
        let place = read_place(
            CloudTarget::AwsEcs,
            r#"{"deploy": {"ecs": {"cluster": "apps", "service": "shop", "region": "eu-west-1"}}}"#,
        )
        .unwrap();
        assert_eq!(place.resource.as_deref(), Some("shop"));
        assert_eq!(place.cluster.as_deref(), Some("apps"));
    }
}
