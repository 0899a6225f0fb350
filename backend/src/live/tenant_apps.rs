//! The tenants' Argo CD instance (`argocd-apps`, the `argocd` section of `tower.yaml`), read
//! through its API as `../shared/spec/provisioning.md` says (docs/permissions.md says why):
//! the `<name>-dev` Application of every InfraService still provisioning, asked every
//! [`ASK_EVERY`]. What it answers is filed with the control plane's objects (in its own
//! namespace), so provisioning's "First environment up" reads it as it reads a watched one.
//! A 404 is "none yet"; when Argo CD does not answer, the last answer stands.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use tower_shared::api::{Change, ChangeSource};
use tower_shared::hangar::{self, ServiceKind};
use tower_shared::kube::Object;

use super::Live;
use crate::config::HttpService;

/// How often (real time) the InfraServices' Applications are asked for.
pub const ASK_EVERY: Duration = Duration::from_secs(10);

/// What the tenants' instance last answered, by Application name.
pub(super) type TenantApps = BTreeMap<String, Arc<Object>>;

impl Live {
    pub(super) async fn poll_tenant_apps(self, argocd: HttpService) {
        let http = crate::outbound::http_client();
        let mut ticker = tokio::time::interval(ASK_EVERY);
        loop {
            ticker.tick().await;
            let infra: Vec<Arc<str>> = self
                .derived()
                .provisioning
                .services
                .iter()
                .filter(|s| s.kind == Some(ServiceKind::InfraService))
                .map(|s| Arc::clone(&s.name))
                .collect();
            for service in infra {
                let name = hangar::env_application(&service, "dev");
                let Some(answer) = ask(&http, &argocd, &name).await else {
                    continue;
                };
                let changed = {
                    let mut remote = self.remote();
                    let before = remote.tenant_apps.get(&name);
                    if before == answer.as_ref() {
                        false
                    } else {
                        match answer {
                            Some(app) => remote.tenant_apps.insert(name, app),
                            None => remote.tenant_apps.remove(&name),
                        };
                        true
                    }
                };
                if changed {
                    self.note(Change::of(
                        ChangeSource::Kubernetes,
                        Some(service.to_string()),
                    ));
                }
            }
        }
    }
}

/// Argo CD's Application `name`: `Some(None)` when it has none of that name, `None` when it
/// did not answer (or answered what is not an Application).
async fn ask(
    http: &reqwest::Client,
    argocd: &HttpService,
    name: &str,
) -> Option<Option<Arc<Object>>> {
    let url = format!(
        "{}/api/v1/applications/{name}",
        argocd.url.trim_end_matches('/')
    );
    let mut request = http.get(url).timeout(Duration::from_secs(5));
    if let Some(token) = &argocd.token {
        request = request.bearer_auth(token.expose());
    }
    let response = request
        .send()
        .await
        .map_err(|err| tracing::debug!(error = %err.without_url(), "Argo CD did not answer"))
        .ok()?;
    match response.status() {
        reqwest::StatusCode::NOT_FOUND => Some(None),
        status if status.is_success() => {
            let mut app: Value = response.json().await.ok()?;
            // Argo CD's API leaves out the type Kubernetes would write.
            app["apiVersion"] = "argoproj.io/v1alpha1".into();
            app["kind"] = "Application".into();
            let object = Object::from_value(app)?;
            Some(Some(Arc::new(tower_shared::trim::object(object))))
        }
        status => {
            tracing::debug!(%status, application = name, "Argo CD refused");
            None
        }
    }
}

/// What the deriver filed of the tenants' answers: each Application as answered and as
/// filed.
pub(super) type Filed = BTreeMap<String, (Arc<Object>, Arc<crate::filed::Stored>)>;

/// Files the tenants' Applications as they now stand (`now`) into `filing`, on the control
/// plane, as moves from what was filed before (`filed`, brought up to date).
pub(super) fn file(
    filing: &mut crate::filed::Filing,
    control_plane: &str,
    now: &TenantApps,
    filed: &mut Filed,
) {
    filed.retain(|name, (_, stored)| {
        let keep = now.contains_key(name);
        if !keep {
            filing.moved(control_plane, Some(stored), None);
        }
        keep
    });
    for (name, app) in now {
        match filed.get(name) {
            Some((was, _)) if was == app => {}
            before => {
                let stored = Arc::new(crate::filed::Stored::of(app));
                filing.moved(control_plane, before.map(|(_, s)| s), Some(&stored));
                filed.insert(name.clone(), (Arc::clone(app), stored));
            }
        }
    }
}
