//! Webhook deliveries: one row per event and endpoint, made by the fan-out from the `events`
//! table ([`super::webhook_fan_out`]); claimed (committed) before the endpoint is called, so a
//! crash mid-call leaves a claim that runs out and is taken again: at-least-once. Every call is
//! kept as an attempt.

use std::collections::{BTreeSet, HashMap};

use sqlx::{AnyConnection, Row, any::AnyRow};

use super::ListQuery;
use super::{Backend, Db, Page, Paged};

fn skip_locked(db: &Db) -> &'static str {
    match db.backend() {
        Backend::Postgres => " FOR UPDATE SKIP LOCKED",
        Backend::Sqlite => "",
    }
}

/// Whether any delivery is due (`$1` is now) or has a claim that ran out. Each half reads its
/// queue's index in the order of its key, for the reason given at
/// [`super::webhook_fan_out::ANY_UNFANNED`].
pub const ANY_DUE: &str = "SELECT id FROM (SELECT id FROM webhook_deliveries WHERE state = 'pending' \
     AND next_attempt_at <= $1 ORDER BY next_attempt_at LIMIT 1) due UNION ALL SELECT id FROM (SELECT id \
     FROM webhook_deliveries WHERE state = 'claimed' AND claimed_until < $1 ORDER BY claimed_until LIMIT 1) lapsed \
     LIMIT 1";

/// Whether any delivery is due or has a claim that ran out (a cheap read before a claim).
pub async fn any_due(db: &Db, now: i64) -> sqlx::Result<bool> {
    let row = sqlx::query(ANY_DUE).bind(now).fetch_optional(db.reader()).await?;
    Ok(row.is_some())
}

/// A delivery a worker holds, with the number of the attempt it is about to make.
#[derive(Debug, Clone)]
pub struct Claimed {
    pub id: String,
    pub org_id: String,
    pub webhook_id: String,
    pub event_id: String,
    pub attempt: i64,
}

/// Claims up to `limit` deliveries that are due, oldest first, and up to `limit` whose claim ran
/// out (the instance that held them stopped mid-call), for `lease_ms`. Each half reads the front
/// of an index that holds only its own state's rows (`webhook_deliveries_waiting` by due time,
/// `webhook_deliveries_posting` by the end of the claim), so a claim costs the same however long
/// the backlog and however many deliveries were settled before it.
/// The claim is committed before anything is posted.
pub async fn claim_due(db: &Db, now: i64, lease_ms: i64, limit: i64) -> sqlx::Result<Vec<Claimed>> {
    let sql = format!(
        "UPDATE webhook_deliveries SET state = 'claimed', claimed_until = $1, attempts = attempts + 1, updated_at = $2 \
         WHERE id IN (SELECT id FROM (SELECT id FROM webhook_deliveries WHERE state = 'pending' \
         AND next_attempt_at <= $2 ORDER BY next_attempt_at LIMIT $3{lock}) due UNION ALL \
         SELECT id FROM (SELECT id FROM webhook_deliveries WHERE state = 'claimed' AND claimed_until < $2 \
         ORDER BY claimed_until LIMIT $3{lock}) lapsed) RETURNING id, org_id, webhook_id, event_id, attempts",
        lock = skip_locked(db)
    );
    super::write_returning(db, sql, vec![(now + lease_ms).into(), now.into(), limit.into()], |row| {
        Ok(Claimed {
            id: row.text("id")?,
            org_id: row.text("org_id")?,
            webhook_id: row.text("webhook_id")?,
            event_id: row.text("event_id")?,
            attempt: row.int("attempts")?,
        })
    })
    .await
}

/// The deliveries not yet settled, waiting or being posted, with the time each was made: read
/// through the two queues' indexes (`state IN (...)` would match neither, and read the table).
pub const OPEN: &str = "SELECT created_at FROM webhook_deliveries WHERE state = 'pending' \
     UNION ALL SELECT created_at FROM webhook_deliveries WHERE state = 'claimed'";

/// An event as it is delivered.
#[derive(Debug, Clone)]
pub struct StoredEvent {
    pub id: String,
    pub kind: String,
    pub data: String,
    pub created_at: i64,
}

/// The events of a claim of deliveries, by id: one read for all of them.
pub async fn events(db: &Db, ids: impl IntoIterator<Item = &str>) -> sqlx::Result<HashMap<String, StoredEvent>> {
    let ids: BTreeSet<&str> = ids.into_iter().collect();
    if ids.is_empty() {
        return Ok(HashMap::new());
    }
    let sql = format!(
        "SELECT id, type, data, created_at FROM events WHERE id IN ({})",
        super::engine::batch::placeholders(ids.len())
    );
    let args = ids.iter().map(|id| (*id).into()).collect();
    let found = db
        .read_rows(sql, args, |row| {
            Ok(StoredEvent {
                id: row.text("id")?,
                kind: row.text("type")?,
                data: row.text("data")?,
                created_at: row.int("created_at")?,
            })
        })
        .await?;
    Ok(found.into_iter().map(|event| (event.id.clone(), event)).collect())
}

