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
