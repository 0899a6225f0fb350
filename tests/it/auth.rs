//! Backstage user token verification: a Backstage of our own on loopback (its JWKS served
//! over HTTP, its keys made with ring) signs good and bad tokens; and the simulated
//! Backstage's real guest tokens.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use base64::Engine as _;
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use ring::rand::SystemRandom;
use ring::signature::{EcdsaKeyPair, KeyPair as _, ECDSA_P256_SHA256_FIXED_SIGNING};
use serde_json::{json, Value};
use tower_backend::auth::{AuthError, Verifier, USER_TOKEN_TYPE};

use crate::support::ReadJson as _;

/// An ES256 key: what signs, and its public JWK.
struct Key {
    kid: String,
    encoding: EncodingKey,
    jwk: Value,
}

fn key(kid: &str) -> Key {
    let rng = SystemRandom::new();
    let pkcs8 = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &rng).unwrap();
    let pair =
        EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, pkcs8.as_ref(), &rng).unwrap();
    let point = pair.public_key().as_ref(); // 0x04 ‖ x ‖ y
    let b64 = |bytes: &[u8]| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes);
    Key {
        kid: kid.to_owned(),
        encoding: EncodingKey::from_ec_der(pkcs8.as_ref()),
        jwk: json!({"kty": "EC", "crv": "P-256", "alg": "ES256", "use": "sig", "kid": kid,
                    "x": b64(&point[1..33]), "y": b64(&point[33..65])}),
    }
}

/// A Backstage of our own: serves whatever JWKS the test sets, counting fetches.
struct FakeBackstage {
    url: String,
    jwks: Arc<Mutex<Vec<Value>>>,
    fetches: Arc<AtomicU64>,
}

