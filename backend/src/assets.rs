//! The built frontend (Trunk's `dist/` folder).
//!
//! - Content types come from the file extension (`.wasm` → `application/wasm`).
//! - `name.br` / `name.gz` beside a file (written by `cargo xtask`) are served to clients
//!   that accept them; anything else is compressed on the fly by the app's compression layer.
//! - Hashed files (`tower-frontend-<16 hex>_bg.wasm`) are cached for a year, immutable;
//!   everything else, `index.html` included, is revalidated on every load.
//! - A path without a file extension is a page of the app: it gets `index.html`, so deep
//!   links such as `/tower?view=provisioning&service=x` work on first load and on reload.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::Context;
use axum::extract::{Request, State};
use axum::http::{header, HeaderValue, StatusCode};
use axum::middleware::{self, Next};
use axum::response::{Html, IntoResponse, Response};
use axum::Router;
use tower_http::services::ServeDir;

const IMMUTABLE: &str = "public, max-age=31536000, immutable";
const REVALIDATE: &str = "no-cache";

/// Where `tower` looks for the frontend when `--dist` is not given: the workspace's `dist/`.
pub fn default_dist() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../dist")
}

/// A built frontend folder that has been checked to contain `index.html`.
#[derive(Clone, Debug)]
pub struct Dist {
    root: PathBuf,
    index_html: Arc<str>,
}

impl Dist {
    /// Opens `root`, failing with a message that says how to build it when it is missing.
    pub fn open(root: &Path) -> anyhow::Result<Self> {
        let index = root.join("index.html");
        let index_html = std::fs::read_to_string(&index).with_context(|| {
            format!(
                "the frontend is not built: {} is missing (run `cargo xtask demo`, or \
                 `trunk build --release` and pass --dist)",
                index.display()
            )
        })?;
        Ok(Self {
            root: root.to_owned(),
            index_html: index_html.into(),
        })
    }

    /// CSP sources for the page's own inline scripts (the module loader Trunk writes into
    /// `index.html`): `'sha256-…'` of each, so `script-src` allows them and nothing else
    /// inline.
    pub fn inline_script_hashes(&self) -> Vec<String> {
        inline_scripts(&self.index_html)
            .map(|script| {
                use base64::Engine as _;
                let digest = ring::digest::digest(&ring::digest::SHA256, script.as_bytes());
                format!(
                    "'sha256-{}'",
                    base64::engine::general_purpose::STANDARD.encode(digest.as_ref())
                )
            })
            .collect()
    }

    /// Routes serving the folder, with the cache policy and page fallback described above.
    pub fn router(&self) -> Router {
        let pages = Router::new()
            .fallback(page_or_not_found)
            .with_state(Arc::clone(&self.index_html));
        let files = ServeDir::new(&self.root)
            .precompressed_br()
            .precompressed_gzip()
            .fallback(pages);
        Router::new()
            .fallback_service(files)
            .layer(middleware::from_fn(cache_control))
    }
}

/// The text of every `<script>` without a `src` in `html`, exactly as the browser hashes it.
fn inline_scripts(html: &str) -> impl Iterator<Item = &str> {
    html.split("<script").skip(1).filter_map(|rest| {
        let (attributes, rest) = rest.split_once('>')?;
        let (text, _) = rest.split_once("</script>")?;
        (!attributes.contains("src=")).then_some(text)
    })
}

async fn page_or_not_found(State(index_html): State<Arc<str>>, request: Request) -> Response {
    let last_segment = request.uri().path().rsplit('/').next().unwrap_or_default();
    if last_segment.contains('.') {
        (StatusCode::NOT_FOUND, "not found").into_response()
    } else {
        Html(index_html.to_string()).into_response()
    }
}

async fn cache_control(request: Request, next: Next) -> Response {
    let policy = if is_hashed_asset(request.uri().path()) {
        IMMUTABLE
    } else {
        REVALIDATE
    };
    let mut response = next.run(request).await;
    if response.status().is_success() || response.status() == StatusCode::NOT_MODIFIED {
        response
            .headers_mut()
            .insert(header::CACHE_CONTROL, HeaderValue::from_static(policy));
    }
    response
}

