//! Backstage, the parts Tower uses (`../shared/reference/data-shapes.md` §7, and the real
//! backend in `../shared/tools/backstage-partner/`): user tokens from the guest sign-in
//! (ES256, keys at the JWKS endpoint), static tokens for tools, the catalog's by-name lookup
//! and the scheduler task of the catalog ingestor; and a page embedding Tower (`/tower`) as
//! a Backstage plugin page does, handing it the user token by `postMessage`.
//!
//! The catalog shows a story's entity once an ingestor run has happened since its
//! descriptor became readable: runs happen every 10 minutes of world time, or when
//! someone triggers the task. A triggered run takes [`RUN_TAKES`] of real time, during
//! which another trigger gets 409, as Backstage answers.

use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Instant;

use axum::extract::{Path, State};
use axum::http::{HeaderMap, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use chrono::{DateTime, Duration, DurationRound, Utc};
use ring::rand::SystemRandom;
use ring::signature::{
    EcdsaKeyPair, KeyPair, UnparsedPublicKey, ECDSA_P256_SHA256_FIXED,
    ECDSA_P256_SHA256_FIXED_SIGNING,
};
use serde_json::{json, Value};

use crate::platform::Platform;

/// The catalog ingestor's task id (the Hangar ingestor's `KubernetesEntityProvider`).
pub const INGESTOR_TASK: &str = "KubernetesEntityProvider";
/// The ingestor's schedule, in world time.
pub const INGEST_EVERY: Duration = Duration::minutes(10);
/// How long a triggered ingestor run takes, in real time.
pub const RUN_TAKES: std::time::Duration = std::time::Duration::from_secs(2);
/// The static token tools may send (`backend.auth.externalAccess`, subject `tower-tests`).
pub const STATIC_TOKEN: &str = "hangar-sim-static-token-0123456789";
/// The guest user's entity ref.
pub const GUEST: &str = "user:development/guest";
/// The groups the guest is a member of in the demo's catalog unless set otherwise
/// ([`Platform::set_guest_owns`], `tower demo --guest-owns`): it owns `team-a`'s apps, not
/// `team-b`'s.
pub const GUEST_GROUPS: &[&str] = &["group:default/team-a"];

/// `GET /tower?tower=URL[&hold=1]`: a Backstage page embedding Tower at `URL` the way a
/// Backstage plugin page does — framed, signed in as the guest, the user token handed over
/// by `postMessage` to Tower's origin only when Tower says it is ready.
async fn tower_page() -> axum::response::Html<&'static str> {
    axum::response::Html(include_str!("../assets/backstage-tower-page.html"))
}
/// How long a user token lives.
const TOKEN_LIFETIME: Duration = Duration::hours(1);

/// Signs user tokens with one P-256 key made at start-up.
struct Signer {
    key: EcdsaKeyPair,
    kid: String,
    rng: SystemRandom,
}

impl std::fmt::Debug for Signer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Signer").field("kid", &self.kid).finish()
    }
}

impl Signer {
    fn new() -> anyhow::Result<Self> {
        let rng = SystemRandom::new();
        let pkcs8 = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &rng)
            .map_err(|_| anyhow::anyhow!("generating the token signing key"))?;
        let key = EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, pkcs8.as_ref(), &rng)
            .map_err(|_| anyhow::anyhow!("reading the token signing key"))?;
        let kid = crate::store::uid_of(&URL_SAFE_NO_PAD.encode(key.public_key().as_ref()));
        Ok(Self { key, kid, rng })
    }

    /// The public key as a JWK (the point is `04 ‖ x ‖ y`).
    fn jwk(&self) -> Value {
        let point = self.key.public_key().as_ref();
        json!({
            "kty": "EC", "crv": "P-256", "alg": "ES256", "use": "sig", "kid": self.kid,
            "x": URL_SAFE_NO_PAD.encode(&point[1..33]),
            "y": URL_SAFE_NO_PAD.encode(&point[33..65]),
        })
    }

    fn sign(&self, claims: &Value) -> anyhow::Result<String> {
        let header = json!({"typ": "vnd.backstage.user", "alg": "ES256", "kid": self.kid});
        let signing_input = format!(
            "{}.{}",
            URL_SAFE_NO_PAD.encode(header.to_string()),
            URL_SAFE_NO_PAD.encode(claims.to_string())
        );
        let signature = self
            .key
            .sign(&self.rng, signing_input.as_bytes())
            .map_err(|_| anyhow::anyhow!("signing a user token"))?;
        Ok(format!(
            "{signing_input}.{}",
            URL_SAFE_NO_PAD.encode(signature.as_ref())
        ))
    }

    /// The claims of a token this signer issued and that has not expired.
    fn verify(&self, token: &str, now: DateTime<Utc>) -> Result<Value, &'static str> {
        const ILLEGAL: &str = "Illegal token";
        let (signing_input, signature) = token.rsplit_once('.').ok_or(ILLEGAL)?;
        let (header, claims) = signing_input.split_once('.').ok_or(ILLEGAL)?;
        let decode = |part: &str| -> Result<Value, &'static str> {
            let bytes = URL_SAFE_NO_PAD.decode(part).map_err(|_| ILLEGAL)?;
            serde_json::from_slice(&bytes).map_err(|_| ILLEGAL)
        };
        let header = decode(header)?;
        if header["alg"] != "ES256" || header["kid"] != self.kid.as_str() {
            return Err(ILLEGAL);
        }
        let signature = URL_SAFE_NO_PAD.decode(signature).map_err(|_| ILLEGAL)?;
        UnparsedPublicKey::new(&ECDSA_P256_SHA256_FIXED, self.key.public_key().as_ref())
            .verify(signing_input.as_bytes(), &signature)
            .map_err(|_| ILLEGAL)?;
        let claims = decode(claims)?;
        match claims["exp"].as_i64() {
            Some(exp) if exp > now.timestamp() => Ok(claims),
            Some(_) => Err("Token has expired"),
            None => Err(ILLEGAL),
        }
    }
}

