//! From a change in the platform to the screen, in headless Chromium against Tower reading
//! the simulated platform through its real clients: a pull request merged on GitHub (no
//! Kubernetes change at all) and Kubernetes objects changing reach an open page within
//! seconds, through `/api/events` — and the page, `/api/provisioning` and `/api/events` tell
//! the same time on Tower's clock while the world runs at 20×.

use std::time::Duration;

use anyhow::Context as _;
use chrono::{DateTime, Utc};
use fantoccini::Locator;
use serde_json::Value;

use crate::support::{eventually, eventually_every, Browser, Live};

/// The texts of every element matching `css`, read in one go inside the page.
async fn texts(c: &fantoccini::Client, css: &str) -> anyhow::Result<Vec<String>> {
    let found = c
        .execute(
            "return Array.from(document.querySelectorAll(arguments[0])).map(e => e.innerText.trim());",
            vec![serde_json::json!(css)],
        )
        .await?;
    Ok(serde_json::from_value(found)?)
}

/// Opens the page at `path` signed in as the demo's guest and waits for `css` and for the
/// page to follow `/api/events`.
async fn open(browser: &Browser, tower: &Live, path: &str, css: &str) -> anyhow::Result<()> {
    let c = &browser.client;
    c.goto(&tower.url(path)).await?;
    for wanted in [css, "html[data-live]"] {
        c.wait()
            .at_most(Duration::from_secs(20))
            .for_element(Locator::Css(wanted))
            .await
            .with_context(|| format!("{path} never showed {wanted}"))?;
    }
    Ok(())
}

fn every_revision(tower: &Live) -> Vec<u64> {
    tower
        .world
        .platform
        .clusters()
        .map(|(_, store)| store.revision())
        .collect()
}

#[tokio::test]
async fn a_merged_pull_request_reaches_the_page_within_two_seconds() {
    // The world stands still: nothing but the merge changes.
    let tower = Live::start(0.0).await.unwrap();
    let browser = Browser::start().await.unwrap();
    let github = format!("http://{}", tower.world.served.github);
    browser
        .checked("merged-pr", async {
            let c = &browser.client;
            let http = reqwest::Client::new();
            // Someone asks for a new service: a request PR in the tenants repo.
            let tenants = format!("{github}/repos/acme/hangar-tenants");
            let created = http
                .post(format!("{tenants}/git/refs"))
                .json(&serde_json::json!({"ref": "refs/heads/request-wallet", "sha": "0".repeat(40)}))
                .send()
                .await?;
            anyhow::ensure!(created.status().is_success(), "ref: {}", created.status());
            let opened: Value = http
                .post(format!("{tenants}/pulls"))
                .json(&serde_json::json!({"title": "Create Go wallet", "head": "request-wallet", "base": "main"}))
                .send()
                .await?
                .json()
                .await?;
            let number = opened["number"].as_u64().context("no PR number")?;
            open(&browser, &tower, "/tower?view=services", ".strip-row").await?;
            // The current step of wallet's row, once it is there.
            let current = || async {
                let rows: Vec<(String, String)> = serde_json::from_value(
                    c.execute(
                        "return Array.from(document.querySelectorAll('.pending .strip-row'))
                            .map(r => [r.querySelector('.strip-name').innerText, r.querySelector('.current').innerText]);",
                        vec![],
                    )
                    .await?,
                )?;
                anyhow::Ok(rows.into_iter().find(|(name, _)| name == "wallet").map(|(_, c)| c))
            };
            let before = eventually_every(Duration::from_millis(50), Duration::from_secs(10), "the request on the page", || async {
                current().await
            })
            .await?;
            anyhow::ensure!(before.starts_with("Request PR merged"), "{before}");
            let revisions = every_revision(&tower);

            // A person presses "Merge" on GitHub.
            let merged_at = std::time::Instant::now();
            let merge = http
                .put(format!("{tenants}/pulls/{number}/merge"))
                .send()
                .await?;
            anyhow::ensure!(merge.status().is_success(), "merge: {}", merge.status());
            let after = eventually_every(Duration::from_millis(50), Duration::from_secs(10), "the merge on the page", || async {
                Ok(current().await?.filter(|c| c.starts_with("Request applied")))
            })
            .await?;
            let took = merged_at.elapsed();
            println!("pull request merged → page: {} ms", took.as_millis());
            browser.check_page("merged-pr").await?;
            anyhow::ensure!(
                took < Duration::from_secs(2),
                "the page took {took:?} to show the merge ({after})"
            );
            anyhow::ensure!(
                every_revision(&tower) == revisions,
                "no Kubernetes object changed: the page followed GitHub"
            );
            Ok(())
        })
        .await
        .unwrap();
    browser.close().await.unwrap();
}

