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
    chrono::Utc::now().timestamp()
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
    let verifier = Verifier::new(&backstage.url, reqwest::Client::new())
        .with_refetch_every(Duration::from_millis(500));
    verifier
        .verify(&sign(&old, &claims(&issuer)))
        .await
        .unwrap();
    assert_eq!(backstage.fetches.load(Ordering::Relaxed), 1);

    // A burst of tokens naming keys nobody published: at most one fetch per window.
    for i in 0..50 {
        let err = verifier
            .verify(&sign(&key(&format!("forged-{i}")), &claims(&issuer)))
            .await
            .unwrap_err();
        assert_eq!(err, AuthError::UnknownKey);
    }
    assert!(
        backstage.fetches.load(Ordering::Relaxed) <= 2,
        "re-fetches are rate limited"
    );

    // Backstage restarts with a new key: after the window, one re-fetch finds it.
    tokio::time::sleep(Duration::from_millis(600)).await;
    let new = key("new");
    *backstage.jwks.lock().unwrap() = vec![new.jwk.clone()];
    let before = backstage.fetches.load(Ordering::Relaxed);
    let user = verifier
        .verify(&sign(&new, &claims(&issuer)))
        .await
        .unwrap();
    assert_eq!(user.subject, "user:default/jane");
    assert_eq!(backstage.fetches.load(Ordering::Relaxed), before + 1);
}

#[tokio::test]
async fn the_simulated_backstages_guest_tokens_verify() {
    let tower = crate::support::Live::start(0.0).await.unwrap();
    let backstage = format!("http://{}", tower.world.served.backstage);
    let token: Value = reqwest::get(format!("{backstage}/api/auth/guest/refresh"))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let token = token["backstageIdentity"]["token"].as_str().unwrap();
    let verifier = Verifier::new(&backstage, reqwest::Client::new());
    let user = verifier.verify(token).await.unwrap();
    assert!(user.subject.starts_with("user:"), "{user:?}");
}
