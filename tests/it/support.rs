//! Processes a test needs: `tower demo` and a WebDriver session in headless Chromium.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use anyhow::{bail, Context};
use fantoccini::wd::Capabilities;
use hyper_util::client::legacy::connect::HttpConnector;
use serde_json::json;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

/// The instant every world this suite starts begins at, so what a test sees never depends
/// on the time of day it runs: `tests/pinned-start` (one RFC 3339 line), or
/// `TOWER_TEST_START=<RFC 3339>` to rerun a failure at the instant it happened.
/// `cargo xtask test` prints the one it used.
pub fn test_start() -> chrono::DateTime<chrono::Utc> {
    const PINNED: &str = include_str!("../pinned-start");
    match std::env::var("TOWER_TEST_START") {
        Ok(start) => start
            .trim()
            .parse()
            .unwrap_or_else(|e| panic!("TOWER_TEST_START={start:?} is not an RFC 3339 time: {e}")),
        Err(_) => PINNED
            .trim()
            .parse()
            .expect("tests/pinned-start is an RFC 3339 time"),
    }
}

/// [`test_start`] as `tower demo --start` takes it.
pub fn test_start_arg() -> String {
    test_start().to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

/// The real present, for what Tower checks against the wall clock rather than the world's
/// (a Backstage token's `iat` and `exp`, as a real Backstage signs them). Never a world's
/// start: that is [`test_start`].
pub fn wall_now() -> chrono::DateTime<chrono::Utc> {
    chrono::Utc::now()
}

/// What `command` prints, once it has succeeded (else the test fails with its stderr).
pub fn stdout_of(command: &mut std::process::Command) -> String {
    let out = command.output().expect("the command runs");
    assert!(
        out.status.success(),
        "{command:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("it prints UTF-8")
}

/// The workspace root.
pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the backend sits in the workspace")
        .to_owned()
}

/// The `tower` binary cargo built for this test run.
pub fn tower_bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_tower"))
}

