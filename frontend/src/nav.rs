//! Where the page is: `/` (the fleet), `/tower?view=services`, and one service's tabs at
//! `/tower?view=<tab>&service=<name>[&run=<run>]` ([`Tab`], the one list of tabs, is in
//! [`crate::tabs`]); every link to a tab is built here.

pub use crate::tabs::Tab;

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

/// The Services tab.
pub const SERVICES_HREF: &str = "/tower?view=services";