/// The ingestor task's state.
#[derive(Debug, Default)]
struct Task {
    /// A triggered run in progress: its real start, and the world time it reads the
    /// descriptors at.
    running: Option<(Instant, DateTime<Utc>)>,
    /// The world time the last finished triggered run read the descriptors at.
    synced: Option<DateTime<Utc>>,
}

impl Task {
    /// Finishes a triggered run whose time is up.
    fn settle(&mut self) {
        if let Some((started, read_at)) = self.running {
            if started.elapsed() >= RUN_TAKES {
                self.running = None;
                self.synced = self.synced.max(Some(read_at));
            }
        }
    }
}

/// The simulated Backstage backend.
#[derive(Debug)]
pub struct Backstage {
    platform: Arc<Platform>,
    signer: Signer,
    /// `http://127.0.0.1:PORT`, for the token issuer.
    base_url: String,
    task: Mutex<Task>,
}

impl Backstage {
    pub fn new(platform: Arc<Platform>, base_url: String) -> anyhow::Result<Self> {
        Ok(Self {
            platform,
            signer: Signer::new()?,
            base_url,
            task: Mutex::default(),
        })
    }

    pub fn router(self) -> Router {
        Router::new()
            .route("/tower", get(tower_page))
            .route("/api/auth/guest/refresh", get(guest_refresh))
            .route("/api/auth/.well-known/jwks.json", get(jwks))
            .route("/api/auth/v1/userinfo", get(userinfo))
            .route(
                "/api/catalog/entities/by-name/{kind}/{namespace}/{name}",
                get(by_name),
            )
            .route("/api/catalog/.backstage/scheduler/v1/tasks", get(tasks))
            .route(
                "/api/catalog/.backstage/scheduler/v1/tasks/{id}/trigger",
                post(trigger),
            )
            .with_state(Arc::new(self))
    }

    fn task(&self) -> MutexGuard<'_, Task> {
        let mut task = self.task.lock().unwrap_or_else(PoisonError::into_inner);
        task.settle();
        task
    }

    /// The world time of the newest ingestor run, scheduled or triggered.
    fn last_ingested(&self) -> DateTime<Utc> {
        let now = self.platform.clock().now();
        let scheduled = now.duration_trunc(INGEST_EVERY).unwrap_or(now);
        self.task().synced.map_or(scheduled, |s| s.max(scheduled))
    }

    /// Whether the caller sent a static token or a user token this backend signed and
    /// that has not expired; if not, why Backstage answers 401.
    fn authenticate(&self, request: &RequestInfo) -> Result<(), &'static str> {
        let token = request
            .headers
            .get(axum::http::header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "))
            .ok_or("Missing credentials")?;
        if token == STATIC_TOKEN {
            return Ok(());
        }
        self.signer.verify(token, Utc::now()).map(drop)
    }
}

/// Backstage's 401.
fn denied(request: &RequestInfo, why: &str) -> Response {
    error(
        request,
        StatusCode::UNAUTHORIZED,
        "AuthenticationError",
        why,
    )
}

/// What an error body echoes of the request.
struct RequestInfo {
    method: Method,
    uri: Uri,
    headers: HeaderMap,
}

impl<S: Send + Sync> axum::extract::FromRequestParts<S> for RequestInfo {
    type Rejection = std::convert::Infallible;

    async fn from_request_parts(
        parts: &mut axum::http::request::Parts,
        _state: &S,
    ) -> Result<Self, Self::Rejection> {
        Ok(Self {
            method: parts.method.clone(),
            uri: parts.uri.clone(),
            headers: parts.headers.clone(),
        })
    }
}

