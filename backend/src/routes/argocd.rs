//! Argo CD's own actions, for one of a service's environments, through Argo CD's API (with
//! Tower's Argo CD credential, Argo CD's RBAC and audit): `POST /api/argocd/sync {service,
//! environment, force}` (sync, and force sync, as the old plugin had), and the Rollout's
//! canary actions — `GET /api/argocd/rollout-actions` (what Argo CD offers on it now, in the
//! buttons' words) and `POST /api/argocd/rollout-action` (run one). Argo CD carries them
//! out; Tower writes nothing to a cluster itself. The same people may ask as may promote
//! ([`crate::access`]); every request is audited (target `tower::audit`).

use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::{Extension, Json};
use serde_json::{json, Value};
use tower_shared::api::{
    ArgoSyncAnswer, ArgoSyncRequest, DeploymentsAnswer, RolloutActionAnswer, RolloutActionRequest,
    RolloutActionsAnswer,
};
use tower_shared::deployments::RolloutView;
use tower_shared::rollout_actions::{self, OfferedAction};

use super::params::{self, JsonBody, Query, ServiceName};
use super::ApiError;
use crate::access::Act;
use crate::auth::Caller;
use crate::state::AppState;
use crate::tabs::Whole;

use super::{ROLLOUT_ACTION, SYNC_ROUTE};

const SYNC: Act<'static> = Act {
    route: SYNC_ROUTE,
    verb: "sync",
};

/// What Tower reads for `service` in `environment`: the Argo CD Application deploying it
/// (name and namespace) and, when there is one, its Rollout.
struct Target {
    application: String,
    app_namespace: String,
    rollout: Option<RolloutAt>,
}

/// A Rollout: where it is, as Tower reads it, and the state its actions are offered for.
struct RolloutAt {
    namespace: String,
    view: RolloutView,
    seen: String,
}

impl RolloutAt {
    /// The query naming it among its Application's resources.
    fn query(&self, target: &Target) -> Vec<(&'static str, String)> {
        vec![
            ("appNamespace", target.app_namespace.clone()),
            ("namespace", self.namespace.clone()),
            ("resourceName", self.view.name.clone()),
            ("version", "v1alpha1".to_owned()),
            ("group", "argoproj.io".to_owned()),
            ("kind", "Rollout".to_owned()),
        ]
    }
}

fn target(state: &AppState, service: &str, environment: &str) -> Result<Target, ApiError> {
    let derived = state.source.derived();
    let deployments = state
        .source
        .tabs()
        .answer::<Whole<DeploymentsAnswer>>(&derived, service)
        .ok_or_else(|| ApiError::no_service("service", service))?;
    let snapshot = derived.service(service);
    let missing = || ApiError::Unknown {
        field: "environment",
        message: format!("Tower sees no Argo CD Application of {service} in {environment}"),
    };
    let env = deployments
        .deployments
        .environments
        .iter()
        .flatten()
        .find(|e| e.name == environment)
        .ok_or_else(missing)?;
    let application = env
        .argo
        .as_ref()
        .map(|a| a.name.clone())
        .ok_or_else(missing)?;
    let app_namespace = snapshot
        .clusters
        .values()
        .flatten()
        .find(|o| o.kind == "Application" && o.name() == application)
        .and_then(|o| o.namespace())
        .unwrap_or("argocd")
        .to_owned();
    let rollout = env.rollout.clone().map(|view| {
        let seen = snapshot
            .clusters
            .get(&env.cluster)
            .into_iter()
            .flatten()
            .find(|o| {
                o.kind == "Rollout"
                    && o.name() == view.name
                    && o.namespace() == Some(env.namespace.as_str())
            })
            .map(|o| rollout_actions::seen(o))
            .unwrap_or_default();
        RolloutAt {
            namespace: env.namespace.clone(),
            view,
            seen,
        }
    });
    Ok(Target {
        application,
        app_namespace,
        rollout,
    })
}

