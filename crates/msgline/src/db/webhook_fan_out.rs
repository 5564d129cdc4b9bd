//! The fan-out: an event waiting for its webhooks (`webhooks_pending = 1`) becomes one delivery
//! per enabled endpoint of its organisation whose subscription matches. The worker fans out only
//! as many events as it has free posts, and the first deliveries are written already claimed by
//! it, with their endpoints at hand: a new event goes from its fan-out to its post with no claim
//! between. What a fan-out makes beyond that is written pending, due at once, for the next
//! claims ([`super::webhook_deliveries::claim_due`]). A replay is a fan-out too: an endpoint's
//! events of a span, delivered to it again.

use std::collections::{BTreeMap, BTreeSet};

use sqlx::Row;

use super::{
    Arg, Batch, Db,
    webhook_deliveries::Claimed,
    webhooks::{self, Webhook},
};
use crate::{clock, domain::webhook::EVENT_TYPES, ids};

/// Rows per multi-row insert (two parameters each, well under every engine's limit).
const INSERT_CHUNK: usize = 400;

/// New deliveries of `deliveries` (each its id and its event's) to one endpoint, staged: pending
/// and due at `now`, or, with `claimed_until`, claimed for their first attempt until then.
pub(super) fn stage_deliveries(
    batch: &mut Batch,
    org_id: &str,
    webhook_id: &str,
    deliveries: &[(String, &str)],
    now: i64,
    claimed_until: Option<i64>,
) {
    // `$1` org, `$2` endpoint, `$3` now, `$4` the claim's end (when claimed); then two per row.
    let (first, state) = match claimed_until {
        Some(_) => (5, "'claimed', 1, $4"),
        None => (4, "'pending', 0, NULL"),
    };
    for chunk in deliveries.chunks(INSERT_CHUNK) {
        let values = (0..chunk.len())
            .map(|i| format!("(${}, $1, $2, ${}, {state}, $3, $3, $3)", first + 2 * i, first + 1 + 2 * i))
            .collect::<Vec<_>>()
            .join(", ");
        let mut args: Vec<Arg> = vec![org_id.into(), webhook_id.into(), now.into()];
        if let Some(until) = claimed_until {
            args.push(until.into());
        }
        for (id, event_id) in chunk {
            args.push(id.into());
            args.push((*event_id).into());
        }
        batch.push(
            format!(
                "INSERT INTO webhook_deliveries (id, org_id, webhook_id, event_id, state, attempts, claimed_until, \
                 next_attempt_at, created_at, updated_at) VALUES {values}"
            ),
            args,
        );
    }
}

/// An event not yet fanned out.
struct Pending {
    id: String,
    org_id: String,
    kind: String,
    created_at: i64,
    line_id: Option<String>,
}

fn pending_from_row(row: &(impl super::Columns + ?Sized)) -> sqlx::Result<Pending> {
    Ok(Pending {
        id: row.text("id")?,
        org_id: row.text("org_id")?,
        kind: row.text("type")?,
        created_at: row.int("created_at")?,
        line_id: row.opt_text("line_id")?,
    })
}

fn pending_sql(db: &Db) -> String {
    let lock = match db.backend() {
        super::Backend::Postgres => " FOR UPDATE SKIP LOCKED",
        super::Backend::Sqlite => "",
    };
    format!(
        "SELECT id, org_id, type, created_at, (SELECT m.line_id FROM messages m WHERE m.id = events.message_id) \
         AS line_id FROM events WHERE webhooks_pending = 1 ORDER BY id LIMIT $1{lock}"
    )
}

fn enabled_sql(orgs: usize) -> String {
    let placeholders = super::engine::batch::placeholders(orgs);
    format!("SELECT {} FROM webhooks WHERE enabled = 1 AND org_id IN ({placeholders})", webhooks::COLUMNS)
}

/// The organisations of `events`, each once.
fn orgs_of(events: &[Pending]) -> Vec<String> {
    let orgs: BTreeSet<&str> = events.iter().map(|e| e.org_id.as_str()).collect();
    orgs.into_iter().map(str::to_string).collect()
}

/// A delivery written claimed by its fan-out, with its endpoint as the fan-out read it.
pub struct Ready {
    pub claimed: Claimed,
    pub webhook: Webhook,
}

/// What a fan-out did: how many events it took, and the deliveries it claimed.
#[derive(Default)]
pub struct FannedOut {
    pub events: usize,
    pub ready: Vec<Ready>,
}

