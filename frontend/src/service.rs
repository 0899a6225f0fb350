//! `/tower?view=…`: the Services tab, or one service's tabs ([`Tab`]); without a service,
//! the fleet. Each tab's data is fetched again when an event names its service.

use leptos::prelude::*;
use leptos_router::hooks::use_query_map;
use tower_shared::api::SnapshotAnswer;

use crate::api::{self, ApiError};
use crate::nav::{tab_href, Page, Tab};
use crate::ui::HealthNotice;
use crate::{deployments, fleet, pipelines, provisioning};

#[component]
pub fn ServicePage() -> impl IntoView {
    let query = use_query_map();
    let page = Memo::new(move |_| {
        query.with(|q| Page::from_query(q.get("view"), q.get("service"), q.get("run")))
    });
    move || match page.get() {
        Page::Services => view! {
            <h2>"Services"</h2>
            <provisioning::ServicesTab />
        }
        .into_any(),
        Page::Fleet => view! { <fleet::FleetOverview /> }.into_any(),
        Page::Service { service, tab, run } => {
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
                Ok(tab) => {
                    view! { <SnapshotTab service=service.clone() tab=tab run=run /> }.into_any()
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

/// The tabs drawn from the service's snapshot: Deployments and Pipelines.
#[component]
fn SnapshotTab(service: String, tab: Tab, run: Option<String>) -> impl IntoView {
    let feed = crate::feed::feed();
    let changed = feed.refresh.service(service.clone());
    let snapshot = crate::feed::settled(LocalResource::new({
        let service = service.clone();
        move || {
            changed.track();
            api::service_snapshot(service.clone())
        }
    }));
    view! {
        {
                let service = service.clone();
                let run = run.clone();
                move || {
                    let Some(result) = snapshot.get() else {
                        return view! { <p class="state loading">"Loading…"</p> }.into_any();
                    };
                    let result: Result<SnapshotAnswer, ApiError> = result;
                    match result {
                            Ok(SnapshotAnswer { snapshot, health }) => {
                                let notice = view! { <HealthNotice health=health now=feed.now /> };
                                let body = match tab {
                                    Tab::Pipelines => view! {
                                        <pipelines::PipelinesTab snapshot=snapshot service=service.clone() run=run.clone() now=feed.now />
                                    }
                                    .into_any(),
                                    _ => view! {
                                        <deployments::DeploymentsTab snapshot=snapshot service=service.clone() now=feed.now />
                                    }
                                    .into_any(),
                                };
                                view! { {notice} {body} }.into_any()
                            }
                            Err(err) => crate::ui::error_alert(&err),
                    }
                }
        }
    }
}
