//! The app in headless Chromium against a real `tower demo`.

use std::time::Duration;

use anyhow::Context;
use fantoccini::Locator;
use tower_shared::fleet::Fleet;

use crate::support::{Browser, Demo};

#[tokio::test]
async fn fleet_page_shows_what_the_backend_serves() {
    // The world stands still: what the backend serves is what the page must show.
    let demo = Demo::start_with(&["--speed", "0"]).await.unwrap();
    // What the backend serves, fetched independently of the page.
    let fleet: Fleet = demo.get_json("api/fleet").await.unwrap();
    let browser = Browser::start().await.unwrap();

    browser
        .checked("fleet", async {
            let c = &browser.client;
            open_fleet(c, &demo.url).await?;

            let mut shown = texts(c, ".app-name").await?;
            let mut served: Vec<String> = fleet.apps.iter().map(|a| a.name.clone()).collect();
            shown.sort();
            served.sort();
            anyhow::ensure!(
                shown == served,
                "page shows {shown:?}, backend serves {served:?}"
            );

            // Derived in the browser from backend data: the paused canary is amber, in the
            // words the served cell calls for (20 % in its first ten minutes, then 40 %).
            let canary = hangar_sim::stories::fleet::PAUSED_CANARY;
            let prod = fleet
                .apps
                .iter()
                .find(|a| a.name == canary)
                .and_then(|a| a.cells.iter().find(|c| c.environment == "prod"))
                .context("the paused canary's prod cell")?;
            let reason = tower_shared::fleet::attention(prod)
                .context("the paused canary is calm")?
                .reason;
            anyhow::ensure!(reason.starts_with("Canary paused at"), "{reason}");
            let amber = texts(c, "td.attention").await?.join(" | ");
            anyhow::ensure!(amber.contains(&reason), "amber cells read {amber:?}");
            browser.check_page("fleet").await?;
            // Every action on the page is reachable by keyboard, with visible focus.
            browser.keyboard_reaches_everything().await?;

            // Every app name and every cell links into the app; the cell to its environment.
            // (The rows are windowed and the keyboard walk scrolled them: find the app first.)
            c.find(Locator::Css("input[type=search]"))
                .await?
                .send_keys(canary)
                .await?;
            let name_href = format!("/tower?view=deployments&service={canary}");
            c.find(Locator::Css(&format!("a.app-name[href='{name_href}']")))
                .await
                .context("the app name does not link to its Deployments tab")?;
            let cells = c
                .find_all(Locator::Css(&format!(
                    "td.cell a[href^='{name_href}&env=']"
                )))
                .await?;
            anyhow::ensure!(cells.len() == 3, "{} of the app's cells link", cells.len());
            c.find(Locator::Css(&format!(
                "td.cell a[href='{name_href}&env=prod']"
            )))
            .await?
            .click()
            .await?;
            c.wait()
                .at_most(Duration::from_secs(20))
                .for_element(Locator::Css("article.card.env.selected[data-env='prod']"))
                .await
                .context("the prod cell did not open prod")?;
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
            browser.check_page("deployments").await?;
            // Every action on the page is reachable by keyboard, with visible focus.
            browser.keyboard_reaches_everything().await?;

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
                .find_all(Locator::Css("section.focused-run .dag g.node"))
                .await?;
            anyhow::ensure!(tasks.len() == 3, "{} tasks in the run's graph", tasks.len());
            browser.check_page("pipelines").await?;
            // Every action on the page is reachable by keyboard, with visible focus.
            browser.keyboard_reaches_everything().await?;
            Ok(())
        })
        .await
        .unwrap();
    browser.close().await.unwrap();
}

