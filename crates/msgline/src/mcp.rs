//! msgline's tools for an AI assistant over MCP (the official Rust SDK, `rmcp`), two ways:
//! `msgline mcp` serves them on stdio, and `serve` at `/mcp` over the streamable HTTP transport.
//! Either way they are a client of msgline's own HTTP API, acting with one API key (stdio:
//! `MSGLINE_KEY` against the server at `MSGLINE_URL`; HTTP: the request's `Authorization:
//! Bearer` key against the instance itself), so every rule the API enforces (scopes, line
//! binding, rate limits, idempotency) holds for the assistant too. An API refusal comes back as a
//! tool error carrying the API's JSON error (`error` is its code).

use std::sync::{Arc, LazyLock};

use axum::{
    extract::{Request, State},
    http::header,
    response::{IntoResponse, Response},
};
use rmcp::{
    ErrorData as McpError, ServerHandler, ServiceExt,
    handler::server::{router::tool::ToolRouter, wrapper::Parameters},
    model::{CallToolResult, Content, Implementation, ServerCapabilities, ServerInfo},
    schemars, tool, tool_handler, tool_router,
    transport::streamable_http_server::{
        StreamableHttpServerConfig, StreamableHttpService, session::local::LocalSessionManager,
    },
};
use serde::{Deserialize, Serialize};
use serde_json::Value;

const PREFIX: &str = "/api/v1/messaging";

/// Who to send to and from: as `POST /messages` takes them.
#[derive(Debug, Clone, Default, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Route {
    /// The recipient, E.164 (`+12015550123`); a national number needs `default_country`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub to: Option<String>,
    /// An existing contact, instead of `to`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub contact_id: Option<String>,
    /// An existing conversation (a direct thread or a group), instead of `to`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub conversation_id: Option<String>,
    /// The line to send from; else the key's line, else the organisation's only line.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub line_id: Option<String>,
    /// The line to send from, by its number.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub from: Option<String>,
    /// A sender pool instead of a line (`pool_…`): the contact's line in the pool, else the pool's
    /// line with the most of today's budget left.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pool_id: Option<String>,
    /// How long the message may wait for its line, in seconds (5 to 259,200; default 36,000).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub validity_seconds: Option<i64>,
    /// `sms` or `imessage`; omitted, msgline chooses.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub channel: Option<String>,
    /// ISO 3166 country for a national-format `to` (`US`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub default_country: Option<String>,
    /// Makes a retried call send once: the same key answers what the first call got.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub idempotency_key: Option<String>,
    /// Send later: an RFC 3339 time from a minute to 90 days ahead. The message is `scheduled`
    /// until then, and `cancel_message` can stop it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub send_at: Option<String>,
    /// A message of the same conversation (`msg_...`) that this one answers: an inline reply over
    /// iMessage; over SMS it goes as a plain message.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reply_to: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
