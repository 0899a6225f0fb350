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

/// The longest a guest token is handed out, whatever Backstage says it lasts.
const GUEST_LONGEST: Duration = Duration::from_secs(3600);

/// Until when a guest token that lasts `expires_in` seconds (as Backstage says) is handed
/// out: a third of its life, at most [`GUEST_LONGEST`] — a number from elsewhere never
/// overflows Tower's clock.
fn hand_out_until(now: Instant, expires_in: Option<u64>) -> Instant {
    let lasts = expires_in.map_or(GUEST_UNKNOWN_LIFETIME, |s| Duration::from_secs(s / 3));
    now.checked_add(lasts.min(GUEST_LONGEST)).unwrap_or(now)
}

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
    let until = hand_out_until(Instant::now(), identity["expiresInSeconds"].as_u64());
    *cached = Some((Secret(token.to_owned()), until));
    Ok(Json(GuestToken {
        token: token.to_owned(),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_guest_tokens_lifetime_from_backstage_never_overflows_the_clock() {
        let now = Instant::now();
        assert_eq!(
            hand_out_until(now, Some(3600)),
            now + Duration::from_secs(1200)
        );
        assert_eq!(hand_out_until(now, None), now + GUEST_UNKNOWN_LIFETIME);
        assert_eq!(hand_out_until(now, Some(u64::MAX)), now + GUEST_LONGEST);
        assert_eq!(hand_out_until(now, Some(0)), now);
    }
}
