//! `POST /groups`: an iMessage group chat and its opening message (scope `messaging_send`);
//! `GET /groups/{id}` (scope `messaging_read`).

use std::collections::BTreeSet;

use axum::{
    Json,
    extract::{Path, State},
    http::{HeaderMap, StatusCode},
    response::{IntoResponse, Response},
};
use serde::Deserialize;
use serde_json::{Value, json};
use utoipa_axum::{router::OpenApiRouter, routes};

use super::{
    extract::ApiJson,
    messages::{IdempotencyKey, header_key},
    openapi::schemas,
};
use crate::send::groups::participants;
use crate::{
    caller::Principal,
    db::{self, group_changes::ChangeState},
    domain::{id::LineId, lifecycle::ConversationKind, phone::E164, scope::Scope},
    error::{ApiError, ApiResult},
    fields::{bounded, from_ref, phone_field, required_text},
    send::{
        groups::{self, CHANGES_PATH, ChangeInput, ChangeSent, GroupInput, GroupSent, MAX_PARTICIPANTS},
        request::{MAX_BODY_CHARS, idempotency},
    },
    services::Services,
    web::errors::replayed,
};

pub fn router() -> OpenApiRouter<Services> {
    OpenApiRouter::new()
        .routes(routes!(create_group))
        .routes(routes!(get_group, rename_group))
        .routes(routes!(change_participants))
        .routes(routes!(leave_group))
}

/// `POST /groups`.
#[derive(Deserialize, utoipa::ToSchema)]
#[schema(example = json!({"participants": ["+12015550123", "+12015550124"], "body": "Hi all", "name": "Weekend trip"}))]
struct CreateGroup {
    /// 2 to 31 distinct numbers, E.164 (national with `default_country`).
    #[schema(required = true, min_items = 2, max_items = 31)]
    participants: Option<Vec<String>>,
    /// The opening message, 1 to 10,000 characters.
    #[schema(required = true, min_length = 1, max_length = 10000)]
    body: Option<String>,
    /// The group's display name, up to 100 characters.
    #[schema(max_length = 100)]
    name: Option<String>,
    /// The dedicated line that creates the group.
    line_id: Option<String>,
    /// The line, by its number.
    from: Option<String>,
    /// The same as `from`.
    line_e164: Option<String>,
    /// For national-format participants.
    default_country: Option<String>,
    /// The same as the `Idempotency-Key` header.
    #[schema(min_length = 1, max_length = 255)]
    idempotency_key: Option<String>,
}

