//! The frontend release build: Trunk, then precompression and the size report.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Context};

use crate::steps;
use crate::tools::Toolchain;

/// The brotli size the release `.wasm` must stay under.
pub const WASM_BROTLI_BUDGET: u64 = 400 * 1024;

/// What the build produced.
#[derive(Debug)]
pub struct Bundle {
    pub wasm: PathBuf,
    pub raw_bytes: u64,
    pub brotli_bytes: u64,
    pub gzip_bytes: u64,
}

impl Bundle {
    pub fn check_budget(&self) -> anyhow::Result<()> {
        if self.brotli_bytes > WASM_BROTLI_BUDGET {
            bail!(
                "the release .wasm is {} bytes brotli, over the {WASM_BROTLI_BUDGET}-byte budget",
                self.brotli_bytes
            );
        }
        Ok(())
    }
}

/// Runs `trunk build --release --offline` into `dist/`, writes `.br` and `.gz` beside each
/// text and wasm file (served by the backend to clients that accept them), and prints the
/// `.wasm` size raw, brotli and gzip.
pub fn build(root: &Path, toolchain: &Toolchain) -> anyhow::Result<Bundle> {
    steps::run(
        "frontend release build (trunk)",
        Command::new("trunk")
            .current_dir(root)
            .env("PATH", &toolchain.path)
            // Trunk reads NO_COLOR as a bool and rejects other values some terminals set.
            .env_remove("NO_COLOR")
            .args(["build", "--release", "--offline"]),
    )?;
    let dist = root.join("dist");
    let mut wasm = None;
    for entry in std::fs::read_dir(&dist).with_context(|| format!("reading {}", dist.display()))? {
        let path = entry?.path();
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
        if ext == "wasm" {
            wasm = Some(Bundle {
                wasm: path,
                raw_bytes: len(&bytes),
                brotli_bytes: len(&br),
                gzip_bytes: len(&gz),
            });
        }
    }
    let bundle = wasm.context("trunk produced no .wasm in dist/")?;
    println!(
        "frontend: {} — {} bytes raw, {} bytes brotli ({:.1} KiB), {} bytes gzip",
        bundle
            .wasm
            .file_name()
            .unwrap_or_default()
            .to_string_lossy(),
        bundle.raw_bytes,
        bundle.brotli_bytes,
        kib(bundle.brotli_bytes),
        bundle.gzip_bytes,
    );
    Ok(bundle)
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
