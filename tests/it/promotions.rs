//! Promotions through Tower's routes against the simulated platform: the diff shown first;
//! staging by one commit, prod by one labelled pull request, however many presses at once;
//! Argo CD (simulated) syncing what Git says and the Rollout walking the release in; a file
//! changed since the diff, a caller who does not own the app and bad input all refused.
//! Nothing is ever written to a cluster (`Live` checks on drop).

use std::time::Duration;

use hangar_sim::stories::fleet::AWAITING_PROMOTION as APP;
use serde_json::{json, Value};

use crate::support::{eventually, Live};

const STAGING: &str = "glidepath/envs/staging.yaml";

pub(crate) fn releases_path() -> String {
    format!("/api/releases?service={APP}")
}

/// The matrix's row of `image`.
fn row<'a>(matrix: &'a Value, image: &str) -> Option<&'a Value> {
    matrix["releases"]
        .as_array()?
        .iter()
        .find(|r| r["image"] == image)
}

/// The state (and weight) of `image` in the matrix's environment `env`.
pub(crate) fn cell(matrix: &Value, image: &str, env: &str) -> Option<(String, Option<u64>)> {
    let cells = row(matrix, image)?["cells"].as_array()?;
    let cell = cells.iter().find(|c| c["environment"] == env)?;
    Some((cell["state"].as_str()?.to_owned(), cell["weight"].as_u64()))
}

/// The image of the matrix's release whose next step is `env`.
pub(crate) fn going_to(matrix: &Value, env: &str) -> Option<String> {
    matrix["releases"].as_array()?.iter().find_map(|r| {
        (r["next"]["environment"] == env).then(|| r["image"].as_str().map(str::to_owned))?
    })
}

/// Waits for a release of the held app whose next step is `env`; its image.
async fn waiting_for(tower: &Live, env: &str) -> String {
    eventually(
        Duration::from_secs(20),
        &format!("a release going to {env} next"),
        || async {
            let (_, matrix) = tower.get(&releases_path()).await.ok()?;
            going_to(&matrix, env)
        },
    )
    .await
    .unwrap()
}

fn preview_path(image: &str, env: &str) -> String {
    format!("/api/releases/promotion?service={APP}&image={image}&environment={env}")
}

/// An app of the steady fleet `team-b` owns (the guest is in team-a).
fn team_b_app() -> String {
    hangar_sim::stories::fleet::SteadyFleet::new(1, crate::support::test_start())
        .apps
        .into_iter()
        .find(|a| a.owner == "team-b")
        .unwrap()
        .name
}

/// The guest's promotion of `service`, which must be refused (403 naming `service`): the
/// answer.
async fn promotion_refused(tower: &Live, service: &str) -> Value {
    let (status, refused) = promote(
        tower,
        &json!({"service": service, "image": "ghcr.io/acme/x:1.0.0-aaaaaaa",
                "environment": "staging", "seen": "0000000"}),
    )
    .await;
    assert_eq!(
        (status.as_u16(), &refused["field"]),
        (403, &json!("service")),
        "{refused}"
    );
    refused
}

async fn promote(tower: &Live, body: &Value) -> (reqwest::StatusCode, Value) {
    let response = tower
        .client()
        .post(tower.url("/api/releases/promote"))
        .json(body)
        .send()
        .await
        .unwrap();
    let status = response.status();
    (status, response.json().await.unwrap())
}

/// 50 promotions of `image` to `env` at once (as read in `seen`); their answers.
async fn fifty_presses(tower: &Live, image: &str, env: &str, seen: &str) -> Vec<Value> {
    let body = json!({"service": APP, "image": image, "environment": env, "seen": seen});
    let presses = (0..50).map(|_| promote(tower, &body));
    futures::future::join_all(presses)
        .await
        .into_iter()
        .map(|(status, answer)| {
            assert_eq!(status, 200, "{answer}");
            answer
        })
        .collect()
}

fn outcomes(answers: &[Value]) -> std::collections::BTreeMap<String, usize> {
    let mut counts = std::collections::BTreeMap::new();
    for answer in answers {
        *counts
            .entry(answer["outcome"].as_str().unwrap().to_owned())
            .or_default() += 1;
    }
    counts
}

fn commits_to(tower: &Live, branch: &str, path: &str) -> usize {
    let repo = format!("acme/gitops-{APP}");
    tower
        .world
        .platform
        .github_commits()
        .iter()
        .filter(|(r, b, p)| *r == repo && b == branch && p == path)
        .count()
}

