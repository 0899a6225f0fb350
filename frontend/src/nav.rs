//! Where the page is: `/` (the fleet), `/tower?view=services`, and one service's tabs at
//! `/tower?view=<tab>&service=<name>[&run=<run>]` ([`Tab`], the one list of tabs, is in
//! [`crate::tabs`]); every link to a tab is built here.

pub use crate::tabs::Tab;

use leptos::prelude::*;

/// What `/tower?…` shows.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Page {
    /// `view=services`: every service being provisioned.
    Services,
    /// No service named: the fleet.
    Fleet,
    /// One service's tab; `Err` holds a `view` that names no tab.
    Service {
        service: String,
        tab: Result<Tab, String>,
        run: Option<String>,
        /// `record=`: one release record, on the Releases tab.
        record: Option<String>,
    },
}

impl Page {
    /// The page `query` names.
    pub fn of_query(query: &Query) -> Self {
        Self::from_query(
            query.get("view"),
            query.get("service"),
            query.get("run"),
            query.get("record"),
        )
    }

    /// The page for the query's `view`, `service`, `run` and `record`.
    pub fn from_query(
        view: Option<String>,
        service: Option<String>,
        run: Option<String>,
        record: Option<String>,
    ) -> Self {
        if view.as_deref() == Some("services") {
            return Page::Services;
        }
        let Some(service) = service else {
            return Page::Fleet;
        };
        let tab = match view {
            None => Ok(Tab::DEFAULT),
            Some(view) => Tab::from_id(&view).ok_or(view),
        };
        Page::Service {
            service,
            tab,
            run,
            record,
        }
    }
}

fn encode(text: &str) -> String {
    String::from(js_sys::encode_uri_component(text))
}

/// The link to one tab of one service (optionally focused on a pipeline run).
pub fn tab_href(tab: Tab, service: &str, run: Option<&str>) -> String {
    let mut href = format!("/tower?view={}&service={}", tab.id(), encode(service));
    if let Some(run) = run {
        href.push_str("&run=");
        href.push_str(&encode(run));
    }
    href
}

/// The link to one release record of a service (its image tag).
pub fn record_href(service: &str, release: &str) -> String {
    format!(
        "{}&record={}",
        tab_href(Tab::Releases, service, None),
        encode(release)
    )
}

/// The link to one environment of a service's Deployments tab.
pub fn environment_href(service: &str, env: &str) -> String {
    format!(
        "{}&env={}",
        tab_href(Tab::Deployments, service, None),
        encode(env)
    )
}

/// Where the browser is: the path and the query, following `history` — links within Tower
/// move by `pushState` (no reload), and Back and Forward by `popstate`. Provided once by the
/// app ([`provide_location`]); every page reads it through [`use_query`] and [`use_path`].
#[derive(Clone, Copy, Debug)]
struct Location {
    path: RwSignal<String>,
    search: RwSignal<String>,
}

/// The query string, read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Query(Vec<(String, String)>);

impl Query {
    fn parse(search: &str) -> Self {
        let pairs = web_sys::UrlSearchParams::new_with_str(search)
            .ok()
            .map(|params| {
                let mut pairs = Vec::new();
                if let Ok(Some(iter)) = js_sys::try_iter(&params) {
                    for entry in iter.flatten() {
                        let entry = js_sys::Array::from(&entry);
                        if let (Some(k), Some(v)) =
                            (entry.get(0).as_string(), entry.get(1).as_string())
                        {
                            pairs.push((k, v));
                        }
                    }
                }
                pairs
            })
            .unwrap_or_default();
        Self(pairs)
    }

    /// The first value of `key`, if the query has it.
    pub fn get(&self, key: &str) -> Option<String> {
        self.0
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.clone())
    }
}

fn read_location() -> (String, String) {
    let location = web_sys::window().map(|w| w.location());
    let path = location
        .as_ref()
        .and_then(|l| l.pathname().ok())
        .unwrap_or_else(|| "/".to_owned());
    let search = location.and_then(|l| l.search().ok()).unwrap_or_default();
    (path, search)
}

/// Starts following the browser's location: a click on a link to another page of Tower is
/// a `pushState` (unless a modifier key, another button, a `target` or `download` asks for
/// the browser's own handling), and `popstate` reads the location again.
pub fn provide_location() {
    use wasm_bindgen::JsCast as _;
    let (path, search) = read_location();
    let location = Location {
        path: RwSignal::new(path),
        search: RwSignal::new(search),
    };
    provide_context(location);
    let Some(window) = web_sys::window() else {
        return;
    };
    let reread = move || {
        let (path, search) = read_location();
        location.path.set(path);
        location.search.set(search);
    };
    let on_pop = wasm_bindgen::closure::Closure::<dyn Fn()>::new(reread);
    let _ = window.add_event_listener_with_callback("popstate", on_pop.as_ref().unchecked_ref());
    on_pop.forget();
    let on_click = wasm_bindgen::closure::Closure::<dyn Fn(web_sys::MouseEvent)>::new(
        move |event: web_sys::MouseEvent| {
            if event.default_prevented()
                || event.button() != 0
                || event.meta_key()
                || event.ctrl_key()
                || event.shift_key()
                || event.alt_key()
            {
                return;
            }
            let Some(anchor) = event
                .target()
                .and_then(|t| t.dyn_into::<web_sys::Element>().ok())
                .and_then(|e| e.closest("a[href]").ok().flatten())
                .and_then(|a| a.dyn_into::<web_sys::HtmlAnchorElement>().ok())
            else {
                return;
            };
            let Some(window) = web_sys::window() else {
                return;
            };
            let here = window.location().origin().unwrap_or_default();
            let leaves = !anchor.target().is_empty()
                || anchor.has_attribute("download")
                || anchor.origin() != here
                || !matches!(anchor.pathname().as_str(), "/" | "/tower");
            if leaves {
                return;
            }
            event.prevent_default();
            let href = format!("{}{}{}", anchor.pathname(), anchor.search(), anchor.hash());
            if let Ok(history) = window.history() {
                let _ = history.push_state_with_url(&wasm_bindgen::JsValue::NULL, "", Some(&href));
            }
            reread();
            window.scroll_to_with_x_and_y(0.0, 0.0);
        },
    );
    if let Some(document) = window.document() {
        let _ =
            document.add_event_listener_with_callback("click", on_click.as_ref().unchecked_ref());
    }
    on_click.forget();
}

fn location() -> Location {
    use_context::<Location>().unwrap_or_else(|| {
        let (path, search) = read_location();
        Location {
            path: RwSignal::new(path),
            search: RwSignal::new(search),
        }
    })
}

/// The query string, following the location.
pub fn use_query() -> Memo<Query> {
    let search = location().search;
    Memo::new(move |_| search.with(|s| Query::parse(s)))
}

/// The path, following the location.
pub fn use_path() -> Memo<String> {
    let path = location().path;
    Memo::new(move |_| path.get())
}
