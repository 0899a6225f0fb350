//! Requests to Tower's backend: the only module that knows its URLs. Answers are the
//! `tower_shared::api` types the backend serialises. Every answer's clock header is handed
//! to [`crate::clock`]; views are asked for with `If-None-Match`, so an unchanged one costs a
//! `304` and no body.

use std::cell::RefCell;
use std::collections::HashMap;

use gloo_net::http::{Request, RequestBuilder, Response};
use serde::de::DeserializeOwned;
use tower_shared::api::{
    Access, ArgoSyncAnswer, ArgoSyncRequest, AuthConfig, CatalogRefresh, ClockReading,
    ConfigChecked, ConfigDraft, ConfigFile, ConfigSaved, ErrorBody, GuestToken, PipelineRunsAnswer,
    PromoteAnswer, PromoteRequest, PromotionPreview, PullsAnswer, RolloutActionAnswer,
    RolloutActionRequest, RolloutActionsAnswer, CLOCK_HEADER,
};
use wasm_bindgen::JsCast as _;

/// Why a request to the backend gave no data. Each variant reads differently on the page:
/// "cannot reach Tower" is not "Tower answered with an error".
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum ApiError {
    #[error("cannot reach Tower's backend: {0}")]
    Unreachable(String),
    #[error("Tower's backend answered {status}: {message}")]
    Status { status: u16, message: String },
    #[error("Tower's backend sent data this page cannot read: {0}")]
    Decode(String),
}

/// `GET /api/events`: Server-Sent Events saying what changed (read by [`crate::live`] with
/// `fetch`, so it can carry the token).
pub const EVENTS: &str = "/api/events";

/// How many views' last answers are kept for `If-None-Match`.
const KEPT: usize = 32;

thread_local! {
    /// The last answer of each view asked for: its ETag and text.
    static LAST: RefCell<HashMap<String, (String, String)>> = RefCell::new(HashMap::new());
}

/// Adds the signed-in user's token (see [`crate::signin`]).
pub fn with_token(request: RequestBuilder) -> RequestBuilder {
    match crate::signin::token() {
        Some(token) => request.header("Authorization", &format!("Bearer {token}")),
        None => request,
    }
}

/// Reads the clock header of an answer.
fn read_clock(response: &Response) {
    if let Some(reading) = response
        .headers()
        .get(CLOCK_HEADER)
        .and_then(|h| ClockReading::parse_header(&h))
    {
        crate::clock::sync(reading);
    }
}

/// Sends `request` and reads Tower's clock off the answer; an answer that is not a success
/// is its error.
async fn answered(request: Request) -> Result<Response, ApiError> {
    let response = request
        .send()
        .await
        .map_err(|e| ApiError::Unreachable(e.to_string()))?;
    read_clock(&response);
    if response.ok() {
        Ok(response)
    } else {
        Err(refusal(response).await)
    }
}

/// The error an answer that is not a success stands for: the backend's sentence, not its JSON.
async fn refusal(response: Response) -> ApiError {
    let status = response.status();
    let body = response.text().await.unwrap_or_default();
    let message = serde_json::from_str::<ErrorBody>(&body)
        .map(|e| e.error)
        .unwrap_or(body);
    ApiError::Status { status, message }
}

/// `GET path` read as a `T`. The request itself is [`get_text`], not generic: one copy of it
/// in the bundle, not one per answer type.
async fn get_json<T: DeserializeOwned>(path: &str) -> Result<T, ApiError> {
    decode(&get_text(path).await?)
}

/// An answer's text read as a `T`.
pub fn decode<T: DeserializeOwned>(text: &str) -> Result<T, ApiError> {
    serde_json::from_str(text).map_err(|e| ApiError::Decode(e.to_string()))
}

/// How the wire names a unit variant (`canary-aborted`, `rolled-back`): its serde name, so
/// the page says what the JSON says.
pub fn wire_name<T: serde::Serialize>(value: &T) -> String {
    match serde_json::to_value(value) {
        Ok(serde_json::Value::String(name)) => name,
        _ => "unknown".to_owned(),
    }
}

/// A view's text, on its way: every page's resource waits on this one type, so the bundle
/// carries one copy of the machinery that waits (each page then reads the text as its own
/// answer type with [`decode`]).
pub type TextFuture =
    std::pin::Pin<Box<dyn std::future::Future<Output = Result<String, ApiError>>>>;