/// The writes of a fan-out: a delivery for every matching endpoint (the first `claim` of them,
/// in the events' order, claimed until `claimed_until`; the rest pending), and the events marked
/// done. Returns the writes and the claimed deliveries.
fn plan(events: &[Pending], endpoints: &[Webhook], now: i64, claim: usize, claimed_until: i64) -> (Batch, Vec<Ready>) {
    // Per endpoint and per state (claimed first), the deliveries to write: each an id and the
    // event it delivers.
    type Deliveries<'a> = (&'a Webhook, Vec<(String, &'a str)>);
    let mut rows: BTreeMap<(&str, bool), Deliveries> = BTreeMap::new();
    let mut ready = Vec::new();
    for pending in events {
        for endpoint in endpoints.iter().filter(|w| w.org_id == pending.org_id) {
            if !endpoint.wants(&pending.kind, pending.line_id.as_deref(), pending.created_at) {
                continue;
            }
            let id = ids::new_id("whd");
            let claimed = ready.len() < claim;
            if claimed {
                ready.push(Ready {
                    claimed: Claimed {
                        id: id.clone(),
                        org_id: endpoint.org_id.clone(),
                        webhook_id: endpoint.id.clone(),
                        event_id: pending.id.clone(),
                        attempt: 1,
                    },
                    webhook: endpoint.clone(),
                });
            }
            rows.entry((&endpoint.id, !claimed)).or_insert((endpoint, Vec::new())).1.push((id, &pending.id));
        }
    }
    let mut batch = Batch::new();
    for ((_, pending), (endpoint, deliveries)) in &rows {
        let until = (!pending).then_some(claimed_until);
        stage_deliveries(&mut batch, &endpoint.org_id, &endpoint.id, deliveries, now, until);
    }
    for chunk in events.chunks(INSERT_CHUNK) {
        let placeholders = super::engine::batch::placeholders(chunk.len());
        batch.push(
            format!("UPDATE events SET webhooks_pending = 0 WHERE id IN ({placeholders})"),
            chunk.iter().map(|e| Arg::from(&e.id)).collect(),
        );
    }
    (batch, ready)
}

/// Whether any event is waiting to be fanned out. In the order of `events_webhooks_pending`, so
/// that PostgreSQL reads that index: with no order, and statistics taken when most events were
/// new (just after a burst), it would rather read the table from its start, past every event
/// fanned out since, on every look; a drain of 140,000 events ran at under 1,000 a second
/// instead of over 5,000 (BENCHMARKS.md).
pub const ANY_UNFANNED: &str = "SELECT id FROM events WHERE webhooks_pending = 1 ORDER BY id LIMIT 1";

/// Fans out up to `limit` events not yet fanned out, oldest first, in one transaction (on
/// SQLite, on the writer's own lane): a delivery for every enabled endpoint of the event's
/// organisation whose subscription matches, of which the first `claim` are written claimed
/// until `claimed_until` and returned; the events are marked done.
pub async fn fan_out(db: &Db, limit: usize, claim: usize, claimed_until: i64) -> sqlx::Result<FannedOut> {
    // A cheap look first, so an idle service does not open a write transaction.
    if limit == 0 || sqlx::query(ANY_UNFANNED).fetch_optional(db.reader()).await?.is_none() {
        return Ok(FannedOut::default());
    }
    let sql = pending_sql(db);
    let limit = limit as i64;
    if let Some(lane) = db.group().and_then(|g| g.native_lane()) {
        return lane
            .run(move |conn| {
                let events = super::engine::native::rows(conn, &sql, &[limit.into()], |row| pending_from_row(row))?;
                if events.is_empty() {
                    return Ok(FannedOut::default());
                }
                let orgs = orgs_of(&events);
                let args: Vec<Arg> = orgs.iter().map(Arg::from).collect();
                let endpoints =
                    super::engine::native::rows(conn, &enabled_sql(orgs.len()), &args, |row| webhooks::from_row(row))?;
                let (batch, ready) = plan(&events, &endpoints, clock::now_ms(), claim, claimed_until);
                super::engine::native::run_batch(conn, &batch)?;
                Ok(FannedOut { events: events.len(), ready })
            })
            .await;
    }
    let mut tx = db.begin().await?;
    let rows = sqlx::query(&sql).bind(limit).fetch_all(&mut *tx).await?;
    if rows.is_empty() {
        tx.rollback().await?;
        return Ok(FannedOut::default());
    }
    let events = rows.iter().map(pending_from_row).collect::<sqlx::Result<Vec<_>>>()?;
    let orgs = orgs_of(&events);
    let sql = enabled_sql(orgs.len());
    let mut query = sqlx::query(&sql);
    for org_id in &orgs {
        query = query.bind(org_id);
    }
    let endpoints =
        query.fetch_all(&mut *tx).await?.iter().map(webhooks::from_row).collect::<sqlx::Result<Vec<_>>>()?;
    let (batch, ready) = plan(&events, &endpoints, clock::now_ms(), claim, claimed_until);
    batch.execute(&mut tx).await?;
    tx.commit().await?;
    Ok(FannedOut { events: events.len(), ready })
}

/// Why a replay was refused.
#[derive(Debug)]
pub enum ReplayError {
    TooMany(usize),
    Db(sqlx::Error),
}

impl From<sqlx::Error> for ReplayError {
    fn from(error: sqlx::Error) -> Self {
        ReplayError::Db(error)
    }
}

/// Queues again, for one endpoint, every event of its subscription created at or after `since`
/// (and not before the endpoint itself), except those it already has waiting; enables the
/// endpoint if it was disabled. Returns how many it queued; more than `max` is refused.
pub async fn replay(db: &Db, webhook: &Webhook, since: i64, max: usize) -> Result<usize, ReplayError> {
    let types: Vec<&str> = EVENT_TYPES.into_iter().filter(|t| webhook.events.matches(t)).collect();
    let type_list = (0..types.len()).map(|i| format!("${}", 4 + i)).collect::<Vec<_>>().join(", ");
    let mut sql = format!(
        "SELECT id FROM events WHERE org_id = $1 AND created_at >= $2 AND NOT EXISTS (SELECT 1 FROM \
         webhook_deliveries d WHERE d.webhook_id = $3 AND d.event_id = events.id AND d.state IN ('pending', 'claimed')) \
         AND type IN ({type_list})"
    );
    if webhook.line_id.is_some() {
        // Each event's message by its key: the messages have no index by line.
        let n = 4 + types.len();
        sql.push_str(&format!(" AND (SELECT m.line_id FROM messages m WHERE m.id = events.message_id) = ${n}"));
    }
    sql.push_str(&format!(" ORDER BY id LIMIT {}", max + 1));

    let mut tx = db.begin().await?;
    let mut query = sqlx::query(&sql).bind(&webhook.org_id).bind(since.max(webhook.created_at)).bind(&webhook.id);
    for kind in &types {
        query = query.bind(*kind);
    }
    if let Some(line_id) = &webhook.line_id {
        query = query.bind(line_id);
    }
    let event_ids: Vec<String> =
        query.fetch_all(&mut *tx).await?.iter().map(|r| r.try_get(0)).collect::<sqlx::Result<_>>()?;
    if event_ids.len() > max {
        return Err(ReplayError::TooMany(max));
    }
    let now = clock::now_ms();
    webhooks::enable(&mut tx, &webhook.id, now).await?;
    let deliveries: Vec<(String, &str)> = event_ids.iter().map(|e| (ids::new_id("whd"), e.as_str())).collect();
    let mut batch = Batch::new();
    stage_deliveries(&mut batch, &webhook.org_id, &webhook.id, &deliveries, now, None);
    batch.execute(&mut tx).await?;
    tx.commit().await?;
    Ok(event_ids.len())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::webhook::Subscriptions;

    fn endpoint(id: &str, org: &str) -> Webhook {
        Webhook::registered(
            id.into(),
            org,
            "https://example.com/hook",
            Subscriptions::from_stored("*"),
            "whsec_x".into(),
            0,
        )
    }

    fn event(id: &str, org: &str) -> Pending {
        Pending { id: id.into(), org_id: org.into(), kind: "message.sent".into(), created_at: 10, line_id: None }
    }

    #[test]
    fn the_first_deliveries_in_event_order_are_claimed_and_the_rest_left_pending() {
        let endpoints = [endpoint("wh_a", "org_1"), endpoint("wh_b", "org_1"), endpoint("wh_c", "org_2")];
        let events = [event("evt_1", "org_1"), event("evt_2", "org_2"), event("evt_3", "org_1")];
        let (batch, ready) = plan(&events, &endpoints, 100, 3, 900);
        let claimed: Vec<(&str, &str)> =
            ready.iter().map(|r| (r.claimed.event_id.as_str(), r.claimed.webhook_id.as_str())).collect();
        assert_eq!(claimed, [("evt_1", "wh_a"), ("evt_1", "wh_b"), ("evt_2", "wh_c")]);
        assert!(ready.iter().all(|r| r.claimed.attempt == 1 && r.webhook.id == r.claimed.webhook_id));
        let statements: Vec<&str> = batch.statements().iter().map(|s| s.sql.as_str()).collect();
        // Claimed rows for wh_a, wh_b and wh_c; pending rows for evt_3 to wh_a and wh_b; the
        // events marked done.
        assert_eq!(statements.iter().filter(|s| s.contains("'claimed', 1, $4")).count(), 3);
        assert_eq!(statements.iter().filter(|s| s.contains("'pending', 0, NULL")).count(), 2);
        assert!(statements.last().unwrap().starts_with("UPDATE events SET webhooks_pending = 0"));
    }

    #[test]
    fn with_no_claim_every_delivery_is_pending() {
        let (batch, ready) = plan(&[event("evt_1", "org_1")], &[endpoint("wh_a", "org_1")], 100, 0, 900);
        assert!(ready.is_empty());
        assert!(batch.statements().iter().any(|s| s.sql.contains("'pending', 0, NULL")));
    }
}
