//! Views served as bytes: a derived answer serialised once, with a strong ETag and its
//! brotli and gzip encodings made once, so a request only picks the stored bytes — or
//! answers `304 Not Modified` when the caller already has them.

use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use serde::Serialize;

/// Makes a deferred view's JSON.
type MakeJson = Box<dyn FnOnce() -> Vec<u8> + Send>;

/// One answer, ready to send.
pub struct View {
    etag: HeaderValue,
    json: tokio::sync::OnceCell<Bytes>,
    /// A deferred view's JSON, until it is made.
    make_json: std::sync::Mutex<Option<MakeJson>>,
    br: tokio::sync::OnceCell<Bytes>,
    gzip: tokio::sync::OnceCell<Bytes>,
}

impl std::fmt::Debug for View {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("View")
            .field("etag", &self.etag)
            .field("bytes", &self.json.get().map(Bytes::len))
            .finish_non_exhaustive()
    }
}

/// How views compress: brotli 5 and gzip 6 are within a few per cent of their best on JSON
/// at a fraction of the time. Past [`LARGE`] brotli 3: a 10,000-app fleet (5 MB of JSON,
/// remade on every change) in about 20 ms instead of about 90, for a fifth more bytes.
const BROTLI_QUALITY: u32 = 5;
const BROTLI_QUALITY_LARGE: u32 = 3;
const LARGE: usize = 1 << 20;
const GZIP_LEVEL: u32 = 6;

impl View {
    /// The view of `value`, with its brotli encoding made now (for views the deriver keeps:
    /// every browser asks for brotli; gzip is made the first time a client wants it).
    pub fn ready<T: Serialize + ?Sized>(value: &T) -> Self {
        let view = Self::lazy(value);
        if let Some(json) = view.json.get() {
            let _ = view.br.set(brotli(json));
        }
        view
    }

    /// The view of `value`; each encoding is made the first time a caller asks for it, off
    /// the async workers, once however many ask at the same time (for large views that
    /// change every second, most of whose versions nobody asks for).
    pub fn lazy<T: Serialize + ?Sized>(value: &T) -> Self {
        // Serialising our own types to memory cannot fail (no map with non-string keys).
        let json = serde_json::to_vec(value).unwrap_or_else(|_| b"null".to_vec());
        Self::from_json(json)
    }

    /// A view whose JSON is made (by `make`, off the async workers) only when someone
    /// asks for it; `tag` names its content (equal tags only for equal content), so it needs
    /// no hashing of bytes nobody may ask for. For a view remade every second.
    pub fn deferred(tag: &str, make: impl FnOnce() -> Vec<u8> + Send + 'static) -> Self {
        let etag = HeaderValue::from_str(&format!("\"{tag}\""))
            .unwrap_or(HeaderValue::from_static("\"0\""));
        Self {
            etag,
            json: tokio::sync::OnceCell::new(),
            make_json: std::sync::Mutex::new(Some(Box::new(make))),
            br: tokio::sync::OnceCell::new(),
            gzip: tokio::sync::OnceCell::new(),
        }
    }

    fn from_json(json: Vec<u8>) -> Self {
        Self {
            etag: strong_etag(&json),
            json: tokio::sync::OnceCell::new_with(Some(Bytes::from(json))),
            make_json: std::sync::Mutex::new(None),
            br: tokio::sync::OnceCell::new(),
            gzip: tokio::sync::OnceCell::new(),
        }
    }

    /// The JSON text, once made (always, but for a deferred view nobody asked for yet).
    pub fn json(&self) -> Option<&Bytes> {
        self.json.get()
    }

    /// The JSON text, made now if it was not yet.
    async fn made_json(&self) -> Bytes {
        self.json
            .get_or_init(|| async {
                let make = self
                    .make_json
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
                    .take();
                let Some(make) = make else {
                    return Bytes::from_static(b"null");
                };
                tokio::task::spawn_blocking(make)
                    .await
                    .map(Bytes::from)
                    .unwrap_or_else(|_| Bytes::from_static(b"null"))
            })
            .await
            .clone()
    }

    /// The strong ETag (quoted), equal for equal bytes.
    pub fn etag(&self) -> &HeaderValue {
        &self.etag
    }

