//! Where the page is: `/` (the fleet), `/tower?view=services`, and one service's tabs at
//! `/tower?view=<tab>&service=<name>[&run=<run>]`. The [`Tab`] enum is the one list of tabs:
//! it draws the tab bar, picks the page, and builds every link to a tab.

/// One service's tabs, in the order the bar shows them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tab {
    Provisioning,
    PullRequests,
    Pipelines,
    Deployments,
    Releases,
    Runtime,
    Config,
}

impl Tab {
    /// In the order a change lives: pull request, pipeline, deployment, release, runtime;
    /// then the app's config.
    pub const ALL: [Tab; 7] = [
        Tab::Provisioning,
        Tab::PullRequests,
        Tab::Pipelines,
        Tab::Deployments,
        Tab::Releases,
        Tab::Runtime,
        Tab::Config,
    ];

    /// The tab a service link without `view` opens.
    pub const DEFAULT: Tab = Tab::Deployments;

    /// The tab's `view=` value.
    pub fn id(self) -> &'static str {
        match self {
            Tab::Provisioning => "provisioning",
            Tab::PullRequests => "pulls",
            Tab::Pipelines => "pipelines",
            Tab::Deployments => "deployments",
            Tab::Releases => "releases",
            Tab::Runtime => "runtime",
            Tab::Config => "config",
        }
    }

    pub fn title(self) -> &'static str {
        match self {
            Tab::Provisioning => "Provisioning",
            Tab::PullRequests => "Pull requests",
            Tab::Pipelines => "Pipelines",
            Tab::Deployments => "Deployments",
            Tab::Releases => "Releases",
            Tab::Runtime => "Runtime",
            Tab::Config => "Config",
        }
    }

    pub fn from_id(id: &str) -> Option<Tab> {
        Tab::ALL.into_iter().find(|t| t.id() == id)
    }
}

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