/// Create an iMessage group with its opening message.
///
/// msgline asks the line to create the group and waits for its answer. Never falls back to SMS or
/// to separate messages. After a `202` (no answer in time), poll `GET /groups/{id}`; do not retry
/// with a new idempotency key.
#[utoipa::path(
    post,
    path = "/groups",
    tag = "groups",
    security(("api_key" = ["messaging_send"])),
    params(IdempotencyKey),
    request_body = CreateGroup,
    responses(
        (status = 201, description = "The line created the group", body = schemas::GroupCreated),
        (status = 202, description = "No answer from the line in time: `group.state` and `message.status` are `unknown`", body = schemas::GroupCreated),
        (status = 200, description = "An idempotent replay of a created group", body = schemas::GroupCreated,
            headers(("Idempotent-Replayed" = String, description = "`true` on a replay"))),
        (status = 404, description = "A line that does not resolve (`not_found`, with `field`)", body = schemas::Error),
        (status = 409, description = "`line_mismatch`, `group_requires_dedicated_line`, `group_chats_unsupported`, `idempotency_key_reused` or `idempotency_key_in_progress`", body = schemas::Error),
        (status = 502, description = "The line refused the group (`line_rejected`)", body = schemas::GroupRefused),
        (status = 503, description = "The line could not be reached (`line_unavailable`)", body = schemas::GroupRefused),
    ),
)]
async fn create_group(
    State(state): State<Services>,
    caller: Principal,
    headers: HeaderMap,
    ApiJson(raw): ApiJson<Value>,
) -> ApiResult<Response> {
    caller.require(Scope::Send)?;
    let request: CreateGroup = from_ref(&raw)?;
    let raw_participants =
        request.participants.ok_or_else(|| ApiError::invalid("participants", "participants is required"))?;
    let participants = participants(raw_participants, request.default_country.as_deref())?;
    let body = required_text("body", request.body, MAX_BODY_CHARS)?;
    let name = bounded("name", request.name, 100)?.filter(|n| !n.is_empty());
    let line_e164 = match (request.from.as_deref(), request.line_e164.as_deref()) {
        (Some(a), Some(b)) if a != b => {
            return Err(ApiError::invalid("from", "from and line_e164 name different lines"));
        }
        (Some(number), _) => Some(("from", number)),
        (None, Some(number)) => Some(("line_e164", number)),
        (None, None) => None,
    }
    .map(|(field, number)| E164::parse(number, None).map_err(|e| ApiError::invalid(field, e.describe(number))))
    .transpose()?
    .map(E164::into_string);
    // The fingerprint is made from the normalised request once the line is known.
    let key =
        idempotency(header_key(&headers)?.as_deref(), request.idempotency_key.as_deref(), "/groups", String::new)?;
    let input = GroupInput { participants, body, name, line_id: request.line_id.map(LineId::from), line_e164 };
    Ok(respond_group(groups::create(&state.sender, &caller, input, key).await?))
}

/// A group's answer: 201 `created` (200 on a replay) or 202 while the line's answer is unknown,
/// with `{group, message, duplicate, delivery_unknown}`.
fn respond_group(sent: GroupSent) -> Response {
    let status = match sent.group.group_state.as_deref() {
        Some("created") if !sent.replayed => StatusCode::CREATED,
        Some("created") => StatusCode::OK,
        _ => StatusCode::ACCEPTED,
    };
    let body = json!({
        "group": sent.group.group_json(),
        "message": sent.message.to_json(),
        "duplicate": sent.replayed,
        "delivery_unknown": sent.message.delivery_unknown,
    });
    replayed((status, Json(body)).into_response(), sent.replayed)
}

/// A change's answer: 200 applied, 202 while pending or unknown, with `{group, change, duplicate}`.
fn respond_change(sent: ChangeSent) -> Response {
    let status = if sent.change.state == ChangeState::Applied { StatusCode::OK } else { StatusCode::ACCEPTED };
    let body = json!({"group": sent.group.group_json(), "change": sent.change.to_json(), "duplicate": sent.replayed});
    replayed((status, Json(body)).into_response(), sent.replayed)
}

/// A group.
#[utoipa::path(
    get,
    path = "/groups/{id}",
    tag = "groups",
    security(("api_key" = ["messaging_read"])),
    params(("id" = String, Path, description = "The group's id (`conv_…`)")),
    responses((status = 200, description = "The group", body = schemas::Group)),
)]
async fn get_group(State(state): State<Services>, caller: Principal, Path(id): Path<String>) -> ApiResult<Json<Value>> {
    caller.require(Scope::Read)?;
    let group = db::conversations::get(&state.sender.db, &caller.org_id, &id)
        .await?
        .filter(|c| c.kind == ConversationKind::Group)
        .filter(|c| caller.may_use_line(&c.line_id))
        .ok_or_else(|| ApiError::not_found("group"))?;
    Ok(Json(group.group_json()))
}

/// `PATCH /groups/{id}`.
#[derive(Deserialize, utoipa::ToSchema)]
#[schema(example = json!({"name": "Weekend trip (Sat)"}))]
struct RenameGroup {
    /// The new display name, up to 100 characters; `""` removes the name.
    #[schema(required = true, max_length = 100)]
    name: Option<String>,
    /// The same as the `Idempotency-Key` header.
    #[schema(min_length = 1, max_length = 255)]
    idempotency_key: Option<String>,
}

