//! One pacing step of one line: in a single transaction that holds the line's row, end the
//! waits whose validity ran out, read the line as it stands (its health and policy, whoever
//! changed them), count its budget, and hand the dispatcher the waiting messages that fit, in
//! order and fair between organisations. Replies to numbers the line knows still go while its
//! new-contact budget is spent. The step says when it is worth looking at the line again.

use std::collections::HashMap;

use super::budget;
use crate::{
    clock,
    db::{
        Db,
        line_sends::{self, MINUTE_MS, Waiting},
        lines::Line,
        pools,
    },
    domain::lifecycle::Health,
};

/// The most messages one step hands over, and the most waiting messages it looks at to find
/// them (replies to known numbers behind new contacts whose budget is spent).
const HAND_OVER_AT_MOST: u64 = 200;
const LOOK_AT_MOST: i64 = 500;
/// A line with messages waiting is looked at again at least this often, whatever its budget
/// says (a policy changed on another instance, a pool's failover to decide).
pub const LOOK_AGAIN_MS: i64 = 60_000;

/// What a step did, and when to look at the line again (`None`: nothing waits on it).
#[derive(Debug, Default)]
pub struct Step {
    /// Messages claimed for the dispatcher, to call the line with now.
    pub handed: Vec<String>,
    /// Waits that ended with `expired`.
    pub expired: usize,
    /// Lines of a pool that waiting messages moved to (failover): their pacer is to look.
    pub moved_to: Vec<String>,
    pub next_at: Option<i64>,
}

fn earliest(a: Option<i64>, b: Option<i64>) -> Option<i64> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

/// Runs one step of the line `line_id` at `now`; a handed message's claim lasts `lease_ms`.
pub async fn step(db: &Db, line_id: &str, now: i64, lease_ms: i64) -> sqlx::Result<Step> {
    db.transaction(async |tx| {
        let Some(line) = line_sends::lock_line(tx, line_id).await? else { return Ok(Step::default()) };
        let expired = line_sends::expire(tx, line_id, now, LOOK_AT_MOST).await?;
        // When the first waiting message is due and the first validity ends (not how many wait:
        // a count reads them all, and a step runs at every send to a paced line).
        let (next_due, next_expiry) = line_sends::next_times(tx, line_id).await?;
        let Some(next_due) = next_due else { return Ok(Step { expired, ..Step::default() }) };
        // At the latest: the next validity to end, and a look a minute on.
        let bound = earliest(next_expiry, Some(now + LOOK_AGAIN_MS));
        let not_yet = |at: Option<i64>| earliest(at, bound);
        if line.health != Health::Active {
            let (moved_to, failover_at) = fail_over(tx, &line, now).await?;
            return Ok(Step { expired, moved_to, next_at: earliest(bound, failover_at), ..Step::default() });
        }
        if next_due > now {
            return Ok(Step { expired, next_at: not_yet(Some(next_due)), ..Step::default() });
        }
        let policy = line.policy_in_force();
        let month_start = clock::month_start_ms(now);
        let month_end = clock::month_start_ms(month_start + 32 * line_sends::DAY_MS);
        let (usage, last) = line_sends::usage(tx, line_id, now, month_start).await?;
        if let Some(until) = budget::gap_until(&policy, last.as_ref()).filter(|until| *until > now) {
            return Ok(Step { expired, next_at: not_yet(Some(until)), ..Step::default() });
        }
        let full = budget::full_windows(&policy, &usage, now, month_start, month_end);
        let mut opens = None;
        for window in full.iter().filter(|w| !w.new_only) {
            let at = line_sends::opens_at(tx, line_id, window.since, window.span, (window.count, window.limit), false);
            opens = opens.max(at.await?);
        }
        if opens.is_some() {
            return Ok(Step { expired, next_at: not_yet(opens), ..Step::default() });
        }
        let room = budget::room(&policy, &usage);
        let capacity = match policy.min_gap_ms.unwrap_or(0) + policy.jitter_ms.unwrap_or(0) {
            0 => room.sends.unwrap_or(HAND_OVER_AT_MOST).min(HAND_OVER_AT_MOST),
            _ => 1,
        };
        let mut new_room = room.new_contacts;
        let mut chosen: Vec<(Waiting, bool)> = Vec::new();
        let mut to_each: HashMap<String, u64> = HashMap::new();
        let (mut later, mut new_blocked) = (None, false);
        for waiting in line_sends::waiting(tx, line_id, now, LOOK_AT_MOST).await? {
            if chosen.len() as u64 >= capacity {
                break;
            }
            if let Some(limit) = policy.max_per_recipient_per_minute {
                let (count, oldest) = line_sends::recipient_minute(tx, line_id, &waiting.recipient, now).await?;
                let mine = to_each.get(&waiting.recipient).copied().unwrap_or(0);
                if count + mine >= limit {
                    later = earliest(later, Some(oldest.unwrap_or(now) + MINUTE_MS));
                    continue;
                }
            }
            let new =
                policy.counts_new_contacts() && !waiting.group && !line_sends::is_known(tx, line_id, &waiting).await?;
            if new {
                match new_room {
                    Some(0) => {
                        new_blocked = true;
                        continue;
                    }
                    Some(n) => new_room = Some(n - 1),
                    None => {}
                }
            }
            *to_each.entry(waiting.recipient.clone()).or_default() += 1;
            chosen.push((waiting, new));
        }
        if new_blocked {
            for window in full.iter().filter(|w| w.new_only) {
                let at =
                    line_sends::opens_at(tx, line_id, window.since, window.span, (window.count, window.limit), true);
                later = earliest(later, at.await?);
            }
        }
        let handed = line_sends::hand_over(tx, line_id, &chosen, now + lease_ms).await?;
        // After a hand-over the budget is counted afresh at once; a gap waits for the call's end.
        let next_at = if handed.is_empty() { not_yet(later) } else { Some(now) };
        Ok(Step { handed, expired, next_at, ..Step::default() })
    })
    .await
}

