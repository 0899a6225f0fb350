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
use leptos::wasm_split::wasm_split;

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
    /// record to open). Its code is a chunk of its own, fetched when the tab is first opened
    /// (or sooner, by [`Tab::preload`]); until it is here the page says so.
    pub fn page(self, service: String, run: Option<String>, record: Option<String>) -> AnyView {
        let title = self.title();
        lazily(
            format!("Loading the {title} tab…"),
            self.open(service, run, record),
        )
    }

    /// Fetches the tab's chunk without opening it (its link is hovered or focused).
    pub fn preload(self) {
        leptos::task::spawn_local(async move {
            // A chunk that does not come now is asked for again when the tab opens.
            let _ = match self {
                Tab::Provisioning => preload_provisioning().await,
                Tab::PullRequests => preload_pulls().await,
                Tab::Pipelines => preload_pipelines().await,
                Tab::Deployments => preload_deployments().await,
                Tab::Releases => preload_releases().await,
                Tab::Runtime => preload_runtime().await,
                Tab::Config => preload_config().await,
            };
        });
    }

    async fn open(
        self,
        service: String,
        run: Option<String>,
        record: Option<String>,
    ) -> Result<AnyView, Unloaded> {
        match self {
            Tab::Provisioning => provisioning_page(service).await,
            Tab::PullRequests => pulls_page(service).await,
            Tab::Pipelines => pipelines_page(service, run).await,
            Tab::Deployments => deployments_page(service).await,
            Tab::Releases => releases_page(service, record).await,
            Tab::Runtime => runtime_page(service).await,
            Tab::Config => config_page(service).await,
        }
    }
}

/// A part of a page whose code is a chunk of its own: `loading` while `opened` fetches it,
/// then the part, or why it could not come.
///
/// No `Suspense` (nor `Transition`): a resource read under one holds its fallback up each
/// time it fetches again, and a part's answers are fetched again on every change — early in
/// a busy world the part would stay "loading". The part is made once, when its code is in,
/// under this owner (its contexts, its cleanup) and tracked by nothing.
pub(crate) fn lazily(
    loading: String,
    opened: impl std::future::Future<Output = Result<AnyView, Unloaded>> + 'static,
) -> AnyView {
    lazily_as(
        move || view! { <p class="state loading" role="status">{loading.clone()}</p> }.into_any(),
        opened,
    )
}

/// [`lazily`], showing `placeholder` until the part has come (e.g. the part's own layout
/// with its figures still unknown, so nothing moves when it arrives).
pub(crate) fn lazily_as(
    placeholder: impl Fn() -> AnyView + Send + Sync + 'static,
    opened: impl std::future::Future<Output = Result<AnyView, Unloaded>> + 'static,
) -> AnyView {
    let part = RwSignal::new_local(None::<AnyView>);
    leptos::task::spawn_local(leptos::reactive::computed::ScopedFuture::new_untracked(
        async move {
            let view = opened.await.unwrap_or_else(|Unloaded| {
                view! {
                    <p class="state error" role="alert">
                        "✖ This part of the page could not be fetched (the network, or a newer \
                         Tower replaced it). Reload the page to try again."
                    </p>
                }
                .into_any()
            });
            // Drawn in a task of its own, not in the one that fetched and started its code,
            // so neither holds the page for long.
            crate::live::sleep(std::time::Duration::ZERO).await;
            // The page may have moved on (the signal is gone with its owner).
            part.try_set(Some(view));
        },
    ));
    (move || {
        part.track();
        part.try_update_untracked(Option::take)
            .flatten()
            .unwrap_or_else(&placeholder)
    })
    .into_any()
}

/// A tab's chunk did not load.
#[derive(Clone, Copy, Debug)]
pub struct Unloaded;

impl From<leptos::wasm_split::SplitLoaderError> for Unloaded {
    fn from(_: leptos::wasm_split::SplitLoaderError) -> Self {
        Unloaded
    }
}

// Each tab's page is a split point: the code only it reaches goes into its own chunk
// (`cargo xtask frontend` splits the module with `wasm_split_cli_support`). The loader glue
// the macro writes is FFI into the chunk, hence `unsafe_code` allowed on these alone.

/// The Services tab (`/tower?view=services`). Not a part: it is small (2.6 KB brotli in the
/// main module), and a page opened on it draws sooner without a part's dozen chunks
/// sharing the line with the main module (docs/frontend-build.md).
pub fn services_page() -> AnyView {
    view! { <provisioning::ServicesTab /> }.into_any()
}

#[allow(unsafe_code)]
#[wasm_split(provisioning, wasm_split_path = ::leptos::wasm_split, preload(preload_provisioning), fallible)]
fn provisioning_page(service: String) -> Result<AnyView, Unloaded> {
    Ok(view! { <provisioning::ProvisioningTab service=service /> }.into_any())
}

#[allow(unsafe_code)]
#[wasm_split(pulls, wasm_split_path = ::leptos::wasm_split, preload(preload_pulls), fallible)]
fn pulls_page(service: String) -> Result<AnyView, Unloaded> {
    Ok(view! { <pulls::PullsTab service=service /> }.into_any())
}

#[allow(unsafe_code)]
#[wasm_split(pipelines, wasm_split_path = ::leptos::wasm_split, preload(preload_pipelines), fallible)]
fn pipelines_page(service: String, run: Option<String>) -> Result<AnyView, Unloaded> {
    Ok(view! { <PipelinesPage service=service run=run /> }.into_any())
}

#[allow(unsafe_code)]
#[wasm_split(deployments, wasm_split_path = ::leptos::wasm_split, preload(preload_deployments), fallible)]
fn deployments_page(service: String) -> Result<AnyView, Unloaded> {
    Ok(view! { <DeploymentsPage service=service /> }.into_any())
}

#[allow(unsafe_code)]
#[wasm_split(releases, wasm_split_path = ::leptos::wasm_split, preload(preload_releases), fallible)]
fn releases_page(service: String, record: Option<String>) -> Result<AnyView, Unloaded> {
    Ok(match record {
        Some(release) => {
            view! { <records::RecordPage service=service release=release /> }.into_any()
        }
        None => view! { <ReleasesPage service=service /> }.into_any(),
    })
}

#[allow(unsafe_code)]
#[wasm_split(runtime, wasm_split_path = ::leptos::wasm_split, preload(preload_runtime), fallible)]
fn runtime_page(service: String) -> Result<AnyView, Unloaded> {
    Ok(view! { <runtime::RuntimeTab service=service /> }.into_any())
}

#[allow(unsafe_code)]
#[wasm_split(config, wasm_split_path = ::leptos::wasm_split, preload(preload_config), fallible)]
fn config_page(service: String) -> Result<AnyView, Unloaded> {
    Ok(view! { <config::ConfigTab service=service /> }.into_any())
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
    let dora = crate::fleet::dora_panel(Some(service.clone()), now, None);
    view! { {panel}{matrix}{dora}{records} }
}