fn text_of(path: String) -> TextFuture {
    Box::pin(async move { get_text(&path).await })
}

/// `GET /api/<tab>?service=…`'s text: the answer a tab draws (`/api/deployments`,
/// `/api/releases`, `/api/runtime`, `/api/config`: each tab's route is named for the tab).
pub fn tab_text(tab: crate::tabs::Tab, service: &str) -> TextFuture {
    text_of(format!("/api/{}?service={}", tab.id(), encode(service)))
}

/// `GET /api/activity`'s text: the fleet's recent activity, newest first
/// ([`tower_shared::api::ActivityAnswer`]).
pub fn activity_text() -> TextFuture {
    text_of("/api/activity".to_owned())
}

/// `GET /api/dora`'s text: one app's DORA figures over the last `days`, or the fleet's, and
/// what they counted ([`tower_shared::api::DoraAnswer`]).
pub fn dora_text(service: Option<String>, days: u32) -> TextFuture {
    text_of(match service {
        Some(service) => format!("/api/dora?service={}&days={days}", encode(&service)),
        None => format!("/api/dora?days={days}"),
    })
}

/// `GET path`'s body (the last one kept, on a `304`), or why there is none.
async fn get_text(path: &str) -> Result<String, ApiError> {
    let last = LAST.with(|l| l.borrow().get(path).cloned());
    let early = match last {
        None => asked_early(path).await,
        Some(_) => None,
    };
    let response = match early {
        // The loader's answers are mostly here before this code is: each is read in a task of
        // its own, so drawing them all does not hold the page in one long task.
        Some(answer) => {
            crate::live::sleep(std::time::Duration::ZERO).await;
            answer?
        }
        None => {
            let mut request = with_token(Request::get(path).header("Accept", "application/json"));
            if let Some((etag, _)) = &last {
                request = request.header("If-None-Match", etag);
            }
            request
                .send()
                .await
                .map_err(|e| ApiError::Unreachable(e.to_string()))?
        }
    };
    read_clock(&response);
    let text = match (response.status(), last) {
        (304, Some((_, text))) => text,
        (status, _) if (200..300).contains(&status) => {
            let etag = response.headers().get("etag");
            let text = response
                .text()
                .await
                .map_err(|e| ApiError::Decode(e.to_string()))?;
            if let Some(etag) = etag {
                LAST.with(|l| {
                    let mut last = l.borrow_mut();
                    if last.len() >= KEPT {
                        last.clear();
                    }
                    last.insert(path.to_owned(), (etag, text.clone()));
                });
            }
            text
        }
        _ => return Err(refusal(response).await),
    };
    Ok(text)
}

/// The answer at `path` the page's loader (`index.html`) asked for while this code was on
/// its way — the sign-in and the first answers every page reads — taken once; `None` when the
/// loader did not ask for it (framed in Backstage, or any later request).
async fn asked_early(path: &str) -> Option<Result<Response, ApiError>> {
    let window = web_sys::window()?;
    let early: js_sys::Function = js_sys::Reflect::get(&window, &"towerEarly".into())
        .ok()?
        .dyn_into()
        .ok()?;
    let promise: js_sys::Promise = early
        .call1(&wasm_bindgen::JsValue::NULL, &path.into())
        .ok()?
        .dyn_into()
        .ok()?;
    match wasm_bindgen_futures::JsFuture::from(promise).await {
        Ok(answer) => answer
            .dyn_into::<web_sys::Response>()
            .ok()
            .map(|raw| Ok(Response::from(raw))),
        Err(_) => Some(Err(ApiError::Unreachable(
            "the network failed the page's first request".to_owned(),
        ))),
    }
}

/// `GET /auth/config`: how this page signs in.
pub async fn auth_config() -> Result<AuthConfig, ApiError> {
    get_json("/auth/config").await
}

/// `GET /auth/guest`: Backstage's guest user token (when the backend allows guests).
pub async fn guest_token() -> Result<String, ApiError> {
    let guest: GuestToken = get_json("/auth/guest").await?;
    Ok(guest.token)
}

/// `GET /api/fleet`.
pub fn fleet() -> TextFuture {
    text_of("/api/fleet".to_owned())
}

/// `GET /api/summary`: the strip, the badge and the health notices.
pub fn summary() -> TextFuture {
    text_of("/api/summary".to_owned())
}