/// Waits until the matrix shows `image` in `env` as `state` (at `weight`, if given).
async fn until_cell(tower: &Live, image: &str, env: &str, state: &str, weight: Option<u64>) {
    eventually(
        Duration::from_secs(20),
        &format!("{image} {state} in {env}"),
        || async {
            let (_, matrix) = tower.get(&releases_path()).await.ok()?;
            let (now, at) = cell(&matrix, image, env)?;
            (now == state && (weight.is_none() || at == weight)).then_some(())
        },
    )
    .await
    .unwrap();
}

/// Promotes the held app's release waiting for staging (one press) and lets its canary walk
/// in; its image.
async fn promoted_to_staging(tower: &Live) -> String {
    let image = canary_in_staging(tower).await;
    tower.advance_world(25 * 60);
    until_cell(tower, &image, "staging", "live", None).await;
    image
}

/// Takes the held app's release waiting for staging all the way into prod through Tower:
/// staging by a commit, prod by one pull request merged on GitHub, the canary walked in
/// until it is fully live; its image.
pub(crate) async fn live_in_prod(tower: &Live) -> String {
    let image = promoted_to_staging(tower).await;
    let (_, preview) = tower.get(&preview_path(&image, "prod")).await.unwrap();
    let body = json!({"service": APP, "image": image, "environment": "prod",
                      "seen": preview["seen"]});
    let (status, answer) = promote(tower, &body).await;
    assert_eq!(status, 200, "{answer}");
    let number = answer["pull"]["number"].as_u64().unwrap();
    merge(tower, &format!("acme/gitops-{APP}"), number).await;
    until_cell(tower, &image, "prod", "canary", Some(20)).await;
    tower.advance_world(25 * 60);
    until_cell(tower, &image, "prod", "live", None).await;
    image
}

/// Merges pull request `number` of `repo` on the simulated GitHub, as a person would.
pub(crate) async fn merge(tower: &Live, repo: &str, number: u64) {
    merge_at(&tower.world.served, repo, number).await;
}

/// [`merge`] on the simulated GitHub of `served`.
pub(crate) async fn merge_at(served: &hangar_sim::platform::Served, repo: &str, number: u64) {
    let github = format!("http://{}", served.github);
    let merged = reqwest::Client::new()
        .put(format!("{github}/repos/{repo}/pulls/{number}/merge"))
        .json(&json!({}))
        .send()
        .await
        .unwrap();
    assert_eq!(merged.status(), 200, "merging #{number} of {repo}");
}

/// Promotes the release waiting for staging (one commit through the route) and waits until
/// Argo CD rolls it out there as a canary at 20 %; its image.
pub(crate) async fn canary_in_staging(tower: &Live) -> String {
    let image = waiting_for(tower, "staging").await;
    let (_, preview) = tower.get(&preview_path(&image, "staging")).await.unwrap();
    let body = json!({"service": APP, "image": image, "environment": "staging",
                      "seen": preview["seen"]});
    let (status, answer) = promote(tower, &body).await;
    assert_eq!(
        (status.as_u16(), &answer["outcome"]),
        (200, &json!("committed")),
        "{answer}"
    );
    until_cell(tower, &image, "staging", "canary", Some(20)).await;
    image
}

