//! Finding, and installing when missing, everything the build and tests need beyond the
//! Rust toolchain. Tools that are already there at the right version are not rebuilt.
//!
//! | tool | from | why this way |
//! |---|---|---|
//! | `wasm32-unknown-unknown` | rustup | the frontend's target |
//! | wasm-bindgen-cli = the `wasm-bindgen` in Cargo.lock | `cargo install`, not `--locked` | the CLI must match the library exactly; `--locked` pins a yanked dependency |
//! | wasm-opt (binaryen 132) | npm, into the tools folder | Debian's binaryen 108 emits WASM that fails at load |
//! | cargo-nextest 0.9.143 | `cargo install --locked` (this machine image has it) | runs the tests, each with a deadline (`.config/nextest.toml`) |
//! | pdftotext, pdftoppm | apt-get's `poppler-utils` | reading an exported release record's PDF |
//! | kubectl | the one on `PATH`, else apt-get's `kubernetes-client` | the simulator's kubectl tests (Debian's 1.20 conflicts with an image's own kubectl, so only when there is none) |
//! | chromium, chromedriver | apt-get | browser tests |
//! | axe-core 4.14.1 | npm, into the tools folder | the accessibility check every browser test runs on the pages it opens |
//! | schemathesis 4.32.5, openapi-spec-validator 0.9.0 | pip, into a virtual environment in the tools folder | the API contract test (`tests/it/contract.rs`) |
//! | postgresql (cluster `tower`, port 54329) | apt-get, `pg_createcluster` | history tests against PostgreSQL |
//! | a real Backstage backend | the team's `backstage-partner/setup.sh` (npm) | catalog tests against the real thing |
//!
//! The tools folder is `$TOWER_TOOLS_DIR`, else `~/.cache/tower-tools`: outside the clone,
//! so clean clones on one machine share it.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Context};

use crate::steps;

pub const NEXTEST_VERSION: &str = "0.9.143";
pub const BINARYEN_VERSION: &str = "132";
pub const AXE_VERSION: &str = "4.14.1";
pub const SCHEMATHESIS_VERSION: &str = "4.32.5";
pub const OPENAPI_SPEC_VALIDATOR_VERSION: &str = "0.9.0";

/// The API contract's checkers, in a virtual environment of their own.
#[derive(Debug)]
pub struct ContractTools {
    /// Schemathesis' `st`.
    pub schemathesis: PathBuf,
    pub openapi_spec_validator: PathBuf,
}

/// Schemathesis and openapi-spec-validator at their pinned versions, in
/// `<tools>/contract-venv` (created with the machine's `python3 -m venv`; installed with its
/// pip when missing or at another version).
pub fn ensure_contract_tools() -> anyhow::Result<ContractTools> {
    let venv = tools_dir().join("contract-venv");
    let bin = venv.join("bin");
    let wanted = [
        ("schemathesis", SCHEMATHESIS_VERSION),
        ("openapi-spec-validator", OPENAPI_SPEC_VALIDATOR_VERSION),
    ];
    let installed = |package: &str| {
        steps::output(Command::new(bin.join("pip")).args(["show", package])).and_then(|out| {
            out.lines()
                .find_map(|l| l.strip_prefix("Version: ").map(str::to_owned))
        })
    };
    if !bin.join("pip").is_file() {
        steps::run(
            "create the contract tools' virtual environment",
            Command::new("python3").args(["-m", "venv"]).arg(&venv),
        )?;
    }
    let missing: Vec<String> = wanted
        .iter()
        .filter(|(package, version)| installed(package).as_deref() != Some(*version))
        .map(|(package, version)| format!("{package}=={version}"))
        .collect();
    if !missing.is_empty() {
        steps::run(
            &format!("install {} (pip)", missing.join(" ")),
            Command::new(bin.join("pip"))
                .args(["install", "--quiet", "--disable-pip-version-check"])
                .args(&missing),
        )?;
    }
    Ok(ContractTools {
        schemathesis: bin.join("st"),
        openapi_spec_validator: bin.join("openapi-spec-validator"),
    })
}

