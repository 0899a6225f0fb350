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

/// The text of every element matching `css`, read in one go inside the page (the page
/// re-renders as data arrives, so element handles can go stale between two calls).
async fn texts(c: &fantoccini::Client, css: &str) -> anyhow::Result<Vec<String>> {
    let found = c
        .execute(
            "return Array.from(document.querySelectorAll(arguments[0])).map(e => e.innerText.trim());",
            vec![serde_json::json!(css)],
        )
        .await?;
    Ok(serde_json::from_value(found)?)
}

/// Polls `check` every 250 ms for at most `limit`.
async fn until<F, Fut>(limit: Duration, what: &str, mut check: F) -> anyhow::Result<()>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = anyhow::Result<bool>>,
{
    let deadline = tokio::time::Instant::now() + limit;
    loop {
        if check().await? {
            return Ok(());
        }
        anyhow::ensure!(
            tokio::time::Instant::now() < deadline,
            "{what}: not within {limit:?}"
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

#[tokio::test]
async fn provisioning_deep_link_follows_the_nodejs_story_to_done() {
    // At 60× the shop story (about 17 world minutes) plays in under half a minute.
    let demo = Demo::start_with(&["--speed", "60"]).await.unwrap();
    let browser = Browser::start().await.unwrap();
    browser
        .checked("provisioning", async {
            let c = &browser.client;
            let url = format!("{}tower?view=provisioning&service=shop", demo.url);
            c.goto(&url).await?;
            c.wait()
                .at_most(Duration::from_secs(20))
                .for_element(Locator::Css("ol.steps li.step"))
                .await
                .context("the deep link never showed shop's steps")?;
            let titles = texts(c, "li.step .step-title").await?;
            anyhow::ensure!(
                titles.first().is_some_and(|t| t.contains("Request PR")),
                "steps: {titles:?}"
            );
            browser.screenshot("provisioning-early").await?;

            // The world clock runs: the last step turns done.
            until(Duration::from_secs(90), "shop running healthy", || async {
                let done = c
                    .find_all(Locator::Css(
                        "li.step.step-done[data-step='running-healthy']",
                    ))
                    .await?;
                Ok(!done.is_empty())
            })
            .await?;
            let statuses = texts(c, "li.step .step-status").await?;
            anyhow::ensure!(statuses.iter().all(|s| s == "✔ Done"), "{statuses:?}");
            let times = texts(c, "li.step .step-time").await?;
            anyhow::ensure!(
                times.iter().any(|t| t.starts_with("took ")),
                "a step's duration is shown: {times:?}"
            );
            let events = texts(c, "ol.events li").await?;
            anyhow::ensure!(
                events
                    .iter()
                    .any(|e| e.starts_with('[') && e.contains("started")),
                "the events log: {events:?}"
            );
            browser.screenshot("provisioning").await?;

            // A reload of the deep link shows the same service.
            c.goto(&url).await?;
            c.wait()
                .at_most(Duration::from_secs(20))
                .for_element(Locator::Css("ol.steps li.step"))
                .await
                .context("the reloaded deep link never rendered")?;
            Ok(())
        })
        .await
        .unwrap();
    browser.close().await.unwrap();
}

#[tokio::test]
async fn services_strip_shows_in_flight_services_and_moves_a_finished_one_out() {
    let demo = Demo::start_with(&["--speed", "60"]).await.unwrap();
    let browser = Browser::start().await.unwrap();
    browser
        .checked("services", async {
            let c = &browser.client;
            c.goto(&format!("{}tower?view=services", demo.url)).await?;
            until(
                Duration::from_secs(30),
                "shop in the in-flight strip",
                || async {
                    Ok(texts(c, ".in-flight .strip-name")
                        .await?
                        .contains(&"shop".to_owned()))
                },
            )
            .await?;
            let rows = texts(c, ".in-flight .strip-row").await?;
            anyhow::ensure!(
                rows.iter()
                    .any(|r| r.contains("left") || r.contains("finishing")),
                "time remaining shown: {rows:?}"
            );
            let segments = c
                .find_all(Locator::Css(".in-flight .strip-row .segment"))
                .await?;
            anyhow::ensure!(!segments.is_empty(), "segmented bars");
            let badge = c.find(Locator::Css(".badge")).await?.text().await?;
            let in_flight = texts(c, ".in-flight .strip-name").await?.len();
            anyhow::ensure!(
                badge == in_flight.to_string(),
                "badge {badge} vs {in_flight} in flight"
            );
            browser.screenshot("services").await?;

            until(Duration::from_secs(90), "shop finished", || async {
                Ok(texts(c, ".finished .strip-name")
                    .await?
                    .contains(&"shop".to_owned()))
            })
            .await?;
            anyhow::ensure!(!texts(c, ".in-flight .strip-name")
                .await?
                .contains(&"shop".to_owned()));
            browser.screenshot("services-finished").await?;
            // Finished services stay 15 (world) minutes, then leave the list.
            until(
                Duration::from_secs(60),
                "shop out after its retention",
                || async { Ok(!texts(c, ".strip-name").await?.contains(&"shop".to_owned())) },
            )
            .await?;
            Ok(())
        })
        .await
        .unwrap();
    browser.close().await.unwrap();
}
