//! Services and one service's Provisioning tab, following a story to done.

use super::*;

#[tokio::test]
async fn provisioning_deep_link_follows_the_nodejs_story_to_done() {
    // The world stands still until the test moves it: the shop story (about 17 world
    // minutes) is played half a world minute per look at the page.
    let tower = crate::support::Live::start(0.0).await.unwrap();
    let browser = Browser::start().await.unwrap();
    browser
        .checked("provisioning", async {
            let c = &browser.client;
            let url = tower.url("/tower?view=provisioning&service=shop");
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
            browser.check_page("provisioning-early").await?;

            // The world clock moves on until every step is done. The catalog step ends when
            // Tower's catalog poll (every few real seconds) finds the entity, so at this
            // speed it may turn done after "Running healthy": wait on all ten, not the last.
            eventually_every(
                LOOK,
                Duration::from_secs(90),
                "every shop step done",
                || async {
                    tower.advance_world(30);
                    let statuses = texts(c, "li.step .step-status").await?;
                    Ok(statuses.len() == 10 && statuses.iter().all(|s| s == "✔ Done"))
                },
            )
            .await?;
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
            browser.check_page("provisioning").await?;
            // Every action on the page is reachable by keyboard, with visible focus.
            browser.keyboard_reaches_everything().await?;

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
    // The world moves only when the test moves it, half a world minute per look.
    let tower = crate::support::Live::start(0.0).await.unwrap();
    let browser = Browser::start().await.unwrap();
    browser
        .checked("services", async {
            let c = &browser.client;
            c.goto(&tower.url("/tower?view=services")).await?;
            eventually_every(
                LOOK,
                Duration::from_secs(30),
                "shop in the in-flight strip",
                || async {
                    tower.advance_world(30);
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
            browser.check_page("services").await?;
            // Every action on the page is reachable by keyboard, with visible focus.
            browser.keyboard_reaches_everything().await?;

            eventually_every(LOOK, Duration::from_secs(90), "shop finished", || async {
                tower.advance_world(30);
                Ok(texts(c, ".finished .strip-name")
                    .await?
                    .contains(&"shop".to_owned()))
            })
            .await?;
            anyhow::ensure!(!texts(c, ".in-flight .strip-name")
                .await?
                .contains(&"shop".to_owned()));
            browser.check_page("services-finished").await?;
            // Finished services stay 15 (world) minutes, then leave the list.
            eventually_every(
                LOOK,
                Duration::from_secs(60),
                "shop out after its retention",
                || async {
                    tower.advance_world(30);
                    Ok(!texts(c, ".strip-name").await?.contains(&"shop".to_owned()))
                },
            )
            .await?;
            Ok(())
        })
        .await
        .unwrap();
    browser.close().await.unwrap();
}