#[tokio::test]
async fn a_staging_promotion_is_one_commit_that_argo_cd_rolls_out() {
    let tower = Live::start(0.0).await.unwrap();
    let image = waiting_for(&tower, "staging").await;

    // First, exactly what will change.
    let (status, preview) = tower.get(&preview_path(&image, "staging")).await.unwrap();
    assert_eq!(status, 200, "{preview}");
    assert_eq!(preview["how"], "commit");
    assert_eq!(preview["branch"], "main");
    assert_eq!(preview["path"], STAGING);
    assert_eq!(preview["repo"], format!("acme/gitops-{APP}"));
    assert_eq!(preview["already"], false);
    assert_eq!(preview["access"]["mayPromote"], true, "{preview}");
    let diff = preview["diff"].as_array().unwrap();
    let changed: Vec<(&str, &str)> = diff
        .iter()
        .filter(|l| l["change"] != "same")
        .map(|l| (l["change"].as_str().unwrap(), l["text"].as_str().unwrap()))
        .collect();
    assert_eq!(changed.len(), 2, "one line changes: {diff:?}");
    assert_eq!(changed[0].0, "removed");
    assert_eq!(changed[1], ("added", format!("image: {image}").as_str()));
    assert!(diff.iter().any(|l| l["change"] == "same"), "context kept");

    // 50 presses at once: one commit.
    let seen = preview["seen"].as_str().unwrap();
    let answers = fifty_presses(&tower, &image, "staging", seen).await;
    let counts = outcomes(&answers);
    assert_eq!(counts.get("committed"), Some(&1), "{counts:?}");
    assert_eq!(counts.get("already-there"), Some(&49), "{counts:?}");
    assert_eq!(commits_to(&tower, "main", STAGING), 1);

    // Argo CD syncs the commit: the canary starts at 20 %, walks on in world time.
    until_cell(&tower, &image, "staging", "canary", Some(20)).await;
    tower.advance_world(11 * 60);
    until_cell(&tower, &image, "staging", "canary", Some(40)).await;
    tower.advance_world(14 * 60);
    until_cell(&tower, &image, "staging", "live", None).await;
    // It now goes to prod, by a pull request; a press for staging again does nothing.
    let (_, matrix) = tower.get(&releases_path()).await.unwrap();
    let next = &row(&matrix, &image).unwrap()["next"];
    assert_eq!(
        (&next["environment"], &next["how"]),
        (&json!("prod"), &json!("pull-request"))
    );
    let (status, again) = promote(
        &tower,
        &json!({"service": APP, "image": image, "environment": "staging", "seen": seen}),
    )
    .await;
    assert_eq!(
        (status.as_u16(), &again["outcome"]),
        (200, &json!("already-there"))
    );
    assert_eq!(commits_to(&tower, "main", STAGING), 1);
}

#[tokio::test]
async fn a_prod_promotion_is_one_pull_request_and_merging_it_rolls_out() {
    let tower = Live::start(0.0).await.unwrap();
    let image = promoted_to_staging(&tower).await;

    let (status, preview) = tower.get(&preview_path(&image, "prod")).await.unwrap();
    assert_eq!(status, 200, "{preview}");
    assert_eq!(preview["how"], "pull-request");
    let tag = tower_shared::image::tag(&image).unwrap();
    assert_eq!(preview["branch"], format!("tower/promote-prod-{tag}"));
    assert_eq!(preview["pull"], Value::Null);

    let answers = fifty_presses(&tower, &image, "prod", preview["seen"].as_str().unwrap()).await;
    let counts = outcomes(&answers);
    assert_eq!(counts.get("pull-request-opened"), Some(&1), "{counts:?}");
    assert_eq!(counts.get("pull-request-existing"), Some(&49), "{counts:?}");
    let numbers: std::collections::BTreeSet<u64> = answers
        .iter()
        .map(|a| a["pull"]["number"].as_u64().unwrap())
        .collect();
    assert_eq!(numbers.len(), 1);
    let number = *numbers.first().unwrap();
    assert_eq!(commits_to(&tower, "main", "glidepath/envs/prod.yaml"), 0);

    // On GitHub: labelled, titled, naming the person and what the release brings.
    let github = format!("http://{}", tower.world.served.github);
    let repo = format!("acme/gitops-{APP}");
    let pull: Value = reqwest::get(format!("{github}/repos/{repo}/pulls/{number}"))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(pull["labels"][0]["name"], "tower-promotion");
    assert_eq!(pull["title"], format!("Promote {APP} {tag} to prod"));
    let body = pull["body"].as_str().unwrap();
    assert!(
        body.contains(&image) && body.contains("Built by the pipeline run"),
        "{body}"
    );
    assert!(
        body.ends_with("Requested in Tower by user:development/guest"),
        "{body}"
    );

    // The matrix finds it: the button reads "Review PR #N" until it is merged.
    eventually(
        Duration::from_secs(20),
        "the matrix naming the PR",
        || async {
            let (_, matrix) = tower.get(&releases_path()).await.ok()?;
            (row(&matrix, &image)?["next"]["pull"]["number"] == number).then_some(())
        },
    )
    .await
    .unwrap();
    assert_eq!(
        cell(
            &tower.get(&releases_path()).await.unwrap().1,
            &image,
            "prod"
        )
        .unwrap()
        .0,
        "not-yet",
        "nothing moves before the merge"
    );

    // Someone merges it on GitHub: Argo CD syncs prod, the canary walks in.
    merge(&tower, &repo, number).await;
    until_cell(&tower, &image, "prod", "canary", Some(20)).await;
    tower.advance_world(25 * 60);
    until_cell(&tower, &image, "prod", "live", None).await;
    let (_, matrix) = tower.get(&releases_path()).await.unwrap();
    assert_eq!(row(&matrix, &image).unwrap()["next"], Value::Null);
    assert_eq!(commits_to(&tower, "main", "glidepath/envs/prod.yaml"), 1);
}

