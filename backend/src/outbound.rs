//! The HTTP client for the services Tower calls over plain HTTP (Argo CD, Backstage): every
//! call has a deadline.

use std::time::Duration;

/// How long Tower waits to connect to a service, and for its whole answer.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(15);

/// A client with [`CONNECT_TIMEOUT`] and [`REQUEST_TIMEOUT`] on every call.
pub fn http_client() -> reqwest::Client {
    reqwest::Client::builder()
        .connect_timeout(CONNECT_TIMEOUT)
        .timeout(REQUEST_TIMEOUT)
        .build()
        .unwrap_or_default()
}
