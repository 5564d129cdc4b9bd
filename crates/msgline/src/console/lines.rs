//! Lines: each line the organisation sends from with its health, today's sends against its
//! budget, what waits for it, and (for an owner, on the organisation's own lines) pause, resume
//! and the sending policy, through the lines service the API uses (`services::lines`).

use axum::{
    extract::{Path, State},
    http::StatusCode,
    response::{IntoResponse, Redirect, Response},
};
use minijinja::context;
use serde_json::{Map, Value};

use super::{
    pages::render,
    session::{SignedIn, csrf_ok, csrf_refused},
    shared::{describe, form_pairs, page_context, refused, unavailable},
};
use crate::{
    clock,
    db::Page,
    domain::{id::LineId, line_policy::FIELDS, scope::Scope},
    error::ApiError,
    services::{
        Services,
        lines::{self, LineView},
    },
};

/// `GET /console/lines`.
pub async fn list(State(state): State<Services>, signed_in: SignedIn) -> Response {
    page(&state, &signed_in, StatusCode::OK, None).await
}

/// One line as the page shows it.
fn row(view: &LineView) -> minijinja::Value {
    let (line, outlook) = (&view.line, &view.outlook);
    let policy = serde_json::to_value(outlook.policy).unwrap_or_default();
    let limits: Vec<minijinja::Value> =
        FIELDS.iter().map(|field| context! { name => *field, value => policy[*field].as_u64() }).collect();
    context! {
        id => line.id, e164 => line.e164, kind => line.kind.as_str(), bridge_kind => line.bridge_kind.as_str(),
        shared => line.org_id.is_none(),
        health => line.health.as_str(), health_reason => line.health_reason,
        dial_in => line.bridge_settings.dial_in, device_seen_at => clock::rfc3339_opt(view.device_seen_at),
        day => outlook.usage.day, day_limit => outlook.policy.max_per_day,
        hour => outlook.usage.hour, new_contacts_day => outlook.usage.new_contacts_day,
        waiting => outlook.waiting, next_send_at => clock::rfc3339_opt(outlook.next_send_at),
        limits,
    }
}

async fn page(state: &Services, signed_in: &SignedIn, status: StatusCode, error: Option<String>) -> Response {
    let caller = &signed_in.principal;
    let views = match lines::list(state, caller, &Page { limit: 100, before: None }).await {
        Ok(views) => views.rows,
        Err(error) if error.kind == crate::error::ErrorKind::Internal => return unavailable(describe(&error)),
        Err(error) => return refused(&error),
    };
    let rows: Vec<minijinja::Value> = views.iter().map(row).collect();
    let can_change = caller.scopes.contains(Scope::Lines);
    render(status, "lines.html", page_context(signed_in, "lines", context! { lines => rows, can_change, error }))
}

/// `POST /console/lines/{id}/{action}`: `pause`, `resume` or `policy` (a field per limit; an
/// empty field is no limit).
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
    let caller = &signed_in.principal;
    let id = LineId::from(id);
    let done = match action.as_str() {
        "pause" => lines::pause(&state, caller, &id).await,
        "resume" => lines::resume(&state, caller, &id).await,
        "policy" => match policy_of(&form) {
            Ok(policy) => {
                lines::update(&state, caller, &id, &Value::Object(Map::from_iter([("policy".into(), policy)]))).await
            }
            Err(error) => Err(error),
        },
        _ => return super::pages::notice(StatusCode::NOT_FOUND, "Not found", "There is no such action."),
    };
    match done {
        Ok(_) => Redirect::to("/console/lines").into_response(),
        Err(error) if error.kind == crate::error::ErrorKind::Internal => unavailable(describe(&error)),
        Err(error)
            if error.kind == crate::error::ErrorKind::Invalid || error.kind == crate::error::ErrorKind::Conflict =>
        {
            let status = crate::web::errors::status(error.kind);
            page(&state, &signed_in, status, Some(describe(&error))).await
        }
        Err(error) => refused(&error),
    }
}

/// The form's limits as a `policy` object: a whole number sets a limit, an empty field removes it.
fn policy_of(form: &super::shared::FormPairs) -> Result<Value, ApiError> {
    let mut policy = Map::new();
    for field in FIELDS {
        let text = form.one(field);
        let text = text.trim();
        let value = match text {
            "" => Value::Null,
            number => match number.parse::<u64>() {
                Ok(n) => Value::from(n),
                Err(_) => {
                    return Err(ApiError::invalid(
                        format!("policy.{field}"),
                        format!("{field} is a whole number, or empty for no limit"),
                    ));
                }
            },
        };
        policy.insert(field.to_string(), value);
    }
    Ok(Value::Object(policy))
}