/// Moves the messages waiting on a stopped line that were sent through a pool, once the line has
/// been stopped longer than the pool's `failover_after_seconds`, to the first other line of the
/// pool that is active (and where the number has not opted out), with the contact's
/// conversation. Returns the lines that received messages, and when the next failover is due.
async fn fail_over(tx: &mut sqlx::AnyConnection, line: &Line, now: i64) -> sqlx::Result<(Vec<String>, Option<i64>)> {
    let since = line.health_since.unwrap_or(now);
    let mut pools: HashMap<String, Option<(Vec<String>, i64)>> = HashMap::new();
    let (mut moved_to, mut next) = (Vec::new(), None);
    for moving in pools::movable(tx, &line.id, LOOK_AT_MOST).await? {
        if !pools.contains_key(&moving.pool_id) {
            let found = pools::lines_of(tx, &moving.pool_id).await?;
            pools.insert(moving.pool_id.clone(), found);
        }
        let Some(Some((lines, failover_seconds))) = pools.get(&moving.pool_id) else { continue };
        let due = since + failover_seconds * 1_000;
        if due > now {
            next = earliest(next, Some(due));
            continue;
        }
        for target in lines.iter().filter(|l| **l != line.id) {
            if pools::may_move_to(tx, &moving.org_id, target, &moving.phone).await? {
                if pools::move_message(tx, &moving, target).await? && !moved_to.contains(target) {
                    moved_to.push(target.clone());
                }
                break;
            }
        }
    }
    Ok((moved_to, next))
}

/// What a line's view shows of its sending: the policy in force, its usage, how many wait and
/// when the next is expected to go (`None`: nothing waits, or the line is not active).
#[derive(Debug, Clone)]
pub struct Outlook {
    pub policy: crate::domain::line_policy::Policy,
    pub usage: line_sends::Usage,
    pub waiting: u64,
    pub next_send_at: Option<i64>,
}

/// The line's sends in its windows at `now` (a pool's choice of line needs no more than this).
pub async fn usage(db: &Db, line_id: &str, now: i64) -> sqlx::Result<line_sends::Usage> {
    let month_start = clock::month_start_ms(now);
    db.read(async |conn| line_sends::usage(conn, line_id, now, month_start).await.map(|(usage, _)| usage)).await
}

/// The line's outlook at `now`, read without holding the line.
pub async fn outlook(db: &Db, line: &Line, now: i64) -> sqlx::Result<Outlook> {
    let policy = line.policy_in_force();
    db.read(async |conn| {
        let month_start = clock::month_start_ms(now);
        let month_end = clock::month_start_ms(month_start + 32 * line_sends::DAY_MS);
        let (usage, last) = line_sends::usage(conn, &line.id, now, month_start).await?;
        let queue = line_sends::queue(conn, &line.id).await?;
        let next_send_at = match (queue.waiting, line.health) {
            (0, _) => None,
            (_, Health::Active) => {
                let mut at = queue.next_due.unwrap_or(now).max(now);
                if let Some(until) = budget::gap_until(&policy, last.as_ref()) {
                    at = at.max(until);
                }
                for window in budget::full_windows(&policy, &usage, now, month_start, month_end) {
                    let full = (window.count, window.limit);
                    if !window.new_only
                        && let Some(opens) =
                            line_sends::opens_at(conn, &line.id, window.since, window.span, full, false).await?
                    {
                        at = at.max(opens);
                    }
                }
                Some(at)
            }
            _ => None,
        };
        Ok(Outlook { policy, usage, waiting: queue.waiting, next_send_at })
    })
    .await
}
