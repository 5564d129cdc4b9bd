//! Webhook endpoints. The signing secret is kept as minted (the service signs with it) and is
//! shown to the customer only when it is created or rotated.

use std::collections::{BTreeSet, HashMap};

use sqlx::{AnyConnection, Row};

use super::{Db, ListQuery, Page, Paged};
use crate::{
    clock,
    domain::webhook::{Subscriptions, new_secret},
    ids,
};

#[derive(Clone)]
pub struct Webhook {
    pub id: String,
    pub org_id: String,
    pub line_id: Option<String>,
    pub url: String,
    pub description: Option<String>,
    pub events: Subscriptions,
    pub secret: String,
    pub previous_secret: Option<String>,
    pub previous_secret_expires_at: Option<i64>,
    pub enabled: bool,
    pub disabled_reason: Option<String>,
    pub disabled_at: Option<i64>,
    pub failing_since: Option<i64>,
    pub created_at: i64,
    pub updated_at: i64,
}

impl std::fmt::Debug for Webhook {
    // Secrets never reach a log.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Webhook")
            .field("id", &self.id)
            .field("org_id", &self.org_id)
            .field("url", &self.url)
            .field("enabled", &self.enabled)
            .finish_non_exhaustive()
    }
}

impl Webhook {
    /// An endpoint as it is registered: enabled, with one secret and no failures yet, bound to no
    /// line and with no description.
    pub fn registered(id: String, org_id: &str, url: &str, events: Subscriptions, secret: String, now: i64) -> Webhook {
        Webhook {
            id,
            org_id: org_id.to_string(),
            line_id: None,
            url: url.to_string(),
            description: None,
            events,
            secret,
            previous_secret: None,
            previous_secret_expires_at: None,
            enabled: true,
            disabled_reason: None,
            disabled_at: None,
            failing_since: None,
            created_at: now,
            updated_at: now,
        }
    }

    /// The secrets that sign at `now`: the current one, then the previous one during its grace.
    pub fn signing_secrets(&self, now: i64) -> Vec<&str> {
        let mut secrets = vec![self.secret.as_str()];
        if let (Some(previous), Some(until)) = (&self.previous_secret, self.previous_secret_expires_at)
            && until > now
        {
            secrets.push(previous);
        }
        secrets
    }

    /// Whether an event of this type (about a message on `line_id`, if any) goes here.
    pub fn wants(&self, event_type: &str, line_id: Option<&str>, event_created_at: i64) -> bool {
        self.enabled
            && self.created_at <= event_created_at
            && self.events.matches(event_type)
            && (self.line_id.is_none() || self.line_id.as_deref() == line_id)
    }
}

pub const COLUMNS: &str = "id, org_id, line_id, url, description, event_types, secret, previous_secret, \
     previous_secret_expires_at, enabled, disabled_reason, disabled_at, failing_since, created_at, updated_at";

pub fn from_row(row: &(impl super::Columns + ?Sized)) -> sqlx::Result<Webhook> {
    Ok(Webhook {
        id: row.text("id")?,
        org_id: row.text("org_id")?,
        line_id: row.opt_text("line_id")?,
        url: row.text("url")?,
        description: row.opt_text("description")?,
        events: Subscriptions::from_stored(&row.text("event_types")?),
        secret: row.text("secret")?,
        previous_secret: row.opt_text("previous_secret")?,
        previous_secret_expires_at: row.opt_int("previous_secret_expires_at")?,
        enabled: row.int("enabled")? != 0,
        disabled_reason: row.opt_text("disabled_reason")?,
        disabled_at: row.opt_int("disabled_at")?,
        failing_since: row.opt_int("failing_since")?,
        created_at: row.int("created_at")?,
        updated_at: row.int("updated_at")?,
    })
}

pub struct NewWebhook<'a> {
    pub org_id: &'a str,
    pub line_id: Option<&'a str>,
    pub url: &'a str,
    pub description: Option<&'a str>,
    pub events: &'a Subscriptions,
}