/// What `tower <args>` printed on standard output, read as a `T`; the test fails with the
/// command's standard error when it did not succeed.
pub fn tower_prints<T: serde::de::DeserializeOwned>(
    args: impl IntoIterator<Item = impl AsRef<std::ffi::OsStr>>,
) -> T {
    let args: Vec<std::ffi::OsString> = args.into_iter().map(|a| a.as_ref().to_owned()).collect();
    let out = std::process::Command::new(tower_bin())
        .args(&args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "tower {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// The built frontend: `$TOWER_DIST`, else `dist/` at the root.
pub fn dist() -> anyhow::Result<PathBuf> {
    let dist = std::env::var_os("TOWER_DIST").map_or_else(|| root().join("dist"), PathBuf::from);
    if !dist.join("index.html").is_file() {
        bail!(
            "the frontend is not built at {}: run `cargo xtask test` (it builds it) or `cargo xtask frontend`",
            dist.display()
        );
    }
    Ok(dist)
}

/// A running `tower demo` on a free port; killed when dropped.
#[derive(Debug)]
pub struct Demo {
    pub url: String,
    /// The kubeconfig the demo wrote for its simulated clusters.
    pub kubeconfig: PathBuf,
    /// Everything the process wrote to stderr (its log), also passed on to the test's.
    logs: std::sync::Arc<std::sync::Mutex<String>>,
    /// Reads stderr into `logs` until the process closes it.
    log_reader: Option<tokio::task::JoinHandle<()>>,
    /// The simulated clusters' API addresses the demo printed.
    clusters: Vec<String>,
    /// The `tower.yaml` the demo printed it wrote for its world (`tower demo` only).
    pub config_file: Option<PathBuf>,
    child: Child,
}

impl Drop for Demo {
    /// Tower never writes to a cluster: a test that ran Tower against the simulated clusters
    /// ends by checking that none of them was asked to write.
    fn drop(&mut self) {
        if !std::thread::panicking() {
            if let Err(err) = self.check_no_writes() {
                panic!("{err:#}");
            }
        }
    }
}

impl Demo {
    /// Fails if any simulated cluster of the demo was asked to write.
    fn check_no_writes(&self) -> anyhow::Result<()> {
        for cluster in &self.clusters {
            let writes = refused_writes(cluster)
                .with_context(|| format!("could not read {cluster}/metrics"))?;
            anyhow::ensure!(writes == 0, "Tower asked {cluster} to write {writes} times");
        }
        Ok(())
    }
}

/// The writes a simulated cluster at `base` (`http://host:port`) has refused, from its
/// `/metrics` (a blocking HTTP/1.0 GET with 5 s deadlines: this runs in `Drop`).
pub fn refused_writes(base: &str) -> anyhow::Result<u64> {
    use std::io::{Read as _, Write as _};
    let address = base
        .strip_prefix("http://")
        .context("not an http:// address")?;
    let mut stream = std::net::TcpStream::connect(address)?;
    stream.set_read_timeout(Some(Duration::from_secs(5)))?;
    stream.set_write_timeout(Some(Duration::from_secs(5)))?;
    write!(stream, "GET /metrics HTTP/1.0\r\nHost: {address}\r\n\r\n")?;
    let mut answer = String::new();
    stream.read_to_string(&mut answer)?;
    let line = answer
        .lines()
        .find_map(|l| l.strip_prefix("hangar_sim_requests_total{verb=\"write\"} "))
        .context("no write count in /metrics")?;
    Ok(line.trim().parse()?)
}

impl Demo {
    /// Starts `tower demo --port 0` and waits for the line announcing its URL.
    pub async fn start() -> anyhow::Result<Self> {
        Self::start_with(&[]).await
    }

    /// The guest's user token, as the demo's `/auth/guest` hands it out.
    pub async fn guest_token(&self) -> anyhow::Result<String> {
        let guest: serde_json::Value = reqwest::get(format!("{}auth/guest", self.url))
            .await?
            .json()
            .await?;
        guest["token"]
            .as_str()
            .map(str::to_owned)
            .context("/auth/guest gave no token")
    }

    /// [`Demo::start`] with more arguments, e.g. `["--speed", "300"]`.
    pub async fn start_with(args: &[&str]) -> anyhow::Result<Self> {
        Self::start_logging(args, "info").await
    }

    /// [`Demo::start_with`], logging at `filter` (`RUST_LOG` syntax).
    pub async fn start_logging(args: &[&str], filter: &str) -> anyhow::Result<Self> {
        let profile = tempfile::tempdir()?;
        let kubeconfig = profile.keep().join("kubeconfig");
        let mut command = Command::new(tower_bin());
        command
            .args(["demo", "--port", "0", "--kubeconfig"])
            .arg(&kubeconfig)
            .args(args)
            .env("RUST_LOG", filter);
        if !args.iter().any(|a| ["--start", "--scenario"].contains(a)) {
            command.args(["--start", &test_start_arg()]);
        }
        Self::spawn(command, kubeconfig).await
    }

    /// `tower serve --config CONFIG --listen 127.0.0.1:0` with extra environment.
    pub async fn serve(config: &Path, env: &[(&str, &str)]) -> anyhow::Result<Self> {
        let mut command = Command::new(tower_bin());
        command
            .args(["serve", "--listen", "127.0.0.1:0", "--config"])
            .arg(config)
            .envs(env.iter().copied());
        let kubeconfig = config.with_file_name("kubeconfig");
        Self::spawn(command, kubeconfig).await
    }

    /// `tower serve --listen 127.0.0.1:0 ARGS…` (no clusters; e.g. `--fleet-file`), its
    /// history in `data_dir`.
    pub async fn serve_with(args: &[&str], data_dir: &Path) -> anyhow::Result<Self> {
        let mut command = Command::new(tower_bin());
        command
            .args(["serve", "--listen", "127.0.0.1:0"])
            .args(args)
            .env("TOWER_DATA_DIR", data_dir);
        Self::spawn(command, data_dir.join("kubeconfig")).await
    }

    async fn spawn(mut command: Command, kubeconfig: PathBuf) -> anyhow::Result<Self> {
        command.arg("--dist").arg(dist()?);
        Self::spawn_as_built(command, kubeconfig).await
    }

    /// `binary demo --port 0 --speed 0` serving the frontend compiled into it (no `--dist`,
    /// no `TOWER_DIST`): the image's binary, run outside the image.
    pub async fn start_binary(binary: &Path) -> anyhow::Result<Self> {
        let profile = tempfile::tempdir()?;
        let kubeconfig = profile.keep().join("kubeconfig");
        let mut command = Command::new(binary);
        command
            .args([
                "demo",
                "--port",
                "0",
                "--speed",
                "0",
                "--start",
                &test_start_arg(),
            ])
            .arg("--kubeconfig")
            .arg(&kubeconfig)
            .env("RUST_LOG", "info")
            .env_remove("TOWER_DIST");
        Self::spawn_as_built(command, kubeconfig).await
    }

    async fn spawn_as_built(mut command: Command, kubeconfig: PathBuf) -> anyhow::Result<Self> {
        let mut child = command
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .context("starting tower")?;
        let logs = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
        let stderr = child.stderr.take().context("no stderr")?;
        let log_reader = tokio::spawn({
            let logs = std::sync::Arc::clone(&logs);
            async move {
                let mut lines = BufReader::new(stderr).lines();
                while let Ok(Some(line)) = lines.next_line().await {
                    eprintln!("{line}");
                    let mut logs = logs
                        .lock()
                        .unwrap_or_else(std::sync::PoisonError::into_inner);
                    logs.push_str(&line);
                    logs.push('\n');
                }
            }
        });
        let stdout = child.stdout.take().context("no stdout")?;
        let mut lines = BufReader::new(stdout).lines();
        let mut clusters = Vec::new();
        let mut config_file = None;
        let url = tokio::time::timeout(Duration::from_secs(60), async {
            while let Some(line) = lines.next_line().await? {
                if let Some(url) = line.strip_prefix("Tower is running at ") {
                    return Ok(url.trim().to_owned());
                }
                if let Some(path) =
                    line.strip_prefix("Tower's config for them (tower serve --config): ")
                {
                    config_file = Some(PathBuf::from(path.trim()));
                }
                if let Some((_, address)) = line
                    .strip_prefix("Simulated cluster ")
                    .and_then(|rest| rest.split_once(": "))
                {
                    clusters.push(address.trim().to_owned());
                }
            }
            bail!("tower exited without printing its URL")
        })
        .await
        .context("tower did not print its URL within 60 s")??;
        // Keep draining stdout so the process never blocks on a full pipe.
        tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
        Ok(Self {
            url,
            kubeconfig,
            logs,
            log_reader: Some(log_reader),
            clusters,
            config_file,
            child,
        })
    }

    /// An HTTP client signed in as the demo's guest (`GET /auth/guest`). No automatic
    /// decompression: tests look at the encoding the server chose.
    pub async fn client(&self) -> anyhow::Result<reqwest::Client> {
        let body: serde_json::Value = reqwest::get(format!("{}auth/guest", self.url))
            .await?
            .json()
            .await?;
        let token = body["token"].as_str().context("no guest token")?;
        Ok(signed_in(token))
    }

    /// GETs `path` (no leading slash) signed in, and reads the JSON answer.
    pub async fn get_json<T: serde::de::DeserializeOwned>(&self, path: &str) -> anyhow::Result<T> {
        let response = self
            .client()
            .await?
            .get(format!("{}{path}", self.url))
            .send()
            .await?;
        Ok(response.error_for_status()?.json().await?)
    }

    /// Stops the process ([`Demo::interrupt`]) and answers everything it logged, to the end.
    pub async fn logs_at_exit(mut self) -> anyhow::Result<String> {
        let reader = self.log_reader.take().context("the log was read already")?;
        let logs = std::sync::Arc::clone(&self.logs);
        let status = self.interrupt().await?;
        anyhow::ensure!(status.success(), "tower exited with {status}");
        tokio::time::timeout(Duration::from_secs(10), reader).await??;
        let logs = logs
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone();
        Ok(logs)
    }

    /// Kills the process at once (SIGKILL: no shutdown of its own, as when its node dies)
    /// and waits for it to be gone.
    pub async fn kill(mut self) -> anyhow::Result<()> {
        self.check_no_writes()?;
        self.child.kill().await?;
        Ok(())
    }

    /// Sends SIGINT (what Ctrl-C sends) and waits up to 10 s for the process to exit.
    pub async fn interrupt(mut self) -> anyhow::Result<std::process::ExitStatus> {
        let pid = self.child.id().context("the demo already exited")?;
        // Checked while the clusters still answer (Drop would find them gone).
        self.check_no_writes()?;
        self.clusters.clear();
        let status = Command::new("kill")
            .args(["-INT", &pid.to_string()])
            .status()
            .await?;
        anyhow::ensure!(status.success(), "kill -INT {pid} failed");
        Ok(tokio::time::timeout(Duration::from_secs(10), self.child.wait()).await??)
    }
}

/// A WebDriver session in headless Chromium; the driver is killed when dropped.
pub struct Browser {
    pub client: fantoccini::Client,
    _driver: Child,
    _profile: tempfile::TempDir,
}

impl std::fmt::Debug for Browser {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Browser").finish_non_exhaustive()
    }
}

fn program(env: &str, default: &str) -> anyhow::Result<PathBuf> {
    let path = std::env::var_os(env).map_or_else(|| PathBuf::from(default), PathBuf::from);
    if !path.is_file() {
        bail!(
            "{} is missing: browser tests need chromium and chromedriver \
             (`cargo xtask test` installs them; or set {env})",
            path.display()
        );
    }
    Ok(path)
}

impl Browser {
    pub async fn start() -> anyhow::Result<Self> {
        let chromium = program("CHROMIUM", "/usr/bin/chromium")?;
        let chromedriver = program("CHROMEDRIVER", "/usr/bin/chromedriver")?;
        let port = free_port()?;
        let driver = Command::new(chromedriver)
            .arg(format!("--port={port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .context("starting chromedriver")?;
        let profile = tempfile::tempdir()?;
        let mut caps = Capabilities::new();
        caps.insert(
            "goog:chromeOptions".to_owned(),
            json!({
                "binary": chromium,
                "args": [
                    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                    "--no-first-run", "--disable-background-networking",
                    "--disable-component-update", "--disable-sync",
                    "--window-size=1280,900",
                    format!("--user-data-dir={}", profile.path().display()),
                ],
            }),
        );
        let webdriver = format!("http://127.0.0.1:{port}");
        let mut last_error = None;
        for _ in 0..100 {
            match fantoccini::ClientBuilder::new(HttpConnector::new())
                .capabilities(caps.clone())
                .connect(&webdriver)
                .await
            {
                Ok(client) => {
                    return Ok(Self {
                        client,
                        _driver: driver,
                        _profile: profile,
                    })
                }
                Err(err) => {
                    last_error = Some(err);
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
            }
        }
        bail!("cannot open a WebDriver session: {last_error:?}")
    }

    /// Saves a screenshot as `target/screenshots/<name>.png`.
    pub async fn screenshot(&self, name: &str) -> anyhow::Result<PathBuf> {
        let dir = root().join("target/screenshots");
        std::fs::create_dir_all(&dir)?;
        let path = dir.join(format!("{name}.png"));
        std::fs::write(&path, self.client.screenshot().await?)?;
        Ok(path)
    }

    /// Checks the page as it is now with axe-core (WCAG 2.1 A and AA, and best practices):
    /// fails on any `serious` or `critical` violation, naming the rule, the elements and
    /// the help; then saves `target/screenshots/<name>.png`. Every page a browser test opens
    /// goes through here. What axe found (any impact) is written to `target/axe/<name>.json`.
    pub async fn check_page(&self, name: &str) -> anyhow::Result<PathBuf> {
        let violations = self.axe().await?;
        let dir = root().join("target/axe");
        std::fs::create_dir_all(&dir)?;
        std::fs::write(
            dir.join(format!("{name}.json")),
            serde_json::to_string_pretty(&violations)?,
        )?;
        let serious: Vec<String> = violations
            .as_array()
            .map(Vec::as_slice)
            .unwrap_or_default()
            .iter()
            .filter(|v| matches!(v["impact"].as_str(), Some("serious" | "critical")))
            .map(|v| {
                format!(
                    "{} ({}): {} — {}",
                    v["id"].as_str().unwrap_or("?"),
                    v["impact"].as_str().unwrap_or("?"),
                    v["help"].as_str().unwrap_or("?"),
                    v["nodes"]
                )
            })
            .collect();
        anyhow::ensure!(
            serious.is_empty(),
            "axe found {} serious or critical problems on {name}:\n{}",
            serious.len(),
            serious.join("\n")
        );
        self.screenshot(name).await
    }

    /// Presses Tab through the whole page from the top: every visible link, button, input
    /// and focusable cell is reached (not what a closed `<details>` folds away but its
    /// summary), and each shows a visible focus ring. How many were
    /// reached. Elements are known by what they are (tag, link, label), not by handle, so a
    /// live page that draws a part again mid-walk is still walked; an element that left the
    /// page meanwhile is not asked for.
    pub async fn keyboard_reaches_everything(&self) -> anyhow::Result<usize> {
        const FOCUSABLE: &str = "Array.from(document.querySelectorAll(
            'a[href], button:not([disabled]), input:not([disabled]), select, textarea, [tabindex]:not([tabindex=\"-1\"])'))
            .filter(e => e.getClientRects().length > 0)
            .filter(e => { const d = e.closest('details');
                return !d || d.open || e.closest('summary') === d.querySelector(':scope > summary'); })
            .map(describe)";
        const DESCRIBE: &str = "const describe = e => [e.tagName, e.getAttribute('href') || '',
            (e.getAttribute('aria-label') || e.innerText || e.value || '').trim().slice(0, 80)].join('|');";
        let c = &self.client;
        let focusable =
            |then: &str| format!("{DESCRIBE} const all = {FOCUSABLE}; {then} return all;");
        let before: Vec<String> = serde_json::from_value(
            c.execute(
                &focusable("if (document.activeElement) document.activeElement.blur(); window.scrollTo(0, 0);"),
                vec![],
            )
            .await?,
        )?;
        anyhow::ensure!(!before.is_empty(), "nothing on the page takes focus");
        let mut reached = std::collections::BTreeSet::new();
        let mut unringed = Vec::new();
        for _ in 0..before.len() + 5 {
            // Through the actions API: no element handle to go stale as the page re-renders.
            use fantoccini::actions::{InputSource as _, KeyAction, KeyActions};
            let tab = KeyActions::new("keyboard".to_owned())
                .then(KeyAction::Down { value: '\u{e004}' })
                .then(KeyAction::Up { value: '\u{e004}' });
            c.perform_actions(tab).await?;
            let focused = c
                .execute(
                    &format!("{DESCRIBE} const e = document.activeElement;
                     if (!e || e === document.body) return [null, true];
                     const s = getComputedStyle(e);
                     return [describe(e), s.outlineStyle !== 'none' && parseFloat(s.outlineWidth) > 0];"),
                    vec![],
                )
                .await?;
            let (which, ringed): (Option<String>, bool) = serde_json::from_value(focused)?;
            if let Some(which) = which {
                if !ringed {
                    unringed.push(which.clone());
                }
                reached.insert(which);
            }
        }
        anyhow::ensure!(unringed.is_empty(), "focus is not visible on {unringed:?}");
        let after: std::collections::BTreeSet<String> =
            serde_json::from_value(c.execute(&focusable(""), vec![]).await?)?;
        let missed: Vec<&String> = before
            .iter()
            .filter(|e| after.contains(*e) && !reached.contains(*e))
            .collect();
        anyhow::ensure!(
            missed.is_empty(),
            "Tab did not reach {} of {} focusable elements: {missed:?}",
            missed.len(),
            before.len()
        );
        Ok(reached.len())
    }

    /// axe-core's violations on the current page: `[{id, impact, help, nodes: [target]}]`.
    async fn axe(&self) -> anyhow::Result<serde_json::Value> {
        static AXE: std::sync::OnceLock<Result<String, String>> = std::sync::OnceLock::new();
        let source = AXE
            .get_or_init(|| {
                let path = std::env::var_os("TOWER_AXE").ok_or_else(|| {
                    "TOWER_AXE is not set: run the browser tests with `cargo xtask test` (it installs axe-core)".to_owned()
                })?;
                std::fs::read_to_string(&path)
                    .map_err(|err| format!("reading axe-core from {}: {err}", PathBuf::from(path).display()))
            })
            .as_ref()
            .map_err(|err| anyhow::anyhow!("{err}"))?;
        self.client.execute(source, vec![]).await?;
        let found = self
            .client
            .execute_async(
                "const done = arguments[arguments.length - 1];
                 axe.run(document, {runOnly: {type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa', 'best-practice']}})
                    .then(r => done(r.violations.map(v => ({id: v.id, impact: v.impact, help: v.help,
                        nodes: v.nodes.map(n => n.target.join(' '))}))))
                    .catch(e => done({error: String(e)}));",
                vec![],
            )
            .await?;
        if let Some(error) = found.get("error") {
            anyhow::bail!("axe-core failed: {error}");
        }
        Ok(found)
    }

    /// Runs `check`; on failure saves `<name>-failure.png` and says where.
    pub async fn checked<F, T>(&self, name: &str, check: F) -> anyhow::Result<T>
    where
        F: std::future::Future<Output = anyhow::Result<T>>,
    {
        match check.await {
            Ok(value) => Ok(value),
            Err(err) => {
                let shot = self.screenshot(&format!("{name}-failure")).await;
                // What the page asked Tower for and got an answer to, last first: a part
                // that never drew either never asked or is still waiting.
                let fetched = self
                    .client
                    .execute(
                        "return performance.getEntriesByType('resource')\
                         .filter(e => e.name.includes('/api/')).slice(-15).reverse()\
                         .map(e => `${Math.round(e.startTime)}ms +${Math.round(e.duration)}ms ${e.name}`);",
                        vec![],
                    )
                    .await;
                Err(err.context(format!(
                    "screenshot: {shot:?}; answers the page got: {fetched:?}"
                )))
            }
        }
    }

    pub async fn close(self) -> anyhow::Result<()> {
        self.client.close().await?;
        Ok(())
    }
}

fn free_port() -> anyhow::Result<u16> {
    let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
    Ok(listener.local_addr()?.port())
}

/// Tower in-process, reading the simulated platform through its real clients (kube-rs,
/// octocrab, reqwest) over loopback, and serving its routes on a real socket. Unlike
/// [`Demo`], the test holds the platform: it can stop a cluster's API or read its request
/// counts.
pub struct Live {
    /// `http://127.0.0.1:PORT` (no trailing slash).
    pub base: String,
    pub world: tower_backend::demo::Demo,
    pub live: tower_backend::live::Live,
    /// A guest user token from the simulated Backstage.
    pub token: String,
    server: tokio::task::JoinHandle<()>,
    _dir: tempfile::TempDir,
}

impl std::fmt::Debug for Live {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Live")
            .field("base", &self.base)
            .finish_non_exhaustive()
    }
}

impl Drop for Live {
    /// Stops Tower; then, unless the test failed already, checks that Tower never asked a
    /// simulated cluster to write.
    fn drop(&mut self) {
        self.server.abort();
        if !std::thread::panicking() {
            let writes = self.world.served.writes();
            assert_eq!(
                writes, 0,
                "Tower asked the simulated clusters to write {writes} times"
            );
        }
    }
}

impl Live {
    /// The demo's stories from now, with world time at `speed`; history in SQLite.
    pub async fn start(speed: f64) -> anyhow::Result<Self> {
        Self::start_with(speed, None).await
    }

    /// [`Live::start`] with the history in `database_url` (e.g. PostgreSQL).
    pub async fn start_with(speed: f64, database_url: Option<String>) -> anyhow::Result<Self> {
        Self::start_full(speed, database_url, &[], Vec::new()).await
    }

    /// [`Live::start`] on clusters whose API servers deny Tower what `denied` says (cluster,
    /// rule), from before Tower first asks.
    pub async fn start_denied(
        speed: f64,
        denied: &[(&str, hangar_sim::kube_api::Forbidden)],
    ) -> anyhow::Result<Self> {
        Self::start_full(speed, None, denied, Vec::new()).await
    }

    /// [`Live::start`] with these tool tokens besides the Backstage guest.
    pub async fn start_with_tools(
        speed: f64,
        tools: Vec<tower_backend::config::ToolToken>,
    ) -> anyhow::Result<Self> {
        Self::start_full(speed, None, &[], tools).await
    }

    /// Tower on `stories` alone from the pinned start, with world time at `speed`.
    pub async fn start_stories(
        speed: f64,
        stories: Vec<Box<dyn hangar_sim::stories::Story>>,
    ) -> anyhow::Result<Self> {
        let world = tower_backend::demo::World::Custom {
            start: test_start(),
            stories,
            clusters: Vec::new(),
        };
        Self::start_world(world, speed, None, &[], Vec::new()).await
    }

    async fn start_full(
        speed: f64,
        database_url: Option<String>,
        denied: &[(&str, hangar_sim::kube_api::Forbidden)],
        tools: Vec<tower_backend::config::ToolToken>,
    ) -> anyhow::Result<Self> {
        let world = tower_backend::demo::World::Stories {
            start: test_start(),
            seed: 1,
        };
        Self::start_world(world, speed, database_url, denied, tools).await
    }

    async fn start_world(
        world: tower_backend::demo::World,
        speed: f64,
        database_url: Option<String>,
        denied: &[(&str, hangar_sim::kube_api::Forbidden)],
        tools: Vec<tower_backend::config::ToolToken>,
    ) -> anyhow::Result<Self> {
        use tower_backend::{app, assets, demo, live};
        let dir = tempfile::tempdir()?;
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let world = demo::start_world(world, speed, dir.path(), None, addr).await?;
        for (cluster, rule) in denied {
            world
                .served
                .access(cluster)
                .context("no such simulated cluster")?
                .forbid(rule.clone());
        }
        let mut config = world.config.clone();
        if let Some(url) = database_url {
            config.database_url = Some(tower_backend::config::Secret(url));
        }
        config.tokens.extend(tools);
        let live = live::connect(config, world.clock()).await?;
        anyhow::ensure!(
            live.wait_ready(Duration::from_secs(30)).await,
            "Tower did not read the simulated platform within 30 s"
        );
        let router = app::router(
            tower_backend::state::AppState::live(live.clone()),
            &assets::Dist::open(&dist()?)?,
        );
        let server = tokio::spawn(async move {
            let _ = axum::serve(listener, router).await;
        });
        let token = guest_token(&format!("http://{}", world.served.backstage)).await?;
        Ok(Self {
            base: format!("http://{addr}"),
            world,
            live,
            token,
            server,
            _dir: dir,
        })
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    /// Moves the simulated world's clock on by `seconds` of world time, by hand (start the
    /// world at speed 0 so nothing else moves it); the world catches up at its next tick.
    pub fn advance_world(&self, seconds: i64) {
        self.world
            .platform
            .clock()
            .advance(chrono::Duration::seconds(seconds));
    }

    /// The simulated world's time.
    pub fn world_now(&self) -> chrono::DateTime<chrono::Utc> {
        self.world.platform.clock().now()
    }

    /// Moves the world to `secs_in` seconds into the busy app's next pull-request run and
    /// waits (10 s at most) until Tower shows that run, still running, as the newest; its
    /// name. (Tower may show the one before as running for a moment.)
    pub async fn next_pr_run(&self, service: &str, secs_in: i64) -> anyhow::Result<String> {
        let every = hangar_sim::stories::fleet::PR_EVERY;
        let now = self.world_now();
        let slot_start = (now.timestamp() / every + 1) * every;
        let at = chrono::DateTime::from_timestamp(slot_start + secs_in, 0).context("time")?;
        self.world.platform.clock().advance(at - now);
        let path = format!("/api/pipelines?service={service}&pipeline=pull-request&limit=1");
        eventually(
            Duration::from_secs(10),
            "the next PR run, running",
            || async {
                let (_, page) = self.get(&path).await.ok()?;
                let run = &page["runs"][0];
                let started: chrono::DateTime<chrono::Utc> =
                    run["startedAt"].as_str()?.parse().ok()?;
                (started.timestamp() == slot_start && run["outcome"] == "running")
                    .then(|| run["name"].as_str().map(str::to_owned))
                    .flatten()
            },
        )
        .await
    }

    /// Polls `/api/deployments?service=` until `check` accepts the answer (10 s at most):
    /// Tower follows a moved clock at the world's next tick.
    pub async fn deployments_until(
        &self,
        service: &str,
        what: &str,
        check: impl Fn(&serde_json::Value) -> bool,
    ) -> anyhow::Result<serde_json::Value> {
        let path = format!("/api/deployments?service={service}");
        eventually(Duration::from_secs(10), what, || async {
            let (status, body) = self.get(&path).await.ok()?;
            (status.is_success() && check(&body)).then_some(body)
        })
        .await
    }

    /// The fleet's paused canary, paused at 40 % in prod: when the world is in the ten
    /// minutes its canary spends at 20 %, the clock moves on past them first.
    pub async fn paused_canary_at_40(&self) -> anyhow::Result<String> {
        let app = fleet_app(hangar_sim::stories::fleet::Role::PausedCanary);
        let started = app.prod_rollout_started(self.world_now());
        let at_40 = started + chrono::Duration::seconds(601);
        let now = self.world_now();
        if now < at_40 {
            self.advance_world((at_40 - now).num_seconds());
        }
        self.deployments_until(&app.name, "the canary paused at 40%", |body| {
            prod_rollout(body)["canaryWeight"] == 40
        })
        .await?;
        Ok(app.name)
    }

    /// Spends GitHub's rate limit for `reset_in` seconds, as Tower meets it: the limit is
    /// injected into the simulated GitHub and Tower is asked for a repository it may read
    /// (a fleet app's) that nobody has asked GitHub about yet — one already met would be
    /// answered from Tower's cache and leave the fault to the next caller. Fails unless
    /// Tower answers 503.
    pub async fn spend_github_rate_limit(&self, reset_in: u64) -> anyhow::Result<()> {
        let (_, fleet) = self.get("/api/fleet").await?;
        let asked = self.world.platform.github_requests();
        let apps = fleet["apps"].as_array().context("no fleet")?;
        let repo = apps
            .iter()
            .filter_map(|app| app["name"].as_str())
            .map(|app| format!("gitops-infra-{app}"))
            .find(|repo| {
                !asked
                    .iter()
                    .any(|(_, path)| path.contains(&format!("/{repo}/")))
            })
            .context("every fleet app's repositories were asked about")?;
        self.world.platform.inject_github_fault(
            hangar_sim::github::Fault::RateLimitSpent { reset_in },
            &format!("/{repo}/"),
        );
        let met = self
            .client()
            .get(self.url(&format!("/pull-requests?owner=acme&repo={repo}")))
            .send()
            .await?;
        let status = met.status();
        let body = met.text().await?;
        anyhow::ensure!(
            status == reqwest::StatusCode::SERVICE_UNAVAILABLE,
            "{repo} with GitHub's limit spent: {status} {body}"
        );
        Ok(())
    }

    /// The same Tower as a router (no HTTP), with a tool token `secret` for `subject`
    /// allowed on `routes`; guests sign in as before.
    pub fn router_with_tool(&self, subject: &str, secret: &str, routes: &[&str]) -> axum::Router {
        self.router_with(|config| {
            config.tokens.push(tower_backend::config::ToolToken {
                subject: subject.to_owned(),
                token: tower_backend::config::Secret(secret.to_owned()),
                routes: routes.iter().map(|r| (*r).to_owned()).collect(),
            });
        })
    }

    /// A release recorder on this Tower, as `tower serve` runs one; each call starts one more
    /// (as another replica's would).
    pub fn record_releases(&self) -> tokio::task::JoinHandle<()> {
        tower_backend::records::Recorder::spawn(tower_backend::state::AppState::live(
            self.live.clone(),
        ))
        .expect("a live Tower with GitHub")
    }

    /// The same Tower as a router (no HTTP), its callers checked as `edit` configures.
    pub fn router_with(
        &self,
        edit: impl FnOnce(&mut tower_backend::config::Config),
    ) -> axum::Router {
        let mut config = self.live.config().clone();
        edit(&mut config);
        let mut state = tower_backend::state::AppState::live(self.live.clone());
        state.gate = std::sync::Arc::new(tower_backend::auth::Gate::from_config(
            &config,
            reqwest::Client::new(),
        ));
        tower_backend::app::router(
            state,
            &tower_backend::assets::Dist::open(&dist().expect("dist")).expect("dist opens"),
        )
    }

    /// An HTTP client that signs in as the simulated Backstage's guest.
    pub fn client(&self) -> reqwest::Client {
        signed_in(&self.token)
    }

    /// The status of a GET of `path` that names `etag` in `If-None-Match` (304 when the
    /// view is unchanged).
    pub async fn revalidate(
        &self,
        path: &str,
        etag: &reqwest::header::HeaderValue,
    ) -> reqwest::StatusCode {
        self.client()
            .get(self.url(path))
            .header("if-none-match", etag)
            .send()
            .await
            .expect("Tower answers")
            .status()
    }

    /// GETs `path` and reads the answer as a refusal: its status, and the field its JSON
    /// body names (`{"error", "field"}`).
    pub async fn refusal(
        &self,
        path: &str,
    ) -> anyhow::Result<(reqwest::StatusCode, Option<String>)> {
        let (status, body) = self.get(path).await?;
        Ok((status, body["field"].as_str().map(str::to_owned)))
    }

    /// GETs `path`, returning the status and the JSON body.
    pub async fn get(
        &self,
        path: &str,
    ) -> anyhow::Result<(reqwest::StatusCode, serde_json::Value)> {
        let response = self.client().get(self.url(path)).send().await?;
        let status = response.status();
        let text = response.text().await?;
        let body = serde_json::from_str(&text)
            .with_context(|| format!("GET {path} answered {status} with non-JSON: {text}"))?;
        Ok((status, body))
    }

    /// `POST path` with the JSON `body`: the answer's status and JSON.
    pub async fn post(&self, path: &str, body: &serde_json::Value) -> (u16, serde_json::Value) {
        let response = self
            .client()
            .post(self.url(path))
            .json(body)
            .send()
            .await
            .unwrap();
        (response.status().as_u16(), response.json().await.unwrap())
    }
}

/// The steady fleet's app playing `role` in every world this suite starts (seed 1; which
/// app plays which role does not depend on when the world starts).
pub fn fleet_app(role: hangar_sim::stories::fleet::Role) -> hangar_sim::stories::fleet::SteadyApp {
    hangar_sim::stories::fleet::SteadyFleet::new(1, test_start())
        .app(role)
        .cloned()
        .expect("the fleet plays every role")
}

/// The demo fleet's busy app: a pull-request pipeline every ten minutes, 320 runs kept.
pub fn busy_app() -> String {
    hangar_sim::stories::fleet::SteadyFleet::new(1, test_start())
        .apps
        .iter()
        .find(|a| a.busy)
        .expect("the demo fleet has a busy app")
        .name
        .clone()
}

/// The prod environment's rollout in a `/api/deployments` answer (`null` when missing).
pub fn prod_rollout(body: &serde_json::Value) -> &serde_json::Value {
    body["environments"]
        .as_array()
        .and_then(|envs| envs.iter().find(|e| e["name"] == "prod"))
        .map_or(&serde_json::Value::Null, |prod| &prod["rollout"])
}

/// Checks that `fixtures/<dir>/` holds exactly the fixtures `listed` names (without `.json`):
/// a fixture nobody derives, or a listed one missing, fails.
pub fn fixtures_are_exactly(dir: &str, listed: impl IntoIterator<Item = &'static str>) {
    let mut files: Vec<String> = std::fs::read_dir(root().join("fixtures").join(dir))
        .expect("the fixtures folder")
        .map(|e| {
            e.expect("an entry")
                .file_name()
                .to_string_lossy()
                .into_owned()
        })
        .collect();
    files.sort();
    let mut listed: Vec<String> = listed.into_iter().map(|f| format!("{f}.json")).collect();
    listed.sort();
    assert_eq!(
        files, listed,
        "fixtures/{dir}: every fixture needs a service in FIXTURES"
    );
}

/// A GET of `path` carrying `token` as `Authorization: Bearer …`, for [`call`].
pub fn get_with(path: &str, token: &str) -> axum::http::request::Builder {
    axum::http::Request::get(path).header("authorization", format!("Bearer {token}"))
}

/// Sends `request` (with `body`, as JSON) to `router` and reads the JSON answer.
pub async fn call(
    router: &axum::Router,
    request: axum::http::request::Builder,
    body: &str,
) -> (reqwest::StatusCode, serde_json::Value) {
    use tower::ServiceExt as _;
    let request = request
        .header("content-type", "application/json")
        .body(axum::body::Body::from(body.to_owned()))
        .expect("request");
    let response = router.clone().oneshot(request).await.expect("infallible");
    let status = response.status();
    let body = axum::body::to_bytes(response.into_body(), 1 << 22)
        .await
        .expect("body");
    let body = serde_json::from_slice(&body).unwrap_or_else(|err| {
        panic!(
            "{status} with non-JSON ({err}): {}",
            String::from_utf8_lossy(&body)
        )
    });
    (status, body)
}

/// What a check of [`eventually`] may answer: `Some(value)` / `Ok(Some(value))` / `Ok(true)`
/// once it holds, `None` / `Ok(None)` / `Ok(false)` while it does not yet, and `Err` when
/// waiting longer cannot help.
pub trait Outcome<T> {
    fn outcome(self) -> anyhow::Result<Option<T>>;
}

impl<T> Outcome<T> for Option<T> {
    fn outcome(self) -> anyhow::Result<Option<T>> {
        Ok(self)
    }
}

impl<T> Outcome<T> for anyhow::Result<Option<T>> {
    fn outcome(self) -> anyhow::Result<Option<T>> {
        self
    }
}

impl Outcome<()> for anyhow::Result<bool> {
    fn outcome(self) -> anyhow::Result<Option<()>> {
        self.map(|holds| holds.then_some(()))
    }
}

/// How often [`eventually`] looks (a route with a per-caller budget answers this pace).
pub const LOOK_EVERY: Duration = Duration::from_millis(100);

/// Looks with `check` every [`LOOK_EVERY`] until it holds, for at most `limit`: the one
/// wait-until of the tests (a condition with a deadline, never a fixed sleep).
pub async fn eventually<T, F, Fut>(limit: Duration, what: &str, check: F) -> anyhow::Result<T>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future,
    Fut::Output: Outcome<T>,
{
    eventually_every(LOOK_EVERY, limit, what, check).await
}

/// [`eventually`], looking every `every`: a test measuring how soon something shows
/// (`change_to_screen`) reads it within that much.
pub async fn eventually_every<T, F, Fut>(
    every: Duration,
    limit: Duration,
    what: &str,
    mut check: F,
) -> anyhow::Result<T>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future,
    Fut::Output: Outcome<T>,
{
    let deadline = tokio::time::Instant::now() + limit;
    loop {
        if let Some(value) = check().await.outcome()? {
            return Ok(value);
        }
        if tokio::time::Instant::now() > deadline {
            bail!("{what}: not within {limit:?}");
        }
        tokio::time::sleep(every).await;
    }
}

/// A fresh, empty database on the PostgreSQL server `cargo xtask test` starts
/// (`TOWER_TEST_DATABASE_URL`); its URL.
pub async fn postgres_database() -> anyhow::Result<String> {
    use sqlx::{Connection as _, Executor as _};
    static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let base = std::env::var("TOWER_TEST_DATABASE_URL").context(
        "TOWER_TEST_DATABASE_URL is not set: run the tests with `cargo xtask test`, which installs and starts PostgreSQL",
    )?;
    let name = format!(
        "tower_it_{}_{}",
        std::process::id(),
        NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
    );
    let mut admin = sqlx::postgres::PgConnection::connect(&base)
        .await
        .with_context(|| format!("connecting to {base}"))?;
    admin
        .execute(format!("DROP DATABASE IF EXISTS {name}").as_str())
        .await?;
    admin
        .execute(format!("CREATE DATABASE {name}").as_str())
        .await?;
    let (server, _) = base.rsplit_once('/').context("a database URL")?;
    Ok(format!("{server}/{name}"))
}

/// A Backstage guest user token from the Backstage at `backstage` (no trailing slash).
pub async fn guest_token(backstage: &str) -> anyhow::Result<String> {
    tower_backend::demo::guest_token(backstage).await
}

/// An HTTP client sending `Authorization: Bearer TOKEN` with every request.
pub fn signed_in(token: &str) -> reqwest::Client {
    let mut headers = reqwest::header::HeaderMap::new();
    let value = reqwest::header::HeaderValue::from_str(&format!("Bearer {token}"))
        .expect("a token is ASCII");
    headers.insert(reqwest::header::AUTHORIZATION, value);
    reqwest::Client::builder()
        .default_headers(headers)
        .build()
        .expect("a client")
}

/// An authenticating proxy on loopback in front of `upstream` (`http://host:port`): every
/// request is passed on with `header: user` added, streaming both ways (so `/api/events`
/// works through it). Returns its URL (no trailing slash).
pub async fn authenticating_proxy(
    upstream: &str,
    header: &'static str,
    user: &'static str,
) -> anyhow::Result<String> {
    use hyper_util::client::legacy::Client;
    use hyper_util::rt::TokioExecutor;
    let client: Client<HttpConnector, axum::body::Body> =
        Client::builder(TokioExecutor::new()).build_http();
    let upstream = upstream.trim_end_matches('/').to_owned();
    let forward = move |mut request: axum::extract::Request| {
        let client = client.clone();
        let upstream = upstream.clone();
        async move {
            let path = request
                .uri()
                .path_and_query()
                .map_or("/", |p| p.as_str())
                .to_owned();
            *request.uri_mut() = format!("{upstream}{path}").parse()?;
            request.headers_mut().remove(http::header::HOST);
            request
                .headers_mut()
                .insert(header, http::HeaderValue::from_static(user));
            let response = client.request(request).await?;
            anyhow::Ok(response.map(axum::body::Body::new))
        }
    };
    let app = axum::Router::new().fallback(move |request: axum::extract::Request| {
        let forward = forward.clone();
        async move {
            use axum::response::IntoResponse as _;
            match forward(request).await {
                Ok(response) => response.into_response(),
                Err(err) => (http::StatusCode::BAD_GATEWAY, err.to_string()).into_response(),
            }
        }
    });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let url = format!("http://{}", listener.local_addr()?);
    tokio::spawn(async move { axum::serve(listener, app).await });
    Ok(url)
}

/// Sends a request and reads its JSON answer (panicking on failure: tests only).
pub trait ReadJson {
    fn read_json(self) -> impl std::future::Future<Output = serde_json::Value>;
}

impl ReadJson for reqwest::RequestBuilder {
    async fn read_json(self) -> serde_json::Value {
        self.send().await.unwrap().json().await.unwrap()
    }
}

/// The demo's world `minutes` in (each), as snapshots of every object its clusters serve:
/// one world whose clock is moved by hand from one moment to the next.
/// Every snapshot in `dirs` (under the repository's root), by path, trimmed as Tower keeps
/// objects.
pub fn fixture_snapshots(dirs: &[&str]) -> Vec<(String, tower_shared::snapshot::Snapshot)> {
    let mut snapshots = Vec::new();
    for dir in dirs {
        for entry in std::fs::read_dir(root().join(dir)).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_some_and(|e| e == "json") {
                let text = std::fs::read_to_string(&path).unwrap();
                let snapshot = tower_shared::snapshot::Snapshot::from_json(&text)
                    .unwrap_or_else(|e| panic!("{}: {e:?}", path.display()))
                    .trimmed();
                snapshots.push((path.display().to_string(), snapshot));
            }
        }
    }
    snapshots.sort_by(|a, b| a.0.cmp(&b.0));
    snapshots
}

pub fn simulated_worlds(minutes: &[i64]) -> Vec<tower_shared::snapshot::Snapshot> {
    let start: chrono::DateTime<chrono::Utc> = "2026-11-30T08:00:00Z".parse().unwrap();
    let clock = hangar_sim::clock::Clock::new(start, 0.0);
    let platform = hangar_sim::platform::Platform::new(
        clock.clone(),
        &["dev", "prod"],
        hangar_sim::stories::demo_world(start, 1),
    );
    minutes
        .iter()
        .map(|minutes| {
            let at = start + chrono::Duration::minutes(*minutes);
            assert!(at >= clock.now(), "moments in order");
            clock.advance(at - clock.now());
            platform.tick();
            objects_of(&platform)
        })
        .collect()
}

/// What Tower would read of `platform`'s clusters at its last tick (no pull requests), on
/// its clock; the control plane is `dev`.
pub fn objects_of(platform: &hangar_sim::platform::Platform) -> tower_shared::snapshot::Snapshot {
    let mut snapshot = tower_shared::snapshot::Snapshot::empty(platform.clock().now());
    snapshot.control_plane_cluster = "dev".into();
    for (cluster, store) in platform.clusters() {
        let objects = store
            .objects()
            .into_iter()
            .filter_map(tower_shared::kube::Object::from_value)
            .map(std::sync::Arc::new)
            .collect();
        snapshot.clusters.insert(cluster.to_owned(), objects);
    }
    snapshot
}
