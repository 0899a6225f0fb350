//! A canary's actions through Tower's routes against the simulated platform: Argo CD
//! (simulated) lists what applies to the Rollout's state and runs what Tower asks, the
//! Rollouts controller (simulated) plays it — resume walks to the next step, abort puts all
//! traffic back on stable, retry starts again. Fifty presses at once run one action; a
//! press on a state that moved on, by someone who does not own the app, or by a tool
//! without the grant is refused. Nothing is written to a cluster (`Live` checks on drop).

use std::time::Duration;

use hangar_sim::stories::fleet::{Role, SteadyFleet, PAUSED_CANARY as APP};
use serde_json::{json, Value};

use crate::support::{eventually, signed_in, Live};

const ACTIONS: &str = "/api/argocd/rollout-actions?service=flight-api&environment=prod";
const CANARY_BOT: &str = "canary-bot-token-0123456789abcdef";
const WATCHER: &str = "watcher-token-0123456789abcdef";

/// Moves the world until the paused canary's prod rollout pauses at 40 %.
pub(crate) fn to_the_pause(tower: &Live) {
    let now = tower.world_now();
    let fleet = SteadyFleet::new(1, now);
    let app = fleet
        .app(Role::PausedCanary)
        .expect("the demo has a paused canary");
    let paused_at = app.prod_rollout_started(now) + chrono::Duration::seconds(601);
    if paused_at > now {
        tower.advance_world((paused_at - now).num_seconds());
    }
}

/// Moves the world to the paused canary's pause, then aborts it as the guest (who owns it)
/// through Tower's route, as the canary's Abort button does; when Tower was asked.
pub(crate) async fn abort_the_paused_canary(tower: &Live) -> chrono::DateTime<chrono::Utc> {
    to_the_pause(tower);
    rollout_until(tower, "the canary paused at 40 %", |r| {
        r["canaryWeight"] == 40
    })
    .await;
    let seen = offered(tower).await["seen"].as_str().unwrap().to_owned();
    let abort = json!({"service": APP, "environment": "prod", "action": "abort", "seen": seen});
    let asked = tower.world_now();
    let (status, answer) = press(&tower.client(), tower, &abort).await;
    assert_eq!(status, 200, "{answer}");
    asked
}

/// Tower's prod rollout of the paused canary, once `wanted` holds.
async fn rollout_until(tower: &Live, what: &str, wanted: impl Fn(&Value) -> bool) -> Value {
    let path = format!("/api/deployments?service={APP}");
    eventually(Duration::from_secs(20), what, || async {
        let (_, tab) = tower.get(&path).await.ok()?;
        let prod = tab["environments"]
            .as_array()?
            .iter()
            .find(|e| e["name"] == "prod")?
            .clone();
        wanted(&prod["rollout"]).then_some(prod["rollout"].clone())
    })
    .await
    .unwrap()
}

async fn offered(tower: &Live) -> Value {
    let (status, answer) = tower.get(ACTIONS).await.unwrap();
    assert_eq!(status, 200, "{answer}");
    answer
}

