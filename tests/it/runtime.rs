//! The Runtime tab's route against the simulated platform and its Prometheus: the regressed
//! app's OOMKilled pod, autoscaler and Events, its p99 latency risen after its release; the
//! outage app's burn rates worked out by hand from the simulated series; Prometheus switched
//! off — said within one query deadline, the last figures kept — and on again.

use std::time::{Duration, Instant};

use hangar_sim::stories::fleet::{SteadyFleet, Trouble, OOM_AFTER, OUTAGE_LASTS};
use serde_json::Value;

use crate::support::{eventually, Live};

/// The demo fleet's app with `trouble`.
fn troubled(tower: &Live, trouble: Trouble) -> String {
    SteadyFleet::new(1, tower.world_now())
        .troubled(trouble)
        .unwrap()
        .name
        .clone()
}

fn env<'a>(answer: &'a Value, name: &str) -> &'a Value {
    answer["environments"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["environment"] == name)
        .unwrap_or_else(|| panic!("no {name} in {answer}"))
}

fn window<'a>(slo: &'a Value, name: &str) -> &'a Value {
    slo["windows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|w| w["window"] == name)
        .unwrap()
}

async fn runtime(tower: &Live, service: &str) -> Value {
    let (status, body) = tower
        .get(&format!("/api/runtime?service={service}"))
        .await
        .unwrap();
    assert_eq!(status, 200, "{body}");
    body
}

