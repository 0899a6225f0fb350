//! The app in headless Chromium against a real `tower demo`.

use std::time::Duration;

use anyhow::Context;
use fantoccini::Locator;
use tower_shared::fleet::Fleet;

use crate::support::{Browser, Demo};

#[tokio::test]
async fn fleet_page_shows_what_the_backend_serves() {
    let demo = Demo::start().await.unwrap();
    // What the backend serves, fetched independently of the page.
    let fleet: Fleet = reqwest::get(format!("{}api/fleet", demo.url))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let browser = Browser::start().await.unwrap();

    browser
        .checked("fleet", async {
            let c = &browser.client;
            c.goto(&demo.url).await?;
            c.wait()
                .at_most(Duration::from_secs(20))
                .for_element(Locator::Css("table.matrix tbody tr"))
                .await
                .context("the fleet table never rendered")?;

            let mut shown = Vec::new();
            for name in c.find_all(Locator::Css(".app-name")).await? {
                shown.push(name.text().await?);
            }
            let mut served: Vec<String> = fleet.apps.iter().map(|a| a.name.clone()).collect();
            shown.sort();
            served.sort();
            anyhow::ensure!(
                shown == served,
                "page shows {shown:?}, backend serves {served:?}"
            );

            // Derived in the browser from backend data: the paused canary is amber, in words.
            let amber = c.find(Locator::Css("td.attention")).await?.text().await?;
            anyhow::ensure!(
                amber.contains("Canary paused at 40% traffic"),
                "amber cell reads {amber:?}"
            );
            browser.screenshot("fleet").await?;
            Ok(())
        })
        .await
        .unwrap();
    browser.close().await.unwrap();
}

#[tokio::test]
async fn cloud_deployments_tab_shows_a_simulated_ecs_service_and_opens_its_runs() {
    // The simulated world, frozen at the demo's start: orders-api (Go on AWS ECS) has a
    // successful deploy, a failed one, and one in progress.
    let demo = Demo::start_with(&["--speed", "0"]).await.unwrap();
    let browser = Browser::start().await.unwrap();
    browser
        .checked("deployments", async {
            let c = &browser.client;
            c.goto(&format!(
                "{}tower?view=deployments&service=orders-api",
                demo.url
            ))
            .await?;
            let section = c
                .wait()
                .at_most(Duration::from_secs(20))
                .for_element(Locator::Css("section.deployments.cloud"))
                .await
                .context("the cloud Deployments tab never rendered")?;
            let target = section.find(Locator::Css(".target")).await?.text().await?;
            anyhow::ensure!(
                target.contains("AWS ECS")
                    && target.contains("orders-api")
                    && target.contains("eu-west-1"),
                "target reads {target:?}"
            );
            let console = section
                .find(Locator::Css("a.console"))
                .await?
                .attr("href")
                .await?;
            anyhow::ensure!(
                console.as_deref().is_some_and(|u| u.contains(
                    "console.aws.amazon.com/ecs/v2/clusters/apps-dev/services/orders-api"
                )),
                "console link {console:?}"
            );
            let blind = section
                .find(Locator::Css(".blind-spots"))
                .await?
                .text()
                .await?;
            anyhow::ensure!(
                blind.contains("cannot see whether the service is healthy"),
                "{blind:?}"
            );

            let running = section
                .find(Locator::Css(".card.running"))
                .await?
                .text()
                .await?;
            anyhow::ensure!(
                running.contains("77aa9f0") && running.contains("◌ Running"),
                "in progress reads {running:?}"
            );
            let failing = section
                .find(Locator::Css(".card.failing"))
                .await?
                .text()
                .await?;
            anyhow::ensure!(
                failing.contains("deploy-aws-ecs")
                    && failing.contains("did not stabilize")
                    && failing.contains("previous image"),
                "failure reads {failing:?}"
            );
            let ok = section.find(Locator::Css(".card.ok")).await?.text().await?;
            anyhow::ensure!(
                ok.contains("0c1d2e3") && ok.contains("✔ Succeeded"),
                "last success reads {ok:?}"
            );
            let rows = section
                .find_all(Locator::Css("table.history tbody tr"))
                .await?;
            anyhow::ensure!(rows.len() == 3, "{} history rows", rows.len());
            browser.screenshot("deployments").await?;

            // The newest run opens in the Pipelines tab, by name.
            let link = rows[0].find(Locator::Css("a")).await?;
            let run = link.text().await?;
            link.click().await?;
            let focused = c
                .wait()
                .at_most(Duration::from_secs(10))
                .for_element(Locator::Css("section.focused-run .run-name"))
                .await?
                .text()
                .await?;
            anyhow::ensure!(focused == run, "opened {focused:?}, clicked {run:?}");
            let url = c.current_url().await?;
            anyhow::ensure!(
                url.query().is_some_and(
                    |q| q.contains("view=pipelines") && q.contains(&format!("run={run}"))
                ),
                "{url}"
            );
            let tasks = c
                .find_all(Locator::Css("section.focused-run table.tasks tbody tr"))
                .await?;
            anyhow::ensure!(tasks.len() == 3, "{} tasks in the run", tasks.len());
            browser.screenshot("pipelines").await?;
            Ok(())
        })
        .await
        .unwrap();
    browser.close().await.unwrap();
}
