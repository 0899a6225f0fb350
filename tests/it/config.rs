//! The Config tab's routes against the simulated platform: a file read as a form, edits
//! written with comments kept, a save that opens one pull request (and a second that adds
//! to it), the same problems from the check and the save, a stale file and a non-owner
//! refused; the platform's stale ExternalSecret and failing composed resource on the tab
//! and amber on the fleet. Nothing is ever written to a cluster (`Live` checks on drop).

use hangar_sim::stories::fleet::{SteadyFleet, Trouble, PROJECT_ERROR};
use serde_json::{json, Value};

use crate::support::Live;

/// The demo fleet's app with `trouble`, and an untroubled one the guest owns.
pub(crate) fn apps(tower: &Live) -> (String, String, String) {
    let fleet = SteadyFleet::new(1, tower.world_now());
    let name = |t| fleet.troubled(t).unwrap().name.clone();
    let calm = fleet
        .apps
        .iter()
        .find(|a| a.trouble.is_none() && a.owner == "team-a" && a.name != "storefront")
        .unwrap()
        .name
        .clone();
    (
        name(Trouble::StaleSecret),
        name(Trouble::FailingComposed),
        calm,
    )
}

/// The open pull requests on `repo` whose branch is a Tower config branch.
async fn config_pulls(tower: &Live, repo: &str) -> Vec<Value> {
    crate::records::open_pulls(tower, repo, "tower/config-").await
}

/// The text of `path` on `branch` of `repo` in the simulated GitHub.
pub(crate) async fn file_on(tower: &Live, repo: &str, branch: &str, path: &str) -> String {
    use base64::Engine as _;
    let github = format!("http://{}", tower.world.served.github);
    let file: Value = reqwest::get(format!(
        "{github}/repos/{repo}/contents/{path}?ref={branch}"
    ))
    .await
    .unwrap()
    .json()
    .await
    .unwrap();
    let content = file["content"].as_str().unwrap().replace('\n', "");
    String::from_utf8(
        base64::engine::general_purpose::STANDARD
            .decode(content)
            .unwrap(),
    )
    .unwrap()
}

/// Where an app's prod values live in its GitOps repository.
const PROD_VALUES: &str = "glidepath/envs/prod.yaml";

/// `GET /api/config/file` for `app`'s prod values (200).
async fn prod_values(tower: &Live, app: &str) -> Value {
    let (status, file) = tower
        .get(&format!("/api/config/file?service={app}&file=env:prod"))
        .await
        .unwrap();
    assert_eq!(status, 200, "{file}");
    file
}

/// The changed lines of a unified diff (`+…`, `-…`; not the `+++`/`---` headers).
fn changed_lines(patch: &str) -> Vec<String> {
    patch
        .lines()
        .filter(|l| {
            (l.starts_with('+') || l.starts_with('-'))
                && !l.starts_with("+++")
                && !l.starts_with("---")
        })
        .map(str::to_owned)
        .collect()
}

/// Checks that the open config pull request from `branch` shows in its body exactly the
/// lines GitHub's compare of `main...branch` changes; how many.
async fn diff_shown_and_compared(tower: &Live, repo: &str, branch: &str) -> usize {
    let github = format!("http://{}", tower.world.served.github);
    let compare: Value = reqwest::get(format!("{github}/repos/{repo}/compare/main...{branch}"))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let compared: Vec<String> = compare["files"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|f| changed_lines(f["patch"].as_str().unwrap()))
        .collect();
    let pulls = config_pulls(tower, repo).await;
    let pull = pulls.iter().find(|p| p["head"]["ref"] == branch).unwrap();
    let body = pull["body"].as_str().unwrap();
    let shown = body
        .split("```diff\n")
        .nth(1)
        .and_then(|rest| rest.split("\n```").next())
        .unwrap();
    assert_eq!(changed_lines(shown), compared, "{body}");
    compared.len()
}

