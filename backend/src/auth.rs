//! Who is calling: Backstage user tokens, checked against the Backstage JWKS.
//!
//! A user token is an ES256 JWT with header `typ: vnd.backstage.user` and a `kid`, claims
//! `iss = <backstage>/api/auth`, `aud = backstage`, `sub`, `exp`. Anything else — `alg=none`,
//! HS256, expired, another audience or issuer, an unknown key — is refused. Keys are cached;
//! a token naming an unknown `kid` makes one re-fetch (Backstage rotates keys), and
//! re-fetches are at most one per [`REFETCH_EVERY`], so forged `kid`s cannot make Tower
//! hammer Backstage.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
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
    exp: i64,
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
    /// One fetch at a time: callers that missed the same key wait for it.
    fetching: tokio::sync::Mutex<()>,
    /// Tokens already verified (by SHA-256), with who they are and until when: a page
    /// sends the same token with every request, and ES256 verification is the costly part.
    verified: Mutex<std::collections::HashMap<Digest, (User, i64)>>,
}

/// A token's SHA-256: how verified tokens are remembered and tool tokens compared (a
/// comparison of digests takes no longer for a token that shares a secret's first
/// characters).
pub(crate) type Digest = [u8; 32];

pub(crate) fn digest(token: &str) -> Digest {
    ring::digest::digest(&ring::digest::SHA256, token.as_bytes())
        .as_ref()
        .try_into()
        .unwrap_or([0; 32])
}

/// How many verified tokens are remembered before the memory is cleared.
const VERIFIED_KEPT: usize = 10_000;

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
            fetching: tokio::sync::Mutex::new(()),
            verified: Mutex::default(),
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
        self.verify_digested(token, digest(token)).await
    }

    /// [`Verifier::verify`], for a caller that has the token's [`digest`] already.
    async fn verify_digested(&self, token: &str, digest: Digest) -> Result<User, AuthError> {
        let now = crate::clock::wall().timestamp();
        if let Some((user, exp)) = self.verified_lock().get(&digest) {
            if now < *exp {
                return Ok(user.clone());
            }
        }
        let (user, exp) = self.verify_signed(token).await?;
        let mut verified = self.verified_lock();
        if verified.len() >= VERIFIED_KEPT {
            verified.clear();
        }
        verified.insert(digest, (user.clone(), exp));
        Ok(user)
    }

    fn verified_lock(
        &self,
    ) -> std::sync::MutexGuard<'_, std::collections::HashMap<Digest, (User, i64)>> {
        self.verified
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Checks the signature and claims; returns the user and the token's `exp`.
    async fn verify_signed(&self, token: &str) -> Result<(User, i64), AuthError> {
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
                let _turn = self.fetching.lock().await;
                // Another caller may have fetched the key while this one waited.
                match self.key(&kid).await {
                    Some(key) => key,
                    None => {
                        self.refetch().await?;
                        self.key(&kid).await.ok_or(AuthError::UnknownKey)?
                    }
                }
            }
        };
        let mut validation = Validation::new(Algorithm::ES256);
        validation.set_issuer(&[&self.issuer]);
        validation.set_audience(&["backstage"]);
        validation.set_required_spec_claims(&["exp", "iss", "aud", "sub"]);
        validation.leeway = 30;
        let data = jsonwebtoken::decode::<Claims>(token, &key, &validation)
            .map_err(|err| AuthError::Invalid(err.to_string()))?;
        Ok((
            User {
                subject: data.claims.sub,
            },
            data.claims.exp,
        ))
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

/// How callers prove who they are: a Backstage user token, or a tool's static token.
#[derive(Debug)]
pub struct Gate {
    pub verifier: Option<Verifier>,
    /// Tools' static tokens, each with its [`digest`] (computed once, not per request).
    pub tools: Vec<(Digest, crate::config::ToolToken)>,
    /// Nobody is asked (a local snapshot or fleet file; see `openApi`).
    pub open: bool,
    /// The Backstage origin allowed to hand the page its token (`postMessage`).
    pub backstage_origin: Option<String>,
    /// Pages opened on their own sign in as Backstage's guest.
    pub guest_sign_in: bool,
    /// The setting that makes anyone who reaches Tower a caller, if any
    /// ([`crate::config::Config::open_to_anyone`]).
    pub anyone: Option<&'static str>,
    pub backstage_url: Option<String>,
    /// An authenticating proxy's user header, believed only from these networks.
    pub proxy: Option<(http::HeaderName, Vec<ipnet::IpNet>)>,
    /// Backstage's guest token as last fetched for `/auth/guest`, and until when it is
    /// handed out: every guest is the same user, so one fetch serves them all.
    pub guest: tokio::sync::Mutex<Option<(crate::config::Secret, Instant)>>,
    /// When an untrusted proxy header was last logged, and how many since were not.
    proxy_warned: Mutex<(Option<Instant>, u64)>,
    /// Writes per subject.
    pub writes: Budget,
    /// Reads that may cost Tower's GitHub rate limit, per subject.
    pub github_reads: Budget,
    /// GitHub writes (commits, branches, pull requests), per subject, by what each costs
    /// ([`crate::gitops::Writer::charged`]).
    pub github_writes: Arc<Budget>,
}

