//! The Pull requests tab: a pull request stitched to its run, and a merge to its canary.

use super::*;

/// The Pull requests tab: the busy app's open PR with its pipeline running, and the canary
/// app's newest merge live in dev and staging and the canary at 20 % in prod.
#[tokio::test]
async fn the_pull_requests_tab_stitches_a_pr_to_its_pipeline_and_a_merge_to_its_canary() {
    use hangar_sim::stories::fleet::Role;
    let tower = crate::support::Live::start(0.0).await.unwrap();
    let browser = Browser::start().await.unwrap();
    let service = crate::support::busy_app();
    browser
        .checked("pulls-open-running", async {
            let c = &browser.client;
            // The next pull-request run, 100 s in: its lint task runs.
            tower.next_pr_run(&service, 100).await?;
            c.goto(&tower.url(&format!("/tower?view=pulls&service={service}")))
                .await?;
            eventually_every(
                LOOK,
                Duration::from_secs(20),
                "the open PR's run running",
                || async {
                    let running = c
                        .find_all(Locator::Css(
                            "table.pulls tr[data-state='open'] .checks a.status-running",
                        ))
                        .await?;
                    Ok(!running.is_empty())
                },
            )
            .await?;
            let headline = c.find(Locator::Css("p.headline")).await?.text().await?;
            anyhow::ensure!(headline.contains("open pull request"), "{headline:?}");
            // Its run links to the Pipelines tab.
            let open = "table.pulls tr[data-state='open']:has(a.check.status-running)";
            let href = c
                .find(Locator::Css(&format!("{open} a.check")))
                .await?
                .attr("href")
                .await?
                .unwrap_or_default();
            anyhow::ensure!(
                href.contains("view=pipelines") && href.contains("run="),
                "{href}"
            );
            // Showing it had its review and GitHub's other checks read.
            eventually_every(
                LOOK,
                Duration::from_secs(20),
                "the open PR's review and GitHub checks",
                || async {
                    let row = c.find(Locator::Css(open)).await?;
                    let review = row
                        .find(Locator::Css("td:nth-child(3)"))
                        .await?
                        .text()
                        .await?;
                    let checks = row.find(Locator::Css("td.checks")).await?.text().await?;
                    Ok(!review.contains("unknown")
                        && checks.contains("commitlint")
                        && checks.contains("dco")
                        && !checks.contains("not read"))
                },
            )
            .await?;
            browser.check_page("pulls-open-running").await?;
            Ok(())
        })
        .await
        .unwrap();
    browser
        .checked("pulls-merged-canary", async {
            let c = &browser.client;
            let canary = crate::support::fleet_app(Role::CompletingCanary);
            let start = canary.prod_rollout_at(tower.world_now());
            tower.advance_world((start - tower.world_now()).num_seconds() + 60);
            tower
                .deployments_until(&canary.name, "the canary at 20%", |body| {
                    crate::support::prod_rollout(body)["canaryWeight"] == 20
                })
                .await?;
            c.goto(&tower.url(&format!("/tower?view=pulls&service={}", canary.name)))
                .await?;
            eventually_every(
                LOOK,
                Duration::from_secs(20),
                "the merge canarying in prod",
                || async {
                    let places = c
                        .find_all(Locator::Css("table.pulls tr[data-state='merged'] td.where"))
                        .await?;
                    for place in places {
                        let text = place.text().await?;
                        if text.contains("dev") && text.contains("prod (canary at 20%)") {
                            return Ok(true);
                        }
                    }
                    Ok(false)
                },
            )
            .await?;
            browser.check_page("pulls-merged-canary").await?;
            Ok(())
        })
        .await
        .unwrap();
    browser.close().await.unwrap();
}
