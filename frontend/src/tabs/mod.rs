//! One service's tabs: [`Tab`] is the one list of them (the tab bar, the page each opens,
//! every link to one), and each tab's page is a module here. A tab's answer is fetched
//! again whenever an event names its service ([`fetched`]).
//!
//! Module map: [`provisioning`] (also the Services tab's in-flight strip), [`pulls`],
//! [`pipelines`], [`deployments`] (the cloud variant; [`rollout`] draws a Kubernetes
//! environment's Rollout and offers its canary actions), [`releases`] (the matrix,
//! promotion and comparison; [`records`] — release records), [`runtime`], [`config`].

pub mod config;
pub mod deployments;
pub mod pipelines;
pub mod provisioning;
pub mod pulls;
pub mod records;
pub mod releases;
pub mod rollout;
pub mod runtime;

use leptos::prelude::*;

use crate::api;

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

    /// The tab's page for `service` (`run`: a pipeline run to open; `record`: a release
    /// record to open).
    pub fn page(self, service: String, run: Option<String>, record: Option<String>) -> AnyView {
        match self {
            Tab::Provisioning => {
                view! { <provisioning::ProvisioningTab service=service /> }.into_any()
            }
            Tab::PullRequests => view! { <pulls::PullsTab service=service /> }.into_any(),
            Tab::Pipelines => view! { <PipelinesPage service=service run=run /> }.into_any(),
            Tab::Deployments => view! { <DeploymentsPage service=service /> }.into_any(),
            Tab::Releases => match record {
                Some(release) => view! {
                    <records::RecordPage service=service release=release />
                }
                .into_any(),
                None => view! { <ReleasesPage service=service /> }.into_any(),
            },
            Tab::Runtime => view! { <runtime::RuntimeTab service=service /> }.into_any(),
            Tab::Config => view! { <config::ConfigTab service=service /> }.into_any(),
        }
    }
}

/// `tab`'s answer for `service`, fetched again whenever an event names the service; `body`
/// draws it.
pub(crate) fn fetched<T>(
    tab: Tab,
    service: String,
    body: impl Fn(T) -> AnyView + Send + Sync + 'static,
) -> impl IntoView
where
    T: serde::de::DeserializeOwned,
{
    fetched_with(service, move |service| api::tab_text(tab, &service), body)
}

/// An answer about `service` that `fetch` asks for, fetched again whenever an event names
/// the service (and whenever a signal `fetch` tracks changes); `body` draws it. The text is
/// what is fetched and kept (one resource type for every tab); each tab reads it as its own
/// answer type.
pub(crate) fn fetched_with<T>(
    service: String,
    fetch: impl Fn(String) -> api::TextFuture + 'static,
    body: impl Fn(T) -> AnyView + Send + Sync + 'static,
) -> impl IntoView
where
    T: serde::de::DeserializeOwned,
{
    let feed = crate::feed::feed();
    let changed = feed.refresh.service(service.clone());
    let answer = crate::feed::text_resource(move || {
        changed.track();
        fetch(service.clone())
    });
    move || match answer.get() {
        None => view! { <p class="state loading">"Loading…"</p> }.into_any(),
        Some(Ok(text)) => match api::decode::<T>(&text) {
            Ok(answer) => body(answer),
            Err(err) => crate::ui::error_alert(&err),
        },
        Some(Err(err)) => crate::ui::error_alert(&err),
    }
}

/// The Pipelines tab: pages of runs and one run's graph, as the backend derived them.
#[component]
fn PipelinesPage(service: String, run: Option<String>) -> impl IntoView {
    view! { <pipelines::PipelinesTab service=service run=run /> }
}

/// The Deployments tab, as the backend derived it (`GET /api/deployments`). The answer
/// carries the tab's fields at its top level: read as the tab alone (the health notice is
/// the one every page shares), so the bundle holds one reader of it.
#[component]
fn DeploymentsPage(service: String) -> impl IntoView {
    let now = crate::feed::feed().now;
    let actions = rollout::ArgoActions::new(access_of(&service));
    fetched(
        Tab::Deployments,
        service,
        move |deployments: tower_shared::deployments::Deployments| {
            view! {
                <crate::ui::SharedHealthNotice />
                <deployments::DeploymentsTab deployments=deployments now=now actions=actions />
            }
            .into_any()
        },
    )
}

/// Whether the caller may act on `service` (`GET /api/access`), read once per page: the
/// caller's own answer, not part of the shared view.
pub(crate) fn access_of(service: &str) -> Signal<Option<tower_shared::api::Access>> {
    let access = RwSignal::new(None);
    let service = service.to_owned();
    leptos::task::spawn_local(async move {
        access.set(api::access(service).await.ok());
    });
    access.into()
}

/// The Releases tab, as the backend derived it (`GET /api/releases`).
#[component]
fn ReleasesPage(service: String) -> impl IntoView {
    let now = crate::feed::feed().now;
    let access = access_of(&service);
    // The promotion a button asked for: its panel lives outside the matrix, so the matrix
    // can follow the platform while the panel stays open.
    let chosen = RwSignal::new(None);
    let pages = RwSignal::new(1);
    let picked = RwSignal::new(Vec::new());
    let panel = view! {
        <releases::PromotionPanel service=service.clone() chosen=chosen />
        <releases::ComparePanel service=service.clone() picked=picked />
    };
    let matrix = fetched(
        Tab::Releases,
        service.clone(),
        // Read as the matrix alone, as the Deployments tab is.
        move |releases: tower_shared::releases::Releases| {
            pages.track();
            view! {
            <crate::ui::SharedHealthNotice />
            <releases::ReleasesTab releases=releases now=now access=access chosen=chosen pages=pages picked=picked />
        }
        .into_any()
        },
    );
    let records = view! { <records::RecordsPanel service=service.clone() /> };
    // The app's DORA figures, under its matrix.
    let dora = crate::fleet::dora_panel(Some(service.clone()), now);
    view! { {panel}{matrix}{dora}{records} }
}