/// The p-th percentile (0–100) of `sorted`.
fn percentile(sorted: &[Duration], p: usize) -> Duration {
    sorted[(sorted.len() - 1) * p / 100]
}

#[tokio::test]
async fn kubernetes_changes_reach_the_page_quickly() {
    const CHANGES: usize = 20;
    let tower = Live::start(0.0).await.unwrap();
    let browser = Browser::start().await.unwrap();
    // A calm app's dev Application on the control plane.
    let store = tower.world.platform.store("dev").unwrap();
    let (_, fleet) = tower.get("/api/fleet").await.unwrap();
    let application = store
        .objects()
        .into_iter()
        .find(|o| {
            o["kind"] == "Application"
                && o["metadata"]["labels"]["hangar.io/environment"] == "dev"
                && o["status"]["health"]["status"] == "Healthy"
                && fleet["apps"].as_array().unwrap().iter().any(|a| {
                    a["name"] == o["metadata"]["labels"]["hangar.io/app"]
                        && a["cells"].as_array().unwrap().iter().all(|c| {
                            c["health"] == "Healthy"
                                && c["sync"] == "Synced"
                                && (c["rollout"].is_null() || c["rollout"]["phase"] == "Healthy")
                        })
                })
        })
        .expect("a calm app");
    let app = application["metadata"]["labels"]["hangar.io/app"]
        .as_str()
        .unwrap()
        .to_owned();
    browser
        .checked("kubernetes-changes", async {
            let c = &browser.client;
            open(&browser, &tower, "/", "table.matrix tbody tr").await?;
            // The page notes when the app's row changes, on the browser's clock (the change
            // is stamped on the same clock just before it is made).
            c.execute(
                "const app = arguments[0];
                 window.__changes = [];
                 const row = () => Array.from(document.querySelectorAll('table.matrix tbody tr'))
                     .find(r => r.querySelector('.app-name')?.innerText === app);
                 window.__last = row()?.innerText;
                 new MutationObserver(() => {
                     const text = row()?.innerText;
                     if (text !== window.__last) { window.__last = text; window.__changes.push([Date.now(), text]); }
                 }).observe(document.body, {subtree: true, childList: true, characterData: true});",
                vec![serde_json::json!(app)],
            )
            .await?;
            let mut latencies = Vec::new();
            for i in 0..CHANGES {
                let health = if i % 2 == 0 { "Degraded" } else { "Healthy" };
                let mut changed = application.clone();
                changed["status"]["health"]["status"] = health.into();
                let at: i64 =
                    serde_json::from_value(c.execute("return Date.now();", vec![]).await?)?;
                anyhow::ensure!(tower.world.platform.set_object("dev", changed));
                let seen = eventually_every(Duration::from_millis(50), Duration::from_secs(10), "the change on the page", || async {
                    let changes: Vec<(i64, String)> = serde_json::from_value(
                        c.execute("return window.__changes;", vec![]).await?,
                    )?;
                    Ok(changes
                        .into_iter()
                        .find(|(t, text)| *t >= at && text.contains(health)))
                })
                .await?;
                latencies.push(Duration::from_millis(u64::try_from(seen.0 - at)?));
                if i == 0 {
                    browser.check_page("kubernetes-change").await?;
                }
            }
            latencies.sort();
            let (p50, p95) = (percentile(&latencies, 50), percentile(&latencies, 95));
            println!(
                "Kubernetes change → page, {CHANGES} changes: p50 {} ms, p95 {} ms, max {} ms",
                p50.as_millis(),
                p95.as_millis(),
                latencies.last().unwrap().as_millis()
            );
            anyhow::ensure!(p95 < Duration::from_secs(2), "p95 {p95:?}");
            Ok(())
        })
        .await
        .unwrap();
    browser.close().await.unwrap();
}

