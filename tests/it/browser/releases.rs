//! The Releases tab: the matrix, promotion by commit and by pull request, and release records.

use super::*;

/// The Releases tab: the canary app's newest release live in dev and staging and offered
/// for prod by a reviewed pull request; once its prod rollout starts, the canary at 20 %
/// there, followed without a reload.
#[tokio::test]
async fn the_releases_tab_reads_each_release_across_its_environments() {
    use hangar_sim::stories::fleet::Role;
    let tower = crate::support::Live::start(0.0).await.unwrap();
    let browser = Browser::start().await.unwrap();
    browser
        .checked("releases", async {
            let c = &browser.client;
            let app = crate::support::fleet_app(Role::CompletingCanary);
            let start = app.prod_rollout_at(tower.world_now());
            tower.advance_world((start - tower.world_now()).num_seconds() - 600);
            let image = app.prod_image(start);
            let tag = tower_shared::image::tag(&image).context("tag")?.to_owned();
            c.goto(&tower.url(&format!("/tower?view=releases&service={}", app.name)))
                .await?;
            let row = format!("table.releases tr[data-release='{tag}']");
            eventually_every(
                LOOK,
                Duration::from_secs(20),
                "the release offered for prod",
                || async {
                    let next = c
                        .find_all(Locator::Css(&format!("{row} td[data-env='prod'] .next")))
                        .await?;
                    Ok(!next.is_empty())
                },
            )
            .await?;
            let headline = c.find(Locator::Css("p.headline")).await?.text().await?;
            anyhow::ensure!(
                headline.contains(&tag)
                    && headline.contains("is live in dev, staging")
                    && headline.contains("goes to prod next, by a reviewed pull request"),
                "{headline:?}"
            );
            browser.check_page("releases").await?;

            // The prod rollout starts: the same row shows the canary, no reload.
            c.execute("window.towerMark = 'still here';", vec![])
                .await?;
            tower.advance_world(660);
            eventually_every(
                LOOK,
                Duration::from_secs(20),
                "the canary in prod",
                || async {
                    let cell = c
                        .find_all(Locator::Css(&format!(
                            "{row} td[data-env='prod'][data-state='canary']"
                        )))
                        .await?;
                    Ok(match cell.first() {
                        Some(cell) => cell.text().await?.contains("canary at 20%"),
                        None => false,
                    })
                },
            )
            .await?;
            let mark = c
                .execute("return window.towerMark || null;", vec![])
                .await?;
            anyhow::ensure!(mark == "still here", "the page was reloaded: {mark}");
            // The answer and the time it was read at arrive together: the sync a minute ago
            // is a minute old, not "just now" on a clock still at the previous answer.
            let prod = c
                .find(Locator::Css(&format!("{row} td[data-env='prod'] .arrived")))
                .await?
                .text()
                .await?;
            anyhow::ensure!(
                prod.starts_with("arrived 59s ago") || prod.starts_with("arrived 1m"),
                "{prod:?}"
            );
            browser.screenshot("releases-canary").await?;

            // Any two rows compare: the newest and the third, by GitHub's comparison.
            let pick = |n: usize| format!("table.releases tbody tr:nth-child({n}) .pick input");
            c.find(Locator::Css(&pick(1))).await?.click().await?;
            eventually_every(
                LOOK,
                Duration::from_secs(10),
                "the hint for a second pick",
                || async {
                    Ok(text_of(c, ".comparing")
                        .await?
                        .is_some_and(|t| t.starts_with("Pick another release")))
                },
            )
            .await?;
            c.find(Locator::Css(&pick(3))).await?.click().await?;
            eventually_every(LOOK, Duration::from_secs(20), "the comparison", || async {
                Ok(text_of(c, ".comparison")
                    .await?
                    .is_some_and(|t| t.contains(" adds 2 commits (") && t.contains("Builds")))
            })
            .await?;
            browser.check_page("releases-compare").await?;
            browser.screenshot("releases-compare").await?;

            Ok(())
        })
        .await
        .unwrap();
    browser.close().await.unwrap();
}