/// The regressed app an hour after its release reached prod (its pod OOMKilled, the last
/// hour all the new release's), and the runtime answer then.
pub(crate) async fn regressed_an_hour_in(tower: &Live) -> (String, Value) {
    let app = troubled(tower, Trouble::Regressed);
    let first = runtime(tower, &app).await;
    let arrived: chrono::DateTime<chrono::Utc> = env(&first, "prod")["arrivals"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()["at"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    // Its pod is OOMKilled OOM_AFTER after the release arrives (a release stays four hours
    // or more).
    const { assert!(OOM_AFTER < 3_600) };
    let since = (tower.world_now() - arrived).num_seconds();
    if since < 3_600 {
        tower.advance_world(3_600 - since + 60);
    }
    // Prometheus' answers are reused for about the same moment (docs/runtime.md): wait for
    // figures of this one.
    let now = tower.world_now();
    let answer = eventually(Duration::from_secs(30), "the OOMKilled pod", || async {
        let answer = runtime(tower, &app).await;
        let prod = env(&answer, "prod");
        let killed = prod["pods"]
            .as_array()?
            .iter()
            .any(|p| p["lastTermination"]["reason"] == "OOMKilled");
        let measured: chrono::DateTime<chrono::Utc> = prod["measuredAt"].as_str()?.parse().ok()?;
        (killed && measured >= now - chrono::Duration::seconds(1)).then_some(answer)
    })
    .await
    .unwrap();
    (app, answer)
}

#[tokio::test]
async fn the_regressed_release_is_oom_killed_and_slower_than_the_one_before() {
    let tower = Live::start(0.0).await.unwrap();
    let (app, answer) = regressed_an_hour_in(&tower).await;
    let prod = env(&answer, "prod");
    assert_eq!(prod["cluster"], "prod");
    assert_eq!(prod["namespace"], format!("app-{app}-prod"));
    let pods = prod["pods"].as_array().unwrap();
    assert_eq!(pods.len(), 3, "{pods:?}");
    let killed = pods
        .iter()
        .find(|p| p["lastTermination"]["reason"] == "OOMKilled")
        .unwrap();
    assert_eq!(killed["restarts"], 3);
    assert_eq!(killed["lastTermination"]["exitCode"], 137);
    assert_eq!(killed["ready"], "1/1");
    assert!(killed["node"].as_str().unwrap().ends_with(".ec2.internal"));
    assert_eq!(
        prod["autoscaler"],
        serde_json::json!({"name": app, "min": 3, "max": 6, "current": 3, "desired": 5})
    );
    // Warnings first.
    let first_event = &prod["events"][0];
    assert_eq!(
        (&first_event["warning"], &first_event["reason"]),
        (&Value::Bool(true), &Value::from("BackOff"))
    );
    assert!(prod["events"]
        .as_array()
        .unwrap()
        .iter()
        .any(|e| e["reason"] == "RolloutUpdated" && e["object"] == format!("Rollout/{app}")));

    // p99 about 910 ms over the last hour, against the 500 ms default objective.
    assert_eq!(answer["prometheus"]["state"], "answering", "{answer}");
    let slo = &prod["slo"];
    let hour = window(slo, "1h");
    let p99 = hour["p99Ms"].as_f64().unwrap();
    assert!((880.0..=940.0).contains(&p99), "{hour}");
    assert_eq!(hour["p99Met"], false);
    assert_eq!(slo["targets"]["latencyP99Ms"], 500.0);
    let release = prod["arrivals"].as_array().unwrap().last().unwrap()["release"]
        .as_str()
        .unwrap()
        .to_owned();
    let latency = &slo["charts"][1];
    assert!(
        latency["markers"]
            .as_array()
            .unwrap()
            .iter()
            .any(|m| m["label"] == release.as_str()),
        "{latency}"
    );
    let summary = latency["summary"].as_str().unwrap();
    assert!(
        summary.starts_with("p99 latency: rose from")
            && summary.ends_with(&format!("after {release} arrived.")),
        "{summary}"
    );
    assert!(!latency["lines"].as_array().unwrap().is_empty());
    // Dev is not regressed: its p99 stays near 230 ms.
    let dev_p99 = window(&env(&answer, "dev")["slo"], "1h")["p99Ms"]
        .as_f64()
        .unwrap();
    assert!((200.0..=260.0).contains(&dev_p99), "{dev_p99}");
}

#[tokio::test]
async fn the_outage_s_burn_rates_are_those_worked_out_by_hand() {
    let tower = Live::start(0.0).await.unwrap();
    let app = troubled(&tower, Trouble::Outage);
    let answer = runtime(&tower, &app).await;
    let slo = &env(&answer, "prod")["slo"];
    // The simulated series: an error ratio b between 0.0002 and 0.0006 (0.0004 wobbling by
    // 0.0002) sampled every minute, except OUTAGE_LASTS (12 minutes) at 0.35 two hours ago.
    // Over 6 h (360 samples): (12 × 0.35 + 348 b) / 360 ∈ [0.011860, 0.012247], so the burn
    // rate against 99.9 % (a 0.1 % budget) is 11.86–12.25: above the second page alert's 6,
    // whose 30-minute window (b alone, 0.2–0.6) is not — that alert stays quiet.
    // Over 3 days (4,320 samples): (12 × 0.35 + 4,308 b) / 4,320 ∈ [0.001172, 0.001570]:
    // a burn of 1.17–1.57 over the ticket's 1, with its 6-hour window at 11.86–12.25: the
    // ticket fires.
    const { assert!(OUTAGE_LASTS == 12 * 60) };
    let alerts = slo["alerts"].as_array().unwrap();
    let alert = |long: &str| alerts.iter().find(|a| a["long"] == long).unwrap();
    let six = alert("6h");
    let burn = six["longBurn"].as_f64().unwrap();
    assert!((11.86..=12.25).contains(&burn), "{six}");
    let short = six["shortBurn"].as_f64().unwrap();
    assert!((0.2..=0.6).contains(&short), "{six}");
    assert_eq!(six["firing"], false);
    let ticket = alert("3d");
    let burn = ticket["longBurn"].as_f64().unwrap();
    assert!((1.17..=1.57).contains(&burn), "{ticket}");
    assert_eq!(ticket["firing"], true, "{ticket}");
    assert_eq!(ticket["severity"], "ticket");
    // The first page alert reads the last hour: the outage ended 1 h 48 min ago.
    assert_eq!(alert("1h")["firing"], false);
    // Restored: the last hour's availability is b alone.
    let hour = window(slo, "1h")["availability"].as_f64().unwrap();
    assert!((0.9994..=0.9998).contains(&hour), "{hour}");
    let sentence = slo["sentence"].as_str().unwrap();
    assert!(sentence.contains("open a ticket"), "{sentence}");
}

#[tokio::test]
async fn prometheus_switched_off_is_said_within_one_deadline_and_the_last_figures_stay() {
    let tower = Live::start(0.0).await.unwrap();
    let app = troubled(&tower, Trouble::Regressed);
    let before = runtime(&tower, &app).await;
    assert_eq!(before["prometheus"]["state"], "answering");
    let measured = env(&before, "prod")["measuredAt"].clone();
    assert!(measured.is_string(), "{before}");

    tower.world.served.set_prometheus_answering(false);
    // A later moment: the figures kept are for another, so Prometheus is asked again.
    tower.advance_world(600);
    let asked = Instant::now();
    let during = runtime(&tower, &app).await;
    let took = asked.elapsed();
    let deadline = Duration::from_secs(
        tower
            .live
            .config()
            .prometheus
            .as_ref()
            .unwrap()
            .deadline_secs,
    );
    assert!(
        took < deadline + Duration::from_secs(2),
        "answered after {took:?}"
    );
    assert_eq!(during["prometheus"]["state"], "notAnswering", "{during}");
    assert!(during["prometheus"]["message"]
        .as_str()
        .unwrap()
        .contains("did not answer within"));
    assert!(during["prometheus"]["since"].is_string());
    let prod = env(&during, "prod");
    assert_eq!(
        prod["measuredAt"], measured,
        "the last figures are of their moment"
    );
    assert_eq!(
        prod["slo"]["windows"],
        env(&before, "prod")["slo"]["windows"]
    );

    tower.world.served.set_prometheus_answering(true);
    tower.advance_world(600);
    let after = eventually(
        Duration::from_secs(30),
        "Prometheus answering again",
        || async {
            let answer = runtime(&tower, &app).await;
            (answer["prometheus"]["state"] == "answering").then_some(answer)
        },
    )
    .await
    .unwrap();
    assert_ne!(env(&after, "prod")["measuredAt"], measured);
}

#[tokio::test]
async fn an_unchanged_runtime_answer_is_not_sent_again() {
    let tower = Live::start(0.0).await.unwrap();
    let app = troubled(&tower, Trouble::Outage);
    let path = format!("/api/runtime?service={app}");
    let response = tower.client().get(tower.url(&path)).send().await.unwrap();
    let etag = response.headers()["etag"].clone();
    assert_eq!(tower.revalidate(&path, &etag).await, 304);
    let (status, body) = tower.get("/api/runtime?service=no-such-app").await.unwrap();
    assert_eq!(
        (status.as_u16(), &body["field"]),
        (404, &Value::from("service"))
    );
}

/// A pod's log on request: the Runtime tab's pods only, read from the pod's own cluster
/// (prod), whole or followed as the world moves; bad or unknown parameters named.
#[tokio::test]
async fn a_pods_log_is_read_from_its_cluster_on_request_and_followed() {
    let tower = Live::start(0.0).await.unwrap();
    let app = troubled(&tower, Trouble::Regressed);
    let answer = runtime(&tower, &app).await;
    let prod = env(&answer, "prod");
    let pod = prod["pods"][0]["name"].as_str().unwrap().to_owned();
    let path =
        |rest: &str| format!("/api/runtime/log?service={app}&environment=prod&pod={pod}{rest}");
    // Followed logs are counted per cluster: the prod cluster's, not the control plane's.
    let streams = |cluster: &str| tower.world.served.api_requests()[cluster].log_streams;
    let (prod_before, dev_before) = (streams("prod"), streams("dev"));
    let response = tower
        .client()
        .get(tower.url(&path("")))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(
        response.headers()["content-type"],
        "text/plain; charset=utf-8"
    );
    let text = response.text().await.unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert!(lines[0].contains("[app] starting"), "{text}");
    assert!(lines.len() > 1, "{text}");

    // Followed: ten more world seconds are two more lines (one every five) on the stream.
    let mut response = tower
        .client()
        .get(tower.url(&path("&follow=true")))
        .send()
        .await
        .unwrap();
    let mut read = String::new();
    let until = |read: &String, n: usize| read.ends_with('\n') && read.lines().count() >= n;
    while !until(&read, lines.len()) {
        let chunk = tokio::time::timeout(Duration::from_secs(5), response.chunk())
            .await
            .expect("the log within 5 s")
            .unwrap()
            .expect("the log goes on");
        read.push_str(std::str::from_utf8(&chunk).unwrap());
    }
    tower.advance_world(10);
    while !until(&read, lines.len() + 2) {
        let chunk = tokio::time::timeout(Duration::from_secs(5), response.chunk())
            .await
            .expect("two more lines within 5 s")
            .unwrap()
            .expect("the log goes on");
        read.push_str(std::str::from_utf8(&chunk).unwrap());
    }
    drop(response);
    assert_eq!(
        (streams("prod") - prod_before, streams("dev") - dev_before),
        (1, 0),
        "one followed log, on prod"
    );

    // One caller holds at most eight logs open; a ninth waits until one is closed.
    let follow = || tower.client().get(tower.url(&path("&follow=true"))).send();
    let mut open = Vec::new();
    for _ in 0..tower_backend::live::logs::MOST_PER_CALLER {
        let response = follow().await.unwrap();
        assert_eq!(response.status(), 200);
        open.push(response);
    }
    let ninth = follow().await.unwrap();
    assert_eq!(ninth.status(), 429);
    assert!(ninth.headers().contains_key("retry-after"));
    let said: Value = ninth.json().await.unwrap();
    assert!(
        said["error"]
            .as_str()
            .unwrap()
            .contains("logs open already"),
        "{said}"
    );
    drop(open.pop());
    eventually(Duration::from_secs(10), "a place back", || async {
        let response = follow().await.ok()?;
        (response.status() == 200).then_some(())
    })
    .await
    .unwrap();
    drop(open);

    // A log only for whom Backstage's catalog shows the service: hidden from the guest, the
    // log is refused naming the service; a tool granted the route still reads it.
    tower.world.platform.hide_entity(&app);
    let (got, body) = tower.get(&path("")).await.unwrap();
    assert_eq!(
        (got.as_u16(), body["field"].as_str()),
        (403, Some("service")),
        "{body}"
    );
    assert!(
        body["error"]
            .as_str()
            .unwrap()
            .contains("shows user:development/guest no component"),
        "{body}"
    );
    let secret = "log-reader-token-0123456789";
    let router = tower.router_with_tool("tool:log-reader", secret, &["/api/runtime/log"]);
    let request =
        axum::http::Request::get(path("")).header("authorization", format!("Bearer {secret}"));
    let response =
        tower::ServiceExt::oneshot(router, request.body(axum::body::Body::empty()).unwrap())
            .await
            .unwrap();
    assert_eq!(response.status(), 200);

    for (query, status, field) in [
        (
            format!("service={app}&environment=prod&pod=not-one-of-its-pods"),
            404,
            "pod",
        ),
        (
            format!("service={app}&environment=nowhere&pod={pod}"),
            404,
            "environment",
        ),
        (format!("service={app}&environment=prod"), 400, "pod"),
        (
            format!("service={app}&environment=prod&pod={pod}&follow=maybe"),
            400,
            "follow",
        ),
        (
            format!("service=no-such-app&environment=prod&pod={pod}"),
            404,
            "service",
        ),
    ] {
        let (got, body) = tower
            .get(&format!("/api/runtime/log?{query}"))
            .await
            .unwrap();
        assert_eq!(
            (got.as_u16(), body["field"].as_str()),
            (status, Some(field)),
            "{query}: {body}"
        );
    }
}
