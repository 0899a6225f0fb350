//! The built frontend (`dist/`, written by `cargo xtask frontend`), read from a folder or compiled into the
//! binary (`--features embed-dist`, which `cargo xtask image` builds: one file to ship).
//!
//! - Content types come from the file extension (`.wasm` → `application/wasm`).
//! - `name.br` / `name.gz` beside a file (written by `cargo xtask`) are served to clients
//!   that accept them; anything else is compressed on the fly by the app's compression layer.
//! - The build's files (`app-<16 hex>/…`, the folder named for their hash) are cached for a
//!   year, immutable;
//!   everything else, `index.html` included, is revalidated on every load.
//! - A path without a file extension is a page of the app: it gets `index.html`, so deep
//!   links such as `/tower?view=provisioning&service=x` work on first load and on reload.
//!
//! Both sources answer alike: a folder through tower-http's `ServeDir`, the files in memory
//! through [`serve_memory`] (with an `ETag` per variant and `304` on a match, by the same
//! rules as the API's views: [`crate::views`]).

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::Context;
use axum::extract::{Request, State};
use axum::http::{header, HeaderValue, Method, StatusCode};
use axum::middleware::{self, Next};
use axum::response::{Html, IntoResponse, Response};
use axum::Router;
use tower_http::services::ServeDir;

use crate::views::{self, Encoding};

const IMMUTABLE: &str = "public, max-age=31536000, immutable";
const REVALIDATE: &str = "no-cache";

/// Where `tower` looks for the frontend when `--dist` is not given and none is compiled in:
/// the workspace's `dist/`.
pub fn default_dist() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../dist")
}

/// A built frontend that has been checked to contain `index.html`.
#[derive(Clone, Debug)]
pub struct Dist {
    files: Files,
    index_html: Arc<str>,
    parts: Arc<Parts>,
}

/// What a page fetches before it can draw, for it to preload: `parts.json`, which
/// `cargo xtask frontend` writes. A build without it has nothing to preload.
#[derive(Debug, Default, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct Parts {
    /// The main module's files: its JS, the chunks' loader, the module.
    main: Vec<String>,
    /// Each part of the app loaded later (a tab, the fleet's panels), by its name, and the
    /// paths of its own files.
    parts: BTreeMap<String, Vec<String>>,
}

/// The name of the parts file in `dist/`.
const PARTS: &str = "parts.json";

/// Reads the parts file's text (`None`: there is none).
fn parts_of(text: Option<&[u8]>) -> anyhow::Result<Parts> {
    text.map_or_else(
        || Ok(Parts::default()),
        |text| {
            serde_json::from_slice(text).with_context(|| format!("reading the frontend's {PARTS}"))
        },
    )
}

/// Where a [`Dist`]'s files are.
#[derive(Clone, Debug)]
enum Files {
    Folder(PathBuf),
    Memory(Arc<InMemory>),
}

/// Files held in memory by name.
type InMemory = BTreeMap<String, Stored>;

/// One file held in memory, with its validator.
#[derive(Clone, Debug)]
struct Stored {
    bytes: bytes::Bytes,
    etag: HeaderValue,
}

impl Stored {
    fn new(bytes: bytes::Bytes) -> Self {
        Self {
            etag: views::strong_etag(&bytes),
            bytes,
        }
    }
}

impl Dist {
    /// Opens `root`, failing with a message that says how to build it when it is missing.
    pub fn open(root: &Path) -> anyhow::Result<Self> {
        let index = root.join("index.html");
        let index_html = std::fs::read_to_string(&index).with_context(|| {
            format!(
                "the frontend is not built: {} is missing (run `cargo xtask demo`, or \
                 `cargo xtask frontend` and pass --dist)",
                index.display()
            )
        })?;
        let parts = match std::fs::read(root.join(PARTS)) {
            Ok(text) => parts_of(Some(&text))?,
            Err(missing) if missing.kind() == std::io::ErrorKind::NotFound => Parts::default(),
            Err(unreadable) => {
                return Err(unreadable).context(format!("reading {}", root.join(PARTS).display()))
            }
        };
        Ok(Self {
            files: Files::Folder(root.to_owned()),
            index_html: index_html.into(),
            parts: Arc::new(parts),
        })
    }