impl Gate {
    /// Whether the tool `subject` is granted `path`.
    pub fn tool_allows(&self, subject: &str, path: &str) -> bool {
        self.tools
            .iter()
            .any(|(_, tool)| tool.subject == subject && tool.allows(path))
    }
}

/// How many requests of one sort a subject may burst, and how many per second it gets
/// back: a token bucket per subject.
#[derive(Debug)]
pub struct Budget {
    burst: f64,
    per_second: f64,
    buckets: Mutex<std::collections::HashMap<String, (f64, Instant)>>,
}

/// How often a proxy header from outside the proxy's addresses is logged at most.
pub const WARN_EVERY: Duration = Duration::from_secs(10);

/// Writes a subject may burst, and how many per second it gets back: generous for people
/// and tools (a page posts a handful), fatal to a runaway loop.
pub const WRITE_BURST: f64 = 1_200.0;
pub const WRITES_PER_SECOND: f64 = 20.0;

/// GitHub writes a subject may burst (a pull request costs four, a commit one), and how
/// many per second it gets back: ten promotions in a row, then one write every 30 s — no
/// caller nears GitHub's limit on content-creating requests (80 a minute, 500 an hour).
pub const GITHUB_WRITE_BURST: f64 = 40.0;
pub const GITHUB_WRITES_PER_SECOND: f64 = 1.0 / 30.0;

/// GitHub-backed reads (`/pull-requests`, `/pending-requests`, `/request-pr`,
/// `/config/cicd`) a subject may burst, and how many per second it gets back: at most
/// 3,660 in an hour, so no one caller spends the 5,000 an hour GitHub gives Tower's token.
pub const GITHUB_READ_BURST: f64 = 60.0;
pub const GITHUB_READS_PER_SECOND: f64 = 1.0;

impl Budget {
    pub fn new(burst: f64, per_second: f64) -> Self {
        Self {
            burst,
            per_second,
            buckets: Mutex::default(),
        }
    }

    /// Takes one from `subject`'s bucket; `Err(seconds)` until one is back.
    pub fn take(&self, subject: &str) -> Result<(), u64> {
        self.take_n(subject, 1.0)
    }

    /// Takes `cost` (at most the burst) from `subject`'s bucket; `Err(seconds)` until that
    /// much is back.
    pub fn take_n(&self, subject: &str, cost: f64) -> Result<(), u64> {
        debug_assert!(
            cost <= self.burst,
            "a cost of {cost} never fits a burst of {}",
            self.burst
        );
        let mut buckets = self
            .buckets
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let now = Instant::now();
        let (tokens, at) = buckets
            .entry(subject.to_owned())
            .or_insert((self.burst, now));
        *tokens =
            (*tokens + now.duration_since(*at).as_secs_f64() * self.per_second).min(self.burst);
        *at = now;
        if *tokens >= cost {
            *tokens -= cost;
            Ok(())
        } else {
            Err(((cost - *tokens) / self.per_second).ceil().max(1.0) as u64)
        }
    }
}

impl Default for Gate {
    fn default() -> Self {
        Self {
            verifier: None,
            tools: Vec::new(),
            open: false,
            backstage_origin: None,
            guest_sign_in: false,
            anyone: None,
            backstage_url: None,
            proxy: None,
            guest: tokio::sync::Mutex::default(),
            proxy_warned: Mutex::default(),
            writes: Budget::new(WRITE_BURST, WRITES_PER_SECOND),
            github_reads: Budget::new(GITHUB_READ_BURST, GITHUB_READS_PER_SECOND),
            github_writes: Arc::new(Budget::new(GITHUB_WRITE_BURST, GITHUB_WRITES_PER_SECOND)),
        }
    }
}

impl Gate {
    pub fn from_config(config: &crate::config::Config, http: reqwest::Client) -> Self {
        let backstage = config.backstage.as_ref();
        if config.open_api {
            tracing::warn!("openApi is on: Tower asks no caller for a token");
        }
        Self {
            verifier: backstage.map(|b| Verifier::new(&b.url, http)),
            tools: config
                .tokens
                .iter()
                .map(|tool| (digest(tool.token.expose()), tool.clone()))
                .collect(),
            open: config.open_api,
            backstage_origin: backstage.and_then(crate::config::HttpService::origin),
            guest_sign_in: backstage.is_some_and(|b| b.guest_sign_in),
            anyone: config.open_to_anyone().map(|(field, _)| field),
            backstage_url: backstage.map(|b| b.url.trim_end_matches('/').to_owned()),
            // `Config::check` has refused unreadable proxy settings already.
            proxy: config.proxy.as_ref().and_then(|p| {
                let header = http::HeaderName::from_bytes(p.user_header.as_bytes()).ok()?;
                Some((header, p.networks().ok()?))
            }),
            ..Self::default()
        }
    }

