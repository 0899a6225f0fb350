//! What a page needs to sign in (public routes).
//!
//! - `GET /auth/config`: `{"backstageOrigin", "guestSignIn", "open", "proxyUser"?}` — which
//!   parent origin may hand the page its Backstage token by `postMessage`, whether a page
//!   opened on its own signs in as Backstage's guest, whether no token is needed at all
//!   (`openApi`), and who the authenticating proxy says the caller is (when the request
//!   came through it: the page then needs no token).
//! - `GET /auth/guest`: when guest sign-in is on, Backstage's guest user token
//!   (`{"token"}`), fetched from Backstage's own `/api/auth/guest/refresh`; 404 otherwise.
//!   One fetch serves every caller for a third of the token's lifetime (20 minutes of an
//!   hour), so a page that renews every 30 minutes always holds a token with time left, and
//!   this public route cannot make Tower hammer Backstage.

use axum::extract::State;
use axum::Json;
use serde_json::Value;
use tower_shared::api::{AuthConfig, GuestToken};

use std::time::{Duration, Instant};

use super::ApiError;
use crate::config::Secret;
use crate::state::AppState;

pub async fn config(
    State(state): State<AppState>,
    request: http::request::Parts,
) -> Json<AuthConfig> {
    let peer = request
        .extensions
        .get::<axum::extract::ConnectInfo<std::net::SocketAddr>>()
        .map(|info| info.0);
    Json(AuthConfig {
        backstage_origin: state.gate.backstage_origin.clone(),
        guest_sign_in: state.gate.guest_sign_in,
        open: state.gate.open,
        // A request naming two users names none.
        proxy_user: state.gate.proxy_user(&request.headers, peer).ok().flatten(),
    })
}

/// How long a guest token is handed out when Backstage does not say how long it lasts.
const GUEST_UNKNOWN_LIFETIME: Duration = Duration::from_secs(60);

pub async fn guest(State(state): State<AppState>) -> Result<Json<GuestToken>, ApiError> {
    // Held across the fetch: callers that miss together wait for one fetch.
    let mut cached = state.gate.guest.lock().await;
    if let Some((token, until)) = cached.as_ref() {
        if Instant::now() < *until {
            return Ok(Json(GuestToken {
                token: token.expose().to_owned(),
            }));
        }
    }
    let url = match (&state.gate.backstage_url, state.gate.guest_sign_in) {
        (Some(url), true) => format!("{url}/api/auth/guest/refresh"),
        _ => {
            return Err(ApiError::NotFound {
                path: "/auth/guest".to_owned(),
            })
        }
    };
    let response = state
        .http
        .get(url)
        .send()
        .await
        .map_err(|err| ApiError::Upstream {
            message: format!("Backstage could not be reached: {}", err.without_url()),
        })?;
    let body: Value = response.json().await.map_err(|err| ApiError::Upstream {
        message: format!(
            "Backstage's guest sign-in answered something unreadable: {}",
            err.without_url()
        ),
    })?;
    let identity = &body["backstageIdentity"];
    let token = identity["token"]
        .as_str()
        .ok_or_else(|| ApiError::Upstream {
            message: "Backstage's guest sign-in gave no token".to_owned(),
        })?;
    let hand_out_for = identity["expiresInSeconds"]
        .as_u64()
        .map_or(GUEST_UNKNOWN_LIFETIME, |lasts| {
            Duration::from_secs(lasts / 3)
        });
    *cached = Some((Secret(token.to_owned()), Instant::now() + hand_out_for));
    Ok(Json(GuestToken {
        token: token.to_owned(),
    }))
}
