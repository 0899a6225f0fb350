//! The frontend release build, split into a first load and one chunk per tab:
//!
//! 1. `cargo build --release --target wasm32-unknown-unknown -p tower-frontend`, linked with
//!    `--emit-relocs` (`.cargo/config.toml`) so the module can be cut apart;
//! 2. `wasm_split_cli_support` cuts it at the split points (`frontend/src/tabs/mod.rs`): the
//!    main module, a `split_<tab>.wasm` per tab, the `chunk_<n>.wasm` several tabs share, and
//!    `__wasm_split.js`, which fetches a tab's chunks when its code is first called;
//! 3. `wasm-bindgen --target web` makes the main module's JS (`tower.js`, `tower_bg.wasm`);
//! 4. `wasm-opt -Oz` shrinks every module;
//! 5. everything goes into `dist/app-<hash>/` (the hash of its contents, so a new build is a
//!    new folder and every file in it may be cached for good), with `style.css`, and
//!    `dist/index.html` loads it; `.br` and `.gz` twins are written beside each file.
//!
//! Trunk built the frontend before; it cannot split a module (trunk-rs/trunk#1022), so this
//! is the whole build now (`docs/frontend-build.md`). The size report names the first load
//! (what the fleet page fetches before it draws) and every tab's chunks, each with a budget.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Context};

use crate::steps;
use crate::tools::Toolchain;

/// What the fleet page may fetch before it draws, brotli: `index.html`, the stylesheet, the
/// main module and its JS, and the chunk loader.
pub const FIRST_LOAD_BUDGET: u64 = 200 * 1024;
/// What opening one part loaded later (a tab, the fleet's panels) may fetch besides the
/// first load, brotli.
pub const TAB_BUDGET: u64 = 150 * 1024;

/// The file in `dist/` naming each part's files (`{"releases": ["/app-…/split_releases.wasm", …]}`).
const PARTS: &str = "parts.json";

/// The bundle's folder under `dist/`, and the main module's name in it.
const MAIN: &str = "tower";

/// One file of the bundle and its sizes.
#[derive(Clone, Debug)]
pub struct Sized {
    pub name: String,
    pub raw: u64,
    pub brotli: u64,
}

/// What the build produced.
#[derive(Debug)]
pub struct Bundle {
    /// What the first load fetches, in the order the page asks for it.
    pub first_load: Vec<Sized>,
    /// Each part's chunks (its own and those it shares), by its split name.
    pub tabs: BTreeMap<String, Vec<Sized>>,
}

fn total(files: &[Sized]) -> u64 {
    files.iter().map(|f| f.brotli).sum()
}

impl Bundle {
    /// The first load's brotli bytes.
    pub fn first_load_brotli(&self) -> u64 {
        total(&self.first_load)
    }

    /// Fails naming what is over its budget.
    pub fn check_budget(&self) -> anyhow::Result<()> {
        let mut over = Vec::new();
        if self.first_load_brotli() > FIRST_LOAD_BUDGET {
            over.push(format!(
                "the first load is {} bytes brotli, over its {FIRST_LOAD_BUDGET}",
                self.first_load_brotli()
            ));
        }
        for (tab, files) in &self.tabs {
            if total(files) > TAB_BUDGET {
                over.push(format!(
                    "the {tab} part's chunks are {} bytes brotli, over their {TAB_BUDGET}",
                    total(files)
                ));
            }
        }
        if !over.is_empty() {
            bail!("the frontend is over budget: {}", over.join("; "));
        }
        Ok(())
    }

    fn report(&self) {
        println!(
            "frontend: first load {} bytes brotli ({:.1} KiB of {:.0}): {}",
            self.first_load_brotli(),
            kib(self.first_load_brotli()),
            kib(FIRST_LOAD_BUDGET),
            self.first_load
                .iter()
                .map(|f| format!("{} {} ({} raw)", f.name, f.brotli, f.raw))
                .collect::<Vec<_>>()
                .join(", ")
        );
        for (tab, files) in &self.tabs {
            println!(
                "frontend: {tab} part {} bytes brotli ({:.1} KiB of {:.0}) in {} chunks",
                total(files),
                kib(total(files)),
                kib(TAB_BUDGET),
                files.len()
            );
        }
        if let Some((tab, files)) = self.tabs.iter().max_by_key(|(_, files)| total(files)) {
            println!(
                "frontend: the largest part is {tab}, {} bytes brotli ({:.1} KiB)",
                total(files),
                kib(total(files))
            );
        }
    }
}

