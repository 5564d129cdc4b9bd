//! Pools (owners): the organisation's sender pools, each with its lines and their health, and
//! the forms to make one, change its lines, name or failover delay, and delete it. Through the
//! pools service the API uses (`services::pools`).

use axum::{
    extract::{Path, State},
    http::StatusCode,
    response::{IntoResponse, Redirect, Response},
};
use minijinja::context;
use serde_json::Value;

use super::{
    pages::render,
    session::{SignedIn, csrf_ok, csrf_refused},
    shared::{FormPairs, describe, form_pairs, page_context, refused, unavailable},
};
use crate::{
    db::{self, Page},
    domain::id::PoolId,
    error::{ApiError, ErrorKind},
    services::{
        Services,
        pools::{self, FAILOVER_DEFAULT_SECONDS, PoolFields},
    },
};

const ALL: Page = Page { limit: 100, before: None };

/// `GET /console/pools`.
pub async fn list(State(state): State<Services>, signed_in: SignedIn) -> Response {
    page(&state, &signed_in, StatusCode::OK, None).await
}

async fn page(state: &Services, signed_in: &SignedIn, status: StatusCode, error: Option<String>) -> Response {
    let caller = &signed_in.principal;
    let found = match pools::list(state, caller, &ALL).await {
        Ok(found) => found.rows,
        Err(error) if error.kind == ErrorKind::Internal => return unavailable(describe(&error)),
        Err(error) => return refused(&error),
    };
    // Only the organisation's own lines go in a pool; a shared line is not offered.
    let lines = match db::lines::list_for_org(&state.sender.db, &caller.org_id, &ALL).await {
        Ok(lines) => lines.rows.into_iter().filter(|line| line.org_id.is_some()).collect::<Vec<_>>(),
        Err(error) => return unavailable(error),
    };
    let line_of = |id: &str| lines.iter().find(|line| line.id == id);
    let rows: Vec<minijinja::Value> = found
        .iter()
        .map(|pool| {
            let members: Vec<minijinja::Value> = pool
                .line_ids
                .iter()
                .map(|id| match line_of(id) {
                    Some(line) => context! { id, e164 => line.e164, health => line.health.as_str(),
                    health_reason => line.health_reason },
                    None => context! { id, e164 => id, health => "unknown" },
                })
                .collect();
            let choices: Vec<minijinja::Value> = lines
                .iter()
                .map(|line| context! { id => line.id, e164 => line.e164, chosen => pool.line_ids.contains(&line.id) })
                .collect();
            context! { id => pool.id, name => pool.name, failover_after_seconds => pool.failover_after_seconds,
            members, choices }
        })
        .collect();
    let choices: Vec<minijinja::Value> =
        lines.iter().map(|line| context! { id => line.id, e164 => line.e164, chosen => false }).collect();
    let context = context! { pools => rows, choices, failover_default => FAILOVER_DEFAULT_SECONDS, error };
    render(status, "pools.html", page_context(signed_in, "pools", context))
}

/// The form as the service's fields: `line_id` once per ticked line; an empty delay is the default.
fn fields_of(form: &FormPairs) -> Result<PoolFields, ApiError> {
    let failover = form.one("failover_after_seconds");
    let failover = match failover.trim() {
        "" => None,
        text => match text.parse::<i64>() {
            Ok(seconds) => Some(Value::from(seconds)),
            Err(_) => {
                return Err(ApiError::invalid(
                    "failover_after_seconds",
                    "failover_after_seconds is a whole number of seconds",
                ));
            }
        },
    };
    Ok(PoolFields {
        name: Some(form.one("name")),
        line_ids: Some(form.all("line_id")),
        failover_after_seconds: failover,
    })
}

/// `POST /console/pools`: a new pool.
pub async fn create(State(state): State<Services>, signed_in: SignedIn, body: axum::body::Bytes) -> Response {
    let form = form_pairs(&body);
    if !csrf_ok(&signed_in, &form.one("csrf")) {
        return csrf_refused();
    }
    let done = match fields_of(&form) {
        Ok(fields) => pools::create(&state, &signed_in.principal, fields).await.map(|_| ()),
        Err(error) => Err(error),
    };
    answer(&state, &signed_in, done).await
}

/// `POST /console/pools/{id}/{action}`: `update` (the whole form) or `delete`.
pub async fn act(
    State(state): State<Services>,
    signed_in: SignedIn,
    Path((id, action)): Path<(String, String)>,
    body: axum::body::Bytes,
) -> Response {
    let form = form_pairs(&body);
    if !csrf_ok(&signed_in, &form.one("csrf")) {
        return csrf_refused();
    }
    let (caller, id) = (&signed_in.principal, PoolId::from(id));
    let done = match action.as_str() {
        "update" => match fields_of(&form) {
            Ok(fields) => pools::update(&state, caller, &id, fields).await.map(|_| ()),
            Err(error) => Err(error),
        },
        "delete" => pools::delete(&state, caller, &id).await,
        _ => return super::pages::notice(StatusCode::NOT_FOUND, "Not found", "There is no such action."),
    };
    answer(&state, &signed_in, done).await
}

/// Back to the list when it worked; the list with the error (and the field at fault) when the
/// form was wrong; a refusal page otherwise.
async fn answer(state: &Services, signed_in: &SignedIn, done: Result<(), ApiError>) -> Response {
    match done {
        Ok(()) => Redirect::to("/console/pools").into_response(),
        Err(error) if error.kind == ErrorKind::Internal => unavailable(describe(&error)),
        Err(error) if matches!(error.kind, ErrorKind::Invalid | ErrorKind::Conflict | ErrorKind::NotFound) => {
            let status = crate::web::errors::status(error.kind);
            page(state, signed_in, status, Some(describe(&error))).await
        }
        Err(error) => refused(&error),
    }
}
