//! The two commands every developer and CI runs:
//!
//! - `cargo xtask demo [-- ARGS]` — installs what is missing, builds the frontend and runs
//!   `tower demo ARGS` (default port 8080; `-- --port 0` picks a free one).
//! - `cargo xtask test` — installs what is missing, then runs every check: rustfmt, clippy
//!   (native, and wasm32 for `shared` and `frontend`), the frontend release build with its
//!   size report, and all Rust tests including the browser tests.
//!
//! Also: `cargo xtask setup` (install tools only), `cargo xtask frontend` (build only) and
//! `cargo xtask image` (the OCI image: [`image`]; `cargo xtask test` builds and checks it too).
//!
//! Module map: [`tools`] finds or installs the toolchain pieces; [`frontend`] builds the frontend (split into a first load and a chunk per tab) and
//! measures the bundle; [`image`] writes the OCI image; [`steps`] runs a command as a named step.

#![allow(clippy::print_stdout)]

mod frontend;
mod image;
mod steps;
mod tools;

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Context};

const USAGE: &str =
    "usage: cargo xtask <demo [-- TOWER-DEMO-ARGS] | test | setup | frontend | image>";

fn main() -> std::process::ExitCode {
    match run() {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("xtask: {err:#}");
            std::process::ExitCode::FAILURE
        }
    }
}

fn run() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let root = workspace_root();
    match args.first().map(String::as_str) {
        Some("demo") => demo(&root, &args[1..]),
        Some("test") => test(&root),
        Some("setup") => {
            tools::Toolchain::ensure(&root, tools::Need::Everything)?;
            Ok(())
        }
        Some("frontend") => {
            let toolchain = tools::Toolchain::ensure(&root, tools::Need::Build)?;
            frontend::build(&root, &toolchain)?;
            Ok(())
        }
        Some("image") => {
            let toolchain = tools::Toolchain::ensure(&root, tools::Need::Build)?;
            frontend::build(&root, &toolchain)?;
            image::build(&root)?;
            Ok(())
        }
        Some(other) => bail!("unknown command `{other}`\n{USAGE}"),
        None => bail!("{USAGE}"),
    }
}

/// The workspace root: two levels above this crate.
fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .ancestors()
        .nth(2)
        .map_or_else(|| PathBuf::from("."), Path::to_path_buf)
}

fn cargo() -> Command {
    Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()))
}

fn demo(root: &Path, args: &[String]) -> anyhow::Result<()> {
    let toolchain = tools::Toolchain::ensure(root, tools::Need::Build)?;
    frontend::build(root, &toolchain)?;
    let tower_args = match args.first().map(String::as_str) {
        Some("--") => &args[1..],
        _ => args,
    };
    let mut run = cargo();
    run.current_dir(root)
        .args([
            "run",
            "--profile",
            "server",
            "--package",
            "tower-backend",
            "--bin",
        ])
        .args(["tower", "--", "demo", "--dist"])
        .arg(root.join("dist"))
        .args(tower_args);
    steps::run("tower demo", &mut run)
}

/// The instant every test world starts at: `TOWER_TEST_START` when set (RFC 3339, to rerun
/// a failure at the instant it happened), else `tests/pinned-start`.
fn test_start() -> anyhow::Result<String> {
    const PINNED: &str = include_str!("../../../tests/pinned-start");
    let (start, from) = match std::env::var("TOWER_TEST_START") {
        Ok(start) => (start, "TOWER_TEST_START"),
        Err(_) => (PINNED.trim().to_owned(), "tests/pinned-start"),
    };
    chrono::DateTime::parse_from_rfc3339(start.trim())
        .with_context(|| format!("{from}={start:?} is not an RFC 3339 time"))?;
    Ok(start.trim().to_owned())
}

fn test(root: &Path) -> anyhow::Result<()> {
    let started = std::time::Instant::now();
    let start = test_start()?;
    println!(
        "xtask: every test world starts at {start} (rerun at another instant: TOWER_TEST_START=<RFC 3339> cargo xtask test)"
    );
    let toolchain = tools::Toolchain::ensure(root, tools::Need::Everything)?;
    let browser = toolchain
        .browser
        .as_ref()
        .context("the browser tests need chromium and chromedriver")?;

    steps::run(
        "rustfmt",
        cargo()
            .current_dir(root)
            .args(["fmt", "--all", "--", "--check"]),
    )?;
    steps::run(
        "clippy (native)",
        cargo().current_dir(root).args([
            "clippy",
            "--locked",
            "--workspace",
            "--exclude",
            "tower-frontend",
            "--all-targets",
            "--",
            "-D",
            "warnings",
        ]),
    )?;
    steps::run(
        "clippy (wasm32: shared, frontend)",
        cargo().current_dir(root).args([
            "clippy",
            "--locked",
            "--target",
            "wasm32-unknown-unknown",
            "--package",
            "tower-shared",
            "--package",
            "tower-frontend",
            "--",
            "-D",
            "warnings",
        ]),
    )?;
    let bundle = frontend::build(root, &toolchain)?;
    bundle.check_budget()?;
    let image = image::build(root)?;
    let postgres = tools::ensure_postgres()?;
    let (partner_scripts, partner_install) = tools::ensure_backstage_partner(root)?;
    let contract = tools::ensure_contract_tools()?;
    let kubectl = toolchain
        .kubectl
        .as_ref()
        .context("the simulator's tests need kubectl")?;
    steps::run(
        "tests (cargo-nextest, each with a deadline: .config/nextest.toml)",
        cargo()
            .current_dir(root)
            .env("PATH", &toolchain.path)
            .env("KUBECTL", kubectl)
            .env("TOWER_DIST", root.join("dist"))
            .env("TOWER_IMAGE", &image.layout)
            .env("CHROMEDRIVER", &browser.chromedriver)
            .env("CHROMIUM", &browser.chromium)
            .env("TOWER_AXE", &browser.axe)
            .env("TOWER_SCHEMATHESIS", &contract.schemathesis)
            .env(
                "TOWER_OPENAPI_SPEC_VALIDATOR",
                &contract.openapi_spec_validator,
            )
            .env("TOWER_TEST_DATABASE_URL", &postgres)
            .env("TOWER_BACKSTAGE_PARTNER", &partner_scripts)
            .env("TOWER_BACKSTAGE_PARTNER_DIR", &partner_install)
            .env("TOWER_TEST_START", &start)
            .args([
                "nextest",
                "run",
                "--locked",
                "--workspace",
                "--exclude",
                "tower-frontend",
            ]),
    )
    .with_context(|| {
        format!(
            "the tests failed (browser screenshots, if any, are in target/screenshots/; \
             rerun at the same instant: TOWER_TEST_START={start} cargo xtask test)"
        )
    })?;
    steps::run(
        "doc tests",
        cargo().current_dir(root).args([
            "test",
            "--locked",
            "--doc",
            "--workspace",
            "--exclude",
            "tower-frontend",
        ]),
    )?;
    println!(
        "xtask: every check passed in {}s (test worlds started at {start})",
        started.elapsed().as_secs()
    );
    Ok(())
}