/// Builds the frontend into `dist/` and reports its sizes.
pub fn build(root: &Path, toolchain: &Toolchain) -> anyhow::Result<Bundle> {
    let target_dir = target_dir(root);
    steps::run(
        "frontend release build (cargo, wasm32)",
        Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()))
            .current_dir(root)
            .env("CARGO_TARGET_DIR", &target_dir)
            .args([
                "build",
                "--locked",
                "--release",
                "--target",
                "wasm32-unknown-unknown",
                "--package",
                "tower-frontend",
            ]),
    )?;
    let input = target_dir.join("wasm32-unknown-unknown/release/tower-frontend.wasm");
    let work = target_dir.join("frontend-split");
    if work.exists() {
        std::fs::remove_dir_all(&work).with_context(|| format!("removing {}", work.display()))?;
    }
    let split_dir = work.join("split");
    let out = work.join("out");
    std::fs::create_dir_all(&out)?;

    let wasm = std::fs::read(&input).with_context(|| format!("reading {}", input.display()))?;
    let main_wasm = split_dir.join("main.wasm");
    let main_js = format!("./{MAIN}.js");
    let split = steps::timed(
        "split the module at the tabs (wasm_split_cli_support)",
        || {
            wasm_split_cli_support::transform({
                let mut options = wasm_split_cli_support::Options::new(&wasm);
                options.output_dir = &split_dir;
                options.main_out_path = &main_wasm;
                options.main_module = &main_js;
                options
            })
            .map_err(|err| anyhow::anyhow!("{err:#}"))
        },
    )?;

    steps::run(
        "wasm-bindgen (main module)",
        Command::new("wasm-bindgen")
            .env("PATH", &toolchain.path)
            .arg(&main_wasm)
            .args(["--target", "web", "--keep-lld-exports", "--no-demangle"])
            .args(["--out-name", MAIN, "--no-typescript", "--out-dir"])
            .arg(&out),
    )?;
    for entry in std::fs::read_dir(&split_dir)? {
        let path = entry?.path();
        let name = file_name(&path);
        if name != "main.wasm" {
            std::fs::copy(&path, out.join(&name))?;
        }
    }
    std::fs::copy(root.join("frontend/style.css"), out.join("style.css"))?;
    let modules: Vec<PathBuf> = files_under(&out)?
        .into_iter()
        .filter(|path| path.extension().is_some_and(|e| e == "wasm"))
        .collect();
    steps::timed(&format!("wasm-opt -Oz ({} modules)", modules.len()), || {
        for path in &modules {
            let done = Command::new("wasm-opt")
                .env("PATH", &toolchain.path)
                .args(["-Oz", "--quiet", "--strip-debug", "--strip-producers"])
                .args(["--enable-bulk-memory", "--enable-nontrapping-float-to-int"])
                .arg(path)
                .arg("-o")
                .arg(path)
                .status()
                .context("cannot start wasm-opt")?;
            if !done.success() {
                bail!("wasm-opt failed on {} ({done})", file_name(path));
            }
        }
        Ok(())
    })?;

    let folder = format!("app-{}", content_hash(&out)?);
    let dist = root.join("dist");
    if dist.exists() {
        std::fs::remove_dir_all(&dist).with_context(|| format!("removing {}", dist.display()))?;
    }
    std::fs::create_dir_all(&dist)?;
    let bundle_dir = dist.join(&folder);
    std::fs::rename(&out, &bundle_dir)
        .or_else(|_| copy_dir(&out, &bundle_dir))
        .with_context(|| format!("moving the bundle to {}", bundle_dir.display()))?;
    std::fs::write(dist.join("index.html"), index_html(root, &folder)?)?;

    let mut sizes = BTreeMap::new();
    for path in files_under(&dist)? {
        let ext = path
            .extension()
            .and_then(|e| e.to_str())
            .unwrap_or_default();
        if !matches!(ext, "wasm" | "js" | "css" | "html") {
            continue;
        }
        let bytes = std::fs::read(&path).with_context(|| format!("reading {}", path.display()))?;
        let br = brotli(&bytes)?;
        let gz = gzip(&bytes)?;
        std::fs::write(append_ext(&path, "br"), &br)?;
        std::fs::write(append_ext(&path, "gz"), &gz)?;
        let name = file_name(&path);
        sizes.insert(
            name.clone(),
            Sized {
                name,
                raw: len(&bytes),
                brotli: len(&br),
            },
        );
    }
    let take = |name: &str| {
        sizes
            .get(name)
            .cloned()
            .with_context(|| format!("the build wrote no {name}"))
    };
    // The main module: its JS, the chunks' loader it imports, the module.
    let main = [
        format!("{MAIN}.js"),
        "__wasm_split.js".to_owned(),
        format!("{MAIN}_bg.wasm"),
    ];
    let first_load = ["index.html", "style.css"]
        .iter()
        .copied()
        .chain(main.iter().map(String::as_str))
        .map(take)
        .collect::<anyhow::Result<Vec<_>>>()?;
    let mut tabs = BTreeMap::new();
    for (tab, chunks) in &split.prefetch_map {
        let files = chunks
            .iter()
            .map(|stem| take(&format!("{stem}.wasm")))
            .collect::<anyhow::Result<Vec<_>>>()?;
        tabs.insert(tab.trim_start_matches("split_").to_owned(), files);
    }
    if tabs.is_empty() {
        bail!("the module was not split: no tab has a chunk (are the split points gone?)");
    }
    // `parts.json`: what a page needs before it can draw — the main module's files (`main`)
    // and each part's own, as the page asks for them (`parts`) — for the server to preload
    // (`tower::assets::Dist::page_preloads`). The page asks for the main module only once its
    // masthead has painted (`index.html`), which suits the fleet; a page that names a view or
    // a service draws nothing until the module runs, so it must not wait for that.
    let parts = serde_json::json!({
        "main": main.map(|name| format!("/{folder}/{name}")),
        "parts": tabs
            .iter()
            .map(|(tab, files)| {
                let paths: Vec<String> =
                    files.iter().map(|file| format!("/{folder}/{}", file.name)).collect();
                (tab.as_str(), paths)
            })
            .collect::<BTreeMap<_, _>>(),
    });
    std::fs::write(dist.join(PARTS), serde_json::to_vec_pretty(&parts)?)?;
    let bundle = Bundle { first_load, tabs };
    bundle.report();
    Ok(bundle)
}