/// Seconds in a compact duration as the page writes it: "45s", "4m 05s", "3h 20m", "2d 4h".
fn seconds(text: &str) -> Option<i64> {
    text.split_whitespace()
        .map(|part| {
            let (number, unit) = part.split_at(part.find(|c: char| !c.is_ascii_digit())?);
            let n: i64 = number.parse().ok()?;
            Some(match unit {
                "s" => n,
                "m" => n * 60,
                "h" => n * 3600,
                "d" => n * 86_400,
                _ => return None,
            })
        })
        .sum()
}

/// The compact duration in `text` right after `marker`.
fn duration_after(text: &str, marker: &str) -> Option<i64> {
    let rest = &text[text.find(marker)? + marker.len()..];
    let words: Vec<&str> = rest
        .split_whitespace()
        .take_while(|w| w.chars().next().is_some_and(|c| c.is_ascii_digit()))
        .collect();
    seconds(&words.join(" "))
}

fn time(value: &Value) -> DateTime<Utc> {
    serde_json::from_value(value.clone()).expect("a time")
}

#[test]
fn compact_durations_read_back() {
    assert_eq!(seconds("45s"), Some(45));
    assert_eq!(seconds("4m 05s"), Some(245));
    assert_eq!(seconds("3h 20m"), Some(12_000));
    assert_eq!(seconds("soon"), None);
    assert_eq!(duration_after("data from 2m 10s ago", "from "), Some(130));
}

