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

    // The peer address lets the gate believe an authenticating proxy's header only from it.
    let app = app::router(state, &dist).into_make_service_with_connect_info::<SocketAddr>();
    axum::serve(listener, app)
        .with_graceful_shutdown(stop.received())
        .await
        .context("serving HTTP")?;
    tracing::info!("stopped");
    Ok(())
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
