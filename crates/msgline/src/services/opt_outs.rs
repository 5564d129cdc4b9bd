//! Opt-outs and the organisation's settings: clearing an opt-out, and the automatic replies to
//! STOP, START and HELP with the default SMS fallback, and the event feed.

use serde::Deserialize;
use serde_json::Value;

use crate::{
    caller::Principal,
    db::{self, opt_outs::OptOut, orgs::Replies},
    domain::{id::OptOutId, opt_out::REPLY_MAX_CHARS, scope::Scope},
    error::{ApiError, ApiResult},
    services::Services,
};

/// Clears an opt-out of the caller's organisation (and line, for a line-bound key), with
/// `messaging.contact.opted_in`; the console clears through this too.
pub async fn clear(state: &Services, caller: &Principal, id: &OptOutId) -> ApiResult<OptOut> {
    caller.require(Scope::Contacts)?;
    db::opt_outs::clear(&state.sender.db, &caller.org_id, id, caller.bound_line())
        .await?
        .ok_or_else(|| ApiError::not_found("opt_out"))
}

/// `PATCH /settings`: an omitted reply is left as it is, `""` goes back to the default; at least
/// one must be given (so that a misspelt name is an error, not a change of nothing).
#[derive(Deserialize, utoipa::ToSchema)]
#[schema(example = json!({"opt_out_reply": "Acme: you will get no more texts. Reply START to come back."}))]
pub struct UpdateSettings {
    /// Sent when a number texts STOP (or a synonym).
    #[schema(max_length = 306)]
    pub opt_out_reply: Option<String>,
    /// Sent when an opted-out number texts START (or a synonym).
    #[schema(max_length = 306)]
    pub opt_in_reply: Option<String>,
    /// Sent when a number texts HELP or INFO.
    #[schema(max_length = 306)]
    pub help_reply: Option<String>,
    /// The SMS fallback of sends that do not say (`fallback` on `POST /messages`): `sms` or
    /// `none` (the default).
    #[schema(value_type = Option<String>, example = "sms")]
    pub fallback: Option<Value>,
    /// Whether the organisation's events are kept for `GET /feed` and `GET /feed/stream`
    /// (`false`, the default: only webhooks get them).
    #[schema(value_type = Option<bool>, example = true)]
    pub event_feed: Option<Value>,
}

/// Sets the organisation's automatic replies with the API's rules; the console saves them
/// through this too.
pub async fn update_replies(state: &Services, caller: &Principal, body: UpdateSettings) -> ApiResult<Replies> {
    caller.require(Scope::Contacts)?;
    // The replies are the organisation's, on every line: a key bound to one line may not change
    // what the others answer.
    if caller.bound_line().is_some() {
        return Err(ApiError::conflict(
            "line_mismatch",
            "this key is bound to one line; the automatic replies apply to every line of the organisation",
        ));
    }
    let reply = |field: &str, value: Option<String>| -> ApiResult<Option<String>> {
        let Some(text) = value.map(|t| t.trim().to_string()) else { return Ok(None) };
        if text.chars().count() > REPLY_MAX_CHARS {
            return Err(ApiError::invalid(field, format!("a reply is at most {REPLY_MAX_CHARS} characters")));
        }
        Ok(Some(text))
    };
    if body.opt_out_reply.is_none()
        && body.opt_in_reply.is_none()
        && body.help_reply.is_none()
        && body.fallback.is_none()
        && body.event_feed.is_none()
    {
        return Err(ApiError::bad_request(
            "give at least one of opt_out_reply, opt_in_reply, help_reply, fallback and event_feed",
        ));
    }
    let event_feed = match body.event_feed {
        None => None,
        Some(Value::Bool(on)) => Some(on),
        Some(_) => return Err(ApiError::invalid("event_feed", "event_feed is true or false")),
    };
    let default_fallback = match body.fallback {
        None => None,
        Some(Value::String(text)) if text == "sms" || text == "none" => Some(text),
        Some(_) => return Err(ApiError::invalid("fallback", "fallback is \"sms\" or \"none\"")),
    };
    let changes = Replies {
        org_name: String::new(),
        opt_out: reply("opt_out_reply", body.opt_out_reply)?,
        opt_in: reply("opt_in_reply", body.opt_in_reply)?,
        help: reply("help_reply", body.help_reply)?,
        default_fallback,
        event_feed,
    };
    let saved = db::orgs::set_replies(&state.sender.db, &caller.org_id, &changes).await?;
    state.sender.org_defaults.forget(&caller.org_id);
    Ok(saved)
}
