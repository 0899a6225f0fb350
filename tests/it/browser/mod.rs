//! The app in headless Chromium against a real `tower demo`, a module per page: the fleet,
//! Services and provisioning, each tab, and the shell every page shares (embedding, sign-in,
//! stale data, the CSP). Here: what they share.
//!
//! Module map: [`fleet`], [`provisioning`], [`pulls`], [`pipelines`], [`deployments`],
//! [`releases`], [`runtime`], [`config`], and [`shell`] (what every page shares).

mod config;
mod deployments;
mod fleet;
mod pipelines;
mod provisioning;
mod pulls;
mod releases;
mod runtime;
mod shell;

use std::time::Duration;

use anyhow::Context;
use fantoccini::Locator;
use tower_shared::fleet::Fleet;

use crate::support::{eventually_every, Browser, Demo};

/// How often a browser test looks at the page while it waits (each look is a WebDriver
/// round trip the page shares the machine with).
const LOOK: Duration = Duration::from_millis(250);

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

/// Scrolls the fleet's panels (activity, DORA) into view, as their reader does: their code is
/// fetched when they come into view.
async fn scroll_to_the_panels(c: &fantoccini::Client) -> anyhow::Result<()> {
    c.wait()
        .at_most(Duration::from_secs(20))
        .for_element(Locator::Css(".fleet-panels"))
        .await
        .context("the fleet's panels never had their place")?;
    c.execute(
        "document.querySelector('.fleet-panels').scrollIntoView();",
        vec![],
    )
    .await?;
    Ok(())
}

/// Clicks the element matching `css`. The page draws a row anew when its data arrives, so
/// an element found may be gone by the click: then it is found again, for up to 20 s.
async fn click(c: &fantoccini::Client, css: &str) -> anyhow::Result<()> {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    loop {
        let clicked = match c.find(Locator::Css(css)).await {
            Ok(found) => found.click().await.map(drop),
            Err(e) => Err(e),
        };
        match clicked {
            Err(e) if e.is_stale_element_reference() && tokio::time::Instant::now() < deadline => {
                tokio::time::sleep(LOOK).await
            }
            done => return done.with_context(|| format!("clicking {css}")),
        }
    }
}

/// The text of every element matching `css`, read in one go inside the page (the page
/// re-renders as data arrives, so element handles can go stale between two calls); an SVG
/// element, which has no `innerText`, by its `textContent`.
async fn texts(c: &fantoccini::Client, css: &str) -> anyhow::Result<Vec<String>> {
    let found = c
        .execute(
            "return Array.from(document.querySelectorAll(arguments[0])).map(e => (e.innerText ?? e.textContent).trim());",
            vec![serde_json::json!(css)],
        )
        .await?;
    Ok(serde_json::from_value(found)?)
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

/// The text of the first element `css` finds, if any.
async fn text_of(c: &fantoccini::Client, css: &str) -> anyhow::Result<Option<String>> {
    // Read in one step in the page: a lookup and a read apart race the page redrawing the
    // element between them (a stale element).
    let text = c
        .execute(
            "const e = document.querySelector(arguments[0]); return e ? e.innerText : null;",
            vec![serde_json::json!(css)],
        )
        .await?;
    Ok(text.as_str().map(str::to_owned))
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
