//! A prod release's record drafted from what Tower reads of the simulated fleet: the
//! completing canary's release once it is live in prod — its transitions dev → staging →
//! prod with their times, every canary step passed, Argo CD synced and healthy, the
//! evidence Chains left, and the confidence score worked out from them.

use std::time::Duration as Wait;

use chrono::Duration;
use hangar_sim::stories::fleet::{Role, SteadyFleet, AWAITING_PROMOTION as APP};
use hangar_sim::stories::Story as _;
use serde_json::{json, Value};
use tower_shared::records::{draft, limit_of, SCHEMA};
use tower_shared::snapshot::Snapshot;

use crate::support::{eventually, Live};

/// What Tower would read of `fleet`'s world at `now`.
pub(crate) fn snapshot_at(fleet: &SteadyFleet, now: chrono::DateTime<chrono::Utc>) -> Snapshot {
    let mut clusters: std::collections::BTreeMap<String, Vec<serde_json::Value>> =
        std::collections::BTreeMap::new();
    for (cluster, object) in fleet.objects_at(now) {
        clusters.entry(cluster).or_default().push(object);
    }
    Snapshot::from_json(
        &serde_json::json!({"now": now, "controlPlaneCluster": "dev", "clusters": clusters})
            .to_string(),
    )
    .unwrap()
}

#[test]
fn a_release_live_in_prod_is_drafted_with_its_journey_gates_evidence_and_score() {
    let start: chrono::DateTime<chrono::Utc> = "2026-11-30T08:00:00Z".parse().unwrap();
    let fleet = SteadyFleet::new(1, start);
    let app = fleet.app(Role::CompletingCanary).unwrap();
    // Half an hour into its next prod rollout: the canary has walked 20 → 40 → 80 % and is
    // the stable version.
    let at = app.prod_rollout_at(start) + Duration::minutes(30);
    let image = app.prod_image(at);
    let snapshot = snapshot_at(&fleet, at);
    let service = app.name.as_str();
    let releases = tower_shared::releases::of_snapshot(&snapshot, service);
    let release = releases
        .releases
        .iter()
        .find(|r| r.image == image)
        .expect("the release in the matrix");
    let pipelines = tower_shared::pipelines::derive(&snapshot, service);
    let deployments = tower_shared::deployments::derive_deployments(&snapshot, service);
    let prod = deployments
        .environments
        .iter()
        .flatten()
        .find(|e| e.name == "prod");
    let record = draft(release, service, &pipelines, prod, None, None);

    assert_eq!(record.schema, SCHEMA);
    assert_eq!(record.image, image);
    let journey: Vec<(&str, Option<i64>)> = record
        .transitions
        .iter()
        .map(|t| (t.environment.as_str(), t.after_seconds))
        .collect();
    // Built, in dev 6 minutes later, staging an hour after, prod three hours after its build.
    assert_eq!(
        journey,
        [
            ("dev", Some(360)),
            ("staging", Some(3_600)),
            ("prod", Some(7_200))
        ]
    );
    let steps: Vec<(&str, Option<bool>)> = record
        .gates
        .iter()
        .filter(|g| g.name.starts_with("canary step"))
        .map(|g| (g.name.as_str(), g.passed))
        .collect();
    assert_eq!(steps.len(), 6, "{:?}", record.gates);
    assert!(
        steps.iter().all(|(_, passed)| *passed == Some(true)),
        "{steps:?}"
    );
    assert!(record
        .gates
        .iter()
        .any(|g| g.name == format!("Argo CD {service}-prod") && g.passed == Some(true)));
    assert_eq!(record.pulls, None, "not compared: said, not invented");
    // Chains signs this app's builds: all four pieces of evidence, read from prod.
    let evidence = record.evidence.as_ref().expect("evidence read in prod");
    assert_eq!(evidence.signing, tower_shared::evidence::Signing::Signed);
    assert!(evidence.provenance && evidence.signature && evidence.sbom && evidence.transparency);
    assert!(record
        .digest
        .as_deref()
        .is_some_and(|d| d.starts_with("sha256:")));

    // The score, from the same facts: soaked two hours in staging; no analysis; change
    // size unknown (not compared); no rollbacks.
    let factor = |name: &str| {
        record
            .confidence
            .factors
            .iter()
            .find(|f| f.name == name)
            .unwrap()
            .clone()
    };
    assert_eq!(factor("soak").read, "2h 00m in staging");
    assert!((factor("soak").value - 2.0 / 24.0).abs() < 1e-9);
    assert_eq!(factor("analysis").read, "no analysis ran");
    assert!(factor("change size").read.starts_with("unknown"));
    assert_eq!(factor("rollbacks").points, 10.0);
    assert_eq!(factor("evidence").points, 20.0);
    assert_eq!(factor("runs").read, "1 of 1 run passed");
    let sum: f64 = record.confidence.factors.iter().map(|f| f.points).sum();
    assert!((sum - record.confidence.score).abs() <= 0.05 + 1e-9);
    assert_eq!(limit_of("result[0] < 0.01"), Some(0.01));
    assert_eq!(limit_of("result[0] <= 5"), Some(5.0));
    assert_eq!(limit_of("result[0] > 0.99"), None);
}

