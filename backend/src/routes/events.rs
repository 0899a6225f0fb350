//! `GET /api/events`: Server-Sent Events, each sent after the views that show it are
//! published (so a page fetching on an event gets the new answer):
//! - `change` ([`tower_shared::api::Change`]): something Tower reads changed — an object
//!   (Kubernetes), a pull request or file (GitHub), a catalog entity, a history record —
//!   naming the service when Tower can tell;
//! - `stale` / `fresh` ([`tower_shared::api::ClusterFreshness`]): a cluster stopped or
//!   started answering;
//! - `github` ([`tower_shared::api::GitHubState`]): GitHub became rate limited or failing,
//!   or well again;
//! - `resync` (`{"missed"}`): the stream fell behind; read everything again;
//!
//! and a comment every 15 s to keep proxies from closing the stream. A snapshot file never
//! changes: its stream says `hello` and then only keeps alive.

use std::convert::Infallible;
use std::time::Duration;

use axum::extract::State;
use axum::response::sse::{Event, KeepAlive, Sse};
use futures::stream::{self, Stream, StreamExt as _};
use tokio_stream::wrappers::errors::BroadcastStreamRecvError;
use tokio_stream::wrappers::BroadcastStream;
use tower_shared::api::{event, Resync};

use crate::live::LiveEvent;
use crate::state::AppState;

fn sse(name: &str, payload: &impl serde::Serialize) -> Event {
    Event::default()
        .event(name)
        .json_data(payload)
        .unwrap_or_else(|_| Event::default().event(event::RESYNC).data("{\"missed\":0}"))
}

pub async fn get(
    State(state): State<AppState>,
) -> Sse<impl Stream<Item = Result<Event, Infallible>>> {
    let changes = match &state.live {
        Some(live) => BroadcastStream::new(live.events())
            .map(|item| {
                Ok(match item {
                    Ok(LiveEvent::Change(change)) => sse(event::CHANGE, &change),
                    Ok(LiveEvent::Stale(cluster)) => sse(event::STALE, &cluster),
                    Ok(LiveEvent::Fresh(cluster)) => sse(event::FRESH, &cluster),
                    Ok(LiveEvent::GitHub(github)) => sse(event::GITHUB, &github),
                    Err(BroadcastStreamRecvError::Lagged(missed)) => {
                        sse(event::RESYNC, &Resync { missed })
                    }
                })
            })
            .boxed(),
        None => stream::pending().boxed(),
    };
    let hello = stream::once(async { Ok(Event::default().event(event::HELLO).data("{}")) });
    Sse::new(hello.chain(changes)).keep_alive(KeepAlive::new().interval(Duration::from_secs(15)))
}
