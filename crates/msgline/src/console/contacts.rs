//! Contacts (search, edit, opt-out state) and opt-outs (list, clear). Saving and clearing go
//! through the services the API uses (`services::contacts::save`, `services::opt_outs::clear`), with the
//! staff member as the caller.

use axum::{
    Form,
    extract::{Path, Query, State},
    http::StatusCode,
    response::{IntoResponse, Redirect, Response},
};
use minijinja::context;
use serde::{Deserialize, Serialize};

use super::{
    pages::{notice, render},
    session::{CsrfForm, SignedIn, csrf_ok, csrf_refused},
    shared::{describe, page_context, refused, unavailable},
};
use crate::{
    clock,
    db::{self, Page, contacts::Contact, conversations::ConversationFilter},
    domain::{id::OptOutId, scope::Scope},
    services::{Services, contacts::UpsertContact},
};

#[derive(Serialize)]
struct Shown {
    id: String,
    phone: String,
    name: Option<String>,
    email: Option<String>,
    organization: Option<String>,
    note: Option<String>,
    opted_out_at: Option<String>,
    imessage_reachable: Option<bool>,
}

fn shown(contact: &Contact) -> Shown {
    Shown {
        id: contact.id.clone(),
        phone: contact.phone.clone(),
        name: contact.name.clone(),
        email: contact.email.clone(),
        organization: contact.organization.clone(),
        note: contact.note.clone(),
        opted_out_at: clock::rfc3339_opt(contact.opted_out_at),
        imessage_reachable: contact.imessage_reachable,
    }
}

#[derive(Deserialize)]
pub struct Search {
    #[serde(default)]
    q: String,
}

/// `GET /console/contacts`.
pub async fn list(State(state): State<Services>, signed_in: SignedIn, Query(search): Query<Search>) -> Response {
    if let Err(error) = signed_in.principal.require(Scope::Read) {
        return refused(&error);
    }
    let q = search.q.trim().chars().take(200).collect::<String>();
    let page = Page { limit: 50, before: None };
    match db::contacts::search(&state.sender.db, &signed_in.principal.org_id, Some(&q), &page).await {
        Ok(found) => {
            let contacts: Vec<Shown> = found.rows.iter().map(shown).collect();
            render(StatusCode::OK, "contacts.html", page_context(&signed_in, "contacts", context! { contacts, q }))
        }
        Err(error) => unavailable(error),
    }
}

/// `GET /console/contacts/{id}`.
pub async fn contact(State(state): State<Services>, signed_in: SignedIn, Path(id): Path<String>) -> Response {
    contact_page(&state, &signed_in, &id, StatusCode::OK, None, None).await
}

async fn contact_page(
    state: &Services,
    signed_in: &SignedIn,
    id: &str,
    status: StatusCode,
    error: Option<String>,
    saved: Option<&str>,
) -> Response {
    if let Err(error) = signed_in.principal.require(Scope::Read) {
        return refused(&error);
    }
    let org_id = &signed_in.principal.org_id;
    let contact = match db::contacts::get(&state.sender.db, org_id, id).await {
        Ok(Some(contact)) => contact,
        Ok(None) => return notice(StatusCode::NOT_FOUND, "Not found", "There is no such contact."),
        Err(error) => return unavailable(error),
    };
    let filter = ConversationFilter { contact_id: Some(contact.id.clone()), ..ConversationFilter::default() };
    let conversations =
        match db::conversations::list(&state.sender.db, org_id, &filter, &Page { limit: 20, before: None }).await {
            Ok(found) => found.rows.into_iter().map(|c| c.id).collect::<Vec<_>>(),
            Err(error) => return unavailable(error),
        };
    let opt_outs = match db::opt_outs::list(
        &state.sender.db,
        org_id,
        None,
        Some(&contact.phone),
        &Page { limit: 20, before: None },
    )
    .await
    {
        Ok(found) => found
            .rows
            .into_iter()
            .map(|o| {
                context! { id => o.id, line_id => o.line_id, keyword => o.keyword,
                created_at => clock::rfc3339(o.created_at) }
            })
            .collect::<Vec<_>>(),
        Err(error) => return unavailable(error),
    };
    let context = context! {
        contact => shown(&contact),
        conversations,
        opt_outs,
        error,
        saved,
        can_edit => signed_in.principal.scopes.contains(Scope::Contacts),
    };
    render(status, "contact.html", page_context(signed_in, "contacts", context))
}

#[derive(Deserialize)]
pub struct Edit {
    #[serde(default)]
    csrf: String,
    #[serde(default)]
    name: String,
    #[serde(default)]
    email: String,
    #[serde(default)]
    organization: String,
    #[serde(default)]
    note: String,
}

/// `POST /console/contacts/{id}`: saves the contact's fields (an empty field clears it).
pub async fn save(
    State(state): State<Services>,
    signed_in: SignedIn,
    Path(id): Path<String>,
    Form(form): Form<Edit>,
) -> Response {
    if !csrf_ok(&signed_in, &form.csrf) {
        return csrf_refused();
    }
    let contact = match db::contacts::get(&state.sender.db, &signed_in.principal.org_id, &id).await {
        Ok(Some(contact)) => contact,
        Ok(None) => return notice(StatusCode::NOT_FOUND, "Not found", "There is no such contact."),
        Err(error) => return unavailable(error),
    };
    let request = UpsertContact {
        phone: contact.phone,
        name: Some(form.name),
        email: Some(form.email),
        organization: Some(form.organization),
        note: Some(form.note),
        default_country: None,
    };
    match crate::services::contacts::save(&state, &signed_in.principal, request).await {
        Ok(_) => contact_page(&state, &signed_in, &id, StatusCode::OK, None, Some("Saved.")).await,
        Err(error) => {
            let status = crate::web::errors::status(error.kind);
            contact_page(&state, &signed_in, &id, status, Some(describe(&error)), None).await
        }
    }
}

/// `GET /console/opt-outs`.
pub async fn opt_outs(State(state): State<Services>, signed_in: SignedIn) -> Response {
    if let Err(error) = signed_in.principal.require(Scope::Contacts) {
        return refused(&error);
    }
    let page = Page { limit: 100, before: None };
    match db::opt_outs::list(&state.sender.db, &signed_in.principal.org_id, None, None, &page).await {
        Ok(found) => {
            let opt_outs: Vec<_> = found
                .rows
                .into_iter()
                .map(|o| {
                    context! { id => o.id, phone => o.phone, contact_id => o.contact_id, line_id => o.line_id,
                    keyword => o.keyword, created_at => clock::rfc3339(o.created_at) }
                })
                .collect();
            render(StatusCode::OK, "opt_outs.html", page_context(&signed_in, "contacts", context! { opt_outs }))
        }
        Err(error) => unavailable(error),
    }
}

/// `POST /console/opt-outs/{id}/clear`: the number may be sent to again (no reply is sent).
pub async fn clear(
    State(state): State<Services>,
    signed_in: SignedIn,
    Path(id): Path<String>,
    Form(form): Form<CsrfForm>,
) -> Response {
    if !csrf_ok(&signed_in, &form.csrf) {
        return csrf_refused();
    }
    match crate::services::opt_outs::clear(&state, &signed_in.principal, &OptOutId::from(id.as_str())).await {
        Ok(_) => Redirect::to("/console/opt-outs").into_response(),
        Err(error) => refused(&error),
    }
}