/// The open pull requests of `repo` on the simulated GitHub whose branch starts with `prefix`.
pub(crate) async fn open_pulls(tower: &Live, repo: &str, prefix: &str) -> Vec<Value> {
    let github = format!("http://{}", tower.world.served.github);
    let pulls: Vec<Value> = reqwest::get(format!(
        "{github}/repos/{repo}/pulls?state=open&per_page=100"
    ))
    .await
    .unwrap()
    .json()
    .await
    .unwrap();
    pulls
        .into_iter()
        .filter(|p| {
            p["head"]["ref"]
                .as_str()
                .is_some_and(|b| b.starts_with(prefix))
        })
        .collect()
}

async fn post_notes(tower: &Live, body: &Value) -> (u16, Value) {
    tower.post("/api/records/notes", body).await
}

async fn get_bytes(tower: &Live, path: &str) -> (u16, String, Vec<u8>) {
    let response = tower.client().get(tower.url(path)).send().await.unwrap();
    let status = response.status().as_u16();
    let kind = response
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    (status, kind, response.bytes().await.unwrap().to_vec())
}

/// `pdf` written to a file of a new temporary folder (kept while the folder lives).
fn pdf_file(pdf: &[u8]) -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("record.pdf");
    std::fs::write(&file, pdf).unwrap();
    (dir, file)
}

/// `pdftotext -raw` of `pdf`, its whitespace folded: the PDF's searchable text.
pub(crate) fn pdf_text(pdf: &[u8]) -> String {
    let (_dir, file) = pdf_file(pdf);
    let out = std::process::Command::new("pdftotext")
        .args(["-raw", "-enc", "UTF-8"])
        .arg(&file)
        .arg("-")
        .output()
        .expect("pdftotext (poppler-utils; `cargo xtask test` installs it)");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}

/// Page 1 of `pdf` as `target/screenshots/<name>.png` (pdftoppm).
pub(crate) fn pdf_page_one(pdf: &[u8], name: &str) {
    let (_dir, file) = pdf_file(pdf);
    let shots = crate::support::root().join("target/screenshots");
    std::fs::create_dir_all(&shots).unwrap();
    let status = std::process::Command::new("pdftoppm")
        .args(["-png", "-r", "80", "-f", "1", "-l", "1", "-singlefile"])
        .arg(&file)
        .arg(shots.join(name))
        .status()
        .expect("pdftoppm (poppler-utils)");
    assert!(status.success());
    assert!(shots.join(format!("{name}.png")).exists());
}

