//! Binding, announcing the URL, and stopping cleanly.

use std::io::Write;
use std::net::SocketAddr;

use anyhow::Context;

use crate::app;
use crate::assets::Dist;
use crate::state::AppState;

/// Serves Tower on `addr` until Ctrl-C or SIGTERM, after printing
/// `Tower is running at http://ADDR/` on stdout (the port is the real one when `addr` asks
/// for port 0). The signal handlers are in place before the line is printed, so a Ctrl-C
/// right after it still shuts down cleanly.
/// Listens on `addr` (port 0: a free one; the listener knows which).
pub async fn bind(addr: SocketAddr) -> anyhow::Result<tokio::net::TcpListener> {
    tokio::net::TcpListener::bind(addr)
        .await
        .with_context(|| format!("listening on {addr}"))
}

pub async fn serve(
    listener: tokio::net::TcpListener,
    state: AppState,
    dist: Dist,
) -> anyhow::Result<()> {
    let stop = StopSignals::install().context("installing signal handlers")?;
    let local = listener.local_addr().context("reading the bound address")?;
    let mut out = std::io::stdout().lock();
    writeln!(out, "Tower is running at http://{local}/").context("writing to stdout")?;
    out.flush().context("writing to stdout")?;
    drop(out);
    tracing::info!(frontend = %dist.source(), "serving the frontend");

    // Where anyone who reaches Tower is a caller (loopback only, see `Config::check_listen`),
    // "anyone" must not include a web page that re-pointed its own name at 127.0.0.1.
    let anyone_is_a_caller = state.gate.anyone.is_some();
    // Release records are written whether or not anyone has a page open.
    let recorder = crate::records::Recorder::spawn(state.clone());
    let mut app = app::router(state, &dist);
    if local.ip().is_loopback() && anyone_is_a_caller {
        app = app.layer(axum::middleware::from_fn(loopback_hosts_only));
    }
    // The peer address lets the gate believe an authenticating proxy's header only from it.
    let app = app.into_make_service_with_connect_info::<SocketAddr>();
    axum::serve(listener, app)
        .with_graceful_shutdown(stop.received())
        .await
        .context("serving HTTP")?;
    if let Some(recorder) = recorder {
        recorder.abort();
    }
    tracing::info!("stopped");
    Ok(())
}

/// Whether `host` (a `Host` header or an authority, with or without a port) names this
/// machine's loopback: `localhost` (or a name under it), `127.x.y.z`, `[::1]`.
pub fn is_loopback_host(host: &str) -> bool {
    let name = match host.strip_prefix('[') {
        Some(v6) => v6.split(']').next().unwrap_or_default(),
        None => host.rsplit_once(':').map_or(host, |(name, _)| name),
    };
    let name = name.to_ascii_lowercase();
    name == "localhost"
        || name.ends_with(".localhost")
        || name
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

/// On a loopback listener where anyone is a caller (the demo, a snapshot with `openApi`),
/// answers only requests addressed to loopback: a web page whose name was re-pointed at
/// 127.0.0.1 (DNS rebinding) sends its own name as `Host` and is refused.
async fn loopback_hosts_only(
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> axum::response::Response {
    use axum::response::IntoResponse as _;
    let host = request
        .headers()
        .get(http::header::HOST)
        .and_then(|h| h.to_str().ok())
        .or_else(|| request.uri().authority().map(http::uri::Authority::as_str));
    match host {
        Some(host) if is_loopback_host(host) => next.run(request).await,
        other => {
            let body = tower_shared::api::ErrorBody {
                error: format!(
                    "Tower listens on loopback and answers requests for localhost only, not for {:?}",
                    other.unwrap_or("")
                ),
                field: Some("host".to_owned()),
                path: None,
                problems: Vec::new(),
            };
            (http::StatusCode::MISDIRECTED_REQUEST, axum::Json(body)).into_response()
        }
    }
}

/// SIGINT (Ctrl-C) and SIGTERM, registered when installed rather than when first awaited.
#[cfg(unix)]
struct StopSignals {
    interrupt: tokio::signal::unix::Signal,
    terminate: tokio::signal::unix::Signal,
}

#[cfg(unix)]
impl StopSignals {
    fn install() -> std::io::Result<Self> {
        use tokio::signal::unix::{signal, SignalKind};
        Ok(Self {
            interrupt: signal(SignalKind::interrupt())?,
            terminate: signal(SignalKind::terminate())?,
        })
    }

    async fn received(mut self) {
        tokio::select! {
            _ = self.interrupt.recv() => {}
            _ = self.terminate.recv() => {}
        }
        tracing::info!("shutting down");
    }
}

#[cfg(not(unix))]
struct StopSignals;

#[cfg(not(unix))]
impl StopSignals {
    fn install() -> std::io::Result<Self> {
        Ok(Self)
    }

    async fn received(self) {
        if tokio::signal::ctrl_c().await.is_err() {
            std::future::pending::<()>().await;
        }
        tracing::info!("shutting down");
    }
}

#[cfg(test)]
mod tests {
    use super::is_loopback_host;

    #[test]
    fn loopback_hosts_are_told_from_names_that_only_resolve_there() {
        for host in [
            "localhost",
            "LOCALHOST:8080",
            "app.localhost:1",
            "127.0.0.1:8080",
            "127.1.2.3",
            "[::1]:8080",
            "[::1]",
        ] {
            assert!(is_loopback_host(host), "{host}");
        }
        for host in [
            "attacker.example",
            "localhost.attacker.example:8080",
            "10.0.0.1:8080",
            "[::2]:80",
            "",
            "0.0.0.0:8080",
        ] {
            assert!(!is_loopback_host(host), "{host}");
        }
    }
}