/// The text of every element matching `css`, read in one go inside the page (the page
/// re-renders as data arrives, so element handles can go stale between two calls).
/// Opens the fleet page at `url` and waits until the matrix has rows.
async fn open_fleet(c: &fantoccini::Client, url: &str) -> anyhow::Result<()> {
    c.goto(url).await?;
    c.wait()
        .at_most(Duration::from_secs(20))
        .for_element(Locator::Css("table.matrix tbody tr"))
        .await
        .context("the fleet table never rendered")?;
    Ok(())
}

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
            until(Duration::from_secs(90), "every shop step done", || async {
                tower.advance_world(30);
                let statuses = texts(c, "li.step .step-status").await?;
                Ok(statuses.len() == 10 && statuses.iter().all(|s| s == "✔ Done"))
            })
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
            until(
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

            until(Duration::from_secs(90), "shop finished", || async {
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
            until(
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

/// Runs `act` (JavaScript) in the page, then waits for `done` (a JavaScript expression) to
/// hold and the next frame to be drawn; the milliseconds between, by the page's own clock
/// (the Performance API). Fails after 10 s.
async fn timed(c: &fantoccini::Client, act: &str, done: &str) -> anyhow::Result<f64> {
    let script = format!(
        "const finish = arguments[arguments.length - 1];
         const start = performance.now();
         {act};
         const deadline = start + 10000;
         const poll = () => {{
           if ({done}) {{ requestAnimationFrame(() => finish(performance.now() - start)); }}
           else if (performance.now() > deadline) {{ finish(-1); }}
           else {{ requestAnimationFrame(poll); }}
         }};
         poll();"
    );
    let took = c
        .execute_async(&script, vec![])
        .await?
        .as_f64()
        .context("no time")?;
    anyhow::ensure!(took >= 0.0, "{done} did not hold within 10 s of {act}");
    Ok(took)
}

#[tokio::test]
async fn a_fleet_of_ten_thousand_apps_is_windowed_and_timed() {
    // The demo's fleet, copied out to 10,000 apps, served as a fixed fleet. The page windows
    // its rows; what the figures are is printed (docs/scale.md), not asserted.
    const APPS: usize = 10_000;
    let demo = Demo::start().await.unwrap();
    let mut fleet: serde_json::Value = demo.get_json("api/fleet").await.unwrap();
    let originals = fleet["apps"].as_array().unwrap().clone();
    let apps: Vec<serde_json::Value> = (0..APPS)
        .map(|i| {
            let mut app = originals[i % originals.len()].clone();
            app["name"] = serde_json::json!(format!("app-{i:05}"));
            app
        })
        .collect();
    let troubled = apps
        .iter()
        .filter(|a| {
            let app: tower_shared::fleet::FleetApp = serde_json::from_value((*a).clone()).unwrap();
            tower_shared::fleet::needs_attention(&app)
        })
        .count();
    assert!(troubled > 0 && troubled < APPS);
    fleet["apps"] = serde_json::json!(apps);
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("fleet.json");
    std::fs::write(&file, fleet.to_string()).unwrap();
    // A local file: nobody to ask for a token (openApi).
    let config = dir.path().join("tower.yaml");
    std::fs::write(&config, "openApi: true\n").unwrap();
    let tower = Demo::serve_with(
        &[
            "--config",
            config.to_str().unwrap(),
            "--fleet-file",
            file.to_str().unwrap(),
        ],
        dir.path(),
    )
    .await
    .unwrap();

    let browser = Browser::start().await.unwrap();
    browser
        .checked("fleet-10k", async {
            let c = &browser.client;
            const ROWS: &str = "table.matrix tbody tr[aria-rowindex]";
            c.goto(&tower.url).await?;
            // From the start of navigation to the first rows drawn.
            let first_render = c
                .execute_async(
                    &format!(
                        "const finish = arguments[arguments.length - 1];
                         const poll = () => document.querySelector('{ROWS}')
                           ? requestAnimationFrame(() => finish(performance.now()))
                           : requestAnimationFrame(poll);
                         poll();"
                    ),
                    vec![],
                )
                .await?
                .as_f64()
                .context("no time")?;
            let count = |css: &'static str| async move {
                anyhow::Ok(c.find_all(Locator::Css(css)).await?.len())
            };
            let drawn = count(ROWS).await?;
            anyhow::ensure!((10..=60).contains(&drawn), "{drawn} rows drawn of {APPS}");
            let rowcount = c
                .execute("return document.querySelector('table.matrix').getAttribute('aria-rowcount');", vec![])
                .await?;
            anyhow::ensure!(rowcount == serde_json::json!((APPS + 1).to_string()), "{rowcount}");
            let heights = c
                .execute(&format!("return [...document.querySelectorAll('{ROWS}')].map(r => r.getBoundingClientRect().height);"), vec![])
                .await?;
            anyhow::ensure!(
                heights.as_array().unwrap().iter().all(|h| h.as_f64() == Some(60.0)),
                "every row as high as the window reckons: {heights}"
            );
            // Trouble first.
            let first = texts(c, "table.matrix tbody tr[aria-rowindex='2'] :is(td.attention, td.failing)").await?;
            anyhow::ensure!(!first.is_empty(), "the first row needs attention");
            browser.check_page("fleet-10k").await?;

            // Scrolling: 20 jumps down the window, each until the rows there are drawn.
            let mut scrolls = Vec::new();
            for step in 1..=20 {
                let top = step * 30_000;
                let index = (top / 60 + 2).min(APPS + 1);
                scrolls.push(
                    timed(
                        c,
                        &format!("document.querySelector('.matrix-window').scrollTop = {top}"),
                        &format!("document.querySelector('{ROWS}[aria-rowindex=\"{index}\"]')"),
                    )
                    .await?,
                );
            }
            // The bottom holds the last app.
            timed(
                c,
                "const w = document.querySelector('.matrix-window'); w.scrollTop = w.scrollHeight",
                &format!("document.querySelector('{ROWS}[aria-rowindex=\"{}\"]')", APPS + 1),
            )
            .await?;
            browser.screenshot("fleet-10k-scrolled").await?;

            // Filter as you type: "app-0999" a key at a time.
            let mut keys = Vec::new();
            let typed = "app-0999";
            for n in 1..=typed.len() {
                let text = &typed[..n];
                let expected = (0..APPS).filter(|i| format!("app-{i:05}").contains(text)).count();
                let shown = if expected == APPS {
                    format!("{APPS} apps")
                } else {
                    format!("{expected} of {APPS} apps")
                };
                keys.push(
                    timed(
                        c,
                        &format!(
                            "const i = document.querySelector('input[type=search]');
                             i.value = '{text}'; i.dispatchEvent(new Event('input', {{bubbles: true}}))"
                        ),
                        &format!("document.querySelector('.count').textContent === '{shown}'"),
                    )
                    .await?,
                );
            }
            let names = texts(c, ".app-name").await?;
            let wanted: Vec<String> = (9990..10_000).map(|i| format!("app-{i:05}")).collect();
            let mut sorted_names = names.clone();
            sorted_names.sort();
            anyhow::ensure!(sorted_names == wanted, "{names:?}");
            browser.check_page("fleet-10k-filtered").await?;

            // "Needs attention only", from the whole fleet.
            timed(
                c,
                "const i = document.querySelector('input[type=search]');
                 i.value = ''; i.dispatchEvent(new Event('input', {bubbles: true}))",
                &format!("document.querySelector('.count').textContent === '{APPS} apps'"),
            )
            .await?;
            let toggle = timed(
                c,
                "document.querySelector('.toolbar input[type=checkbox]').click()",
                &format!("document.querySelector('.count').textContent === '{troubled} of {APPS} apps'"),
            )
            .await?;
            let calm = count("table.matrix tbody tr[aria-rowindex]:not(:has(td.attention, td.failing))").await?;
            anyhow::ensure!(calm == 0, "{calm} rows that need no attention still shown");

            let p = |mut v: Vec<f64>, q: f64| {
                v.sort_by(f64::total_cmp);
                v[((v.len() - 1) as f64 * q).round() as usize]
            };
            println!(
                "fleet of {APPS} apps in Chromium: first render {first_render:.0} ms after navigation; \
                 filter as you type (per key) p50 {:.0} ms, max {:.0} ms; \
                 \"needs attention only\" {toggle:.0} ms; scroll (20 jumps) p50 {:.0} ms, max {:.0} ms; \
                 {drawn} rows in the DOM",
                p(keys.clone(), 0.5),
                p(keys, 1.0),
                p(scrolls.clone(), 0.5),
                p(scrolls, 1.0),
            );
            Ok(())
        })
        .await
        .unwrap();
    browser.close().await.unwrap();
}

#[tokio::test]
async fn embedded_dark_and_narrow() {
    let demo = Demo::start_with(&["--speed", "0"]).await.unwrap();
    let browser = Browser::start().await.unwrap();
    browser
        .checked("embedded", async {
            let c = &browser.client;
            // Inside a Backstage page: no masthead of its own, the theme it is given.
            c.goto(&format!("{}tower?view=services&embed=1&theme=dark", demo.url))
                .await?;
            c.wait()
                .at_most(Duration::from_secs(20))
                .for_element(Locator::Css(".in-flight"))
                .await?;
            anyhow::ensure!(texts(c, ".masthead").await?.is_empty(), "no masthead when embedded");
            let class = c
                .execute("return document.documentElement.className;", vec![])
                .await?;
            anyhow::ensure!(class == "theme-dark", "root class {class}");
            browser.check_page("services-embedded-dark").await?;

            // A phone's width: still readable, nothing wider than the screen.
            c.set_window_size(390, 844).await?;
            c.goto(&format!("{}tower?view=provisioning&service=orders-api", demo.url))
                .await?;
            c.wait()
                .at_most(Duration::from_secs(20))
                .for_element(Locator::Css("ol.steps li.step"))
                .await?;
            let overflow = c
                .execute(
                    "return document.documentElement.scrollWidth - document.documentElement.clientWidth;",
                    vec![],
                )
                .await?;
            anyhow::ensure!(overflow.as_i64() == Some(0), "horizontal overflow {overflow} px at 390 px");
            browser.check_page("provisioning-390px").await?;

            // Keyboard: the tabs and links are reachable with Tab, and focus is visible.
            c.execute("document.activeElement && document.activeElement.blur();", vec![]).await?;
            let mut reached = Vec::new();
            for _ in 0..6 {
                c.active_element().await?.send_keys("\u{e004}").await?;
                let tag = c
                    .execute("return document.activeElement.innerText || document.activeElement.tagName;", vec![])
                    .await?;
                reached.push(tag.as_str().unwrap_or_default().trim().to_owned());
            }
            anyhow::ensure!(reached.iter().any(|t| t == "Provisioning"), "tab order: {reached:?}");
            let outline = c
                .execute("return getComputedStyle(document.activeElement).outlineStyle;", vec![])
                .await?;
            anyhow::ensure!(outline != "none", "focus is visible: {outline}");
            Ok(())
        })
        .await
        .unwrap();
    browser.close().await.unwrap();
}

#[tokio::test]
async fn an_unreachable_cluster_shows_as_stale_not_as_empty() {
    let tower = crate::support::Live::start(0.0).await.unwrap();
    assert!(tower.world.served.set_cluster_up("dev", false));
    let browser = Browser::start().await.unwrap();
    browser
        .checked("stale", async {
            let c = &browser.client;
            c.goto(&tower.url("/tower?view=services")).await?;
            until(Duration::from_secs(30), "the stale notice", || async {
                Ok(texts(c, ".state.stale")
                    .await?
                    .iter()
                    .any(|t| t.contains("Cluster dev unreachable")))
            })
            .await?;
            // The last known services are still listed.
            let names = texts(c, ".in-flight .strip-name").await?;
            anyhow::ensure!(names.contains(&"orders-api".to_owned()), "{names:?}");
            browser.check_page("services-stale").await?;
            // The fleet says so too, and still shows its last known apps.
            c.goto(&tower.url("/")).await?;
            until(
                Duration::from_secs(20),
                "the fleet's stale notice",
                || async {
                    Ok(texts(c, ".state.stale")
                        .await?
                        .iter()
                        .any(|t| t.contains("Cluster dev unreachable")))
                },
            )
            .await?;
            anyhow::ensure!(
                !texts(c, ".app-name").await?.is_empty(),
                "last known apps shown"
            );
            browser.check_page("fleet-stale").await?;
            Ok(())
        })
        .await
        .unwrap();
    browser.close().await.unwrap();
}

/// Serves `html` at `/` from `listener` (its own origin); returns the page's URL.
fn serve_page(html: String, listener: tokio::net::TcpListener) -> String {
    let url = format!("http://{}/", listener.local_addr().unwrap());
    let app = axum::Router::new().route(
        "/",
        axum::routing::get(move || {
            let html = html.clone();
            async move { axum::response::Html(html) }
        }),
    );
    tokio::spawn(async move { axum::serve(listener, app).await });
    url
}

/// A page on a fresh loopback origin that frames `target`.
async fn framing_page(target: &str) -> String {
    let html = format!("<!doctype html><title>parent</title><iframe src=\"{target}\" width=800 height=600></iframe>");
    serve_page(
        html,
        tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap(),
    )
}

#[tokio::test]
async fn a_hostile_parent_cannot_frame_tower_but_an_allowed_one_can() {
    let tower = crate::support::Live::start(0.0).await.unwrap();
    // A second server for the same Tower that allows one more origin to frame it.
    let allowed_parent = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        drop(listener);
        addr
    };
    let mut state = tower_backend::state::AppState::live(tower.live.clone());
    state.frame_ancestors = std::sync::Arc::from(vec![
        "'self'".to_owned(),
        format!("http://{allowed_parent}"),
    ]);
    let router = tower_backend::app::router(
        state,
        &tower_backend::assets::Dist::open(&crate::support::dist().unwrap()).unwrap(),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let permissive = format!("http://{}/", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, router).await });

    let hostile = framing_page(&tower.url("/")).await;
    let browser = Browser::start().await.unwrap();
    browser
        .checked("framing", async {
            let c = &browser.client;
            c.goto(&hostile).await?;
            // Chromium refuses the frame: it holds its own error page, never Tower's.
            until(Duration::from_secs(20), "the frame refused", || async {
                Ok(frame_location(c).await?.starts_with("chrome-error:"))
            })
            .await?;
            let inside = frame_text(c).await?;
            anyhow::ensure!(
                !inside.contains("Tower"),
                "a hostile origin framed Tower: {inside}"
            );
            browser.screenshot("framed-by-hostile-origin").await?;

            // The control: served from the allowed origin, the same frame shows Tower.
            let html = format!(
                "<!doctype html><iframe src=\"{permissive}\" width=800 height=600></iframe>"
            );
            let parent = serve_page(html, tokio::net::TcpListener::bind(allowed_parent).await?);
            c.goto(&parent).await?;
            until(
                Duration::from_secs(20),
                "Tower inside the allowed frame",
                || async { Ok(frame_text(c).await?.contains("Tower")) },
            )
            .await
            .context("the allowed origin could not frame Tower")?;
            Ok(())
        })
        .await
        .unwrap();
    browser.close().await.unwrap();
}

#[tokio::test]
async fn a_github_rate_limit_shows_as_such_over_the_last_known_data() {
    let tower = crate::support::Live::start(0.0).await.unwrap();
    tower.spend_github_rate_limit(900).await.unwrap();
    let browser = Browser::start().await.unwrap();
    browser
        .checked("github-rate-limited", async {
            let c = &browser.client;
            for (page, data) in [
                ("/tower?view=services", ".in-flight .strip-name"),
                ("/tower?service=orders-api&view=provisioning", ".steps li"),
            ] {
                c.goto(&tower.url(page)).await?;
                until(Duration::from_secs(20), "the GitHub notice", || async {
                    Ok(texts(c, ".state.stale")
                        .await?
                        .iter()
                        .any(|t| t.contains("GitHub rate limited") && t.contains("asks again in")))
                })
                .await?;
                anyhow::ensure!(!texts(c, data).await?.is_empty(), "{page}: data kept");
            }
            browser.check_page("github-rate-limited").await?;
            Ok(())
        })
        .await
        .unwrap();
    browser.close().await.unwrap();
}

/// The text of the first frame's body (read from inside it).
/// The address of the document in the page's first frame (Chromium's own error page,
/// `chrome-error://…`, when it refused to render the frame).
async fn frame_location(c: &fantoccini::Client) -> anyhow::Result<String> {
    c.enter_frame(0).await?;
    let href = c.execute("return String(location.href);", vec![]).await;
    c.enter_parent_frame().await?;
    Ok(href?.as_str().unwrap_or_default().to_owned())
}

async fn frame_text(c: &fantoccini::Client) -> anyhow::Result<String> {
    c.enter_frame(0).await?;
    let text = c
        .execute(
            "return document.body ? document.body.innerText : '';",
            vec![],
        )
        .await;
    c.enter_parent_frame().await?;
    Ok(text?.as_str().unwrap_or_default().to_owned())
}

#[tokio::test]
async fn inside_backstage_the_token_arrives_by_post_message_from_backstage_only() {
    let tower = crate::support::Live::start(0.0).await.unwrap();
    let backstage = format!("http://{}", tower.world.served.backstage);
    let inside = tower.url("/tower?view=services&embed=1");
    let page = |hold: bool| {
        let mut url = reqwest::Url::parse(&format!("{backstage}/tower")).unwrap();
        url.query_pairs_mut().append_pair("tower", &inside);
        if hold {
            url.query_pairs_mut().append_pair("hold", "1");
        }
        url.to_string()
    };
    // A page on another origin that posts a real user token to Tower's frame in its parent.
    let stolen = crate::support::guest_token(&backstage).await.unwrap();
    let hostile = {
        let html = format!(
            "<!doctype html><script>\
             parent.frames[0].postMessage({{type: 'backstage-token', token: '{stolen}'}}, '*');\
             parent.postMessage('hostile-sent', '*');</script>"
        );
        serve_page(
            html,
            tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap(),
        )
    };
    let browser = Browser::start().await.unwrap();
    browser
        .checked("post-message-sign-in", async {
            let c = &browser.client;
            // Backstage holds the token back: Tower explains, and shows no data.
            c.goto(&page(true)).await?;
            // Tower asks, and keeps asking while nobody answers.
            until(Duration::from_secs(20), "Tower asks for its token thrice", || async {
                Ok(c.execute("return window.towerAsked || 0;", vec![]).await?.as_u64() >= Some(3))
            })
            .await?;
            let waiting = frame_text(c).await?;
            anyhow::ensure!(waiting.contains("Waiting for Backstage"), "{waiting}");

            // Malformed messages from Backstage's own origin are dropped.
            c.execute(
                "const w = document.getElementById('tower').contentWindow;\
                 const o = new URL(new URLSearchParams(location.search).get('tower')).origin;\
                 for (const m of ['backstage-token', 42, null, {type: 'backstage-token'},\
                   {type: 'backstage-token', token: 42}, {type: 'backstage-token', token: ''},\
                   {type: 'other', token: 'x'}]) { w.postMessage(m, o); }",
                vec![],
            )
            .await?;
            // A real token from another origin is dropped too.
            c.execute(
                "window.addEventListener('message', e => { if (e.data === 'hostile-sent') window.hostileSent = true; });\
                 const f = document.createElement('iframe'); f.src = arguments[0]; document.body.appendChild(f);",
                vec![serde_json::json!(hostile)],
            )
            .await?;
            until(Duration::from_secs(10), "the hostile frame posts", || async {
                Ok(c.execute("return window.hostileSent === true;", vec![]).await? == true)
            })
            .await?;
            // Tower asks for its token once a second until it has one: two more asks after
            // every message arrived mean it read them all and still has none.
            let asked = || async {
                anyhow::Ok(c.execute("return window.towerAsked || 0;", vec![]).await?.as_u64().unwrap_or(0))
            };
            let after = asked().await?;
            until(Duration::from_secs(10), "Tower asks twice more", || async {
                Ok(asked().await? >= after + 2)
            })
            .await?;
            let still = frame_text(c).await?;
            anyhow::ensure!(
                still.contains("Waiting for Backstage") && !still.contains("orders-api"),
                "signed in by a message it should have dropped: {still}"
            );
            browser.screenshot("post-message-dropped").await?;

            // The control: Backstage hands the token over, and Tower shows the services.
            c.execute("window.handOver();", vec![]).await?;
            until(Duration::from_secs(20), "Tower signed in", || async {
                Ok(frame_text(c).await?.contains("orders-api"))
            })
            .await?;

            // Without holding back, the page signs Tower in by itself; the token is in no URL.
            c.goto(&page(false)).await?;
            until(Duration::from_secs(20), "Tower signed in by itself", || async {
                Ok(frame_text(c).await?.contains("orders-api"))
            })
            .await?;
            c.enter_frame(0).await?;
            let href = c.execute("return location.href;", vec![]).await?;
            c.enter_parent_frame().await?;
            let parent = c.current_url().await?.to_string();
            for url in [href.as_str().unwrap_or_default(), parent.as_str()] {
                anyhow::ensure!(!url.contains("eyJ"), "a token in a URL: {url}");
            }
            browser.screenshot("post-message-signed-in").await?;
            Ok(())
        })
        .await
        .unwrap();
    browser.close().await.unwrap();
}

#[tokio::test]
async fn behind_an_authenticating_proxy_the_page_needs_no_token() {
    // No guest sign-in: without the proxy, the page would explain how to sign in.
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("tower.yaml");
    std::fs::write(
        &config,
        "proxy:\n  userHeader: X-Forwarded-User\n  trustedAddresses: [127.0.0.1/32]\n",
    )
    .unwrap();
    let tower =
        crate::support::Demo::serve_with(&["--config", config.to_str().unwrap()], dir.path())
            .await
            .unwrap();
    let proxy = crate::support::authenticating_proxy(&tower.url, "X-Forwarded-User", "jane")
        .await
        .unwrap();
    let browser = Browser::start().await.unwrap();
    browser
        .checked("proxy-sign-in", async {
            let c = &browser.client;
            c.goto(&format!("{}tower?view=services", tower.url)).await?;
            until(
                Duration::from_secs(20),
                "the sign-in explanation",
                || async {
                    Ok(texts(c, ".state.signin")
                        .await?
                        .iter()
                        .any(|t| t.contains("Sign-in needed")))
                },
            )
            .await?;
            let body = |c: &fantoccini::Client| {
                let c = c.clone();
                async move {
                    let text = c.execute("return document.body.innerText;", vec![]).await?;
                    anyhow::Ok(text.as_str().unwrap_or_default().to_owned())
                }
            };
            anyhow::ensure!(
                !body(c).await?.contains("Nothing is being provisioned"),
                "the services page without sign-in"
            );
            c.goto(&format!("{proxy}/tower?view=services")).await?;
            until(
                Duration::from_secs(20),
                "the services page through the proxy",
                || async { Ok(body(c).await?.contains("Nothing is being provisioned")) },
            )
            .await?;
            // With no token to send, the page still follows the event stream (through the proxy).
            let metrics = format!("{proxy}/metrics");
            until(
                Duration::from_secs(20),
                "the page on the event stream",
                || async {
                    let text = reqwest::get(&metrics).await?.text().await?;
                    Ok(text.contains(
                        "tower_http_requests_total{route=\"/api/events\",status=\"200\"}",
                    ))
                },
            )
            .await?;
            browser.check_page("behind-a-proxy").await?;
            Ok(())
        })
        .await
        .unwrap();
    browser.close().await.unwrap();
}

/// The page runs under Tower's Content-Security-Policy (its own scripts and WebAssembly,
/// requests to Tower only) and a script injected inline does not run.
#[tokio::test]
async fn the_page_works_under_its_csp_and_an_injected_inline_script_does_not_run() {
    let demo = Demo::start_with(&["--speed", "0"]).await.unwrap();
    let page = reqwest::get(&demo.url).await.unwrap();
    let policy = page.headers()["content-security-policy"]
        .to_str()
        .unwrap()
        .to_owned();
    for directive in [
        "default-src 'self'",
        "script-src 'self' 'wasm-unsafe-eval' 'sha256-",
        "connect-src 'self'",
        "form-action 'none'",
    ] {
        assert!(
            policy.contains(directive),
            "{directive} missing from {policy}"
        );
    }
    let browser = Browser::start().await.unwrap();
    browser
        .checked("csp", async {
            let c = &browser.client;
            // The WASM app ran (under its CSP): it drew the fleet from the API.
            open_fleet(c, &demo.url).await?;
            let ran = c
                .execute_async(
                    "const done = arguments[arguments.length - 1];
                     let refused = false;
                     document.addEventListener('securitypolicyviolation', () => { refused = true; });
                     const s = document.createElement('script');
                     s.textContent = 'window.injectedRan = true;';
                     document.body.appendChild(s);
                     setTimeout(() => done([window.injectedRan === true, refused]), 200);",
                    vec![],
                )
                .await?;
            let (ran, refused): (bool, bool) = serde_json::from_value(ran)?;
            anyhow::ensure!(!ran, "an injected inline script ran");
            anyhow::ensure!(refused, "the browser reported no CSP violation");
            Ok(())
        })
        .await
        .unwrap();
    browser.close().await.unwrap();
}

#[tokio::test]
async fn the_kubernetes_deployments_tab_says_the_paused_canary_in_plain_words_and_draws_it() {
    // The world standing still (moved past the canary's ten minutes at 20 % if it started
    // in them): flight-api's prod canary is paused at 40 % while a background analysis
    // measures its error rate.
    let tower = crate::support::Live::start(0.0).await.unwrap();
    let canary = tower.paused_canary_at_40().await.unwrap();
    assert_eq!(canary, "flight-api", "the vision's canary");
    let browser = Browser::start().await.unwrap();
    browser
        .checked("deployments-k8s", async {
            let c = &browser.client;
            c.goto(&tower.url(&format!("/tower?service={canary}")))
                .await?;
            let prod = c
                .wait()
                .at_most(Duration::from_secs(20))
                .for_element(Locator::Css(
                    "section.deployments.k8s article[data-env='prod']",
                ))
                .await
                .context("the Kubernetes Deployments tab never rendered prod")?;
            let summary = prod.find(Locator::Css(".summary")).await?.text().await?;
            anyhow::ensure!(
                summary.contains("paused at 40% of traffic")
                    && summary.contains("waiting for someone to promote it")
                    && !summary.contains("Suspended"),
                "summary reads {summary:?}"
            );
            // The ramp marks the current step, the split shows 60/40, the metric is charted.
            let current = prod
                .find_all(Locator::Css(".ramp .ramp-step.current"))
                .await?;
            anyhow::ensure!(current.len() == 1, "{} current steps", current.len());
            let split = prod
                .find(Locator::Css(".split svg"))
                .await?
                .attr("aria-label")
                .await?;
            anyhow::ensure!(
                split.as_deref() == Some("Traffic: 60% stable, 40% canary"),
                "split {split:?}"
            );
            let points = prod.find_all(Locator::Css(".metric circle.ok")).await?;
            anyhow::ensure!(!points.is_empty(), "no measurement drawn");
            let envs = texts(c, "section.deployments.k8s article h3").await?;
            anyhow::ensure!(
                envs.iter()
                    .map(|e| e.split(' ').next().unwrap_or_default())
                    .collect::<Vec<_>>()
                    == ["dev", "staging", "prod"],
                "environments {envs:?}"
            );
            // The canary's image is vouched for beside it: signed, its provenance's commit and
            // its transparency log entry linked, its SBOM named.
            let evidence = prod
                .find(Locator::Css(
                    "section.evidence.signed[aria-label='Canary image evidence']",
                ))
                .await
                .context("no signed evidence for the canary's image")?;
            let badge = evidence
                .find(Locator::Css(".verdict"))
                .await?
                .text()
                .await?;
            anyhow::ensure!(badge == "✔ Signed", "badge {badge:?}");
            let rekor = evidence
                .find(Locator::Css(".transparency a"))
                .await?
                .attr("href")
                .await?
                .unwrap_or_default();
            anyhow::ensure!(
                rekor.starts_with("https://search.sigstore.dev/?logIndex="),
                "transparency link {rekor:?}"
            );
            let commit = evidence
                .find(Locator::Css(".provenance .source a"))
                .await?
                .attr("href")
                .await?
                .unwrap_or_default();
            anyhow::ensure!(
                commit.starts_with(&format!("https://github.com/acme/{canary}/commit/")),
                "provenance commit link {commit:?}"
            );
            let sbom = evidence.find(Locator::Css(".sbom")).await?.text().await?;
            anyhow::ensure!(sbom.ends_with(".sbom"), "sbom {sbom:?}");
            browser.check_page("deployments-k8s").await?;

            // A deep link to one environment marks it, and the picker names it.
            c.goto(&tower.url(&format!(
                "/tower?view=deployments&service={canary}&env=prod"
            )))
            .await?;
            c.wait()
                .at_most(Duration::from_secs(20))
                .for_element(Locator::Css("article.card.env.selected[data-env='prod']"))
                .await
                .context("env=prod did not pick prod")?;
            let picked = texts(c, ".env-picker a[aria-current='page']").await?;
            anyhow::ensure!(picked == ["prod"], "picker marks {picked:?}");
            let others = c.find_all(Locator::Css("article.card.env.other")).await?;
            anyhow::ensure!(others.len() == 2, "{} other environments", others.len());
            Ok(())
        })
        .await
        .unwrap();
    browser.close().await.unwrap();
}

/// Reads the prod card's summary and its traffic split's label.
async fn prod_card(c: &fantoccini::Client) -> anyhow::Result<(String, String)> {
    let prod = c
        .find(Locator::Css(
            "section.deployments.k8s article[data-env='prod']",
        ))
        .await?;
    let summary = prod.find(Locator::Css(".summary")).await?.text().await?;
    let split = prod
        .find(Locator::Css(".split svg"))
        .await?
        .attr("aria-label")
        .await?
        .unwrap_or_default();
    Ok((summary, split))
}

#[tokio::test]
async fn the_deployments_tab_follows_a_canary_live_and_explains_an_aborted_one() {
    use hangar_sim::stories::fleet::{Chains, Role, SteadyFleet};
    let tower = crate::support::Live::start(0.0).await.unwrap();
    let browser = Browser::start().await.unwrap();
    browser
        .checked("deployments-live", async {
            let c = &browser.client;
            // A canary a minute into its prod rollout: 20 %, pausing ten minutes.
            let moving = crate::support::fleet_app(Role::CompletingCanary);
            let start = moving.prod_rollout_at(tower.world_now());
            tower.advance_world((start - tower.world_now()).num_seconds() + 60);
            tower
                .deployments_until(&moving.name, "the canary at 20%", |body| {
                    crate::support::prod_rollout(body)["canaryWeight"] == 20
                })
                .await?;
            c.goto(&tower.url(&format!(
                "/tower?view=deployments&service={}&env=prod",
                moving.name
            )))
            .await?;
            until(Duration::from_secs(20), "the canary at 20%", || async {
                Ok(prod_card(c).await.is_ok_and(|(_, split)| split == "Traffic: 80% stable, 20% canary"))
            })
            .await?;
            let (summary, _) = prod_card(c).await?;
            anyhow::ensure!(
                summary.contains("paused at 20% of traffic, for a pause of 10m that ends on its own"),
                "summary {summary:?}"
            );
            // Ten minutes on, the page redraws at 40 % by itself: no reload (the mark stays).
            c.execute("window.towerMark = 'still here';", vec![]).await?;
            tower.advance_world(600);
            until(Duration::from_secs(20), "the canary at 40% without a reload", || async {
                Ok(prod_card(c).await.is_ok_and(|(_, split)| split == "Traffic: 60% stable, 40% canary"))
            })
            .await?;
            let mark = c.execute("return window.towerMark || null;", vec![]).await?;
            anyhow::ensure!(mark == "still here", "the page was reloaded: {mark}");
            browser.screenshot("deployments-canary-live").await?;

            // A canary whose step analysis failed: aborted, the failing metric named and its
            // failed measurements marked on the chart.
            let aborting = crate::support::fleet_app(Role::AbortedCanary);
            let start = aborting.prod_rollout_at(tower.world_now());
            tower.advance_world((start - tower.world_now()).num_seconds() + 300);
            // The release before was aborted too: wait for this one's canary.
            let image = aborting.prod_image(tower.world_now());
            tower
                .deployments_until(&aborting.name, "the canary aborted", |body| {
                    let rollout = crate::support::prod_rollout(body);
                    rollout["aborted"] == true && rollout["canary"]["image"] == image.as_str()
                })
                .await?;
            c.goto(&tower.url(&format!(
                "/tower?view=deployments&service={}&env=prod",
                aborting.name
            )))
            .await?;
            // The Rollout's abort may reach Tower a moment before the AnalysisRun that says
            // why: the summary names the failed metric once it has.
            until(Duration::from_secs(20), "the aborted canary and why", || async {
                Ok(prod_card(c).await.is_ok_and(|(summary, _)| {
                    summary.contains("aborted") && summary.contains("the analysis metric")
                }))
            })
            .await?;
            let (summary, split) = prod_card(c).await?;
            anyhow::ensure!(
                summary.contains("all traffic is back on the stable version")
                    && summary.contains("the analysis metric error-rate failed"),
                "summary {summary:?}"
            );
            anyhow::ensure!(split == "Traffic: 100% stable, 0% canary", "split {split:?}");
            // The AnalysisRun's measurements may reach Tower a moment after the Rollout's
            // abort: the chart marks them when they do.
            until(Duration::from_secs(20), "three failed measurements marked", || async {
                let failed = c
                    .find_all(Locator::Css("article[data-env='prod'] .metric text.failed"))
                    .await?;
                Ok(failed.len() == 3)
            })
            .await?;
            let card = c
                .find(Locator::Css("article.card.env.failing[data-env='prod'] .attention"))
                .await?
                .text()
                .await?;
            anyhow::ensure!(card.contains("analysis metric error-rate failed"), "attention {card:?}");
            browser.check_page("deployments-aborted").await?;

            // An app whose builds Tekton Chains does not sign: said plainly, not hidden.
            let fleet = SteadyFleet::new(1, crate::support::test_start());
            let unsigned = fleet
                .apps
                .iter()
                .find(|a| a.chains == Chains::Absent && a.role == Role::Steady)
                .context("an app without Chains")?;
            c.goto(&tower.url(&format!(
                "/tower?view=deployments&service={}&env=prod",
                unsigned.name
            )))
            .await?;
            let evidence = c
                .wait()
                .at_most(Duration::from_secs(20))
                .for_element(Locator::Css(
                    "article[data-env='prod'] section.evidence.unsigned[aria-label='Stable image evidence']",
                ))
                .await
                .context("no unsigned evidence panel")?;
            let badge = evidence.find(Locator::Css(".verdict")).await?.text().await?;
            let said = evidence.text().await?;
            anyhow::ensure!(badge == "✖ Not signed", "badge {badge:?}");
            for plainly in ["no provenance recorded", "no transparency log entry", "no SBOM published"] {
                anyhow::ensure!(said.contains(plainly), "{plainly:?} not said in {said:?}");
            }
            browser.check_page("deployments-evidence-unsigned").await?;
            Ok(())
        })
        .await
        .unwrap();
    browser.close().await.unwrap();
}

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
            until(Duration::from_secs(20), &what, || async {
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
            // The node links to the task: its steps, the failed one with its exit code.
            c.find(Locator::Css(".dag .task-links a[href$='&task=unit-tests']"))
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
            crate::support::eventually(Duration::from_secs(5), "the log stream closed", || async {
                (streams().log_streams_open == 0).then_some(())
            })
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
            until(
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
            until(
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
            until(
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
            let tag = app
                .prod_image(start)
                .rsplit(':')
                .next()
                .context("tag")?
                .to_owned();
            c.goto(&tower.url(&format!("/tower?view=releases&service={}", app.name)))
                .await?;
            let row = format!("table.releases tr[data-release='{tag}']");
            until(
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
            until(Duration::from_secs(20), "the canary in prod", || async {
                let cell = c
                    .find_all(Locator::Css(&format!(
                        "{row} td[data-env='prod'][data-state='canary']"
                    )))
                    .await?;
                Ok(match cell.first() {
                    Some(cell) => cell.text().await?.contains("canary at 20%"),
                    None => false,
                })
            })
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
            until(
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
            until(Duration::from_secs(20), "the comparison", || async {
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

/// The text of the first element `css` finds, if any.
async fn text_of(c: &fantoccini::Client, css: &str) -> anyhow::Result<Option<String>> {
    match c.find_all(Locator::Css(css)).await?.first() {
        Some(found) => Ok(Some(found.text().await?)),
        None => Ok(None),
    }
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
            until(Duration::from_secs(20), "the promote button", || async {
                Ok(!c.find_all(Locator::Css(button)).await?.is_empty())
            })
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
            until(Duration::from_secs(20), "the diff", || async {
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
            until(Duration::from_secs(20), "the commit made", || async {
                Ok(text_of(c, ".promotion .promoted")
                    .await?
                    .is_some_and(|t| t.starts_with("Committed")))
            })
            .await?;
            // Argo CD syncs the commit: the matrix follows, no reload.
            let cell = |env: &str, state: &str| {
                format!("{row} td[data-env='{env}'][data-state='{state}']")
            };
            until(Duration::from_secs(20), "the canary in staging", || async {
                Ok(text_of(c, &cell("staging", "canary"))
                    .await?
                    .is_some_and(|t| t.contains("canary at 20%")))
            })
            .await?;
            browser.screenshot("promote-staging-canary").await?;
            // … and so does the Deployments tab.
            c.find(Locator::Css("nav.tabs a[href*='view=deployments']"))
                .await?
                .click()
                .await?;
            until(Duration::from_secs(20), "the Deployments tab", || async {
                let body = c.find(Locator::Css("body")).await?.text().await?;
                Ok(body.contains(&tag) && body.contains("20%"))
            })
            .await?;
            // Argo CD's own action, from the environment's card: asked of Argo CD's API.
            c.find(Locator::Css(
                "article[data-env='staging'] button.sync:enabled",
            ))
            .await?
            .click()
            .await?;
            until(Duration::from_secs(20), "Argo CD syncing", || async {
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
            until(Duration::from_secs(20), "live in staging", || async {
                Ok(!c
                    .find_all(Locator::Css(&cell("staging", "live")))
                    .await?
                    .is_empty())
            })
            .await?;

            // Prod goes by a pull request.
            let to_prod = format!("{row} td[data-env='prod'] button.promote:enabled");
            until(Duration::from_secs(20), "the prod button", || async {
                Ok(!c.find_all(Locator::Css(&to_prod)).await?.is_empty())
            })
            .await?;
            c.find(Locator::Css(&to_prod)).await?.click().await?;
            until(Duration::from_secs(20), "the prod diff", || async {
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
            until(
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
            until(
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
            until(Duration::from_secs(20), "the canary in prod", || async {
                Ok(!c
                    .find_all(Locator::Css(&cell("prod", "canary")))
                    .await?
                    .is_empty())
            })
            .await?;
            tower.advance_world(25 * 60);
            until(Duration::from_secs(20), "live in prod", || async {
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
async fn a_paused_canary_is_resumed_and_another_aborted_through_argo_cd() {
    use hangar_sim::stories::fleet::{Role, SteadyFleet, AWAITING_PROMOTION, PAUSED_CANARY};
    let tower = crate::support::Live::start(0.0).await.unwrap();
    // The completing canary's app is team-b's: move the world into its walk.
    let now = tower.world_now();
    let fleet = SteadyFleet::new(1, now);
    let walking = fleet.app(Role::CompletingCanary).unwrap();
    assert_eq!(walking.owner, "team-b", "the guest does not own it");
    let (other, started) = (walking.name.clone(), walking.prod_rollout_started(now));
    if now - started > chrono::Duration::seconds(600) {
        tower.advance_world((walking.prod_rollout_at(now) - now).num_seconds() + 60);
    }
    crate::canary_actions::to_the_pause(&tower);
    let browser = Browser::start().await.unwrap();
    browser
        .checked("canary-actions", async {
            let c = &browser.client;
            let card = |env: &str| format!("article[data-env='{env}']");
            let deployments = |app: &str, env: &str| {
                tower.url(&format!("/tower?view=deployments&service={app}&env={env}"))
            };

            // Someone else's canary: its buttons are there, disabled, with the reason.
            c.goto(&deployments(&other, "prod")).await?;
            let buttons = format!("{} button.canary-action", card("prod"));
            // Read in one go, and again if the card was being redrawn (the platform moves).
            let disabled = std::cell::RefCell::new(Vec::new());
            until(
                Duration::from_secs(20),
                "the team-b canary's actions",
                || async {
                    let read = c
                        .execute(
                            "return Array.from(document.querySelectorAll(arguments[0])).map(b => b.disabled);",
                            vec![serde_json::json!(buttons)],
                        )
                        .await?;
                    let read = read.as_array().cloned().unwrap_or_default();
                    let any = !read.is_empty();
                    *disabled.borrow_mut() = read;
                    Ok(any)
                },
            )
            .await?;
            let disabled = disabled.into_inner();
            anyhow::ensure!(
                disabled.iter().all(|x| x == true),
                "a non-owner's button is enabled: {disabled:?}"
            );
            let why = text_of(c, &format!("{} .why-not", card("prod"))).await?;
            anyhow::ensure!(
                why.as_deref().is_some_and(|w| w.contains("team-b")),
                "the reason: {why:?}"
            );
            browser.screenshot("canary-actions-not-owner").await?;

            // The paused canary: Resume says where the traffic goes, and takes it there.
            c.goto(&deployments(PAUSED_CANARY, "prod")).await?;
            let resume = format!(
                "{} button.canary-action[data-action='resume']:enabled",
                card("prod")
            );
            until(Duration::from_secs(20), "the resume button", || async {
                Ok(text_of(c, &resume)
                    .await?
                    .is_some_and(|t| t == "Resume: traffic goes from 40% to 80%"))
            })
            .await?;
            browser.check_page("canary-actions").await?;
            browser.screenshot("canary-paused-actions").await?;
            press(c, &resume).await?;
            until(
                Duration::from_secs(20),
                "the canary at its next step",
                || async {
                    let said = text_of(
                        c,
                        &format!("{} .canary-actions [role='status']", card("prod")),
                    )
                    .await?;
                    let summary = text_of(c, &format!("{} .summary", card("prod"))).await?;
                    Ok(said.is_some_and(|s| s.starts_with("Argo CD ran"))
                        && summary.is_some_and(|s| s.contains("80%")))
                },
            )
            .await?;
            anyhow::ensure!(tower.world.served.argocd_actions().len() == 1);
            browser.screenshot("canary-resumed").await?;

            // Another canary — a release promoted to staging — aborted: asked twice, then
            // all traffic is back on stable.
            crate::promotions::canary_in_staging(&tower).await;
            c.goto(&deployments(AWAITING_PROMOTION, "staging")).await?;
            let abort = format!(
                "{} button.canary-action[data-action='abort']:enabled",
                card("staging")
            );
            until(Duration::from_secs(20), "the abort button", || async {
                Ok(text_of(c, &abort)
                    .await?
                    .is_some_and(|t| t.starts_with("Abort: all traffic back to")))
            })
            .await?;
            press(c, &abort).await?;
            until(
                Duration::from_secs(10),
                "the abort's confirmation",
                || async {
                    Ok(text_of(c, &abort)
                        .await?
                        .is_some_and(|t| t.starts_with("Confirm abort")))
                },
            )
            .await?;
            anyhow::ensure!(tower.world.served.argocd_actions().len() == 1, "not yet");
            press(c, &abort).await?;
            until(
                Duration::from_secs(20),
                "traffic back on stable",
                || async {
                    Ok(text_of(c, &format!("{} .summary", card("staging")))
                        .await?
                        .is_some_and(|s| s.contains("all traffic is back on the stable version")))
                },
            )
            .await?;
            let retry = format!(
                "{} button.canary-action[data-action='retry']",
                card("staging")
            );
            until(Duration::from_secs(20), "a retry offered", || async {
                Ok(!c.find_all(Locator::Css(&retry)).await?.is_empty())
            })
            .await?;
            anyhow::ensure!(tower.world.served.argocd_actions().len() == 2);
            browser.screenshot("canary-aborted").await?;
            Ok(())
        })
        .await
        .unwrap();
    browser.close().await.unwrap();
}

/// Clicks what `css` finds, in one step in the page (the card may be redrawn between a
/// lookup and a click as the platform moves).
async fn press(c: &fantoccini::Client, css: &str) -> anyhow::Result<()> {
    let found = c
        .execute(
            "const b = document.querySelector(arguments[0]); if (b) { b.click(); } return !!b;",
            vec![serde_json::json!(css)],
        )
        .await?;
    anyhow::ensure!(found == true, "nothing to press at {css}");
    Ok(())
}

#[tokio::test]
async fn a_release_record_is_proposed_merged_written_up_by_people_and_downloaded() {
    use hangar_sim::stories::fleet::AWAITING_PROMOTION as APP;
    let tower = crate::support::Live::start(0.0).await.unwrap();
    let recorder = tower.record_releases();
    let image = crate::promotions::live_in_prod(&tower).await;
    let release = tower_shared::hangar::release_name(&image)
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
            until(
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
            until(Duration::from_secs(20), "the record link", || async {
                Ok(!c.find_all(Locator::Css(&link)).await?.is_empty())
            })
            .await?;
            until(
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
            until(Duration::from_secs(20), "the record's page", || async {
                Ok(text_of(c, "article.record .state")
                    .await?
                    .is_some_and(|t| t.starts_with("Not merged yet")))
            })
            .await?;

            // Merged on GitHub: the form appears; the shared rules refuse an empty summary.
            crate::promotions::merge(&tower, &repo, record_pr[0]).await;
            until(
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
            until(Duration::from_secs(10), "the summary's error", || async {
                Ok(text_of(c, "form.notes .field-error")
                    .await?
                    .is_some_and(|t| t == "write a plain summary"))
            })
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
            c.find(Locator::Css("#notes-sign")).await?.click().await?;
            browser.check_page("release-record").await?;
            press(c, "button.propose-notes").await?;
            until(
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
            until(
                Duration::from_secs(30),
                "the human part in the record",
                || async {
                    c.refresh().await?;
                    for _ in 0..20 {
                        if let Some(t) = text_of(c, "dl.human").await? {
                            return Ok(t.contains("Checkout is faster.")
                                && t.contains("low")
                                && t.contains("by "));
                        }
                        tokio::time::sleep(Duration::from_millis(100)).await;
                    }
                    Ok(false)
                },
            )
            .await?;
            press(c, "button.download-html").await?;
            press(c, "button.download-pdf").await?;
            until(Duration::from_secs(20), "both downloads", || async {
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

/// Sets the value of the input `css` finds and tells the page, as typing does.
async fn type_into(c: &fantoccini::Client, css: &str, value: &str) -> anyhow::Result<()> {
    let found = c
        .execute(
            "const e = document.querySelector(arguments[0]); if (!e) { return false; } \
             e.value = arguments[1]; e.dispatchEvent(new Event('input', {bubbles: true})); return true;",
            vec![serde_json::json!(css), serde_json::json!(value)],
        )
        .await?;
    anyhow::ensure!(found == true, "nothing to type into at {css}");
    Ok(())
}

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
            until(
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
            until(
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
async fn the_fleets_activity_shows_a_canary_aborted_while_the_page_is_open() {
    use hangar_sim::stories::fleet::PAUSED_CANARY;
    let tower = crate::support::Live::start(0.0).await.unwrap();
    let browser = Browser::start().await.unwrap();
    browser
        .checked("fleet-activity", async {
            let c = &browser.client;
            c.goto(&tower.url("/tower")).await?;
            until(Duration::from_secs(20), "the activity feed", || async {
                Ok(text_of(c, ".activity-items li").await?.is_some())
            })
            .await?;
            // Aborted through Tower's canary actions while the page is open: the feed says
            // so at its top without a reload ("just now"; another app's release arriving at
            // the same second may share the top), linking to the app's prod deployment.
            crate::canary_actions::abort_the_paused_canary(&tower).await;
            let said = format!("{PAUSED_CANARY}'s canary in prod was aborted");
            let top = "return [...document.querySelectorAll('.activity-items li')].slice(0, 3)
                .map(li => [li.innerText, li.querySelector('a').getAttribute('href')]);";
            let found = std::cell::RefCell::new(None);
            until(Duration::from_secs(20), "the abort at the top", || async {
                let items: Vec<(String, String)> =
                    serde_json::from_value(c.execute(top, vec![]).await?)?;
                let href = items
                    .into_iter()
                    .find(|(text, _)| text.contains(&said) && text.starts_with("just now"))
                    .map(|(_, href)| href);
                let seen = href.is_some();
                *found.borrow_mut() = href;
                Ok(seen)
            })
            .await?;
            let href = found.into_inner();
            anyhow::ensure!(
                href.as_deref()
                    == Some(&*format!(
                        "/tower?view=deployments&service={PAUSED_CANARY}&env=prod"
                    )),
                "{href:?}"
            );
            browser.check_page("fleet-activity").await?;
            browser.screenshot("fleet-activity").await?;
            anyhow::Ok(())
        })
        .await
        .unwrap();
    browser.close().await.unwrap();
}

#[tokio::test]
async fn the_fleet_says_its_dora_figures_and_what_they_counted() {
    let tower = crate::support::Live::start(0.0).await.unwrap();
    // Past the aborting canary's third failed measurement (two minutes in), whenever the
    // world started; the page reads the figures once, so wait for Tower to count it.
    tower.advance_world(180);
    crate::support::eventually(Duration::from_secs(30), "the abort counted", || async {
        let (_, dora) = tower.get("/api/dora").await.ok()?;
        (!dora["failed"].as_array()?.is_empty()).then_some(())
    })
    .await
    .unwrap();
    let browser = Browser::start().await.unwrap();
    browser
        .checked("fleet-dora", async {
            let c = &browser.client;
            c.goto(&tower.url("/tower")).await?;
            until(Duration::from_secs(20), "the DORA sentence", || async {
                Ok(text_of(c, ".dora .sentence")
                    .await?
                    .is_some_and(|t| t.starts_with("Over the last 7 days: ")))
            })
            .await?;
            let sentence = text_of(c, ".dora .sentence").await?.unwrap_or_default();
            anyhow::ensure!(
                sentence.contains("went live in prod")
                    && sentence.contains("from merge to prod")
                    && sentence.contains("rollouts that ended failed"),
                "{sentence}"
            );
            // What it counted: every rollout links to its app's Releases tab.
            c.find(Locator::Css(".dora details summary"))
                .await?
                .click()
                .await?;
            let links = c
                .execute(
                    "return [...document.querySelectorAll('.dora-rollouts a')].map(a => a.getAttribute('href'));",
                    vec![],
                )
                .await?;
            let links = links.as_array().cloned().unwrap_or_default();
            anyhow::ensure!(
                !links.is_empty()
                    && links.iter().all(|l| l
                        .as_str()
                        .is_some_and(|l| l.starts_with("/tower?view=releases&service="))),
                "{links:?}"
            );
            let aborted = text_of(c, ".dora-rollouts").await?.unwrap_or_default();
            anyhow::ensure!(aborted.contains("aborted"), "{aborted}");
            // The headline: the same week's failure rate, the apps the matrix marks, the
            // last day's deploys.
            let (_, week) = tower.get("/api/dora").await?;
            let rate = format!(
                "{:.0} %",
                week["changeFailureRate"].as_f64().unwrap_or_default() * 100.0
            );
            let strip = text_of(c, ".headline-strip").await?.unwrap_or_default();
            let (_, fleet) = tower.get("/api/fleet").await?;
            let fleet: Fleet = serde_json::from_value(fleet)?;
            let attention = fleet
                .apps
                .iter()
                .filter(|a| tower_shared::fleet::needs_attention(a))
                .count();
            anyhow::ensure!(
                strip.contains(&format!("Change failure rate, 7 days\n{rate}"))
                    && strip.contains(&format!("Apps needing attention\n{attention}"))
                    && !strip.contains("Deploys to prod, last 24 h\nunknown"),
                "{strip}"
            );
            browser.check_page("fleet-dora").await?;
            browser.screenshot("fleet-dora").await?;
            // Another window, chosen on the panel: the figures over it.
            c.find(Locator::Css(".dora select"))
                .await?
                .select_by_value("30")
                .await?;
            until(Duration::from_secs(20), "the month's figures", || async {
                Ok(text_of(c, ".dora .sentence")
                    .await?
                    .is_some_and(|t| t.starts_with("Over the last 30 days: ")))
            })
            .await?;

            // One app's figures under its release matrix: the aborting canary's one failure.
            let aborting = crate::support::fleet_app(hangar_sim::stories::fleet::Role::AbortedCanary).name;
            c.goto(&tower.url(&format!("/tower?view=releases&service={aborting}")))
                .await?;
            until(Duration::from_secs(20), "the app's DORA sentence", || async {
                Ok(text_of(c, ".dora .sentence")
                    .await?
                    .is_some_and(|t| t.contains("1 of ") && t.contains("rollouts that ended failed")))
            })
            .await?;
            browser.check_page("releases-dora").await?;
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
            until(Duration::from_secs(20), "the pod's Log button", || async {
                Ok(c.find(Locator::Css(&button)).await.is_ok())
            })
            .await?;
            c.find(Locator::Css(&button)).await?.click().await?;
            let following = format!("Following the log of pod {pod}: ");
            until(
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
            let line = text_of(c, ".pod-log .log .l").await?.unwrap_or_default();
            anyhow::ensure!(line.contains("[app] working"), "{line}");
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
            until(Duration::from_secs(20), "two more lines", || async {
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

#[tokio::test]
async fn prod_values_are_changed_through_the_form_and_proposed_as_one_pull_request() {
    use hangar_sim::stories::fleet::PROJECT_ERROR;
    let tower = crate::support::Live::start(0.0).await.unwrap();
    let (stale, failing, app) = crate::config::apps(&tower);
    let repo = format!("acme/gitops-{app}");
    let path = "glidepath/envs/prod.yaml";
    let before = crate::config::file_on(&tower, &repo, "main", path).await;
    let browser = Browser::start().await.unwrap();
    browser
        .checked("config-form", async {
            let c = &browser.client;
            c.goto(&tower.url(&format!("/tower?view=config&service={app}&file=env:prod")))
                .await?;
            let value = |css: &'static str| async move {
                let v = c
                    .execute(
                        "const e = document.querySelector(arguments[0]); return e ? e.value : null;",
                        vec![serde_json::json!(css)],
                    )
                    .await?;
                anyhow::Ok(v.as_str().map(str::to_owned))
            };
            until(Duration::from_secs(20), "the prod values as a form", || async {
                Ok(value("#field-replicas").await?.as_deref() == Some("3"))
            })
            .await?;
            browser.check_page("config-form").await?;

            // A bad value is flagged before saving, and the save waits for it.
            type_into(c, "#field-replicas", "0").await?;
            until(Duration::from_secs(10), "the replicas' problem", || async {
                Ok(text_of(c, "#field-replicas-problem")
                    .await?
                    .is_some_and(|t| t.contains("must be at least 1")))
            })
            .await?;
            let disabled = c
                .execute(
                    "return document.querySelector('button.save-config').disabled;",
                    vec![],
                )
                .await?;
            anyhow::ensure!(disabled == true, "a draft with a problem can be saved");
            browser.screenshot("config-problem").await?;

            // A replica count and an env var: the diff shows exactly those lines.
            type_into(c, "#field-replicas", "5").await?;
            until(Duration::from_secs(10), "the problem gone", || async {
                Ok(text_of(c, "#field-replicas-problem").await?.unwrap_or_default().is_empty())
            })
            .await?;
            type_into(c, "#field-env-LOG_FORMAT", "text").await?;
            until(Duration::from_secs(10), "the diff of both lines", || async {
                let diff = text_of(c, ".config-editor pre.diff").await?.unwrap_or_default();
                Ok(diff.contains("+ replicas: 5   # one per zone in prod")
                    && diff.contains("+   LOG_FORMAT: text"))
            })
            .await?;
            browser.screenshot("config-diff").await?;
            press(c, "button.save-config:enabled").await?;
            until(Duration::from_secs(20), "the pull request opened", || async {
                Ok(text_of(c, ".config-outcome")
                    .await?
                    .is_some_and(|t| t.starts_with("Opened pull request")))
            })
            .await?;
            until(Duration::from_secs(20), "the file read from its pull request", || async {
                Ok(text_of(c, ".file-source")
                    .await?
                    .is_some_and(|t| t.contains("from pull request #")))
            })
            .await?;
            browser.screenshot("config-pull-request").await?;

            // What the platform made: the stale secret, the failing composed resource.
            c.goto(&tower.url(&format!("/tower?view=config&service={stale}")))
                .await?;
            let secret = "tr[data-env='prod'][data-secret]";
            until(Duration::from_secs(20), "the stale secret", || async {
                Ok(text_of(c, secret)
                    .await?
                    .is_some_and(|t| t.contains("Not synced: could not get secret data from provider")))
            })
            .await?;
            browser.check_page("config-secrets").await?;
            browser.screenshot("config-stale-secret").await?;
            c.goto(&tower.url(&format!("/tower?view=config&service={failing}")))
                .await?;
            until(Duration::from_secs(20), "the failing Project", || async {
                Ok(text_of(c, "tr[data-kind='Project']")
                    .await?
                    .is_some_and(|t| t.contains(PROJECT_ERROR)))
            })
            .await?;
            browser.screenshot("config-failing-composed").await?;

            // Both amber on the fleet, with their reasons.
            c.goto(&tower.url("/tower")).await?;
            until(Duration::from_secs(20), "the fleet's amber", || async {
                let cell = c
                    .execute(
                        "const row = [...document.querySelectorAll('tr')].find(r => r.querySelector('.app-name')?.textContent.trim() === arguments[0]); \
                         return row ? [...row.querySelectorAll('td.cell.attention')].map(td => td.title) : [];",
                        vec![serde_json::json!(stale)],
                    )
                    .await?;
                let issue = c
                    .execute(
                        "const row = [...document.querySelectorAll('tr')].find(r => r.querySelector('.app-name')?.textContent.trim() === arguments[0]); \
                         return row?.querySelector('.platform-issue')?.title ?? '';",
                        vec![serde_json::json!(failing)],
                    )
                    .await?;
                let amber = cell.as_array().is_some_and(|cells| {
                    cells.iter().any(|t| t.as_str().is_some_and(|t| t.contains("not synced")))
                });
                Ok(amber && issue.as_str().is_some_and(|t| t.contains(PROJECT_ERROR)))
            })
            .await?;
            browser.screenshot("fleet-config-attention").await?;
            Ok(())
        })
        .await
        .unwrap();
    browser.close().await.unwrap();

    // In the simulated GitHub: one pull request, only those two lines changed, comments kept.
    let config = crate::records::open_pulls(&tower, &repo, "tower/config-").await;
    assert_eq!(config.len(), 1, "{config:?}");
    let branch = config[0]["head"]["ref"].as_str().unwrap();
    let after = crate::config::file_on(&tower, &repo, branch, path).await;
    let changed: Vec<(&str, &str)> = before
        .lines()
        .zip(after.lines())
        .filter(|(a, b)| a != b)
        .collect();
    assert_eq!(
        changed,
        vec![
            (
                "replicas: 3   # one per zone in prod",
                "replicas: 5   # one per zone in prod"
            ),
            ("  LOG_FORMAT: json", "  LOG_FORMAT: text"),
        ]
    );
    assert_eq!(before.lines().count(), after.lines().count());
    assert!(after.contains("# JSON is what the log pipeline parses"));
    assert_eq!(
        crate::config::file_on(&tower, &repo, "main", path).await,
        before
    );
}
