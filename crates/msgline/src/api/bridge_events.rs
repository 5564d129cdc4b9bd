//! `POST /bridge/events`: callbacks from a line's bridge, authenticated with the line's
//! bridge secret. The body is one event or an array of events.
//!
//! `POST /bridge/hooks/{line_id}?secret=…`: webhooks from a device of another kind (a BlueBubbles
//! Server, an Android gateway), registered there by msgline; the line's adapter turns each into
//! bridge events, which are then applied exactly like callbacks.

use std::collections::HashMap;

use axum::{
    Json,
    extract::{Path, RawQuery, State},
    http::{HeaderMap, header},
};
use serde_json::{Value, json};
use utoipa_axum::{router::OpenApiRouter, routes};

use super::{
    extract::{ApiJson, RawBody},
    openapi::schemas,
};
use crate::{
    bridge::{
        BridgeEvent,
        adapter::{Hook, HookError},
    },
    db,
    error::{ApiError, ApiResult, ErrorKind},
    fields::from_value,
    inbound::{self, Handled},
    services::Services,
};

pub fn router() -> OpenApiRouter<Services> {
    OpenApiRouter::new()
        .routes(routes!(receive))
        .routes(routes!(receive_hook, receive_hook_get))
        .routes(routes!(attachment))
}

/// A file of a message on the line, for its bridge to send (`attachments[].url` of a `media` send).
///
/// Authenticated with `Authorization: Bearer <the line's bridge_secret>`; not for API keys.
#[utoipa::path(
    get,
    path = "/bridge/attachments/{id}",
    tag = "bridge",
    params(("id" = String, Path, description = "The attachment's id (`file_…`)")),
    responses((status = 200, description = "The file", content_type = "application/octet-stream")),
    security(("bridge_secret" = [])),
)]
async fn attachment(
    State(state): State<Services>,
    headers: HeaderMap,
    Path(id): Path<String>,
) -> ApiResult<axum::response::Response> {
    let secret = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(super::auth::bearer)
        .ok_or_else(ApiError::unauthorized)?;
    let line =
        db::lines::find_by_bridge_secret(&state.sender.db, secret.trim()).await?.ok_or_else(ApiError::unauthorized)?;
    let attachment = db::attachments::get_on_line(&state.sender.db, &line.id, &id)
        .await?
        .ok_or_else(|| ApiError::not_found("attachment"))?;
    crate::web::files::file_response(&state.sender.media, &attachment).await
}

/// A device's own webhook (a BlueBubbles Server, an Android gateway), registered there by msgline.
///
/// Authenticated with the secret msgline put in the URL it registered (`?secret=`), or the
/// device's own signature; not for API keys.
#[utoipa::path(
    post,
    path = "/bridge/hooks/{line_id}",
    tag = "bridge",
    params(
        ("line_id" = String, Path, description = "The line the device serves"),
        ("secret" = Option<String>, Query, description = "The secret msgline registered with the device"),
    ),
    request_body(content = Object, description = "The device's event, in its own format"),
    responses((status = 200, description = "What was applied", body = schemas::Applied)),
)]
async fn receive_hook(
    State(state): State<Services>,
    Path(line_id): Path<String>,
    RawQuery(raw_query): RawQuery,
    headers: HeaderMap,
    RawBody(body): RawBody,
) -> ApiResult<Json<Value>> {
    hook_call(&state, &line_id, raw_query, &headers, &body).await
}

/// A device's call that carries everything in its URL (Kannel's reports and arriving messages).
///
/// Authenticated with the secret in the URL (`?secret=`); not for API keys.
#[utoipa::path(
    get,
    path = "/bridge/hooks/{line_id}",
    tag = "bridge",
    params(
        ("line_id" = String, Path, description = "The line the device serves"),
        ("secret" = Option<String>, Query, description = "The secret msgline printed for the device"),
    ),
    responses((status = 200, description = "What was applied", body = schemas::Applied)),
)]
async fn receive_hook_get(
    State(state): State<Services>,
    Path(line_id): Path<String>,
    RawQuery(raw_query): RawQuery,
    headers: HeaderMap,
) -> ApiResult<Json<Value>> {
    hook_call(&state, &line_id, raw_query, &headers, &[]).await
}

/// A device's call, by either method, as the line's kind reads it.
async fn hook_call(
    state: &Services,
    line_id: &str,
    raw_query: Option<String>,
    headers: &HeaderMap,
    body: &[u8],
) -> ApiResult<Json<Value>> {
    let raw_query = raw_query.unwrap_or_default();
    let query = query_values(&raw_query);
    let hook = Hook { headers, query: &query, raw_query: &raw_query, body };
    apply_hook(state, line_id, &hook).await
}

/// A hook's query values as text. A value whose bytes are not UTF-8 (Kannel's UCS-2 text) is not
/// a refusal: its text here is lossy, and the kind reads its bytes from the raw query.
fn query_values(raw: &str) -> HashMap<String, String> {
    url::form_urlencoded::parse(raw.as_bytes()).map(|(k, v)| (k.into_owned(), v.into_owned())).collect()
}