/// `POST /groups/{id}/participants`.
#[derive(Deserialize, utoipa::ToSchema)]
#[schema(example = json!({"add": ["+12015550125"], "remove": ["+12015550124"]}))]
struct ChangeParticipants {
    /// Numbers to add, E.164 (national with `default_country`).
    add: Option<Vec<String>>,
    /// Numbers to remove.
    remove: Option<Vec<String>>,
    /// For national-format numbers.
    default_country: Option<String>,
    /// The same as the `Idempotency-Key` header.
    #[schema(min_length = 1, max_length = 255)]
    idempotency_key: Option<String>,
}

/// Rename a group (or remove its name).
///
/// msgline asks the line and waits for its answer, as for the group's creation: `200` with the
/// group as it now is, `202` while the outcome is unknown (poll `GET /groups/{id}`, or wait for
/// `messaging.group.updated`), or the line's refusal.
#[utoipa::path(
    patch,
    path = "/groups/{id}",
    tag = "groups",
    security(("api_key" = ["messaging_send"])),
    params(("id" = String, Path, description = "The group's id (`conv_…`)"), IdempotencyKey),
    request_body = RenameGroup,
    responses(
        (status = 200, description = "The line renamed the group (or a replay)", body = schemas::GroupChanged),
        (status = 202, description = "No answer from the line in time: `change.status` is `unknown`", body = schemas::GroupChanged),
        (status = 409, description = "`group_not_created`, `group_chats_unsupported`, `idempotency_key_reused` or `idempotency_key_in_progress`", body = schemas::Error),
        (status = 502, description = "The line refused the change (`line_rejected`)", body = schemas::Error),
        (status = 503, description = "The line could not be reached (`line_unavailable`)", body = schemas::Error),
    ),
)]
async fn rename_group(
    State(state): State<Services>,
    caller: Principal,
    Path(id): Path<String>,
    headers: HeaderMap,
    ApiJson(raw): ApiJson<Value>,
) -> ApiResult<Response> {
    caller.require(Scope::Send)?;
    let request: RenameGroup = from_ref(&raw)?;
    let name = request.name.ok_or_else(|| ApiError::invalid("name", "name is required (\"\" removes it)"))?;
    let name = bounded("name", Some(name), 100)?.unwrap_or_default();
    let key =
        idempotency(header_key(&headers)?.as_deref(), request.idempotency_key.as_deref(), CHANGES_PATH, String::new)?;
    let input = ChangeInput { name: Some(name), ..ChangeInput::default() };
    Ok(respond_change(groups::change(&state.sender, &caller, &id, input, key).await?))
}

/// Numbers for a change of participants: E.164, each once, at most 31.
fn change_list(field: &str, raw: Option<Vec<String>>, default_country: Option<&str>) -> ApiResult<Vec<E164>> {
    let mut distinct = BTreeSet::new();
    for number in raw.unwrap_or_default() {
        distinct.insert(phone_field(field, &number, default_country)?);
    }
    if distinct.len() > MAX_PARTICIPANTS {
        return Err(ApiError::invalid(field, format!("at most {MAX_PARTICIPANTS} numbers")));
    }
    Ok(distinct.into_iter().collect())
}

