//! The Pipelines tab: a failed run's graph and paging through 300 runs.

use super::*;

/// The demo's busy app (a pull-request pipeline every ten minutes): a failed run's graph
/// marks the failed task, and its link opens the task's steps and the failed step's log; a
/// running step's log grows as the world moves, through one stream upstream that closes when
/// the page leaves; "Load more" pages through all of its runs.
#[tokio::test]
async fn the_pipelines_tab_draws_a_failed_run_and_pages_through_three_hundred_runs() {
    let tower = crate::support::Live::start(0.0).await.unwrap();
    let browser = Browser::start().await.unwrap();
    // The busy app and its newest failed run, from the API.
    let service = crate::support::busy_app();
    let (_, failed) = tower
        .get(&format!(
            "/api/pipelines?service={service}&status=failed&pipeline=pull-request"
        ))
        .await
        .unwrap();
    let run = failed["runs"][0]["name"].as_str().unwrap().to_owned();
    let (_, all) = tower
        .get(&format!("/api/pipelines?service={service}"))
        .await
        .unwrap();
    let total = all["total"].as_u64().unwrap();
    assert!(total >= 300, "{total} runs");
    let status_says = |c: &fantoccini::Client, what: String| {
        let c = c.clone();
        async move {
            eventually_every(LOOK, Duration::from_secs(20), &what, || async {
                let status = c.find(Locator::Css(".log-console .log-status")).await;
                Ok(match status {
                    Ok(status) => status.text().await?.contains(&what),
                    Err(_) => false,
                })
            })
            .await
        }
    };
    browser
        .checked("pipelines-failed-run", async {
            let c = &browser.client;
            c.goto(&tower.url(&format!(
                "/tower?view=pipelines&service={service}&run={run}"
            )))
            .await?;
            let failed = c
                .wait()
                .at_most(Duration::from_secs(20))
                .for_element(Locator::Css(
                    ".dag g.node.status-failed[data-task='unit-tests']",
                ))
                .await
                .context("the failed task is not marked in the graph")?;
            anyhow::ensure!(
                failed
                    .attr("class")
                    .await?
                    .is_some_and(|c| c.contains("status-failed")),
                "the failed task's node"
            );
            let headline = c
                .find(Locator::Css("section.focused-run .headline"))
                .await?
                .text()
                .await?;
            anyhow::ensure!(
                headline.contains("failed at unit-tests")
                    && headline.contains("exited with code 1"),
                "{headline:?}"
            );
            // The node is the link to the task: its steps, the failed one with its exit code.
            c.find(Locator::Css(".dag g.node a[href$='&task=unit-tests']"))
                .await?
                .click()
                .await?;
            let detail = c
                .wait()
                .at_most(Duration::from_secs(10))
                .for_element(Locator::Css("section.task-detail"))
                .await?
                .text()
                .await?;
            anyhow::ensure!(
                detail.contains("unit-tests")
                    && detail.contains("✖ failed")
                    && detail.contains('1'),
                "{detail:?}"
            );
            let url = c.current_url().await?;
            anyhow::ensure!(
                url.query().is_some_and(|q| q.contains("task=unit-tests")),
                "{url}"
            );
            anyhow::ensure!(
                c.find_all(Locator::Css(".timeline rect.bar")).await?.len() == 3,
                "one bar per task that ran"
            );
            // The Gantt's axis: time since the run started, from +0s to the run's length.
            let ticks = texts(c, ".timeline text.tick-label").await?;
            anyhow::ensure!(
                ticks.len() == 5 && ticks[0] == "+0s" && ticks[4] != "+0s",
                "the axis: {ticks:?}"
            );
            anyhow::ensure!(
                c.find_all(Locator::Css(".dag .task-links"))
                    .await?
                    .is_empty(),
                "the tasks are drawn once as a graph, not listed again"
            );
            // The run's one drawing: its graph and its Gantt on a time axis.
            c.execute(
                "document.querySelector('section.focused-run').scrollIntoView();",
                vec![],
            )
            .await?;
            browser.check_page("pipelines-failed-run-gantt").await?;
            // The failed step's log opens by itself: all of it, only the lines in view drawn,
            // kept at its end, where the failure is — in red.
            status_says(c, "Step unit-tests wrote 100,002 lines.".to_owned()).await?;
            let drawn = c.find_all(Locator::Css(".log .l")).await?;
            anyhow::ensure!(
                (20..=80).contains(&drawn.len()),
                "{} of 100,002 lines in the page",
                drawn.len()
            );
            let last = drawn.last().context("no line drawn")?;
            let text = last.text().await?;
            anyhow::ensure!(
                text.starts_with("100002") && text.contains("exit code 1"),
                "the last line drawn: {text:?}"
            );
            anyhow::ensure!(
                last.find(Locator::Css("span.c1")).await.is_ok(),
                "the failure is not drawn in red"
            );
            c.execute(
                "document.querySelector('.log-console').scrollIntoView();",
                vec![],
            )
            .await?;
            browser.check_page("pipelines-failed-run").await?;
            Ok(())
        })
        .await
        .unwrap();
    browser
        .checked("pipelines-live-log", async {
            let c = &browser.client;
            // The next pull-request run, 170 s in: its unit tests have run for 10 s.
            let running = tower.next_pr_run(&service, 170).await?;
            let streams = || tower.world.served.api_requests()["dev"];
            let before = streams();
            c.goto(&tower.url(&format!(
                "/tower?view=pipelines&service={service}&run={running}&task=unit-tests"
            )))
            .await?;
            // The running step's log opens by itself and grows as the world moves on.
            status_says(
                c,
                "Following the log of step unit-tests: 12,501 lines so far.".to_owned(),
            )
            .await?;
            tower.advance_world(2);
            status_says(
                c,
                "Following the log of step unit-tests: 15,001 lines so far.".to_owned(),
            )
            .await?;
            let last = c.find_all(Locator::Css(".log .l")).await?;
            let text = last.last().context("no line drawn")?.text().await?;
            anyhow::ensure!(text.starts_with("15001"), "kept at the end: {text:?}");
            let during = streams();
            anyhow::ensure!(
                during.log_streams - before.log_streams == 1 && during.log_streams_open == 1,
                "one log stream upstream: {before:?} → {during:?}"
            );
            c.execute(
                "document.querySelector('.log-console').scrollIntoView();",
                vec![],
            )
            .await?;
            browser.check_page("pipelines-live-log").await?;
            // Leaving the tab closes the stream, upstream too, within 5 s.
            c.find(Locator::Css("nav.tabs a[href*='view=deployments']"))
                .await?
                .click()
                .await?;
            crate::support::eventually_every(
                LOOK,
                Duration::from_secs(5),
                "the log stream closed",
                || async { (streams().log_streams_open == 0).then_some(()) },
            )
            .await?;
            anyhow::ensure!(
                streams().log_streams - before.log_streams == 1,
                "no other stream opened"
            );
            Ok(())
        })
        .await
        .unwrap();
    browser
        .checked("pipelines-load-more", async {
            let c = &browser.client;
            c.goto(&tower.url(&format!("/tower?view=pipelines&service={service}")))
                .await?;
            let rows = |c: &fantoccini::Client| {
                let c = c.clone();
                async move {
                    anyhow::Ok(c.find_all(Locator::Css("table.runs tbody tr")).await?.len())
                }
            };
            c.wait()
                .at_most(Duration::from_secs(20))
                .for_element(Locator::Css("table.runs tbody tr"))
                .await?;
            let mut shown = rows(c).await?;
            anyhow::ensure!(shown == 50, "the first page shows {shown} runs");
            // Each "Load more" adds a page, until every run is shown and the button goes.
            for _ in 0..10 {
                let Ok(button) = c.find(Locator::Css("button.load-more")).await else {
                    break;
                };
                button.click().await?;
                c.wait()
                    .at_most(Duration::from_secs(10))
                    .for_element(Locator::Css(&format!("table.runs tbody tr:nth-child({})", shown + 1)))
                    .await
                    .with_context(|| format!("no more rows after {shown}"))?;
                shown = rows(c).await?;
            }
            anyhow::ensure!(shown as u64 == total, "{shown} of {total} runs shown");
            anyhow::ensure!(c.find(Locator::Css("button.load-more")).await.is_err(), "the button stays");
            browser.check_page("pipelines-load-more").await?;
            Ok(())
        })
        .await
        .unwrap();
    browser.close().await.unwrap();
}
