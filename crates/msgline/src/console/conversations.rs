//! Conversations: a searchable list, a thread that updates itself while it is open, and sending
//! from it. A send goes through the API's send path with the staff member as the caller (scopes,
//! rate limits, opt-outs); each compose form carries its own idempotency key, so a form sent
//! twice (a double click, a reload) sends once.

use std::{convert::Infallible, time::Duration};

use axum::{
    Form,
    extract::{Path, Query, State},
    http::StatusCode,
    response::{IntoResponse, Redirect, Response, sse},
};
use minijinja::context;
use serde::{Deserialize, Serialize};
use serde_json::json;

use super::{
    pages::{notice, render, render_fragment},
    session::{SignedIn, csrf_ok, csrf_refused},
    shared::{describe, page_context, refused, unavailable},
};
use crate::{
    api::AppState,
    clock,
    db::{
        self, Page,
        conversations::{Conversation, ConversationFilter},
        messages::{Message, MessageFilter},
    },
    domain::{
        lifecycle::{ConversationKind, Direction},
        scope::Scope,
    },
    error::ApiError,
    ratelimit::Policy,
    send::request::send_text,
};

/// How many of a thread's latest messages the page shows.
const THREAD: i64 = 50;
/// How often an open thread looks for changes.
const POLL: Duration = Duration::from_secs(1);

#[derive(Serialize)]
struct Row {
    id: String,
    title: String,
    kind: &'static str,
    last_message_at: Option<String>,
}

#[derive(Deserialize)]
pub struct ListQuery {
    #[serde(default)]
    q: String,
}

/// `GET /console/conversations`.
pub async fn list(State(state): State<AppState>, signed_in: SignedIn, Query(query): Query<ListQuery>) -> Response {
    if let Err(error) = signed_in.principal.require(Scope::Read) {
        return refused(&error);
    }
    match rows(&state, &signed_in, query.q.trim()).await {
        Ok(rows) => {
            let context = context! { rows, q => query.q, idempotency_key => crate::ids::new_id("console") };
            render(StatusCode::OK, "conversations.html", page_context(&signed_in, "conversations", context))
        }
        Err(error) => unavailable(error),
    }
}

async fn rows(state: &AppState, signed_in: &SignedIn, q: &str) -> sqlx::Result<Vec<Row>> {
    let org_id = &signed_in.principal.org_id;
    let page = Page { limit: 50, before: None };
    let mut conversations = Vec::new();
    if q.is_empty() {
        conversations = db::conversations::list(&state.db, org_id, &ConversationFilter::default(), &page).await?.rows;
    } else {
        let contacts = db::contacts::search(&state.db, org_id, Some(q), &Page { limit: 20, before: None }).await?;
        for contact in contacts.rows {
            let filter = ConversationFilter { contact_id: Some(contact.id), ..ConversationFilter::default() };
            conversations.extend(db::conversations::list(&state.db, org_id, &filter, &page).await?.rows);
        }
        conversations.sort_by(|a, b| b.id.cmp(&a.id));
        conversations.dedup_by(|a, b| a.id == b.id);
    }
    let mut rows = Vec::with_capacity(conversations.len());
    for conversation in conversations {
        rows.push(Row {
            title: title(state, &conversation).await?,
            kind: conversation.kind.as_str(),
            last_message_at: clock::rfc3339_opt(conversation.last_message_at),
            id: conversation.id,
        });
    }
    Ok(rows)
}

/// What a conversation is called: a group's name or participants, a contact's name and number.
async fn title(state: &AppState, conversation: &Conversation) -> sqlx::Result<String> {
    if conversation.kind == ConversationKind::Group {
        return Ok(conversation.name.clone().unwrap_or_else(|| conversation.participants.join(", ")));
    }
    let Some(contact_id) = &conversation.contact_id else { return Ok(conversation.id.clone()) };
    Ok(match db::contacts::get(&state.db, &conversation.org_id, contact_id).await? {
        Some(contact) => match contact.name {
            Some(name) => format!("{name} ({})", contact.phone),
            None => contact.phone,
        },
        None => conversation.id.clone(),
    })
}

