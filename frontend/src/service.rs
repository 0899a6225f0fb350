//! `/tower?view=…`: the Services tab, or one service's tab bar and tab ([`Tab`]); without a
//! service, the fleet.

use leptos::prelude::*;

use crate::fleet;
use crate::nav::{tab_href, Page, Tab};

#[component]
pub fn ServicePage() -> impl IntoView {
    let query = crate::nav::use_query();
    let page = Memo::new(move |_| query.with(Page::of_query));
    move || match page.get() {
        Page::Services => view! {
            <h2>"Services"</h2>
            {crate::tabs::services_page()}
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
                        <a
                            href=tab_href(t, &service, None)
                            aria-current=(current == Some(t)).then_some("page")
                            on:mouseenter=move |_| t.preload()
                            on:focus=move |_| t.preload()
                        >
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
                Ok(tab) => tab.page(service, run, record),
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

/// Fetches the code of the tab the location names (its chunk) while the page signs in, so it
/// is here when the page opens.
pub fn preload() {
    match crate::nav::use_query().with_untracked(Page::of_query) {
        Page::Service { tab: Ok(tab), .. } => tab.preload(),
        Page::Service { tab: Err(_), .. } | Page::Services | Page::Fleet => {}
    }
}
