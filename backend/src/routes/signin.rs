//! What a page needs to sign in (public routes).
//!
//! - `GET /auth/config`: `{"backstageOrigin", "guestSignIn", "open", "proxyUser"?}` — which
//!   parent origin may hand the page its Backstage token by `postMessage`, whether a page
//!   opened on its own signs in as Backstage's guest, whether no token is needed at all
//!   (`openApi`), and who the authenticating proxy says the caller is (when the request
//!   came through it: the page then needs no token).
//! - `GET /auth/guest`: when guest sign-in is on, Backstage's guest user token
//!   (`{"token"}`), fetched from Backstage's own `/api/auth/guest/refresh`; 404 otherwise.

use axum::extract::State;
use axum::Json;
use serde_json::{json, Value};

use super::ApiError;
use crate::app::AppState;

pub async fn config(State(state): State<AppState>, request: http::request::Parts) -> Json<Value> {
    let peer = request
        .extensions
        .get::<axum::extract::ConnectInfo<std::net::SocketAddr>>()
        .map(|info| info.0);
    Json(json!({
        "backstageOrigin": state.gate.backstage_origin,
        "guestSignIn": state.gate.guest_sign_in,
        "open": state.gate.open,
        "proxyUser": state.gate.proxy_user(&request.headers, peer),
    }))
}

pub async fn guest(State(state): State<AppState>) -> Result<Json<Value>, ApiError> {
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
    let token = body["backstageIdentity"]["token"]
        .as_str()
        .ok_or_else(|| ApiError::Upstream {
            message: "Backstage's guest sign-in gave no token".to_owned(),
        })?;
    Ok(Json(json!({ "token": token })))
}