    /// A frontend held in memory: file names (as `dist/` names them, `/`-separated) and
    /// their bytes.
    pub fn in_memory(
        files: impl IntoIterator<Item = (String, Cow<'static, [u8]>)>,
    ) -> anyhow::Result<Self> {
        let files: InMemory = files
            .into_iter()
            .map(|(name, bytes)| {
                let bytes = match bytes {
                    Cow::Borrowed(compiled_in) => bytes::Bytes::from_static(compiled_in),
                    Cow::Owned(read) => bytes::Bytes::from(read),
                };
                (name, Stored::new(bytes))
            })
            .collect();
        let index_html = files
            .get("index.html")
            .map(|index| String::from_utf8_lossy(&index.bytes).into_owned())
            .context("the frontend compiled in has no index.html")?;
        let parts = parts_of(files.get(PARTS).map(|parts| &parts.bytes[..]))?;
        Ok(Self {
            files: Files::Memory(Arc::new(files)),
            index_html: index_html.into(),
            parts: Arc::new(parts),
        })
    }

    /// The frontend compiled into this binary (`--features embed-dist`), if any.
    pub fn embedded() -> Option<Self> {
        #[cfg(feature = "embed-dist")]
        {
            let files = Embedded::iter().filter_map(|name| {
                let file = Embedded::get(&name)?;
                Some((name.into_owned(), file.data))
            });
            Self::in_memory(files).ok()
        }
        #[cfg(not(feature = "embed-dist"))]
        None
    }

    /// The frontend `tower` serves: the folder `dist` when given, else the one compiled in,
    /// else the workspace's `dist/`.
    pub fn chosen(dist: Option<&Path>) -> anyhow::Result<Self> {
        match dist {
            Some(folder) => Self::open(folder),
            None => Self::embedded().map_or_else(|| Self::open(&default_dist()), Ok),
        }
    }

    /// Where the files come from, for the log.
    pub fn source(&self) -> String {
        match &self.files {
            Files::Folder(root) => root.display().to_string(),
            Files::Memory(files) => format!("compiled in ({} files)", files.len()),
        }
    }

    /// CSP sources for the page's own inline scripts (the module loader `cargo xtask frontend` writes into
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

    /// What the page at `uri` fetches before it draws, for it to preload while it loads and
    /// signs in. A page that names a view or a service (`?view=services`,
    /// `?service=ledger&view=releases`) draws nothing until the main module runs: its files,
    /// then the files of the part its `view` opens, if this build has one. The fleet has
    /// its masthead to paint first and asks for the main module once it has (`index.html`),
    /// so it preloads none of them.
    pub fn page_preloads(&self, uri: &http::Uri) -> Vec<&str> {
        let Ok(axum::extract::Query(query)) =
            axum::extract::Query::<BTreeMap<String, String>>::try_from_uri(uri)
        else {
            return Vec::new();
        };
        if !query.contains_key("view") && !query.contains_key("service") {
            return Vec::new();
        }
        let part = query
            .get("view")
            .and_then(|view| self.parts.parts.get(view));
        self.parts
            .main
            .iter()
            .chain(part.into_iter().flatten())
            .map(String::as_str)
            .collect()
    }

    /// Routes serving the files, with the cache policy and page fallback described above.
    pub fn router(&self) -> Router {
        let files = match &self.files {
            Files::Folder(root) => {
                let pages = Router::new()
                    .fallback(page_or_not_found)
                    .with_state(Arc::clone(&self.index_html));
                let files = ServeDir::new(root)
                    .precompressed_br()
                    .precompressed_gzip()
                    .fallback(pages);
                Router::new().fallback_service(files)
            }
            Files::Memory(files) => Router::new()
                .fallback(serve_memory)
                .with_state((Arc::clone(files), Arc::clone(&self.index_html))),
        };
        files.layer(middleware::from_fn(cache_control))
    }
}

/// The frontend compiled in: the workspace's `dist/` when the binary was built.
#[cfg(feature = "embed-dist")]
#[derive(rust_embed::Embed)]
#[folder = "../dist/"]
struct Embedded;

/// A file of the frontend held in memory, as `ServeDir` would answer for it from a folder:
/// its `.br` or `.gz` twin to a client that takes it, `304` when the client's copy is
/// current, the page for a path without an extension, `404` for a missing file.
async fn serve_memory(
    State((files, index_html)): State<(Arc<InMemory>, Arc<str>)>,
    request: Request,
) -> Response {
    if request.method() != Method::GET && request.method() != Method::HEAD {
        return (
            StatusCode::METHOD_NOT_ALLOWED,
            [(header::ALLOW, "GET, HEAD")],
        )
            .into_response();
    }
    let path = request.uri().path().trim_start_matches('/');
    let name = if path.is_empty() || path.ends_with('/') {
        format!("{path}index.html")
    } else {
        path.to_owned()
    };
    let Some(plain) = files.get(&name) else {
        return page_or_not_found(State(index_html), request).await;
    };
    let headers = request.headers();
    // The best encoding the client accepts that has a twin beside the file.
    let (stored, encoding) = views::accepted_encodings(headers)
        .into_iter()
        .find_map(|encoding| {
            let twin = match encoding {
                Encoding::Brotli => "br",
                Encoding::Gzip => "gz",
                Encoding::Identity => return None,
            };
            let stored = files.get(&format!("{name}.{twin}"))?;
            Some((stored, encoding.content_coding()))
        })
        .unwrap_or((plain, None));
    let kind = mime_guess::from_path(&name).first_or_octet_stream();
    let mut response = if views::matches_etag(headers, &stored.etag) {
        StatusCode::NOT_MODIFIED.into_response()
    } else {
        stored.bytes.clone().into_response()
    };
    let out = response.headers_mut();
    if let Ok(kind) = HeaderValue::from_str(kind.as_ref()) {
        out.insert(header::CONTENT_TYPE, kind);
    }
    out.insert(header::ETAG, stored.etag.clone());
    out.insert(header::VARY, HeaderValue::from_static("accept-encoding"));
    if let Some(coding) = encoding {
        out.insert(header::CONTENT_ENCODING, HeaderValue::from_static(coding));
    }
    response
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

/// Whether a URL path names a file that never changes: one in the build's folder
/// `/app-<16 hex>/` (named for the hash of everything in it, `cargo xtask frontend`).
pub fn is_hashed_asset(path: &str) -> bool {
    let mut segments = path.trim_start_matches('/').split('/');
    let (Some(folder), Some(file), None) = (segments.next(), segments.next(), segments.next())
    else {
        return false;
    };
    let hashed = folder
        .strip_prefix("app-")
        .is_some_and(|hash| hash.len() == 16 && hash.bytes().all(|b| b.is_ascii_hexdigit()));
    hashed && !file.is_empty()
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::body::Body;
    use tower::ServiceExt;

    #[test]
    fn hashed_names_are_recognised() {
        assert!(is_hashed_asset("/app-1a2b3c4d5e6f7a8b/tower_bg.wasm"));
        assert!(is_hashed_asset("/app-1a2b3c4d5e6f7a8b/chunk_12.wasm"));
        assert!(is_hashed_asset("/app-1a2b3c4d5e6f7a8b/style.css"));
        assert!(!is_hashed_asset("/app-1a2b3c4d5e6f7a8b/"));
        assert!(!is_hashed_asset("/app-xyz/tower.js"));
        assert!(!is_hashed_asset("/app-1a2b3c4d5e6f7a8/tower.js"));
        assert!(!is_hashed_asset("/app-1a2b3c4d5e6f7a8b/a/b.js"));
        assert!(!is_hashed_asset("/index.html"));
        assert!(!is_hashed_asset("/"));
        assert!(!is_hashed_asset("/tower"));
        assert!(!is_hashed_asset("/tower-frontend-1a2b3c4d5e6f7a8b_bg.wasm"));
    }

    #[test]
    fn a_page_preloads_the_main_module_and_the_part_its_view_names() {
        let parts = br#"{"main": ["/app-0123456789abcdef/tower.js", "/app-0123456789abcdef/tower_bg.wasm"],
            "parts": {"releases": ["/app-0123456789abcdef/split_releases.wasm", "/app-0123456789abcdef/chunk_1.wasm"]}}"#;
        let dist = Dist::in_memory([
            (
                "index.html".to_owned(),
                Cow::Borrowed(&b"<html></html>"[..]),
            ),
            (PARTS.to_owned(), Cow::Borrowed(&parts[..])),
        ])
        .unwrap();
        let preloads = |uri: &str| {
            dist.page_preloads(&uri.parse().unwrap())
                .into_iter()
                .map(|path| path.trim_start_matches("/app-0123456789abcdef/").to_owned())
                .collect::<Vec<_>>()
        };
        assert_eq!(
            preloads("/tower?service=ledger&view=releases"),
            [
                "tower.js",
                "tower_bg.wasm",
                "split_releases.wasm",
                "chunk_1.wasm"
            ]
        );
        let main = ["tower.js", "tower_bg.wasm"];
        assert_eq!(
            preloads("/tower?view=services"),
            main,
            "a view with no part"
        );
        assert_eq!(preloads("/tower?service=ledger"), main, "the default tab");
        assert!(preloads("/tower").is_empty(), "the fleet paints first");
        assert!(preloads("/").is_empty(), "the fleet paints first");
        assert_eq!(
            preloads("/tower?service=ledger&view=nope"),
            main,
            "the main module says there is no such tab"
        );
        // A build without the parts file has nothing to preload; a broken one is an error.
        let without = Dist::in_memory([("index.html".to_owned(), Cow::Borrowed(&b"x"[..]))]);
        assert!(without
            .unwrap()
            .page_preloads(&"/tower?view=releases".parse().unwrap())
            .is_empty());
        for broken in [&b"[1"[..], br#"{"releases": ["/x.wasm"]}"#] {
            let broken = Dist::in_memory([
                ("index.html".to_owned(), Cow::Borrowed(&b"x"[..])),
                (PARTS.to_owned(), Cow::Borrowed(broken)),
            ]);
            assert!(broken.unwrap_err().to_string().contains("parts.json"));
        }
    }

    const FILES: [(&str, &[u8]); 3] = [
        ("index.html", b"<html>tower</html>"),
        ("app-0123456789abcdef/tower_bg.wasm", b"\0asm"),
        ("app-0123456789abcdef/tower_bg.wasm.br", b"br!"),
    ];

    /// The same files in a folder and in memory: both must answer alike.
    fn built_dists() -> (tempfile::TempDir, [Dist; 2]) {
        let dir = tempfile::tempdir().unwrap();
        for (name, bytes) in FILES {
            let path = dir.path().join(name);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, bytes).unwrap();
        }
        let folder = Dist::open(dir.path()).unwrap();
        let memory =
            Dist::in_memory(FILES.map(|(name, bytes)| (name.to_owned(), Cow::Borrowed(bytes))))
                .unwrap();
        (dir, [folder, memory])
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
        let (_dir, dists) = built_dists();
        for dist in &dists {
            let source = dist.source();
            let plain = get(dist, "/app-0123456789abcdef/tower_bg.wasm", None).await;
            assert_eq!(plain.status(), StatusCode::OK, "{source}");
            assert_eq!(plain.headers()[header::CONTENT_TYPE], "application/wasm");
            assert_eq!(plain.headers()[header::CACHE_CONTROL], IMMUTABLE);
            assert!(plain.headers().get(header::CONTENT_ENCODING).is_none());

            let br = get(
                dist,
                "/app-0123456789abcdef/tower_bg.wasm",
                Some("gzip, br"),
            )
            .await;
            assert_eq!(br.headers()[header::CONTENT_ENCODING], "br", "{source}");
            assert_eq!(br.headers()[header::CONTENT_TYPE], "application/wasm");
            let body = axum::body::to_bytes(br.into_body(), 1024).await.unwrap();
            assert_eq!(&body[..], b"br!", "{source}");

            // Refused by q=0: the plain file.
            let refused = get(dist, "/app-0123456789abcdef/tower_bg.wasm", Some("br;q=0")).await;
            assert!(
                refused.headers().get(header::CONTENT_ENCODING).is_none(),
                "{source}"
            );
        }
    }