    /// The bytes in `encoding`, made now if they were not yet.
    async fn encoded(&self, encoding: Encoding) -> Bytes {
        let (cell, compress): (_, fn(&[u8]) -> Bytes) = match encoding {
            Encoding::Identity => return self.made_json().await,
            Encoding::Brotli => (&self.br, brotli),
            Encoding::Gzip => (&self.gzip, gzip),
        };
        cell.get_or_init(|| async {
            let json = self.made_json().await;
            {
                tokio::task::spawn_blocking(move || compress(&json))
                    .await
                    .unwrap_or_default()
            }
        })
        .await
        .clone()
    }

    /// The answer to a GET with `request` headers: `304` when `If-None-Match` names this
    /// view, else the bytes in the best encoding the caller accepts (brotli, gzip, none).
    pub async fn respond(&self, request: &HeaderMap) -> Response {
        let mut headers = HeaderMap::new();
        headers.insert(header::ETAG, self.etag.clone());
        headers.insert(header::VARY, HeaderValue::from_static("accept-encoding"));
        headers.insert(
            header::CACHE_CONTROL,
            HeaderValue::from_static("private, no-cache"),
        );
        if matches_etag(request, &self.etag) {
            return (StatusCode::NOT_MODIFIED, headers).into_response();
        }
        headers.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        );
        let encoding = preferred_encoding(request);
        if let Some(coding) = encoding.content_coding() {
            headers.insert(header::CONTENT_ENCODING, HeaderValue::from_static(coding));
        }
        (StatusCode::OK, headers, self.encoded(encoding).await).into_response()
    }
}

fn brotli(json: &[u8]) -> Bytes {
    let mut out = Vec::with_capacity(json.len() / 8);
    let params = brotli::enc::BrotliEncoderParams {
        quality: i32::try_from(if json.len() > LARGE {
            BROTLI_QUALITY_LARGE
        } else {
            BROTLI_QUALITY
        })
        .unwrap_or(5),
        ..Default::default()
    };
    let mut input = json;
    // Writing to memory cannot fail.
    let _ = brotli::BrotliCompress(&mut input, &mut out, &params);
    Bytes::from(out)
}

fn gzip(json: &[u8]) -> Bytes {
    use std::io::Write as _;
    let mut encoder = flate2::write::GzEncoder::new(
        Vec::with_capacity(json.len() / 6),
        flate2::Compression::new(GZIP_LEVEL),
    );
    let _ = encoder.write_all(json);
    Bytes::from(encoder.finish().unwrap_or_default())
}

/// The strong ETag (quoted) of `bytes`: the first 16 bytes of their SHA-256 in hex, equal
/// for equal bytes.
pub(crate) fn strong_etag(bytes: &[u8]) -> HeaderValue {
    let digest = ring::digest::digest(&ring::digest::SHA256, bytes);
    let hex: String = digest.as_ref()[..16]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    HeaderValue::from_str(&format!("\"{hex}\"")).unwrap_or(HeaderValue::from_static("\"0\""))
}

/// Whether `If-None-Match` lists `etag` (or is `*`); weak forms match too, as RFC 9110 has
/// it for `If-None-Match`.
pub(crate) fn matches_etag(request: &HeaderMap, etag: &HeaderValue) -> bool {
    let Ok(etag) = etag.to_str() else {
        return false;
    };
    request
        .get_all(header::IF_NONE_MATCH)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(str::trim)
        .any(|given| given == "*" || given.strip_prefix("W/").unwrap_or(given) == etag)
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Encoding {
    Brotli,
    Gzip,
    Identity,
}

impl Encoding {
    /// Its `Content-Encoding` (none for identity).
    pub(crate) fn content_coding(self) -> Option<&'static str> {
        match self {
            Self::Brotli => Some("br"),
            Self::Gzip => Some("gzip"),
            Self::Identity => None,
        }
    }
}

/// Brotli when accepted, else gzip, else none (a `q=0` refuses an encoding).
fn preferred_encoding(request: &HeaderMap) -> Encoding {
    accepted_encodings(request)
        .first()
        .copied()
        .unwrap_or(Encoding::Identity)
}