/// Which tools a command needs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Need {
    /// Enough to build the frontend.
    Build,
    /// Also a browser and its driver, for the browser tests.
    Everything,
}

/// Where the tools are, once present.
#[derive(Debug)]
pub struct Toolchain {
    /// `PATH` with cargo's bin folder and the npm tools folder first.
    pub path: OsString,
    pub browser: Option<Browser>,
    /// kubectl, for the simulator's kubectl tests.
    pub kubectl: Option<PathBuf>,
}

#[derive(Debug)]
pub struct Browser {
    pub chromium: PathBuf,
    pub chromedriver: PathBuf,
    /// axe-core's `axe.min.js`, injected into every page the browser tests check.
    pub axe: PathBuf,
}

impl Toolchain {
    /// Checks every tool `need` asks for and installs the missing ones.
    pub fn ensure(root: &Path, need: Need) -> anyhow::Result<Self> {
        let tools_dir = tools_dir();
        let path = search_path(&[cargo_bin(), tools_dir.join("node_modules/.bin")]);

        ensure_wasm_target()?;
        let wasm_bindgen = wasm_bindgen_version(root)?;
        ensure_cargo_tool(
            &path,
            "wasm-bindgen",
            "wasm-bindgen-cli",
            &wasm_bindgen,
            &[],
        )?;
        ensure_wasm_opt(&path, &tools_dir)?;
        let (browser, kubectl) = match need {
            Need::Build => (None, None),
            Need::Everything => {
                ensure_cargo_tool(
                    &path,
                    "cargo-nextest",
                    "cargo-nextest",
                    NEXTEST_VERSION,
                    &["--locked"],
                )?;
                ensure_poppler()?;
                (
                    Some(ensure_browser(&path, &tools_dir)?),
                    Some(ensure_kubectl(&path)?),
                )
            }
        };
        Ok(Self {
            path,
            browser,
            kubectl,
        })
    }
}

fn tools_dir() -> PathBuf {
    std::env::var_os("TOWER_TOOLS_DIR")
        .map_or_else(|| home().join(".cache/tower-tools"), PathBuf::from)
}

fn home() -> PathBuf {
    std::env::var_os("HOME").map_or_else(|| PathBuf::from("/root"), PathBuf::from)
}

fn cargo_bin() -> PathBuf {
    std::env::var_os("CARGO_HOME")
        .map_or_else(|| home().join(".cargo"), PathBuf::from)
        .join("bin")
}

fn search_path(first: &[PathBuf]) -> OsString {
    let rest = std::env::var_os("PATH").unwrap_or_default();
    let all = first.iter().cloned().chain(std::env::split_paths(&rest));
    std::env::join_paths(all).unwrap_or(rest)
}

/// The first line a tool prints for `--version`, found on our `PATH`.
fn version_line(path: &OsString, program: &str) -> Option<String> {
    let found = which(path, program)?;
    let out = steps::output(Command::new(found).env("PATH", path).arg("--version"))?;
    Some(out.lines().next().unwrap_or_default().to_owned())
}

/// Looks `program` up in `path` (Command::new looks in the parent's PATH, not the child's).
fn which(path: &OsString, program: &str) -> Option<PathBuf> {
    std::env::split_paths(path)
        .map(|dir| dir.join(program))
        .find(|candidate| candidate.is_file())
}

fn ensure_wasm_target() -> anyhow::Result<()> {
    ensure_rust_target("wasm32-unknown-unknown")
}

/// `rustup target add target` unless it is installed.
fn ensure_rust_target(target: &str) -> anyhow::Result<()> {
    let installed = steps::output(Command::new("rustup").args(["target", "list", "--installed"]))
        .unwrap_or_default();
    if installed.lines().any(|l| l.trim() == target) {
        return Ok(());
    }
    steps::run(
        &format!("install the {target} target"),
        Command::new("rustup").args(["target", "add", target]),
    )
}