#[tokio::test]
async fn a_release_tower_takes_to_prod_is_written_up_once_and_people_add_their_part_by_pull_request(
) {
    let tower = Live::start(0.0).await.unwrap();
    // Three replicas' recorders, all looking at once.
    let recorders: Vec<_> = (0..3).map(|_| tower.record_releases()).collect();
    let image = crate::promotions::live_in_prod(&tower).await;
    let release = tower_shared::image::release_name(&image)
        .unwrap()
        .to_owned();
    let repo = format!("acme/gitops-{APP}");
    let branch = tower_shared::hangar::record_branch(&release);

    // The record's pull request opens by itself: one, whatever the replicas. GitHub labels a
    // pull request in a second call after opening it, so the wait is for the labelled one.
    let pr = eventually(
        Wait::from_secs(30),
        "the record's labelled pull request",
        || async {
            let found = open_pulls(&tower, &repo, &branch).await;
            found
                .iter()
                .any(|p| p["labels"].as_array().is_some_and(|l| !l.is_empty()))
                .then_some(found)
        },
    )
    .await
    .unwrap();
    assert_eq!(pr.len(), 1, "{pr:?}");
    let number = pr[0]["number"].as_u64().unwrap();
    assert_eq!(pr[0]["title"], format!("Release record: {APP} {release}"));
    assert_eq!(pr[0]["labels"][0]["name"], "tower-release-record");
    assert!(pr[0]["body"]
        .as_str()
        .unwrap()
        .ends_with("Requested in Tower by tower:release-recorder"));

    // Listed as proposed; its human part waits for the merge.
    let list = format!("/api/records?service={APP}");
    let (status, page) = tower.get(&list).await.unwrap();
    assert_eq!(status, 200, "{page}");
    let row = page["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["release"] == release.as_str())
        .cloned()
        .expect("the record listed");
    assert_eq!(row["proposed"]["number"], number);
    let path = format!("/api/records/record?service={APP}&release={release}");
    let (_, answer) = tower.get(&path).await.unwrap();
    let record = &answer["record"];
    assert_eq!(record["image"], image.as_str());
    assert_eq!(answer["seen"], Value::Null);
    // The promotion that took it to prod is one of its gates, with who opened it.
    assert!(record["gates"].as_array().unwrap().iter().any(|g| g["name"]
        .as_str()
        .unwrap()
        .starts_with("promotion to prod: pull request #")
        && g["passed"] == true));
    // Compared with the release before it in prod: the pull requests that went in, each
    // with its author and reviewers.
    let pulls = record["pulls"]
        .as_array()
        .expect("compared with the previous prod release");
    assert!(!pulls.is_empty(), "{record}");
    assert!(
        pulls
            .iter()
            .all(|p| p["author"].is_string() && p["reviewers"].is_array()),
        "{pulls:?}"
    );

    let human = json!({"summary": "Checkout is faster.", "risk": "medium",
                       "checked": "Canary analysis and a look at the dashboards.",
                       "signOff": true});
    let (status, refused) = post_notes(
        &tower,
        &json!({"service": APP, "release": release, "human": human, "seen": "0123456789abcdef"}),
    )
    .await;
    assert_eq!(
        (status, &refused["field"]),
        (409, &json!("release")),
        "{refused}"
    );
    assert!(refused["error"]
        .as_str()
        .unwrap()
        .contains(&format!("merge pull request #{number} first")));

    crate::promotions::merge(&tower, &repo, number).await;
    let seen = eventually(Wait::from_secs(30), "the record merged", || async {
        let (_, answer) = tower.get(&path).await.ok()?;
        answer["seen"].as_str().map(str::to_owned)
    })
    .await
    .unwrap();
    // Merged: no replica proposes it again.
    let mut another = tower_backend::records::Recorder::new(tower_backend::state::AppState::live(
        tower.live.clone(),
    ))
    .unwrap();
    another.look().await;
    assert!(open_pulls(&tower, &repo, &branch).await.is_empty());

    // The browser's rules, refused by the backend with the same field and words.
    let mut empty = human.clone();
    empty["summary"] = json!("  ");
    let (status, bad) = post_notes(
        &tower,
        &json!({"service": APP, "release": release, "human": empty, "seen": seen}),
    )
    .await;
    assert_eq!(
        (status, &bad["field"]),
        (400, &json!("human.summary")),
        "{bad}"
    );
    assert_eq!(bad["error"], "write a plain summary");
    // Nobody signs off in another's name, or at another time: Tower writes who and when.
    let mut forged = human.clone();
    forged["signedOff"] =
        json!({"by": "someone-else", "at": tower.world_now() - Duration::days(1)});
    let (status, bad) = post_notes(
        &tower,
        &json!({"service": APP, "release": release, "human": forged, "seen": seen}),
    )
    .await;
    assert_eq!(
        (status, &bad["field"]),
        (400, &json!("human.signedOff")),
        "{bad}"
    );
    assert!(
        bad["error"].as_str().unwrap().contains("signedOff"),
        "{bad}"
    );

    // Proposed by pull request, once however often it is sent.
    let body = json!({"service": APP, "release": release, "human": human, "seen": seen});
    let (status, first) = post_notes(&tower, &body).await;
    assert_eq!(
        (status, &first["outcome"]),
        (200, &json!("pull-request-opened")),
        "{first}"
    );
    let (_, again) = post_notes(&tower, &body).await;
    assert_eq!(again["outcome"], "pull-request-existing");
    assert_eq!(again["pull"], first["pull"]);
    let notes = first["pull"]["number"].as_u64().unwrap();
    let (_, answer) = tower.get(&path).await.unwrap();
    assert_eq!(answer["notes"][0]["number"], notes);
    assert_eq!(
        answer["record"]["human"],
        Value::Null,
        "not before the merge"
    );

    let signed_at = tower.world_now();
    crate::promotions::merge(&tower, &repo, notes).await;
    let merged = eventually(Wait::from_secs(30), "the human part merged", || async {
        let (_, answer) = tower.get(&path).await.ok()?;
        (answer["record"]["human"]["risk"] == "medium").then_some(answer)
    })
    .await
    .unwrap();
    // Signed off by the caller, at Tower's time when it was sent.
    let sign = &merged["record"]["human"]["signedOff"];
    assert_eq!(sign["by"], merged["access"]["subject"], "{merged}");
    let at: chrono::DateTime<chrono::Utc> = serde_json::from_value(sign["at"].clone()).unwrap();
    assert!(
        at <= signed_at && signed_at - at < Duration::minutes(5),
        "signed at {at}, sent by {signed_at}"
    );
    let count = |query: &'static str| {
        let tower = &tower;
        let release = release.clone();
        async move {
            let (status, page) = tower
                .get(&format!("/api/records?service={APP}{query}"))
                .await
                .unwrap();
            assert_eq!(status, 200, "{page}");
            page["rows"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|r| r["release"] == release.as_str())
                .count()
        }
    };
    assert_eq!(count("&risk=medium").await, 1);
    assert_eq!(count("&risk=high").await, 0);
    assert_eq!(count("&signedOff=true").await, 1);
    assert_eq!(count("&signedOff=false").await, 0);
    let (status, bad) = tower
        .get(&format!("/api/records?service={APP}&risk=severe"))
        .await
        .unwrap();
    assert_eq!((status.as_u16(), &bad["field"]), (400, &json!("risk")));

    // Exported: a self-contained page and a PDF whose text says it all.
    let export = |format: &str| {
        format!("/api/records/export?service={APP}&release={release}&format={format}")
    };
    let (status, kind, html) = get_bytes(&tower, &export("html")).await;
    assert_eq!((status, kind.as_str()), (200, "text/html; charset=utf-8"));
    let html = String::from_utf8(html).unwrap();
    assert!(html.contains(&image) && html.contains("Checkout is faster."));
    assert!(
        !html.contains("src=") && !html.contains("<link"),
        "no external assets"
    );
    let (status, kind, pdf) = get_bytes(&tower, &export("pdf")).await;
    assert_eq!((status, kind.as_str()), (200, "application/pdf"));
    assert!(pdf.starts_with(b"%PDF-"));
    let text = pdf_text(&pdf);
    let (_, answer) = tower.get(&path).await.unwrap();
    let record: tower_shared::records::Record =
        serde_json::from_value(answer["record"].clone()).unwrap();
    assert!(text.contains(record.version.as_deref().unwrap()), "{text}");
    for pull in record.pulls.as_ref().unwrap() {
        assert!(text.contains(&pull.title), "{} not in {text}", pull.title);
    }
    assert!(
        text.contains(&format!(
            "Confidence score: {:.1} of 100",
            record.confidence.score
        )),
        "{text}"
    );
    for factor in &record.confidence.factors {
        assert!(
            text.contains(&format!(
                "{} {} {:.2} {} {:.1}",
                factor.name, factor.read, factor.value, factor.weight, factor.points
            )),
            "factor {} not in {text}",
            factor.name
        );
    }
    pdf_page_one(&pdf, "release-record-pdf");
    let (status, bad) = tower.get(&export("docx")).await.unwrap();
    assert_eq!((status.as_u16(), &bad["field"]), (400, &json!("format")));
    for recorder in recorders {
        recorder.abort();
    }
}

