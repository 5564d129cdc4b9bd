//! What a dial-in Android phone asks of msgline (the app's private-server calls, `api::mobile`):
//! registering with the line's registration token, then, with its device token, taking the
//! messages held for it, reporting their states, and reading the webhooks and settings it is to
//! use. A device token works for its own line only; both tokens are stored hashed.

use axum::http::HeaderMap;
use serde::Deserialize;
use serde_json::{Value, json};

use crate::{
    bridge::{BridgeEvent, BridgeEventPayload},
    caller::bearer,
    clock,
    db::{self, dial_in::Device, lines::Line},
    domain::apikey::{hash_secret, random_secret},
    error::{ApiError, ApiResult},
    inbound::{self, Handled},
    services::Services,
};

/// Messages a phone takes at a time (the Go server's limit).
const TAKE: i64 = 100;
/// The webhooks msgline lists for the phone: its own hook, for each event it handles.
const EVENTS: [&str; 6] = ["sms:received", "sms:sent", "sms:delivered", "sms:failed", "mms:downloaded", "system:ping"];

fn token(headers: &HeaderMap) -> Option<&str> {
    headers.get(axum::http::header::AUTHORIZATION).and_then(|v| v.to_str().ok()).and_then(bearer).map(str::trim)
}

/// `POST /device`: what the app sends (`GatewayApi.DeviceRegisterRequest`).
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Registration {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    push_token: Option<String>,
}

/// Registers the phone presenting the line's registration token: a new device id and token
/// (and the login and password the app shows). A second registration replaces the first device.
pub async fn register(state: &Services, headers: &HeaderMap, body: Registration) -> ApiResult<Value> {
    let Some(registration) = token(headers) else { return Err(ApiError::unauthorized()) };
    let device_id = random_secret("").chars().take(21).collect::<String>();
    let device_token = random_secret("mld_");
    let name: String = body.name.unwrap_or_default().chars().take(128).collect();
    let db = &state.sender.db;
    let line_id = db::dial_in::register(db, &hash_secret(registration), &device_id, &hash_secret(&device_token), &name)
        .await?
        .ok_or_else(ApiError::unauthorized)?;
    if body.push_token.is_some() {
        tracing::warn!(line = %line_id, "the phone registered with a push token: set its app to \"SSE only\", or it will not hear of sends at once");
    }
    tracing::info!(line = %line_id, device = %device_id, "a phone registered on a dial-in line");
    back_online(state, &line_id).await?;
    let login = device_id[..6].to_uppercase();
    let password = random_secret("").chars().take(14).collect::<String>();
    Ok(json!({"id": device_id, "token": device_token, "login": login, "password": password}))
}

/// The phone presenting a device token, marked seen now, with its line: 401 for a token no
/// device holds (a replaced device's included).
pub async fn device(state: &Services, headers: &HeaderMap) -> ApiResult<(Device, Line)> {
    let Some(token) = token(headers) else { return Err(ApiError::unauthorized()) };
    let device = db::dial_in::seen(&state.sender.db, &hash_secret(token)).await?.ok_or_else(ApiError::unauthorized)?;
    let line = state.sender.lines.get(&device.line_id).await?.ok_or_else(ApiError::unauthorized)?;
    Ok((device, line))
}

/// A line whose phone calls is up: an `offline` line comes back at once (its sends go to the
/// phone) rather than at its next probe.
pub async fn back_online(state: &Services, line_id: &str) -> ApiResult<()> {
    if let Some(change) = crate::lines::health::came_back(&state.sender.db, line_id).await? {
        tracing::info!(line = %line_id, previous = change.previous.as_str(), "the dial-in phone called: line active");
        state.sender.lines.forget(line_id);
        state.sender.dispatch.wake_pacer(line_id);
    }
    Ok(())
}

/// `PATCH /device`: the app's start with a registration kept (`id`, `pushToken`). 403 for
/// another device's id.
pub async fn update(state: &Services, headers: &HeaderMap, body: Value) -> ApiResult<()> {
    let (device, line) = device(state, headers).await?;
    if body.get("id").and_then(Value::as_str).is_some_and(|id| Some(id) != device.device_id.as_deref()) {
        return Err(ApiError::new(crate::error::ErrorKind::Forbidden, "forbidden")
            .with_message("that is not this token's device"));
    }
    back_online(state, &line.id).await
}