pub struct SendMessage {
    #[serde(flatten)]
    pub route: Route,
    /// The text, 1 to 10,000 characters.
    pub body: String,
    /// `sms`: if the iMessage fails, send the same text as SMS from the same line; `none`: never.
    /// Omitted, the organisation's setting.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fallback: Option<String>,
    /// With `fallback: "sms"`, also fall back when the iMessage is not delivered after this many
    /// seconds (1 to 86,400); the iMessage may still arrive later.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fallback_after_seconds: Option<u32>,
    /// An iMessage effect: `slam`, `loud`, `gentle`, `invisible_ink`, `echo`, `spotlight`,
    /// `balloons`, `confetti`, `love`, `lasers`, `fireworks` or `celebration`. iMessage only.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub effect: Option<String>,
    /// An iMessage subject line, shown in bold above the text: up to 200 characters. iMessage only.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub subject: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
pub struct SendContactCard {
    #[serde(flatten)]
    pub route: Route,
    /// The card's name, up to 200 characters.
    pub name: String,
    /// The card's phone number, E.164.
    pub phone: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub email: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub organization: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// An `https://` URL of a JPEG, PNG or GIF of at most 200 KB.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub photo_url: Option<String>,
    /// The text sent with the card; defaults to the name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub caption: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
pub struct SendPoll {
    #[serde(flatten)]
    pub route: Route,
    /// The question.
    pub question: String,
    /// 2 to 12 options.
    pub options: Vec<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
pub struct CreateGroup {
    /// 2 to 31 numbers, E.164.
    pub participants: Vec<String>,
    /// The opening message.
    pub body: String,
    /// The group's display name, up to 100 characters.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The dedicated line that creates the group.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub line_id: Option<String>,
    /// That line, by its number.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub from: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub default_country: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub idempotency_key: Option<String>,
}

/// A page of a list.
#[derive(Debug, Clone, Default, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Page {
    /// Items per page, 1 to 100 (default 50).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub limit: Option<u32>,
    /// `next_cursor` of the previous page.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cursor: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ConversationMessages {
    /// The conversation.
    pub conversation_id: String,
    #[serde(flatten)]
    pub page: Page,
}

#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
pub struct SearchContacts {
    /// Matches names in any case; without letters, also the digits of phone numbers.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub q: Option<String>,
    #[serde(flatten)]
    pub page: Page,
}

#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
pub struct MessageId {
    /// The message's id (`msg_...`).
    pub id: String,
}

#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
pub struct EditMessage {
    /// The message's id (`msg_...`): an iMessage msgline sent.
    #[serde(alias = "message_id")]
    pub id: String,
    /// The new text, 1 to 10,000 characters.
    pub body: String,
    /// Makes a retried call edit once: the same key answers what the first call got.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub idempotency_key: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
pub struct UnsendMessage {
    /// The message's id (`msg_...`): an iMessage msgline sent.
    #[serde(alias = "message_id")]
    pub id: String,
    /// Makes a retried call unsend once: the same key answers what the first call got.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub idempotency_key: Option<String>,
}

/// The MCP server: msgline's API, as tools.
#[derive(Clone)]
pub struct Tools {
    http: reqwest::Client,
    base: String,
    key: String,
    tool_router: ToolRouter<Self>,
}

#[tool_router]
impl Tools {
    pub fn new(base: &str, key: &str) -> Self {
        Self::with_client(reqwest::Client::new(), base, key)
    }

    /// The tools acting with `key` against `base`, through a client shared with others.
    pub fn with_client(http: reqwest::Client, base: &str, key: &str) -> Self {
        Self {
            http,
            base: base.trim_end_matches('/').to_string(),
            key: key.to_string(),
            tool_router: Self::tool_router(),
        }
    }

    #[tool(description = "Send a text message (SMS or iMessage). Answers the message, queued for delivery.")]
    async fn send_message(&self, Parameters(input): Parameters<SendMessage>) -> Result<CallToolResult, McpError> {
        self.post("/messages", input.route.idempotency_key.clone(), &input).await
    }

    #[tool(description = "Send a contact card (vCard) of a person or business.")]
    async fn send_contact_card(
        &self,
        Parameters(input): Parameters<SendContactCard>,
    ) -> Result<CallToolResult, McpError> {
        self.post("/contact-cards", input.route.idempotency_key.clone(), &input).await
    }

    #[tool(description = "Send a native iMessage poll.")]
    async fn send_poll(&self, Parameters(input): Parameters<SendPoll>) -> Result<CallToolResult, McpError> {
        self.post("/polls", input.route.idempotency_key.clone(), &input).await
    }

    #[tool(description = "Create an iMessage group chat with its opening message, from a dedicated line.")]
    async fn create_group(&self, Parameters(input): Parameters<CreateGroup>) -> Result<CallToolResult, McpError> {
        self.post("/groups", input.idempotency_key.clone(), &input).await
    }

    #[tool(description = "List conversations, most recent first.")]
    async fn list_conversations(&self, Parameters(page): Parameters<Page>) -> Result<CallToolResult, McpError> {
        self.get("/conversations", &page).await
    }

