//! Settings (the automatic STOP, START and HELP replies) and Staff (invite, change role, remove),
//! both for owners. The replies are saved through the API's own `PATCH /settings`
//! (`services::opt_outs::update_replies`); staff changes end or change sessions at once, since every
//! request reads its session and role from the database.

use axum::{
    Form,
    extract::{Path, State},
    http::StatusCode,
    response::{IntoResponse, Redirect, Response},
};
use minijinja::context;
use serde::Deserialize;

use super::{
    pages::{notice, render},
    session::{CsrfForm, LINK_MS, SignedIn, csrf_ok, csrf_refused},
    shared::{describe, page_context, unavailable},
};
use crate::{
    clock,
    db::{self, orgs::Replies},
    domain::staff::{Role, parse_email},
    services::{Services, opt_outs::UpdateSettings},
};

/// Owners only: the settings and the staff are the organisation's, beyond a member's role.
fn owner_only(signed_in: &SignedIn) -> Option<Response> {
    (signed_in.staff.role != Role::Owner)
        .then(|| notice(StatusCode::FORBIDDEN, "Not allowed", "Only an owner of the organisation can change this."))
}

fn replies_context(replies: &Replies) -> minijinja::Value {
    context! {
        opt_out => replies.opt_out_text(), opt_in => replies.opt_in_text(), help => replies.help_text(),
        opt_out_default => replies.opt_out.is_none(), opt_in_default => replies.opt_in.is_none(),
        help_default => replies.help.is_none(),
        fallback_sms => replies.default_fallback.as_deref() == Some("sms"),
    }
}

/// `GET /console/settings`.
pub async fn settings(State(state): State<Services>, signed_in: SignedIn) -> Response {
    if let Some(refusal) = owner_only(&signed_in) {
        return refusal;
    }
    match db::orgs::replies(&state.sender.db, &signed_in.principal.org_id).await {
        Ok(replies) => {
            let context = context! { replies => replies_context(&replies) };
            render(StatusCode::OK, "settings.html", page_context(&signed_in, "settings", context))
        }
        Err(error) => unavailable(error),
    }
}

#[derive(Deserialize)]
pub struct RepliesForm {
    #[serde(default)]
    csrf: String,
    #[serde(default)]
    opt_out_reply: String,
    #[serde(default)]
    opt_in_reply: String,
    #[serde(default)]
    help_reply: String,
    /// The default SMS fallback: `sms` or `none`.
    #[serde(default)]
    fallback: String,
}

/// `POST /console/settings`: an empty reply goes back to the default.
pub async fn save_settings(
    State(state): State<Services>,
    signed_in: SignedIn,
    Form(form): Form<RepliesForm>,
) -> Response {
    if !csrf_ok(&signed_in, &form.csrf) {
        return csrf_refused();
    }
    if let Some(refusal) = owner_only(&signed_in) {
        return refusal;
    }
    let body = UpdateSettings {
        opt_out_reply: Some(form.opt_out_reply),
        opt_in_reply: Some(form.opt_in_reply),
        help_reply: Some(form.help_reply),
        fallback: Some(form.fallback).filter(|f| !f.is_empty()).map(serde_json::Value::String),
        event_feed: None,
    };
    let (status, context) = match crate::services::opt_outs::update_replies(&state, &signed_in.principal, body).await {
        Ok(replies) => (StatusCode::OK, context! { replies => replies_context(&replies), saved => "Saved." }),
        Err(error) => match db::orgs::replies(&state.sender.db, &signed_in.principal.org_id).await {
            Ok(replies) => (
                crate::web::errors::status(error.kind),
                context! { replies => replies_context(&replies), error => describe(&error) },
            ),
            Err(error) => return unavailable(error),
        },
    };
    render(status, "settings.html", page_context(&signed_in, "settings", context))
}

/// `GET /console/staff`.
pub async fn staff(State(state): State<Services>, signed_in: SignedIn) -> Response {
    staff_page(&state, &signed_in, StatusCode::OK, context! {}).await
}

async fn staff_page(state: &Services, signed_in: &SignedIn, status: StatusCode, extra: minijinja::Value) -> Response {
    if let Some(refusal) = owner_only(signed_in) {
        return refusal;
    }
    match db::staff::list(&state.sender.db, &signed_in.principal.org_id).await {
        Ok(members) => {
            let members: Vec<_> = members
                .iter()
                .map(|m| {
                    context! { id => m.id, email => m.email, role => m.role.as_str(), has_password => m.has_password,
                    created_at => clock::rfc3339(m.created_at), me => m.id == signed_in.staff.id }
                })
                .collect();
            render(status, "staff.html", page_context(signed_in, "staff", context! { members, ..extra }))
        }
        Err(error) => unavailable(error),
    }
}