#[tokio::test]
async fn a_release_is_promoted_to_staging_by_a_commit_and_to_prod_by_a_merged_pull_request() {
    use hangar_sim::stories::fleet::AWAITING_PROMOTION as APP;
    let tower = crate::support::Live::start(0.0).await.unwrap();
    let browser = Browser::start().await.unwrap();
    browser
        .checked("releases-promotion", async {
            let c = &browser.client;
            c.goto(&tower.url(&format!("/tower?view=releases&service={APP}")))
                .await?;
            // The release waiting in dev: its staging cell has the one (enabled) button.
            let button = "td[data-env='staging'] button.promote:enabled";
            eventually_every(
                LOOK,
                Duration::from_secs(20),
                "the promote button",
                || async { Ok(!c.find_all(Locator::Css(button)).await?.is_empty()) },
            )
            .await?;
            let tag = c
                .find(Locator::XPath(
                    "//td[@data-env='staging']/button[contains(@class,'promote')]/ancestor::tr",
                ))
                .await?
                .attr("data-release")
                .await?
                .context("the row names its release")?;
            let row = format!("table.releases tr[data-release='{tag}']");
            c.execute("window.towerMark = 'still here';", vec![])
                .await?;

            // Pressing shows exactly what will change first.
            c.find(Locator::Css(&format!("{row} {button}")))
                .await?
                .click()
                .await?;
            eventually_every(LOOK, Duration::from_secs(20), "the diff", || async {
                Ok(text_of(c, ".promotion pre.diff")
                    .await?
                    .is_some_and(|d| d.contains(&format!("+ image: ghcr.io/acme/{APP}:{tag}"))))
            })
            .await?;
            browser.check_page("releases-promotion").await?;
            browser.screenshot("promote-staging-diff").await?;
            c.find(Locator::Css(".promotion button.confirm"))
                .await?
                .click()
                .await?;
            eventually_every(LOOK, Duration::from_secs(20), "the commit made", || async {
                Ok(text_of(c, ".promotion .promoted")
                    .await?
                    .is_some_and(|t| t.starts_with("Committed")))
            })
            .await?;
            // Argo CD syncs the commit: the matrix follows, no reload.
            let cell = |env: &str, state: &str| {
                format!("{row} td[data-env='{env}'][data-state='{state}']")
            };
            eventually_every(
                LOOK,
                Duration::from_secs(20),
                "the canary in staging",
                || async {
                    Ok(text_of(c, &cell("staging", "canary"))
                        .await?
                        .is_some_and(|t| t.contains("canary at 20%")))
                },
            )
            .await?;
            browser.screenshot("promote-staging-canary").await?;
            // … and so does the Deployments tab.
            c.find(Locator::Css("nav.tabs a[href*='view=deployments']"))
                .await?
                .click()
                .await?;
            eventually_every(
                LOOK,
                Duration::from_secs(20),
                "the Deployments tab",
                || async {
                    let body = c.find(Locator::Css("body")).await?.text().await?;
                    Ok(body.contains(&tag) && body.contains("20%"))
                },
            )
            .await?;
            // Argo CD's own action, from the environment's card: asked of Argo CD's API.
            c.find(Locator::Css(
                "article[data-env='staging'] button.sync:enabled",
            ))
            .await?
            .click()
            .await?;
            eventually_every(LOOK, Duration::from_secs(20), "Argo CD syncing", || async {
                Ok(text_of(
                    c,
                    "article[data-env='staging'] .argo-actions [role='status']",
                )
                .await?
                .is_some_and(|t| t.starts_with(&format!("Argo CD is syncing {APP}-staging"))))
            })
            .await?;
            anyhow::ensure!(tower.world.served.argocd_syncs().len() == 1);
            browser.screenshot("argo-cd-sync").await?;
            c.find(Locator::Css("nav.tabs a[href*='view=releases']"))
                .await?
                .click()
                .await?;
            tower.advance_world(25 * 60);
            eventually_every(LOOK, Duration::from_secs(20), "live in staging", || async {
                Ok(!c
                    .find_all(Locator::Css(&cell("staging", "live")))
                    .await?
                    .is_empty())
            })
            .await?;

            // Prod goes by a pull request.
            let to_prod = format!("{row} td[data-env='prod'] button.promote:enabled");
            eventually_every(LOOK, Duration::from_secs(20), "the prod button", || async {
                Ok(!c.find_all(Locator::Css(&to_prod)).await?.is_empty())
            })
            .await?;
            c.find(Locator::Css(&to_prod)).await?.click().await?;
            eventually_every(LOOK, Duration::from_secs(20), "the prod diff", || async {
                Ok(text_of(c, ".promotion")
                    .await?
                    .is_some_and(|t| t.contains("opens a pull request") && t.contains("+ image:")))
            })
            .await?;
            c.find(Locator::Css(".promotion button.confirm"))
                .await?
                .click()
                .await?;
            let opened = "Opened pull request #";
            eventually_every(
                LOOK,
                Duration::from_secs(20),
                "the pull request opened",
                || async {
                    Ok(text_of(c, ".promotion .promoted")
                        .await?
                        .is_some_and(|t| t.starts_with(opened)))
                },
            )
            .await?;
            let said = text_of(c, ".promotion .promoted")
                .await?
                .unwrap_or_default();
            let number: u64 = said[opened.len()..]
                .split(' ')
                .next()
                .and_then(|n| n.parse().ok())
                .context("the PR's number")?;
            eventually_every(
                LOOK,
                Duration::from_secs(20),
                "Review PR #N in the matrix",
                || async {
                    Ok(text_of(c, &format!("{row} td[data-env='prod'] a.review"))
                        .await?
                        .is_some_and(|t| t == format!("Review PR #{number}")))
                },
            )
            .await?;
            browser.screenshot("promote-prod-pull-request").await?;

            // Someone merges it on GitHub; Argo CD syncs prod and the canary walks in.
            let merged = reqwest::Client::new()
                .put(format!(
                    "http://{}/repos/acme/gitops-{APP}/pulls/{number}/merge",
                    tower.world.served.github
                ))
                .json(&serde_json::json!({}))
                .send()
                .await?;
            anyhow::ensure!(merged.status() == 200, "merge: {}", merged.status());
            eventually_every(
                LOOK,
                Duration::from_secs(20),
                "the canary in prod",
                || async {
                    Ok(!c
                        .find_all(Locator::Css(&cell("prod", "canary")))
                        .await?
                        .is_empty())
                },
            )
            .await?;
            tower.advance_world(25 * 60);
            eventually_every(LOOK, Duration::from_secs(20), "live in prod", || async {
                Ok(!c
                    .find_all(Locator::Css(&cell("prod", "live")))
                    .await?
                    .is_empty())
            })
            .await?;
            let mark = c
                .execute("return window.towerMark || null;", vec![])
                .await?;
            anyhow::ensure!(mark == "still here", "the page was reloaded: {mark}");
            browser.screenshot("promote-prod-live").await?;
            Ok(())
        })
        .await
        .unwrap();
    browser.close().await.unwrap();
}