/// Stores an endpoint with a new secret.
pub async fn create(db: &Db, new: NewWebhook<'_>) -> sqlx::Result<Webhook> {
    let now = clock::now_ms();
    let webhook = Webhook {
        line_id: new.line_id.map(str::to_string),
        description: new.description.map(str::to_string),
        ..Webhook::registered(ids::new_id("wh"), new.org_id, new.url, new.events.clone(), new_secret(), now)
    };
    sqlx::query(&format!(
        "INSERT INTO webhooks ({COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, NULL, NULL, 1, NULL, NULL, NULL, $8, $8)"
    ))
    .bind(&webhook.id)
    .bind(&webhook.org_id)
    .bind(&webhook.line_id)
    .bind(&webhook.url)
    .bind(&webhook.description)
    .bind(webhook.events.to_stored())
    .bind(&webhook.secret)
    .bind(now)
    .execute(db.writer())
    .await?;
    Ok(webhook)
}

/// One of the organisation's endpoints. Read from the writer, so a change just made is seen.
pub async fn get(db: &Db, org_id: &str, id: &str) -> sqlx::Result<Option<Webhook>> {
    let row = sqlx::query(&format!("SELECT {COLUMNS} FROM webhooks WHERE org_id = $1 AND id = $2"))
        .bind(org_id)
        .bind(id)
        .fetch_optional(db.writer())
        .await?;
    row.as_ref().map(from_row).transpose()
}

/// The endpoints of a claim of deliveries, by `(org_id, id)`: one read for all of them.
pub async fn for_deliveries<'a>(
    db: &Db,
    keys: impl IntoIterator<Item = (&'a str, &'a str)>,
) -> sqlx::Result<HashMap<(String, String), Webhook>> {
    let keys: BTreeSet<(&str, &str)> = keys.into_iter().collect();
    if keys.is_empty() {
        return Ok(HashMap::new());
    }
    let pairs: Vec<String> =
        (0..keys.len()).map(|i| format!("(org_id = ${} AND id = ${})", 2 * i + 1, 2 * i + 2)).collect();
    let sql = format!("SELECT {COLUMNS} FROM webhooks WHERE {}", pairs.join(" OR "));
    let args = keys.iter().flat_map(|(org, id)| [(*org).into(), (*id).into()]).collect();
    let found = db.read_rows(sql, args, |row| from_row(row)).await?;
    Ok(found.into_iter().map(|webhook| ((webhook.org_id.clone(), webhook.id.clone()), webhook)).collect())
}

/// The organisation's endpoints, newest first; only those bound to `line_id` when it is given.
pub async fn list(db: &Db, org_id: &str, line_id: Option<&str>, page: &Page) -> sqlx::Result<Paged<Webhook>> {
    ListQuery::new(format!("SELECT {COLUMNS} FROM webhooks WHERE org_id = $1"), org_id)
        .eq("line_id", line_id)
        .fetch(db, page, from_row, |w| &w.id)
        .await
}

/// Deletes an endpoint with its deliveries and attempts. Returns whether it existed.
pub async fn delete(db: &Db, org_id: &str, id: &str) -> sqlx::Result<bool> {
    let mut tx = db.begin().await?;
    if db.backend() == super::Backend::Postgres {
        // The deliverer may be recording an attempt of one of these deliveries right now. Locked
        // first, that attempt waits for this transaction and then finds its delivery gone,
        // instead of slipping in between the two deletes below and failing them.
        sqlx::query("SELECT id FROM webhook_deliveries WHERE webhook_id = $1 AND org_id = $2 FOR UPDATE")
            .bind(id)
            .bind(org_id)
            .execute(&mut *tx)
            .await?;
    }
    for table in ["webhook_attempts", "webhook_deliveries"] {
        sqlx::query(&format!("DELETE FROM {table} WHERE webhook_id = $1 AND org_id = $2"))
            .bind(id)
            .bind(org_id)
            .execute(&mut *tx)
            .await?;
    }
    let deleted = sqlx::query("DELETE FROM webhooks WHERE id = $1 AND org_id = $2")
        .bind(id)
        .bind(org_id)
        .execute(&mut *tx)
        .await?
        .rows_affected();
    tx.commit().await?;
    Ok(deleted == 1)
}