#[tokio::test]
async fn a_stale_file_a_non_owner_and_bad_input_are_refused() {
    let tower = Live::start(0.0).await.unwrap();
    let image = waiting_for(&tower, "staging").await;
    let (_, preview) = tower.get(&preview_path(&image, "staging")).await.unwrap();
    let seen = preview["seen"].as_str().unwrap().to_owned();

    // Someone edits the file on GitHub after the diff was shown: refused, theirs stands.
    let github = format!("http://{}", tower.world.served.github);
    let url = format!("{github}/repos/acme/gitops-{APP}/contents/{STAGING}");
    let file: Value = reqwest::get(&url).await.unwrap().json().await.unwrap();
    let theirs = "# edited by hand\nimage: ghcr.io/acme/elsewhere:9.9.9-aaaaaaa\nreplicas: 5\n";
    use base64::Engine as _;
    let edited = reqwest::Client::new()
        .put(&url)
        .json(&json!({"message": "By hand", "sha": file["sha"],
                      "content": base64::engine::general_purpose::STANDARD.encode(theirs)}))
        .send()
        .await
        .unwrap();
    assert_eq!(edited.status(), 200);
    let (status, refused) = promote(
        &tower,
        &json!({"service": APP, "image": image, "environment": "staging", "seen": seen}),
    )
    .await;
    assert_eq!(
        (status.as_u16(), &refused["field"]),
        (409, &json!("seen")),
        "{refused}"
    );
    assert!(
        refused["error"]
            .as_str()
            .unwrap()
            .contains("changed since it was read"),
        "{refused}"
    );
    let now: Value = reqwest::get(&url).await.unwrap().json().await.unwrap();
    let content = now["content"].as_str().unwrap().replace('\n', "");
    let text = base64::engine::general_purpose::STANDARD
        .decode(content)
        .unwrap();
    assert_eq!(String::from_utf8(text).unwrap(), theirs);

    // An app team-b owns: the guest (in team-a) may not promote it, and is told why.
    let other = team_b_app();
    let (status, access) = tower
        .get(&format!("/api/access?service={other}"))
        .await
        .unwrap();
    assert_eq!(status, 200);
    assert_eq!(access["mayPromote"], false);
    assert_eq!(access["owner"], "group:default/team-b");
    let why = access["whyNot"].as_str().unwrap();
    assert!(why.contains("is not in group:default/team-b"), "{why}");
    let refused = promotion_refused(&tower, &other).await;
    assert!(
        refused["error"].as_str().unwrap().contains(why),
        "{refused}"
    );
    let (_, own) = tower
        .get(&format!("/api/access?service={APP}"))
        .await
        .unwrap();
    assert_eq!(
        (&own["mayPromote"], &own["owner"]),
        (&json!(true), &json!("group:default/team-a"))
    );

    // Bad input names its field; a release that does not go there next is a conflict.
    let base = json!({"service": APP, "image": image, "environment": "staging", "seen": seen});
    for (change, status, field) in [
        (json!({"seen": null}), 400, "seen"),
        (json!({"environment": "Prod!"}), 400, "environment"),
        (json!({"image": ""}), 400, "image"),
        (
            json!({"image": "ghcr.io/acme/none:0.0.1-aaaaaaa"}),
            404,
            "image",
        ),
        (json!({"environment": "qa"}), 404, "environment"),
        (json!({"environment": "prod"}), 409, "environment"),
        (json!({"service": "no-such-app"}), 404, "service"),
        (json!({"extra": 1}), 400, "extra"),
    ] {
        let mut body = base.clone();
        for (k, v) in change.as_object().unwrap() {
            body[k] = v.clone();
        }
        if body["seen"].is_null() {
            body.as_object_mut().unwrap().remove("seen");
        }
        let (got, refused) = promote(&tower, &body).await;
        assert_eq!(
            (got.as_u16(), refused["field"].as_str()),
            (status, Some(field)),
            "{body} → {refused}"
        );
    }
    assert_eq!(commits_to(&tower, "main", STAGING), 1, "only the hand edit");
}

