//! The delivery outbox, kept on the message row itself: `outbox_state` is `pending` (to send,
//! from `available_at`), `claimed` (a dispatcher is calling the line until `claimed_until`),
//! `unknown` (to ask the line about from `available_at`), or NULL once the message is settled
//! with its line. A queued outbound message is written pending by its insert
//! ([`super::messages::stage_insert`]); jobs are claimed, committed, then worked on outside any
//! transaction, so a crash never loses a send and never hides one that may have happened.
//!
//! On PostgreSQL a send that calls its line itself is claimed by a row of `message_claims`
//! instead (its message stays without an outbox state), so that recording the line's answer
//! changes no indexed column of `messages`; whatever ends or turns a job deletes that row too,
//! and [`claim_unsettled`] takes one whose time ran out as `unknown`.

use std::sync::LazyLock;

use sqlx::AnyConnection;

use super::{Backend, Db};

/// The state a queued outbound message is inserted in.
pub const PENDING: &str = "pending";
/// The state of a queued message that waits for its line's pacer (its line has a budget, or is
/// paused, flagged or offline): the claim of pending jobs does not see it.
pub const PACED: &str = "paced";
/// The state of one inserted already claimed by its request (see
/// [`super::messages::stage_insert_at`]).
pub const CLAIMED: &str = "claimed";

/// The claim a request takes on the message it writes when it calls the line itself: until
/// `until`, kept on the row (SQLite) or apart in `message_claims` (PostgreSQL; see the module's
/// note).
#[derive(Debug, Clone, Copy)]
pub struct Claim {
    pub until: i64,
    pub apart: bool,
}

impl Claim {
    pub fn new(backend: Backend, until: i64) -> Claim {
        Claim { until, apart: backend == Backend::Postgres }
    }
}

#[derive(Debug, Clone)]
pub struct Job {
    pub message_id: String,
    pub line_id: String,
    pub attempts: i64,
}

const RETRY: &str =
    "UPDATE messages SET outbox_state = 'pending', available_at = $1, claimed_until = NULL WHERE id = $2";
const UNKNOWN: &str =
    "UPDATE messages SET outbox_state = 'unknown', available_at = $1, claimed_until = NULL WHERE id = $2";
/// The assignments that end a message's job (also made by a status move that settles it).
pub const SETTLED: &str = "outbox_state = NULL, available_at = NULL, claimed_until = NULL";
/// The end of a claim kept in `message_claims` (PostgreSQL); nothing where there is none.
const UNCLAIM: &str = "DELETE FROM message_claims WHERE message_id = $1";

/// Stages [`UNCLAIM`] on PostgreSQL, where a send that called its line itself holds one.
fn stage_unclaim(batch: &mut super::Batch, backend: Backend, message_id: &str) {
    if backend == Backend::Postgres {
        batch.push(UNCLAIM, vec![message_id.into()]).mark_moves_messages();
    }
}

/// Stages the claim of a message whose request calls its line itself (PostgreSQL; see the
/// module's note), until `claimed_until`.
pub fn stage_claim(batch: &mut super::Batch, message_id: &str, claimed_until: i64) {
    batch.push(
        "INSERT INTO message_claims (message_id, claimed_until) VALUES ($1, $2)",
        vec![message_id.into(), claimed_until.into()],
    );
}

/// A no-op for a message settled already (a second callback about it writes no row version).
static COMPLETE: LazyLock<String> =
    LazyLock::new(|| format!("UPDATE messages SET {SETTLED} WHERE id = $1 AND outbox_state IS NOT NULL"));

/// Stages a job's return to `pending` (due at `available_at`) into a batch.
pub fn stage_retry_at(batch: &mut super::Batch, backend: Backend, message_id: &str, available_at: i64) {
    batch.push(RETRY, vec![available_at.into(), message_id.into()]).mark_moves_messages();
    stage_unclaim(batch, backend, message_id);
}

/// Stages a job's move to `unknown` (to be asked about from `available_at`) into a batch.
pub fn stage_mark_unknown(batch: &mut super::Batch, backend: Backend, message_id: &str, available_at: i64) {
    batch.push(UNKNOWN, vec![available_at.into(), message_id.into()]).mark_moves_messages();
    stage_unclaim(batch, backend, message_id);
}

/// Stages the end of a job into a batch.
pub fn stage_complete(batch: &mut super::Batch, backend: Backend, message_id: &str) {
    batch.push(COMPLETE.as_str(), vec![message_id.into()]).mark_moves_messages();
    stage_unclaim(batch, backend, message_id);
}

