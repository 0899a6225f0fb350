//! A container's log — a pipeline step's, or an app's pod's on the Runtime tab — read on
//! request ([`tower_shared::hangar::READ_ON_REQUEST`]): one
//! `GET /api/v1/namespaces/{ns}/pods/{pod}/log[?container=…][&follow=true]` to the pod's
//! cluster per open log, through Tower's own identity, passed on chunk by chunk
//! as the API server sends it. The stream holds the upstream response; when the caller goes,
//! axum drops the stream and with it the upstream connection, so nothing is left reading.
//! At most [`MOST_OPEN`] are open at once.

use std::sync::Arc;

use bytes::Bytes;
use futures::{AsyncReadExt as _, Stream, StreamExt as _};
use k8s_openapi::api::core::v1::Pod;
use kube::api::LogParams;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use super::Live;

/// Log streams open at once, across callers: each holds an upstream connection.
pub const MOST_OPEN: usize = 64;

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
    /// The control-plane cluster is not configured, did not answer, or answered otherwise.
    #[error("{0}")]
    Unreachable(String),
}

/// The open log streams: a permit each.
#[derive(Debug)]
pub struct Open(Arc<Semaphore>);

impl Default for Open {
    fn default() -> Self {
        Self(Arc::new(Semaphore::new(MOST_OPEN)))
    }
}

impl Open {
    /// How many logs are being streamed now.
    pub fn count(&self) -> usize {
        MOST_OPEN - self.0.available_permits()
    }
}

impl Live {
    /// The log of `container` (the pod's only one when `None`) in `pod` (namespace
    /// `namespace` on `cluster`), as it is so far — and, with `follow`, as it grows until the
    /// container ends.
    pub async fn pod_log(
        &self,
        cluster: &str,
        (namespace, pod, container): (&str, &str, Option<&str>),
        follow: bool,
    ) -> Result<impl Stream<Item = std::io::Result<Bytes>> + Send + 'static, LogError> {
        let permit: OwnedSemaphorePermit = Arc::clone(&self.inner.logs.0)
            .try_acquire_owned()
            .map_err(|_| LogError::Busy)?;
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
        // Chunks as they come; the permit goes with the stream.
        Ok(
            futures::stream::unfold(Some((Box::pin(reader), permit)), |state| async move {
                let (mut reader, permit) = state?;
                let mut chunk = vec![0; CHUNK];
                match reader.read(&mut chunk).await {
                    Ok(0) => None,
                    Ok(read) => {
                        chunk.truncate(read);
                        Some((Ok(Bytes::from(chunk)), Some((reader, permit))))
                    }
                    Err(err) => Some((Err(err), None)),
                }
            })
            // Ended for good: the layers around a body may ask once more.
            .fuse(),
        )
    }

    /// How many logs are being streamed now.
    pub fn open_logs(&self) -> usize {
        self.inner.logs.count()
    }
}
