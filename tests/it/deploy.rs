//! `deploy/`: the Kustomize base and its production overlay, rendered with `kubectl kustomize`
//! as a platform team would, and read back: read-only RBAC that is exactly `rbac.yaml`
//! (itself checked against the watched kinds by `tidy`), probes on `/healthz` and `/readyz`,
//! a locked-down container, credentials only by Secret reference, and a `tower.yaml` that
//! Tower's own config reader takes.

use serde::Deserialize as _;
use serde_json::Value;

use crate::support::root;

/// The objects `kubectl kustomize deploy/<dir>` renders.
fn rendered(dir: &str) -> Vec<Value> {
    let text = crate::support::stdout_of(
        std::process::Command::new(crate::simulator::kubectl_path())
            .arg("kustomize")
            .arg(root().join("deploy").join(dir)),
    );
    serde_yaml_ng::Deserializer::from_str(&text)
        .map(|doc| Value::deserialize(doc).unwrap())
        .collect()
}

fn one<'a>(objects: &'a [Value], kind: &str) -> &'a Value {
    let found: Vec<&Value> = objects.iter().filter(|o| o["kind"] == kind).collect();
    assert_eq!(found.len(), 1, "one {kind}");
    found[0]
}

/// The objects as YAML again (for the roles' check).
fn yaml_of(objects: &[Value]) -> String {
    objects
        .iter()
        .map(|o| serde_yaml_ng::to_string(o).unwrap())
        .collect::<Vec<_>>()
        .join("---\n")
}

#[test]
fn the_manifests_render_read_only_locked_down_and_probed() {
    let base = rendered("base");
    let rbac = std::fs::read_to_string(root().join("deploy/base/rbac.yaml")).unwrap();
    assert_eq!(
        crate::tidy::grants_in(&yaml_of(&base)),
        crate::tidy::grants_in(&rbac),
        "the rendered roles grant what rbac.yaml grants"
    );
    let kinds: std::collections::BTreeSet<&str> =
        base.iter().filter_map(|o| o["kind"].as_str()).collect();
    for kind in [
        "Namespace",
        "ServiceAccount",
        "ClusterRole",
        "ClusterRoleBinding",
        "Role",
        "RoleBinding",
        "Deployment",
        "Service",
        "NetworkPolicy",
        "ConfigMap",
    ] {
        assert!(kinds.contains(kind), "deploy/base renders a {kind}");
    }
    assert!(
        !kinds.contains("Secret"),
        "credentials are referenced, never shipped"
    );

    // Bindings name Tower's ServiceAccount, in Tower's namespace.
    let account = one(&base, "ServiceAccount");
    for binding in base
        .iter()
        .filter(|o| o["kind"].as_str().is_some_and(|k| k.ends_with("Binding")))
    {
        assert_eq!(binding["subjects"][0]["name"], account["metadata"]["name"]);
        assert_eq!(
            binding["subjects"][0]["namespace"],
            account["metadata"]["namespace"]
        );
    }

    let deployment = one(&base, "Deployment");
    assert_eq!(deployment["spec"]["replicas"], 2);
    let pod = &deployment["spec"]["template"]["spec"];
    assert_eq!(pod["serviceAccountName"], account["metadata"]["name"]);
    assert_eq!(pod["securityContext"]["runAsNonRoot"], true);
    let container = &pod["containers"][0];
    assert_eq!(container["livenessProbe"]["httpGet"]["path"], "/healthz");
    assert_eq!(container["readinessProbe"]["httpGet"]["path"], "/readyz");
    let locked = &container["securityContext"];
    assert_eq!(locked["readOnlyRootFilesystem"], true);
    assert_eq!(locked["allowPrivilegeEscalation"], false);
    assert_eq!(locked["capabilities"]["drop"], serde_json::json!(["ALL"]));
    assert!(container["resources"]["requests"].is_object());
    // Every credential comes from a Secret, none is written out.
    for var in container["env"].as_array().unwrap() {
        let name = var["name"].as_str().unwrap();
        if name.ends_with("TOKEN") || name == "DATABASE_URL" {
            assert!(var["value"].is_null(), "{name} is written in the manifest");
            assert!(
                var["valueFrom"]["secretKeyRef"]["name"].is_string(),
                "{name}"
            );
        }
    }
    // The Service and the policy reach the pods the Deployment makes.
    let labels = &deployment["spec"]["template"]["metadata"]["labels"];
    let service = one(&base, "Service");
    for (key, value) in service["spec"]["selector"].as_object().unwrap() {
        assert_eq!(&labels[key], value, "the Service selects Tower's pods");
    }
    assert!(!service["spec"]["selector"].as_object().unwrap().is_empty());
    let policy = one(&base, "NetworkPolicy");
    assert_eq!(
        policy["spec"]["podSelector"]["matchLabels"]["app.kubernetes.io/name"],
        "tower"
    );

    // The ConfigMap's tower.yaml is one Tower reads (with the Secrets' variables set).
    let config = one(&base, "ConfigMap");
    let text = config["data"]["tower.yaml"].as_str().unwrap();
    let env = |name: &str| {
        [
            "TOWER_GITHUB_TOKEN",
            "TOWER_ARGOCD_TOKEN",
            "TOWER_BACKSTAGE_TOKEN",
        ]
        .contains(&name)
        .then(|| "from-a-secret".to_owned())
        .or_else(|| (name == "DATABASE_URL").then(|| "postgres://tower@db/tower".to_owned()))
    };
    let parsed = tower_backend::config::Config::parse(text, "deploy/base/tower.yaml", env)
        .expect("Tower takes the shipped tower.yaml");
    assert_eq!(parsed.clusters.len(), 2);

    // The overlay changes what a platform changes, and nothing of the RBAC.
    let production = rendered("overlays/production");
    assert_eq!(one(&production, "Deployment")["spec"]["replicas"], 3);
    assert_eq!(
        crate::tidy::grants_in(&yaml_of(&production)),
        crate::tidy::grants_in(&rbac)
    );
}