#[tokio::test]
async fn an_entity_hangars_ingestor_did_not_write_owns_nothing() {
    let tower = Live::start(0.0).await.unwrap();
    // team-b's app, registered first under its name from a Location of Mallory's, naming
    // the guest's team-a as its owner: Backstage serves that entity for the name.
    let other = team_b_app();
    let mut entity = hangar_sim::stories::component(&other, "service", "group:default/team-a");
    entity["metadata"]["annotations"]["backstage.io/managed-by-location"] = json!(format!(
        "url:https://github.com/mallory/{other}/blob/main/catalog-info.yaml"
    ));
    tower.world.platform.register_entity(entity);
    let (status, access) = tower
        .get(&format!("/api/access?service={other}"))
        .await
        .unwrap();
    assert_eq!(status, 200);
    assert_eq!(access["mayPromote"], false, "{access}");
    let why = access["whyNot"].as_str().unwrap();
    assert!(
        why.contains("not written by Hangar's ingestor")
            && why.contains("url:https://github.com/mallory/"),
        "{why}"
    );
    promotion_refused(&tower, &other).await;
    // The ingestor's own entity of the guest's app still makes the guest its owner.
    let (_, own) = tower
        .get(&format!("/api/access?service={APP}"))
        .await
        .unwrap();
    assert_eq!(own["mayPromote"], true, "{own}");
}

#[tokio::test]
async fn argo_cd_syncs_an_environment_on_request_of_its_owner_only() {
    let tower = Live::start(0.0).await.unwrap();
    waiting_for(&tower, "staging").await;
    let sync = |body: Value| {
        let tower = &tower;
        async move {
            let response = tower
                .client()
                .post(tower.url("/api/argocd/sync"))
                .json(&body)
                .send()
                .await
                .unwrap();
            let status = response.status().as_u16();
            (status, response.json::<Value>().await.unwrap())
        }
    };
    let (status, answer) = sync(json!({"service": APP, "environment": "staging"})).await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["application"], format!("{APP}-staging"));
    let (status, forced) =
        sync(json!({"service": APP, "environment": "prod", "force": true})).await;
    assert_eq!((status, &forced["force"]), (200, &json!(true)), "{forced}");
    let asked: Vec<(String, String, bool)> = tower
        .world
        .served
        .argocd_syncs()
        .into_iter()
        .map(|s| (s.name, s.namespace, s.force))
        .collect();
    assert_eq!(
        asked,
        [
            (format!("{APP}-staging"), "argocd".to_owned(), false),
            (format!("{APP}-prod"), "argocd".to_owned(), true)
        ]
    );

    // Not the owner, an environment it does not have, bad input: refused, nothing asked.
    let other = team_b_app();
    for (body, status, field) in [
        (
            json!({"service": other, "environment": "staging"}),
            403,
            "service",
        ),
        (
            json!({"service": APP, "environment": "qa"}),
            404,
            "environment",
        ),
        (
            json!({"service": "no-such-app", "environment": "dev"}),
            404,
            "service",
        ),
        (
            json!({"service": APP, "environment": "dev", "force": "yes"}),
            400,
            "force",
        ),
        (json!({"service": APP}), 400, "environment"),
    ] {
        let (got, refused) = sync(body.clone()).await;
        assert_eq!(
            (got, refused["field"].as_str()),
            (status, Some(field)),
            "{body} → {refused}"
        );
    }
    assert_eq!(tower.world.served.argocd_syncs().len(), 2);
}

