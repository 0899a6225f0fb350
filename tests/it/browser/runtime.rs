//! The Runtime tab: the release that hurt, Prometheus going quiet, a pod's log.

use super::*;

#[tokio::test]
async fn the_runtime_tab_shows_the_release_that_hurt_and_prometheus_going_quiet() {
    let tower = crate::support::Live::start(0.0).await.unwrap();
    let (app, _) = crate::runtime::regressed_an_hour_in(&tower).await;
    let browser = Browser::start().await.unwrap();
    let prod = "section[aria-label='prod runtime']";
    browser
        .checked("runtime", async {
            let c = &browser.client;
            c.goto(&tower.url(&format!("/tower?view=runtime&service={app}")))
                .await?;
            let latency = format!("{prod} figure.chart:nth-of-type(2) figcaption");
            eventually_every(
                LOOK,
                Duration::from_secs(20),
                "the p99 rise after the release",
                || async {
                    Ok(text_of(c, &latency)
                        .await?
                        .is_some_and(|t| t.starts_with("p99 latency: rose from")))
                },
            )
            .await?;
            let markers = c
                .execute(
                    "return document.querySelectorAll(arguments[0]).length;",
                    vec![serde_json::json!(format!(
                        "{prod} figure.chart line.marker"
                    ))],
                )
                .await?;
            anyhow::ensure!(
                markers.as_u64().unwrap_or(0) >= 2,
                "no release markers: {markers}"
            );
            let pod = text_of(c, &format!("{prod} table.pods tr.restarted")).await?;
            anyhow::ensure!(
                pod.as_deref().is_some_and(|t| t.contains("OOMKilled")),
                "the OOMKilled pod: {pod:?}"
            );
            let budget = text_of(c, &format!("{prod} .budget"))
                .await?
                .unwrap_or_default();
            anyhow::ensure!(
                budget.starts_with("Error budget left (30 days): ") && budget.contains("%"),
                "{budget}"
            );
            browser.check_page("runtime").await?;
            c.execute(
                "document.querySelector(arguments[0]).scrollIntoView();",
                vec![serde_json::json!(format!("{prod} .charts"))],
            )
            .await?;
            browser.screenshot("runtime-latency-rise").await?;
            c.execute(
                "document.querySelector(arguments[0]).scrollIntoView();",
                vec![serde_json::json!(format!("{prod} .budget"))],
            )
            .await?;
            browser.screenshot("runtime-error-budget").await?;

            // Prometheus goes quiet: the tab says so and keeps the last figures.
            tower.world.served.set_prometheus_answering(false);
            tower.advance_world(600);
            eventually_every(
                LOOK,
                Duration::from_secs(30),
                "Prometheus said not answering",
                || async {
                    Ok(text_of(c, ".prometheus-state")
                        .await?
                        .is_some_and(|t| t.starts_with("Prometheus is not answering")))
                },
            )
            .await?;
            let kept = text_of(c, &format!("{prod} .sentence")).await?;
            anyhow::ensure!(
                kept.is_some_and(|t| t.contains("of requests succeeded")),
                "the last figures went"
            );
            c.execute("window.scrollTo(0, 0);", vec![]).await?;
            browser.screenshot("runtime-prometheus-quiet").await?;
            tower.world.served.set_prometheus_answering(true);
            anyhow::Ok(())
        })
        .await
        .unwrap();
    browser.close().await.unwrap();
}

#[tokio::test]
async fn a_pods_log_opens_from_the_runtime_tab_and_follows() {
    let tower = crate::support::Live::start(0.0).await.unwrap();
    let (app, answer) = crate::runtime::regressed_an_hour_in(&tower).await;
    let pod = answer["environments"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["environment"] == "prod")
        .unwrap()["pods"][0]["name"]
        .as_str()
        .unwrap()
        .to_owned();
    let browser = Browser::start().await.unwrap();
    browser
        .checked("runtime-pod-log", async {
            let c = &browser.client;
            c.goto(&tower.url(&format!("/tower?view=runtime&service={app}")))
                .await?;
            let button = format!("button[aria-label='Log of {pod}']");
            eventually_every(
                LOOK,
                Duration::from_secs(20),
                "the pod's Log button",
                || async { Ok(c.find(Locator::Css(&button)).await.is_ok()) },
            )
            .await?;
            press(c, &button).await?;
            let following = format!("Following the log of pod {pod}: ");
            eventually_every(
                LOOK,
                Duration::from_secs(20),
                "the pod's log followed",
                || async {
                    Ok(text_of(c, ".pod-log .log-status")
                        .await?
                        .is_some_and(|t| t.starts_with(&following)))
                },
            )
            .await?;
            // Kept at the end as lines arrive: the lines drawn are the container's latest.
            eventually_every(
                LOOK,
                Duration::from_secs(20),
                "the latest line drawn",
                || async {
                    let line = text_of(c, ".pod-log .log .l").await?.unwrap_or_default();
                    Ok(line.contains("[app] working"))
                },
            )
            .await?;
            // The world moves on: the lines it writes arrive on the open stream.
            let lines = |t: &str| -> usize {
                t.trim_start_matches(&following)
                    .split(' ')
                    .next()
                    .and_then(|n| n.replace(',', "").parse().ok())
                    .unwrap_or(0)
            };
            let before = lines(
                &text_of(c, ".pod-log .log-status")
                    .await?
                    .unwrap_or_default(),
            );
            tower.advance_world(10);
            eventually_every(LOOK, Duration::from_secs(20), "two more lines", || async {
                let now = text_of(c, ".pod-log .log-status")
                    .await?
                    .unwrap_or_default();
                Ok(lines(&now) >= before + 2)
            })
            .await?;
            browser.check_page("runtime-pod-log").await?;
            browser.screenshot("runtime-pod-log").await?;
            anyhow::Ok(())
        })
        .await
        .unwrap();
    browser.close().await.unwrap();
}
