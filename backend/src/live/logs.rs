//! A container's log — a pipeline step's, or an app's pod's on the Runtime tab — read on
//! request ([`tower_shared::hangar::READ_ON_REQUEST`]): one
//! `GET /api/v1/namespaces/{ns}/pods/{pod}/log[?container=…][&follow=true]` to the pod's
//! cluster per open log, through Tower's own identity, passed on chunk by chunk
//! as the API server sends it. The stream holds the upstream response; when the caller goes,
//! axum drops the stream and with it the upstream connection, so nothing is left reading.
//! At most [`MOST_OPEN`] are open at once, [`MOST_PER_CALLER`] of them one caller's; a log
//! that passes nothing on for [`IDLE`] ends (a tab left open on a quiet container holds no
//! connection for ever).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use futures::{AsyncReadExt as _, Stream, StreamExt as _};
use k8s_openapi::api::core::v1::Pod;
use kube::api::LogParams;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use super::Live;

/// Log streams open at once, across callers: each holds an upstream connection.
pub const MOST_OPEN: usize = 64;

/// Log streams one caller may hold open at once: a page shows a few; nobody takes them all.
pub const MOST_PER_CALLER: usize = 8;

/// How long a log stream may pass nothing on before it ends.
pub const IDLE: Duration = Duration::from_secs(5 * 60);

/// Bytes read from upstream per chunk passed on.
const CHUNK: usize = 16 * 1024;

/// Why a log cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum LogError {
    /// The pod is gone (the API answered 404): Kubernetes removed it, and its logs with it.
    #[error("the pod is gone")]
    Gone,
    /// The container has not started (the API answered 400: waiting to start).
    #[error("{0}")]
    NotStarted(String),
    /// Tower's identity may not read pod logs there (403).
    #[error("{0}")]
    Refused(String),
    /// [`MOST_OPEN`] logs are open already.
    #[error("{MOST_OPEN} logs are open already")]
    Busy,
    /// The caller has [`MOST_PER_CALLER`] logs open already.
    #[error("{0} has {MOST_PER_CALLER} logs open already; close one first")]
    CallerBusy(String),
    /// The control-plane cluster is not configured, did not answer, or answered otherwise.
    #[error("{0}")]
    Unreachable(String),
}

/// The open log streams: a permit each, counted per caller, and how long one may be idle.
#[derive(Debug)]
pub struct Open {
    all: Arc<Semaphore>,
    callers: Arc<Mutex<HashMap<String, usize>>>,
    idle: Duration,
}

impl Default for Open {
    fn default() -> Self {
        Self::idle_after(IDLE)
    }
}

/// One caller's place among the open logs: given back when the stream is dropped.
struct Place {
    _permit: OwnedSemaphorePermit,
    callers: Arc<Mutex<HashMap<String, usize>>>,
    caller: String,
}

impl Drop for Place {
    fn drop(&mut self) {
        let mut callers = self
            .callers
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(open) = callers.get_mut(&self.caller) {
            *open -= 1;
            if *open == 0 {
                callers.remove(&self.caller);
            }
        }
    }
}

impl Open {
    /// Open logs that end after `idle` without a byte.
    pub fn idle_after(idle: Duration) -> Self {
        Self {
            all: Arc::new(Semaphore::new(MOST_OPEN)),
            callers: Arc::default(),
            idle,
        }
    }

    /// How many logs are being streamed now.
    pub fn count(&self) -> usize {
        MOST_OPEN - self.all.available_permits()
    }

    /// A place for one more of `caller`'s logs, if there is one.
    fn take(&self, caller: &str) -> Result<Place, LogError> {
        let mut callers = self
            .callers
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let open = callers.entry(caller.to_owned()).or_default();
        if *open >= MOST_PER_CALLER {
            return Err(LogError::CallerBusy(caller.to_owned()));
        }
        let permit = Arc::clone(&self.all)
            .try_acquire_owned()
            .map_err(|_| LogError::Busy)?;
        *open += 1;
        Ok(Place {
            _permit: permit,
            callers: Arc::clone(&self.callers),
            caller: caller.to_owned(),
        })
    }
}