/// The weights of `docs/confidence.md`'s table, by factor.
fn documented_weights() -> Vec<(String, f64)> {
    let doc = std::fs::read_to_string(crate::support::root().join("docs/confidence.md")).unwrap();
    doc.lines()
        .filter_map(|line| {
            let cells: Vec<&str> = line.split('|').map(str::trim).collect();
            let weight = cells.get(2)?.parse::<f64>().ok()?;
            Some((cells.get(1)?.to_string(), weight))
        })
        .collect()
}

#[test]
fn the_documented_table_recomputes_a_drafted_records_score_and_the_cli_prints_it() {
    let start: chrono::DateTime<chrono::Utc> = "2026-11-30T08:00:00Z".parse().unwrap();
    let fleet = SteadyFleet::new(1, start);
    let app = fleet.app(Role::CompletingCanary).unwrap();
    let at = app.prod_rollout_at(start) + Duration::minutes(30);
    let snapshot = snapshot_at(&fleet, at);
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("snapshot.json");
    std::fs::write(&file, serde_json::to_string(&snapshot).unwrap()).unwrap();
    let release = tower_shared::image::release_name(&app.prod_image(at))
        .unwrap()
        .to_owned();
    let run = |format: &str, release: &str| {
        std::process::Command::new(crate::support::tower_bin())
            .args(["release-record", "--snapshot"])
            .arg(&file)
            .args([
                "--service",
                &app.name,
                "--release",
                release,
                "--format",
                format,
            ])
            .output()
            .unwrap()
    };
    let out = run("json", &release);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let record: tower_shared::records::Record = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(record.release, release);
    assert_eq!(
        record.pulls, None,
        "offline nothing is compared: unknown, said"
    );

    // By hand from the documented table and the record's own facts: its build passed
    // (runs 1), no analysis (0), two hours in staging (2 / 24), four pieces of evidence (1),
    // change size not compared (0), no rollbacks (1).
    let weights = documented_weights();
    assert_eq!(
        weights.iter().map(|(n, _)| n.as_str()).collect::<Vec<_>>(),
        tower_shared::records::WEIGHTS
            .iter()
            .map(|(n, _)| *n)
            .collect::<Vec<_>>()
    );
    let weight = |name: &str| weights.iter().find(|(n, _)| n == name).unwrap().1;
    let soak =
        record.transitions[2].arrived_at.unwrap() - record.transitions[1].arrived_at.unwrap();
    let by_hand = weight("runs") * 1.0
        + weight("analysis") * 0.0
        + weight("soak") * (soak.num_seconds() as f64 / 3_600.0 / 24.0).min(1.0)
        + weight("evidence") * 4.0 / 4.0
        + weight("change size") * 0.0
        + weight("rollbacks") * 1.0 / (1.0 + 0.0);
    assert_eq!(record.confidence.score, (by_hand * 10.0).round() / 10.0);

    let pdf = run("pdf", record.version.as_deref().unwrap());
    assert!(pdf.status.success());
    let text = pdf_text(&pdf.stdout);
    assert!(
        text.contains(&format!(
            "Confidence score: {:.1} of 100",
            record.confidence.score
        )),
        "{text}"
    );
    assert!(
        text.contains("Not known: Tower could not compare"),
        "{text}"
    );
    let html = run("html", &release);
    assert!(String::from_utf8_lossy(&html.stdout).starts_with("<!doctype html>"));

    let missing = run("json", "9.9.9");
    assert_eq!(missing.status.code(), Some(2));
    let said = String::from_utf8_lossy(&missing.stderr);
    assert!(
        said.contains("has no release 9.9.9 in the snapshot") && said.contains(&release),
        "{said}"
    );
    let bad = run("docx", &release);
    assert_eq!(bad.status.code(), Some(2));
}

