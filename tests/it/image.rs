//! The OCI image `cargo xtask image` wrote (`TOWER_IMAGE`: its layout): no container engine
//! runs here, so the test reads the image as a registry or a node would — index, manifest,
//! config, every blob against its digest, the layer's files — and then runs the very binary
//! the layer holds, outside the image, serving the frontend compiled into it.

use std::collections::BTreeMap;
use std::io::Read as _;
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::support::{dist, Demo};

/// The image layout `cargo xtask test` built (`cargo xtask image` builds one by hand).
fn layout() -> PathBuf {
    let layout = std::env::var_os("TOWER_IMAGE").map(PathBuf::from).expect(
        "TOWER_IMAGE is not set: run `cargo xtask test` (it builds the image) or `cargo xtask image` and set TOWER_IMAGE to its layout",
    );
    assert!(
        layout.join("index.json").is_file(),
        "no image layout at {}",
        layout.display()
    );
    layout
}

/// A blob of the layout, checked against its digest.
fn blob(layout: &Path, digest: &str) -> Vec<u8> {
    let hex = digest.strip_prefix("sha256:").expect("a sha256 digest");
    let bytes = std::fs::read(layout.join("blobs/sha256").join(hex)).unwrap();
    let actual = ring::digest::digest(&ring::digest::SHA256, &bytes);
    let actual: String = actual.as_ref().iter().map(|b| format!("{b:02x}")).collect();
    assert_eq!(actual, hex, "blob {digest} does not match its digest");
    bytes
}

fn json_blob(layout: &Path, digest: &str) -> Value {
    serde_json::from_slice(&blob(layout, digest)).unwrap()
}

/// One file of the layer: its mode, owner and bytes.
struct Entry {
    mode: u32,
    uid: u64,
    kind: tar::EntryType,
    bytes: Vec<u8>,
}

/// The files of a gzip tar layer by path (without a leading `/` or `./`).
fn files_of(layer: &[u8]) -> BTreeMap<String, Entry> {
    let mut archive = tar::Archive::new(flate2::read::GzDecoder::new(layer));
    let mut files = BTreeMap::new();
    for entry in archive.entries().unwrap() {
        let mut entry = entry.unwrap();
        let path = entry.path().unwrap().to_string_lossy().into_owned();
        let path = path.trim_start_matches("./").trim_start_matches('/');
        let path = path.trim_end_matches('/').to_owned();
        let header = entry.header().clone();
        let mut bytes = Vec::new();
        entry.read_to_end(&mut bytes).unwrap();
        files.insert(
            path,
            Entry {
                mode: header.mode().unwrap(),
                uid: header.uid().unwrap(),
                kind: header.entry_type(),
                bytes,
            },
        );
    }
    files
}

/// Whether an ELF executable asks for a program interpreter (a dynamic loader): a static
/// binary has no `PT_INTERP` program header.
fn has_interpreter(elf: &[u8]) -> bool {
    assert_eq!(&elf[..4], b"\x7fELF", "not an ELF file");
    assert_eq!(elf[4], 2, "not a 64-bit ELF");
    let u16_at = |at: usize| u16::from_le_bytes([elf[at], elf[at + 1]]) as usize;
    let phoff = u64::from_le_bytes(elf[0x20..0x28].try_into().unwrap()) as usize;
    let (size, count) = (u16_at(0x36), u16_at(0x38));
    (0..count).any(|i| {
        let at = phoff + i * size;
        u32::from_le_bytes(elf[at..at + 4].try_into().unwrap()) == 3
    })
}

