//! Groups: the organisation's iMessage groups; creating one with participants, a name and its
//! opening message; renaming, adding and removing participants, and leaving. Each goes through
//! the send path's group functions (`send::groups::{create, change}`) with the staff member as
//! the caller and the form's own idempotency key, and shows the line's answer: done, not known
//! yet (the reconciler asks the line), or refused with its reason.

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
    session::{SignedIn, csrf_ok, csrf_refused},
    shared::{describe, line_choices, page_context, refused, unavailable},
};
use crate::{
    db::{self, Page, conversations::ConversationFilter},
    domain::{id::LineId, lifecycle::ConversationKind, phone::E164, scope::Scope},
    error::ApiError,
    fields::phone_field,
    send::groups::participants,
    send::{
        groups::{self, CHANGES_PATH, ChangeInput, GroupInput},
        request::idempotency,
    },
    services::Services,
};

/// `GET /console/groups`.
pub async fn list(State(state): State<Services>, signed_in: SignedIn) -> Response {
    list_page(&state, &signed_in, StatusCode::OK, context! {}).await
}

async fn list_page(state: &Services, signed_in: &SignedIn, status: StatusCode, extra: minijinja::Value) -> Response {
    let caller = &signed_in.principal;
    if let Err(error) = caller.require(Scope::Read) {
        return refused(&error);
    }
    let all = Page { limit: 200, before: None };
    let found =
        match db::conversations::list(&state.sender.db, &caller.org_id, &ConversationFilter::default(), &all).await {
            Ok(found) => found.rows,
            Err(error) => return unavailable(error),
        };
    let groups: Vec<_> = found
        .into_iter()
        .filter(|c| c.kind == ConversationKind::Group)
        .map(|g| context! { id => g.id, name => g.name, participants => g.participants, state => g.group_state })
        .collect();
    let lines = match line_choices(state, &caller.org_id).await {
        Ok(lines) => lines,
        Err(error) => return unavailable(error),
    };
    let context = context! { groups, lines, idempotency_key => crate::ids::new_id("console"), ..extra };
    render(status, "groups.html", page_context(signed_in, "groups", context))
}

#[derive(Deserialize)]
pub struct NewGroup {
    #[serde(default)]
    csrf: String,
    #[serde(default)]
    idempotency_key: String,
    #[serde(default)]
    participants: String,
    #[serde(default)]
    name: String,
    #[serde(default)]
    body: String,
    #[serde(default)]
    line_id: String,
}

/// `POST /console/groups`: participants one per line (or comma-separated).
pub async fn create(State(state): State<Services>, signed_in: SignedIn, Form(form): Form<NewGroup>) -> Response {
    if !csrf_ok(&signed_in, &form.csrf) {
        return csrf_refused();
    }
    let made = async {
        signed_in.principal.require(Scope::Send)?;
        let numbers: Vec<String> =
            form.participants.split([',', '\n']).map(str::trim).filter(|n| !n.is_empty()).map(String::from).collect();
        // The fingerprint is made from the normalised request once the line is known.
        let key = idempotency(Some(&form.idempotency_key), None, "/groups", String::new)?;
        let input = GroupInput {
            participants: participants(numbers, None)?,
            body: crate::fields::required_text("body", Some(form.body.clone()), 10_000)?,
            name: Some(form.name.trim().to_string()).filter(|n| !n.is_empty()),
            line_id: Some(form.line_id.clone()).filter(|l| !l.is_empty()).map(LineId::from),
            line_e164: None,
        };
        groups::create(&state.sender, &signed_in.principal, input, key).await
    };
    match made.await {
        Ok(sent) => Redirect::to(&format!("/console/groups/{}", sent.group.id)).into_response(),
        Err(error) => {
            let status = crate::web::errors::status(error.kind);
            list_page(&state, &signed_in, status, context! { error => describe(&error) }).await
        }
    }
}

/// `GET /console/groups/{id}`.
pub async fn group(State(state): State<Services>, signed_in: SignedIn, Path(id): Path<String>) -> Response {
    group_page(&state, &signed_in, &id, StatusCode::OK, context! {}).await
}

async fn group_page(
    state: &Services,
    signed_in: &SignedIn,
    id: &str,
    status: StatusCode,
    extra: minijinja::Value,
) -> Response {
    if let Err(error) = signed_in.principal.require(Scope::Read) {
        return refused(&error);
    }
    let group = match db::conversations::get(&state.sender.db, &signed_in.principal.org_id, id).await {
        Ok(Some(group)) if group.kind == ConversationKind::Group => group,
        Ok(_) => return refused(&ApiError::not_found("group")),
        Err(error) => return unavailable(error),
    };
    let context = context! {
        group => context! { id => group.id, name => group.name, participants => group.participants,
            state => group.group_state },
        idempotency_key => crate::ids::new_id("console"),
        ..extra
    };
    render(status, "group.html", page_context(signed_in, "groups", context))
}

#[derive(Deserialize)]
pub struct Change {
    #[serde(default)]
    csrf: String,
    #[serde(default)]
    idempotency_key: String,
    #[serde(default)]
    name: String,
    #[serde(default)]
    phone: String,
}

/// `POST /console/groups/{id}/{action}`: `rename`, `add`, `remove` or `leave`.
pub async fn change(
    State(state): State<Services>,
    signed_in: SignedIn,
    Path((id, action)): Path<(String, String)>,
    Form(form): Form<Change>,
) -> Response {
    if !csrf_ok(&signed_in, &form.csrf) {
        return csrf_refused();
    }
    let done = async {
        signed_in.principal.require(Scope::Send)?;
        let phone = || -> Result<E164, ApiError> { phone_field("phone", form.phone.trim(), None) };
        let input = match action.as_str() {
            "rename" => ChangeInput { name: Some(form.name.trim().to_string()), ..ChangeInput::default() },
            "add" => ChangeInput { add: vec![phone()?], ..ChangeInput::default() },
            "remove" => ChangeInput { remove: vec![phone()?], ..ChangeInput::default() },
            "leave" => ChangeInput { leave: true, ..ChangeInput::default() },
            _ => return Err(ApiError::not_found("action")),
        };
        // The fingerprint is made from the change once the group is read.
        let key = idempotency(Some(&form.idempotency_key), None, CHANGES_PATH, String::new)?;
        groups::change(&state.sender, &signed_in.principal, &id, input, key).await
    };
    match done.await {
        Ok(sent) => {
            let said = match sent.change.state {
                db::group_changes::ChangeState::Applied => "Done.",
                _ => "The line has not answered yet; msgline asks it again and shows the outcome here.",
            };
            group_page(&state, &signed_in, &id, StatusCode::OK, context! { notice => said }).await
        }
        Err(error) if error.kind == crate::error::ErrorKind::NotFound => refused(&error),
        Err(error) => {
            let status = crate::web::errors::status(error.kind);
            group_page(&state, &signed_in, &id, status, context! { error => describe(&error) }).await
        }
    }
}
