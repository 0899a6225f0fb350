//! `GET /api/events`: Server-Sent Events. One `change` message per object a watcher saw
//! change (`{"cluster","kind","action","namespace","name"}`), `stale`/`fresh` when a
//! cluster stops or starts answering, `github` when GitHub becomes rate limited or failing
//! or well again (its trouble, or `{}`), and a comment every 15 s to keep proxies from
//! closing the stream. A client that falls behind gets a `resync` message and should re-read.

use std::convert::Infallible;
use std::time::Duration;

use axum::extract::State;
use axum::response::sse::{Event, KeepAlive, Sse};
use futures::stream::{self, Stream, StreamExt as _};
use tokio_stream::wrappers::errors::BroadcastStreamRecvError;
use tokio_stream::wrappers::{BroadcastStream, WatchStream};

use crate::app::AppState;

pub async fn get(
    State(state): State<AppState>,
) -> Sse<impl Stream<Item = Result<Event, Infallible>>> {
    let changes = match &state.live {
        Some(live) => {
            let github = WatchStream::from_changes(live.github_trouble()).map(|trouble| {
                Ok(Event::default()
                    .event("github")
                    .json_data(
                        trouble.map_or_else(|| serde_json::json!({}), |t| serde_json::json!(t)),
                    )
                    .unwrap_or_else(|_| Event::default().event("resync").data("{}")))
            });
            let clusters = BroadcastStream::new(live.clusters().changes()).map(|item| {
                Ok(match item {
                    Ok(change) => {
                        let name = match change.action {
                            "stale" | "fresh" => change.action,
                            _ => "change",
                        };
                        Event::default()
                            .event(name)
                            .json_data(&change)
                            .unwrap_or_else(|_| Event::default().event("resync").data("{}"))
                    }
                    Err(BroadcastStreamRecvError::Lagged(missed)) => Event::default()
                        .event("resync")
                        .data(format!("{{\"missed\":{missed}}}")),
                })
            });
            stream::select(clusters, github).boxed()
        }
        // A snapshot file never changes.
        None => stream::pending().boxed(),
    };
    let hello = stream::once(async { Ok(Event::default().event("hello").data("{}")) });
    Sse::new(hello.chain(changes)).keep_alive(KeepAlive::new().interval(Duration::from_secs(15)))
}