/// What `cargo xtask image` needs: the musl target, Debian's `musl-tools` (`musl-gcc`, for
/// the C in ring and SQLite), `umoci` (writes the OCI image) and `ca-certificates` (the
/// image's trust roots).
pub fn ensure_image_tools(target: &str) -> anyhow::Result<()> {
    ensure_rust_target(target)?;
    let system = std::env::var_os("PATH").unwrap_or_default();
    let missing = which(&system, "musl-gcc").is_none()
        || which(&system, "umoci").is_none()
        || !Path::new(crate::image::CA_BUNDLE).is_file();
    if missing {
        apt_install(&["musl-tools", "umoci", "ca-certificates"])?;
    }
    for program in ["musl-gcc", "umoci"] {
        which(&system, program)
            .with_context(|| format!("{program} is still missing after apt-get install"))?;
    }
    Ok(())
}

/// Installs `krate@version` with cargo unless `program --version` already names `version`.
fn ensure_cargo_tool(
    path: &OsString,
    program: &str,
    krate: &str,
    version: &str,
    extra: &[&str],
) -> anyhow::Result<()> {
    let found = version_line(path, program);
    if found
        .as_deref()
        .is_some_and(|line| line.split_whitespace().any(|w| w == version))
    {
        return Ok(());
    }
    println!(
        "xtask: {program} {version} is needed (found: {}); installing with cargo — this takes minutes, once per machine",
        found.as_deref().unwrap_or("none")
    );
    steps::run(
        &format!("install {krate}@{version}"),
        Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()))
            .args(["install", "--force"])
            .args(extra)
            .arg(format!("{krate}@{version}")),
    )
}

/// The `wasm-bindgen` version Cargo.lock resolved; the CLI must match it exactly.
fn wasm_bindgen_version(root: &Path) -> anyhow::Result<String> {
    let lock = std::fs::read_to_string(root.join("Cargo.lock")).context("reading Cargo.lock")?;
    let mut lines = lock.lines();
    while let Some(line) = lines.next() {
        if line.trim() == "name = \"wasm-bindgen\"" {
            if let Some(version) = lines
                .next()
                .and_then(|l| l.trim().strip_prefix("version = \""))
                .and_then(|v| v.strip_suffix('"'))
            {
                return Ok(version.to_owned());
            }
        }
    }
    bail!("Cargo.lock has no wasm-bindgen package")
}

fn ensure_wasm_opt(path: &OsString, tools_dir: &Path) -> anyhow::Result<()> {
    let ours = tools_dir.join("node_modules/.bin/wasm-opt");
    let version = steps::output(Command::new(&ours).arg("--version")).unwrap_or_default();
    if version.contains(&format!("version {BINARYEN_VERSION}")) {
        return Ok(());
    }
    if which(path, "npm").is_none() {
        apt_install(&["nodejs", "npm"])?;
    }
    std::fs::create_dir_all(tools_dir)
        .with_context(|| format!("creating {}", tools_dir.display()))?;
    steps::run(
        &format!("install wasm-opt (npm binaryen@{BINARYEN_VERSION})"),
        Command::new("npm")
            .args(["install", "--no-audit", "--no-fund", "--prefix"])
            .arg(tools_dir)
            .arg(format!("binaryen@{BINARYEN_VERSION}")),
    )
}

