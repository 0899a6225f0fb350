//! The whole HTTP surface, built from state so tests can drive it without a socket.

use std::sync::Arc;

use axum::routing::get;
use axum::Router;
use tower_http::compression::CompressionLayer;
use tower_http::set_header::SetResponseHeaderLayer;
use tower_http::trace::TraceLayer;
use tower_shared::api::CLOCK_HEADER;

use crate::assets::Dist;
use crate::routes;
use crate::state::AppState;

/// What the page may load and run: its own files only — scripts from Tower (and the inline
/// loader `index.html` holds, by hash) with WebAssembly compiled, requests to Tower only, no forms,
/// no plugins, framed only by `frame_ancestors`. Style attributes are allowed (the drawings
/// use them); nothing else inline is.
pub fn content_security_policy(script_hashes: &[String], frame_ancestors: &[String]) -> String {
    format!(
        "default-src 'self'; script-src 'self' 'wasm-unsafe-eval'{}{}; \
         style-src 'self' 'unsafe-inline'; img-src 'self' data:; connect-src 'self'; \
         form-action 'none'; object-src 'none'; base-uri 'none'; frame-ancestors {}",
        if script_hashes.is_empty() { "" } else { " " },
        script_hashes.join(" "),
        frame_ancestors.join(" ")
    )
}

/// The JSON API, `/healthz`, `/readyz`, `/metrics`, `/openapi.json`, and the built frontend
/// for every other path. Responses are compressed (brotli or gzip, as the client accepts)
/// unless already encoded or a Server-Sent Events stream.
pub fn router(state: AppState, dist: &Dist) -> Router {
    let metrics = Arc::clone(&state.metrics);
    let policy = content_security_policy(&dist.inline_script_hashes(), &state.frame_ancestors);
    let policy = http::HeaderValue::from_str(&policy).unwrap_or(http::HeaderValue::from_static(
        "default-src 'none'; frame-ancestors 'none'",
    ));
    let gate = Arc::clone(&state.gate);
    let guests = state.gate.guest_sign_in;
    let clock = state.clock().clone();
    Router::new()
        .merge(
            routes::api()
                .with_state(state.clone())
                .route_layer(axum::middleware::from_fn_with_state(
                    gate,
                    crate::auth::require_caller,
                ))
                .layer(axum::extract::DefaultBodyLimit::max(MAX_BODY_BYTES))
                .layer(axum::middleware::from_fn_with_state(clock, clock_header))
                // Answers carry data and tokens: no cache keeps them (the page keeps the
                // views it needs itself, asking with `If-None-Match`).
                .layer(SetResponseHeaderLayer::overriding(
                    http::header::CACHE_CONTROL,
                    http::HeaderValue::from_static("no-store"),
                )),
        )
        .merge(routes::webhooks().with_state(state))
        .route("/healthz", get(|| async { "ok" }))
        .merge(dist.router().layer(axum::middleware::from_fn_with_state(
            (Arc::from(sign_in_preloads(guests)), dist.clone()),
            preload_page,
        )))
        .layer(axum::middleware::from_fn_with_state(
            metrics,
            crate::metrics::count_requests,
        ))
        .layer(CompressionLayer::new().compress_when({
            use tower_http::compression::predicate::{NotForContentType, Predicate as _};
            tower_http::compression::DefaultPredicate::new()
                .and(NotForContentType::const_new("text/event-stream"))
                .and(|_, _, _: &http::HeaderMap, extensions: &http::Extensions| {
                    extensions.get::<Unbuffered>().is_none()
                })
        }))
        .layer(SetResponseHeaderLayer::if_not_present(
            http::header::CONTENT_SECURITY_POLICY,
            policy,
        ))
        .layer(SetResponseHeaderLayer::overriding(
            http::header::X_CONTENT_TYPE_OPTIONS,
            http::HeaderValue::from_static("nosniff"),
        ))
        .layer(SetResponseHeaderLayer::overriding(
            http::header::REFERRER_POLICY,
            http::HeaderValue::from_static("no-referrer"),
        ))
        .layer(TraceLayer::new_for_http())
}

/// Marks a response whose body must reach the reader as it is written (a followed log): it is
/// not compressed, as a compressor holds small pieces back until it has enough.
#[derive(Clone, Copy, Debug)]
pub struct Unbuffered;

/// The largest request body the API reads (a history run is well under 1 KiB).
pub const MAX_BODY_BYTES: usize = 64 * 1024;

/// Every API answer carries Tower's clock ([`CLOCK_HEADER`]), so a page tells time on the
/// server's clock — the simulated world's in `tower demo`.
async fn clock_header(
    axum::extract::State(clock): axum::extract::State<crate::clock::Clock>,
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> axum::response::Response {
    let mut response = next.run(request).await;
    if let Ok(value) = http::HeaderValue::from_str(&clock.reading().to_header()) {
        response
            .headers_mut()
            .insert(http::HeaderName::from_static(CLOCK_HEADER), value);
    }
    response
}

/// The sign-in answers a page asks for before it can ask for anything else: how it signs in
/// (`/auth/config`) and, when guests may sign in, the guest token (`/auth/guest`).
fn sign_in_preloads(guest_sign_in: bool) -> Vec<String> {
    let mut paths = vec!["/auth/config".to_owned()];
    if guest_sign_in {
        paths.push("/auth/guest".to_owned());
    }
    paths
}

/// A `Link` header preloading `paths` as the page fetches them, so the page's own requests
/// take the preloaded answers: a module script (`.js`) as the page imports it, anything else
/// as `fetch()` from the same origin asks for it.
fn preload_links<'a>(paths: impl IntoIterator<Item = &'a str>) -> Option<http::HeaderValue> {
    let links: Vec<String> = paths
        .into_iter()
        .map(|path| {
            if path.ends_with(".js") {
                format!("<{path}>; rel=modulepreload")
            } else {
                format!("<{path}>; rel=preload; as=fetch; crossorigin=anonymous")
            }
        })
        .collect();
    if links.is_empty() {
        return None;
    }
    http::HeaderValue::from_str(&links.join(", ")).ok()
}

/// Adds to the app's pages (HTML answers, not its files) the preloads of what they fetch
/// before they can draw: the sign-in answers ([`sign_in_preloads`]) and, on a page that draws
/// nothing until the app's code runs, that code and the part of the app the address opens
/// ([`Dist::page_preloads`]) — the browser fetches them together instead of one after another.
async fn preload_page(
    axum::extract::State((sign_in, dist)): axum::extract::State<(Arc<[String]>, Dist)>,
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> axum::response::Response {
    let uri = request.uri().clone();
    let mut response = next.run(request).await;
    let page = response
        .headers()
        .get(http::header::CONTENT_TYPE)
        .and_then(|kind| kind.to_str().ok())
        .is_some_and(|kind| kind.starts_with("text/html"));
    if page {
        if let Some(links) = preload_links(
            sign_in
                .iter()
                .map(String::as_str)
                .chain(dist.page_preloads(&uri)),
        ) {
            response.headers_mut().insert(http::header::LINK, links);
        }
    }
    response
}