fn skip_locked(db: &Db) -> &'static str {
    match db.backend() {
        Backend::Postgres => " FOR UPDATE SKIP LOCKED",
        Backend::Sqlite => "",
    }
}

const RETURNING: &str = "RETURNING id AS message_id, line_id, outbox_attempts AS attempts";

/// Claims up to `limit` pending jobs that are due, for `lease_ms`. The claim is committed
/// before the line is called.
pub async fn claim_pending(db: &Db, now: i64, lease_ms: i64, limit: i64) -> sqlx::Result<Vec<Job>> {
    let sql = format!(
        "UPDATE messages SET outbox_state = 'claimed', claimed_until = $1, outbox_attempts = outbox_attempts + 1 \
         WHERE id IN (SELECT id FROM messages WHERE outbox_state = 'pending' AND available_at <= $2 \
         ORDER BY available_at LIMIT $3{}) {RETURNING}",
        skip_locked(db)
    );
    super::write_returning(db, sql, vec![(now + lease_ms).into(), now.into(), limit.into()], job_from_row).await
}

fn job_from_row(row: &dyn super::Columns) -> sqlx::Result<Job> {
    Ok(Job { message_id: row.text("message_id")?, line_id: row.text("line_id")?, attempts: row.int("attempts")? })
}

/// Claims up to `limit` jobs whose outcome must be asked of the line: those marked unknown and
/// due, and those whose claim ran out (the instance that held it stopped mid-call). They are
/// pushed back to `next_at` so that one asker works on each at a time.
pub async fn claim_unsettled(db: &Db, now: i64, next_at: i64, limit: i64) -> sqlx::Result<Vec<Job>> {
    if db.backend() == Backend::Postgres {
        // A claim kept apart whose time ran out: its message, unless the line has reported it
        // since, becomes a job of the row's own, due now. The claim is deleted in the same
        // statement (a request that records its line's answer meanwhile finds it gone, and its
        // move still applies).
        let expired = "WITH gone AS (DELETE FROM message_claims WHERE message_id IN (SELECT message_id FROM \
             message_claims WHERE claimed_until < $1 ORDER BY claimed_until LIMIT $2 FOR UPDATE SKIP LOCKED) \
             RETURNING message_id) UPDATE messages SET outbox_state = 'unknown', available_at = $1, claimed_until = NULL \
             WHERE id IN (SELECT message_id FROM gone) AND status IN ('queued', 'unknown')";
        sqlx::query(expired).bind(now).bind(limit).execute(db.writer()).await?;
    }
    let sql = format!(
        "UPDATE messages SET outbox_state = 'unknown', available_at = $1, claimed_until = NULL \
         WHERE id IN (SELECT id FROM messages WHERE (outbox_state = 'unknown' AND available_at <= $2) \
         OR (outbox_state = 'claimed' AND claimed_until < $2) ORDER BY available_at LIMIT $3{}) {RETURNING}",
        skip_locked(db)
    );
    super::write_returning(db, sql, vec![next_at.into(), now.into(), limit.into()], job_from_row).await
}

/// Ends a claim kept in `message_claims`, if the message has one (none on SQLite).
pub async fn unclaim(conn: &mut AnyConnection, message_id: &str) -> sqlx::Result<()> {
    sqlx::query(UNCLAIM).bind(message_id).execute(&mut *conn).await?;
    Ok(())
}

/// Back to `pending`, due at `available_at` (the line could not have received it).
pub async fn retry_at(conn: &mut AnyConnection, message_id: &str, available_at: i64) -> sqlx::Result<()> {
    sqlx::query(RETRY).bind(available_at).bind(message_id).execute(&mut *conn).await?;
    unclaim(conn, message_id).await
}

/// To be asked of the line from `available_at` on.
pub async fn mark_unknown(conn: &mut AnyConnection, message_id: &str, available_at: i64) -> sqlx::Result<()> {
    sqlx::query(UNKNOWN).bind(available_at).bind(message_id).execute(&mut *conn).await?;
    unclaim(conn, message_id).await
}

/// Settled with the line: nothing more to do.
pub async fn complete(conn: &mut AnyConnection, message_id: &str) -> sqlx::Result<()> {
    sqlx::query(COMPLETE.as_str()).bind(message_id).execute(&mut *conn).await?;
    unclaim(conn, message_id).await
}