#[tokio::test]
async fn the_page_and_the_api_tell_the_same_time_at_twenty_times_speed() {
    // How far (world seconds) the page may be from the API: what the world moves while a
    // page is read (a fraction of a real second at 20×), not the minutes a second clock
    // would be off.
    const SLACK: i64 = 15;
    let tower = Live::start(20.0).await.unwrap();
    let browser = Browser::start().await.unwrap();
    let mut events = tower
        .client()
        .get(tower.url("/api/events"))
        .send()
        .await
        .unwrap();
    let mut seen = String::new();

    // A running step whose start is known and that the world never finishes (the demo's
    // `events-bus` waits for its environment file for good), so it still runs, at 20×,
    // whenever the page is read.
    // Its "First environment up" step: other steps may show running only until Tower has
    // read everything (the catalog, GitHub), then end.
    let service = "events-bus".to_owned();
    let step = "first-environment".to_owned();
    eventually(
        Duration::from_secs(20),
        "events-bus's step running",
        || async {
            let (_, provisioning) = tower.get("/api/provisioning").await.ok()?;
            provisioning["services"]
                .as_array()?
                .iter()
                .find(|s| s["name"] == service.as_str())?["steps"]
                .as_array()?
                .iter()
                .find(|st| st["id"] == step.as_str())
                .filter(|st| st["status"] == "running" && st["startedAt"].is_string())
                .map(|_| ())
        },
    )
    .await
    .unwrap();

    // The prod cluster goes away; GitHub's limit is spent for 30 real seconds.
    assert!(tower.world.served.set_cluster_up("prod", false));
    tower.spend_github_rate_limit(30).await.unwrap();

    // /api/events: the limit's end and the cluster's last answer, on Tower's clock.
    let event = |name: &'static str, seen: &str| -> Option<Value> {
        seen.split("\n\n")
            .filter(|e| e.starts_with(&format!("event: {name}\n")))
            .filter_map(|e| e.lines().find_map(|l| l.strip_prefix("data: ")))
            .filter_map(|d| serde_json::from_str::<Value>(d).ok())
            .last()
    };
    let (github_event, stale_event) = tokio::time::timeout(Duration::from_secs(20), async {
        loop {
            if let (Some(g), Some(s)) = (event("github", &seen), event("stale", &seen)) {
                return (g, s);
            }
            let chunk = events.chunk().await.unwrap().expect("the stream ended");
            seen.push_str(&String::from_utf8_lossy(&chunk));
        }
    })
    .await
    .unwrap_or_else(|_| panic!("no github and stale events: {seen}"));

    let (_, provisioning) = tower.get("/api/provisioning").await.unwrap();
    assert_eq!(
        provisioning["github"]["until"],
        github_event["trouble"]["until"]
    );
    assert_eq!(provisioning["stale"][0]["name"], "prod");
    assert_eq!(
        provisioning["stale"][0]["lastSeenAt"],
        stale_event["lastSeenAt"]
    );
    let until_at = time(&provisioning["github"]["until"]);
    let last_seen = time(&provisioning["stale"][0]["lastSeenAt"]);
    let started = provisioning["services"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == service.as_str())
        .and_then(|s| {
            s["steps"]
                .as_array()?
                .iter()
                .find(|st| st["id"] == step.as_str())
        })
        .map(|st| time(&st["startedAt"]))
        .expect("the step is still there");

    browser
        .checked("clock-20x", async {
            let c = &browser.client;
            let path = format!("/tower?view=provisioning&service={service}");
            open(&browser, &tower, &path, ".state.stale li").await?;
            eventually_every(Duration::from_millis(50), Duration::from_secs(10), "both notices", || async {
                Ok((texts(c, ".state.stale li").await?.len() == 2).then_some(()))
            })
            .await?;
            let notices = texts(c, ".state.stale li").await?;
            let step_time = texts(c, &format!("li.step[data-step='{step}'] .step-time")).await?;
            // Tower's clock when the page was read.
            let now = tower.live.now();
            browser.check_page("clock-20x").await?;

            let stale_line = notices
                .iter()
                .find(|l| l.starts_with("Cluster prod"))
                .context("no stale notice")?;
            let page_age = duration_after(stale_line, "from ").context(stale_line.clone())?;
            let api_age = (now - last_seen).num_seconds();
            anyhow::ensure!(
                (page_age - api_age).abs() <= SLACK,
                "stale age: page {page_age} s, API {api_age} s ({stale_line})"
            );
            let github_line = notices
                .iter()
                .find(|l| l.starts_with("GitHub"))
                .context("no GitHub notice")?;
            let page_wait = duration_after(github_line, "again in ").context(github_line.clone())?;
            let api_wait = (until_at - now).num_seconds();
            anyhow::ensure!(
                (page_wait - api_wait).abs() <= SLACK,
                "GitHub's wait: page {page_wait} s, API {api_wait} s ({github_line})"
            );
            let line = step_time.first().context("the step is not on the page")?;
            let shown = line.split(" so far").next().unwrap_or_default();
            let page_took = seconds(shown).context(line.clone())?;
            let api_took = (now - started).num_seconds();
            // Past an hour the page shows whole minutes: it reads low by up to 59 s.
            let resolution = if shown.contains('h') { 60 } else { 1 };
            anyhow::ensure!(
                page_took <= api_took + SLACK && api_took < page_took + resolution + SLACK,
                "{step}'s duration: page {page_took} s, API {api_took} s ({line})"
            );
            println!(
                "at 20×: stale age page {page_age} s / API {api_age} s; GitHub wait page {page_wait} s / API {api_wait} s; step page {page_took} s / API {api_took} s"
            );
            Ok(())
        })
        .await
        .unwrap();
    browser.close().await.unwrap();
}