#[tokio::test]
async fn the_image_runs_tower_as_a_non_root_static_binary_with_the_frontend_inside() {
    let layout = layout();
    let index: Value =
        serde_json::from_str(&std::fs::read_to_string(layout.join("index.json")).unwrap()).unwrap();
    let manifests = index["manifests"].as_array().unwrap();
    assert_eq!(manifests.len(), 1, "{index}");
    assert_eq!(
        manifests[0]["annotations"]["org.opencontainers.image.ref.name"],
        "tower"
    );
    assert_eq!(
        manifests[0]["mediaType"],
        "application/vnd.oci.image.manifest.v1+json"
    );
    let manifest = json_blob(&layout, manifests[0]["digest"].as_str().unwrap());
    assert_eq!(manifest["schemaVersion"], 2);

    // What runs, as whom, where.
    let config = json_blob(&layout, manifest["config"]["digest"].as_str().unwrap());
    assert_eq!(
        (&config["os"], &config["architecture"]),
        (&"linux".into(), &"amd64".into())
    );
    let run = &config["config"];
    assert_eq!(run["User"], "65532:65532");
    assert_eq!(
        run["Entrypoint"],
        serde_json::json!(["/usr/local/bin/tower"])
    );
    assert_eq!(
        run["Cmd"],
        serde_json::json!(["serve", "--config", "/etc/tower/tower.yaml"])
    );
    assert!(run["ExposedPorts"].get("8080/tcp").is_some(), "{run}");
    let labels = &run["Labels"];
    assert_eq!(labels["org.opencontainers.image.title"], "tower");
    assert_eq!(
        labels["org.opencontainers.image.version"],
        env!("CARGO_PKG_VERSION")
    );
    assert_eq!(labels["org.opencontainers.image.licenses"], "Apache-2.0");
    // The Deployment runs the image's user; its command is the image's.
    let deployment =
        std::fs::read_to_string(crate::support::root().join("deploy/base/deployment.yaml"))
            .unwrap();
    assert!(deployment.contains("runAsUser: 65532"));
    assert!(deployment.contains("args: [serve, --config, /etc/tower/tower.yaml]"));

    // One layer: the binary, the user, the trust roots, the writable folders.
    let layers = manifest["layers"].as_array().unwrap();
    assert_eq!(layers.len(), 1, "{manifest}");
    assert_eq!(
        layers[0]["mediaType"],
        "application/vnd.oci.image.layer.v1.tar+gzip"
    );
    let files = files_of(&blob(&layout, layers[0]["digest"].as_str().unwrap()));
    let tower = &files["usr/local/bin/tower"];
    assert_eq!(
        (tower.mode & 0o777, tower.uid),
        (0o755, 0),
        "root's, run by anyone"
    );
    assert!(!has_interpreter(&tower.bytes), "the binary must be static");
    assert!(String::from_utf8_lossy(&files["etc/passwd"].bytes).contains("tower:x:65532:65532:"));
    assert!(files["etc/ssl/certs/ca-certificates.crt"]
        .bytes
        .starts_with(b"-----BEGIN CERTIFICATE-----"));
    assert_eq!(files["tmp"].kind, tar::EntryType::Directory);
    assert_eq!(files["tmp"].mode & 0o7777, 0o1777);
    assert_eq!(files["var/lib/tower"].uid, 65_532);
    // Nothing else ships: no shell, no package manager.
    let shipped: Vec<&str> = files
        .iter()
        .filter(|(_, e)| e.kind == tar::EntryType::Regular)
        .map(|(path, _)| path.as_str())
        .collect();
    assert_eq!(
        shipped,
        [
            "etc/group",
            "etc/passwd",
            "etc/ssl/certs/ca-certificates.crt",
            "usr/local/bin/tower"
        ]
    );

    // The very binary, run outside the image: it serves the frontend compiled into it, as
    // the workspace's dist/ has it, with the same caching headers.
    let dir = tempfile::tempdir().unwrap();
    let binary = dir.path().join("tower");
    std::fs::write(&binary, &tower.bytes).unwrap();
    std::fs::set_permissions(&binary, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let demo = Demo::start_binary(&binary).await.unwrap();
    let client = reqwest::Client::builder()
        .no_gzip()
        .no_brotli()
        .build()
        .unwrap();
    let dist = dist().unwrap();
    let page = client.get(&demo.url).send().await.unwrap();
    assert_eq!(page.status(), 200);
    assert_eq!(page.headers()["cache-control"], "no-cache");
    assert_eq!(
        page.text().await.unwrap(),
        std::fs::read_to_string(dist.join("index.html")).unwrap()
    );
    let folder = std::fs::read_dir(&dist)
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .find(|name| name.starts_with("app-"))
        .expect("the build's folder in dist/");
    let wasm = format!("{folder}/tower_bg.wasm");
    let compressed = client
        .get(format!("{}{wasm}", demo.url))
        .header("accept-encoding", "gzip, br")
        .send()
        .await
        .unwrap();
    assert_eq!(compressed.status(), 200);
    assert_eq!(compressed.headers()["content-encoding"], "br");
    assert_eq!(compressed.headers()["content-type"], "application/wasm");
    assert_eq!(
        compressed.headers()["cache-control"],
        "public, max-age=31536000, immutable"
    );
    assert_eq!(
        compressed.bytes().await.unwrap().to_vec(),
        std::fs::read(dist.join(format!("{wasm}.br"))).unwrap()
    );
    let health = client
        .get(format!("{}healthz", demo.url))
        .send()
        .await
        .unwrap();
    assert_eq!(health.status(), 200);
    let logs = demo.logs_at_exit().await.unwrap();
    assert!(
        logs.contains("compiled in"),
        "the log names where the frontend is from: {logs}"
    );
}
