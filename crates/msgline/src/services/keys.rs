//! API keys: who may create, rotate and revoke which. A caller manages only keys it could have
//! made itself: scopes within its own, and, for a line-bound caller, keys bound to the same line.
//! Other keys are invisible to it (404).

use serde::Deserialize;

use crate::{
    caller::Principal,
    db::{
        self,
        keys::{KeyRecord, NewKey},
    },
    domain::{
        id::KeyId,
        scope::{Scope, Scopes},
    },
    error::{ApiError, ApiResult},
    fields::bounded,
    services::Services,
};

/// Whether `caller` may see and manage `key`; `Err` names a scope the caller lacks.
fn may_manage(caller: &Principal, key: &KeyRecord) -> ApiResult<bool> {
    if !caller.sees_binding(key.line_id.as_deref()) {
        return Ok(false);
    }
    if let Some(scope) = key.scopes.iter().find(|s| !caller.scopes.contains(*s)) {
        return Err(ApiError::missing_scope(scope));
    }
    Ok(true)
}

/// `POST /keys`.
#[derive(Deserialize, utoipa::ToSchema)]
#[schema(example = json!({"name": "reporting", "scopes": ["messaging_read"]}))]
pub struct CreateKey {
    /// Up to 100 characters.
    #[schema(max_length = 100)]
    pub name: Option<String>,
    /// At least one, each within the caller's own: `messaging_send`, `messaging_read`,
    /// `messaging_contacts`, `messaging_webhooks`, `messaging_keys`, `messaging_agents`.
    pub scopes: Vec<String>,
    /// Bind the key to one line (a line-bound caller's keys are bound to its line).
    pub line_id: Option<String>,
}

/// Creates a key with the API's rules (scopes within the caller's, a line of its organisation);
/// the secret, once. The console creates keys through this too.
pub async fn create(state: &Services, caller: &Principal, body: CreateKey) -> ApiResult<(KeyRecord, String)> {
    caller.require(Scope::Keys)?;
    let name = bounded("name", body.name, 100)?.unwrap_or_else(|| "unnamed".into());
    let scopes = Scopes::parse(body.scopes.iter().map(String::as_str))
        .map_err(|bad| ApiError::invalid("scopes", format!("unknown scope {bad:?}")))?;
    if scopes.is_empty() {
        return Err(ApiError::invalid("scopes", "a key needs at least one scope"));
    }
    if let Some(scope) = scopes.iter().find(|s| !caller.scopes.contains(*s)) {
        return Err(ApiError::missing_scope(scope));
    }
    let line_id = caller.line_for(body.line_id)?;
    if let Some(line_id) = &line_id
        && db::lines::get_for_org(&state.sender.db, &caller.org_id, line_id).await?.is_none()
    {
        return Err(ApiError::not_found("line").with("field", "line_id"));
    }
    Ok(db::keys::create(
        &state.sender.db,
        NewKey { org_id: &caller.org_id, name: &name, scopes: &scopes, line_id: line_id.as_deref() },
    )
    .await?)
}

/// Rotates a key the caller may manage: the new key and its secret, and when the old one stops.
pub async fn rotate(
    state: &Services,
    caller: &Principal,
    id: &KeyId,
    grace_seconds: i64,
) -> ApiResult<(KeyRecord, String, i64)> {
    caller.require(Scope::Keys)?;
    if !(0..=30 * 86_400).contains(&grace_seconds) {
        return Err(ApiError::invalid("grace_seconds", "grace_seconds must be from 0 to 2592000 (30 days)"));
    }
    let key =
        db::keys::get_active(&state.sender.db, &caller.org_id, id).await?.ok_or_else(|| ApiError::not_found("key"))?;
    if !may_manage(caller, &key)? {
        return Err(ApiError::not_found("key"));
    }
    let rotated = db::keys::rotate(&state.sender.db, &caller.org_id, id, grace_seconds * 1000)
        .await?
        .ok_or_else(|| ApiError::not_found("key"))?;
    state.auth.changed(&state.sender.db, id).await;
    Ok(rotated)
}

/// Revokes a key the caller may manage, at once, on every instance.
pub async fn revoke(state: &Services, caller: &Principal, id: &KeyId) -> ApiResult<KeyRecord> {
    caller.require(Scope::Keys)?;
    let key =
        db::keys::get_active(&state.sender.db, &caller.org_id, id).await?.ok_or_else(|| ApiError::not_found("key"))?;
    if !may_manage(caller, &key)? {
        return Err(ApiError::not_found("key"));
    }
    let revoked =
        db::keys::revoke(&state.sender.db, &caller.org_id, id).await?.ok_or_else(|| ApiError::not_found("key"))?;
    state.auth.changed(&state.sender.db, id).await;
    Ok(revoked)
}