/// Whether a URL path names a file whose name carries a content hash, as Trunk writes them:
/// `<stem>-<hash>[_bg].<ext>`, the hash a u64 in hex without leading zeros — usually 16
/// digits, 15 one time in 16, and so on (8 or more is accepted: fewer is a one in 4 billion
/// hash, and such a file would merely be cached briefly).
pub fn is_hashed_asset(path: &str) -> bool {
    let name = path.rsplit('/').next().unwrap_or_default();
    let Some((stem, _ext)) = name.split_once('.') else {
        return false;
    };
    let stem = stem.strip_suffix("_bg").unwrap_or(stem);
    let Some((_, hash)) = stem.rsplit_once('-') else {
        return false;
    };
    (8..=16).contains(&hash.len()) && hash.bytes().all(|b| b.is_ascii_hexdigit())
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::body::Body;
    use tower::ServiceExt;

    #[test]
    fn hashed_names_are_recognised() {
        assert!(is_hashed_asset("/tower-frontend-1a2b3c4d5e6f7a8b_bg.wasm"));
        assert!(is_hashed_asset("/tower-frontend-1a2b3c4d5e6f7a8b.js"));
        assert!(is_hashed_asset("/style-00ff00ff00ff00ff.css"));
        assert!(!is_hashed_asset("/index.html"));
        assert!(!is_hashed_asset("/"));
        assert!(!is_hashed_asset("/tower"));
        assert!(!is_hashed_asset("/tower-frontend-xyz_bg.wasm"));
        // Trunk drops leading zeros: 98185bcd1f85d6b is a real 15-digit name.
        assert!(is_hashed_asset("/tower-frontend-98185bcd1f85d6b_bg.wasm"));
        assert!(!is_hashed_asset("/tower-frontend-1a2b3c4_bg.wasm"));
        assert!(!is_hashed_asset(
            "/tower-frontend-1a2b3c4d5e6f7a8b9_bg.wasm"
        ));
    }

    fn built_dist() -> (tempfile::TempDir, Dist) {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("index.html"), "<html>tower</html>").unwrap();
        std::fs::write(dir.path().join("app-0123456789abcdef_bg.wasm"), b"\0asm").unwrap();
        std::fs::write(dir.path().join("app-0123456789abcdef_bg.wasm.br"), b"br!").unwrap();
        let dist = Dist::open(dir.path()).unwrap();
        (dir, dist)
    }

    async fn get(dist: &Dist, path: &str, encoding: Option<&str>) -> Response {
        let mut request = Request::builder().uri(path);
        if let Some(encoding) = encoding {
            request = request.header(header::ACCEPT_ENCODING, encoding);
        }
        dist.router()
            .oneshot(request.body(Body::empty()).unwrap())
            .await
            .unwrap()
    }

    #[tokio::test]
    async fn wasm_is_typed_compressed_and_cached_forever() {
        let (_dir, dist) = built_dist();
        let plain = get(&dist, "/app-0123456789abcdef_bg.wasm", None).await;
        assert_eq!(plain.status(), StatusCode::OK);
        assert_eq!(plain.headers()[header::CONTENT_TYPE], "application/wasm");
        assert_eq!(plain.headers()[header::CACHE_CONTROL], IMMUTABLE);

        let br = get(&dist, "/app-0123456789abcdef_bg.wasm", Some("br, gzip")).await;
        assert_eq!(br.headers()[header::CONTENT_ENCODING], "br");
        assert_eq!(br.headers()[header::CONTENT_TYPE], "application/wasm");
    }

    #[tokio::test]
    async fn pages_get_index_html_and_missing_files_get_404() {
        let (_dir, dist) = built_dist();
        for path in ["/", "/tower", "/tower?view=provisioning&service=x"] {
            let response = get(&dist, path, None).await;
            assert_eq!(response.status(), StatusCode::OK, "{path}");
            assert_eq!(
                response.headers()[header::CACHE_CONTROL],
                REVALIDATE,
                "{path}"
            );
        }
        let missing = get(&dist, "/missing-0123456789abcdef.js", None).await;
        assert_eq!(missing.status(), StatusCode::NOT_FOUND);
        assert!(missing.headers().get(header::CACHE_CONTROL).is_none());
    }

    #[test]
    fn a_missing_build_says_how_to_make_one() {
        let dir = tempfile::tempdir().unwrap();
        let err = Dist::open(dir.path()).unwrap_err().to_string();
        assert!(err.contains("cargo xtask demo"), "{err}");
    }
}
