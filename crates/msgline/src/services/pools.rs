//! Sender pools: lines of one organisation a send names together (`pool_id`), so that a sender
//! grows by adding numbers; every route needs `messaging_lines`. A pool holds the organisation's
//! own (dedicated) lines, each once.

use serde::Deserialize;
use serde_json::Value;

use crate::{
    caller::Principal,
    db::{self, Page, Paged, pools::Pool},
    domain::{id::PoolId, scope::Scope},
    error::{ApiError, ApiResult},
    services::Services,
};

/// The default `failover_after_seconds`: five minutes.
pub const FAILOVER_DEFAULT_SECONDS: i64 = 300;
const FAILOVER_SECONDS: std::ops::RangeInclusive<i64> = 5..=259_200;
/// The most lines in one pool.
const MAX_LINES: usize = 50;

/// `POST /pools` and `PATCH /pools/{id}` (on a change, a field left out keeps its value).
#[derive(Debug, Default, Deserialize, utoipa::ToSchema)]
#[schema(example = json!({"name": "Support numbers", "line_ids": ["line_01...", "line_02..."], "failover_after_seconds": 300}))]
pub struct PoolFields {
    /// 1 to 100 characters.
    #[schema(max_length = 100)]
    pub name: Option<String>,
    /// The organisation's own lines, 1 to 50, each once.
    #[schema(max_items = 50)]
    pub line_ids: Option<Vec<String>>,
    /// How long a line of the pool may be paused, flagged or offline before the messages waiting
    /// on it move to another of the pool's lines: 5 to 259,200 seconds, default 300.
    #[schema(value_type = Option<i64>, minimum = 5, maximum = 259200)]
    pub failover_after_seconds: Option<Value>,
}

fn name_of(name: Option<String>) -> ApiResult<Option<String>> {
    match name.map(|n| n.trim().to_string()) {
        None => Ok(None),
        Some(name) if name.is_empty() || name.chars().count() > 100 => {
            Err(ApiError::invalid("name", "name is 1 to 100 characters"))
        }
        Some(name) => Ok(Some(name)),
    }
}

fn failover_of(value: Option<Value>) -> ApiResult<Option<i64>> {
    match value {
        None | Some(Value::Null) => Ok(None),
        Some(value) => match value.as_i64().filter(|s| FAILOVER_SECONDS.contains(s)) {
            Some(seconds) => Ok(Some(seconds)),
            None => Err(ApiError::invalid(
                "failover_after_seconds",
                "failover_after_seconds is a whole number from 5 to 259200",
            )),
        },
    }
}

/// The lines a pool is to hold: the organisation's own lines, at least one, each once.
async fn lines_of(
    state: &Services,
    caller: &Principal,
    line_ids: Option<Vec<String>>,
) -> ApiResult<Option<Vec<String>>> {
    let Some(line_ids) = line_ids else { return Ok(None) };
    if line_ids.is_empty() || line_ids.len() > MAX_LINES {
        return Err(ApiError::invalid("line_ids", format!("a pool holds 1 to {MAX_LINES} lines")));
    }
    for (i, id) in line_ids.iter().enumerate() {
        let field = format!("line_ids[{i}]");
        if line_ids[..i].contains(id) {
            return Err(ApiError::invalid(field, "a line is in a pool once"));
        }
        let line = db::lines::get_for_org(&state.sender.db, &caller.org_id, id).await?;
        match line {
            None => return Err(ApiError::not_found("line").with("field", field)),
            Some(line) if line.org_id.is_none() => {
                return Err(ApiError::invalid(field, "a pool holds the organisation's own lines, not a shared line"));
            }
            Some(_) => {}
        }
    }
    Ok(Some(line_ids))
}

fn allowed(caller: &Principal) -> ApiResult<()> {
    caller.require(Scope::Lines)?;
    match caller.bound_line() {
        Some(_) => Err(ApiError::conflict("line_mismatch", "a key bound to one line cannot manage pools of lines")),
        None => Ok(()),
    }
}

pub async fn create(state: &Services, caller: &Principal, fields: PoolFields) -> ApiResult<Pool> {
    allowed(caller)?;
    let name = name_of(fields.name)?.ok_or_else(|| ApiError::invalid("name", "name is required"))?;
    let line_ids = lines_of(state, caller, fields.line_ids)
        .await?
        .ok_or_else(|| ApiError::invalid("line_ids", "line_ids is required"))?;
    let failover = failover_of(fields.failover_after_seconds)?.unwrap_or(FAILOVER_DEFAULT_SECONDS);
    Ok(db::pools::create(&state.sender.db, &caller.org_id, &name, &line_ids, failover).await?)
}

pub async fn list(state: &Services, caller: &Principal, page: &Page) -> ApiResult<Paged<Pool>> {
    allowed(caller)?;
    Ok(db::pools::list(&state.sender.db, &caller.org_id, page).await?)
}

pub async fn get(state: &Services, caller: &Principal, id: &PoolId) -> ApiResult<Pool> {
    allowed(caller)?;
    db::pools::get(&state.sender.db, &caller.org_id, id).await?.ok_or_else(|| ApiError::not_found("pool"))
}

pub async fn update(state: &Services, caller: &Principal, id: &PoolId, fields: PoolFields) -> ApiResult<Pool> {
    allowed(caller)?;
    let name = name_of(fields.name)?;
    let failover = failover_of(fields.failover_after_seconds)?;
    let line_ids = lines_of(state, caller, fields.line_ids).await?;
    db::pools::update(&state.sender.db, &caller.org_id, id, name.as_deref(), line_ids.as_deref(), failover)
        .await?
        .ok_or_else(|| ApiError::not_found("pool"))
}

/// Deletes a pool; what was sent through it stays on the line it waits on.
pub async fn delete(state: &Services, caller: &Principal, id: &PoolId) -> ApiResult<()> {
    allowed(caller)?;
    match db::pools::delete(&state.sender.db, &caller.org_id, id).await? {
        true => Ok(()),
        false => Err(ApiError::not_found("pool")),
    }
}