/// Add and remove participants of a group.
///
/// Outcomes as for a rename. The group keeps 2 to 31 participants besides the line; added
/// numbers must be reachable over iMessage and not opted out.
#[utoipa::path(
    post,
    path = "/groups/{id}/participants",
    tag = "groups",
    security(("api_key" = ["messaging_send"])),
    params(("id" = String, Path, description = "The group's id (`conv_…`)"), IdempotencyKey),
    request_body = ChangeParticipants,
    responses(
        (status = 200, description = "The line changed the participants (or a replay)", body = schemas::GroupChanged),
        (status = 202, description = "No answer from the line in time: `change.status` is `unknown`", body = schemas::GroupChanged),
        (status = 400, description = "A number already in the group, not in it, the line's own, or a group left with fewer than 2 or more than 31 (`invalid_request`); `participants_not_reachable`", body = schemas::Error),
        (status = 409, description = "`recipient_opted_out`, `group_not_created`, `group_chats_unsupported`, `idempotency_key_reused` or `idempotency_key_in_progress`", body = schemas::Error),
        (status = 502, description = "The line refused the change (`line_rejected`)", body = schemas::Error),
        (status = 503, description = "The line could not be reached (`line_unavailable`)", body = schemas::Error),
    ),
)]
async fn change_participants(
    State(state): State<Services>,
    caller: Principal,
    Path(id): Path<String>,
    headers: HeaderMap,
    ApiJson(raw): ApiJson<Value>,
) -> ApiResult<Response> {
    caller.require(Scope::Send)?;
    let request: ChangeParticipants = from_ref(&raw)?;
    let country = request.default_country.as_deref();
    let add = change_list("add", request.add, country)?;
    let remove = change_list("remove", request.remove, country)?;
    if add.is_empty() && remove.is_empty() {
        return Err(ApiError::invalid("add", "give at least one number to add or remove"));
    }
    let key =
        idempotency(header_key(&headers)?.as_deref(), request.idempotency_key.as_deref(), CHANGES_PATH, String::new)?;
    let input = ChangeInput { name: None, add, remove, leave: false };
    Ok(respond_change(groups::change(&state.sender, &caller, &id, input, key).await?))
}

/// `POST /groups/{id}/leave` (the body is optional). Leaving cannot be undone, so a body with
/// any field but `idempotency_key` is refused rather than ignored.
#[derive(Deserialize, Default, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
struct LeaveGroup {
    /// The same as the `Idempotency-Key` header.
    #[schema(min_length = 1, max_length = 255)]
    idempotency_key: Option<String>,
}

/// Make the line leave a group.
///
/// Outcomes as for a rename. Once applied the group is `left`: nothing more can be sent to it
/// or changed (`409 group_left`); its messages stay readable.
#[utoipa::path(
    post,
    path = "/groups/{id}/leave",
    tag = "groups",
    security(("api_key" = ["messaging_send"])),
    params(("id" = String, Path, description = "The group's id (`conv_…`)"), IdempotencyKey),
    request_body(content = LeaveGroup, description = "Optional"),
    responses(
        (status = 200, description = "The line left the group (or a replay)", body = schemas::GroupChanged),
        (status = 202, description = "No answer from the line in time: `change.status` is `unknown`", body = schemas::GroupChanged),
        (status = 409, description = "`group_left`, `group_not_created`, `group_chats_unsupported`, `idempotency_key_reused` or `idempotency_key_in_progress`", body = schemas::Error),
        (status = 502, description = "The line refused (`line_rejected`)", body = schemas::Error),
        (status = 503, description = "The line could not be reached (`line_unavailable`)", body = schemas::Error),
    ),
)]
async fn leave_group(
    State(state): State<Services>,
    caller: Principal,
    Path(id): Path<String>,
    headers: HeaderMap,
    body: Option<ApiJson<Value>>,
) -> ApiResult<Response> {
    caller.require(Scope::Send)?;
    let raw = body.map(|ApiJson(raw)| raw).unwrap_or_else(|| serde_json::json!({}));
    let request: LeaveGroup = from_ref(&raw)?;
    let key =
        idempotency(header_key(&headers)?.as_deref(), request.idempotency_key.as_deref(), CHANGES_PATH, String::new)?;
    let input = ChangeInput { leave: true, ..ChangeInput::default() };
    Ok(respond_change(groups::change(&state.sender, &caller, &id, input, key).await?))
}
