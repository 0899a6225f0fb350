//! `/tower?view=…`: the Services tab, or one service's tabs ([`Tab`]); without a service,
//! the fleet. Each tab's data is fetched again when an event names its service.

use leptos::prelude::*;
use leptos_router::hooks::use_query_map;

use crate::api;
use crate::nav::{tab_href, Page, Tab};
use crate::{deployments, fleet, pipelines, provisioning, pulls};

#[component]
pub fn ServicePage() -> impl IntoView {
    let query = use_query_map();
    let page = Memo::new(move |_| {
        query.with(|q| {
            Page::from_query(
                q.get("view"),
                q.get("service"),
                q.get("run"),
                q.get("record"),
            )
        })
    });
    move || match page.get() {
        Page::Services => view! {
            <h2>"Services"</h2>
            <provisioning::ServicesTab />
        }
        .into_any(),
        Page::Fleet => view! { <fleet::FleetOverview /> }.into_any(),
        Page::Service {
            service,
            tab,
            run,
            record,
        } => {
            let current = tab.as_ref().ok().copied();
            let links = Tab::ALL
                .into_iter()
                .map(|t| {
                    view! {
                        <a href=tab_href(t, &service, None) aria-current=(current == Some(t)).then_some("page")>
                            {t.title()}
                        </a>
                    }
                })
                .collect_view();
            let nav = view! {
                <nav class="tabs" aria-label="Service tabs">
                    <span class="service-name">{service.clone()}</span>
                    {links}
                </nav>
            };
            let body = match tab {
                Ok(Tab::Provisioning) => {
                    view! { <provisioning::ProvisioningTab service=service.clone() /> }.into_any()
                }
                Ok(Tab::PullRequests) => {
                    view! { <pulls::PullsTab service=service.clone() /> }.into_any()
                }
                Ok(Tab::Pipelines) => {
                    view! { <PipelinesPage service=service.clone() run=run /> }.into_any()
                }
                Ok(Tab::Deployments) => {
                    view! { <DeploymentsPage service=service.clone() /> }.into_any()
                }
                Ok(Tab::Releases) => match record {
                    Some(release) => view! {
                        <crate::records::RecordPage service=service.clone() release=release />
                    }
                    .into_any(),
                    None => view! { <ReleasesPage service=service.clone() /> }.into_any(),
                },
                Ok(Tab::Runtime) => {
                    view! { <crate::runtime::RuntimeTab service=service.clone() /> }.into_any()
                }
                Ok(Tab::Config) => {
                    view! { <crate::config::ConfigTab service=service.clone() /> }.into_any()
                }
                Err(view) => view! {
                    <p class="state error" role="alert">
                        {format!("✖ No such tab: {view:?}. Tower has {}.",
                            Tab::ALL.iter().map(|t| t.title()).collect::<Vec<_>>().join(", "))}
                    </p>
                }
                .into_any(),
            };
            view! { {nav} {body} }.into_any()
        }
    }
}

/// A tab's answer, fetched again whenever an event names the service; `body` draws it.
/// The text is what is fetched and kept (one resource type for every tab); each tab reads
/// it as its own answer type.
pub(crate) fn fetched<T>(
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
    let actions = crate::rollout::ArgoActions::new(access_of(&service));
    fetched(
        service,
        api::deployments_text,
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
        <crate::releases::PromotionPanel service=service.clone() chosen=chosen />
        <crate::releases::ComparePanel service=service.clone() picked=picked />
    };
    let matrix = fetched(
        service.clone(),
        api::releases_text,
        // Read as the matrix alone, as the Deployments tab is.
        move |releases: tower_shared::releases::Releases| {
            pages.track();
            view! {
            <crate::ui::SharedHealthNotice />
            <crate::releases::ReleasesTab releases=releases now=now access=access chosen=chosen pages=pages picked=picked />
        }
        .into_any()
        },
    );
    let records = view! { <crate::records::RecordsPanel service=service.clone() /> };
    // The app's DORA figures, under its matrix.
    let dora = crate::fleet::dora_panel(Some(service.clone()), now);
    view! { {panel}{matrix}{dora}{records} }
}