#[tokio::test]
async fn a_release_record_is_proposed_merged_written_up_by_people_and_downloaded() {
    use hangar_sim::stories::fleet::AWAITING_PROMOTION as APP;
    let tower = crate::support::Live::start(0.0).await.unwrap();
    let recorder = tower.record_releases();
    let image = crate::promotions::live_in_prod(&tower).await;
    let release = tower_shared::image::release_name(&image)
        .unwrap()
        .to_owned();
    let repo = format!("acme/gitops-{APP}");
    let github = format!("http://{}", tower.world.served.github);
    // The open pull requests on the app's GitOps repo whose branch starts with `prefix`.
    let open = |prefix: String| {
        let url = format!("{github}/repos/{repo}/pulls?state=open&per_page=100");
        async move {
            let pulls: Vec<serde_json::Value> = reqwest::get(url).await?.json().await?;
            anyhow::Ok(
                pulls
                    .into_iter()
                    .filter(|p| {
                        p["head"]["ref"]
                            .as_str()
                            .is_some_and(|b| b.starts_with(&prefix))
                    })
                    .filter_map(|p| p["number"].as_u64())
                    .collect::<Vec<u64>>(),
            )
        }
    };
    let branch = tower_shared::hangar::record_branch(&release);
    let browser = Browser::start().await.unwrap();
    browser
        .checked("release-record", async {
            let c = &browser.client;
            eventually_every(
                LOOK,
                Duration::from_secs(30),
                "the record's pull request",
                || async { Ok(!open(branch.clone()).await?.is_empty()) },
            )
            .await?;
            let record_pr = open(branch.clone()).await?;
            anyhow::ensure!(record_pr.len() == 1, "one record PR: {record_pr:?}");

            // From the matrix: the prod cell links its record, proposed and not yet merged.
            c.goto(&tower.url(&format!("/tower?view=releases&service={APP}")))
                .await?;
            let link = format!("tr[data-release='{release}'] td[data-env='prod'] a.record-link");
            eventually_every(LOOK, Duration::from_secs(20), "the record link", || async {
                Ok(!c.find_all(Locator::Css(&link)).await?.is_empty())
            })
            .await?;
            eventually_every(
                LOOK,
                Duration::from_secs(20),
                "the record listed as proposed",
                || async {
                    Ok(text_of(c, &format!("tr[data-record='{release}']"))
                        .await?
                        .is_some_and(|t| t.contains(&format!("proposed in PR #{}", record_pr[0]))))
                },
            )
            .await?;
            let pager = text_of(c, "section.records .pager").await?;
            anyhow::ensure!(
                pager.as_deref() == Some("Newer Page 1 of 1 Older"),
                "{pager:?}"
            );
            browser.screenshot("release-records-list").await?;
            press(c, &link).await?;
            eventually_every(
                LOOK,
                Duration::from_secs(20),
                "the record's page",
                || async {
                    Ok(text_of(c, "article.record .state")
                        .await?
                        .is_some_and(|t| t.starts_with("Not merged yet")))
                },
            )
            .await?;

            // Merged on GitHub: the form appears; the shared rules refuse an empty summary.
            crate::promotions::merge(&tower, &repo, record_pr[0]).await;
            eventually_every(
                LOOK,
                Duration::from_secs(30),
                "the form for the human part",
                || async {
                    c.refresh().await?;
                    for _ in 0..20 {
                        if !c.find_all(Locator::Css("form.notes")).await?.is_empty() {
                            return Ok(true);
                        }
                        tokio::time::sleep(Duration::from_millis(100)).await;
                    }
                    Ok(false)
                },
            )
            .await?;
            press(c, "button.propose-notes").await?;
            eventually_every(
                LOOK,
                Duration::from_secs(10),
                "the summary's error",
                || async {
                    Ok(text_of(c, "form.notes .field-error")
                        .await?
                        .is_some_and(|t| t == "write a plain summary"))
                },
            )
            .await?;
            anyhow::ensure!(
                open(format!("{branch}-notes-")).await?.is_empty(),
                "nothing sent"
            );
            c.find(Locator::Css("#notes-summary"))
                .await?
                .send_keys("Checkout is faster.")
                .await?;
            c.find(Locator::Css("#notes-checked"))
                .await?
                .send_keys("Canary analysis and the dashboards.")
                .await?;
            // Signed off in the name of who is signed in: the form names them, and nobody
            // can type another's.
            let signer = text_of(c, "form.notes .signer").await?.unwrap_or_default();
            anyhow::ensure!(signer.starts_with("user:"), "the form signs as {signer:?}");
            anyhow::ensure!(
                c.find_all(Locator::Css("form.notes input[type=text]"))
                    .await?
                    .is_empty(),
                "a box to type who signs it off"
            );
            c.find(Locator::Css("#notes-sign")).await?.click().await?;
            browser.check_page("release-record").await?;
            press(c, "button.propose-notes").await?;
            eventually_every(
                LOOK,
                Duration::from_secs(20),
                "the second pull request",
                || async {
                    Ok(text_of(c, "form.notes .notes-sent")
                        .await?
                        .is_some_and(|t| t.contains("Review PR #")))
                },
            )
            .await?;
            let notes = open(format!("{branch}-notes-")).await?;
            anyhow::ensure!(notes.len() == 1, "one human-part PR: {notes:?}");
            browser.screenshot("release-record-notes-proposed").await?;

            // Merged too: the record says it; both downloads arrive in the browser.
            crate::promotions::merge(&tower, &repo, notes[0]).await;
            eventually_every(
                LOOK,
                Duration::from_secs(30),
                "the human part in the record",
                || async {
                    c.refresh().await?;
                    for _ in 0..20 {
                        if let Some(t) = text_of(c, "dl.human").await? {
                            return Ok(t.contains("Checkout is faster.")
                                && t.contains("low")
                                && t.contains(&format!("by {signer}")));
                        }
                        tokio::time::sleep(Duration::from_millis(100)).await;
                    }
                    Ok(false)
                },
            )
            .await?;
            press(c, "button.download-html").await?;
            press(c, "button.download-pdf").await?;
            eventually_every(LOOK, Duration::from_secs(20), "both downloads", || async {
                Ok(c.find_all(Locator::Css("a.saved")).await?.len() == 2)
            })
            .await?;
            // Both files arrived in the browser (their bytes are checked in
            // records::a_release_tower_takes_to_prod_…, from the same route).
            let saved = c
                .execute(
                    "return Array.from(document.querySelectorAll('a.saved')).map(a =>
                       [a.download, a.href.startsWith('blob:'), Number(a.dataset.bytes)]);",
                    vec![],
                )
                .await?;
            let saved: Vec<(String, bool, u64)> = serde_json::from_value(saved)?;
            for format in ["html", "pdf"] {
                let name = format!("{APP}-{release}.{format}");
                anyhow::ensure!(
                    saved
                        .iter()
                        .any(|(n, blob, bytes)| *n == name && *blob && *bytes > 1_000),
                    "{name} not saved: {saved:?}"
                );
            }
            browser.screenshot("release-record").await?;
            Ok(())
        })
        .await
        .unwrap();
    recorder.abort();
    browser.close().await.unwrap();
}