#[tokio::test]
async fn two_releases_compare_by_commits_pull_requests_runs_and_config() {
    let tower = Live::start(0.0).await.unwrap();
    waiting_for(&tower, "staging").await;
    // Pull requests are named once Tower has read the source repo's (its poller reads every
    // app's repos in turn).
    eventually(
        Duration::from_secs(30),
        "the app's pull requests read",
        || async {
            let (_, pulls) = tower.get(&format!("/api/pulls?service={APP}")).await.ok()?;
            let merged = pulls["pulls"]
                .as_array()?
                .iter()
                .filter(|p| p["repo"] == format!("acme/{APP}") && p["state"] == "merged")
                .count();
            (merged >= 3).then_some(())
        },
    )
    .await
    .unwrap();
    // The world started at any moment of the app's cadence: when its newest build has not
    // published its image yet, move the world on until every build has (by hand: it stands
    // still otherwise).
    let (_, runs) = tower
        .get(&format!("/api/pipelines?service={APP}&pipeline=build"))
        .await
        .unwrap();
    let building = runs["runs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["outcome"] == "running");
    if let Some(run) = building {
        let started: chrono::DateTime<chrono::Utc> =
            run["startedAt"].as_str().unwrap().parse().unwrap();
        let taken = (tower.world_now() - started).num_seconds();
        tower.advance_world(hangar_sim::stories::fleet::BUILD_TAKES - taken + 1);
    }
    // Each build's image is read from its TaskRuns, which Tower's watchers may land a
    // derivation after the PipelineRuns: wait until the matrix names three builds' runs.
    let built: Vec<Value> = eventually(
        Duration::from_secs(30),
        "three builds' runs in the matrix",
        || async {
            let (_, matrix) = tower.get(&releases_path()).await.ok()?;
            let built: Vec<Value> = matrix["releases"]
                .as_array()?
                .iter()
                .filter(|r| !r["run"].is_null())
                .cloned()
                .collect();
            (built.len() >= 3).then_some(built)
        },
    )
    .await
    .unwrap();
    let built: Vec<&Value> = built.iter().collect();
    let (newest, oldest) = (built[0], built[2]);
    let path = |from: &Value, to: &Value| {
        format!(
            "/api/releases/compare?service={APP}&from={}&to={}",
            from["image"].as_str().unwrap(),
            to["image"].as_str().unwrap()
        )
    };
    let (status, compared) = tower.get(&path(oldest, newest)).await.unwrap();
    assert_eq!(status, 200, "{compared}");
    // Either order reads older → newer.
    let (_, reversed) = tower.get(&path(newest, oldest)).await.unwrap();
    assert_eq!(reversed, compared);
    assert_eq!(compared["from"], oldest["image"]);
    assert_eq!(compared["to"], newest["image"]);
    assert_eq!(compared["repo"], format!("acme/{APP}"));

    // The two newer builds' commits, their pull requests and their runs.
    let commits: Vec<&str> = compared["commits"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["sha"].as_str().unwrap())
        .collect();
    let newer = [built[1], built[0]];
    let want: Vec<&str> = newer
        .iter()
        .map(|r| r["commit"].as_str().unwrap())
        .collect();
    assert_eq!(commits, want, "oldest first");
    assert_eq!(compared["total"], 2);
    let mut runs: Vec<&str> = compared["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r.as_str().unwrap())
        .collect();
    runs.sort_unstable();
    let mut want_runs: Vec<&str> = newer.iter().map(|r| r["run"].as_str().unwrap()).collect();
    want_runs.sort_unstable();
    assert_eq!(runs, want_runs);
    let minor = |r: &Value| -> u64 {
        r["version"]
            .as_str()
            .unwrap()
            .split('.')
            .nth(1)
            .unwrap()
            .parse()
            .unwrap()
    };
    let mut pulls: Vec<u64> = compared["pulls"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["number"].as_u64().unwrap())
        .collect();
    pulls.sort_unstable();
    let mut want_pulls: Vec<u64> = newer.iter().map(|r| minor(r) + 1_000).collect();
    want_pulls.sort_unstable();
    assert_eq!(pulls, want_pulls);
    // Every fourth release changes the app's cicd.yaml: its patch is the config diff.
    let config_changed = newer.iter().any(|r| minor(r) % 4 == 0);
    let config = compared["config"].as_array().unwrap();
    assert_eq!(!config.is_empty(), config_changed, "{compared}");
    for change in config {
        assert_eq!(change["path"], ".glidepath/cicd.yaml");
        assert!(change["patch"].as_str().unwrap().contains("+    tests:"));
    }

    // The same release twice, or one it does not have: refused, naming the field.
    for (path, status, field) in [
        (path(newest, newest), 400, "to"),
        (
            format!(
                "/api/releases/compare?service={APP}&from=ghcr.io/acme/x:0.0.1-aaaaaaa&to={}",
                newest["image"].as_str().unwrap()
            ),
            404,
            "from",
        ),
        (
            format!("/api/releases/compare?service={APP}&from=a%20b&to=c"),
            400,
            "from",
        ),
    ] {
        let (got, refused) = tower.get(&path).await.unwrap();
        assert_eq!(
            (got.as_u16(), refused["field"].as_str()),
            (status, Some(field)),
            "{path}"
        );
    }
}