/// `GET /message`: the messages held for the phone, each handed out once. One the phone takes
/// and never reports is `unknown` after the bridge timeout (the reconciler asks the line then).
pub async fn take(state: &Services, line: &Line) -> ApiResult<Value> {
    let ask_at = clock::now_ms() + state.sender.config.bridge_timeout_ms as i64;
    let requests = db::dial_in::take(&state.sender.db, &line.id, TAKE, ask_at).await?;
    let items: Vec<Value> = requests.iter().filter_map(|r| serde_json::from_str(r).ok()).collect();
    Ok(Value::Array(items))
}

/// One message's state in `PATCH /message` (`GatewayApi.MessagePatchRequest`).
#[derive(Deserialize)]
pub struct StateReport {
    id: String,
    state: String,
    #[serde(default)]
    recipients: Vec<RecipientState>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RecipientState {
    #[serde(default)]
    state: String,
    #[serde(default)]
    error: Option<String>,
}

/// Where a status stands, for keeping a line's record of what the phone said from going back.
fn rank(status: &str) -> u8 {
    match status {
        "submitted" => 1,
        "sent" => 2,
        "delivered" | "failed" => 3,
        _ => 0,
    }
}

/// The app's state as a msgline status report: its event id (the webhook of the same step has
/// the same, so that the two count once), the status and the reason.
fn status_of(id: &str, state: &str, error: Option<String>) -> Option<(String, &'static str, Option<String>)> {
    let (event, status, reason) = match state {
        "Processed" => ("android:processed", "submitted", None),
        "Sent" => ("android:sms:sent", "sent", None),
        "Delivered" => ("android:sms:delivered", "delivered", None),
        "Failed" => {
            ("android:sms:failed", "failed", Some(error.unwrap_or_else(|| "the phone could not send the SMS".into())))
        }
        "Cancelled" => ("android:sms:cancelled", "failed", Some("the message was cancelled on the phone".to_string())),
        // Pending, Cancelling: nothing has happened yet.
        _ => return None,
    };
    Some((format!("{event}:{id}"), status, reason))
}

/// `PATCH /message`: the phone's state reports, applied as the line's status reports. Each
/// message's state is its recipient's (msgline sends to one number at a time); a report of a
/// message the line does not have is ignored (the app would only send it again), and a repeated
/// or late one moves nothing.
pub async fn report(state: &Services, line: &Line, reports: Vec<StateReport>) -> ApiResult<()> {
    let db = &state.sender.db;
    let mut events = Vec::new();
    for report in reports {
        let recipient = report.recipients.into_iter().next();
        let (app_state, error) = match recipient {
            Some(r) if !r.state.is_empty() => (r.state, r.error),
            Some(r) => (report.state, r.error),
            None => (report.state, None),
        };
        let Some((event_id, status, reason)) = status_of(&report.id, &app_state, error) else { continue };
        let before = match db::dial_in::queued(db, &line.id, &report.id).await? {
            db::dial_in::Queued::Taken { reported, .. } => reported,
            // Not this line's, or not taken (a report for it is the phone's mistake).
            _ => continue,
        };
        if before.as_deref().map(rank).unwrap_or(0) < rank(status) {
            db::dial_in::report(db, &line.id, &report.id, status, reason.as_deref()).await?;
        }
        let payload = BridgeEventPayload::MessageStatus { message_id: report.id, status: status.into(), reason };
        events.push(BridgeEvent { id: event_id, payload });
    }
    if events.is_empty() {
        return Ok(());
    }
    let rules = inbound::Rules::of(&state.sender.config);
    let handled = inbound::handle_all(db, line, &events, rules).await.map_err(ApiError::internal)?;
    let applied: Vec<bool> = handled.iter().map(|h| *h == Handled::Applied).collect();
    crate::lines::signals::observe_reports(db, &state.sender.lines, line, &events, &applied).await?;
    Ok(())
}

/// `GET /webhooks`: msgline's hook for each event it handles (ids of msgline's own, stable, so
/// the app's list is replaced by the same one each time).
pub fn webhooks(state: &Services, device: &Device, line: &Line) -> Value {
    let url = state.sender.lines.client().dial_in().hook_url(line);
    let hooks: Vec<Value> = EVENTS
        .iter()
        .map(|event| {
            json!({
                "id": format!("msgline-{}-{}", line.id, event.replace(':', "-")),
                "deviceId": device.device_id,
                "url": url,
                "event": event,
            })
        })
        .collect();
    Value::Array(hooks)
}

/// `GET /settings`: the key the phone signs its webhooks with.
pub fn settings(line: &Line) -> Value {
    json!({"webhooks": {"signing_key": line.bridge_settings.signing_key}})
}
