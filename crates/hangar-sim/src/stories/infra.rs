//! An InfraService (a shared component such as a broker): no source repo, no build, no
//! Rollout. Its first environment exists once a person adds `glidepath/envs/dev.yaml`, after
//! which Glidepath's ApplicationSet makes the `<name>-dev` Argo CD Application.

use chrono::{DateTime, Duration, Utc};
use serde_json::{json, Value};

use super::objects::{self, condition};
use super::{CatalogEntity, PullRequest, Story};

/// One InfraService's story.
#[derive(Clone, Debug)]
pub struct InfraStory {
    pub name: String,
    /// When the XR is created.
    pub created: DateTime<Utc>,
    /// Seconds after creation at which the environment file is added; `None`: never.
    pub environment_added: Option<i64>,
}

impl InfraStory {
    fn at(&self, seconds: i64) -> DateTime<Utc> {
        self.created + Duration::seconds(seconds)
    }
}

impl Story for InfraStory {
    fn catalog_at(&self, now: DateTime<Utc>) -> Vec<CatalogEntity> {
        // The scaffold writes catalog-info.yaml 80 s in.
        let readable_since = self.at(80);
        if now < readable_since {
            return Vec::new();
        }
        vec![CatalogEntity {
            entity: super::component(&self.name, "infraservice", "group:default/platform"),
            readable_since,
        }]
    }

    fn files_at(&self, now: DateTime<Utc>) -> Vec<super::RepoFile> {
        let elapsed = (now - self.created).num_seconds();
        if elapsed < 80 {
            return Vec::new();
        }
        let has_env = self.environment_added.is_some_and(|at| elapsed >= at);
        let environments = if has_env {
            "\n    - name: dev\n      type: ground\n"
        } else {
            " []\n"
        };
        vec![super::RepoFile {
            repo: format!("acme/gitops-infra-{}", self.name),
            path: "glidepath/cicd.yaml".to_owned(),
            content: format!("deploy:\n  environments:{environments}"),
        }]
    }

    fn pull_requests_at(&self, now: DateTime<Utc>) -> Vec<PullRequest> {
        let elapsed = (now - self.created).num_seconds();
        if elapsed < -600 {
            return Vec::new();
        }
        let merged = (elapsed >= -180).then(|| self.at(-180));
        vec![PullRequest {
            repo: "acme/hangar-tenants".to_owned(),
            number: 300 + self.name.bytes().map(u64::from).sum::<u64>() % 100,
            title: format!("Create InfraService Resource {}", self.name),
            body: String::new(),
            user: "dana".to_owned(),
            head_ref: format!("hangar/{}", self.name),
            base_ref: "main".to_owned(),
            created_at: self.at(-600),
            merged_at: merged,
            closed_at: merged,
            ..PullRequest::default()
        }]
    }

    fn objects_at(&self, now: DateTime<Utc>) -> Vec<(String, Value)> {
        let elapsed = (now - self.created).num_seconds();
        if elapsed < 0 {
            return Vec::new();
        }
        let name = self.name.as_str();
        let cicd_ns = format!("infra-{name}-cicd");
        let synced = self.at(5);
        let ready = elapsed >= 90;
        // The scaffold file leaves resourceRefs once written (status.scaffold.done).
        let scaffolded = elapsed >= 80;
        let mut refs = vec![
            json!({"apiVersion": "repo.github.m.upbound.io/v1alpha1", "kind": "Repository",
                                   "name": format!("{name}-gitops-infra")}),
        ];
        if !scaffolded {
            refs.push(
                json!({"apiVersion": "repo.github.m.upbound.io/v1alpha1", "kind": "RepositoryFile",
                             "name": format!("{name}-cicd-yaml")}),
            );
        }
        let mut out = vec![
            json!({"apiVersion": "catalog.hangar.io/v1alpha1", "kind": "InfraService",
                "metadata": {"name": name, "namespace": "tenants", "creationTimestamp": objects::ts(self.created),
                             "labels": {"crossplane.io/composite": name}},
                "spec": {"owner": "team-platform", "crossplane": {"resourceRefs": refs}},
                "status": {"scaffold": {"done": scaffolded}, "conditions": [
                    condition("Synced", true, "ReconcileSuccess", synced, None),
                    condition("Ready", ready, if ready { "Available" } else { "Creating" }, if ready { self.at(90) } else { synced }, None),
                    condition("DevClusterReady", elapsed >= 20, if elapsed >= 20 { "Available" } else { "Selecting" }, self.at(20.min(elapsed)), None),
                    condition("CicdOnboarded", elapsed >= 120, if elapsed >= 120 { "Available" } else { "WaitingForRepo" },
                              self.at(120.min(elapsed)), None)]}}),
            objects::repository(
                name,
                &format!("{name}-gitops-infra"),
                &format!("gitops-infra-{name}"),
                (elapsed >= 60).then(|| self.at(60)),
                synced,
                None,
            ),
            objects::repository_file(
                name,
                &format!("{name}-cicd-yaml"),
                &format!("gitops-infra-{name}"),
                "glidepath/cicd.yaml",
                scaffolded.then(|| self.at(80)),
                synced,
            ),
        ];
        if elapsed >= 60 {
            let healthy = elapsed >= 120;
            out.push(objects::application(
                &format!("{name}-cicd"),
                "argocd",
                if healthy { "Synced" } else { "OutOfSync" },
                if healthy { "Healthy" } else { "Progressing" },
                self.at(if healthy { 120 } else { 60 }),
                "https://github.com/acme/gitops-platform",
            ));
        }
        if elapsed >= 140 {
            let ready = elapsed >= 170;
            let at = self.at(if ready { 170 } else { 140 });
            out.push(objects::namespace(&cicd_ns));
            out.push(json!({"apiVersion": "secrets.hangar.io/v1alpha1", "kind": "SecretStore",
                "metadata": {"name": format!("{name}-secrets"), "namespace": cicd_ns},
                "spec": {"appRef": {"name": name}, "environments": ["dev"]},
                "status": {"conditions": [condition("Synced", true, "ReconcileSuccess", at, None),
                                          condition("Ready", ready, if ready { "Available" } else { "Creating" }, at, None)]}}));
        }
        if let Some(added) = self
            .environment_added
            .filter(|added| elapsed >= *added + 60)
        {
            let healthy = elapsed >= added + 240;
            out.push(objects::application(
                &format!("{name}-dev"),
                "argocd-apps",
                "Synced",
                if healthy { "Healthy" } else { "Progressing" },
                self.at(if healthy { added + 240 } else { added + 60 }),
                &format!("https://github.com/acme/gitops-infra-{name}"),
            ));
        }
        out.into_iter().map(|o| ("dev".to_owned(), o)).collect()
    }
}
