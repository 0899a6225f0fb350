//! `cargo xtask image`: Tower as an OCI image, written with Debian's `umoci` (no container
//! engine needed, none runs here).
//!
//! One layer on an empty base (distroless-style): the static `tower` binary (musl, the
//! frontend compiled in with `--features embed-dist`), `/etc/passwd` and `/etc/group` naming
//! the non-root user 65532, Debian's CA bundle, and writable-by-mount `/tmp` and
//! `/var/lib/tower`. The config runs `tower serve --config /etc/tower/tower.yaml` as 65532
//! on port 8080, as `deploy/base/deployment.yaml` does. `tests/it/image.rs` inspects the
//! layout and runs the very binary it holds.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::Context;

use crate::steps;

/// The target the shipped binary is built for: static, no libc on the base.
pub const TARGET: &str = "x86_64-unknown-linux-musl";
/// Debian's CA bundle (`ca-certificates`), copied into the image.
pub const CA_BUNDLE: &str = "/etc/ssl/certs/ca-certificates.crt";
/// The image's tag inside the layout.
pub const TAG: &str = "tower";
/// The non-root user the image runs as (the Deployment's `runAsUser` too).
const USER: u32 = 65_532;

/// What the build produced.
#[derive(Debug)]
pub struct Image {
    /// The OCI image layout (`<layout>:tower`).
    pub layout: PathBuf,
    pub binary_bytes: u64,
    /// The layers' blobs as stored (gzip): what a registry holds and a node pulls.
    pub layer_bytes: u64,
}

/// Builds the static binary (the frontend in `dist/` must be built) and writes the image
/// layout under the cargo target dir, replacing an older one.
pub fn build(root: &Path) -> anyhow::Result<Image> {
    crate::tools::ensure_image_tools(TARGET)?;
    let target_dir =
        std::env::var_os("CARGO_TARGET_DIR").map_or_else(|| root.join("target"), PathBuf::from);
    steps::run(
        "static tower binary (musl, frontend compiled in)",
        crate::cargo()
            .current_dir(root)
            .env("CC_x86_64_unknown_linux_musl", "musl-gcc")
            .args([
                "build",
                "--locked",
                "--profile",
                "image",
                "--target",
                TARGET,
            ])
            .args(["--package", "tower-backend", "--bin", "tower"])
            .args(["--features", "embed-dist"]),
    )?;
    let binary = target_dir.join(TARGET).join("image").join("tower");

    let work = target_dir.join("image");
    let rootfs = work.join("rootfs");
    let layout = work.join("oci");
    for old in [&rootfs, &layout] {
        if old.exists() {
            std::fs::remove_dir_all(old).with_context(|| format!("removing {}", old.display()))?;
        }
    }
    stage(&rootfs, &binary)?;

    let image = format!("{}:{TAG}", layout.display());
    let umoci = |name: &str, args: &[&str]| steps::run(name, Command::new("umoci").args(args));
    umoci(
        "umoci init",
        &["init", "--layout", &layout.to_string_lossy()],
    )?;
    umoci("umoci new", &["new", "--image", &image])?;
    umoci(
        "umoci insert (the one layer)",
        &[
            "insert",
            "--image",
            &image,
            "--history.created_by",
            "cargo xtask image",
            &rootfs.to_string_lossy(),
            "/",
        ],
    )?;
    let version = workspace_field(root, "version")?;
    let licenses = workspace_field(root, "license")?;
    let mut config: Vec<String> = [
        "config",
        "--image",
        &image,
        "--os",
        "linux",
        "--architecture",
        "amd64",
        "--config.user",
        &format!("{USER}:{USER}"),
        "--config.entrypoint",
        "/usr/local/bin/tower",
        "--config.workingdir",
        "/var/lib/tower",
        "--config.exposedports",
        "8080/tcp",
        "--config.env",
        "SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt",
        "--history.created_by",
        "cargo xtask image",
    ]
    .map(str::to_owned)
    .to_vec();
    for arg in ["serve", "--config", "/etc/tower/tower.yaml"] {
        config.extend(["--config.cmd".to_owned(), arg.to_owned()]);
    }
    let mut labels = vec![
        ("org.opencontainers.image.title", "tower".to_owned()),
        (
            "org.opencontainers.image.description",
            "Tower, the delivery console of the Hangar platform".to_owned(),
        ),
        ("org.opencontainers.image.version", version),
        ("org.opencontainers.image.licenses", licenses),
    ];
    // The commit, when built from a Git checkout (never made up).
    if let Some(commit) = steps::output(
        Command::new("git")
            .current_dir(root)
            .args(["rev-parse", "HEAD"]),
    ) {
        labels.push((
            "org.opencontainers.image.revision",
            commit.trim().to_owned(),
        ));
    }
    for (key, value) in labels {
        config.extend(["--config.label".to_owned(), format!("{key}={value}")]);
    }
    steps::run("umoci config", Command::new("umoci").args(&config))?;
    umoci("umoci gc", &["gc", "--layout", &layout.to_string_lossy()])?;

    let built = Image {
        binary_bytes: std::fs::metadata(&binary)?.len(),
        layer_bytes: layer_bytes(&layout)?,
        layout,
    };
    println!(
        "image: {image} — binary {} bytes, layers {} bytes (gzip, as pulled)",
        built.binary_bytes, built.layer_bytes
    );
    Ok(built)
}