fn labels(answer: &Value) -> Vec<(String, String)> {
    answer["actions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| {
            (
                a["action"].as_str().unwrap().to_owned(),
                a["label"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

async fn press(client: &reqwest::Client, tower: &Live, body: &Value) -> (u16, Value) {
    let response = client
        .post(tower.url("/api/argocd/rollout-action"))
        .json(body)
        .send()
        .await
        .unwrap();
    let status = response.status().as_u16();
    (status, response.json().await.unwrap_or_default())
}

fn tools() -> Vec<tower_backend::config::ToolToken> {
    let tool = |subject: &str, token: &str, route: &str| tower_backend::config::ToolToken {
        subject: subject.to_owned(),
        token: tower_backend::config::Secret(token.to_owned()),
        routes: vec![route.to_owned(), "/api/argocd/rollout-actions".to_owned()],
    };
    vec![
        tool("tool:canary-bot", CANARY_BOT, "/api/argocd/rollout-action"),
        tool("tool:watcher", WATCHER, "/api/argocd/sync"),
    ]
}

#[tokio::test]
async fn a_paused_canary_is_resumed_aborted_and_retried_through_argo_cd_once_per_press() {
    let tower = Live::start_with_tools(0.0, tools()).await.unwrap();
    to_the_pause(&tower);
    rollout_until(&tower, "the canary paused at 40 %", |r| {
        r["currentStep"] == 3 && r["canaryWeight"] == 40
    })
    .await;
    let paused = offered(&tower).await;
    assert_eq!(paused["application"], format!("{APP}-prod"));
    let said = labels(&paused);
    assert_eq!(
        said.iter().map(|(a, _)| a.as_str()).collect::<Vec<_>>(),
        ["resume", "promote-full", "abort"],
        "{paused}"
    );
    assert_eq!(said[0].1, "Resume: traffic goes from 40% to 80%");
    assert!(paused["actions"][1]["confirm"]
        .as_str()
        .is_some_and(|c| c.contains("skipping the remaining steps and analysis")));

    // Fifty presses at once (two tabs, double clicks): one resume, the rest refused.
    let seen = paused["seen"].as_str().unwrap().to_owned();
    let resume = json!({"service": APP, "environment": "prod", "action": "resume", "seen": seen});
    let client = tower.client();
    let presses = (0..50).map(|_| press(&client, &tower, &resume));
    let answers = futures::future::join_all(presses).await;
    let ok: Vec<&Value> = answers
        .iter()
        .filter(|(s, _)| *s == 200)
        .map(|(_, a)| a)
        .collect();
    assert_eq!(ok.len(), 1, "{answers:?}");
    assert!(
        ok[0]["message"]
            .as_str()
            .is_some_and(|m| m.contains("Resume: traffic goes from 40% to 80%")
                && m.contains("asked by user:development/guest")),
        "{}",
        ok[0]
    );
    assert!(
        answers
            .iter()
            .all(|(s, a)| *s == 200
                || (*s == 409 && (a["field"] == "seen" || a["field"] == "action")))
    );
    let ran = tower.world.served.argocd_actions();
    assert_eq!(ran.len(), 1, "{ran:?}");
    assert_eq!(
        (
            ran[0].application.as_str(),
            ran[0].action.as_str(),
            ran[0].resource.as_str()
        ),
        ("flight-api-prod", "resume", APP)
    );
    let walked = rollout_until(&tower, "the canary at its next step, 80 %", |r| {
        r["currentStep"] == 5 && r["canaryWeight"] == 80
    })
    .await;
    assert_eq!(walked["aborted"], false);

    // The same press again: the rollout moved on since it was offered.
    let (status, stale) = press(&client, &tower, &resume).await;
    assert_eq!(
        (status, stale["field"].as_str()),
        (409, Some("seen")),
        "{stale}"
    );

    // A tool without the grant, and an app the caller does not own: 403.
    let abort = |seen: &str| json!({"service": APP, "environment": "prod", "action": "abort", "seen": seen});
    let at_80 = offered(&tower).await;
    let seen = at_80["seen"].as_str().unwrap().to_owned();
    let (status, _) = press(&signed_in(WATCHER), &tower, &abort(&seen)).await;
    assert_eq!(status, 403);
    let other = SteadyFleet::new(1, crate::support::test_start())
        .apps
        .into_iter()
        .find(|a| a.owner == "team-b")
        .unwrap()
        .name;
    let (status, refused) = press(
        &client,
        &tower,
        &json!({"service": other, "environment": "prod", "action": "abort", "seen": seen}),
    )
    .await;
    assert_eq!(
        (status, refused["field"].as_str()),
        (403, Some("service")),
        "{refused}"
    );
    assert_eq!(tower.world.served.argocd_actions().len(), 1);

    // A tool granted the route aborts: all traffic back on stable.
    let (status, aborted) = press(&signed_in(CANARY_BOT), &tower, &abort(&seen)).await;
    assert_eq!(status, 200, "{aborted}");
    assert!(aborted["message"]
        .as_str()
        .is_some_and(|m| m.contains("tool:canary-bot")));
    let back = rollout_until(&tower, "the canary aborted", |r| r["aborted"] == true).await;
    assert_eq!(
        (&back["canaryWeight"], &back["stableWeight"]),
        (&json!(0), &json!(100)),
        "{back}"
    );

    // Aborted: only a retry is offered, and it starts the canary again at 20 %.
    let after = offered(&tower).await;
    let said = labels(&after);
    assert_eq!(said.len(), 1, "{after}");
    assert_eq!(said[0].0, "retry");
    assert!(
        said[0].1.ends_with("starts again from 20% of traffic"),
        "{after}"
    );
    let retry = json!({"service": APP, "environment": "prod", "action": "retry",
        "seen": after["seen"]});
    let (status, answer) = press(&client, &tower, &retry).await;
    assert_eq!(status, 200, "{answer}");
    rollout_until(&tower, "the canary again at 20 %", |r| {
        r["aborted"] == false && r["canaryWeight"] == 20
    })
    .await;
    assert_eq!(tower.world.served.argocd_actions().len(), 3);
}

#[tokio::test]
async fn bad_action_requests_are_refused_naming_the_field() {
    let tower = Live::start(0.0).await.unwrap();
    to_the_pause(&tower);
    rollout_until(&tower, "the canary paused", |r| r["currentStep"] == 3).await;
    let seen = offered(&tower).await["seen"].as_str().unwrap().to_owned();
    let client = tower.client();
    for (body, status, field) in [
        (
            json!({"service": APP, "environment": "prod", "action": "restart", "seen": seen}),
            400,
            "action",
        ),
        (
            json!({"service": APP, "environment": "prod", "action": "resume"}),
            400,
            "seen",
        ),
        (
            json!({"service": APP, "environment": "prod", "action": "resume", "seen": ""}),
            400,
            "seen",
        ),
        (
            json!({"service": APP, "environment": "qa", "action": "resume", "seen": seen}),
            404,
            "environment",
        ),
        (
            json!({"service": "no-such-app", "environment": "prod", "action": "resume", "seen": seen}),
            404,
            "service",
        ),
        (
            json!({"service": APP, "environment": "prod", "action": "resume", "seen": seen, "why": 1}),
            400,
            "why",
        ),
        // A stable rollout offers nothing: retry does not apply to it.
        (
            json!({"service": APP, "environment": "dev", "action": "retry", "seen": seen}),
            409,
            "seen",
        ),
    ] {
        let (got, refused) = press(&client, &tower, &body).await;
        assert_eq!(
            (got, refused["field"].as_str()),
            (status, Some(field)),
            "{body} → {refused}"
        );
    }
    let (status, refused) = tower
        .get("/api/argocd/rollout-actions?service=flight-api")
        .await
        .unwrap();
    assert_eq!(
        (status.as_u16(), refused["field"].as_str()),
        (400, Some("environment"))
    );
    let dev = tower
        .get("/api/argocd/rollout-actions?service=flight-api&environment=dev")
        .await
        .unwrap()
        .1;
    assert_eq!(
        dev["actions"],
        json!([]),
        "a stable rollout offers nothing: {dev}"
    );
    assert!(tower.world.served.argocd_actions().is_empty());
}

#[tokio::test]
async fn the_simulated_argo_cd_lists_and_refuses_resource_actions_as_argo_cd_does() {
    let tower = Live::start(0.0).await.unwrap();
    to_the_pause(&tower);
    rollout_until(&tower, "the canary paused", |r| r["currentStep"] == 3).await;
    let argocd = format!("http://{}/api/v1/applications", tower.world.served.argocd);
    let http = reqwest::Client::new();
    let query = |app_namespace: &str, namespace: &str| {
        vec![
            ("appNamespace", app_namespace.to_owned()),
            ("namespace", namespace.to_owned()),
            ("resourceName", APP.to_owned()),
            ("version", "v1alpha1".to_owned()),
            ("group", "argoproj.io".to_owned()),
            ("kind", "Rollout".to_owned()),
        ]
    };
    let listed = |app: &'static str, q: Vec<(&'static str, String)>| {
        let request = http
            .get(format!("{argocd}/{app}/resource/actions"))
            .query(&q);
        async move {
            let response = request.send().await.unwrap();
            (
                response.status().as_u16(),
                response.json::<Value>().await.unwrap(),
            )
        }
    };
    let enabled = |answer: &Value| -> Vec<String> {
        answer["actions"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|a| a["disabled"] == false)
            .map(|a| a["name"].as_str().unwrap().to_owned())
            .collect()
    };
    let ns = format!("app-{APP}-prod");
    let (status, paused) = listed("flight-api-prod", query("argocd", &ns)).await;
    assert_eq!(status, 200, "{paused}");
    assert_eq!(
        enabled(&paused),
        ["abort", "promote-full", "restart", "resume"]
    );
    let (_, stable) = listed("flight-api-dev", query("argocd", &format!("app-{APP}-dev"))).await;
    assert_eq!(
        enabled(&stable),
        ["restart"],
        "a fully promoted rollout: {stable}"
    );
    // Another instance's namespace, a resource the Application does not deploy, no name.
    let (status, refused) = listed("flight-api-prod", query("kube-system", &ns)).await;
    assert_eq!((status, &refused["code"]), (403, &json!(7)), "{refused}");
    let (status, _) = listed("flight-api-prod", query("argocd", "app-other-prod")).await;
    assert_eq!(status, 404);
    let (status, _) = listed("flight-api-prod", Vec::new()).await;
    assert_eq!(status, 400);

    // An action it has no script for is refused; restart runs and leaves the state as it is.
    let run = |action: &str| {
        let body = json!({"name": "flight-api-prod", "appNamespace": "argocd", "namespace": ns,
            "resourceName": APP, "version": "v1alpha1", "group": "argoproj.io",
            "kind": "Rollout", "action": action});
        let request = http
            .post(format!("{argocd}/flight-api-prod/resource/actions/v2"))
            .json(&body);
        async move { request.send().await.unwrap().status().as_u16() }
    };
    assert_eq!(run("explode").await, 400);
    assert_eq!(run("restart").await, 200);
    let (_, after) = listed("flight-api-prod", query("argocd", &ns)).await;
    assert_eq!(enabled(&after), enabled(&paused));
    let ran: Vec<String> = tower
        .world
        .served
        .argocd_actions()
        .into_iter()
        .map(|r| r.action)
        .collect();
    assert_eq!(ran, ["restart"]);
}