/// One call to Argo CD's API (`path` under `/api/v1/applications/{application}`): its
/// status and JSON body; an unreachable Argo CD is a 502.
async fn argo(
    state: &AppState,
    method: reqwest::Method,
    url_path: &str,
    query: &[(&'static str, String)],
    body: Option<Value>,
) -> Result<(StatusCode, Value), ApiError> {
    let argocd = state
        .argocd
        .as_deref()
        .ok_or_else(|| ApiError::unavailable("Tower has no Argo CD configured (`argocd`)"))?;
    let url = format!(
        "{}/api/v1/applications/{url_path}",
        argocd.url.trim_end_matches('/')
    );
    let mut call = state.http.request(method, url).query(query);
    if let Some(body) = body {
        call = call.json(&body);
    }
    if let Some(token) = &argocd.token {
        call = call.bearer_auth(token.expose());
    }
    let response = call.send().await.map_err(|err| ApiError::Upstream {
        message: format!("Argo CD could not be reached: {}", err.without_url()),
    })?;
    let status = response.status();
    let said: Value = response.json().await.unwrap_or_default();
    Ok((status, said))
}

/// Argo CD's message in an answer, else the status's reason.
fn message_of(status: StatusCode, said: &Value) -> String {
    said["message"]
        .as_str()
        .unwrap_or_else(|| status.canonical_reason().unwrap_or("no reason given"))
        .to_owned()
}

/// `POST /api/argocd/sync`.
pub async fn sync(
    State(state): State<AppState>,
    caller: Option<Extension<Caller>>,
    headers: HeaderMap,
    JsonBody(body): JsonBody,
) -> Result<Json<ArgoSyncAnswer>, ApiError> {
    let request: ArgoSyncRequest = params::json_body(&body, "the sync")?;
    params::check_dns_label(&request.service, "service")?;
    params::check_dns_label(&request.environment, "environment")?;
    let service = request.service.as_str();
    let target = target(&state, service, &request.environment)?;
    let (name, namespace) = (target.application, target.app_namespace);
    let access =
        crate::access::required(&state, caller.as_deref(), &headers, service, SYNC).await?;
    let strategy = if request.force {
        json!({"hook": {"force": true}})
    } else {
        json!({"hook": {}})
    };
    let outcome = argo(
        &state,
        reqwest::Method::POST,
        &format!("{name}/sync"),
        &[("appNamespace", namespace.clone())],
        Some(
            json!({"name": name, "appNamespace": namespace, "prune": false,
                    "dryRun": false, "strategy": strategy}),
        ),
    )
    .await;
    let verb = if request.force { "force sync" } else { "sync" };
    let answer = match outcome {
        Err(err) => Err(err),
        Ok((status, said)) => {
            let message = message_of(status, &said);
            match status {
                s if s.is_success() => Ok(ArgoSyncAnswer {
                    application: name.clone(),
                    force: request.force,
                    message: format!(
                        "Argo CD is syncing {name} to what Git says ({verb}, asked by {})",
                        access.subject
                    ),
                }),
                StatusCode::BAD_REQUEST if message.contains("in progress") => {
                    Err(ApiError::Conflict {
                        field: "environment",
                        message: format!("Argo CD is busy with {name}: {message}"),
                    })
                }
                StatusCode::NOT_FOUND => Err(ApiError::Unknown {
                    field: "environment",
                    message: format!("Argo CD has no Application {name}: {message}"),
                }),
                _ => Err(ApiError::Upstream {
                    message: format!("Argo CD refused the {verb} of {name}: {status} {message}"),
                }),
            }
        }
    };
    match &answer {
        Ok(_) => tracing::info!(target: "tower::audit", who = %access.subject,
            action = verb, application = %name, namespace = %namespace, "Argo CD sync"),
        Err(err) => tracing::warn!(target: "tower::audit", who = %access.subject,
            action = verb, application = %name, error = %err, "Argo CD sync refused"),
    }
    answer.map(Json)
}

/// What Argo CD offers on `rollout` now: the actions Tower's reading of its state allows
/// ([`rollout_actions::offered`]) that Argo CD's `…/resource/actions` lists enabled.
async fn offered(
    state: &AppState,
    target: &Target,
    rollout: &RolloutAt,
) -> Result<Vec<OfferedAction>, ApiError> {
    let ours = rollout_actions::offered(&rollout.view);
    if ours.is_empty() {
        return Ok(ours);
    }
    let (status, said) = argo(
        state,
        reqwest::Method::GET,
        &format!("{}/resource/actions", target.application),
        &rollout.query(target),
        None,
    )
    .await?;
    if !status.is_success() {
        return Err(ApiError::Upstream {
            message: format!(
                "Argo CD did not list the actions of {}: {status} {}",
                rollout.view.name,
                message_of(status, &said)
            ),
        });
    }
    let enabled = |name: &str| {
        said["actions"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|a| a["name"] == name && a["disabled"].as_bool() != Some(true))
    };
    Ok(ours
        .into_iter()
        .filter(|a| enabled(a.action.as_str()))
        .collect())
}

/// The Rollout of `target`, or why there is none.
fn rollout_of<'t>(
    target: &'t Target,
    service: &str,
    environment: &str,
) -> Result<&'t RolloutAt, ApiError> {
    target.rollout.as_ref().ok_or_else(|| ApiError::Unknown {
        field: "environment",
        message: format!("Tower sees no Rollout of {service} in {environment}"),
    })
}