/// Backstage's error body (`@backstage/errors` `ErrorResponseBody`).
fn error(request: &RequestInfo, status: StatusCode, name: &str, message: &str) -> Response {
    let body = json!({
        "error": {"name": name, "message": message},
        "request": {"method": request.method.as_str(), "url": request.uri.path()},
        "response": {"statusCode": status.as_u16()},
    });
    (status, Json(body)).into_response()
}

async fn guest_refresh(State(backstage): State<Arc<Backstage>>) -> Response {
    let now = Utc::now();
    let claims = json!({
        "iss": format!("{}/api/auth", backstage.base_url),
        "sub": GUEST,
        "aud": "backstage",
        "iat": now.timestamp(),
        "exp": (now + TOKEN_LIFETIME).timestamp(),
    });
    match backstage.signer.sign(&claims) {
        Ok(token) => Json(json!({
            "profile": {"displayName": "Guest"},
            "backstageIdentity": {
                "token": token,
                "expiresInSeconds": TOKEN_LIFETIME.num_seconds(),
                "identity": {"type": "user", "userEntityRef": GUEST, "ownershipEntityRefs": [GUEST]},
            },
        }))
        .into_response(),
        Err(err) => (StatusCode::INTERNAL_SERVER_ERROR, err.to_string()).into_response(),
    }
}

/// `GET /api/auth/v1/userinfo`: who a user token is and what it stands for — the user
/// and its groups (`ent`), as Backstage answers it; the tokens themselves carry no `ent`.
/// A user token only (401 otherwise, a tool's static token included).
async fn userinfo(State(backstage): State<Arc<Backstage>>, request: RequestInfo) -> Response {
    let token = request
        .headers
        .get(axum::http::header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "));
    let claims = match token.map(|t| backstage.signer.verify(t, Utc::now())) {
        Some(Ok(claims)) => claims,
        Some(Err(why)) => return denied(&request, why),
        None => return denied(&request, "Missing credentials"),
    };
    let sub = claims["sub"].as_str().unwrap_or_default();
    let mut ent = vec![sub.to_owned()];
    if sub == GUEST {
        ent.extend(backstage.platform.guest_owns());
    }
    Json(json!({"claims": {"sub": sub, "ent": ent}})).into_response()
}

async fn jwks(State(backstage): State<Arc<Backstage>>) -> Json<Value> {
    Json(json!({"keys": [backstage.signer.jwk()]}))
}

async fn by_name(
    State(backstage): State<Arc<Backstage>>,
    Path((kind, namespace, name)): Path<(String, String, String)>,
    request: RequestInfo,
) -> Response {
    if let Err(why) = backstage.authenticate(&request) {
        return denied(&request, why);
    }
    let ingested = backstage.last_ingested();
    let found = backstage.platform.catalog_entity(|e| {
        let entity = &e.entity;
        e.readable_since <= ingested
            && entity["kind"]
                .as_str()
                .is_some_and(|k| k.eq_ignore_ascii_case(&kind))
            && entity["metadata"]["namespace"]
                .as_str()
                .is_some_and(|n| n.eq_ignore_ascii_case(&namespace))
            && entity["metadata"]["name"] == name.as_str()
    });
    match found {
        Some(entity) => Json(entity.entity).into_response(),
        None => error(
            &request,
            StatusCode::NOT_FOUND,
            "NotFoundError",
            &format!(
                "No entity named '{name}' found, with kind '{kind}' in namespace '{namespace}'"
            ),
        ),
    }
}

async fn tasks(State(backstage): State<Arc<Backstage>>, request: RequestInfo) -> Response {
    if let Err(why) = backstage.authenticate(&request) {
        return denied(&request, why);
    }
    let task = backstage.task();
    let state = match task.running {
        Some(_) => json!({"status": "running"}),
        None => json!({"status": "idle", "lastRunEndedAt": task.synced}),
    };
    Json(json!({"tasks": [{
        "taskId": INGESTOR_TASK, "pluginId": "catalog", "scope": "global",
        "settings": {"version": 2, "cadence": "PT10M", "timeoutAfterDuration": "PT10M"},
        "taskState": state, "workerState": {"status": "idle"},
    }]}))
    .into_response()
}

async fn trigger(
    State(backstage): State<Arc<Backstage>>,
    Path(id): Path<String>,
    request: RequestInfo,
) -> Response {
    if let Err(why) = backstage.authenticate(&request) {
        return denied(&request, why);
    }
    if id != INGESTOR_TASK {
        let message = format!("Task {id} does not exist");
        return error(&request, StatusCode::NOT_FOUND, "NotFoundError", &message);
    }
    let mut task = backstage.task();
    if task.running.is_some() {
        let message = format!("Task {id} is currently running");
        return error(&request, StatusCode::CONFLICT, "ConflictError", &message);
    }
    task.running = Some((Instant::now(), backstage.platform.clock().now()));
    StatusCode::OK.into_response()
}
