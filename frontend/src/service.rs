//! `/tower?view=<tab>&service=<name>`: one service's tabs. Without a view it is the fleet.

use chrono::{DateTime, Utc};
use leptos::prelude::*;
use leptos_router::hooks::use_query_map;

use crate::api::{self, ApiError, ServiceSnapshot};
use crate::{deployments, fleet, pipelines, provisioning};

/// The link to one tab of one service (optionally focused on a pipeline run).
pub fn tab_href(view: &str, service: &str, run: Option<&str>) -> String {
    let encode = |s: &str| String::from(js_sys::encode_uri_component(s));
    let mut href = format!("/tower?view={}&service={}", encode(view), encode(service));
    if let Some(run) = run {
        href.push_str("&run=");
        href.push_str(&encode(run));
    }
    href
}

#[component]
pub fn ServicePage(now: ReadSignal<DateTime<Utc>>) -> impl IntoView {
    let query = use_query_map();
    let param = move |key: &str| query.with(|q| q.get(key));
    move || {
        let view = param("view");
        if view.as_deref() == Some("services") {
            return view! {
                <h2>"Services"</h2>
                <provisioning::ServicesTab now=now />
            }
            .into_any();
        }
        let Some(service) = param("service") else {
            return view! { <fleet::FleetOverview now=now /> }.into_any();
        };
        let run = param("run");
        let tab = view.unwrap_or_else(|| "deployments".to_owned());
        let nav = view! {
            <nav class="tabs" aria-label="Service tabs">
                <span class="service-name">{service.clone()}</span>
                <a href=tab_href("provisioning", &service, None) aria-current=(tab == "provisioning").then_some("page")>
                    "Provisioning"
                </a>
                <a href=tab_href("pipelines", &service, None) aria-current=(tab == "pipelines").then_some("page")>
                    "Pipelines"
                </a>
                <a href=tab_href("deployments", &service, None) aria-current=(tab == "deployments").then_some("page")>
                    "Deployments"
                </a>
            </nav>
        };
        if tab == "provisioning" {
            return view! {
                {nav}
                <provisioning::ProvisioningTab service=service.clone() now=now />
            }
            .into_any();
        }
        let snapshot = LocalResource::new({
            let service = service.clone();
            move || api::service_snapshot(service.clone())
        });
        view! {
            {nav}
            <Transition fallback=|| view! { <p class="state loading">"Loading…"</p> }>
                {
                    let service = service.clone();
                    let tab = tab.clone();
                    let run = run.clone();
                    move || {
                        snapshot
                            .get()
                            .map(|result: Result<ServiceSnapshot, ApiError>| match result {
                                Ok(ServiceSnapshot { snapshot, health }) => {
                                    let notice = view! {
                                        <provisioning::HealthNotice health=health now=snapshot.now />
                                    };
                                    let tab = match tab.as_str() {
                                        "pipelines" => view! {
                                            <pipelines::PipelinesTab snapshot=snapshot service=service.clone() run=run.clone() now=now />
                                        }
                                            .into_any(),
                                        _ => view! {
                                            <deployments::DeploymentsTab snapshot=snapshot service=service.clone() now=now />
                                        }
                                            .into_any(),
                                    };
                                    view! { {notice} {tab} }.into_any()
                                }
                                Err(err) => crate::ui::error_alert(&err),
                            })
                    }
                }
            </Transition>
        }
        .into_any()
    }
}