/// `GET /api/argocd/rollout-actions?service=&environment=`.
pub async fn rollout_actions(
    State(state): State<AppState>,
    caller: Option<Extension<Caller>>,
    ServiceName(service): ServiceName,
    query: Query,
) -> Result<Json<RolloutActionsAnswer>, ApiError> {
    let service = service.as_str();
    let environment = params::dns_label(&query, "environment")?;
    // Asking Argo CD which actions it offers is an upstream read: the caller's budget.
    super::upstream::spend_read(&state, caller.as_ref())?;
    let target = target(&state, service, environment)?;
    let rollout = rollout_of(&target, service, environment)?;
    let actions = offered(&state, &target, rollout).await?;
    Ok(Json(RolloutActionsAnswer {
        application: target.application.clone(),
        rollout: rollout.view.name.clone(),
        seen: rollout.seen.clone(),
        actions,
    }))
}

/// Holds a rollout's place among the actions under way on this replica; gives it back when
/// dropped.
struct Acting {
    state: AppState,
    key: String,
}

impl Acting {
    /// `None` when an action on the same rollout is already under way.
    fn start(state: &AppState, key: String) -> Option<Self> {
        let mut acting = state
            .acting
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        acting.insert(key.clone()).then(|| Self {
            state: state.clone(),
            key,
        })
    }
}

impl Drop for Acting {
    fn drop(&mut self) {
        self.state
            .acting
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .remove(&self.key);
    }
}

/// The longest `seen` Tower hands out, with room to spare.
const SEEN_MAX: usize = 200;