#[derive(Deserialize)]
pub struct Invite {
    #[serde(default)]
    csrf: String,
    #[serde(default)]
    email: String,
    #[serde(default)]
    role: String,
}

/// `POST /console/staff`: adds a member and shows their one-time sign-in link, once.
pub async fn invite(State(state): State<Services>, signed_in: SignedIn, Form(form): Form<Invite>) -> Response {
    if !csrf_ok(&signed_in, &form.csrf) {
        return csrf_refused();
    }
    if let Some(refusal) = owner_only(&signed_in) {
        return refusal;
    }
    let refuse = |text: String| context! { error => text };
    let email = match parse_email(&form.email) {
        Ok(email) => email,
        Err(problem) => return staff_page(&state, &signed_in, StatusCode::BAD_REQUEST, refuse(problem.into())).await,
    };
    let Some(role) = Role::parse(&form.role) else {
        return staff_page(&state, &signed_in, StatusCode::BAD_REQUEST, refuse("choose owner or member".into())).await;
    };
    let now = clock::now_ms();
    match db::staff::create(&state.sender.db, &signed_in.principal.org_id, &email, role, None, now, LINK_MS).await {
        Ok((member, link)) => {
            let url = format!("{}/console/welcome?token={}", state.sender.config.public_base(), link.token);
            let invited = context! { email => member.email, url, until => clock::rfc3339(link.expires_at) };
            staff_page(&state, &signed_in, StatusCode::CREATED, context! { invited }).await
        }
        Err(error) if db::is_unique_violation(&error) => {
            let text = format!("{email} is a staff member already");
            staff_page(&state, &signed_in, StatusCode::CONFLICT, refuse(text)).await
        }
        Err(error) => unavailable(error),
    }
}

#[derive(Deserialize)]
pub struct Change {
    #[serde(default)]
    csrf: String,
    #[serde(default)]
    role: String,
}

/// `POST /console/staff/{id}/role`. The last owner stays an owner.
pub async fn change_role(
    State(state): State<Services>,
    signed_in: SignedIn,
    Path(id): Path<String>,
    Form(form): Form<Change>,
) -> Response {
    if !csrf_ok(&signed_in, &form.csrf) {
        return csrf_refused();
    }
    if let Some(refusal) = owner_only(&signed_in) {
        return refusal;
    }
    let Some(role) = Role::parse(&form.role) else {
        return staff_page(&state, &signed_in, StatusCode::BAD_REQUEST, context! { error => "choose owner or member" })
            .await;
    };
    let org_id = &signed_in.principal.org_id;
    if role == Role::Member
        && let Some(refusal) = last_owner(&state, &signed_in, &id).await
    {
        return refusal;
    }
    match db::staff::set_role(&state.sender.db, org_id, &id, role, clock::now_ms()).await {
        Ok(true) => Redirect::to("/console/staff").into_response(),
        Ok(false) => notice(StatusCode::NOT_FOUND, "Not found", "There is no such staff member."),
        Err(error) => unavailable(error),
    }
}

/// `POST /console/staff/{id}/remove`: their sessions end at once. The last owner stays.
pub async fn remove(
    State(state): State<Services>,
    signed_in: SignedIn,
    Path(id): Path<String>,
    Form(form): Form<CsrfForm>,
) -> Response {
    if !csrf_ok(&signed_in, &form.csrf) {
        return csrf_refused();
    }
    if let Some(refusal) = owner_only(&signed_in) {
        return refusal;
    }
    if let Some(refusal) = last_owner(&state, &signed_in, &id).await {
        return refusal;
    }
    match db::staff::remove(&state.sender.db, Some(&signed_in.principal.org_id), &id, clock::now_ms()).await {
        Ok(true) => Redirect::to("/console/staff").into_response(),
        Ok(false) => notice(StatusCode::NOT_FOUND, "Not found", "There is no such staff member."),
        Err(error) => unavailable(error),
    }
}

/// The refusal to take away the organisation's last owner, if `id` is that owner.
async fn last_owner(state: &Services, signed_in: &SignedIn, id: &str) -> Option<Response> {
    let org_id = &signed_in.principal.org_id;
    let members = match db::staff::list(&state.sender.db, org_id).await {
        Ok(members) => members,
        Err(error) => return Some(unavailable(error)),
    };
    let is_owner = members.iter().any(|m| m.id == id && m.role == Role::Owner);
    let owners = members.iter().filter(|m| m.role == Role::Owner).count();
    (is_owner && owners <= 1).then(|| {
        notice(
            StatusCode::CONFLICT,
            "Not allowed",
            "The organisation needs an owner: make someone else an owner first.",
        )
    })
}
