//! Who may act on a service through Tower: its owner in the Backstage catalog, or a tool
//! whose Tower token is granted the route. Everyone else is told why not.
//!
//! A signed-in Backstage user stands for itself and its groups — the `ent` of Backstage's
//! user info (`GET /api/auth/v1/userinfo`, asked with the user's own token; Backstage's
//! user tokens carry no `ent` claim). The service's owner is the catalog component's
//! `spec.owner`, looked up with the same token, so Tower sees what the user sees. Asked
//! afresh for every decision: a change of owner or membership counts at once.

use axum::http::HeaderMap;
use tower_shared::api::Access;

use crate::auth::{Caller, Via};
use crate::live::backstage::{Backstage, BackstageError};
use crate::routes::ApiError;
use crate::state::AppState;

/// The route a tool's token must be granted to promote.
pub const PROMOTE_ROUTE: &str = "/api/releases/promote";

/// A catalog owner as a full entity ref: `team-a` → `group:default/team-a`,
/// `user:ana` → `user:default/ana`.
pub fn owner_ref(owner: &str) -> String {
    let (kind, rest) = owner.split_once(':').unwrap_or(("group", owner));
    let (namespace, name) = rest.split_once('/').unwrap_or(("default", rest));
    format!("{}:{}/{}", kind, namespace, name).to_ascii_lowercase()
}

/// Whether `caller` may promote `service`'s releases, and why not.
pub async fn may_promote(
    state: &AppState,
    caller: Option<&Caller>,
    headers: &HeaderMap,
    service: &str,
) -> Result<Access, ApiError> {
    may(state, caller, headers, service, PROMOTE_ROUTE).await
}

/// [`may_promote`] for the acting route `route`: a tool must be granted that route.
pub async fn may(
    state: &AppState,
    caller: Option<&Caller>,
    headers: &HeaderMap,
    service: &str,
    route: &str,
) -> Result<Access, ApiError> {
    let subject = caller
        .map_or("anonymous", |c| c.subject.as_str())
        .to_owned();
    let answer = |owner: Option<String>, why_not: Option<String>| Access {
        service: service.to_owned(),
        subject: subject.clone(),
        owner,
        may_promote: why_not.is_none(),
        why_not,
    };
    let Some(caller) = caller else {
        return Ok(answer(None, Some("nobody signed in".to_owned())));
    };
    match caller.via {
        Via::Tool if state.gate.tool_allows(&caller.subject, route) => {
            return Ok(answer(None, None))
        }
        Via::Tool => {
            return Ok(answer(
                None,
                Some(format!(
                    "{} is a tool whose Tower token is not granted {route}",
                    caller.subject
                )),
            ))
        }
        Via::Open => {
            return Ok(answer(
                None,
                Some(
                    "Tower's API is open here (openApi): nobody signs in, so nobody can be \
                     named on a promotion"
                        .to_owned(),
                ),
            ))
        }
        Via::Proxy => {
            return Ok(answer(
                None,
                Some(format!(
                    "Tower cannot tell the groups of {} from a proxy's header: sign in with \
                     Backstage to promote",
                    caller.subject
                )),
            ))
        }
        Via::BackstageUser => {}
    }
    let (backstage, token) = as_the_user(state, caller, headers)?;
    let entity = backstage
        .entity("component", "default", service, &token)
        .await
        .map_err(from_backstage)?;
    let ingestor = state
        .backstage
        .as_deref()
        .and_then(|b| b.ingestor_location.as_deref())
        .unwrap_or(crate::config::INGESTOR_LOCATION);
    if let Some(elsewhere) = entity
        .as_ref()
        .map(location_of)
        .filter(|location| !location.starts_with(ingestor))
    {
        return Ok(answer(
            None,
            Some(format!(
                "the catalog's {service} was not written by Hangar's ingestor (it comes from \
                 {elsewhere:?}), so Tower does not take its owner"
            )),
        ));
    }
    let Some(owner) = entity
        .as_ref()
        .and_then(|e| e["spec"]["owner"].as_str())
        .map(owner_ref)
    else {
        return Ok(answer(
            None,
            Some(format!(
                "the catalog names no owner of {service}, so nobody may promote it from Tower"
            )),
        ));
    };
    let ownership = backstage.ownership(&token).await.map_err(from_backstage)?;
    let member = ownership
        .iter()
        .any(|r| r.eq_ignore_ascii_case(&owner) || owner_ref(r) == owner);
    let why_not = (!member).then(|| {
        format!(
            "{} is not in {owner}, which owns {service} in the catalog",
            caller.subject
        )
    });
    Ok(answer(Some(owner), why_not))
}