/// Gives an endpoint a new secret; the current one keeps signing until `now + grace_ms` (not at
/// all when 0). A secret still in its grace from an earlier rotation stops signing now.
pub async fn rotate_secret(db: &Db, org_id: &str, id: &str, grace_ms: i64) -> sqlx::Result<Option<Webhook>> {
    let mut tx = db.begin().await?;
    let row = sqlx::query(&format!("SELECT {COLUMNS} FROM webhooks WHERE org_id = $1 AND id = $2"))
        .bind(org_id)
        .bind(id)
        .fetch_optional(&mut *tx)
        .await?;
    let Some(mut webhook) = row.as_ref().map(from_row).transpose()? else { return Ok(None) };
    let now = clock::now_ms();
    let secret = new_secret();
    let (previous, until) =
        if grace_ms > 0 { (Some(webhook.secret.clone()), Some(now + grace_ms)) } else { (None, None) };
    sqlx::query(
        "UPDATE webhooks SET secret = $1, previous_secret = $2, previous_secret_expires_at = $3, updated_at = $4 \
         WHERE id = $5",
    )
    .bind(&secret)
    .bind(&previous)
    .bind(until)
    .bind(now)
    .bind(id)
    .execute(&mut *tx)
    .await?;
    tx.commit().await?;
    webhook.secret = secret;
    webhook.previous_secret = previous;
    webhook.previous_secret_expires_at = until;
    webhook.updated_at = now;
    Ok(Some(webhook))
}

/// Disables an endpoint and gives up its outstanding deliveries, inside the caller's transaction.
pub async fn disable(conn: &mut AnyConnection, id: &str, reason: &str, now: i64) -> sqlx::Result<()> {
    sqlx::query(
        "UPDATE webhooks SET enabled = 0, disabled_reason = $1, disabled_at = $2, updated_at = $2 \
         WHERE id = $3 AND enabled = 1",
    )
    .bind(reason)
    .bind(now)
    .bind(id)
    .execute(&mut *conn)
    .await?;
    sqlx::query(
        "UPDATE webhook_deliveries SET state = 'failed', next_attempt_at = NULL, claimed_until = NULL, updated_at = $1 \
         WHERE webhook_id = $2 AND state = 'pending'",
    )
    .bind(now)
    .bind(id)
    .execute(&mut *conn)
    .await?;
    Ok(())
}

/// Enables an endpoint again (a replay), with a clean failure record.
pub async fn enable(conn: &mut AnyConnection, id: &str, now: i64) -> sqlx::Result<()> {
    sqlx::query(
        "UPDATE webhooks SET enabled = 1, disabled_reason = NULL, disabled_at = NULL, failing_since = NULL, \
         updated_at = $1 WHERE id = $2 AND enabled = 0",
    )
    .bind(now)
    .bind(id)
    .execute(&mut *conn)
    .await?;
    Ok(())
}

/// The update [`note_failure`] makes (`$1` now, `$2` id, `$3` streak gap), for a shared commit.
pub const NOTE_FAILURE: &str = "UPDATE webhooks SET failing_since = CASE \
     WHEN failing_since IS NULL OR last_failed_at IS NULL OR $1 - last_failed_at > $3 THEN $1 \
     ELSE failing_since END, last_failed_at = $1 WHERE id = $2";

/// The update [`note_success`] makes (`$1` id), for a shared commit.
pub const NOTE_SUCCESS: &str = "UPDATE webhooks SET failing_since = NULL WHERE id = $1 AND failing_since IS NOT NULL";

/// Notes a failed attempt; returns since when the endpoint has failed continuously: with no
/// success between, and no two failures more than `streak_gap_ms` apart (a failure after a
/// longer quiet time starts a new streak).
pub async fn note_failure(conn: &mut AnyConnection, id: &str, now: i64, streak_gap_ms: i64) -> sqlx::Result<i64> {
    let row = sqlx::query(&format!("{NOTE_FAILURE} RETURNING failing_since"))
        .bind(now)
        .bind(id)
        .bind(streak_gap_ms)
        .fetch_optional(&mut *conn)
        .await?;
    Ok(row.map(|r| r.try_get::<Option<i64>, _>(0)).transpose()?.flatten().unwrap_or(now))
}

/// Notes a success: the endpoint is healthy again.
pub async fn note_success(conn: &mut AnyConnection, id: &str) -> sqlx::Result<()> {
    sqlx::query(NOTE_SUCCESS).bind(id).execute(&mut *conn).await?;
    Ok(())
}