/// `GET /api/provisioning/service?service=…`: one service's Provisioning tab, derived by the
/// backend (running steps' times tick on the page).
pub fn service_provisioning(service: String) -> TextFuture {
    text_of(format!(
        "/api/provisioning/service?service={}",
        encode(&service)
    ))
}

/// `GET /api/access?service=`: whether the signed-in caller may promote the service.
pub async fn access(service: String) -> Result<Access, ApiError> {
    get_json(&format!("/api/access?service={}", encode(&service))).await
}

/// `GET /api/releases/promotion?…`: what promoting `image` to `environment` changes.
pub async fn promotion(
    service: String,
    image: String,
    environment: String,
) -> Result<PromotionPreview, ApiError> {
    get_json(&format!(
        "/api/releases/promotion?service={}&image={}&environment={}",
        encode(&service),
        encode(&image),
        encode(&environment)
    ))
    .await
}

/// `POST /api/releases/promote`: makes the promotion the preview showed.
pub async fn promote(request: PromoteRequest) -> Result<PromoteAnswer, ApiError> {
    post_json("/api/releases/promote", &request).await
}

/// `GET /api/config/file?…`: one config file as read now, with its form
/// ([`tower_shared::api::ConfigFile`]). The Config tab reads its answers as JSON trees: one
/// reader for all of them keeps the bundle within budget.
pub async fn config_file(service: String, file: String) -> Result<ConfigFile, ApiError> {
    get_json(&format!(
        "/api/config/file?service={}&file={}",
        encode(&service),
        encode(&file)
    ))
    .await
}

/// `POST /api/config/check`: the draft with its edits written in, its form and diff
/// ([`tower_shared::api::ConfigChecked`]).
pub async fn config_check(draft: &ConfigDraft) -> Result<ConfigChecked, ApiError> {
    post_json("/api/config/check", draft).await
}

/// `POST /api/config/save`: opens (or adds to) the pull request changing the file
/// ([`tower_shared::api::ConfigSaved`]).
pub async fn config_save(draft: &ConfigDraft) -> Result<ConfigSaved, ApiError> {
    post_json("/api/config/save", draft).await
}

/// `POST /api/argocd/sync`: asks Argo CD to sync (or force sync) one environment.
pub async fn argo_sync(request: ArgoSyncRequest) -> Result<ArgoSyncAnswer, ApiError> {
    post_json("/api/argocd/sync", &request).await
}

/// `GET /api/releases/compare?…`: what changed between two releases.
pub async fn compare(
    service: String,
    from: String,
    to: String,
) -> Result<tower_shared::releases::Comparison, ApiError> {
    get_json(&format!(
        "/api/releases/compare?service={}&from={}&to={}",
        encode(&service),
        encode(&from),
        encode(&to)
    ))
    .await
}

/// `GET /api/argocd/rollout-actions?…`: what Argo CD offers on a service's Rollout now.
pub async fn rollout_actions(
    service: String,
    environment: String,
) -> Result<RolloutActionsAnswer, ApiError> {
    get_json(&format!(
        "/api/argocd/rollout-actions?service={}&environment={}",
        encode(&service),
        encode(&environment)
    ))
    .await
}

/// `POST /api/argocd/rollout-action`: Argo CD runs one of the offered actions.
pub async fn rollout_action(
    request: RolloutActionRequest,
) -> Result<RolloutActionAnswer, ApiError> {
    post_json("/api/argocd/rollout-action", &request).await
}

/// `GET /api/records?…`: a page of the service's release records.
pub fn records(
    service: String,
    page: usize,
    filter: tower_shared::records::RecordFilter,
) -> TextFuture {
    let mut path = format!("/api/records?service={}&page={page}", encode(&service));
    if let Some(risk) = filter.risk {
        path.push_str("&risk=");
        path.push_str(risk.as_str());
    }
    if let Some(signed) = filter.signed_off {
        path.push_str(if signed {
            "&signedOff=true"
        } else {
            "&signedOff=false"
        });
    }
    text_of(path)
}

fn record_query(service: &str, release: &str) -> String {
    format!("service={}&release={}", encode(service), encode(release))
}

/// `GET /api/records/record?…`: one release record and where it is.
pub fn record(service: String, release: String) -> TextFuture {
    text_of(format!(
        "/api/records/record?{}",
        record_query(&service, &release)
    ))
}