    /// The user an authenticating proxy names, when the request came from one of its
    /// addresses (`peer`: the TCP peer; `None` when unknown, which is never trusted). The
    /// header from anyone else is ignored, and logged (at most once per [`WARN_EVERY`]).
    /// `Err` when the proxy's request names more than one user (the header twice, or a
    /// list): a client's own header let through beside the proxy's is not believed.
    pub fn proxy_user(
        &self,
        headers: &http::HeaderMap,
        peer: Option<std::net::SocketAddr>,
    ) -> Result<Option<String>, String> {
        let Some((header, networks)) = self.proxy.as_ref() else {
            return Ok(None);
        };
        let mut values = headers.get_all(header).iter();
        let Some(value) = values.next() else {
            return Ok(None);
        };
        let trusted = peer.is_some_and(|peer| {
            let ip = peer.ip().to_canonical();
            networks.iter().any(|net| net.contains(&ip))
        });
        if !trusted {
            self.untrusted_proxy_header(peer, header);
            return Ok(None);
        }
        let user = value.to_str().map(str::trim).unwrap_or_default();
        if values.next().is_some() || user.contains(',') {
            return Err(format!(
                "the request names more than one user in {header}; Tower believes one"
            ));
        }
        Ok((!user.is_empty() && user.len() <= 256).then(|| user.to_owned()))
    }

    /// Logs a proxy header from outside the proxy's addresses: the first at once, then at
    /// most one line per [`WARN_EVERY`], counting the ones left out.
    fn untrusted_proxy_header(
        &self,
        peer: Option<std::net::SocketAddr>,
        header: &http::HeaderName,
    ) {
        let mut warned = self
            .proxy_warned
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let now = Instant::now();
        let (last, unsaid) = &mut *warned;
        if last.is_some_and(|at| now.duration_since(at) < WARN_EVERY) {
            *unsaid += 1;
            return;
        }
        tracing::warn!(
            target: "tower::audit",
            peer = ?peer,
            %header,
            more_since_last = *unsaid,
            "ignored a proxy identity header from outside the proxy's addresses"
        );
        *last = Some(now);
        *unsaid = 0;
    }

    /// Nobody asked: for tests and a local file.
    pub fn open() -> Self {
        Self {
            open: true,
            anyone: Some("openApi"),
            ..Self::default()
        }
    }
}

/// Who is calling, once checked (a request extension).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Caller {
    pub subject: String,
    pub via: Via,
}

/// How a caller was recognised.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Via {
    /// A Backstage user token Tower verified: Backstage accepts it for this user too.
    BackstageUser,
    /// A tool's static Tower token: a secret between the tool and Tower, never passed on.
    Tool,
    /// An authenticating proxy's user header: no token at all.
    Proxy,
    /// Nobody is asked (`openApi`).
    Open,
}

impl Caller {
    /// The caller's own Backstage token, for calls Tower makes to Backstage on its behalf:
    /// a verified user's (or whatever was sent when Tower asks nobody) — never a tool's.
    pub fn backstage_token(&self, headers: &http::HeaderMap) -> Option<String> {
        matches!(self.via, Via::BackstageUser | Via::Open)
            .then(|| bearer_token(headers))
            .flatten()
    }
}

