//! What every page shares: embedding (Backstage, framing, dark and narrow), sign-in behind a
//! proxy, stale data and rate limits said as such, the CSP.

use super::*;

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
            eventually_every(
                LOOK,
                Duration::from_secs(30),
                "the stale notice",
                || async {
                    Ok(texts(c, ".state.stale")
                        .await?
                        .iter()
                        .any(|t| t.contains("Cluster dev unreachable")))
                },
            )
            .await?;
            // The last known services are still listed.
            let names = texts(c, ".in-flight .strip-name").await?;
            anyhow::ensure!(names.contains(&"orders-api".to_owned()), "{names:?}");
            browser.check_page("services-stale").await?;
            // The fleet says so too, and still shows its last known apps.
            c.goto(&tower.url("/")).await?;
            eventually_every(
                LOOK,
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
            eventually_every(
                LOOK,
                Duration::from_secs(20),
                "the frame refused",
                || async { Ok(frame_location(c).await?.starts_with("chrome-error:")) },
            )
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
            eventually_every(
                LOOK,
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
                eventually_every(
                    LOOK,
                    Duration::from_secs(20),
                    "the GitHub notice",
                    || async {
                        Ok(texts(c, ".state.stale").await?.iter().any(|t| {
                            t.contains("GitHub rate limited") && t.contains("asks again in")
                        }))
                    },
                )
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
            eventually_every(LOOK, Duration::from_secs(20), "Tower asks for its token thrice", || async {
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
            eventually_every(LOOK, Duration::from_secs(10), "the hostile frame posts", || async {
                Ok(c.execute("return window.hostileSent === true;", vec![]).await? == true)
            })
            .await?;
            // Tower asks for its token once a second until it has one: two more asks after
            // every message arrived mean it read them all and still has none.
            let asked = || async {
                anyhow::Ok(c.execute("return window.towerAsked || 0;", vec![]).await?.as_u64().unwrap_or(0))
            };
            let after = asked().await?;
            eventually_every(LOOK, Duration::from_secs(10), "Tower asks twice more", || async {
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
            eventually_every(LOOK, Duration::from_secs(20), "Tower signed in", || async {
                Ok(frame_text(c).await?.contains("orders-api"))
            })
            .await?;

            // Without holding back, the page signs Tower in by itself; the token is in no URL.
            c.goto(&page(false)).await?;
            eventually_every(LOOK, Duration::from_secs(20), "Tower signed in by itself", || async {
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
            eventually_every(
                LOOK,
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
            eventually_every(
                LOOK,
                Duration::from_secs(20),
                "the services page through the proxy",
                || async { Ok(body(c).await?.contains("Nothing is being provisioned")) },
            )
            .await?;
            // With no token to send, the page still follows the event stream (through the proxy).
            let metrics = format!("{proxy}/metrics");
            eventually_every(
                LOOK,
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

/// A page's `Link` header preloads what it asks for before it can draw — the sign-in answers
/// (the demo signs in as Backstage's guest) and, where the page draws nothing until the app's
/// code runs, that code and the part its address opens — so the browser fetches them
/// together; the page then takes each preloaded file and answer instead of fetching it
/// again, and asks for nothing before it has signed in.
#[tokio::test]
async fn a_page_preloads_its_sign_in_and_the_code_of_the_part_it_opens() {
    use hangar_sim::stories::fleet::AWAITING_PROMOTION as APP;
    let demo = Demo::start_with(&["--speed", "0"]).await.unwrap();
    let preloads = |address: String| async move {
        let page = reqwest::get(&address).await.unwrap();
        let link = page.headers()["link"].to_str().unwrap().to_owned();
        link.split(", ")
            .map(|one| {
                let (path, how) = one.split_once(">; ").unwrap();
                let path = path.trim_start_matches('<').to_owned();
                // Modules as the page imports them, the rest as `fetch()` asks for it.
                let expected = if path.ends_with(".js") {
                    "rel=modulepreload"
                } else {
                    "rel=preload; as=fetch; crossorigin=anonymous"
                };
                assert_eq!(how, expected, "{one}");
                path
            })
            .collect::<Vec<_>>()
    };
    let sign_in = ["/auth/config", "/auth/guest"];
    // The fleet paints its masthead first and asks for the code after.
    assert_eq!(preloads(format!("{}tower", demo.url)).await, sign_in);
    // Services draws nothing until the main module runs: its JS, the chunks' loader and
    // the module, and no part.
    let services = preloads(format!("{}tower?view=services", demo.url)).await;
    assert_eq!(services[..2], sign_in);
    let main: Vec<&str> = services[2..]
        .iter()
        .map(|path| path.rsplit_once('/').unwrap().1)
        .collect();
    assert_eq!(main, ["tower.js", "__wasm_split.js", "tower_bg.wasm"]);
    // A tab: the main module, then its part's chunks.
    let tab = preloads(format!("{}tower?view=releases&service={APP}", demo.url)).await;
    assert_eq!(tab[..services.len()], services[..]);
    let chunks = &tab[services.len()..];
    assert!(
        chunks
            .iter()
            .any(|path| path.ends_with("/split_releases.wasm"))
            && chunks.iter().all(|path| path.ends_with(".wasm")),
        "the Releases tab preloads {chunks:?}"
    );
    let pages = [
        (
            format!("{}tower?view=services", demo.url),
            "ul.strip",
            services,
        ),
        (
            format!("{}tower?view=releases&service={APP}", demo.url),
            "table.releases tbody tr",
            tab,
        ),
    ];
    let browser = Browser::start().await.unwrap();
    browser
        .checked("preloads", async {
            let c = &browser.client;
            for (address, drawn, preloaded) in &pages {
                c.goto(address).await?;
                c.wait()
                    .at_most(Duration::from_secs(20))
                    .for_element(Locator::Css(drawn))
                    .await?;
                let fetched = c
                    .execute(
                        "return arguments[0].map(path => performance.getEntriesByType('resource')
                           .filter(e => new URL(e.name).pathname === path).length);",
                        vec![serde_json::json!(preloaded)],
                    )
                    .await?;
                let fetched: Vec<u64> = serde_json::from_value(fetched)?;
                anyhow::ensure!(
                    fetched.iter().all(|times| *times == 1),
                    "times each preload was fetched on {address} ({preloaded:?}): {fetched:?}"
                );
            }
            // Nor did it ask Tower for anything before it had signed in (a refused answer
            // is a round trip more before the page draws).
            let refused = c
                .execute(
                    "return performance.getEntriesByType('resource')
                       .filter(e => e.responseStatus === 401).map(e => e.name);",
                    vec![],
                )
                .await?;
            anyhow::ensure!(
                refused == serde_json::json!([]),
                "asked before signing in: {refused}"
            );
            Ok(())
        })
        .await
        .unwrap();
    browser.close().await.unwrap();
}

/// Each tab's code is a chunk of its own: every tab opens from a cold load of its link and
/// from the fleet by clicking (the page never reloads), fetching its chunks only then. Seven
/// cold loads in one browser: a page it left must give back its event stream (the browser
/// keeps six connections to Tower over HTTP/1.1, and a page kept in the back-forward cache
/// holding its stream left the seventh page "Loading…", its answer queued behind them).
#[tokio::test]
async fn every_tab_opens_from_a_cold_load_and_from_the_fleet() {
    use hangar_sim::stories::fleet::AWAITING_PROMOTION as APP;
    // (the tab's id, what it draws once its chunk and its answer are in)
    const TABS: [(&str, &str); 7] = [
        ("provisioning", "section[aria-label='Recently provisioned']"),
        ("pulls", "table.pulls tbody tr"),
        ("pipelines", "table.runs tbody tr"),
        ("deployments", "article.card.env"),
        ("releases", "table.releases tbody tr"),
        ("runtime", "section.runtime-env"),
        ("config", "section.config-editor .field"),
    ];
    let demo = Demo::start_with(&["--speed", "0"]).await.unwrap();
    let browser = Browser::start().await.unwrap();
    // The chunks the page has fetched so far.
    let chunks = |c: &fantoccini::Client| {
        let c = c.clone();
        async move {
            let names = c
                .execute(
                    "return performance.getEntriesByType('resource').map(e => e.name)\
                     .filter(n => /chunk_\\d+\\.wasm$/.test(n)).length;",
                    vec![],
                )
                .await?;
            anyhow::Ok(names.as_u64().unwrap_or_default())
        }
    };
    let api = crate::support::signed_in(&demo.guest_token().await.unwrap());
    let drawn = |c: &fantoccini::Client, tab: &'static str, css: &'static str| {
        let c = c.clone();
        let (base, api) = (demo.url.clone(), api.clone());
        async move {
            let found = c
                .wait()
                .at_most(Duration::from_secs(20))
                .for_element(Locator::Css(css))
                .await;
            if let Err(err) = found {
                // Whether the backend answers the tab now, and how soon: tells a page that
                // never asked from a backend that never answered.
                let asked = std::time::Instant::now();
                let answer = api
                    .get(format!("{base}api/{tab}?service={APP}"))
                    .send()
                    .await;
                let status = answer.map(|a| a.status().as_u16());
                anyhow::bail!(
                    "the {tab} tab never drew {css} ({err}); asked now, the backend answered \
                     {status:?} in {:?}",
                    asked.elapsed()
                );
            }
            anyhow::ensure!(
                texts(&c, "p.state.error").await?.is_empty(),
                "the {tab} tab: {:?}",
                texts(&c, "p.state.error").await?
            );
            anyhow::Ok(())
        }
    };
    browser
        .checked("every-tab", async {
            let c = &browser.client;
            for (tab, css) in TABS {
                c.goto(&format!("{}tower?view={tab}&service={APP}", demo.url))
                    .await?;
                drawn(c, tab, css).await?;
                browser.screenshot(&format!("tab-{tab}-cold")).await?;
            }

            open_fleet(c, &format!("{}tower", demo.url)).await?;
            c.execute("window.towerMark = 'one page';", vec![]).await?;
            // The fleet's first load fetched the fleet's own parts, and no tab's.
            let at_fleet = chunks(c).await?;
            c.find(Locator::Css("input[type=search]"))
                .await?
                .send_keys(APP)
                .await?;
            press(
                c,
                &format!("a.app-name[href='/tower?view=deployments&service={APP}']"),
            )
            .await?;
            drawn(c, "deployments", "article.card.env").await?;
            anyhow::ensure!(
                chunks(c).await? > at_fleet,
                "opening a tab fetched no chunk: its code was in the first load"
            );
            for (tab, css) in TABS {
                press(
                    c,
                    &format!("nav.tabs a[href='/tower?view={tab}&service={APP}']"),
                )
                .await?;
                drawn(c, tab, css).await?;
                browser.screenshot(&format!("tab-{tab}-from-fleet")).await?;
            }
            let mark = c
                .execute("return window.towerMark || null;", vec![])
                .await?;
            anyhow::ensure!(
                mark == "one page",
                "the page reloaded between tabs (the mark is {mark})"
            );
            Ok(())
        })
        .await
        .unwrap();
    browser.close().await.unwrap();
}