impl Live {
    /// The log of `container` (the pod's only one when `None`) in `pod` (namespace
    /// `namespace` on `cluster`), as it is so far — and, with `follow`, as it grows until the
    /// container ends, `caller` goes, or nothing comes for [`IDLE`].
    pub async fn pod_log(
        &self,
        cluster: &str,
        (namespace, pod, container): (&str, &str, Option<&str>),
        follow: bool,
        caller: &str,
    ) -> Result<impl Stream<Item = std::io::Result<Bytes>> + Send + 'static, LogError> {
        let place = self.inner.logs.take(caller)?;
        let idle = self.inner.logs.idle;
        let client = self
            .clusters()
            .client(cluster)
            .ok_or_else(|| LogError::Unreachable(format!("cluster {cluster} is not configured")))?;
        let params = LogParams {
            container: container.map(str::to_owned),
            follow,
            ..LogParams::default()
        };
        let reader = kube::Api::<Pod>::namespaced(client, namespace)
            .log_stream(pod, &params)
            .await
            .map_err(|err| match err {
                kube::Error::Api(status) => match status.code {
                    404 => LogError::Gone,
                    400 => LogError::NotStarted(status.message),
                    403 => LogError::Refused(format!(
                        "Tower may not read pod logs in {namespace} (it needs `get` on \
                         `pods/log`, see docs/permissions.md): {}",
                        status.message
                    )),
                    code => LogError::Unreachable(format!(
                        "cluster {cluster} answered {code}: {}",
                        status.message
                    )),
                },
                other => LogError::Unreachable(format!("cluster {cluster}: {other}")),
            })?;
        Ok(passed_on(reader, place, idle))
    }

    /// How many logs are being streamed now.
    pub fn open_logs(&self) -> usize {
        self.inner.logs.count()
    }
}

/// `reader`'s bytes as chunks as they come, holding `place` until the stream ends: at the end
/// of `reader`, on its first error, or when it passes nothing on for `idle`.
fn passed_on<R, P>(
    reader: R,
    place: P,
    idle: Duration,
) -> impl Stream<Item = std::io::Result<Bytes>> + Send + 'static
where
    R: futures::AsyncRead + Send + 'static,
    P: Send + 'static,
{
    futures::stream::unfold(Some((Box::pin(reader), place)), move |state| async move {
        let (mut reader, place) = state?;
        let mut chunk = vec![0; CHUNK];
        match tokio::time::timeout(idle, reader.read(&mut chunk)).await {
            // Ended, or quiet for too long: the connection goes with the place.
            Ok(Ok(0)) | Err(_) => None,
            Ok(Ok(read)) => {
                chunk.truncate(read);
                Some((Ok(Bytes::from(chunk)), Some((reader, place))))
            }
            Ok(Err(err)) => Some((Err(err), None)),
        }
    })
    // Ended for good: the layers around a body may ask once more.
    .fuse()
}

#[cfg(test)]
mod tests {
    use std::pin::Pin;
    use std::task::{Context, Poll};

    use futures::StreamExt as _;

    use super::*;

    /// A container that says one line, then nothing more, without ending.
    struct Quiet(Option<&'static [u8]>);

    impl futures::AsyncRead for Quiet {
        fn poll_read(
            mut self: Pin<&mut Self>,
            _: &mut Context<'_>,
            buf: &mut [u8],
        ) -> Poll<std::io::Result<usize>> {
            match self.0.take() {
                Some(line) => {
                    buf[..line.len()].copy_from_slice(line);
                    Poll::Ready(Ok(line.len()))
                }
                None => Poll::Pending,
            }
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_log_quiet_for_the_idle_deadline_ends_and_gives_its_place_back() {
        let open = Open::idle_after(IDLE);
        let mut logs = Vec::new();
        for _ in 0..MOST_PER_CALLER {
            let place = open.take("user:default/ana").unwrap();
            logs.push(Box::pin(passed_on(Quiet(Some(b"started\n")), place, IDLE)));
        }
        assert!(matches!(
            open.take("user:default/ana"),
            Err(LogError::CallerBusy(who)) if who == "user:default/ana"
        ));
        // Someone else still gets one.
        drop(open.take("user:default/bob").unwrap());
        let start = tokio::time::Instant::now();
        for log in &mut logs {
            assert_eq!(log.next().await.unwrap().unwrap(), &b"started\n"[..]);
        }
        // Then quiet: each ends after the deadline, not before.
        for log in &mut logs {
            assert!(log.next().await.is_none());
        }
        assert!(start.elapsed() >= IDLE);
        // Ended, each gave its place back (the stream still held by the page).
        assert_eq!(open.count(), 0);
        assert!(open.take("user:default/ana").is_ok());
        drop(logs);
    }
}
