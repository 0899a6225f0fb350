//! `POST /catalog/refresh` and the catalog lookup against a real Backstage backend (the
//! team's backstage-partner, which `cargo xtask test` installs): write a Component file,
//! trigger the ingestor's task with a real user's token, see the entity appear; a second
//! trigger while the run lasts is "already running".

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
use reqwest::StatusCode;
use serde_json::{json, Value};
use tower_backend::{app, assets, config, history};

use crate::support::{dist, eventually, guest_token};

/// A real Backstage backend on a free loopback port; stopped when dropped. The scripts keep
/// one pid file per install, so one backend runs at a time: tests take [`ONE_AT_A_TIME`].
struct Backstage {
    url: String,
    entities: tempfile::TempDir,
    pid: String,
}

static ONE_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

impl Backstage {
    fn start() -> anyhow::Result<Self> {
        let port = std::net::TcpListener::bind("127.0.0.1:0")?
            .local_addr()?
            .port();
        Self::start_on(port, tempfile::tempdir()?)
    }

    /// Stops this backend and starts a new one on the same port (new signing keys: the
    /// in-memory database is gone), keeping the entity folder.
    fn restart(mut self) -> anyhow::Result<Self> {
        let port: u16 = self.url.rsplit(':').next().context("a port")?.parse()?;
        let entities = std::mem::replace(&mut self.entities, tempfile::tempdir()?);
        self.stop();
        // Wait until the port is free again.
        for _ in 0..100 {
            if std::net::TcpListener::bind(("127.0.0.1", port)).is_ok() {
                break;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        Self::start_on(port, entities)
    }

    fn stop(&mut self) {
        let pid = std::mem::take(&mut self.pid);
        let pid = pid.trim();
        if pid.is_empty() {
            return;
        }
        let _ = std::process::Command::new("kill").arg(pid).status();
        for _ in 0..100 {
            let alive = std::process::Command::new("kill")
                .args(["-0", pid])
                .stderr(std::process::Stdio::null())
                .status()
                .is_ok_and(|s| s.success());
            if !alive {
                break;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    fn start_on(port: u16, entities: tempfile::TempDir) -> anyhow::Result<Self> {
        let scripts = std::env::var_os("TOWER_BACKSTAGE_PARTNER").context(
            "TOWER_BACKSTAGE_PARTNER is not set: run the tests with `cargo xtask test`, which installs a real Backstage backend",
        )?;
        let install = PathBuf::from(
            std::env::var_os("TOWER_BACKSTAGE_PARTNER_DIR")
                .context("TOWER_BACKSTAGE_PARTNER_DIR is not set")?,
        );
        let status = std::process::Command::new("bash")
            .arg(PathBuf::from(scripts).join("run.sh"))
            .arg(&install)
            .env("PORT", port.to_string())
            .env("BS_ENTITY_DIR", entities.path())
            .status()?;
        anyhow::ensure!(status.success(), "backstage-partner run.sh failed");
        Ok(Self {
            url: format!("http://127.0.0.1:{port}"),
            entities,
            pid: std::fs::read_to_string(install.join("backend.pid"))?,
        })
    }
}

impl Drop for Backstage {
    fn drop(&mut self) {
        self.stop();
    }
}

#[tokio::test]
async fn real_backstage_user_tokens_verify_across_a_key_rotation() {
    let _turn = ONE_AT_A_TIME.lock().await;
    let backstage = Backstage::start().unwrap();
    let verifier = tower_backend::auth::Verifier::new(&backstage.url, reqwest::Client::new())
        .with_refetch_every(Duration::from_millis(100));
    let token = guest_token(&backstage.url).await.unwrap();
    let user = verifier.verify(&token).await.unwrap();
    assert_eq!(user.subject, "user:development/guest");
    assert_eq!(verifier.fetches(), 1);

    // A token signed by someone else but naming Backstage's key is refused.
    let header = jsonwebtoken::decode_header(&token).unwrap();
    let rng = ring::rand::SystemRandom::new();
    let pkcs8 = ring::signature::EcdsaKeyPair::generate_pkcs8(
        &ring::signature::ECDSA_P256_SHA256_FIXED_SIGNING,
        &rng,
    )
    .unwrap();
    let claims: Value = {
        use base64::Engine as _;
        let payload = token.split('.').nth(1).unwrap();
        serde_json::from_slice(
            &base64::engine::general_purpose::URL_SAFE_NO_PAD
                .decode(payload)
                .unwrap(),
        )
        .unwrap()
    };
    let forged = jsonwebtoken::encode(
        &header,
        &claims,
        &jsonwebtoken::EncodingKey::from_ec_der(pkcs8.as_ref()),
    )
    .unwrap();
    assert!(
        verifier.verify(&forged).await.is_err(),
        "forged token accepted"
    );

    // Backstage restarts with new keys: its new tokens verify after one JWKS re-fetch.
    let backstage = backstage.restart().unwrap();
    tokio::time::sleep(Duration::from_millis(200)).await;
    let rotated = guest_token(&backstage.url).await.unwrap();
    let new_kid = jsonwebtoken::decode_header(&rotated).unwrap().kid;
    assert_ne!(new_kid, header.kid, "the restart rotated the key");
    let fetches = verifier.fetches();
    verifier.verify(&rotated).await.unwrap();
    assert_eq!(verifier.fetches(), fetches + 1, "one re-fetch");
}

#[tokio::test]
async fn refresh_and_lookup_against_a_real_backstage() {
    let _turn = ONE_AT_A_TIME.lock().await;
    let backstage = Backstage::start().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let history = history::History::connect(&format!(
        "sqlite://{}?mode=rwc",
        dir.path().join("history.db").display()
    ))
    .await
    .unwrap();
    let snapshot = tower_shared::snapshot::Snapshot::empty(crate::support::test_start());
    // Tower checks callers against this real Backstage, and forwards their tokens to it.
    let mut config = config::Config::default();
    config.backstage = Some(config::HttpService {
        url: backstage.url.clone(),
        token: None,
        // The partner Backstage runs in development mode: its users are its guest.
        guest_sign_in: true,
        app_url: None,
        ingestor_location: None,
    });
    let gate = tower_backend::auth::Gate::from_config(&config, reqwest::Client::new());
    let mut state = tower_backend::state::AppState::fixed(
        None,
        Arc::new(tower_backend::source::Fixed::new(snapshot, None)),
        history,
        gate,
    );
    state.backstage = config.backstage.clone().map(Arc::new);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let tower = format!("http://{}", listener.local_addr().unwrap());
    let router = app::router(state, &assets::Dist::open(&dist().unwrap()).unwrap());
    let server = tokio::spawn(async move { axum::serve(listener, router).await });

    let client = reqwest::Client::new();
    let token = guest_token(&backstage.url).await.unwrap();
    let lookup = || async {
        let answer: Value = client
            .get(format!("{tower}/catalog/entity?name=tower-partner-probe"))
            .bearer_auth(&token)
            .send()
            .await
            .ok()?
            .json()
            .await
            .ok()?;
        Some(answer)
    };
    assert_eq!(lookup().await.unwrap()["found"], false);

    let component = json!({"apiVersion": "backstage.io/v1alpha1", "kind": "Component",
        "metadata": {"name": "tower-partner-probe"},
        "spec": {"type": "service", "lifecycle": "experimental", "owner": "user:default/guest"}});
    std::fs::write(
        backstage.entities.path().join("tower-partner-probe.json"),
        component.to_string(),
    )
    .unwrap();

    let refresh = || async {
        let response = client
            .post(format!("{tower}/catalog/refresh"))
            .json(&json!({}))
            .bearer_auth(&token)
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), StatusCode::OK);
        response.json::<Value>().await.unwrap()["status"]
            .as_str()
            .unwrap()
            .to_owned()
    };
    // The provider may be running already from start-up: wait for a trigger that starts a run.
    eventually(
        Duration::from_secs(30),
        "a trigger that starts a run",
        || async { (refresh().await == "triggered").then_some(()) },
    )
    .await
    .unwrap();
    // The run lasts 3 s: a second trigger meanwhile is reported as already running.
    let second = eventually(Duration::from_secs(10), "Backstage's 409", || async {
        let status = refresh().await;
        (status == "already-running").then_some(status)
    })
    .await
    .unwrap();
    assert_eq!(second, "already-running");

    let found = eventually(
        Duration::from_secs(60),
        "the component in the catalog",
        || async {
            let answer = lookup().await?;
            (answer["found"] == true).then_some(answer)
        },
    )
    .await
    .unwrap();
    assert_eq!(found["entity"]["metadata"]["name"], "tower-partner-probe");

    // Backstage's own refusal is a 401 naming the credential, never echoing it.
    let refused = client
        .post(format!("{tower}/catalog/refresh"))
        .json(&json!({}))
        .bearer_auth("forged-token")
        .send()
        .await
        .unwrap();
    assert_eq!(refused.status(), StatusCode::UNAUTHORIZED);
    let body = refused.text().await.unwrap();
    assert!(
        body.contains("authorization") && !body.contains("forged-token"),
        "{body}"
    );
    server.abort();
}
