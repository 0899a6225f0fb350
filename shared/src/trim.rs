//! What Tower keeps of an object: only what derivations read, and never what may carry
//! secrets or tenants' configuration to every signed-in user.

use serde_json::Value;

use crate::kube::Object;
use crate::tekton::task_references;

/// The annotation `kubectl apply` leaves: the whole last-applied object, env and all.
const LAST_APPLIED: &str = "kubectl.kubernetes.io/last-applied-configuration";

/// Tekton params a derivation reads (`Task::param`); other params' values are dropped, since
/// pipelines pass tokens and URLs with credentials as params.
pub const READ_TEKTON_PARAMS: &[&str] = &["env", "revision", "git-revision"];

/// The object as Tower keeps it: without what no derivation reads and what may carry
/// secrets or tenants' configuration to every signed-in user — containers' `env`,
/// `envFrom`, `args` and `command` (only their `name` and `image` stay), pod volumes,
/// Helm `values`/`valuesObject`/`parameters`/`fileParameters` and plugin `env` of Argo
/// CD sources, Tekton inline task specs and scripts and the values of params no
/// derivation reads, a `RepositoryFile`'s content, the last-applied annotation and Tekton
/// Chains' certificate annotations.
/// Deriving from a trimmed object gives what deriving from the whole one gives
/// (`tests/it/provisioning.rs` checks every fixture).
#[must_use]
pub fn object(mut object: Object) -> Object {
    object.metadata.annotations.remove(LAST_APPLIED);
    // Chains' keyless certificates and chains: large, and read by no derivation.
    object.metadata.annotations.retain(|key, _| {
        !key.starts_with("chains.tekton.dev/cert-") && !key.starts_with("chains.tekton.dev/chain-")
    });
    scrub(&mut object.spec, None);
    scrub(&mut object.status, None);
    if object.group() == "tekton.dev" {
        if let Some(params) = object.spec.get_mut("params").and_then(Value::as_array_mut) {
            params.retain(|p| {
                p.get("name")
                    .and_then(Value::as_str)
                    .is_some_and(|name| READ_TEKTON_PARAMS.contains(&name))
            });
        }
    }
    object
}