/// The npm package `name@version` in the tools folder (installed when missing or another
/// version); its folder.
fn ensure_npm_package(
    path: &OsString,
    tools_dir: &Path,
    name: &str,
    version: &str,
) -> anyhow::Result<PathBuf> {
    let folder = tools_dir.join("node_modules").join(name);
    let installed = std::fs::read_to_string(folder.join("package.json"))
        .ok()
        .and_then(|text| serde_json::from_str::<serde_json::Value>(&text).ok())
        .and_then(|package| package["version"].as_str().map(str::to_owned));
    if installed.as_deref() == Some(version) {
        return Ok(folder);
    }
    if which(path, "npm").is_none() {
        apt_install(&["nodejs", "npm"])?;
    }
    std::fs::create_dir_all(tools_dir)
        .with_context(|| format!("creating {}", tools_dir.display()))?;
    steps::run(
        &format!("install {name}@{version} (npm)"),
        Command::new("npm")
            .args(["install", "--no-audit", "--no-fund", "--prefix"])
            .arg(tools_dir)
            .arg(format!("{name}@{version}")),
    )?;
    Ok(folder)
}

fn ensure_browser(path: &OsString, tools_dir: &Path) -> anyhow::Result<Browser> {
    let axe = ensure_npm_package(path, tools_dir, "axe-core", AXE_VERSION)?.join("axe.min.js");
    anyhow::ensure!(
        axe.is_file(),
        "{} is missing after npm install",
        axe.display()
    );
    let find = |names: &[&str]| {
        let path = std::env::var_os("PATH").unwrap_or_default();
        names.iter().find_map(|n| which(&path, n))
    };
    if let (Some(chromium), Some(chromedriver)) = (
        find(&["chromium", "chromium-browser"]),
        find(&["chromedriver"]),
    ) {
        return Ok(Browser {
            chromium,
            chromedriver,
            axe,
        });
    }
    apt_install(&["chromium", "chromium-driver"])?;
    match (find(&["chromium"]), find(&["chromedriver"])) {
        (Some(chromium), Some(chromedriver)) => Ok(Browser {
            chromium,
            chromedriver,
            axe,
        }),
        _ => bail!("chromium and chromedriver are still missing after apt-get install"),
    }
}

/// poppler's `pdftotext` and `pdftoppm` (Debian's `poppler-utils`): the release record
/// tests read an exported PDF's text and keep a picture of its first page.
fn ensure_poppler() -> anyhow::Result<()> {
    let system = std::env::var_os("PATH").unwrap_or_default();
    if which(&system, "pdftotext").is_some() && which(&system, "pdftoppm").is_some() {
        return Ok(());
    }
    apt_install(&["poppler-utils"])?;
    which(&system, "pdftotext")
        .map(drop)
        .context("pdftotext is still missing after apt-get install poppler-utils")
}

/// kubectl on `PATH`, else Debian's `kubernetes-client` (installed only when there is no
/// kubectl at all: it cannot be installed beside an image's own).
fn ensure_kubectl(path: &OsString) -> anyhow::Result<PathBuf> {
    let system = std::env::var_os("PATH").unwrap_or_default();
    if let Some(found) = which(path, "kubectl").or_else(|| which(&system, "kubectl")) {
        return Ok(found);
    }
    apt_install(&["kubernetes-client"])?;
    which(&system, "kubectl").context("kubectl is still missing after apt-get install")
}

fn apt_install(packages: &[&str]) -> anyhow::Result<()> {
    let as_root = steps::output(Command::new("id").arg("-u")).is_some_and(|u| u.trim() == "0");
    let apt = |args: &[&str]| {
        let mut command = if as_root {
            Command::new("apt-get")
        } else {
            let mut sudo = Command::new("sudo");
            sudo.arg("apt-get");
            sudo
        };
        command.env("DEBIAN_FRONTEND", "noninteractive").args(args);
        command
    };
    steps::run("apt-get update", &mut apt(&["update", "-q"]))?;
    let mut install = apt(&["install", "-y", "-q"]);
    install.args(packages);
    steps::run(
        &format!("apt-get install {}", packages.join(" ")),
        &mut install,
    )
}