/// `POST /api/argocd/rollout-action {service, environment, action, seen}`: runs the action
/// through Argo CD's `…/resource/actions/v2` — only on the state it was offered for (a
/// rollout that moved on since is refused, 409 `seen`), only when Argo CD lists it enabled
/// now (else 409 `action`), one at a time per rollout (a second press while the first is
/// under way: 409 `action`).
pub async fn rollout_action(
    State(state): State<AppState>,
    caller: Option<Extension<Caller>>,
    headers: HeaderMap,
    JsonBody(body): JsonBody,
) -> Result<Json<RolloutActionAnswer>, ApiError> {
    let request: RolloutActionRequest = params::json_body(&body, "the action")?;
    params::check_dns_label(&request.service, "service")?;
    params::check_dns_label(&request.environment, "environment")?;
    if request.seen.is_empty()
        || request.seen.len() > SEEN_MAX
        || request.seen.contains(char::is_control)
    {
        return Err(ApiError::bad(
            "seen",
            format!("seen must be the rollout's state from GET /api/argocd/rollout-actions (1 to {SEEN_MAX} characters)"),
        ));
    }
    let (service, environment) = (request.service.as_str(), request.environment.as_str());
    let target = target(&state, service, environment)?;
    let rollout = rollout_of(&target, service, environment)?;
    let word = request.action.as_str();
    let verb = format!("{word} the rollout of");
    let asked = Act {
        route: ROLLOUT_ACTION,
        verb: &verb,
    };
    let access =
        crate::access::required(&state, caller.as_deref(), &headers, service, asked).await?;
    let name = &rollout.view.name;
    let answer = act(&state, &target, rollout, &request, &access.subject).await;
    match &answer {
        Ok(_) => tracing::info!(target: "tower::audit", who = %access.subject, action = word,
            application = %target.application, rollout = %name, environment, "Argo CD rollout action"),
        Err(err) => tracing::warn!(target: "tower::audit", who = %access.subject, action = word,
            application = %target.application, rollout = %name, environment, error = %err,
            "Argo CD rollout action refused"),
    }
    answer.map(Json)
}

async fn act(
    state: &AppState,
    target: &Target,
    rollout: &RolloutAt,
    request: &RolloutActionRequest,
    who: &str,
) -> Result<RolloutActionAnswer, ApiError> {
    let (name, environment, word) = (
        &rollout.view.name,
        &request.environment,
        request.action.as_str(),
    );
    let _acting = Acting::start(state, format!("{}/{name}", target.application)).ok_or_else(|| {
        ApiError::Conflict {
            field: "action",
            message: format!("an action on {name} in {environment} is already under way; this press does nothing"),
        }
    })?;
    // The state as Argo CD sees it now, not as Tower last read it.
    let (status, said) = argo(
        state,
        reqwest::Method::GET,
        &format!("{}/resource", target.application),
        &rollout.query(target),
        None,
    )
    .await?;
    let live: Option<tower_shared::kube::Object> = said["manifest"]
        .as_str()
        .and_then(|m| serde_json::from_str(m).ok());
    let Some(live) = live.filter(|_| status.is_success()) else {
        return Err(ApiError::Upstream {
            message: format!(
                "Argo CD did not show {name}: {status} {}",
                message_of(status, &said)
            ),
        });
    };
    let now = rollout_actions::seen(&live);
    if now != request.seen {
        return Err(ApiError::Conflict {
            field: "seen",
            message: format!(
                "{name} in {environment} has moved on since these actions were offered; look at it again before you act"
            ),
        });
    }
    let offered = offered(state, target, rollout).await?;
    let Some(chosen) = offered.into_iter().find(|a| a.action == request.action) else {
        return Err(ApiError::Conflict {
            field: "action",
            message: format!("Argo CD does not offer {word} on {name} in {environment} now"),
        });
    };
    let (status, said) = argo(
        state,
        reqwest::Method::POST,
        &format!("{}/resource/actions/v2", target.application),
        &[],
        Some(
            json!({"name": target.application, "appNamespace": target.app_namespace,
            "namespace": rollout.namespace, "resourceName": name, "version": "v1alpha1",
            "group": "argoproj.io", "kind": "Rollout", "action": word}),
        ),
    )
    .await?;
    match status {
        s if s.is_success() => Ok(RolloutActionAnswer {
            application: target.application.clone(),
            action: request.action,
            message: format!("Argo CD ran “{}” on {name} in {environment}, asked by {who}", chosen.label),
        }),
        StatusCode::FORBIDDEN => Err(ApiError::Upstream {
            message: format!(
                "Argo CD refused {word} on {name}: Tower's Argo CD account lacks `applications, action/argoproj.io/Rollout/{word}` ({})",
                message_of(status, &said)
            ),
        }),
        _ => Err(ApiError::Upstream {
            message: format!("Argo CD refused {word} on {name}: {status} {}", message_of(status, &said)),
        }),
    }
}
