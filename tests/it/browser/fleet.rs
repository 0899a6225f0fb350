//! The fleet page: the matrix, its windowing at 10,000 apps, the activity and DORA.

use super::*;

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
            // The matrix draws the rows its window shows (and a few more): a screen tall
            // enough for all 31 shows every app at once.
            c.set_window_size(1280, 3000).await?;
            open_fleet(c, &demo.url).await?;

            let mut shown = texts(c, ".app-name").await?;
            let mut served: Vec<String> = fleet.apps.iter().map(|a| a.name.clone()).collect();
            shown.sort();
            served.sort();
            anyhow::ensure!(
                shown == served,
                "page shows {shown:?}, backend serves {served:?}"
            );
            c.set_window_size(1280, 900).await?;
            // Every service Tower knows: those on a cloud target and those still
            // provisioning too, each saying how it is.
            for name in ["thumbnailer", "events-bus", "orders-api", "ledger"] {
                anyhow::ensure!(
                    served.iter().any(|s| s == name),
                    "{name} is not on the fleet"
                );
            }
            let orders = fleet
                .apps
                .iter()
                .find(|a| a.name == "orders-api")
                .and_then(|a| a.cells.iter().find(|c| c.environment == "dev"))
                .context("orders-api's dev cell")?;
            let said = orders
                .attention()
                .context("orders-api's failed deploy is calm")?;
            anyhow::ensure!(
                orders.cloud.is_some()
                    && said.severity == tower_shared::fleet::Severity::Failing
                    && said
                        .reason
                        .contains("Deploy of 1.8.0-4be1c2d to AWS ECS failed"),
                "{orders:?}"
            );

            // The paused canary at the pinned start waits out its timed ten-minute pause at
            // 20 %: expected, so said as a wait, never amber. Its error budget is spent all
            // the same (the ticket alert fires): that is amber.
            let canary = hangar_sim::stories::fleet::PAUSED_CANARY;
            let cell_of = |app: &str| {
                fleet
                    .apps
                    .iter()
                    .find(|a| a.name == app)
                    .and_then(|a| a.cells.iter().find(|c| c.environment == "prod"))
                    .with_context(|| format!("{app}'s prod cell"))
            };
            let prod = cell_of(canary)?;
            let pause = "Canary paused at 20% traffic, a timed pause of 10m";
            anyhow::ensure!(prod.waits == [pause], "{prod:?}");
            anyhow::ensure!(
                prod.troubles.iter().all(|t| !t.words.contains("paused")),
                "the pause is a trouble: {prod:?}"
            );
            let said = tower_shared::fleet::attention(prod).context("the paused canary is calm")?;
            anyhow::ensure!(
                said.severity == tower_shared::fleet::Severity::Attention
                    && said.reason.contains("Error budget for 30 days spent")
                    && said.reason.contains("(ticket alert)"),
                "{said:?}"
            );
            let amber_link =
                format!("td.cell.attention a[href='/tower?view=deployments&service={canary}&env=prod']");
            c.find(Locator::Css(&amber_link))
                .await
                .context("the paused canary's prod is not amber")?;
            // (Read whole, in one go inside the page: the windowed matrix clips a long line
            // with an ellipsis, and a row may be drawn anew between two WebDriver calls.)
            let whole = |css: &'static str| {
                let selector = format!("{amber_link} {css}");
                async move {
                    let found = c
                        .execute(
                            "const e = document.querySelector(arguments[0]); return e ? e.textContent : null;",
                            vec![serde_json::json!(selector)],
                        )
                        .await?;
                    let found: Option<String> = serde_json::from_value(found)?;
                    found.with_context(|| format!("{selector} is not on the page"))
                }
            };
            let status = whole(".status").await?;
            let wait = whole(".status .wait").await?;
            anyhow::ensure!(
                status.contains("Error budget for 30 days spent"),
                "{canary}'s prod reads {status:?}"
            );
            anyhow::ensure!(
                wait.trim() == format!("◌ {pause}"),
                "its wait reads {wait:?}"
            );
            let amber = texts(c, "td.attention").await?.join(" | ");
            // Argo CD calls media's prod Healthy; its pods, autoscaler and p99 say otherwise.
            let media = cell_of("media")?;
            anyhow::ensure!(
                media
                    .troubles
                    .iter()
                    .any(|t| t.source == tower_shared::state::Source::Slo),
                "{media:?}"
            );
            anyhow::ensure!(
                amber.contains("OOMKilled (3 restarts); autoscaler wants 5 pods, 3 run")
                    && amber.contains("Latency over the last hour: p95 4")
                    && amber.contains("p99 8"),
                "amber cells read {amber:?}"
            );
            // An aborted canary: its cell shows the stable version that runs, and names the
            // version that was tried and sent back (never the other way round).
            let failing = texts(c, "td.failing").await?;
            let mut aborted = 0;
            for cell in fleet.apps.iter().flat_map(|a| &a.cells) {
                let Some(said) = cell
                    .troubles
                    .iter()
                    .find(|t| t.words.contains(" aborted: "))
                else {
                    continue;
                };
                aborted += 1;
                let running = cell
                    .running_tag()
                    .context("an aborted canary's stable version")?;
                anyhow::ensure!(!said.words.contains(running), "{said:?} names what runs");
                anyhow::ensure!(
                    failing
                        .iter()
                        .any(|shown| shown.contains(&said.words) && shown.ends_with(running)),
                    "failing cells read {failing:?}"
                );
            }
            anyhow::ensure!(aborted > 0, "no aborted canary at the pinned start");
            browser.check_page("fleet").await?;
            // Every action on the page is reachable by keyboard, with visible focus.
            browser.keyboard_reaches_everything().await?;

            // Every app name and every cell links into the app; the cell to its environment.
            // The services still provisioning: a cell across the row, linking to their
            // Provisioning tab (the matrix is windowed: each found by its name first).
            let search = c.find(Locator::Css("input[type=search]")).await?;
            for name in ["thumbnailer", "events-bus"] {
                search.send_keys(&"\u{e003}".repeat(20)).await?;
                search.send_keys(name).await?;
                let href = format!("/tower?view=provisioning&service={name}");
                let said = c
                    .find(Locator::Css(&format!("td.provisioning a[href='{href}']")))
                    .await
                    .with_context(|| format!("{name}'s row does not link to its provisioning"))?
                    .prop("textContent")
                    .await?
                    .unwrap_or_default();
                anyhow::ensure!(said.contains("Provisioning"), "{name} reads {said:?}");
            }
            search.send_keys(&"\u{e003}".repeat(20)).await?;
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
            click(c, &format!("td.cell a[href='{name_href}&env=prod']")).await?;
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
async fn the_fleets_activity_shows_a_canary_aborted_while_the_page_is_open() {
    use hangar_sim::stories::fleet::PAUSED_CANARY;
    let tower = crate::support::Live::start(0.0).await.unwrap();
    let browser = Browser::start().await.unwrap();
    browser
        .checked("fleet-activity", async {
            let c = &browser.client;
            c.goto(&tower.url("/tower")).await?;
            scroll_to_the_panels(c).await?;
            eventually_every(
                LOOK,
                Duration::from_secs(20),
                "the activity feed",
                || async { Ok(text_of(c, ".activity-items li").await?.is_some()) },
            )
            .await?;
            // Aborted through Tower's canary actions while the page is open: the feed says
            // so at its top without a reload ("just now"; another app's release arriving at
            // the same second may share the top), linking to the app's prod deployment.
            crate::canary_actions::abort_the_paused_canary(&tower).await;
            let said = format!("{PAUSED_CANARY}'s canary in prod was aborted");
            let top = "return [...document.querySelectorAll('.activity-items li')].slice(0, 3)
                .map(li => [li.innerText, li.querySelector('a').getAttribute('href')]);";
            let found = std::cell::RefCell::new(None);
            eventually_every(
                LOOK,
                Duration::from_secs(20),
                "the abort at the top",
                || async {
                    let items: Vec<(String, String)> =
                        serde_json::from_value(c.execute(top, vec![]).await?)?;
                    let href = items
                        .into_iter()
                        .find(|(text, _)| text.contains(&said) && text.starts_with("just now"))
                        .map(|(_, href)| href);
                    let seen = href.is_some();
                    *found.borrow_mut() = href;
                    Ok(seen)
                },
            )
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
    crate::support::eventually_every(
        LOOK,
        Duration::from_secs(30),
        "the abort counted",
        || async {
            let (_, dora) = tower.get("/api/dora").await.ok()?;
            (!dora["prevented"].as_array()?.is_empty()).then_some(())
        },
    )
    .await
    .unwrap();
    let browser = Browser::start().await.unwrap();
    browser
        .checked("fleet-dora", async {
            let c = &browser.client;
            c.goto(&tower.url("/tower")).await?;
            scroll_to_the_panels(c).await?;
            eventually_every(LOOK, Duration::from_secs(20), "the DORA sentence", || async {
                Ok(text_of(c, ".dora .sentence")
                    .await?
                    .is_some_and(|t| t.starts_with("Over the last 7 days")))
            })
            .await?;
            let sentence = text_of(c, ".dora .sentence").await?.unwrap_or_default();
            anyhow::ensure!(
                sentence.contains("went live in prod")
                    && sentence.contains("from merge to prod")
                    && sentence.contains("rolled back")
                    && sentence.contains("stopped before it went live"),
                "{sentence}"
            );
            // What it counted (drawn when opened): every rollout links to its app's
            // Releases tab.
            c.find(Locator::Css(".dora details summary"))
                .await?
                .click()
                .await?;
            let links = std::cell::RefCell::new(Vec::new());
            eventually_every(LOOK, Duration::from_secs(10), "what was counted, opened", || async {
                let found = c
                    .execute(
                        "return [...document.querySelectorAll('.dora-rollouts a')].map(a => a.getAttribute('href'));",
                        vec![],
                    )
                    .await?;
                *links.borrow_mut() = found.as_array().cloned().unwrap_or_default();
                Ok(!links.borrow().is_empty())
            })
            .await?;
            let links = links.into_inner();
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
            // (The objectives are judged again as the world moved on: the page follows the
            // fleet's change, so it agrees with the fleet served once both have it.)
            let last = std::cell::RefCell::new(String::new());
            let agreed = eventually_every(LOOK, Duration::from_secs(20), "the strip", || async {
                let strip = text_of(c, ".headline-strip").await?.unwrap_or_default();
                let (_, fleet) = tower.get("/api/fleet").await?;
                let fleet: Fleet = serde_json::from_value(fleet)?;
                let attention = fleet
                    .apps
                    .iter()
                    .filter(|a| tower_shared::fleet::needs_attention(a))
                    .count();
                let agreed = strip.contains(&format!("Change failure rate, 7 days\n{rate}"))
                    && strip.contains(&format!("Apps needing attention\n{attention}"))
                    && !strip.contains("Deploys to prod, last 24 h\nunknown");
                *last.borrow_mut() = strip;
                anyhow::Ok(agreed)
            })
            .await;
            anyhow::ensure!(agreed.is_ok(), "{}", last.borrow());
            browser.check_page("fleet-dora").await?;
            browser.screenshot("fleet-dora").await?;
            // Another window, chosen on the panel: the figures over it.
            c.find(Locator::Css(".dora select"))
                .await?
                .select_by_value("30")
                .await?;
            // The demo's clusters keep a day or two of ReplicaSets: the month's figures say
            // how much of it they rest on.
            eventually_every(LOOK, Duration::from_secs(20), "the month's figures", || async {
                Ok(text_of(c, ".dora .sentence")
                    .await?
                    .is_some_and(|t| t.starts_with("Over the last 30 days (history covers ")))
            })
            .await?;
            let month = text_of(c, ".dora .sentence").await?.unwrap_or_default();
            let (_, asked) = tower.get("/api/dora?days=30").await?;
            anyhow::ensure!(month == asked["sentence"], "{month} / {}", asked["sentence"]);
            browser.screenshot("fleet-dora-30-days").await?;

            // A counted rollout opens its release: its row of its app's release matrix.
            let newest = asked["rollouts"]
                .as_array()
                .and_then(|r| r.iter().find(|r| r["liveAt"].is_string()))
                .context("a rollout that went live")?;
            let name = tower_shared::image::release_name(newest["release"].as_str().unwrap_or_default())
                .context("its release's name")?
                .to_owned();
            let href = format!(
                "/tower?view=releases&service={}#release-{name}",
                newest["service"].as_str().unwrap_or_default()
            );
            if c.find(Locator::Css(".dora details[open]")).await.is_err() {
                c.find(Locator::Css(".dora details summary")).await?.click().await?;
            }
            click(c, &format!(".dora-rollouts a[href='{href}']")).await?;
            c.wait()
                .at_most(Duration::from_secs(20))
                .for_element(Locator::Css(&format!("tr.linked[aria-current='true'][data-release='{name}']")))
                .await
                .context("the rollout did not open its release")?;

            // One app's figures under its release matrix: the aborting canary, stopped in time.
            let aborting = crate::support::fleet_app(hangar_sim::stories::fleet::Role::AbortedCanary).name;
            c.goto(&tower.url(&format!("/tower?view=releases&service={aborting}")))
                .await?;
            eventually_every(LOOK, Duration::from_secs(20), "the app's DORA sentence", || async {
                Ok(text_of(c, ".dora .sentence")
                    .await?
                    .is_some_and(|t| t.ends_with("1 canary was stopped before it went live.")))
            })
            .await?;
            browser.check_page("releases-dora").await?;
            anyhow::Ok(())
        })
        .await
        .unwrap();
    browser.close().await.unwrap();
}