/// What became of a claimed delivery after an attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Settle {
    Delivered,
    RetryAt(i64),
    Failed,
}

impl Settle {
    /// The delivery's state and next attempt time after this.
    fn columns(self) -> (&'static str, Option<i64>) {
        match self {
            Settle::Delivered => ("delivered", None),
            Settle::RetryAt(at) => ("pending", Some(at)),
            Settle::Failed => ("failed", None),
        }
    }
}

/// The update that settles a claimed delivery (`$1` state, `$2` next attempt, `$3` status, `$4`
/// now, `$5` id, `$6` attempt), only while the claim is still this one.
const SETTLE: &str = "UPDATE webhook_deliveries SET state = $1, next_attempt_at = $2, claimed_until = NULL, \
     last_status = $3, updated_at = $4 WHERE id = $5 AND state = 'claimed' AND attempts = $6";

/// Moves a claimed delivery on after its attempt. Returns `false` when the claim is no longer
/// this worker's (the endpoint was deleted, or the claim ran out and was taken again).
pub async fn settle(
    conn: &mut AnyConnection,
    claimed: &Claimed,
    outcome: Settle,
    status: Option<u16>,
    now: i64,
) -> sqlx::Result<bool> {
    let (state, next) = outcome.columns();
    let updated = sqlx::query(SETTLE)
        .bind(state)
        .bind(next)
        .bind(status.map(i64::from))
        .bind(now)
        .bind(&claimed.id)
        .bind(claimed.attempt)
        .execute(&mut *conn)
        .await?
        .rows_affected();
    Ok(updated == 1)
}

/// An attempt, staged for a shared commit: the delivery is settled if the claim is still this
/// one, and the attempt is recorded only if it was (on SQLite by `changes()`, on PostgreSQL by
/// one statement whose update feeds the insert); the endpoint's failure streak is ended by a
/// delivery or noted by a failure ([`super::webhooks::note_failure`]). A failure staged here
/// must be one that cannot disable the endpoint. The endpoint's row is one many batches
/// update ([`super::Batch::mark_hot_row`]).
pub fn stage_attempt(
    batch: &mut super::Batch,
    backend: super::Backend,
    claimed: &Claimed,
    outcome: Settle,
    status: Option<u16>,
    attempt: &Attempt,
    streak_gap_ms: i64,
) {
    let (state, next) = outcome.columns();
    let settle_args: Vec<super::Arg> = vec![
        state.into(),
        next.into(),
        status.map(i64::from).into(),
        attempt.created_at.into(),
        (&claimed.id).into(),
        claimed.attempt.into(),
    ];
    let attempt_args: Vec<super::Arg> = vec![
        (&claimed.org_id).into(),
        (&claimed.id).into(),
        (&attempt.id).into(),
        (&attempt.webhook_id).into(),
        (&attempt.event_id).into(),
        (&attempt.event_type).into(),
        attempt.attempt.into(),
        attempt.status_code.into(),
        (attempt.succeeded as i64).into(),
        attempt.latency_ms.into(),
        attempt.response_body.clone().into(),
        attempt.error.clone().into(),
        attempt.next_attempt_at.into(),
        attempt.created_at.into(),
    ];
    batch.push_if_updated(
        backend,
        SETTLE,
        settle_args,
        &format!("INSERT INTO webhook_attempts (org_id, delivery_id, {ATTEMPT_COLUMNS})"),
        attempt_args,
        |p| p.join(", "),
        None,
    );
    let webhook = &attempt.webhook_id;
    match outcome {
        // Many deliveries to one endpoint in a shared commit clear its streak once.
        Settle::Delivered => batch.push_repeatable(super::webhooks::NOTE_SUCCESS, vec![webhook.into()]),
        _ => batch
            .push(super::webhooks::NOTE_FAILURE, vec![attempt.created_at.into(), webhook.into(), streak_gap_ms.into()]),
    }
    .mark_hot_row(webhook);
}

/// One call to an endpoint, as `GET /webhooks/{id}/deliveries` shows it.
#[derive(Debug, Clone)]
pub struct Attempt {
    pub id: String,
    pub webhook_id: String,
    pub event_id: String,
    pub event_type: String,
    pub attempt: i64,
    pub status_code: Option<i64>,
    pub succeeded: bool,
    pub latency_ms: i64,
    pub response_body: Option<String>,
    pub error: Option<String>,
    pub next_attempt_at: Option<i64>,
    pub created_at: i64,
}

const ATTEMPT_COLUMNS: &str = "id, webhook_id, event_id, event_type, attempt, status_code, succeeded, latency_ms, \
     response_body, error, next_attempt_at, created_at";