/// The PostgreSQL cluster the history tests run against: Debian's `postgresql` (installed
/// when missing), a cluster of its own named `tower` on loopback port 54329 (so an existing
/// `main` cluster is left alone), started through `pg_ctlcluster` (the server refuses to
/// run as root), with a `tower` role that may create databases. Returns its URL.
pub fn ensure_postgres() -> anyhow::Result<String> {
    const PORT: &str = "54329";
    if !Path::new("/usr/bin/pg_ctlcluster").exists() {
        apt_install(&["postgresql"])?;
    }
    let version = std::fs::read_dir("/usr/lib/postgresql")
        .context("reading /usr/lib/postgresql")?
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .max()
        .context("no PostgreSQL server under /usr/lib/postgresql")?
        .to_string();
    let as_root = steps::output(Command::new("id").arg("-u")).is_some_and(|u| u.trim() == "0");
    let privileged = |program: &str| {
        if as_root {
            Command::new(program)
        } else {
            let mut sudo = Command::new("sudo");
            sudo.arg(program);
            sudo
        }
    };
    let clusters = steps::output(&mut privileged("pg_lsclusters")).unwrap_or_default();
    let line = clusters
        .lines()
        .find(|l| l.split_whitespace().nth(1) == Some("tower"));
    match line {
        None => steps::run(
            "pg_createcluster tower",
            privileged("pg_createcluster").args([
                &version,
                "tower",
                "--port",
                PORT,
                "--start",
                "--",
                "--auth-host=scram-sha-256",
            ]),
        )?,
        Some(line) if !line.contains("online") => steps::run(
            "pg_ctlcluster start tower",
            privileged("pg_ctlcluster").args([&version, "tower", "start"]),
        )?,
        Some(_) => {}
    }
    let sql = "DO $$ BEGIN \
               IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'tower') THEN \
               CREATE ROLE tower LOGIN CREATEDB PASSWORD 'tower'; END IF; END $$;";
    steps::run(
        "create the tower role",
        privileged("runuser").args(["-u", "postgres", "--", "psql", "-q", "-p", PORT, "-c", sql]),
    )?;
    Ok(format!("postgres://tower:tower@127.0.0.1:{PORT}/postgres"))
}

/// A real Backstage backend for the catalog tests: the team's `backstage-partner` scripts
/// (`$TOWER_BACKSTAGE_PARTNER`, else `shared/tools/backstage-partner` in a folder above the
/// checkout, else `/work/shared/…`), installed once into the tools folder with their
/// `setup.sh` (npm; about 2–3 minutes). Returns (scripts folder, install folder).
pub fn ensure_backstage_partner(root: &Path) -> anyhow::Result<(PathBuf, PathBuf)> {
    let wanted = Path::new("shared/tools/backstage-partner");
    let scripts = std::env::var_os("TOWER_BACKSTAGE_PARTNER")
        .map(PathBuf::from)
        .into_iter()
        .chain(root.ancestors().skip(1).map(|dir| dir.join(wanted)))
        .chain([Path::new("/work").join(wanted)])
        .find(|dir| dir.join("run.sh").is_file() && dir.join("setup.sh").is_file())
        .context(
            "the backstage-partner scripts were not found beside the checkout; \
             set TOWER_BACKSTAGE_PARTNER to their folder",
        )?;
    let install = tools_dir().join("backstage-partner");
    if !install
        .join("node_modules/@backstage/backend-defaults")
        .is_dir()
    {
        let path = std::env::var_os("PATH").unwrap_or_default();
        if which(&path, "npm").is_none() {
            apt_install(&["nodejs", "npm"])?;
        }
        if ["make", "g++", "python3"]
            .iter()
            .any(|p| which(&path, p).is_none())
        {
            apt_install(&["make", "g++", "python3"])?;
        }
        steps::run(
            "backstage-partner setup (npm install, once per machine)",
            Command::new("bash")
                .arg(scripts.join("setup.sh"))
                .arg(&install),
        )?;
    }
    Ok((scripts, install))
}
