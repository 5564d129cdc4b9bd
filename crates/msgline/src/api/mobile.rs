//! `/api/mobile/v1`: the calls of SMS Gateway for Android's app in its private-server mode, as
//! the app makes them (see `bridge::dial_in`), for the phones of dial-in lines. Not part of
//! msgline's API (no API keys, not in the OpenAPI document): the registration token, then the
//! device token, authenticate each call. Errors keep the API's shape; the app reads only their
//! status (401 on `PATCH /device` makes it register again).

use std::{convert::Infallible, time::Duration};

use axum::{
    Json, Router,
    extract::{Query, State},
    http::{HeaderMap, StatusCode},
    response::{IntoResponse, Response, sse},
    routing::{get, post},
};
use serde::Deserialize;
use serde_json::Value;

use super::extract::ApiJson;
use crate::{
    db,
    error::{ApiError, ApiResult},
    services::{
        Services,
        dial_in::{self, Registration, StateReport},
    },
};

pub const BASE: &str = "/api/mobile/v1";

/// A stream's comment when it has nothing to say (the Go server's period).
const KEEP_ALIVE: Duration = Duration::from_secs(15);
/// How often an open stream records that its phone is there, and looks whether its token still
/// holds (a second registration replaces the device).
const HEARTBEAT: Duration = Duration::from_secs(5);

pub fn router() -> Router<Services> {
    Router::new().nest(
        BASE,
        Router::new()
            .route("/device", post(register).patch(update_device))
            .route("/message", get(take).patch(report))
            .route("/messages", get(take).patch(report))
            .route("/events", get(events))
            .route("/webhooks", get(webhooks))
            .route("/settings", get(settings)),
    )
}

async fn register(
    State(state): State<Services>,
    headers: HeaderMap,
    ApiJson(body): ApiJson<Registration>,
) -> ApiResult<Response> {
    let answer = dial_in::register(&state, &headers, body).await?;
    Ok((StatusCode::CREATED, Json(answer)).into_response())
}

async fn update_device(
    State(state): State<Services>,
    headers: HeaderMap,
    ApiJson(body): ApiJson<Value>,
) -> ApiResult<StatusCode> {
    dial_in::update(&state, &headers, body).await?;
    Ok(StatusCode::NO_CONTENT)
}

#[derive(Deserialize)]
struct Order {
    #[serde(default)]
    order: Option<String>,
}

async fn take(
    State(state): State<Services>,
    headers: HeaderMap,
    order: Result<Query<Order>, axum::extract::rejection::QueryRejection>,
) -> ApiResult<Json<Value>> {
    let (_, line) = dial_in::device(&state, &headers).await?;
    // The app asks lifo or fifo; msgline hands out oldest first either way (the order sends
    // were accepted in).
    let order = order.map_err(|e| ApiError::bad_request(e.body_text()))?.0.order;
    if order.as_deref().is_some_and(|o| o != "lifo" && o != "fifo") {
        return Err(ApiError::invalid("order", "order is lifo or fifo"));
    }
    Ok(Json(dial_in::take(&state, &line).await?))
}

async fn report(
    State(state): State<Services>,
    headers: HeaderMap,
    ApiJson(body): ApiJson<Vec<StateReport>>,
) -> ApiResult<StatusCode> {
    let (_, line) = dial_in::device(&state, &headers).await?;
    dial_in::report(&state, &line, body).await?;
    Ok(StatusCode::NO_CONTENT)
}

async fn webhooks(State(state): State<Services>, headers: HeaderMap) -> ApiResult<Json<Value>> {
    let (device, line) = dial_in::device(&state, &headers).await?;
    Ok(Json(dial_in::webhooks(&state, &device, &line)))
}

async fn settings(State(state): State<Services>, headers: HeaderMap) -> ApiResult<Json<Value>> {
    let (_, line) = dial_in::device(&state, &headers).await?;
    Ok(Json(dial_in::settings(&line)))
}

/// What an open stream tells its phone next.
enum Step {
    /// The opening: the phone has neither the webhooks nor the signing key after its first
    /// registration, so it is told to read both, then to take what waits.
    Opening(u8),
    Live,
}

struct Stream {
    state: Services,
    headers: HeaderMap,
    line_id: String,
    step: Step,
    told: tokio::sync::watch::Receiver<u64>,
    /// `MessageEnqueued` was sent for what waits now.
    announced: bool,
}

impl Stream {
    /// The next event, or `None` to end the stream (the device was replaced).
    async fn next(&mut self) -> Option<sse::Event> {
        let named = |name: &str| sse::Event::default().event(name).data("null");
        loop {
            match self.step {
                Step::Opening(0) => {
                    self.step = Step::Opening(1);
                    return Some(named("WebhooksUpdated"));
                }
                Step::Opening(1) => {
                    self.step = Step::Opening(2);
                    return Some(named("SettingsUpdated"));
                }
                Step::Opening(_) => self.step = Step::Live,
                Step::Live => {}
            }
            self.told.borrow_and_update();
            if !self.announced && db::dial_in::has_waiting(&self.state.sender.db, &self.line_id).await.unwrap_or(false)
            {
                self.announced = true;
                return Some(named("MessageEnqueued"));
            }
            // Something new queued (or, at the heartbeat, something still waiting) is announced
            // again.
            self.announced = false;
            if tokio::time::timeout(HEARTBEAT, self.told.changed()).await.is_err() {
                // The heartbeat: the phone is there, and still this line's device.
                if dial_in::device(&self.state, &self.headers).await.is_err() {
                    return None;
                }
            }
        }
    }
}

/// `GET /events`: the phone's server-sent events (`MessageEnqueued` when a send is held for it,
/// `WebhooksUpdated` and `SettingsUpdated` when it opens), a keep-alive comment every 15 s.
async fn events(State(state): State<Services>, headers: HeaderMap) -> ApiResult<Response> {
    let (_, line) = dial_in::device(&state, &headers).await?;
    dial_in::back_online(&state, &line.id).await?;
    let told = state.sender.lines.client().dial_in().queued().subscribe();
    let stream = Stream { state, headers, line_id: line.id.clone(), step: Step::Opening(0), told, announced: false };
    let events = futures_util::stream::unfold(stream, |mut stream| async move {
        let event = stream.next().await?;
        Some((Ok::<_, Infallible>(event), stream))
    });
    Ok(sse::Sse::new(events).keep_alive(sse::KeepAlive::new().interval(KEEP_ALIVE).text("keepalive")).into_response())
}