    #[tokio::test]
    async fn pages_get_index_html_and_missing_files_get_404() {
        let (_dir, dists) = built_dists();
        for dist in &dists {
            for path in ["/", "/tower", "/tower?view=provisioning&service=x"] {
                let response = get(dist, path, None).await;
                assert_eq!(response.status(), StatusCode::OK, "{path}");
                assert_eq!(
                    response.headers()[header::CACHE_CONTROL],
                    REVALIDATE,
                    "{path}"
                );
                let body = axum::body::to_bytes(response.into_body(), 1024)
                    .await
                    .unwrap();
                assert_eq!(
                    &body[..],
                    b"<html>tower</html>",
                    "{path} from {}",
                    dist.source()
                );
            }
            let missing = get(dist, "/missing-0123456789abcdef.js", None).await;
            assert_eq!(missing.status(), StatusCode::NOT_FOUND);
            assert!(missing.headers().get(header::CACHE_CONTROL).is_none());
        }
    }

    #[tokio::test]
    async fn files_in_memory_revalidate_by_etag_and_refuse_writes() {
        let (_dir, [_, memory]) = built_dists();
        let first = get(&memory, "/index.html", None).await;
        let etag = first.headers()[header::ETAG].clone();
        let again = memory
            .router()
            .oneshot(
                Request::builder()
                    .uri("/index.html")
                    .header(header::IF_NONE_MATCH, etag.clone())
                    .body(Body::empty())
                    .unwrap(),
            )
            .await
            .unwrap();
        assert_eq!(again.status(), StatusCode::NOT_MODIFIED);
        assert_eq!(again.headers()[header::ETAG], etag);
        assert_eq!(again.headers()[header::CACHE_CONTROL], REVALIDATE);
        // The compressed twin has its own validator.
        let br = get(&memory, "/app-0123456789abcdef/tower_bg.wasm", Some("br")).await;
        let plain = get(&memory, "/app-0123456789abcdef/tower_bg.wasm", None).await;
        assert_ne!(br.headers()[header::ETAG], plain.headers()[header::ETAG]);
        let post = memory
            .router()
            .oneshot(
                Request::builder()
                    .method(Method::POST)
                    .uri("/index.html")
                    .body(Body::empty())
                    .unwrap(),
            )
            .await
            .unwrap();
        assert_eq!(post.status(), StatusCode::METHOD_NOT_ALLOWED);
    }

    #[test]
    fn nothing_is_compiled_in_unless_the_feature_says_so() {
        assert_eq!(Dist::embedded().is_some(), cfg!(feature = "embed-dist"));
        let missing = Dist::in_memory([("app.js".to_owned(), Cow::Borrowed(&b""[..]))]);
        assert!(missing.unwrap_err().to_string().contains("index.html"));
    }

    #[test]
    fn a_missing_build_says_how_to_make_one() {
        let dir = tempfile::tempdir().unwrap();
        let err = Dist::open(dir.path()).unwrap_err().to_string();
        assert!(err.contains("cargo xtask demo"), "{err}");
    }
}