/// Where the catalog says `entity` comes from (its `backstage.io/managed-by-location`),
/// empty when it does not say.
fn location_of(entity: &serde_json::Value) -> &str {
    entity["metadata"]["annotations"]["backstage.io/managed-by-location"]
        .as_str()
        .unwrap_or_default()
}

/// Backstage, and the user's own token to ask it with.
fn as_the_user(
    state: &AppState,
    caller: &Caller,
    headers: &HeaderMap,
) -> Result<(Backstage, String), ApiError> {
    let token = caller
        .backstage_token(headers)
        .ok_or_else(|| ApiError::Unauthorized {
            field: "authorization",
            message: "send your Backstage user token as `Authorization: Bearer …`".to_owned(),
        })?;
    let backstage = state
        .backstage
        .as_deref()
        .map(|b| Backstage::new(&b.url, state.http.clone()))
        .ok_or_else(|| {
            ApiError::unavailable("Tower has no Backstage configured to ask who owns what")
        })?;
    Ok((backstage, token))
}

/// Backstage's refusal of the caller's token as 401 naming `authorization`; anything else
/// it answered as a bad gateway.
pub(crate) fn from_backstage(err: BackstageError) -> ApiError {
    match err {
        BackstageError::Refused => ApiError::Unauthorized {
            field: "authorization",
            message: err.to_string(),
        },
        other => ApiError::Upstream {
            message: other.to_string(),
        },
    }
}

/// Lets `caller` read what may hold secrets of `service` (its containers' logs) through
/// `route`, or 403 naming `service`: a signed-in user when Backstage's catalog shows them the
/// service's component (asked with their own token, so Backstage's permissions decide); a
/// tool whose token is granted `route`. Behind an authenticating proxy Tower cannot ask
/// Backstage as the user: the proxy's sign-in decides. With `openApi`, nobody is asked.
pub async fn may_see(
    state: &AppState,
    caller: Option<&Caller>,
    headers: &HeaderMap,
    service: &str,
    route: &str,
) -> Result<(), ApiError> {
    let refused = |why: String| ApiError::Forbidden {
        field: "service",
        message: format!("you may not read the logs of {service}: {why}"),
    };
    let Some(caller) = caller else {
        return Err(refused("nobody signed in".to_owned()));
    };
    match caller.via {
        Via::Tool if state.gate.tool_allows(&caller.subject, route) => Ok(()),
        Via::Tool => Err(refused(format!(
            "{} is a tool whose Tower token is not granted {route}",
            caller.subject
        ))),
        Via::Open | Via::Proxy => Ok(()),
        Via::BackstageUser => {
            let (backstage, token) = as_the_user(state, caller, headers)?;
            match backstage
                .entity("component", "default", service, &token)
                .await
                .map_err(from_backstage)?
            {
                Some(_) => Ok(()),
                None => Err(refused(format!(
                    "Backstage's catalog shows {} no component {service}",
                    caller.subject
                ))),
            }
        }
    }
}

/// What a route that acts does: its path (a tool's token must be granted it) and, in a few
/// words, the verb a refusal names ("you may not `verb` <service>: …").
#[derive(Clone, Copy, Debug)]
pub struct Act<'a> {
    pub route: &'a str,
    pub verb: &'a str,
}

/// [`may_promote`] for a route that acts: the caller's access when it may, else 403 naming
/// `service` and why.
pub async fn required(
    state: &AppState,
    caller: Option<&Caller>,
    headers: &HeaderMap,
    service: &str,
    act: Act<'_>,
) -> Result<Access, ApiError> {
    let verb = act.verb;
    let access = may(state, caller, headers, service, act.route).await?;
    match &access.why_not {
        Some(why_not) => Err(ApiError::Forbidden {
            field: "service",
            message: format!("you may not {verb} {service}: {why_not}"),
        }),
        None => Ok(access),
    }
}

#[cfg(test)]
mod tests {
    use super::owner_ref;

    #[test]
    fn owners_read_as_full_refs() {
        assert_eq!(owner_ref("team-a"), "group:default/team-a");
        assert_eq!(owner_ref("group:default/team-a"), "group:default/team-a");
        assert_eq!(owner_ref("user:Ana"), "user:default/ana");
        assert_eq!(owner_ref("group:ops/SRE"), "group:ops/sre");
    }
}
