//! The per-service answers served whole, made once per change of the snapshot
//! ([`crate::tabs::Tabs`]) and answered as bytes: `GET /api/snapshot?service=NAME` (the
//! service's objects), and `/api/<id>` for each tab `tower_shared::whole_tabs` names
//! (`/api/deployments`, `/api/releases`, `/api/config`: the Config tab's read-only half),
//! with the health notices.

use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::Response;
use axum::routing::get;
use axum::Router;
use tower_shared::served::{EachWholeTab, WholeTab};

use super::params::ServiceName;
use super::ApiError;
use crate::state::AppState;
use crate::tabs::{PerService, Whole};

/// `GET <the tab's route>?service=NAME`: `A`'s view of the service; 404 naming `service`
/// when Tower knows nothing of it.
pub async fn serve<A: PerService>(
    State(state): State<AppState>,
    ServiceName(service): ServiceName,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let view = state
        .source
        .tabs()
        .view::<A>(&state.source.derived(), &service)
        .ok_or_else(|| ApiError::no_service("service", &service))?;
    Ok(view.respond(&headers).await)
}

/// Every tab `tower_shared::whole_tabs` names, each served at `GET /api/<id>?service=`.
pub fn whole() -> Router<AppState> {
    struct Routes(Router<AppState>);
    impl EachWholeTab for Routes {
        fn tab<A: WholeTab>(&mut self) {
            let routes = std::mem::take(&mut self.0);
            self.0 = routes.route(&format!("/api/{}", A::ID), get(serve::<Whole<A>>));
        }
    }
    let mut routes = Routes(Router::new());
    tower_shared::whole_tabs(&mut routes);
    routes.0
}
