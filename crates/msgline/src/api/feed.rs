//! `GET /feed` and `GET /feed/stream`: the organisation's events, the same objects webhooks
//! deliver, as pages after a cursor or as server-sent events (scope `messaging_read`, the feed on).

use std::{convert::Infallible, time::Duration};

use axum::{
    Json,
    extract::State,
    http::{HeaderMap, header},
    response::{IntoResponse, Response},
};
use serde::Deserialize;
use serde_json::{Value, json};
use utoipa_axum::{router::OpenApiRouter, routes};

use super::{extract::ApiQuery, openapi::schemas};
use crate::{
    caller::Principal,
    db,
    error::{ApiError, ApiResult},
    services::{
        Services,
        feed::{self, Otherwise, StreamReader},
    },
};

/// A stream sends a comment (`: keep-alive`) when it has had no event to send for this long, so
/// that proxies and clients see the connection alive.
const KEEP_ALIVE: Duration = Duration::from_secs(15);

pub fn router() -> OpenApiRouter<Services> {
    OpenApiRouter::new().routes(routes!(read_page)).routes(routes!(stream))
}

#[derive(Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
struct FeedQuery {
    /// The id of the last event read (`next_cursor` of the previous page); none: from the oldest
    /// event the feed still has.
    after: Option<String>,
    /// How many events, 1 to 200 (default 50).
    #[param(value_type = Option<i64>, minimum = 1, maximum = 200)]
    limit: Option<String>,
}

fn event_object(event: &db::feed::FeedEvent) -> Value {
    db::events::object(&event.id, &event.kind, event.created_at, &event.data)
}

/// The organisation's events after a cursor, oldest first.
#[utoipa::path(
    get,
    path = "/feed",
    tag = "events",
    security(("api_key" = ["messaging_read"])),
    params(FeedQuery),
    responses(
        (status = 200, description = "A page of events, oldest first", body = schemas::FeedPage),
        (status = 409, description = "`event_feed_off`: the organisation has not turned the feed on", body = schemas::Error),
    ),
)]
async fn read_page(
    State(state): State<Services>,
    caller: Principal,
    query: Result<ApiQuery<FeedQuery>, ApiError>,
) -> ApiResult<Json<Value>> {
    feed::require_on(&state, &caller).await?;
    let ApiQuery(query) = query?;
    let limit = super::extract::page(query.limit.as_deref(), None)?.limit;
    let after = query.after.as_deref().filter(|a| !a.is_empty());
    let from = feed::position(&state, &caller, after, "after", Otherwise::Oldest).await?;
    let events = feed::page(&state, &caller, from, limit).await?;
    // Where the next read starts: after the last event given, or where this one started.
    let next = events.last().map(|e| e.id.as_str()).or(after);
    Ok(Json(json!({"data": events.iter().map(event_object).collect::<Vec<_>>(), "next_cursor": next})))
}

/// The organisation's events as server-sent events, each `id: evt_…`, `event: <type>` and
/// `data: <the event object>`, from after `Last-Event-ID` (or `?after=`), or from now on.
#[utoipa::path(
    get,
    path = "/feed/stream",
    tag = "events",
    security(("api_key" = ["messaging_read"])),
    params(
        ("after" = Option<String>, Query, description = "Start after this event (as `Last-Event-ID`); neither: from now on"),
        ("Last-Event-ID" = Option<String>, Header, description = "The id of the last event received, to resume after it"),
    ),
    responses(
        (status = 200, description = "Events as they are committed, and a keep-alive comment at least every 15 s", content_type = "text/event-stream", body = String),
        (status = 409, description = "`event_feed_off`: the organisation has not turned the feed on", body = schemas::Error),
    ),
)]
async fn stream(
    State(state): State<Services>,
    caller: Principal,
    headers: HeaderMap,
    query: Result<ApiQuery<FeedQuery>, ApiError>,
) -> ApiResult<Response> {
    feed::require_on(&state, &caller).await?;
    let ApiQuery(query) = query?;
    let last = headers.get("last-event-id").map(|v| v.to_str().unwrap_or("\u{fffd}").trim().to_string());
    let (cursor, field) = match last.filter(|l| !l.is_empty()) {
        Some(last) => (Some(last), "Last-Event-ID"),
        None => (query.after.filter(|a| !a.is_empty()), "after"),
    };
    let from = feed::position(&state, &caller, cursor.as_deref(), field, Otherwise::Newest).await?;
    let reader = StreamReader::new(state, &caller, from);
    let body = futures_util::stream::unfold(reader, |mut reader| async move {
        // Cancel-safe: a batch is kept by the reader until it is handed out whole.
        let text = match tokio::time::timeout(KEEP_ALIVE, reader.next_batch()).await {
            Ok(events) => {
                events.iter().map(|e| format!("id: {}\nevent: {}\ndata: {}\n\n", e.id, e.kind, e.json())).collect()
            }
            Err(_) => String::from(": keep-alive\n\n"),
        };
        Some((Ok::<_, Infallible>(axum::body::Bytes::from(text)), reader))
    });
    Ok((
        [(header::CONTENT_TYPE, "text/event-stream"), (header::CACHE_CONTROL, "no-cache")],
        axum::body::Body::from_stream(body),
    )
        .into_response())
}