/// `POST /api/records/notes`: proposes a record's human part by pull request.
pub async fn notes(
    request: tower_shared::api::NotesRequest,
) -> Result<tower_shared::api::NotesAnswer, ApiError> {
    post_json("/api/records/notes", &request).await
}

/// `GET /api/records/export?…` (with the caller's token), handed to the browser as a
/// download; the object URL it was saved from (kept, so the page can link it again) and
/// its size in bytes.
pub async fn export(
    service: &str,
    release: &str,
    format: &str,
) -> Result<(String, usize), ApiError> {
    let path = format!(
        "/api/records/export?{}&format={format}",
        record_query(service, release)
    );
    let response = answered(
        with_token(Request::get(&path))
            .build()
            .map_err(|e| ApiError::Unreachable(e.to_string()))?,
    )
    .await?;
    let kind = response.headers().get("content-type").unwrap_or_default();
    let bytes = response
        .binary()
        .await
        .map_err(|e| ApiError::Decode(e.to_string()))?;
    let parts = js_sys::Array::of1(&js_sys::Uint8Array::from(bytes.as_slice()));
    let options = web_sys::BlobPropertyBag::new();
    options.set_type(&kind);
    let failed = |e: wasm_bindgen::JsValue| ApiError::Decode(format!("{e:?}"));
    let blob =
        web_sys::Blob::new_with_u8_array_sequence_and_options(&parts, &options).map_err(failed)?;
    let url = web_sys::Url::create_object_url_with_blob(&blob).map_err(failed)?;
    let document = web_sys::window()
        .and_then(|w| w.document())
        .ok_or_else(|| ApiError::Decode("no document".to_owned()))?;
    let link: web_sys::HtmlAnchorElement = document
        .create_element("a")
        .map_err(failed)?
        .dyn_into()
        .map_err(|_| ApiError::Decode("not a link".to_owned()))?;
    link.set_href(&url);
    link.set_download(&format!("{service}-{release}.{format}"));
    link.click();
    Ok((url, bytes.len()))
}

/// `POST path` with `body` as JSON; the answer read as a `T`, or why it was refused.
async fn post_json<B: serde::Serialize, T: DeserializeOwned>(
    path: &str,
    body: &B,
) -> Result<T, ApiError> {
    let body = serde_json::to_string(body).map_err(|e| ApiError::Decode(e.to_string()))?;
    decode(&post_text(path, body).await?)
}

/// `POST path` with the JSON text `body`; the answer's text (not generic, as [`get_text`]).
async fn post_text(path: &str, body: String) -> Result<String, ApiError> {
    let request = with_token(
        Request::post(path)
            .header("Accept", "application/json")
            .header("Content-Type", "application/json"),
    )
    .body(body)
    .map_err(|e| ApiError::Unreachable(e.to_string()))?;
    answered(request)
        .await?
        .text()
        .await
        .map_err(|e| ApiError::Decode(e.to_string()))
}

/// An answer that comes in pages (`GET /api/pipelines`, `GET /api/pulls`; each page names
/// the next one's cursor as `next`): its route, and how a later page adds to the first.
pub trait Paged: DeserializeOwned {
    const PATH: &'static str;
    fn append(&mut self, later: Self);
    /// Where the next page starts (`continue`), when there is one.
    fn next(&self) -> Option<&str>;
}

impl Paged for PipelineRunsAnswer {
    const PATH: &'static str = "/api/pipelines";
    fn append(&mut self, later: Self) {
        self.runs.extend(later.runs);
        self.next = later.next;
    }
    fn next(&self) -> Option<&str> {
        self.next.as_deref()
    }
}

impl Paged for PullsAnswer {
    const PATH: &'static str = "/api/pulls";
    fn append(&mut self, later: Self) {
        self.pulls.extend(later.pulls);
        self.next = later.next;
    }
    fn next(&self) -> Option<&str> {
        self.next.as_deref()
    }
}