/// `frontend/index.html` with the bundle's folder filled in (`{app}`).
fn index_html(root: &Path, folder: &str) -> anyhow::Result<String> {
    let template = root.join("frontend/index.html");
    let text = std::fs::read_to_string(&template)
        .with_context(|| format!("reading {}", template.display()))?;
    if !text.contains("{app}") {
        bail!("{} names no {{app}} folder", template.display());
    }
    Ok(text.replace("{app}", folder))
}

/// The cargo target dir the build uses (the one CI keeps between runs when set).
fn target_dir(root: &Path) -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR").map_or_else(|| root.join("target"), PathBuf::from)
}

/// A short hash of every file in `dir` (names and contents, in name order).
fn content_hash(dir: &Path) -> anyhow::Result<String> {
    // FNV-1a, 64 bits: enough to tell two builds apart; not a security property.
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    let mut eat = |bytes: &[u8]| {
        for b in bytes {
            hash ^= u64::from(*b);
            hash = hash.wrapping_mul(0x0100_0000_01b3);
        }
    };
    let mut files = files_under(dir)?;
    files.sort();
    for path in files {
        eat(file_name(&path).as_bytes());
        eat(&std::fs::read(&path)?);
    }
    Ok(format!("{hash:016x}"))
}

fn files_under(dir: &Path) -> anyhow::Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).with_context(|| format!("reading {}", dir.display()))? {
        let path = entry?.path();
        if path.is_dir() {
            out.extend(files_under(&path)?);
        } else {
            out.push(path);
        }
    }
    Ok(out)
}

fn copy_dir(from: &Path, to: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(to)?;
    for entry in std::fs::read_dir(from)? {
        let path = entry?.path();
        std::fs::copy(&path, to.join(path.file_name().unwrap_or_default()))?;
    }
    Ok(())
}

fn file_name(path: &Path) -> String {
    path.file_name()
        .unwrap_or_default()
        .to_string_lossy()
        .into_owned()
}

fn len(bytes: &[u8]) -> u64 {
    u64::try_from(bytes.len()).unwrap_or(u64::MAX)
}

#[allow(clippy::cast_precision_loss)]
fn kib(bytes: u64) -> f64 {
    bytes as f64 / 1024.0
}

fn append_ext(path: &Path, ext: &str) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(".");
    name.push(ext);
    PathBuf::from(name)
}

fn brotli(bytes: &[u8]) -> anyhow::Result<Vec<u8>> {
    let mut out = Vec::new();
    {
        let mut writer = brotli::CompressorWriter::new(&mut out, 64 * 1024, 11, 22);
        writer.write_all(bytes)?;
        writer.flush()?;
    }
    Ok(out)
}

fn gzip(bytes: &[u8]) -> anyhow::Result<Vec<u8>> {
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    encoder.write_all(bytes)?;
    Ok(encoder.finish()?)
}