/// Removes, at any depth, the fields [`object`] names; `parent` is the key the
/// value sits under.
fn scrub(value: &mut Value, parent: Option<&str>) {
    match value {
        Value::Object(map) => {
            const ANYWHERE: [&str; 7] = [
                "env", "envFrom", "args", "command", "script", "taskSpec", "volumes",
            ];
            map.retain(|key, _| !ANYWHERE.contains(&key.as_str()));
            match parent {
                Some("helm") => {
                    for key in ["values", "valuesObject", "parameters", "fileParameters"] {
                        map.remove(key);
                    }
                }
                Some("plugin") => {
                    map.remove("parameters");
                }
                Some("forProvider" | "atProvider") => {
                    map.remove("content");
                }
                // A pipeline's tasks: their params' values come from the run's params; only
                // the other tasks they refer to stay (the run's graph draws them).
                Some("tasks" | "finally") => {
                    if let Some(params) = map.remove("params") {
                        let refs: Vec<Value> = task_references(&params)
                            .into_iter()
                            .map(|t| Value::String(format!("$(tasks.{t}.results)")))
                            .collect();
                        if !refs.is_empty() {
                            map.insert("params".to_owned(), Value::Array(refs));
                        }
                    }
                }
                Some("containers" | "initContainers" | "ephemeralContainers") => {
                    map.retain(|key, _| key == "name" || key == "image");
                }
                _ => {}
            }
            for (key, child) in map.iter_mut() {
                scrub(child, Some(key));
            }
        }
        // An array's items sit under the array's key (`containers: [{…}]`).
        Value::Array(items) => {
            for item in items {
                scrub(item, parent);
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn trimmed_value(value: Value) -> Option<Object> {
        Object::from_value(value).map(object)
    }

    #[test]
    fn trimming_keeps_what_derivations_read_and_drops_what_may_be_secret() {
        let rollout = trimmed_value(serde_json::json!({
            "apiVersion": "argoproj.io/v1alpha1", "kind": "Rollout",
            "metadata": {"name": "shop", "namespace": "app-shop-prod", "annotations": {
                "kubectl.kubernetes.io/last-applied-configuration": "{\"env\": \"secret\"}",
                "hangar.io/deploy-target": "kubernetes"}},
            "spec": {"replicas": 3, "strategy": {"canary": {"steps": [{"setWeight": 20}]}},
                     "template": {"spec": {
                        "containers": [{"name": "app", "image": "ghcr.io/acme/shop:1.2.3",
                                        "env": [{"name": "DB", "value": "postgres://u:secret@db"}],
                                        "args": ["--token=secret"], "command": ["run"], "ports": [{"containerPort": 80}]}],
                        "initContainers": [{"name": "migrate", "image": "m:1", "envFrom": [{"secretRef": {"name": "s"}}]}],
                        "volumes": [{"name": "v", "secret": {"secretName": "s"}}]}}},
            "status": {"phase": "Paused", "canary": {"weights": {"canary": {"weight": 20}}}}
        }))
        .unwrap();
        let text = serde_json::to_string(&rollout).unwrap();
        assert!(!text.contains("secret"), "{text}");
        assert_eq!(
            rollout.spec["template"]["spec"]["containers"],
            serde_json::json!([{"name": "app", "image": "ghcr.io/acme/shop:1.2.3"}])
        );
        assert_eq!(rollout.spec["replicas"], 3);
        assert_eq!(rollout.status["canary"]["weights"]["canary"]["weight"], 20);
        assert_eq!(
            rollout.annotation("hangar.io/deploy-target"),
            Some("kubernetes")
        );

        let application = trimmed_value(serde_json::json!({
            "apiVersion": "argoproj.io/v1alpha1", "kind": "Application",
            "metadata": {"name": "shop-prod", "namespace": "argocd"},
            "spec": {"source": {"repoURL": "https://github.com/acme/gitops-shop", "path": ".",
                                "helm": {"valueFiles": ["values.yaml"], "values": "password: secret",
                                         "valuesObject": {"password": "secret"}, "parameters": [{"name": "p", "value": "secret"}]},
                                "plugin": {"name": "p", "env": [{"name": "T", "value": "secret"}], "parameters": [{"string": "secret"}]}},
                     "destination": {"namespace": "app-shop-prod"}},
            "status": {"sync": {"status": "Synced", "comparedTo": {"source": {"helm": {"values": "password: secret"}}}},
                       "health": {"status": "Healthy"}}
        }))
        .unwrap();
        let text = serde_json::to_string(&application).unwrap();
        assert!(!text.contains("secret"), "{text}");
        assert_eq!(
            application.spec["source"]["helm"]["valueFiles"][0],
            "values.yaml"
        );
        assert_eq!(application.status["sync"]["status"], "Synced");

        let run = trimmed_value(serde_json::json!({
            "apiVersion": "tekton.dev/v1", "kind": "TaskRun",
            "metadata": {"name": "deploy", "namespace": "app-shop-cicd"},
            "spec": {"params": [{"name": "env", "value": "prod"}, {"name": "registry-token", "value": "secret"}],
                     "taskSpec": {"steps": [{"name": "s", "script": "echo secret"}]}},
            "status": {"results": [{"name": "image-ref", "value": "ghcr.io/acme/shop@sha256:1"}],
                       "taskSpec": {"steps": [{"script": "echo secret"}]},
                       "pipelineSpec": {"tasks": [{"name": "build", "params": [{"name": "t", "value": "secret"}]}]}}
        }))
        .unwrap();
        let text = serde_json::to_string(&run).unwrap();
        assert!(!text.contains("secret"), "{text}");
        assert_eq!(
            run.spec["params"],
            serde_json::json!([{"name": "env", "value": "prod"}])
        );
        assert_eq!(run.status["results"][0]["name"], "image-ref");
        assert_eq!(run.status["pipelineSpec"]["tasks"][0]["name"], "build");

        let file = trimmed_value(serde_json::json!({
            "apiVersion": "repo.github.m.upbound.io/v1alpha1", "kind": "RepositoryFile",
            "metadata": {"name": "f"},
            "spec": {"forProvider": {"repository": "gitops-shop", "file": "glidepath/cicd.yaml", "content": "token: secret"}}
        }))
        .unwrap();
        assert_eq!(file.spec["forProvider"]["file"], "glidepath/cicd.yaml");
        assert!(file.spec["forProvider"].get("content").is_none());
    }
}