    #[tool(description = "List a conversation's messages, newest first.")]
    async fn get_conversation_messages(
        &self,
        Parameters(input): Parameters<ConversationMessages>,
    ) -> Result<CallToolResult, McpError> {
        self.get("/messages", &input).await
    }

    #[tool(description = "Search contacts by name or phone digits.")]
    async fn search_contacts(&self, Parameters(input): Parameters<SearchContacts>) -> Result<CallToolResult, McpError> {
        self.get("/contacts", &input).await
    }

    #[tool(description = "Get a message by id, with its current delivery status.")]
    async fn get_message(&self, Parameters(input): Parameters<MessageId>) -> Result<CallToolResult, McpError> {
        let path = format!("/messages/{}", urlencode(&input.id));
        self.get(&path, &Page::default()).await
    }

    #[tool(description = "Cancel a scheduled message before it is handed to the line. Answers the message, canceled; \
                       a message already handed over cannot be canceled (message_not_cancelable).")]
    async fn cancel_message(&self, Parameters(input): Parameters<MessageId>) -> Result<CallToolResult, McpError> {
        let path = format!("/messages/{}/cancel", urlencode(&input.id));
        self.post(&path, None, &serde_json::json!({})).await
    }

    #[tool(description = "Edit the text of an iMessage msgline sent: within 15 minutes of sending, at most 5 times. \
                       Answers the message edited; or, when the line has not confirmed the edit yet, the message \
                       with action.status unknown and a note saying so (msgline settles it by asking the line: do \
                       not edit again to retry, follow it with get_message).")]
    async fn edit_message(&self, Parameters(input): Parameters<EditMessage>) -> Result<CallToolResult, McpError> {
        let path = format!("/messages/{}/edit", urlencode(&input.id));
        let body = serde_json::json!({"body": input.body});
        self.act(&path, input.idempotency_key, &body, "edit").await
    }

    #[tool(description = "Unsend an iMessage text msgline sent, within 2 minutes of sending: it disappears from the \
                       recipient's conversation, and msgline keeps its text. Answers as edit_message does.")]
    async fn unsend_message(&self, Parameters(input): Parameters<UnsendMessage>) -> Result<CallToolResult, McpError> {
        let path = format!("/messages/{}/unsend", urlencode(&input.id));
        self.act(&path, input.idempotency_key, &serde_json::json!({}), "unsend").await
    }

    #[tool(description = "List the phone lines this key can send from, with their capabilities.")]
    async fn list_lines(&self) -> Result<CallToolResult, McpError> {
        self.get("/lines", &Page::default()).await
    }
}

impl Tools {
    async fn post(&self, path: &str, key: Option<String>, body: &impl Serialize) -> Result<CallToolResult, McpError> {
        answer(self.post_request(path, key, body)).await.map(|(_, result)| result)
    }

    /// An edit or an unsend (`what`). The API answers `202` with the message while the line's
    /// answer is not known; the tool then says so in words too, so that a model neither takes
    /// the change for done nor asks for it again.
    async fn act(
        &self,
        path: &str,
        key: Option<String>,
        body: &impl Serialize,
        what: &str,
    ) -> Result<CallToolResult, McpError> {
        let (status, mut result) = answer(self.post_request(path, key, body)).await?;
        if status == Some(reqwest::StatusCode::ACCEPTED) {
            result.content.push(Content::text(format!(
                "The {what} is not confirmed yet: the line has not said whether it applied it (action.status: \
                 unknown). msgline asks the line later and never sends the {what} again. Do not repeat it; follow \
                 the message with get_message: action becomes null once the line applied it, or shows status \
                 failed with the line's error."
            )));
        }
        Ok(result)
    }

    fn post_request(&self, path: &str, key: Option<String>, body: &impl Serialize) -> reqwest::RequestBuilder {
        let mut request = self.http.post(format!("{}{PREFIX}{path}", self.base)).bearer_auth(&self.key).json(body);
        if let Some(key) = key {
            request = request.header("Idempotency-Key", key);
        }
        request
    }