async fn fake_backstage() -> FakeBackstage {
    let jwks = Arc::new(Mutex::new(Vec::new()));
    let fetches = Arc::new(AtomicU64::new(0));
    let app = axum::Router::new().route(
        "/api/auth/.well-known/jwks.json",
        axum::routing::get({
            let (jwks, fetches) = (Arc::clone(&jwks), Arc::clone(&fetches));
            move || async move {
                fetches.fetch_add(1, Ordering::Relaxed);
                axum::Json(json!({"keys": *jwks.lock().unwrap()}))
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    FakeBackstage { url, jwks, fetches }
}

/// What a refused token's error must look like.
type Expect = fn(&AuthError) -> bool;

fn now() -> i64 {
    crate::support::wall_now().timestamp()
}

fn claims(issuer: &str) -> Value {
    json!({"iss": issuer, "sub": "user:default/jane", "aud": "backstage",
           "iat": now(), "exp": now() + 3600})
}

fn sign(key: &Key, claims: &Value) -> String {
    let mut header = Header::new(Algorithm::ES256);
    header.typ = Some(USER_TOKEN_TYPE.to_owned());
    header.kid = Some(key.kid.clone());
    jsonwebtoken::encode(&header, claims, &key.encoding).unwrap()
}

#[tokio::test]
async fn user_tokens_are_checked_against_the_backstage_jwks() {
    let backstage = fake_backstage().await;
    let issuer = format!("{}/api/auth", backstage.url);
    let good = key("k1");
    backstage.jwks.lock().unwrap().push(good.jwk.clone());
    let verifier = Verifier::new(&backstage.url, reqwest::Client::new())
        .with_refetch_every(Duration::from_millis(200));

    let user = verifier
        .verify(&sign(&good, &claims(&issuer)))
        .await
        .unwrap();
    assert_eq!(user.subject, "user:default/jane");
    assert_eq!(
        backstage.fetches.load(Ordering::Relaxed),
        1,
        "keys are cached"
    );
    verifier
        .verify(&sign(&good, &claims(&issuer)))
        .await
        .unwrap();
    assert_eq!(backstage.fetches.load(Ordering::Relaxed), 1);

    // Every way a token can be wrong.
    let b64 = |v: &Value| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(v.to_string());
    let alg_none = format!(
        "{}.{}.",
        b64(&json!({"alg": "none", "typ": USER_TOKEN_TYPE, "kid": "k1"})),
        b64(&claims(&issuer))
    );
    let hs256 = {
        let mut header = Header::new(Algorithm::HS256);
        header.typ = Some(USER_TOKEN_TYPE.to_owned());
        header.kid = Some("k1".to_owned());
        jsonwebtoken::encode(
            &header,
            &claims(&issuer),
            &EncodingKey::from_secret(b"guess"),
        )
        .unwrap()
    };
    let with = |field: &str, value: Value| {
        let mut c = claims(&issuer);
        c[field] = value;
        sign(&good, &c)
    };
    let wrong_type = {
        let mut header = Header::new(Algorithm::ES256);
        header.typ = Some("JWT".to_owned());
        header.kid = Some("k1".to_owned());
        jsonwebtoken::encode(&header, &claims(&issuer), &good.encoding).unwrap()
    };
    let mut forged_key = key("k1"); // claims the published kid, signs with another key
    forged_key.kid = "k1".to_owned();
    let cases: Vec<(&str, String, Expect)> = vec![
        ("not a JWT", "abc".to_owned(), |e| {
            *e == AuthError::Malformed
        }),
        ("alg=none", alg_none, |e| {
            matches!(e, AuthError::Malformed | AuthError::WrongAlgorithm)
        }),
        ("HS256", hs256, |e| *e == AuthError::WrongAlgorithm),
        ("not a user token", wrong_type, |e| {
            *e == AuthError::WrongType
        }),
        ("expired", with("exp", json!(now() - 3600)), |e| {
            matches!(e, AuthError::Invalid(_))
        }),
        ("wrong audience", with("aud", json!("someone-else")), |e| {
            matches!(e, AuthError::Invalid(_))
        }),
        (
            "wrong issuer",
            with("iss", json!("https://evil.example/api/auth")),
            |e| matches!(e, AuthError::Invalid(_)),
        ),
        (
            "forged signature",
            sign(&forged_key, &claims(&issuer)),
            |e| matches!(e, AuthError::Invalid(_)),
        ),
        (
            "unknown kid",
            sign(&key("k-unknown"), &claims(&issuer)),
            |e| *e == AuthError::UnknownKey,
        ),
    ];
    for (what, token, expected) in cases {
        let err = verifier.verify(&token).await.expect_err(what);
        assert!(expected(&err), "{what}: {err:?}");
        assert!(
            !err.to_string().contains(&token),
            "errors never carry the token"
        );
    }
}

#[tokio::test]
async fn a_rotated_key_is_fetched_once_and_forged_kids_cannot_hammer_backstage() {
    let backstage = fake_backstage().await;
    let issuer = format!("{}/api/auth", backstage.url);
    let old = key("old");
    backstage.jwks.lock().unwrap().push(old.jwk.clone());
    let window = Duration::from_millis(500);
    let verifier = Verifier::new(&backstage.url, reqwest::Client::new()).with_refetch_every(window);
    verifier
        .verify(&sign(&old, &claims(&issuer)))
        .await
        .unwrap();
    assert_eq!(backstage.fetches.load(Ordering::Relaxed), 1);

    // A burst of tokens naming keys nobody published: at most one fetch per window.
    let burst = std::time::Instant::now();
    for i in 0..50 {
        let err = verifier
            .verify(&sign(&key(&format!("forged-{i}")), &claims(&issuer)))
            .await
            .unwrap_err();
        assert_eq!(err, AuthError::UnknownKey);
    }
    let windows = 1 + burst.elapsed().as_millis() / window.as_millis();
    let refetches = u128::from(backstage.fetches.load(Ordering::Relaxed) - 1);
    assert!(
        refetches <= windows,
        "{refetches} re-fetches in {windows} windows"
    );

    // Backstage restarts with a new key: tokens signed with it are refused without a fetch
    // until the window ends, then one re-fetch finds it.
    let new = key("new");
    *backstage.jwks.lock().unwrap() = vec![new.jwk.clone()];
    let before = backstage.fetches.load(Ordering::Relaxed);
    let token = sign(&new, &claims(&issuer));
    let user = crate::support::eventually(Duration::from_secs(10), "the new key found", || async {
        verifier.verify(&token).await.ok()
    })
    .await
    .unwrap();
    assert_eq!(user.subject, "user:default/jane");
    assert_eq!(backstage.fetches.load(Ordering::Relaxed), before + 1);
}

#[tokio::test]
async fn the_simulated_backstages_guest_tokens_verify() {
    let tower = crate::support::Live::start(0.0).await.unwrap();
    let backstage = format!("http://{}", tower.world.served.backstage);
    let verifier = Verifier::new(&backstage, reqwest::Client::new());
    let user = verifier.verify(&tower.token).await.unwrap();
    assert!(user.subject.starts_with("user:"), "{user:?}");
    assert!(tower_backend::auth::is_guest(&user.subject), "{user:?}");

    // Anyone who reaches Backstage can be its guest: Tower takes the guest's token only where
    // guest sign-in is on (the demo), and refuses it elsewhere.
    let as_guest = || crate::support::get_with("/api/fleet", &tower.token);
    let on = tower.router_with(|_| {});
    let (status, body) = crate::support::call(&on, as_guest(), "").await;
    assert_eq!(status, 200, "{body}");
    let off = tower.router_with(|config| {
        config.backstage.as_mut().unwrap().guest_sign_in = false;
    });
    let (status, body) = crate::support::call(&off, as_guest(), "").await;
    assert_eq!(status, 401, "{body}");
    assert_eq!(body["field"], "authorization");
    assert!(
        body["error"]
            .as_str()
            .unwrap()
            .contains("guest sign-in is off"),
        "{body}"
    );
}

/// Every protected route, as the OpenAPI document lists them, with a request that would
/// succeed or at least act if the caller were allowed.
fn protected_requests() -> Vec<(http::Method, String, Option<Value>)> {
    let doc: Value = serde_yaml_ng::from_str(tower_backend::routes::OPENAPI_YAML).unwrap();
    let mut out = Vec::new();
    for (path, ops) in doc["paths"].as_object().unwrap() {
        if ["/healthz", "/readyz", "/auth/config", "/auth/guest"].contains(&path.as_str()) {
            continue;
        }
        for (method, op) in ops.as_object().unwrap() {
            // Operations with their own credentials (GitHub's webhook signature).
            if op["security"] == json!([]) {
                continue;
            }
            let query = match path.as_str() {
                "/api/snapshot" | "/api/deployments" | "/api/releases" | "/api/pipelines"
                | "/api/config" | "/api/runtime" | "/api/dora" => {
                    "?service=svc"
                }
                "/api/pipelines/run" => "?service=svc&run=svc-build-1",
                "/api/runtime/log" => "?service=svc&environment=prod&pod=svc-1",
                "/live-runs" | "/config/cicd" => "?app=svc",
                "/pull-requests" | "/pending-requests" => "?owner=acme&repo=r",
                "/request-pr" => "?owner=acme&repo=r&kind=Go&name=svc",
                "/provisioning-history/typical" => "?kind=Go",
                "/catalog/entity" => "?name=svc",
                "/api/access" => "?service=svc",
                "/api/config/file" => "?service=svc&file=env:prod",
                "/api/argocd/rollout-actions" => "?service=svc&environment=prod",
                "/api/records" => "?service=svc",
                "/api/records/record" => "?service=svc&release=1.0.0-aaaaaaa",
                "/api/records/export" => "?service=svc&release=1.0.0-aaaaaaa&format=pdf",
                "/api/releases/compare" => {
                    "?service=svc&from=ghcr.io/acme/svc:1.0.0-aaaaaaa&to=ghcr.io/acme/svc:1.1.0-bbbbbbb"
                }
                "/api/releases/promotion" => {
                    "?service=svc&image=ghcr.io/acme/svc:1.0.0-aaaaaaa&environment=staging"
                }
                _ => "",
            };
            let body = (method == "post").then(|| {
                json!({"service": "matrix", "kind": "Go", "startedAt": "2026-11-30T08:00:00Z",
                       "finishedAt": "2026-11-30T08:10:00Z", "steps": {}})
            });
            out.push((
                method.to_uppercase().parse().unwrap(),
                format!("{path}{query}"),
                body,
            ));
        }
    }
    out
}

/// The `field` a JSON answer names (`null` when it names none).
async fn field_named(response: axum::response::Response) -> Value {
    let bytes = axum::body::to_bytes(response.into_body(), 1 << 20)
        .await
        .unwrap();
    serde_json::from_slice::<Value>(&bytes).unwrap()["field"].clone()
}

#[tokio::test]
async fn every_route_refuses_every_bad_token_without_side_effects() {
    use tower::ServiceExt as _;
    let backstage = fake_backstage().await;
    let issuer = format!("{}/api/auth", backstage.url);
    let good = key("k1");
    backstage.jwks.lock().unwrap().push(good.jwk.clone());

    let dir = tempfile::tempdir().unwrap();
    let history = tower_backend::history::History::connect(&format!(
        "sqlite://{}?mode=rwc",
        dir.path().join("h.db").display()
    ))
    .await
    .unwrap();
    let mut config = tower_backend::config::Config::default();
    config.backstage = Some(tower_backend::config::HttpService {
        url: backstage.url.clone(),
        token: None,
        guest_sign_in: false,
        app_url: None,
        ingestor_location: None,
    });
    config.tokens.push(tower_backend::config::ToolToken {
        subject: "tool:history-reader".to_owned(),
        token: tower_backend::config::Secret("history-reader-token-0123456789".to_owned()),
        routes: vec!["/provisioning-history/*".to_owned()],
    });
    let gate = tower_backend::auth::Gate::from_config(&config, reqwest::Client::new());
    let snapshot = tower_shared::snapshot::Snapshot::empty(crate::support::test_start());
    let state = tower_backend::state::AppState::fixed(
        None,
        Arc::new(tower_backend::source::Fixed::new(snapshot, None)),
        history.clone(),
        gate,
    );
    let dist = dir.path().join("dist");
    std::fs::create_dir_all(&dist).unwrap();
    std::fs::write(dist.join("index.html"), "<!doctype html>").unwrap();
    let dist = tower_backend::assets::Dist::open(&dist).unwrap();
    let router = tower_backend::app::router(state, &dist);
    // The same Tower asking nobody (its own history): what each route answers past the gate.
    let ungated = tower_backend::app::router(
        tower_backend::state::AppState::fixed(
            None,
            Arc::new(tower_backend::source::Fixed::new(
                tower_shared::snapshot::Snapshot::empty(crate::support::test_start()),
                None,
            )),
            tower_backend::history::History::connect(&format!(
                "sqlite://{}?mode=rwc",
                dir.path().join("ungated.db").display()
            ))
            .await
            .unwrap(),
            tower_backend::auth::Gate::open(),
        ),
        &dist,
    );

    let b64 = |v: &Value| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(v.to_string());
    let with = |field: &str, value: Value| {
        let mut c = claims(&issuer);
        c[field] = value;
        sign(&good, &c)
    };
    let mut forged_key = key("k1");
    forged_key.kid = "k1".to_owned();
    let bad_tokens: Vec<(&str, Option<String>)> = vec![
        ("no token", None),
        ("bad signature", Some(sign(&forged_key, &claims(&issuer)))),
        (
            "alg=none",
            Some(format!(
                "{}.{}.",
                b64(&json!({"alg": "none", "typ": USER_TOKEN_TYPE, "kid": "k1"})),
                b64(&claims(&issuer))
            )),
        ),
        ("expired", Some(with("exp", json!(now() - 3600)))),
        ("wrong audience", Some(with("aud", json!("not-backstage")))),
        ("unknown kid", Some(sign(&key("k9"), &claims(&issuer)))),
    ];
    let send_to = |router: &axum::Router,
                   method: http::Method,
                   path: &str,
                   body: &Option<Value>,
                   token: Option<&str>| {
        let mut request = http::Request::builder().method(method).uri(path);
        if let Some(token) = token {
            request = request.header("authorization", format!("Bearer {token}"));
        }
        let request = match body {
            Some(body) => request
                .header("content-type", "application/json")
                .body(axum::body::Body::from(body.to_string())),
            None => request.body(axum::body::Body::empty()),
        }
        .unwrap();
        router.clone().oneshot(request)
    };
    let send = |method: http::Method, path: &str, body: &Option<Value>, token: Option<&str>| {
        send_to(&router, method, path, body, token)
    };
    let requests = protected_requests();
    // docs/reliability.md says how many routes and requests this test tries.
    let reliability =
        std::fs::read_to_string(crate::support::root().join("docs/reliability.md")).unwrap();
    let stated = format!("the OpenAPI document, {} routes", requests.len());
    assert!(
        reliability.contains(&stated),
        "docs/reliability.md should say {stated:?}"
    );
    let mut tried = 0;
    for (method, path, body) in &requests {
        for (what, token) in &bad_tokens {
            let response = send(method.clone(), path, body, token.as_deref())
                .await
                .unwrap();
            assert_eq!(
                response.status(),
                http::StatusCode::UNAUTHORIZED,
                "{method} {path} with {what}"
            );
            assert_eq!(
                field_named(response).await,
                "authorization",
                "{method} {path} with {what}"
            );
            tried += 1;
        }
    }
    let stated = format!("for all {tried} requests");
    assert_eq!(tried, requests.len() * bad_tokens.len());
    assert!(
        reliability.contains(&stated),
        "docs/reliability.md should say {stated:?}"
    );
    // No side effect: nothing was recorded.
    assert_eq!(history.count().await.unwrap(), 0);

    // A good user token gets through: every route answers what it answers the same request
    // in a Tower whose gate asks nobody.
    let user = sign(&good, &claims(&issuer));
    for (method, path, body) in &requests {
        let response = send(method.clone(), path, body, Some(&user)).await.unwrap();
        let own = send_to(&ungated, method.clone(), path, body, Some(&user))
            .await
            .unwrap();
        assert_eq!(response.status(), own.status(), "{method} {path}");
        // A JSON answer (not an event stream, which never ends) is the route's, not the gate's.
        let json = response
            .headers()
            .get("content-type")
            .is_some_and(|t| t == "application/json");
        if json {
            assert_ne!(
                field_named(response).await,
                "authorization",
                "{method} {path}"
            );
        }
    }
    // The good POST reached the route, which takes no run of a service Tower does not
    // observe (this Tower observes none) from a person.
    assert_eq!(
        history.count().await.unwrap(),
        0,
        "a run of an unseen service"
    );

    // A tool token works on its routes only.
    let tool = "history-reader-token-0123456789";
    let ok = send(
        http::Method::GET,
        "/provisioning-history/runs",
        &None,
        Some(tool),
    )
    .await
    .unwrap();
    assert_eq!(ok.status(), http::StatusCode::OK);
    let off = send(http::Method::GET, "/api/provisioning", &None, Some(tool))
        .await
        .unwrap();
    assert_eq!(off.status(), http::StatusCode::FORBIDDEN);
    // Writes are rate limited per subject: a runaway loop gets 429 with Retry-After. The
    // user spent one write on each write route above.
    let spent = requests
        .iter()
        .filter(|(method, _, _)| *method == http::Method::POST)
        .count();
    let mut limited = 0;
    let started = std::time::Instant::now();
    for i in 0..1_300 {
        let body = Some(json!({"service": format!("loop-{i}"), "kind": "Go",
            "startedAt": "2026-11-30T08:00:00Z", "finishedAt": "2026-11-30T08:10:00Z"}));
        let response = send(
            http::Method::POST,
            "/provisioning-history/runs",
            &body,
            Some(&user),
        )
        .await
        .unwrap();
        if response.status() == http::StatusCode::TOO_MANY_REQUESTS {
            assert!(response.headers().contains_key("retry-after"));
            assert!(
                i + spent >= 1_200,
                "write {i} (after {spent}) refused inside the burst allowance"
            );
            limited += 1;
        }
    }
    // The last 100 are refused, and as many of the writes spent before as had not come back
    // by the loop's start, but for the writes that came back meanwhile (20 a second).
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    let back = (started.elapsed().as_secs_f64() * tower_backend::auth::WRITES_PER_SECOND) as u32;
    let most = 100 + u32::try_from(spent).unwrap();
    assert!(
        limited <= most && limited + back + 1 >= 100,
        "{limited} of the last {most} refused, {back} came back"
    );

    // The public routes need nothing.
    for path in ["/readyz", "/auth/config"] {
        let response = send(http::Method::GET, path, &None, None).await.unwrap();
        assert_ne!(response.status(), http::StatusCode::UNAUTHORIZED, "{path}");
    }
}

/// `tower serve` (no clusters) behind an authenticating proxy whose addresses are `trusted`.
async fn behind_a_proxy(trusted: &str) -> (crate::support::Demo, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("tower.yaml");
    std::fs::write(
        &config,
        format!("proxy:\n  userHeader: X-Forwarded-User\n  trustedAddresses: [\"{trusted}\"]\n"),
    )
    .unwrap();
    let tower =
        crate::support::Demo::serve_with(&["--config", config.to_str().unwrap()], dir.path())
            .await
            .unwrap();
    (tower, dir)
}

#[tokio::test]
async fn an_authenticating_proxy_is_believed_only_from_its_addresses() {
    let http = reqwest::Client::new();
    let run = json!({"service": "shop", "kind": "NodeJS",
        "startedAt": "2026-11-01T10:00:00Z", "finishedAt": "2026-11-01T10:20:00Z",
        "steps": {"repositories": 60}});
    for (trusted, believed) in [("127.0.0.1", true), ("10.0.0.0/8", false)] {
        let (tower, _dir) = behind_a_proxy(trusted).await;
        let started = std::time::Instant::now();
        let url = |path: &str| format!("{}{path}", tower.url.trim_end_matches('/'));
        let as_jane = |request: reqwest::RequestBuilder| {
            request.header("X-Forwarded-User", "jane@example.com")
        };

        let answer = as_jane(http.get(url("/api/provisioning")))
            .send()
            .await
            .unwrap();
        assert_eq!(
            answer.status().as_u16(),
            expected_read(believed),
            "trusting {trusted}"
        );
        let config: Value = as_jane(http.get(url("/auth/config"))).read_json().await;
        let named = believed.then_some("jane@example.com");
        assert_eq!(
            config["proxyUser"].as_str(),
            named,
            "trusting {trusted}: {config}"
        );
        let write = as_jane(http.post(url("/provisioning-history/runs")))
            .json(&run)
            .send()
            .await
            .unwrap();
        // Believed, jane reaches the route — which takes no run of a service this Tower
        // (no clusters) does not observe: 404 naming it, not the gate's 401.
        let expected = if believed { 404 } else { 401 };
        assert_eq!(write.status().as_u16(), expected, "trusting {trusted}");
        let refused: Value = write.json().await.unwrap();
        let field = if believed { "service" } else { "authorization" };
        assert_eq!(refused["field"], field, "trusting {trusted}: {refused}");

        // Without the header, or with an empty one, nobody is signed in.
        for request in [
            http.get(url("/api/provisioning")),
            http.get(url("/api/provisioning"))
                .header("X-Forwarded-User", "  "),
        ] {
            assert_eq!(
                request.send().await.unwrap().status(),
                401,
                "trusting {trusted}"
            );
        }
        // A request naming two users (the client's own header let through beside the
        // proxy's, or a list) is refused from the proxy, ignored from anyone else.
        for two in [
            http.get(url("/api/provisioning"))
                .header("X-Forwarded-User", "mallory@example.com")
                .header("X-Forwarded-User", "jane@example.com"),
            http.get(url("/api/provisioning"))
                .header("X-Forwarded-User", "mallory@example.com, jane@example.com"),
        ] {
            let answer = two.send().await.unwrap();
            let status = answer.status().as_u16();
            let body: Value = answer.json().await.unwrap();
            assert_eq!(
                status,
                if believed { 400 } else { 401 },
                "trusting {trusted}: {body}"
            );
            assert_eq!(body["field"], "authorization");
        }
        // Fifty more from outside the proxy's addresses.
        for _ in 0..50 {
            let answer = as_jane(http.get(url("/api/provisioning")))
                .send()
                .await
                .unwrap();
            assert_eq!(answer.status().as_u16(), expected_read(believed));
        }

        let logs = tower.logs_at_exit().await.unwrap();
        let ignored = logs
            .lines()
            .filter(|l| l.contains("ignored a proxy identity header"))
            .count();
        if believed {
            // Audited as a proxy user, never mistakable for a tool or a Backstage user.
            assert!(
                logs.lines().any(|l| l.contains("tower::audit")
                    && l.contains("subject=proxy:jane@example.com")
                    && l.contains("path=/provisioning-history/runs")),
                "{logs}"
            );
            assert_eq!(ignored, 0, "{logs}");
        } else {
            // 55 ignored headers: logged once per 10 s, not 55 times.
            let windows =
                1 + started.elapsed().as_secs() / tower_backend::auth::WARN_EVERY.as_secs();
            assert!(
                (1..=windows).contains(&(ignored as u64)),
                "{ignored} lines in {windows} windows: {logs}"
            );
        }
    }
}

fn expected_read(believed: bool) -> u16 {
    if believed {
        200
    } else {
        401
    }
}

#[tokio::test]
async fn tokens_never_reach_the_log_and_writes_are_audited_with_the_subject() {
    // Everything Tower and its libraries log at debug level.
    let tower = crate::support::Demo::start_logging(&["--speed", "0"], "debug")
        .await
        .unwrap();
    let url = |path: &str| format!("{}{path}", tower.url);
    let token = tower.guest_token().await.unwrap();
    let client = crate::support::signed_in(&token);
    for path in [
        "api/provisioning",
        "api/snapshot?service=orders-api",
        "api/fleet",
    ] {
        let response = client.get(url(path)).send().await.unwrap();
        assert_eq!(response.status(), 200, "{path}");
    }
    let refresh = client
        .post(url("catalog/refresh"))
        .json(&json!({}))
        .send()
        .await
        .unwrap();
    assert!(refresh.status().is_success(), "{}", refresh.status());
    // A forged token: the guest's with another signature.
    let (signed, _) = token.rsplit_once('.').unwrap();
    let forged = format!("{signed}.{}", "A".repeat(86));
    let refused = crate::support::signed_in(&forged)
        .post(url("catalog/refresh"))
        .json(&json!({}))
        .send()
        .await
        .unwrap();
    assert_eq!(refused.status(), 401);

    let logs = tower.logs_at_exit().await.unwrap();
    assert!(logs.lines().count() > 20, "debug logging is on:\n{logs}");
    let signature = token.rsplit('.').next().unwrap();
    for secret in [token.as_str(), signature, forged.as_str()] {
        assert!(!logs.contains(secret), "a token in the log");
    }
    let audited: Vec<&str> = logs
        .lines()
        .filter(|l| l.contains("tower::audit") && l.contains("path=/catalog/refresh"))
        .collect();
    assert_eq!(
        audited.len(),
        1,
        "one audit line for the one accepted write:\n{logs}"
    );
    assert!(
        audited[0].contains(&format!("subject={}", hangar_sim::backstage::GUEST))
            && audited[0].contains("method=POST"),
        "{}",
        audited[0]
    );
}

#[tokio::test]
async fn one_guest_token_fetch_serves_a_crowd() {
    let tower = crate::support::Live::start(0.0).await.unwrap();
    let http = reqwest::Client::new();
    let asks = (0..50).map(|_| http.get(tower.url("/auth/guest")).read_json());
    let answers = futures::future::join_all(asks).await;
    // Backstage signs every token afresh (ES256 signatures differ each time): one token
    // for all fifty means one fetch.
    let tokens: std::collections::BTreeSet<&str> = answers
        .iter()
        .map(|a| a["token"].as_str().unwrap())
        .collect();
    assert_eq!(tokens.len(), 1, "{} fetches for 50 callers", tokens.len());
    let token = tokens.into_iter().next().unwrap();
    let works = crate::support::signed_in(token)
        .get(tower.url("/api/provisioning"))
        .send()
        .await
        .unwrap();
    assert_eq!(works.status(), 200);
}