fn attempt_from_row(row: &AnyRow) -> sqlx::Result<Attempt> {
    Ok(Attempt {
        id: row.try_get(0)?,
        webhook_id: row.try_get(1)?,
        event_id: row.try_get(2)?,
        event_type: row.try_get(3)?,
        attempt: row.try_get(4)?,
        status_code: row.try_get(5)?,
        succeeded: row.try_get::<i64, _>(6)? != 0,
        latency_ms: row.try_get(7)?,
        response_body: row.try_get(8)?,
        error: row.try_get(9)?,
        next_attempt_at: row.try_get(10)?,
        created_at: row.try_get(11)?,
    })
}

pub async fn insert_attempt(
    conn: &mut AnyConnection,
    org_id: &str,
    delivery_id: &str,
    attempt: &Attempt,
) -> sqlx::Result<()> {
    sqlx::query(&format!(
        "INSERT INTO webhook_attempts (org_id, delivery_id, {ATTEMPT_COLUMNS}) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)"
    ))
    .bind(org_id)
    .bind(delivery_id)
    .bind(&attempt.id)
    .bind(&attempt.webhook_id)
    .bind(&attempt.event_id)
    .bind(&attempt.event_type)
    .bind(attempt.attempt)
    .bind(attempt.status_code)
    .bind(attempt.succeeded as i64)
    .bind(attempt.latency_ms)
    .bind(&attempt.response_body)
    .bind(&attempt.error)
    .bind(attempt.next_attempt_at)
    .bind(attempt.created_at)
    .execute(&mut *conn)
    .await?;
    Ok(())
}

/// An endpoint's attempts, newest first, optionally for one event.
pub async fn list_attempts(
    db: &Db,
    webhook_id: &str,
    event_id: Option<&str>,
    page: &Page,
) -> sqlx::Result<Paged<Attempt>> {
    ListQuery::new(format!("SELECT {ATTEMPT_COLUMNS} FROM webhook_attempts WHERE webhook_id = $1"), webhook_id)
        .eq("event_id", event_id)
        .fetch(db, page, attempt_from_row, |a| &a.id)
        .await
}

/// Up to `$2` deliveries settled before `$1`, found through `webhook_deliveries_settled`. The
/// partial index's condition is repeated word for word, which is how a planner sees that the
/// index applies; SQLite, with no statistics, went through every settled delivery in the index
/// on `(state, next_attempt_at)` that migration 0023 dropped, and is still told which to use.
pub fn settled_before(backend: super::Backend) -> &'static str {
    match backend {
        super::Backend::Sqlite => {
            "SELECT id FROM webhook_deliveries INDEXED BY webhook_deliveries_settled \
             WHERE state IN ('delivered', 'failed') AND updated_at < $1 LIMIT $2"
        }
        super::Backend::Postgres => {
            "SELECT id FROM webhook_deliveries WHERE state IN ('delivered', 'failed') AND updated_at < $1 LIMIT $2"
        }
    }
}

/// Deletes one delivery (of an endpoint deleted since it was written).
pub async fn forget(db: &Db, id: &str) -> sqlx::Result<()> {
    sqlx::query("DELETE FROM webhook_deliveries WHERE id = $1").bind(id).execute(db.writer()).await?;
    Ok(())
}

/// Deletes attempts and settled deliveries last touched before `before`, up to `limit` rows of
/// each; returns how many rows went.
pub async fn prune(db: &Db, before: i64, limit: i64) -> sqlx::Result<u64> {
    let attempts = sqlx::query(
        "DELETE FROM webhook_attempts WHERE id IN (SELECT id FROM webhook_attempts WHERE created_at < $1 LIMIT $2)",
    )
    .bind(before)
    .bind(limit)
    .execute(db.writer())
    .await?
    .rows_affected();
    // A delivery settled before `before` had all its attempts before then too: none are left.
    let deliveries =
        sqlx::query(&format!("DELETE FROM webhook_deliveries WHERE id IN ({})", settled_before(db.backend())))
            .bind(before)
            .bind(limit)
            .execute(db.writer())
            .await?
            .rows_affected();
    Ok(attempts + deliveries)
}

/// Events not yet fanned out plus deliveries not yet settled (for tests).
#[cfg(feature = "testing")]
pub async fn outstanding(db: &Db) -> sqlx::Result<i64> {
    let events: i64 = sqlx::query("SELECT COUNT(*) FROM events WHERE webhooks_pending = 1")
        .fetch_one(db.writer())
        .await?
        .try_get(0)?;
    let deliveries: i64 =
        sqlx::query(&format!("SELECT COUNT(*) FROM ({OPEN}) open")).fetch_one(db.writer()).await?.try_get(0)?;
    Ok(events + deliveries)
}
