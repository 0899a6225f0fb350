//! `POST /webhooks/github`: GitHub tells Tower a repository changed (a pull request opened,
//! merged or closed; a push), so pages follow it within seconds instead of at the next
//! 45-second poll. The request is believed only when signed with `github.webhookSecret`
//! (`X-Hub-Signature-256: sha256=<HMAC-SHA256 of the body>`, compared in constant time); it
//! changes nothing by itself: Tower asks GitHub again (conditionally) about that repo.
//!
//! Answers: `202` accepted, `200` to GitHub's `ping`, `401` (field `x-hub-signature-256`)
//! for a missing or wrong signature, `400` for a body without `repository.full_name`, `404`
//! when no secret is configured (webhooks are off), `413` over 1 MiB.

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};

use super::ApiError;
use crate::state::AppState;

/// The largest webhook body Tower reads (pull request payloads are tens of KiB).
pub const MAX_WEBHOOK_BYTES: usize = 1024 * 1024;

/// The header GitHub signs deliveries in.
pub const SIGNATURE_HEADER: &str = "x-hub-signature-256";

/// Whether `signature` (`sha256=<hex>`) is `body`'s HMAC-SHA256 under `secret`.
pub fn signature_matches(secret: &[u8], body: &[u8], signature: &str) -> bool {
    let Some(hex) = signature.strip_prefix("sha256=") else {
        return false;
    };
    let Some(tag) = decode_hex(hex) else {
        return false;
    };
    let key = ring::hmac::Key::new(ring::hmac::HMAC_SHA256, secret);
    ring::hmac::verify(&key, body, &tag).is_ok()
}

/// `sha256=<hex>` of `body` under `secret`: what GitHub sends (and the simulator too).
pub fn sign(secret: &[u8], body: &[u8]) -> String {
    let key = ring::hmac::Key::new(ring::hmac::HMAC_SHA256, secret);
    let tag = ring::hmac::sign(&key, body);
    let hex: String = tag.as_ref().iter().map(|b| format!("{b:02x}")).collect();
    format!("sha256={hex}")
}

fn decode_hex(hex: &str) -> Option<Vec<u8>> {
    if hex.len() % 2 != 0 {
        return None;
    }
    (0..hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(hex.get(i..i + 2)?, 16).ok())
        .collect()
}

pub async fn github(
    State(state): State<AppState>,
    headers: HeaderMap,
    body: Bytes,
) -> Result<StatusCode, ApiError> {
    let Some(secret) = &state.webhook_secret else {
        return Err(ApiError::NotFound {
            path: "/webhooks/github (no github.webhookSecret configured)".to_owned(),
        });
    };
    let signature = headers
        .get(SIGNATURE_HEADER)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    if !signature_matches(secret.expose().as_bytes(), &body, signature) {
        return Err(ApiError::Unauthorized {
            field: SIGNATURE_HEADER,
            message: "the webhook is not signed with Tower's webhook secret".to_owned(),
        });
    }
    let event = headers
        .get("x-github-event")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    if event == "ping" {
        return Ok(StatusCode::OK);
    }
    let payload: serde_json::Value = serde_json::from_slice(&body)
        .map_err(|err| ApiError::bad("body", format!("the webhook is not JSON: {err}")))?;
    let repo = payload
        .pointer("/repository/full_name")
        .and_then(serde_json::Value::as_str)
        .filter(|r| r.split('/').count() == 2 && r.split('/').all(crate::config::is_github_name))
        .ok_or_else(|| ApiError::bad("repository.full_name", "the webhook names no repository"))?;
    tracing::debug!(%event, %repo, "GitHub webhook");
    if let Some(live) = &state.live {
        live.github_changed(repo);
    }
    Ok(StatusCode::ACCEPTED)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signatures_are_checked() {
        // GitHub's documented example: secret "It's a Secret to Everybody", body "Hello, World!".
        let expected = "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17";
        assert_eq!(
            sign(b"It's a Secret to Everybody", b"Hello, World!"),
            expected
        );
        assert!(signature_matches(
            b"It's a Secret to Everybody",
            b"Hello, World!",
            expected
        ));
        assert!(!signature_matches(
            b"another secret",
            b"Hello, World!",
            expected
        ));
        assert!(!signature_matches(
            b"It's a Secret to Everybody",
            b"Hello",
            expected
        ));
        for bad in ["", "sha256=", "sha1=00", "sha256=zz", "sha256=abc"] {
            assert!(!signature_matches(b"s", b"b", bad), "{bad}");
        }
    }
}