/// The image's files, owned by root (the binary) or the user (its work folder).
fn stage(rootfs: &Path, binary: &Path) -> anyhow::Result<()> {
    use std::os::unix::fs::PermissionsExt as _;
    let put = |path: &str, bytes: &[u8], mode: u32| -> anyhow::Result<()> {
        let file = rootfs.join(path);
        if let Some(dir) = file.parent() {
            std::fs::create_dir_all(dir)?;
        }
        std::fs::write(&file, bytes).with_context(|| format!("writing {}", file.display()))?;
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(mode))?;
        Ok(())
    };
    let tower = std::fs::read(binary).with_context(|| format!("reading {}", binary.display()))?;
    put("usr/local/bin/tower", &tower, 0o755)?;
    put(
        "etc/passwd",
        format!("root:x:0:0:root:/root:/sbin/nologin\ntower:x:{USER}:{USER}:tower:/var/lib/tower:/sbin/nologin\n")
            .as_bytes(),
        0o644,
    )?;
    put(
        "etc/group",
        format!("root:x:0:\ntower:x:{USER}:\n").as_bytes(),
        0o644,
    )?;
    let roots = std::fs::read(CA_BUNDLE).with_context(|| format!("reading {CA_BUNDLE}"))?;
    put("etc/ssl/certs/ca-certificates.crt", &roots, 0o644)?;
    let tmp = rootfs.join("tmp");
    std::fs::create_dir_all(&tmp)?;
    std::fs::set_permissions(&tmp, std::fs::Permissions::from_mode(0o1777))?;
    let home = rootfs.join("var/lib/tower");
    std::fs::create_dir_all(&home)?;
    std::fs::set_permissions(&home, std::fs::Permissions::from_mode(0o750))?;
    std::os::unix::fs::chown(&home, Some(USER), Some(USER))
        .with_context(|| format!("giving {} to {USER}", home.display()))?;
    Ok(())
}

/// `key` of `[workspace.package]` in the root `Cargo.toml` (a string).
fn workspace_field(root: &Path, key: &str) -> anyhow::Result<String> {
    let manifest = std::fs::read_to_string(root.join("Cargo.toml"))?;
    let prefix = format!("{key} = ");
    manifest
        .split("[workspace.package]")
        .nth(1)
        .and_then(|section| {
            section
                .lines()
                .take_while(|l| !l.starts_with('['))
                .find_map(|l| l.trim().strip_prefix(prefix.as_str()))
        })
        .map(|v| v.trim_matches('"').to_owned())
        .with_context(|| format!("no [workspace.package] {key} in Cargo.toml"))
}

/// The summed sizes of the image's layers, as its manifest lists them.
fn layer_bytes(layout: &Path) -> anyhow::Result<u64> {
    let blob = |digest: &str| -> anyhow::Result<serde_json::Value> {
        let hex = digest.strip_prefix("sha256:").context("a sha256 digest")?;
        let text = std::fs::read_to_string(layout.join("blobs/sha256").join(hex))?;
        Ok(serde_json::from_str(&text)?)
    };
    let index: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(layout.join("index.json"))?)?;
    let manifest = index["manifests"]
        .as_array()
        .and_then(|m| m.first())
        .and_then(|m| m["digest"].as_str())
        .context("index.json lists no manifest")?;
    let manifest = blob(manifest)?;
    Ok(manifest["layers"]
        .as_array()
        .context("a manifest without layers")?
        .iter()
        .filter_map(|l| l["size"].as_u64())
        .sum())
}