#[derive(Serialize)]
struct Shown {
    id: String,
    outbound: bool,
    body: String,
    kind: &'static str,
    channel: &'static str,
    status: &'static str,
    error: Option<String>,
    /// `status: time` of each step the message took.
    times: Vec<(&'static str, String)>,
}

fn shown(message: &Message) -> Shown {
    let steps = [
        ("created", Some(message.created_at)),
        ("submitted", message.submitted_at),
        ("sent", message.sent_at),
        ("delivered", message.delivered_at),
        ("read", message.read_at),
    ];
    Shown {
        id: message.id.clone(),
        outbound: message.direction == Direction::Outbound,
        body: message.body.clone(),
        kind: message.kind.as_str(),
        channel: message.channel.as_str(),
        status: message.status.as_str(),
        error: message.error.clone(),
        times: steps.into_iter().filter_map(|(name, at)| at.map(|at| (name, clock::rfc3339(at)))).collect(),
    }
}

/// The conversation, if the staff member's organisation has it.
async fn find(state: &AppState, signed_in: &SignedIn, id: &str) -> Result<Conversation, Response> {
    match db::conversations::get(&state.db, &signed_in.principal.org_id, id).await {
        Ok(Some(conversation)) => Ok(conversation),
        Ok(None) => Err(notice(StatusCode::NOT_FOUND, "Not found", "There is no such conversation.")),
        Err(error) => Err(unavailable(error)),
    }
}

/// The thread's latest messages, oldest first.
async fn messages(state: &AppState, org_id: &str, conversation_id: &str) -> sqlx::Result<Vec<Message>> {
    let filter = MessageFilter { conversation_id: Some(conversation_id.to_string()), ..MessageFilter::default() };
    let page = db::messages::list(&state.db, org_id, &filter, &Page { limit: THREAD, before: None }).await?;
    Ok(page.rows.into_iter().rev().map(|listed| listed.message).collect())
}

/// `GET /console/conversations/{id}`.
pub async fn thread(State(state): State<AppState>, signed_in: SignedIn, Path(id): Path<String>) -> Response {
    thread_page(&state, &signed_in, &id, StatusCode::OK, None, "").await
}

async fn thread_page(
    state: &AppState,
    signed_in: &SignedIn,
    id: &str,
    status: StatusCode,
    error: Option<String>,
    draft: &str,
) -> Response {
    if let Err(error) = signed_in.principal.require(Scope::Read) {
        return refused(&error);
    }
    let conversation = match find(state, signed_in, id).await {
        Ok(conversation) => conversation,
        Err(response) => return response,
    };
    let (title, shown_messages) =
        match (title(state, &conversation).await, messages(state, &signed_in.principal.org_id, &conversation.id).await)
        {
            (Ok(title), Ok(messages)) => (title, messages.iter().map(shown).collect::<Vec<_>>()),
            (Err(error), _) | (_, Err(error)) => return unavailable(error),
        };
    let context = context! {
        tapbacks => crate::domain::lifecycle::Tapback::ALL.iter().map(|t| t.as_str()).collect::<Vec<_>>(),
        conversation_id => conversation.id,
        title,
        messages => shown_messages,
        error,
        draft,
        idempotency_key => crate::ids::new_id("console"),
        can_send => signed_in.principal.scopes.contains(Scope::Send),
    };
    render(status, "thread.html", page_context(signed_in, "conversations", context))
}

#[derive(Deserialize)]
pub struct Compose {
    #[serde(default)]
    csrf: String,
    #[serde(default)]
    body: String,
    #[serde(default)]
    idempotency_key: String,
    /// A new conversation's number.
    #[serde(default)]
    to: String,
}

/// `POST /console/conversations/{id}/messages`: sends a text into the thread.
pub async fn send(
    State(state): State<AppState>,
    signed_in: SignedIn,
    Path(id): Path<String>,
    Form(form): Form<Compose>,
) -> Response {
    if !csrf_ok(&signed_in, &form.csrf) {
        return csrf_refused();
    }
    let conversation = match find(&state, &signed_in, &id).await {
        Ok(conversation) => conversation,
        Err(response) => return response,
    };
    let request = json!({"conversation_id": conversation.id, "body": form.body});
    match submit(&state, &signed_in, request, &form.idempotency_key).await {
        Ok(_) => Redirect::to(&format!("/console/conversations/{}", conversation.id)).into_response(),
        Err(error) => {
            let status = crate::api::errors::status(error.kind);
            let said = describe(&error);
            thread_page(&state, &signed_in, &conversation.id, status, Some(said), &form.body).await
        }
    }
}

/// `POST /console/conversations`: starts a conversation with a number by sending to it.
pub async fn start(State(state): State<AppState>, signed_in: SignedIn, Form(form): Form<Compose>) -> Response {
    if !csrf_ok(&signed_in, &form.csrf) {
        return csrf_refused();
    }
    let request = json!({"to": form.to.trim(), "body": form.body});
    match submit(&state, &signed_in, request, &form.idempotency_key).await {
        Ok(message) => Redirect::to(&format!("/console/conversations/{}", message.conversation_id)).into_response(),
        Err(error) => {
            let rows = rows(&state, &signed_in, "").await.unwrap_or_default();
            let context = context! {
                rows, q => "", error => describe(&error), to => form.to, draft => form.body,
                idempotency_key => crate::ids::new_id("console"),
            };
            render(
                crate::api::errors::status(error.kind),
                "conversations.html",
                page_context(&signed_in, "conversations", context),
            )
        }
    }
}

#[derive(Deserialize)]
pub struct Extra {
    #[serde(default)]
    csrf: String,
    #[serde(default)]
    idempotency_key: String,
    /// A card: who it introduces.
    #[serde(default)]
    name: String,
    #[serde(default)]
    phone: String,
    /// A poll: its question and options, one per line.
    #[serde(default)]
    question: String,
    #[serde(default)]
    options: String,
    /// A reaction: which message, which tapback.
    #[serde(default)]
    message_id: String,
    #[serde(default)]
    reaction: String,
}

/// `POST /console/conversations/{id}/{kind}`: a contact card (`card`), a poll (`poll`) or a
/// tapback on one of the thread's messages (`react`), through the API's own send functions.
pub async fn send_extra(
    State(state): State<AppState>,
    signed_in: SignedIn,
    Path((id, kind)): Path<(String, String)>,
    Form(form): Form<Extra>,
) -> Response {
    if !csrf_ok(&signed_in, &form.csrf) {
        return csrf_refused();
    }
    let conversation = match find(&state, &signed_in, &id).await {
        Ok(conversation) => conversation,
        Err(response) => return response,
    };
    let caller = &signed_in.principal;
    let key = Some(form.idempotency_key.as_str()).filter(|k| !k.is_empty());
    let sent = async {
        if let Err((_, retry_after)) = state.limits().check_all(&[Policy::Send], &caller.caller()).await {
            return Err(ApiError::rate_limited(retry_after));
        }
        match kind.as_str() {
            "card" => {
                let raw = json!({"conversation_id": conversation.id, "name": form.name, "phone": form.phone});
                crate::send::card::send_card_request(&state, caller, raw, key, None).await
            }
            "poll" => {
                let options: Vec<&str> = form.options.lines().map(str::trim).filter(|o| !o.is_empty()).collect();
                let raw = json!({"conversation_id": conversation.id, "question": form.question, "options": options});
                crate::send::poll::send_poll_request(&state, caller, raw, key, None).await
            }
            "react" => {
                // Only a message of this thread.
                match db::messages::get(&state.db, &caller.org_id, &form.message_id).await? {
                    Some(target) if target.conversation_id == conversation.id => {}
                    _ => return Err(ApiError::not_found("message").with("field", "message_id")),
                }
                let raw = json!({"reaction": form.reaction});
                crate::send::reaction::add(&state, caller, &form.message_id, raw, key).await
            }
            _ => Err(ApiError::not_found("action")),
        }
    };
    match sent.await {
        Ok(_) => Redirect::to(&format!("/console/conversations/{}", conversation.id)).into_response(),
        Err(error) => {
            let status = crate::api::errors::status(error.kind);
            thread_page(&state, &signed_in, &conversation.id, status, Some(describe(&error)), "").await
        }
    }
}

/// One send, through the API's send path and its send rate limit, as the staff member.
async fn submit(
    state: &AppState,
    signed_in: &SignedIn,
    request: serde_json::Value,
    idempotency_key: &str,
) -> Result<Message, ApiError> {
    let caller = &signed_in.principal;
    caller.require(Scope::Send)?;
    if let Err((_, retry_after)) = state.limits().check_all(&[Policy::Send], &caller.caller()).await {
        return Err(ApiError::rate_limited(retry_after));
    }
    let key = (!idempotency_key.is_empty()).then_some(idempotency_key);
    Ok(send_text(state, caller, request, key, None).await?.message)
}

/// `GET /console/conversations/{id}/live`: the thread's messages again whenever one arrives or
/// moves, as server-sent events of rendered HTML. Each open thread reads its messages once a
/// second, so a change made by any instance shows within about a second.
pub async fn live(State(state): State<AppState>, signed_in: SignedIn, Path(id): Path<String>) -> Response {
    if let Err(error) = signed_in.principal.require(Scope::Read) {
        return refused(&error);
    }
    let conversation = match find(&state, &signed_in, &id).await {
        Ok(conversation) => conversation,
        Err(response) => return response,
    };
    let org_id = signed_in.principal.org_id.clone();
    let stream = futures_util::stream::unfold((state, String::new()), move |(state, seen)| {
        let org_id = org_id.clone();
        let conversation_id = conversation.id.clone();
        async move {
            loop {
                let current = match messages(&state, &org_id, &conversation_id).await {
                    Ok(current) => current,
                    Err(error) => {
                        tracing::warn!(error = %error, "a live thread could not be read");
                        tokio::time::sleep(POLL).await;
                        continue;
                    }
                };
                let mark: String =
                    current.iter().map(|m| format!("{}:{}:{};", m.id, m.status.as_str(), m.updated_at)).collect();
                if mark != seen {
                    let shown_messages: Vec<Shown> = current.iter().map(shown).collect();
                    let html = render_fragment("thread_messages.html", context! { messages => shown_messages });
                    let event = sse::Event::default().event("thread").data(html);
                    return Some((Ok::<_, Infallible>(event), (state, mark)));
                }
                tokio::time::sleep(POLL).await;
            }
        }
    });
    sse::Sse::new(stream).keep_alive(sse::KeepAlive::default()).into_response()
}