/// The token of an `Authorization: Bearer …` header, if there is a non-empty one.
pub fn bearer_token(headers: &http::HeaderMap) -> Option<String> {
    headers
        .get(http::header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .map(|t| t.trim().to_owned())
        .filter(|t| !t.is_empty())
}

/// Whether a request with `method` may change something: everything but GET, HEAD and
/// OPTIONS. Writes must be JSON, are rate limited per caller and audited.
pub fn is_write(method: &http::Method) -> bool {
    !matches!(
        *method,
        http::Method::GET | http::Method::HEAD | http::Method::OPTIONS
    )
}

/// Routes anyone may call: readiness, and what a page needs to sign in.
pub const PUBLIC: &[&str] = &["/readyz", "/auth/config", "/auth/guest"];

fn refuse(status: http::StatusCode, message: String) -> axum::response::Response {
    use axum::response::IntoResponse as _;
    let body = tower_shared::api::ErrorBody {
        error: message,
        field: Some("authorization".to_owned()),
        path: None,
        problems: Vec::new(),
    };
    (status, axum::Json(body)).into_response()
}

/// Who is calling `path`: the open API's anonymous caller, a proxy's user, a tool or a
/// verified Backstage user; otherwise the refusal to answer with.
async fn identify(
    gate: &Gate,
    headers: &http::HeaderMap,
    peer: Option<std::net::SocketAddr>,
    path: &str,
) -> Result<Caller, axum::response::Response> {
    let token = bearer_token(headers);
    // A token wins over the proxy's header; nobody is asked when the API is open.
    let proxied = if token.is_some() || gate.open {
        None
    } else {
        gate.proxy_user(headers, peer)
            .map_err(|message| refuse(http::StatusCode::BAD_REQUEST, message))?
    };
    if gate.open {
        return Ok(Caller {
            subject: "anonymous".to_owned(),
            via: Via::Open,
        });
    }
    if let Some(user) = proxied {
        // Prefixed, so a proxy user can never pass for a tool or a Backstage user in the
        // audit log or the write limits.
        return Ok(Caller {
            subject: format!("proxy:{user}"),
            via: Via::Proxy,
        });
    }
    let Some(token) = token else {
        return Err(refuse(
            http::StatusCode::UNAUTHORIZED,
            "sign in: send a Backstage user token (or a tool token) as `Authorization: Bearer …`"
                .to_owned(),
        ));
    };
    let given = digest(&token);
    let tool = gate
        .tools
        .iter()
        .find_map(|(known, tool)| (*known == given).then_some(tool));
    match (tool, &gate.verifier) {
        (Some(tool), _) if tool.allows(path) => Ok(Caller {
            subject: tool.subject.clone(),
            via: Via::Tool,
        }),
        (Some(tool), _) => Err(refuse(
            http::StatusCode::FORBIDDEN,
            format!("{} may not call {path}", tool.subject),
        )),
        (None, Some(verifier)) => match verifier.verify_digested(&token, given).await {
            Ok(user) if is_guest(&user.subject) && !gate.guest_sign_in => Err(refuse(
                http::StatusCode::UNAUTHORIZED,
                format!(
                    "{} is Backstage's guest, and guest sign-in is off here (backstage.guestSignIn)",
                    user.subject
                ),
            )),
            Ok(user) => Ok(Caller {
                subject: user.subject,
                via: Via::BackstageUser,
            }),
            Err(err) => Err(refuse(http::StatusCode::UNAUTHORIZED, err.to_string())),
        },
        (None, None) => Err(refuse(
            http::StatusCode::UNAUTHORIZED,
            "Tower has no Backstage configured to check user tokens".to_owned(),
        )),
    }
}

/// Whether `subject` is Backstage's guest user (`user:development/guest`, or
/// `user:default/guest` in older Backstages): anyone who can reach Backstage can be it.
pub fn is_guest(subject: &str) -> bool {
    matches!(subject, "user:development/guest" | "user:default/guest")
}

/// Every API route but [`PUBLIC`] needs a Backstage user token or a tool token allowed on
/// the route; writes are logged (target `tower::audit`) with the caller.
pub async fn require_caller(
    axum::extract::State(gate): axum::extract::State<std::sync::Arc<Gate>>,
    mut request: axum::extract::Request,
    next: axum::middleware::Next,
) -> axum::response::Response {
    let path = request.uri().path().to_owned();
    let peer = request
        .extensions()
        .get::<axum::extract::ConnectInfo<std::net::SocketAddr>>()
        .map(|info| info.0);
    if PUBLIC.contains(&path.as_str()) {
        // Anyone may ask; a caller who signs in is told more (`/readyz`'s details).
        if let Ok(caller) = identify(&gate, request.headers(), peer, &path).await {
            request.extensions_mut().insert(caller);
        }
        return next.run(request).await;
    }
    let caller = match identify(&gate, request.headers(), peer, &path).await {
        Ok(caller) => caller,
        Err(refusal) => return refusal,
    };
    let method = request.method().clone();
    let writes = is_write(&method);
    if writes {
        if let Err(wait) = gate.writes.take(&caller.subject) {
            let mut response = refuse(
                http::StatusCode::TOO_MANY_REQUESTS,
                format!(
                    "too many writes from {}; try again in {wait} s",
                    caller.subject
                ),
            );
            response
                .headers_mut()
                .insert(http::header::RETRY_AFTER, http::HeaderValue::from(wait));
            return response;
        }
    }
    request.extensions_mut().insert(caller.clone());
    let response = next.run(request).await;
    if writes {
        tracing::info!(
            target: "tower::audit",
            subject = %caller.subject,
            %method,
            %path,
            status = response.status().as_u16(),
            "write"
        );
    }
    response
}
