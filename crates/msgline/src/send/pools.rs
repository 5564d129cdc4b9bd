//! Which line of a sender pool a send goes out on: the line of the contact's latest conversation
//! in the pool (sticky: a contact is always answered from the same number), else, for a new
//! contact, the pool's line with the most of today's budget left, active lines first.

use std::cmp::Reverse;

use crate::{
    caller::Principal,
    clock,
    db::{self, lines::Line, pools::Pool},
    domain::{id::PoolId, lifecycle::Health},
    error::{ApiError, ApiResult},
    send::Sender,
};

/// How a pool line ranks for a new contact: active first, then the most left of today's budget,
/// then the fewest sent today, then the pool's order.
type Rank = (bool, u64, Reverse<u64>, Reverse<usize>);

/// The pool a send names: one of the caller's organisation. A key bound to one line sends from
/// that line and names no pool.
pub async fn find(state: &Sender, principal: &Principal, id: &PoolId) -> ApiResult<Pool> {
    if principal.bound_line().is_some() {
        return Err(ApiError::invalid("pool_id", "a key bound to one line sends from that line, not from a pool"));
    }
    db::pools::get(&state.db, &principal.org_id, id)
        .await?
        .ok_or_else(|| ApiError::not_found("pool").with("field", "pool_id"))
}

/// The pool's line for `phone` (`None`: a number not known yet, as for a contact without one).
pub async fn line_for(state: &Sender, pool: &Pool, phone: Option<&str>) -> ApiResult<Line> {
    if let Some(phone) = phone
        && let Some(line_id) = db::pools::sticky_line(&state.db, &pool.org_id, pool, phone).await?
        && let Some(line) = state.lines.get(&line_id).await?
    {
        return Ok(line);
    }
    let now = clock::now_ms();
    let mut best: Option<(Line, Rank)> = None;
    for (position, line_id) in pool.line_ids.iter().enumerate() {
        let Some(line) = state.lines.get(line_id).await?.filter(|l| l.usable_by(&pool.org_id)) else { continue };
        let day = crate::lines::pacing::usage(&state.db, &line.id, now).await?.day;
        let left = line.policy_in_force().max_per_day.map_or(u64::MAX, |limit| limit.saturating_sub(day));
        let rank = (line.health == Health::Active, left, Reverse(day), Reverse(position));
        if best.as_ref().is_none_or(|(_, best_rank)| rank > *best_rank) {
            best = Some((line, rank));
        }
    }
    best.map(|(line, _)| line)
        .ok_or_else(|| ApiError::invalid("pool_id", "the pool has no line this organisation may use"))
}