/// The first `pages` pages of `T`'s route for `service`, as the text of a JSON array of the
/// pages' answers (read back as one answer by [`joined`]): `query` holds the filters and the
/// `limit`, and each page after the first `continue`s from the one before.
pub fn pages<T: Paged>(
    service: String,
    query: Vec<(&'static str, String)>,
    pages: usize,
) -> TextFuture {
    let mut path = format!("{}?service={}", T::PATH, encode(&service));
    for (key, value) in &query {
        path.push_str(&format!("&{key}={}", encode(value)));
    }
    Box::pin(async move {
        let cursor = |text: &str| decode::<T>(text).ok()?.next().map(encode);
        let first = get_text(&path).await?;
        let mut next = cursor(&first);
        let mut all = vec![first];
        for _ in 1..pages {
            let Some(after) = next else {
                break;
            };
            let later = get_text(&format!("{path}&continue={after}")).await?;
            next = cursor(&later);
            all.push(later);
        }
        Ok(format!("[{}]", all.join(",")))
    })
}

/// [`pages`]' text read as one answer: the first page, each later one appended.
pub fn joined<T: Paged>(text: &str) -> Result<T, ApiError> {
    let mut pages = decode::<Vec<T>>(text)?.into_iter();
    let mut all = pages
        .next()
        .ok_or_else(|| ApiError::Decode("no page".to_owned()))?;
    for later in pages {
        all.append(later);
    }
    Ok(all)
}

/// `GET /api/pipelines/run?service=…&run=…`: one run and its graph of tasks.
pub fn pipeline_run(service: &str, run: &str) -> TextFuture {
    text_of(format!(
        "/api/pipelines/run?service={}&run={}",
        encode(service),
        encode(run)
    ))
}

fn encode(text: &str) -> String {
    String::from(js_sys::encode_uri_component(text))
}

/// `GET path`, handing the body's text to `on_text` piece by piece as it arrives, until it
/// ends or the reader given to `on_open` is cancelled (which ends the request). Used for
/// the event stream and step logs, which carry the token as every request does.
pub async fn stream_text(
    path: &str,
    accept: &str,
    on_open: impl FnOnce(web_sys::ReadableStreamDefaultReader),
    mut on_text: impl FnMut(&str),
) -> Result<(), ApiError> {
    use wasm_bindgen::JsCast as _;
    use wasm_bindgen_futures::JsFuture;
    let broken = |e: wasm_bindgen::JsValue| ApiError::Unreachable(format!("{e:?}"));
    let request = with_token(Request::get(path).header("Accept", accept))
        .build()
        .map_err(|e| ApiError::Unreachable(e.to_string()))?;
    let body = answered(request)
        .await?
        .body()
        .ok_or_else(|| ApiError::Decode("no body".to_owned()))?;
    let reader: web_sys::ReadableStreamDefaultReader = body.get_reader().unchecked_into();
    on_open(reader.clone());
    let decoder = web_sys::TextDecoder::new().map_err(broken)?;
    let options = web_sys::TextDecodeOptions::new();
    options.set_stream(true);
    loop {
        let chunk = JsFuture::from(reader.read()).await.map_err(broken)?;
        let done = js_sys::Reflect::get(&chunk, &"done".into())
            .map_err(broken)?
            .as_bool()
            .unwrap_or(true);
        if done {
            return Ok(());
        }
        let bytes: js_sys::Uint8Array = js_sys::Reflect::get(&chunk, &"value".into())
            .map_err(broken)?
            .dyn_into()
            .map_err(broken)?;
        on_text(
            &decoder
                .decode_with_buffer_source_and_options(&bytes, &options)
                .map_err(broken)?,
        );
    }
}

/// `GET /api/runtime/log?…`: one of an app's pods' log, followed, to [`stream_text`].
pub fn pod_log_path(service: &str, environment: &str, pod: &str) -> String {
    format!(
        "/api/runtime/log?service={}&environment={}&pod={}&follow=true",
        encode(service),
        encode(environment),
        encode(pod)
    )
}

/// `GET /api/pipelines/log?…`: a step's log (followed while it runs), to [`stream_text`].
pub fn step_log_path(service: &str, run: &str, task: &str, step: &str, follow: bool) -> String {
    format!(
        "/api/pipelines/log?service={}&run={}&task={}&step={}{}",
        encode(service),
        encode(run),
        encode(task),
        encode(step),
        if follow { "&follow=true" } else { "" }
    )
}

/// `GET /provisioning-history/runs?limit=10`: the newest recorded provisions.
pub fn recent_runs() -> TextFuture {
    text_of("/provisioning-history/runs?limit=10".to_owned())
}

/// `POST /catalog/refresh`: Backstage's answer in words ("triggered", "already running"),
/// or why it refused.
pub async fn refresh_catalog() -> Result<String, ApiError> {
    let answer: CatalogRefresh = post_json("/catalog/refresh", &serde_json::json!({})).await?;
    Ok(answer.message)
}