#[tokio::test]
async fn prod_values_are_edited_as_a_form_and_proposed_as_one_pull_request() {
    let tower = Live::start(0.0).await.unwrap();
    let (_, _, app) = apps(&tower);
    let repo = format!("acme/gitops-{app}");
    let path = PROD_VALUES;
    let file = prod_values(&tower, &app).await;
    assert_eq!(
        (&file["file"]["repo"], &file["file"]["path"]),
        (&json!(repo), &json!(path))
    );
    assert_eq!(file["branch"], "main");
    assert_eq!(file["access"]["mayPromote"], true, "{file}");
    let field = |form: &Value, path: &str| {
        form["fields"]
            .as_array()
            .unwrap()
            .iter()
            .find(|f| f["path"] == path)
            .cloned()
            .unwrap_or(Value::Null)
    };
    assert_eq!(field(&file["form"], "/replicas")["value"], "3");
    assert_eq!(field(&file["form"], "/env/LOG_FORMAT")["value"], "json");
    let base = file["text"].as_str().unwrap().to_owned();
    let seen = file["seen"].as_str().unwrap().to_owned();

    // A bad value: the check names the field, the save refuses with the same field.
    let bad = json!({"service": app, "file": "env:prod", "base": base, "text": base,
                     "edits": [{"path": "/replicas", "value": "0"}], "seen": seen});
    let (status, checked) = tower.post("/api/config/check", &bad).await;
    assert_eq!(status, 200, "{checked}");
    let problems = checked["form"]["problems"].as_array().unwrap().clone();
    assert_eq!(problems.len(), 1, "{checked}");
    assert_eq!(problems[0]["path"], "/replicas");
    let (status, refused) = tower.post("/api/config/save", &bad).await;
    assert_eq!(status, 422, "{refused}");
    assert_eq!(refused["field"], "/replicas");
    assert_eq!(refused["problems"], json!(problems));
    assert!(config_pulls(&tower, &repo).await.is_empty());

    // A draft that does not start from the file as GitHub holds it — here a base and text
    // that both grant privileges, with an innocent edit on top — is refused: a pull request
    // opened from it would show only the edit.
    let forged = format!("{base}podSecurity:\n  privileged: true\n");
    let lying = json!({"service": app, "file": "env:prod", "base": forged, "text": forged,
                       "edits": [{"path": "/replicas", "value": "4"}], "seen": seen});
    let (status, refused) = tower.post("/api/config/save", &lying).await;
    assert_eq!(
        (status, &refused["field"]),
        (409, &json!("base")),
        "{refused}"
    );
    assert!(config_pulls(&tower, &repo).await.is_empty());

    // A replica count and an env var: only those lines change, the comments stay.
    let good = json!({"service": app, "file": "env:prod", "base": base, "text": base,
                      "edits": [{"path": "/replicas", "value": "5"},
                                {"path": "/env/LOG_FORMAT", "value": "text"}],
                      "seen": seen});
    let (status, checked) = tower.post("/api/config/check", &good).await;
    assert_eq!(status, 200, "{checked}");
    assert_eq!(checked["form"]["problems"], json!([]));
    let changed: Vec<(String, String)> = checked["diff"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|l| l["change"] != "same")
        .map(|l| {
            (
                l["change"].as_str().unwrap().to_owned(),
                l["text"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    assert_eq!(
        changed,
        vec![
            (
                "removed".to_owned(),
                "replicas: 3   # one per zone in prod".to_owned()
            ),
            (
                "added".to_owned(),
                "replicas: 5   # one per zone in prod".to_owned()
            ),
            ("removed".to_owned(), "  LOG_FORMAT: json".to_owned()),
            ("added".to_owned(), "  LOG_FORMAT: text".to_owned()),
        ]
    );

    // Saved twice at once: one pull request, its branch holding exactly the checked text.
    let (a, b) = futures::join!(
        tower.post("/api/config/save", &good),
        tower.post("/api/config/save", &good)
    );
    assert_eq!((a.0, b.0), (200, 200), "{} {}", a.1, b.1);
    let mut outcomes = [
        a.1["outcome"].as_str().unwrap(),
        b.1["outcome"].as_str().unwrap(),
    ];
    outcomes.sort_unstable();
    assert_eq!(outcomes, ["opened", "unchanged"]);
    let pulls = config_pulls(&tower, &repo).await;
    assert_eq!(pulls.len(), 1, "{pulls:?}");
    let branch = pulls[0]["head"]["ref"].as_str().unwrap().to_owned();
    assert_eq!(
        file_on(&tower, &repo, &branch, path).await,
        checked["text"].as_str().unwrap()
    );
    assert!(pulls[0]["body"]
        .as_str()
        .unwrap()
        .contains("Requested in Tower by"));
    assert_eq!(
        file_on(&tower, &repo, "main", path).await,
        base,
        "main is untouched"
    );
    // The body's diff is what the branch changes, as GitHub compares it.
    assert_eq!(diff_shown_and_compared(&tower, &repo, &branch).await, 4);

    // The file now reads from the pull request's branch; a second change adds to it.
    let (_, again) = tower
        .get(&format!("/api/config/file?service={app}&file=env:prod"))
        .await
        .unwrap();
    assert_eq!(again["branch"], branch);
    assert_eq!(again["pull"]["number"], pulls[0]["number"]);
    let text = again["text"].as_str().unwrap().to_owned();
    let more = json!({"service": app, "file": "env:prod", "base": text, "text": text,
                      "edits": [{"path": "/env/FEATURE_SEARCH", "value": "on"}],
                      "seen": again["seen"]});
    let (status, saved) = tower.post("/api/config/save", &more).await;
    assert_eq!(
        (status, &saved["outcome"]),
        (200, &json!("updated")),
        "{saved}"
    );
    assert_eq!(config_pulls(&tower, &repo).await.len(), 1);
    // Its description says all it now does.
    assert_eq!(diff_shown_and_compared(&tower, &repo, &branch).await, 5);
    let on_branch: Value =
        serde_yaml_ng::from_str(&file_on(&tower, &repo, &branch, path).await).unwrap();
    assert_eq!(
        (&on_branch["env"]["FEATURE_SEARCH"], &on_branch["replicas"]),
        (&json!("on"), &json!(5))
    );

    // Loaded before that change: refused, never overwritten.
    let (status, stale) = tower
        .post(
            "/api/config/save",
            &json!({
        "service": app, "file": "env:prod", "base": text, "text": text,
        "edits": [{"path": "/replicas", "value": "4"}], "seen": again["seen"]}),
        )
        .await;
    assert_eq!((status, &stale["field"]), (409, &json!("seen")), "{stale}");
}

/// Tower adopts only the config pull requests it opened, and adds to no branch someone else
/// made: a person who makes the branch Tower would name for a save — then opens a pull
/// request from it, labelled as Tower labels its own — is neither joined nor taken for Tower.
#[tokio::test]
async fn a_branch_or_pull_request_someone_else_made_under_towers_name_is_not_adopted() {
    use base64::Engine as _;
    let tower = Live::start(0.0).await.unwrap();
    let (_, _, app) = apps(&tower);
    let repo = format!("acme/gitops-{app}");
    let path = PROD_VALUES;
    let file = prod_values(&tower, &app).await;
    let base = file["text"].as_str().unwrap().to_owned();
    let seen = file["seen"].as_str().unwrap().to_owned();
    let branch = tower_shared::hangar::config_branch("env:prod", Some(&seen));

    // Mallory, by hand on GitHub: the branch, with a commit of hers.
    let github = format!("http://{}", tower.world.served.github);
    let mallory = |request: reqwest::RequestBuilder| {
        request.header(
            "authorization",
            format!("token {}mallory", hangar_sim::github::USER_TOKEN_PREFIX),
        )
    };
    let http = reqwest::Client::new();
    let made = mallory(http.post(format!("{github}/repos/{repo}/git/refs")))
        .json(&json!({"ref": format!("refs/heads/{branch}"), "sha": "0123456789abcdef"}))
        .send()
        .await
        .unwrap();
    assert_eq!(made.status(), 201);
    let hers = format!("{base}podSecurity:\n  privileged: true\n");
    let put = mallory(http.put(format!("{github}/repos/{repo}/contents/{path}")))
        .json(&json!({"message": "tweak", "branch": branch, "sha": seen,
                      "content": base64::engine::general_purpose::STANDARD.encode(&hers)}))
        .send()
        .await
        .unwrap();
    assert!(put.status().is_success(), "{}", put.text().await.unwrap());

    let good = json!({"service": app, "file": "env:prod", "base": base, "text": base,
                      "edits": [{"path": "/replicas", "value": "5"}], "seen": seen});
    let (status, refused) = tower.post("/api/config/save", &good).await;
    assert_eq!(
        (status, &refused["field"]),
        (409, &json!("branch")),
        "{refused}"
    );
    assert!(
        refused["error"].as_str().unwrap().contains("mallory"),
        "{refused}"
    );

    // Then a pull request from it, labelled as Tower labels its own.
    let opened: Value = mallory(http.post(format!("{github}/repos/{repo}/pulls")))
        .json(&json!({"title": format!("Change {app}'s prod values"), "head": branch, "base": "main"}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let number = opened["number"].as_u64().unwrap();
    let labelled = mallory(http.post(format!("{github}/repos/{repo}/issues/{number}/labels")))
        .json(&json!({"labels": [tower_shared::hangar::CONFIG_LABEL]}))
        .send()
        .await
        .unwrap();
    assert!(labelled.status().is_success());
    // The Config tab does not take it for Tower's: the file reads from main, no pull of its.
    let file = prod_values(&tower, &app).await;
    assert_eq!(
        (&file["branch"], &file["pull"], &file["text"]),
        (&json!("main"), &Value::Null, &json!(base)),
        "{file}"
    );
    let (status, refused) = tower.post("/api/config/save", &good).await;
    assert_eq!(
        (status, &refused["field"]),
        (409, &json!("branch")),
        "{refused}"
    );
    assert!(
        refused["error"]
            .as_str()
            .unwrap()
            .contains(&format!("#{number}")),
        "{refused}"
    );
    assert_eq!(
        file_on(&tower, &repo, &branch, path).await,
        hers,
        "nothing added to hers"
    );
}

#[tokio::test]
async fn bad_drafts_and_a_non_owner_are_refused_with_the_field_named() {
    let tower = Live::start(0.0).await.unwrap();
    let (_, _, app) = apps(&tower);
    let base = "replicas: 2\n";
    let draft = |file: &str, edits: Value| json!({"service": app, "file": file, "base": base, "text": base, "edits": edits});
    for (body, status, field) in [
        (draft("env:nowhere", json!([])), 404, "file"),
        (draft("values", json!([])), 400, "file"),
        (
            draft("env:prod", json!([{"path": "replicas", "value": "2"}])),
            422,
            "replicas",
        ),
        (
            draft("env:prod", json!([{"path": "/image", "value": "latest"}])),
            422,
            "/image",
        ),
        (
            draft("cicd", json!([{"path": "/stages", "value": "x"}])),
            422,
            "/stages",
        ),
        (
            json!({"service": app, "file": "cicd", "base": "", "text": "", "sneaky": 1}),
            400,
            "sneaky",
        ),
        (
            json!({"service": "Not A Name", "file": "cicd", "base": "", "text": ""}),
            400,
            "service",
        ),
    ] {
        let (got, answer) = tower.post("/api/config/save", &body).await;
        assert_eq!(
            (got, answer["field"].as_str()),
            (status, Some(field)),
            "{body} → {answer}"
        );
    }
    // Someone else's app: the file reads, the save is refused with the reason.
    let other = SteadyFleet::new(1, tower.world_now())
        .apps
        .into_iter()
        .find(|a| a.owner == "team-b")
        .unwrap()
        .name;
    let (_, file) = tower
        .get(&format!("/api/config/file?service={other}&file=env:prod"))
        .await
        .unwrap();
    assert_eq!(file["access"]["mayPromote"], false);
    let text = file["text"].as_str().unwrap();
    let (status, refused) = tower
        .post(
            "/api/config/save",
            &json!({
        "service": other, "file": "env:prod", "base": text, "text": text,
        "edits": [{"path": "/replicas", "value": "4"}], "seen": file["seen"]}),
        )
        .await;
    assert_eq!(
        (status, &refused["field"]),
        (403, &json!("service")),
        "{refused}"
    );
    assert!(config_pulls(&tower, &format!("acme/gitops-{other}"))
        .await
        .is_empty());
}

#[tokio::test]
async fn a_stale_secret_and_a_failing_composed_resource_show_on_the_tab_and_the_fleet() {
    let tower = Live::start(0.0).await.unwrap();
    let (stale, failing, calm) = apps(&tower);
    let (status, tab) = tower
        .get(&format!("/api/config?service={stale}"))
        .await
        .unwrap();
    assert_eq!(status, 200, "{tab}");
    assert_eq!(tab["environments"], json!(["dev", "staging", "prod"]));
    let secrets = tab["secrets"].as_array().unwrap();
    assert_eq!(secrets.len(), 3, "{tab}");
    let prod = secrets.iter().find(|s| s["environment"] == "prod").unwrap();
    assert_eq!(
        (&prod["stale"], &prod["ready"], &prod["reason"]),
        (&json!(true), &json!(false), &json!("SecretSyncedError"))
    );
    assert_eq!(prod["keys"], json!(["DATABASE_URL", "PAYMENTS_API_KEY"]));
    assert_eq!(prod["refreshIntervalSec"], 3600);
    assert!(secrets
        .iter()
        .filter(|s| s["environment"] != "prod")
        .all(|s| s["stale"] == false));
    assert!(!tab
        .to_string()
        .contains(hangar_sim::stories::objects::SECRET_MARK));

    let (_, tab) = tower
        .get(&format!("/api/config?service={failing}"))
        .await
        .unwrap();
    let composed = &tab["composed"];
    assert_eq!(composed["name"], json!(failing));
    let resources = composed["resources"].as_array().unwrap();
    assert_eq!(resources.len(), 3, "{composed}");
    let project = resources.iter().find(|r| r["kind"] == "Project").unwrap();
    assert_eq!(
        (&project["ready"], &project["synced"]),
        (&json!(false), &json!(false))
    );
    assert_eq!(project["error"], PROJECT_ERROR);
    let repo = resources
        .iter()
        .find(|r| r["kind"] == "Repository")
        .unwrap();
    assert_eq!(repo["ready"], true);
    assert_eq!(repo["externalName"], json!(format!("gitops-{failing}")));

    // The fleet: the stale secret's prod cell and the failing app are amber, with reasons.
    let (_, fleet) = tower.get("/api/fleet").await.unwrap();
    let app = |name: &str| {
        fleet["apps"]
            .as_array()
            .unwrap()
            .iter()
            .find(|a| a["name"] == name)
            .cloned()
            .unwrap()
    };
    let stale_app = app(&stale);
    let prod_cell = stale_app["cells"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["environment"] == "prod")
        .unwrap()
        .clone();
    assert_eq!(
        prod_cell["troubles"],
        json!([{
            "source": "secrets",
            "severity": "attention",
            "words": format!(
                "Secret {stale}-secrets not synced: could not get secret data from provider"
            )
        }])
    );
    assert!(app(&failing)["platform"][0]
        .as_str()
        .unwrap()
        .contains(PROJECT_ERROR));
    assert!(app(&calm).get("platform").is_none(), "{}", app(&calm));
}