async fn apply_hook(state: &Services, line_id: &str, hook: &Hook<'_>) -> ApiResult<Json<Value>> {
    // An unknown line answers as a wrong secret does.
    let line = state.sender.lines.get(line_id).await?.ok_or_else(ApiError::unauthorized)?;
    let mut events = state.sender.lines.client().receive(&line, hook).await.map_err(|error| match error {
        HookError::Unauthorized(why) => {
            tracing::info!(line = %line.id, why, "refused a device webhook");
            ApiError::unauthorized()
        }
        HookError::Malformed(why) => ApiError::bad_request(why),
        HookError::NotHere => ApiError::not_found("route"),
    })?;
    // A device never sends its webhook again, so a NUL in it is taken out rather than the
    // message refused (a msgline bridge gets a 400, as an API body would, and resends fixed).
    // Nor is a text longer than a message holds refused: it is cut, and the cut is logged. The
    // sender's rules are the bridge protocol's: an empty or absurd one is refused.
    events = events
        .into_iter()
        .map(|event| {
            let (event, cut) = event.without_nul().capped();
            if let Some(chars) = cut {
                tracing::warn!(line = %line.id, event = %event.id, chars, "an arriving text was cut to the longest a message holds");
            }
            event.check().map_err(|(field, why)| ApiError::invalid(field, why))?;
            Ok(event)
        })
        .collect::<ApiResult<_>>()?;
    // A device's webhook is not always sent again: a file it cannot give now is left out rather
    // than the message refused.
    fetch_files(state, &line, &mut events, false).await?;
    let reports = report_spans(state, &line, &events);
    let handled =
        inbound::handle_all(&state.sender.db, &line, &events, inbound::Rules::of(&state.sender.config)).await?;
    end_report_spans(reports, &handled);
    wake_for_replies(state, &events);
    observe_reports(state, &line, &events, &handled).await?;
    let applied = handled.iter().filter(|h| **h == Handled::Applied).count();
    Ok(Json(json!({"applied": applied, "duplicates": handled.len() - applied})))
}

/// Callbacks from a `msgline` bridge: one event or an array of them (see docs/bridge-protocol.md).
///
/// Authenticated with `Authorization: Bearer <the line's bridge_secret>`; not for API keys.
#[utoipa::path(
    post,
    path = "/bridge/events",
    tag = "bridge",
    request_body(content = Object, description = "A bridge event, or an array of them"),
    responses(
        (status = 200, description = "What was applied", body = schemas::Applied),
        (status = 400, description = "An event msgline cannot read or use (`invalid_request`, with `field`); none was applied", body = schemas::Error),
    ),
    security(("bridge_secret" = [])),
)]
async fn receive(
    State(state): State<Services>,
    headers: HeaderMap,
    ApiJson(body): ApiJson<Value>,
) -> ApiResult<Json<Value>> {
    let secret = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(super::auth::bearer)
        .ok_or_else(ApiError::unauthorized)?;
    let line =
        db::lines::find_by_bridge_secret(&state.sender.db, secret.trim()).await?.ok_or_else(ApiError::unauthorized)?;
    let many = body.is_array();
    let mut events: Vec<BridgeEvent> = match body {
        Value::Array(_) => from_value(body)?,
        other => vec![from_value(other)?],
    };
    check_events(&state, &line, &events, many).await?;
    fetch_files(&state, &line, &mut events, true).await?;
    let reports = report_spans(&state, &line, &events);
    let handled =
        inbound::handle_all(&state.sender.db, &line, &events, inbound::Rules::of(&state.sender.config)).await?;
    end_report_spans(reports, &handled);
    wake_for_replies(&state, &events);
    observe_reports(&state, &line, &events, &handled).await?;
    let applied = handled.iter().filter(|h| **h == Handled::Applied).count();
    let duplicates = handled.len() - applied;
    Ok(Json(json!({"applied": applied, "duplicates": duplicates})))
}

/// Refuses the whole callback, applying none of it, when one of its events is one msgline cannot
/// use: 400 naming the event (`[i]`) and its field.
async fn check_events(state: &Services, line: &db::lines::Line, events: &[BridgeEvent], many: bool) -> ApiResult<()> {
    for (i, event) in events.iter().enumerate() {
        let at = |field: &str| if many { format!("[{i}].{field}") } else { field.to_string() };
        event.check().map_err(|(field, why)| ApiError::invalid(at(field), why))?;
        if let crate::bridge::BridgeEventPayload::PollVote { poll_message_id, option_index, .. } = &event.payload {
            let poll = state.sender.db.read(async |conn| db::polls::by_message(conn, poll_message_id).await).await?;
            let poll = poll.filter(|p| p.line_id == line.id);
            if let Some(poll) = poll
                && *option_index >= poll.options.len() as i64
            {
                return Err(ApiError::invalid(
                    at("data.option_index"),
                    format!("the poll has {} options; option_index counts from 0", poll.options.len()),
                ));
            }
        }
    }
    Ok(())
}

