//! Conversations: a searchable list, a thread that updates itself while it is open, and sending
//! from it, also as a reply to one of its messages. A send goes through the API's send path with
//! the staff member as the caller (scopes, rate limits, opt-outs); each compose form carries its
//! own idempotency key, so a form sent twice (a double click, a reload) sends once. How a message
//! shows is `thread_view`'s; editing and unsending one, `thread_actions`'.

use std::{collections::HashMap, convert::Infallible, time::Duration};

use axum::{
    Form,
    extract::{Multipart, Path, Query, State},
    http::StatusCode,
    response::{IntoResponse, Redirect, Response, sse},
};
use minijinja::context;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{
    pages::{notice, render, render_fragment},
    session::{SignedIn, csrf_ok, csrf_refused},
    shared::{describe, page_context, refused, unavailable},
    thread_view,
};
use crate::{
    clock,
    db::{
        self, Page,
        conversations::{Conversation, ConversationFilter},
        lines::Capabilities,
        messages::{Message, MessageFilter},
    },
    domain::{
        lifecycle::{Channel, ConversationKind, Direction},
        scope::Scope,
    },
    error::ApiError,
    send::{
        card::SendCard,
        media::Upload,
        poll::SendPoll,
        reaction::SendReaction,
        request::{SendFields, SendMessage, send_text, send_uploads},
    },
    services::Services,
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
pub async fn list(State(state): State<Services>, signed_in: SignedIn, Query(query): Query<ListQuery>) -> Response {
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

async fn rows(state: &Services, signed_in: &SignedIn, q: &str) -> sqlx::Result<Vec<Row>> {
    let org_id = &signed_in.principal.org_id;
    let page = Page { limit: 50, before: None };
    let mut conversations = Vec::new();
    if q.is_empty() {
        conversations =
            db::conversations::list(&state.sender.db, org_id, &ConversationFilter::default(), &page).await?.rows;
    } else {
        let contacts =
            db::contacts::search(&state.sender.db, org_id, Some(q), &Page { limit: 20, before: None }).await?;
        for contact in contacts.rows {
            let filter = ConversationFilter { contact_id: Some(contact.id), ..ConversationFilter::default() };
            conversations.extend(db::conversations::list(&state.sender.db, org_id, &filter, &page).await?.rows);
        }
        conversations.sort_by(|a, b| b.id.cmp(&a.id));
        conversations.dedup_by(|a, b| a.id == b.id);
    }
    // The contacts of the page's direct conversations, in one read.
    let contact_ids: Vec<String> = conversations.iter().filter_map(|c| c.contact_id.clone()).collect();
    let contacts = db::contacts::get_many(&state.sender.db, org_id, &contact_ids).await?;
    Ok(conversations
        .into_iter()
        .map(|conversation| Row {
            title: title(&conversation, conversation.contact_id.as_ref().and_then(|id| contacts.get(id))),
            kind: conversation.kind.as_str(),
            last_message_at: clock::rfc3339_opt(conversation.last_message_at),
            id: conversation.id,
        })
        .collect())
}

/// What a conversation is called: a group's name or participants, a contact's name and number.
fn title(conversation: &Conversation, contact: Option<&db::contacts::Contact>) -> String {
    if conversation.kind == ConversationKind::Group {
        return conversation.name.clone().unwrap_or_else(|| conversation.participants.join(", "));
    }
    match contact {
        Some(contact) => match &contact.name {
            Some(name) => format!("{name} ({})", contact.phone),
            None => contact.phone.clone(),
        },
        None => conversation.id.clone(),
    }
}

/// A thread's title, reading its contact.
async fn thread_title(state: &Services, conversation: &Conversation) -> sqlx::Result<String> {
    let contact = match &conversation.contact_id {
        Some(id) if conversation.kind != ConversationKind::Group => {
            db::contacts::get(&state.sender.db, &conversation.org_id, id).await?
        }
        _ => None,
    };
    Ok(title(conversation, contact.as_ref()))
}

/// The conversation, if the staff member's organisation has it.
pub(super) async fn find(state: &Services, signed_in: &SignedIn, id: &str) -> Result<Conversation, Response> {
    match db::conversations::get(&state.sender.db, &signed_in.principal.org_id, id).await {
        Ok(Some(conversation)) => Ok(conversation),
        Ok(None) => Err(notice(StatusCode::NOT_FOUND, "Not found", "There is no such conversation.")),
        Err(error) => Err(unavailable(error)),
    }
}

/// What a thread shows: its latest messages, oldest first, who is typing, if anyone, and what
/// the lines of the organisation's iMessages among them can do (for their Edit and Unsend).
struct Snapshot {
    messages: Vec<Message>,
    typing: Option<String>,
    lines: HashMap<String, Capabilities>,
}

impl Snapshot {
    async fn read(state: &Services, org_id: &str, conversation_id: &str) -> sqlx::Result<Snapshot> {
        let filter = MessageFilter { conversation_id: Some(conversation_id.to_string()), ..MessageFilter::default() };
        let page = db::messages::list(&state.sender.db, org_id, &filter, &Page { limit: THREAD, before: None }).await?;
        let messages: Vec<Message> = page.rows.into_iter().rev().map(|listed| listed.message).collect();
        let typing = db::typing::current(&state.sender.db, org_id, conversation_id, clock::now_ms()).await?;
        // A message that arrived since the report ends it, as the phone's indicator ends.
        let typing = typing
            .filter(|t| !messages.iter().any(|m| m.direction == Direction::Inbound && m.created_at >= t.since_ms));
        let mut lines = HashMap::new();
        for message in messages.iter().filter(|m| m.direction == Direction::Outbound && m.channel == Channel::Imessage)
        {
            if !lines.contains_key(&message.line_id)
                && let Some(capabilities) =
                    state.sender.lines.get(&message.line_id).await?.and_then(|line| line.capabilities)
            {
                lines.insert(message.line_id.clone(), capabilities);
            }
        }
        Ok(Snapshot { messages, typing: typing.map(|t| t.phone), lines })
    }

    /// What changes when the thread's page would change: also an action's progress, and a
    /// window that closes (its button goes).
    fn mark(&self) -> String {
        let now = clock::now_ms();
        let mut mark: String = self
            .messages
            .iter()
            .map(|m| {
                let (edit, unsend) = thread_view::changeable(m, self.lines.get(&m.line_id), now);
                let action = m.action.as_deref().unwrap_or_default();
                format!("{}:{}:{}:{edit}:{unsend}:{action};", m.id, m.status.as_str(), m.updated_at)
            })
            .collect();
        mark.push_str(self.typing.as_deref().unwrap_or_default());
        mark
    }

    /// The fragment's context; `csrf` for the forms it holds (a scheduled message's cancel, an
    /// unsend), which it offers only to staff who may send (`can_send`).
    fn context(&self, csrf: &str, conversation_id: &str, can_send: bool) -> minijinja::Value {
        context! {
            messages => thread_view::shown(&self.messages, &self.lines, clock::now_ms()), typing => self.typing,
            csrf, conversation_id, can_send, action_key => crate::ids::new_id("console"),
        }
    }
}

/// `?reply_to=msg_…` or `?edit=msg_…`: the compose box answers or edits that message.
#[derive(Deserialize)]
pub struct ThreadQuery {
    reply_to: Option<String>,
    edit: Option<String>,
}

/// What the compose area holds when the thread is drawn: a refusal and the text kept (`error`
/// above the field, or `flash` above the thread for an unsend), and the message being answered
/// or edited.
#[derive(Default)]
pub(super) struct Composing {
    pub error: Option<String>,
    pub flash: Option<String>,
    pub draft: String,
    pub reply_to: Option<String>,
    pub edit: Option<String>,
}

/// `GET /console/conversations/{id}`.
pub async fn thread(
    State(state): State<Services>,
    signed_in: SignedIn,
    Path(id): Path<String>,
    Query(query): Query<ThreadQuery>,
) -> Response {
    let composing = Composing { reply_to: query.reply_to, edit: query.edit, ..Composing::default() };
    thread_page(&state, &signed_in, &id, StatusCode::OK, composing).await
}

pub(super) async fn thread_page(
    state: &Services,
    signed_in: &SignedIn,
    id: &str,
    status: StatusCode,
    composing: Composing,
) -> Response {
    if let Err(error) = signed_in.principal.require(Scope::Read) {
        return refused(&error);
    }
    let conversation = match find(state, signed_in, id).await {
        Ok(conversation) => conversation,
        Err(response) => return response,
    };
    let (title, snapshot) = match (
        thread_title(state, &conversation).await,
        Snapshot::read(state, &signed_in.principal.org_id, &conversation.id).await,
    ) {
        (Ok(title), Ok(snapshot)) => (title, snapshot),
        (Err(error), _) | (_, Err(error)) => return unavailable(error),
    };
    // The message being edited: one the organisation sent, on the page (whether it still may be
    // edited is the send path's to say).
    let editing = composing.edit.as_deref().and_then(|edit| {
        let message = snapshot.messages.iter().find(|m| m.id == edit && m.direction == Direction::Outbound)?;
        let body = if composing.draft.is_empty() { message.body.clone() } else { composing.draft.clone() };
        Some(context! { id => message.id, quote => thread_view::quote(&snapshot.messages, edit), body })
    });
    let reply = composing.reply_to.as_deref().map(|id| {
        let quote = thread_view::quote(&snapshot.messages, id);
        context! { id, text => quote.text }
    });
    let can_send = signed_in.principal.scopes.contains(Scope::Send);
    let context = context! {
        tapbacks => crate::domain::lifecycle::Tapback::ALL.iter().map(|t| t.as_str()).collect::<Vec<_>>(),
        title,
        error => composing.error,
        flash => composing.flash,
        draft => composing.draft,
        reply,
        editing,
        idempotency_key => crate::ids::new_id("console"),
        media_max_mb => (state.sender.config.media_max_bytes as f64 / 1_048_576.0 * 10.0).round() / 10.0,
        ..snapshot.context(&signed_in.csrf, &conversation.id, can_send)
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
    /// The message of the thread a send answers.
    #[serde(default)]
    reply_to: String,
}

/// Reads the compose form (multipart, for its files): its fields and the files attached.
async fn read_compose(mut form: Multipart) -> Result<(Compose, Vec<Upload>), ApiError> {
    let mut compose = Compose {
        csrf: String::new(),
        body: String::new(),
        idempotency_key: String::new(),
        to: String::new(),
        reply_to: String::new(),
    };
    let mut uploads = Vec::new();
    while let Some(field) = form.next_field().await.map_err(|e| ApiError::bad_request(e.body_text()))? {
        let name = field.name().unwrap_or_default().to_string();
        if name == "files" {
            let filename = field.file_name().map(str::to_string);
            let bytes = field.bytes().await.map_err(|e| ApiError::bad_request(e.body_text()))?;
            // A file input with nothing chosen sends one empty part without a name.
            if !bytes.is_empty() || filename.as_deref().is_some_and(|f| !f.is_empty()) {
                uploads.push(Upload { filename, bytes: bytes.to_vec() });
            }
            continue;
        }
        let text = field.text().await.map_err(|e| ApiError::bad_request(e.body_text()))?;
        match name.as_str() {
            "csrf" => compose.csrf = text,
            "body" => compose.body = text,
            "idempotency_key" => compose.idempotency_key = text,
            "reply_to" => compose.reply_to = text,
            _ => {}
        }
    }
    Ok((compose, uploads))
}

/// `POST /console/conversations/{id}/messages`: sends a text, or files with an optional caption,
/// into the thread.
pub async fn send(
    State(state): State<Services>,
    signed_in: SignedIn,
    Path(id): Path<String>,
    form: Multipart,
) -> Response {
    let (form, uploads) = match read_compose(form).await {
        Ok(read) => read,
        Err(error) => return refused(&error),
    };
    if !csrf_ok(&signed_in, &form.csrf) {
        return csrf_refused();
    }
    let conversation = match find(&state, &signed_in, &id).await {
        Ok(conversation) => conversation,
        Err(response) => return response,
    };
    let reply_to = Some(form.reply_to.clone()).filter(|id| !id.is_empty());
    let fields = SendFields { reply_to: reply_to.clone().map(Value::String), ..in_thread(&conversation.id) };
    let request = SendMessage { body: Some(form.body.clone()), fields, ..SendMessage::default() };
    match submit(&state, &signed_in, request, &form.idempotency_key, uploads).await {
        Ok(_) => Redirect::to(&format!("/console/conversations/{}", conversation.id)).into_response(),
        Err(error) => {
            let status = crate::web::errors::status(error.kind);
            let composing =
                Composing { error: Some(describe(&error)), draft: form.body, reply_to, ..Composing::default() };
            thread_page(&state, &signed_in, &conversation.id, status, composing).await
        }
    }
}

/// `POST /console/conversations`: starts a conversation with a number by sending to it.
pub async fn start(State(state): State<Services>, signed_in: SignedIn, Form(form): Form<Compose>) -> Response {
    if !csrf_ok(&signed_in, &form.csrf) {
        return csrf_refused();
    }
    let to = SendFields { to: Some(form.to.trim().to_string()), ..SendFields::default() };
    let request = SendMessage { body: Some(form.body.clone()), fields: to, ..SendMessage::default() };
    match submit(&state, &signed_in, request, &form.idempotency_key, Vec::new()).await {
        Ok(message) => Redirect::to(&format!("/console/conversations/{}", message.conversation_id)).into_response(),
        Err(error) => {
            let rows = rows(&state, &signed_in, "").await.unwrap_or_default();
            let context = context! {
                rows, q => "", error => describe(&error), to => form.to, draft => form.body,
                idempotency_key => crate::ids::new_id("console"),
            };
            render(
                crate::web::errors::status(error.kind),
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

/// `POST /console/conversations/{id}/{kind}`: a contact card (`card`), a poll (`poll`), a
/// tapback on one of the thread's messages (`react`) or the cancel of a scheduled one
/// (`cancel`), through the send path, as the API.
pub async fn send_extra(
    State(state): State<Services>,
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
        // A tapback or a cancel names a message: only one of this thread.
        let of_thread = async || match db::messages::get(&state.sender.db, &caller.org_id, &form.message_id).await? {
            Some(target) if target.conversation_id == conversation.id => Ok(()),
            _ => Err(ApiError::not_found("message").with("field", "message_id")),
        };
        match kind.as_str() {
            "card" => {
                let card = SendCard {
                    name: Some(form.name.clone()),
                    phone: Some(form.phone.clone()),
                    fields: in_thread(&conversation.id),
                    ..SendCard::default()
                };
                crate::send::card::send_card_request(&state.sender, caller, card, key, None).await.map(drop)
            }
            "poll" => {
                let options = form.options.lines().map(str::trim).filter(|o| !o.is_empty()).map(String::from).collect();
                let poll = SendPoll {
                    question: Some(form.question.clone()),
                    options: Some(options),
                    fields: in_thread(&conversation.id),
                };
                crate::send::poll::send_poll_request(&state.sender, caller, poll, key, None).await.map(drop)
            }
            "react" => {
                of_thread().await?;
                let reaction = SendReaction { reaction: Some(form.reaction.clone()), idempotency_key: None };
                crate::send::reaction::add(&state.sender, caller, &form.message_id, reaction, key).await.map(drop)
            }
            "cancel" => {
                of_thread().await?;
                crate::send::cancel(&state.sender, caller, &form.message_id).await.map(drop)
            }
            _ => Err(ApiError::not_found("action")),
        }
    };
    match sent.await {
        Ok(_) => Redirect::to(&format!("/console/conversations/{}", conversation.id)).into_response(),
        Err(error) => {
            let status = crate::web::errors::status(error.kind);
            let composing = Composing { error: Some(describe(&error)), ..Composing::default() };
            thread_page(&state, &signed_in, &conversation.id, status, composing).await
        }
    }
}

/// The fields of a send into an existing conversation.
fn in_thread(conversation_id: &str) -> SendFields {
    SendFields { conversation_id: Some(conversation_id.into()), ..SendFields::default() }
}

/// One text, through the API's send path (and so its send rate policy), as the staff member.
async fn submit(
    state: &Services,
    signed_in: &SignedIn,
    request: SendMessage,
    idempotency_key: &str,
    uploads: Vec<Upload>,
) -> Result<Message, ApiError> {
    let caller = &signed_in.principal;
    let key = (!idempotency_key.is_empty()).then_some(idempotency_key);
    let accepted = match uploads.is_empty() {
        true => send_text(&state.sender, caller, request, key, None).await?,
        false => send_uploads(&state.sender, caller, request, key, uploads).await?,
    };
    Ok(accepted.message)
}

/// `POST /console/conversations/{id}/typing`: shows the line typing in the conversation (the
/// compose box calls it while someone types). 204, or the API's refusal as plain text.
pub async fn typing(
    State(state): State<Services>,
    signed_in: SignedIn,
    Path(id): Path<String>,
    Form(form): Form<super::session::CsrfForm>,
) -> Response {
    if !csrf_ok(&signed_in, &form.csrf) {
        return csrf_refused();
    }
    match crate::send::signals::typing(&state.sender, &signed_in.principal, &id).await {
        Ok(()) => StatusCode::NO_CONTENT.into_response(),
        Err(error) => (crate::web::errors::status(error.kind), describe(&error)).into_response(),
    }
}

/// `GET /console/attachments/{id}`: a file of one of the organisation's messages.
pub async fn attachment(State(state): State<Services>, signed_in: SignedIn, Path(id): Path<String>) -> Response {
    if let Err(error) = signed_in.principal.require(Scope::Read) {
        return refused(&error);
    }
    let found = match db::attachments::get(&state.sender.db, &signed_in.principal.org_id, &id).await {
        Ok(Some(attachment)) => crate::web::files::file_response(&state.sender.media, &attachment).await,
        Ok(None) => Err(ApiError::not_found("attachment")),
        Err(error) => return unavailable(error),
    };
    match found {
        Ok(response) => response,
        Err(_) => notice(StatusCode::NOT_FOUND, "Not found", "There is no such file."),
    }
}

/// `GET /console/conversations/{id}/live`: the thread's messages again whenever one arrives or
/// moves or someone starts or stops typing, as server-sent events of rendered HTML. Each open thread reads its messages once a
/// second, so a change made by any instance shows within about a second.
pub async fn live(State(state): State<Services>, signed_in: SignedIn, Path(id): Path<String>) -> Response {
    if let Err(error) = signed_in.principal.require(Scope::Read) {
        return refused(&error);
    }
    let conversation = match find(&state, &signed_in, &id).await {
        Ok(conversation) => conversation,
        Err(response) => return response,
    };
    let org_id = signed_in.principal.org_id.clone();
    let csrf = signed_in.csrf.clone();
    let can_send = signed_in.principal.scopes.contains(Scope::Send);
    let stream = futures_util::stream::unfold((state, String::new()), move |(state, seen)| {
        let org_id = org_id.clone();
        let csrf = csrf.clone();
        let conversation_id = conversation.id.clone();
        async move {
            loop {
                let current = match Snapshot::read(&state, &org_id, &conversation_id).await {
                    Ok(current) => current,
                    Err(error) => {
                        tracing::warn!(error = %error, "a live thread could not be read");
                        tokio::time::sleep(POLL).await;
                        continue;
                    }
                };
                let mark = current.mark();
                if mark != seen {
                    let html =
                        render_fragment("thread_messages.html", current.context(&csrf, &conversation_id, can_send));
                    let event = sse::Event::default().event("thread").data(html);
                    return Some((Ok::<_, Infallible>(event), (state, mark)));
                }
                tokio::time::sleep(POLL).await;
            }
        }
    });
    sse::Sse::new(stream).keep_alive(sse::KeepAlive::default()).into_response()
}
