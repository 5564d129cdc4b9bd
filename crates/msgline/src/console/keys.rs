//! API keys: the organisation's active keys, and creating (scopes and line binding), rotating
//! (with a grace period) and revoking them, through the keys service the API
//! uses (`services::keys::{create, rotate, revoke}`). A new key's secret is on the page that answers the
//! form, once, with a button that copies it; it is never shown again.

use axum::{
    Form,
    extract::{Path, State},
    http::StatusCode,
    response::{IntoResponse, Redirect, Response},
};
use minijinja::context;
use serde::Deserialize;

use super::{
    pages::render,
    session::{CsrfForm, SignedIn, csrf_ok, csrf_refused},
    shared::{describe, form_pairs, line_choices, page_context, refused, unavailable},
};
use crate::{
    clock,
    db::{self, Page},
    domain::{id::KeyId, scope::Scope},
    services::{Services, keys::CreateKey},
};

/// `GET /console/keys`.
pub async fn list(State(state): State<Services>, signed_in: SignedIn) -> Response {
    page(&state, &signed_in, StatusCode::OK, context! {}).await
}

/// The page, with what the last form left: a new secret, or an error.
async fn page(state: &Services, signed_in: &SignedIn, status: StatusCode, extra: minijinja::Value) -> Response {
    let caller = &signed_in.principal;
    if let Err(error) = caller.require(Scope::Keys) {
        return refused(&error);
    }
    let all = Page { limit: 100, before: None };
    let keys = match db::keys::list_active(&state.sender.db, &caller.org_id, caller.bound_line(), &all).await {
        Ok(found) => found.rows,
        Err(error) => return unavailable(error),
    };
    let lines = match line_choices(state, &caller.org_id).await {
        Ok(lines) => lines,
        Err(error) => return unavailable(error),
    };
    let keys: Vec<_> = keys
        .iter()
        .map(|k| {
            context! {
                id => k.id, name => k.name, scopes => k.scopes.names(), line_id => k.line_id,
                hint => format!("…{}", k.key_hint), created_at => clock::rfc3339(k.created_at),
                expires_at => clock::rfc3339_opt(k.expires_at),
            }
        })
        .collect();
    let scopes: Vec<&str> = Scope::ALL.iter().map(|s| s.as_str()).collect();
    let context = context! { keys, lines, scopes, ..extra };
    render(status, "keys.html", page_context(signed_in, "keys", context))
}

/// `POST /console/keys`: `scope` once per ticked box.
pub async fn create(State(state): State<Services>, signed_in: SignedIn, body: axum::body::Bytes) -> Response {
    let form = form_pairs(&body);
    if !csrf_ok(&signed_in, &form.one("csrf")) {
        return csrf_refused();
    }
    let request = CreateKey {
        name: Some(form.one("name")).filter(|n| !n.trim().is_empty()),
        scopes: form.all("scope"),
        line_id: Some(form.one("line_id")).filter(|l| !l.is_empty()),
    };
    match crate::services::keys::create(&state, &signed_in.principal, request).await {
        Ok((key, secret)) => {
            let created = context! { id => key.id, name => key.name, secret };
            page(&state, &signed_in, StatusCode::CREATED, context! { created }).await
        }
        Err(error) => {
            let status = crate::web::errors::status(error.kind);
            page(&state, &signed_in, status, context! { error => describe(&error) }).await
        }
    }
}

#[derive(Deserialize)]
pub struct Rotate {
    #[serde(default)]
    csrf: String,
    #[serde(default)]
    grace_seconds: Option<i64>,
}

/// `POST /console/keys/{id}/rotate`.
pub async fn rotate(
    State(state): State<Services>,
    signed_in: SignedIn,
    Path(id): Path<String>,
    Form(form): Form<Rotate>,
) -> Response {
    if !csrf_ok(&signed_in, &form.csrf) {
        return csrf_refused();
    }
    let grace = form.grace_seconds.unwrap_or(86_400);
    match crate::services::keys::rotate(&state, &signed_in.principal, &KeyId::from(id.as_str()), grace).await {
        Ok((key, secret, ends)) => {
            let created = context! { id => key.id, name => key.name, secret, replaces => id,
            old_until => clock::rfc3339(ends) };
            page(&state, &signed_in, StatusCode::CREATED, context! { created }).await
        }
        Err(error) => refused(&error),
    }
}

/// `POST /console/keys/{id}/revoke`.
pub async fn revoke(
    State(state): State<Services>,
    signed_in: SignedIn,
    Path(id): Path<String>,
    Form(form): Form<CsrfForm>,
) -> Response {
    if !csrf_ok(&signed_in, &form.csrf) {
        return csrf_refused();
    }
    match crate::services::keys::revoke(&state, &signed_in.principal, &KeyId::from(id.as_str())).await {
        Ok(_) => Redirect::to("/console/keys").into_response(),
        Err(error) => refused(&error),
    }
}