    async fn get(&self, path: &str, query: &impl Serialize) -> Result<CallToolResult, McpError> {
        let request = self.http.get(format!("{}{PREFIX}{path}", self.base)).bearer_auth(&self.key).query(query);
        answer(request).await.map(|(_, result)| result)
    }
}

/// The API's answer as the tool's: its JSON body, as a tool error when the API refused; with the
/// API's status (none when it could not be reached).
async fn answer(request: reqwest::RequestBuilder) -> Result<(Option<reqwest::StatusCode>, CallToolResult), McpError> {
    let response = match request.send().await {
        Ok(response) => response,
        Err(error) => {
            let body = serde_json::json!({"error": "msgline_unreachable", "message": error.to_string()});
            return Ok((None, CallToolResult::error(vec![Content::text(body.to_string())])));
        }
    };
    let status = response.status();
    let ok = status.is_success();
    let text = response.text().await.unwrap_or_default();
    // JSON is passed on compact (fewer tokens for a model); anything else as it came.
    let text = serde_json::from_str::<Value>(&text).map(|v| v.to_string()).unwrap_or(text);
    let content = vec![Content::text(text)];
    Ok((Some(status), if ok { CallToolResult::success(content) } else { CallToolResult::error(content) }))
}

fn urlencode(segment: &str) -> String {
    url::form_urlencoded::byte_serialize(segment.as_bytes()).collect()
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for Tools {
    fn get_info(&self) -> ServerInfo {
        // The server names itself msgline, with this build's version (not the MCP library's).
        ServerInfo::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("msgline", env!("CARGO_PKG_VERSION")))
            .with_instructions(
                "msgline sends and reads SMS and iMessage through the organisation's phone lines. Send with \
             send_message (give an idempotency_key to make retries safe), then follow delivery with get_message. \
             edit_message and unsend_message change an iMessage already sent, within Apple's time limits.",
            )
    }
}

/// Serves the tools on stdin/stdout until the client closes them.
pub async fn run(base: &str, key: &str) -> anyhow::Result<()> {
    let service = Tools::new(base, key).serve(rmcp::transport::stdio()).await?;
    service.waiting().await?;
    Ok(())
}

/// `/mcp`: the tools over MCP's streamable HTTP transport, for an assistant on another machine.
pub fn router() -> axum::Router<crate::services::Services> {
    axum::Router::new().route("/mcp", axum::routing::any(over_http))
}

/// One client for every HTTP session's calls to the API: connections to the instance itself
/// are kept and shared.
static LOOPBACK: LazyLock<reqwest::Client> = LazyLock::new(reqwest::Client::new);

/// One request of the transport. The key is checked first (401 with the API's error, as the API
/// answers a bad key) and counted against its global rate policy (429); then the request is
/// served statelessly, with the tools acting with its own key: no session lives on the
/// instance, so any instance behind a load balancer answers any request, and the transport's
/// `GET` stream is not offered (405, as the transport allows). The tools call the API of this
/// instance, where the key's scopes and rate limits apply.
async fn over_http(State(state): State<crate::services::Services>, request: Request) -> Response {
    let header = request.headers().get(header::AUTHORIZATION).and_then(|v| v.to_str().ok());
    // Each request of the transport is admitted as an API request is (its key, its global
    // policy); a tool's call of the API counts again there.
    if let Err(error) = state.admit(header).await {
        return error.into_response();
    }
    let key = header.and_then(crate::caller::bearer).unwrap_or_default().to_string();
    let config = &state.sender.config;
    let base = config.loopback_url.clone().unwrap_or_else(|| config.public_base());
    // Stateless, answering JSON: a tool call is one request and its answer.
    let transport = StreamableHttpServerConfig::default()
        .with_stateful_mode(false)
        .with_json_response(true)
        // Who may call is the key's to say, not the Host header's: msgline is reached by name.
        .disable_allowed_hosts();
    let service = StreamableHttpService::new(
        move || Ok(Tools::with_client(LOOPBACK.clone(), &base, &key)),
        Arc::new(LocalSessionManager::default()),
        transport,
    );
    service.handle(request).await.into_response()
}
