//! Lines as the caller sees them and runs them: the lines it may send from with their policy in
//! force, health, queue and usage; a dedicated line's policy; pause and resume. Reading needs
//! `messaging_read`; changing needs `messaging_lines`. A shared line is the platform operator's:
//! its policy and health are set with `msgline admin line update`, never through an organisation's
//! key.

use serde_json::Value;

use crate::{
    caller::Principal,
    clock,
    db::{self, Page, Paged, lines::Line},
    domain::{id::LineId, line_policy, scope::Scope},
    error::{ApiError, ApiResult},
    lines::{health, pacing::Outlook},
    services::Services,
};

/// A line with what the caller sees of its sending now.
pub struct LineView {
    pub line: Line,
    pub outlook: Outlook,
    /// A dial-in line's phone: when it last called msgline (`None`: never, or not dial-in).
    pub device_seen_at: Option<i64>,
}

pub async fn view_of(state: &Services, line: Line) -> ApiResult<LineView> {
    let outlook = crate::lines::pacing::outlook(&state.sender.db, &line, clock::now_ms()).await?;
    let device_seen_at = match line.bridge_settings.dial_in {
        true => db::dial_in::get(&state.sender.db, &line.id).await?.and_then(|d| d.device_id.and(d.last_seen_at)),
        false => None,
    };
    Ok(LineView { line, outlook, device_seen_at })
}

/// The lines the caller may send from (a line-bound key: its own line).
pub async fn list(state: &Services, caller: &Principal, page: &Page) -> ApiResult<Paged<LineView>> {
    caller.require(Scope::Read)?;
    let paged = match caller.bound_line() {
        Some(bound) => {
            let rows = db::lines::get_for_org(&state.sender.db, &caller.org_id, bound).await?.into_iter().collect();
            Paged { rows, next: None }
        }
        None => db::lines::list_for_org(&state.sender.db, &caller.org_id, page).await?,
    };
    let mut rows = Vec::with_capacity(paged.rows.len());
    for line in paged.rows {
        rows.push(view_of(state, line).await?);
    }
    Ok(Paged { rows, next: paged.next })
}

/// A line the caller may send from.
async fn find(state: &Services, caller: &Principal, id: &LineId) -> ApiResult<Line> {
    if !caller.may_use_line(id) {
        return Err(ApiError::not_found("line"));
    }
    db::lines::get_for_org(&state.sender.db, &caller.org_id, id).await?.ok_or_else(|| ApiError::not_found("line"))
}

pub async fn get(state: &Services, caller: &Principal, id: &LineId) -> ApiResult<LineView> {
    caller.require(Scope::Read)?;
    let line = find(state, caller, id).await?;
    view_of(state, line).await
}

/// A line the caller may change: one of its organisation's own (dedicated) lines.
async fn own(state: &Services, caller: &Principal, id: &LineId) -> ApiResult<Line> {
    caller.require(Scope::Lines)?;
    let line = find(state, caller, id).await?;
    if line.org_id.is_none() {
        return Err(ApiError::conflict(
            "line_is_shared",
            "a shared line is the platform operator's: its policy and health are set with msgline admin line update",
        ));
    }
    Ok(line)
}

/// After a line's policy or health changed: this instance reads it again, and its pacer looks.
fn changed(state: &Services, line_id: &str) {
    state.sender.lines.forget(line_id);
    state.sender.dispatch.wake_pacer(line_id);
}

/// `PATCH /lines/{id}` `{"policy": {...}}`: each field given sets (a number) or removes (`null`)
/// that limit; a field left out keeps its value.
pub async fn update(state: &Services, caller: &Principal, id: &LineId, body: &Value) -> ApiResult<LineView> {
    let line = own(state, caller, id).await?;
    let Some(policy) = body.get("policy") else {
        return Err(ApiError::invalid("policy", "give the policy to change, as {\"policy\": {...}}"));
    };
    let overrides = line_policy::patch(&line.policy, policy).map_err(|(field, why)| ApiError::invalid(field, why))?;
    db::lines::set_policy(&state.sender.db, &line.id, &overrides).await?;
    changed(state, &line.id);
    get(state, caller, id).await
}

/// `POST /lines/{id}/pause`: the line sends nothing until it is resumed; its queue waits (and
/// each message's validity runs).
pub async fn pause(state: &Services, caller: &Principal, id: &LineId) -> ApiResult<LineView> {
    let line = own(state, caller, id).await?;
    health::pause(&state.sender.db, &line.id).await?;
    changed(state, &line.id);
    get(state, caller, id).await
}

/// `POST /lines/{id}/resume`: the line sends again, whatever stopped it (a pause, a flag, an
/// offline spell: a line still offline is taken offline again by its next failed probe).
pub async fn resume(state: &Services, caller: &Principal, id: &LineId) -> ApiResult<LineView> {
    let line = own(state, caller, id).await?;
    health::resume(&state.sender.db, &line.id).await?;
    changed(state, &line.id);
    get(state, caller, id).await
}
