//! Who is calling: Backstage user tokens, checked against the Backstage JWKS.
//!
//! A user token is an ES256 JWT with header `typ: vnd.backstage.user` and a `kid`, claims
//! `iss = <backstage>/api/auth`, `aud = backstage`, `sub`, `exp`. Anything else — `alg=none`,
//! HS256, expired, another audience or issuer, an unknown key — is refused. Keys are cached;
//! a token naming an unknown `kid` makes one re-fetch (Backstage rotates keys), and
//! re-fetches are at most one per [`REFETCH_EVERY`], so forged `kid`s cannot make Tower
//! hammer Backstage.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use jsonwebtoken::jwk::JwkSet;
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use serde::Deserialize;
use tokio::sync::RwLock;

/// The shortest time between two JWKS fetches.
pub const REFETCH_EVERY: Duration = Duration::from_secs(10);

/// The token type of a Backstage user token.
pub const USER_TOKEN_TYPE: &str = "vnd.backstage.user";

/// Why a token was refused. Never carries the token.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum AuthError {
    #[error("the token is not a JWT")]
    Malformed,
    #[error("the token is not signed with ES256")]
    WrongAlgorithm,
    #[error("the token is not a Backstage user token")]
    WrongType,
    #[error("the token names no signing key Backstage publishes")]
    UnknownKey,
    #[error("the token's signature or claims are invalid: {0}")]
    Invalid(String),
    #[error("Backstage's keys could not be read: {0}")]
    KeysUnavailable(String),
}

/// A verified caller.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct User {
    /// `user:default/jane` — Backstage's entity ref.
    pub subject: String,
}

#[derive(Debug, Deserialize)]
struct Claims {
    sub: String,
}

#[derive(Debug, Default)]
struct Keys {
    set: Option<JwkSet>,
}

/// Verifies Backstage user tokens. Cheap to share behind an `Arc`.
#[derive(Debug)]
pub struct Verifier {
    issuer: String,
    jwks_url: String,
    http: reqwest::Client,
    keys: RwLock<Keys>,
    last_fetch: Mutex<Option<Instant>>,
    refetch_every: Duration,
    fetches: AtomicU64,
}

impl Verifier {
    /// For the Backstage at `backstage_url` (its auth plugin at `/api/auth`).
    pub fn new(backstage_url: &str, http: reqwest::Client) -> Self {
        let base = backstage_url.trim_end_matches('/');
        Self {
            issuer: format!("{base}/api/auth"),
            jwks_url: format!("{base}/api/auth/.well-known/jwks.json"),
            http,
            keys: RwLock::default(),
            last_fetch: Mutex::new(None),
            refetch_every: REFETCH_EVERY,
            fetches: AtomicU64::new(0),
        }
    }

    /// The same, with another minimum time between JWKS fetches.
    pub fn with_refetch_every(mut self, every: Duration) -> Self {
        self.refetch_every = every;
        self
    }

    /// How many times the JWKS has been fetched.
    pub fn fetches(&self) -> u64 {
        self.fetches.load(Ordering::Relaxed)
    }

    /// Who `token` says the caller is, if Backstage signed it and it is still valid.
    pub async fn verify(&self, token: &str) -> Result<User, AuthError> {
        let header = jsonwebtoken::decode_header(token).map_err(|_| AuthError::Malformed)?;
        if header.alg != Algorithm::ES256 {
            return Err(AuthError::WrongAlgorithm);
        }
        if header.typ.as_deref() != Some(USER_TOKEN_TYPE) {
            return Err(AuthError::WrongType);
        }
        let kid = header.kid.ok_or(AuthError::UnknownKey)?;
        let key = match self.key(&kid).await {
            Some(key) => key,
            None => {
                self.refetch().await?;
                self.key(&kid).await.ok_or(AuthError::UnknownKey)?
            }
        };
        let mut validation = Validation::new(Algorithm::ES256);
        validation.set_issuer(&[&self.issuer]);
        validation.set_audience(&["backstage"]);
        validation.set_required_spec_claims(&["exp", "iss", "aud", "sub"]);
        validation.leeway = 30;
        let data = jsonwebtoken::decode::<Claims>(token, &key, &validation)
            .map_err(|err| AuthError::Invalid(err.to_string()))?;
        Ok(User {
            subject: data.claims.sub,
        })
    }

    async fn key(&self, kid: &str) -> Option<DecodingKey> {
        let keys = self.keys.read().await;
        let jwk = keys.set.as_ref()?.find(kid)?;
        DecodingKey::from_jwk(jwk).ok()
    }

    /// Fetches the JWKS unless it was fetched within [`REFETCH_EVERY`].
    async fn refetch(&self) -> Result<(), AuthError> {
        {
            let mut last = self
                .last_fetch
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            if last.is_some_and(|at| at.elapsed() < self.refetch_every) {
                return Ok(());
            }
            *last = Some(Instant::now());
        }
        self.fetches.fetch_add(1, Ordering::Relaxed);
        let response = self
            .http
            .get(&self.jwks_url)
            .send()
            .await
            .map_err(|err| AuthError::KeysUnavailable(err.without_url().to_string()))?;
        if !response.status().is_success() {
            return Err(AuthError::KeysUnavailable(format!(
                "Backstage answered {}",
                response.status()
            )));
        }
        let set: JwkSet = response
            .json()
            .await
            .map_err(|err| AuthError::KeysUnavailable(err.without_url().to_string()))?;
        self.keys.write().await.set = Some(set);
        Ok(())
    }
}