/// The compressed encodings `request` accepts, in the order Tower prefers them (brotli,
/// then gzip; a `q=0` refuses one).
pub(crate) fn accepted_encodings(request: &HeaderMap) -> Vec<Encoding> {
    let mut brotli = false;
    let mut gzip = false;
    for item in request
        .get_all(header::ACCEPT_ENCODING)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
    {
        let mut parts = item.split(';');
        let name = parts.next().unwrap_or_default().trim();
        let refused = parts.any(|p| {
            p.trim()
                .strip_prefix("q=")
                .and_then(|q| q.trim().parse::<f32>().ok())
                .is_some_and(|q| q <= 0.0)
        });
        if refused {
            continue;
        }
        match name.to_ascii_lowercase().as_str() {
            "br" => brotli = true,
            "gzip" | "x-gzip" => gzip = true,
            _ => {}
        }
    }
    [(brotli, Encoding::Brotli), (gzip, Encoding::Gzip)]
        .into_iter()
        .filter_map(|(accepted, encoding)| accepted.then_some(encoding))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(header::HeaderName, &str)]) -> HeaderMap {
        pairs
            .iter()
            .map(|(k, v)| (k.clone(), HeaderValue::from_str(v).unwrap()))
            .collect()
    }

    async fn body(response: Response) -> Vec<u8> {
        axum::body::to_bytes(response.into_body(), usize::MAX)
            .await
            .unwrap()
            .to_vec()
    }

    #[tokio::test]
    async fn picks_the_encoding_and_answers_304_on_a_matching_etag() {
        let view = View::ready(&serde_json::json!({"services": vec!["a"; 200]}));
        let plain = view.respond(&HeaderMap::new()).await;
        assert_eq!(plain.status(), StatusCode::OK);
        assert!(plain.headers().get(header::CONTENT_ENCODING).is_none());
        assert_eq!(body(plain).await, view.json().unwrap().to_vec());

        let br = view
            .respond(&headers(&[(header::ACCEPT_ENCODING, "gzip, deflate, br")]))
            .await;
        assert_eq!(br.headers()[header::CONTENT_ENCODING], "br");
        let mut decoded = Vec::new();
        brotli::BrotliDecompress(&mut &body(br).await[..], &mut decoded).unwrap();
        assert_eq!(decoded, view.json().unwrap().to_vec());

        let gzip = view
            .respond(&headers(&[(header::ACCEPT_ENCODING, "br;q=0, gzip")]))
            .await;
        assert_eq!(gzip.headers()[header::CONTENT_ENCODING], "gzip");

        let etag = view.etag().to_str().unwrap().to_owned();
        let again = view
            .respond(&headers(&[(header::IF_NONE_MATCH, &etag)]))
            .await;
        assert_eq!(again.status(), StatusCode::NOT_MODIFIED);
        assert_eq!(again.headers()[header::ETAG], etag.as_str());
        assert!(body(again).await.is_empty());
        let other = view
            .respond(&headers(&[(header::IF_NONE_MATCH, "\"other\"")]))
            .await;
        assert_eq!(other.status(), StatusCode::OK);
    }

    #[tokio::test]
    async fn a_deferred_view_is_made_once_on_demand() {
        let made = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let counter = std::sync::Arc::clone(&made);
        let view = std::sync::Arc::new(View::deferred("v1", move || {
            counter.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            br#"{"a":1}"#.to_vec()
        }));
        assert!(view.json().is_none(), "not made before anyone asks");
        let asks = (0..8).map(|_| {
            let view = std::sync::Arc::clone(&view);
            tokio::spawn(async move {
                let r = view
                    .respond(&headers(&[(header::ACCEPT_ENCODING, "gzip")]))
                    .await;
                body(r).await
            })
        });
        for ask in asks {
            assert!(!ask.await.unwrap().is_empty());
        }
        assert_eq!(made.load(std::sync::atomic::Ordering::SeqCst), 1);
        assert_eq!(view.json().unwrap().as_ref(), br#"{"a":1}"#);
        assert_eq!(view.etag(), "\"v1\"");
    }

    #[test]
    fn equal_bytes_have_equal_etags() {
        let a = View::lazy(&[1, 2, 3]);
        let b = View::lazy(&[1, 2, 3]);
        let c = View::lazy(&[1, 2, 4]);
        assert_eq!(a.etag(), b.etag());
        assert_ne!(a.etag(), c.etag());
    }
}