/// Fetches and stores the files of inbound messages before the events are applied, so that a
/// message and its attachment rows are written together. A file over `MSGLINE_MEDIA_MAX_BYTES`,
/// or one the line's kind refuses to fetch (a URL off the bridge's origin), is left out (the
/// message keeps the others); one the device cannot give now refuses the whole
/// call with 503 when `refuse` (a bridge retries its callbacks until they are taken), else is
/// left out too.
async fn fetch_files(
    state: &Services,
    line: &db::lines::Line,
    events: &mut [BridgeEvent],
    refuse: bool,
) -> ApiResult<()> {
    let max = state.sender.config.media_max_bytes as usize;
    let now = crate::clock::now_ms();
    for event in events.iter_mut() {
        let crate::bridge::BridgeEventPayload::Inbound { attachments, .. } = &mut event.payload else { continue };
        for (position, file) in attachments.iter_mut().enumerate() {
            let bytes = match state.sender.lines.client().fetch_file(line, &file.url, max).await {
                Ok(bytes) if !bytes.is_empty() => bytes,
                Ok(_) => continue,
                Err(crate::bridge::adapter::FileError::TooLarge) => {
                    tracing::warn!(line = %line.id, url = %file.url, max, "an inbound file over the size limit was left out");
                    continue;
                }
                Err(crate::bridge::adapter::FileError::Refused(why)) => {
                    tracing::warn!(line = %line.id, url = %file.url, why, "an inbound file msgline will not fetch was left out");
                    continue;
                }
                Err(crate::bridge::adapter::FileError::Unavailable(why)) if !refuse => {
                    tracing::warn!(line = %line.id, url = %file.url, why, "an inbound file could not be fetched and was left out");
                    continue;
                }
                Err(crate::bridge::adapter::FileError::Unavailable(why)) => {
                    return Err(ApiError::new(ErrorKind::Unavailable, "line_unavailable")
                        .with_message(format!("a file of event {} could not be fetched ({why}); try again", event.id))
                        .with_retry_after(1));
                }
            };
            let filename = file.filename.clone().filter(|n| !n.trim().is_empty());
            let stored = db::attachments::Attachment::arrived(
                &line.id,
                position as i64,
                crate::media::sniff(&bytes),
                bytes.len() as i64,
                filename,
                now,
            );
            state.sender.media.put(&stored.storage_key, bytes).await.map_err(ApiError::internal)?;
            file.stored = Some(stored);
        }
    }
    Ok(())
}

/// What the applied status reports say of the line (a run of failures, a blocked SIM: see
/// `lines::signals`).
async fn observe_reports(
    state: &Services,
    line: &db::lines::Line,
    events: &[BridgeEvent],
    handled: &[Handled],
) -> ApiResult<()> {
    let applied: Vec<bool> = handled.iter().map(|h| *h == Handled::Applied).collect();
    let sender = &state.sender;
    crate::lines::signals::observe_reports(&sender.db, &sender.lines, line, events, &applied).await?;
    Ok(())
}

/// An inbound text may have queued an automatic reply (to STOP, START or HELP): the dispatcher
/// is woken to send it now rather than at its next look.
fn wake_for_replies(state: &Services, events: &[BridgeEvent]) {
    if events.iter().any(|e| matches!(e.payload, crate::bridge::BridgeEventPayload::Inbound { .. })) {
        state.sender.dispatch.wake();
    }
}

/// With traces on, a `line.report` span for each status report among `events`, a child of the
/// call of the line for its message (when this instance made it): the send's trace ends with
/// what the line said of it. With traces off, nothing (an empty list allocates nothing).
fn report_spans(state: &Services, line: &db::lines::Line, events: &[BridgeEvent]) -> Vec<Option<tracing::Span>> {
    let traces = &state.sender.traces;
    if !traces.is_on() {
        return Vec::new();
    }
    let report = |event: &BridgeEvent| {
        let crate::bridge::BridgeEventPayload::MessageStatus { message_id, status, .. } = &event.payload else {
            return None;
        };
        let span = tracing::info_span!(target: crate::trace::TARGET, "line.report",
            msgline.message_id = %message_id, msgline.line_id = %line.id, msgline.status = %status,
            msgline.applied = tracing::field::Empty);
        traces.under_call(&span, message_id);
        Some(span)
    };
    events.iter().map(report).collect()
}

/// Ends the spans of [`report_spans`], each saying whether its report was applied (or was one
/// seen before).
fn end_report_spans(spans: Vec<Option<tracing::Span>>, handled: &[Handled]) {
    for (span, handled) in spans.into_iter().zip(handled) {
        if let Some(span) = span {
            span.record("msgline.applied", *handled == Handled::Applied);
        }
    }
}
