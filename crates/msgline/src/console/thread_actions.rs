//! Editing and unsending, from a thread, a message the organisation sent: the API's action (its
//! windows, its line call, an outcome not known yet), with the staff member as the caller. A
//! reply needs nothing of its own: the compose form carries `reply_to`.

use axum::{
    Form,
    extract::{Path, State},
    http::StatusCode,
    response::{IntoResponse, Redirect, Response},
};
use serde::Deserialize;

use super::{
    conversations::{Composing, find, thread_page},
    pages::notice,
    session::{SignedIn, csrf_ok, csrf_refused},
    shared::describe,
};
use crate::{
    db,
    domain::message_action::ActionKind,
    error::ApiError,
    fields::required_text,
    send::{
        actions,
        request::{MAX_BODY_CHARS, idempotency},
    },
    services::Services,
};

#[derive(Deserialize)]
pub struct ActionForm {
    #[serde(default)]
    csrf: String,
    #[serde(default)]
    idempotency_key: String,
    /// An edit's new text.
    #[serde(default)]
    body: String,
}

/// `POST /console/conversations/{id}/messages/{message_id}/{action}`: `edit` (the new text in
/// `body`) or `unsend` a message of the thread. Back to the thread, at the message; a refusal (a
/// window closed since the page was drawn, the line's own) is shown above the thread, and an
/// edit's text is kept.
pub async fn act(
    State(state): State<Services>,
    signed_in: SignedIn,
    Path((id, message_id, action)): Path<(String, String, String)>,
    Form(form): Form<ActionForm>,
) -> Response {
    if !csrf_ok(&signed_in, &form.csrf) {
        return csrf_refused();
    }
    let kind = match action.as_str() {
        "edit" => ActionKind::Edit,
        "unsend" => ActionKind::Unsend,
        _ => return notice(StatusCode::NOT_FOUND, "Not found", "There is no such page."),
    };
    let conversation = match find(&state, &signed_in, &id).await {
        Ok(conversation) => conversation,
        Err(response) => return response,
    };
    let caller = &signed_in.principal;
    let acted = async {
        // Only a message of this thread.
        match db::messages::get(&state.sender.db, &caller.org_id, &message_id).await? {
            Some(message) if message.conversation_id == conversation.id => {}
            _ => return Err(ApiError::not_found("message")),
        }
        let (body, path) = match kind {
            ActionKind::Edit => {
                (Some(required_text("body", Some(form.body.clone()), MAX_BODY_CHARS)?), "/messages/edit")
            }
            ActionKind::Unsend => (None, "/messages/unsend"),
        };
        let key = Some(form.idempotency_key.as_str()).filter(|k| !k.is_empty());
        let key = idempotency(None, key, path, String::new)?;
        actions::act(&state.sender, caller, &message_id, kind, body, key).await
    };
    match acted.await {
        Ok(_) => Redirect::to(&format!("/console/conversations/{}#{message_id}", conversation.id)).into_response(),
        Err(error) => {
            let status = crate::web::errors::status(error.kind);
            let composing = match kind {
                ActionKind::Edit => Composing {
                    error: Some(describe(&error)),
                    draft: form.body,
                    edit: Some(message_id),
                    ..Composing::default()
                },
                ActionKind::Unsend => Composing { flash: Some(describe(&error)), ..Composing::default() },
            };
            thread_page(&state, &signed_in, &conversation.id, status, composing).await
        }
    }
}