/// Words of the scripts the PDF's font draws: Latin with its accents, Greek, Cyrillic,
/// digits and a few symbols.
const DRAWN: &str = "[a-zA-Z0-9à-öø-ÿĀ-žΑ-ΡΣ-ωА-яЁё→✓€—]{1,24}";

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig {
        cases: 48,
        ..proptest::prelude::ProptestConfig::default()
    })]

    /// Whatever a person writes in those scripts reads back from the PDF as written (before,
    /// every character outside WinAnsi read back as "?").
    #[test]
    fn notes_in_any_script_the_font_draws_read_back_from_the_pdf(
        title in proptest::collection::vec(DRAWN, 1..4),
        notes in proptest::collection::vec(DRAWN, 1..60),
    ) {
        let (title, notes) = (title.join(" "), notes.join(" "));
        let record: tower_shared::records::Record = serde_json::from_value(json!({
            "schema": SCHEMA, "service": title, "release": "1.0.0-aaaaaaa",
            "image": "ghcr.io/acme/shop:1.0.0-aaaaaaa", "transitions": [], "gates": [],
            "confidence": {"score": 0.0, "factors": []},
            "human": {"summary": notes, "risk": "low", "checked": notes},
        }))
        .unwrap();
        let text = pdf_text(&tower_backend::export::pdf(&record));
        proptest::prop_assert!(text.contains(&format!("Release record: {title}")), "{text}");
        proptest::prop_assert!(text.contains(&notes), "{notes:?} not in {text}");
    }
}
