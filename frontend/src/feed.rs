//! What every page shares: the server's time, the sign-in, when to fetch again, and the
//! summary (the Services tab's strip, the masthead's badge and every page's health notice
//! read the same answer).

use chrono::{DateTime, Utc};
use leptos::prelude::*;
use tower_shared::api::Summary;

use crate::api::{self, ApiError};
use crate::live::Refresh;
use crate::signin::SignIn;

#[derive(Clone, Copy)]
pub struct Feed {
    /// Tower's time, ticking.
    pub now: ReadSignal<DateTime<Utc>>,
    pub signin: ReadSignal<SignIn>,
    pub refresh: Refresh,
    /// `GET /api/summary`, fetched again whenever anything changed; it moves only when
    /// the answer does (an unchanged answer draws nothing again, so focus stays put).
    pub summary: Memo<Option<Result<Summary, ApiError>>>,
}

impl std::fmt::Debug for Feed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Feed")
            .field("refresh", &self.refresh)
            .finish_non_exhaustive()
    }
}

/// Starts the clock, sign-in and event stream, and provides the [`Feed`] to every page.
pub fn provide() -> Feed {
    let now = crate::clock::ticking_now();
    let signin = crate::signin::start();
    let refresh = crate::live::start(signin);
    // Asked for once the page has signed in, not before.
    let summary = decoded(text_resource(move || {
        refresh.any.track();
        Box::pin(async {
            crate::signin::signed_in().await;
            api::summary().await
        })
    }));
    let summary = Memo::new(move |_| summary());
    let feed = Feed {
        now,
        signin,
        refresh,
        summary,
    };
    provide_context(feed);
    feed
}

/// A resource's latest value that moves only when it differs from the one before: pages
/// fetch again on every change event, and most answers are the same as last time.
pub fn settled<T: Clone + PartialEq + Send + Sync + 'static>(
    resource: LocalResource<T>,
) -> Memo<Option<T>> {
    Memo::new(move |_| resource.get())
}

/// An answer's text as it comes, or why it did not: what every page's resource holds.
pub type Text = Memo<Option<Result<String, ApiError>>>;

/// The text `fetch` answers, fetched again whenever what `fetch` reads changes; it moves
/// only when the text differs. Every page's resource is this one: the fetcher is boxed, so
/// the bundle carries one copy of the machinery that waits, whatever the page.
pub fn text_resource(fetch: impl Fn() -> api::TextFuture + 'static) -> Text {
    let fetch: Box<dyn Fn() -> api::TextFuture> = Box::new(fetch);
    settled(LocalResource::new(fetch))
}

/// An answer's text (a [`text_resource`]) read as a `T` when asked: a page reads it where it
/// draws, which runs again only when the text changed.
pub fn decoded<T: serde::de::DeserializeOwned>(
    text: Text,
) -> impl Fn() -> Option<Result<T, ApiError>> + Copy + Send + Sync + 'static {
    move || {
        text.with(|t| {
            t.as_ref()
                .map(|answer| answer.clone().and_then(|text| api::decode::<T>(&text)))
        })
    }
}

/// The page's [`Feed`].
pub fn feed() -> Feed {
    expect_context::<Feed>()
}
