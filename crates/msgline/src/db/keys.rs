//! API keys. Only the SHA-256 of a key and its last four characters (a hint) are stored.

use sqlx::{Row, any::AnyRow};

use super::{Db, Page, Paged};
use crate::{
    clock,
    domain::{apikey, scope::Scopes},
    ids,
};

/// The PostgreSQL channel a key's revocation or rotation is announced on, to every instance.
pub const CHANNEL: &str = "msgline_keys";

#[derive(Debug, Clone)]
pub struct KeyRecord {
    pub id: String,
    pub org_id: String,
    pub name: String,
    pub key_hint: String,
    pub scopes: Scopes,
    pub line_id: Option<String>,
    pub created_at: i64,
    pub expires_at: Option<i64>,
    pub revoked_at: Option<i64>,
}

impl KeyRecord {
    /// Whether the key authenticates at `now`.
    pub fn is_active(&self, now: i64) -> bool {
        self.revoked_at.is_none() && self.expires_at.is_none_or(|at| at > now)
    }
}

pub struct NewKey<'a> {
    pub org_id: &'a str,
    pub name: &'a str,
    pub scopes: &'a Scopes,
    pub line_id: Option<&'a str>,
}

const COLUMNS: &str = "id, org_id, name, key_hint, scopes, line_id, created_at, expires_at, revoked_at";

fn from_row(row: &AnyRow) -> sqlx::Result<KeyRecord> {
    Ok(KeyRecord {
        id: row.try_get(0)?,
        org_id: row.try_get(1)?,
        name: row.try_get(2)?,
        key_hint: row.try_get(3)?,
        scopes: Scopes::from_stored(&row.try_get::<String, _>(4)?),
        line_id: row.try_get(5)?,
        created_at: row.try_get(6)?,
        expires_at: row.try_get(7)?,
        revoked_at: row.try_get(8)?,
    })
}

/// Mints and stores a key; the secret in the answer is the only copy there will ever be.
pub async fn create(db: &Db, new: NewKey<'_>) -> sqlx::Result<(KeyRecord, String)> {
    create_in(db.writer(), new).await
}

/// As [`create`], through any executor (a rotation's transaction).
async fn create_in<'c, E>(executor: E, new: NewKey<'_>) -> sqlx::Result<(KeyRecord, String)>
where
    E: sqlx::Executor<'c, Database = sqlx::Any>,
{
    let minted = apikey::mint();
    let record = KeyRecord {
        id: ids::new_id("key"),
        org_id: new.org_id.to_string(),
        name: new.name.to_string(),
        key_hint: minted.secret[minted.secret.len() - 4..].to_string(),
        scopes: new.scopes.clone(),
        line_id: new.line_id.map(str::to_string),
        created_at: clock::now_ms(),
        expires_at: None,
        revoked_at: None,
    };
    sqlx::query(
        "INSERT INTO api_keys (id, org_id, name, key_hash, key_hint, scopes, line_id, created_at) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
    )
    .bind(&record.id)
    .bind(&record.org_id)
    .bind(&record.name)
    .bind(&minted.hash)
    .bind(&record.key_hint)
    .bind(record.scopes.to_stored())
    .bind(&record.line_id)
    .bind(record.created_at)
    .execute(executor)
    .await?;
    Ok((record, minted.secret))
}

/// The key with this hash, whatever its state (the caller decides whether it is active).
pub async fn find_by_hash(db: &Db, hash: &str) -> sqlx::Result<Option<KeyRecord>> {
    // The writer sees revocations made a moment ago on this instance.
    sqlx::query(&format!("SELECT {COLUMNS} FROM api_keys WHERE key_hash = $1"))
        .bind(hash)
        .fetch_optional(db.writer())
        .await?
        .as_ref()
        .map(from_row)
        .transpose()
}

/// One of the organisation's keys that still authenticates.
pub async fn get_active(db: &Db, org_id: &str, id: &str) -> sqlx::Result<Option<KeyRecord>> {
    let row = sqlx::query(&format!("SELECT {COLUMNS} FROM api_keys WHERE org_id = $1 AND id = $2"))
        .bind(org_id)
        .bind(id)
        .fetch_optional(db.writer())
        .await?;
    let key = row.as_ref().map(from_row).transpose()?;
    Ok(key.filter(|k| k.is_active(clock::now_ms())))
}

/// The organisation's keys that still authenticate, newest first; only those bound to
/// `line_id` when one is given.
pub async fn list_active(db: &Db, org_id: &str, line_id: Option<&str>, page: &Page) -> sqlx::Result<Paged<KeyRecord>> {
    let now = clock::now_ms();
    let mut sql = format!(
        "SELECT {COLUMNS} FROM api_keys WHERE org_id = $1 AND revoked_at IS NULL \
         AND (expires_at IS NULL OR expires_at > $2)"
    );
    let mut binds: Vec<String> = Vec::new();
    for (column, value) in [("line_id", line_id), ("id <", page.before.as_deref())] {
        if let Some(value) = value {
            binds.push(value.to_string());
            let op = if column.ends_with('<') { "" } else { " =" };
            sql.push_str(&format!(" AND {column}{op} ${}", binds.len() + 2));
        }
    }
    sql.push_str(&format!(" ORDER BY id DESC LIMIT {}", page.limit + 1));
    let mut query = sqlx::query(&sql).bind(org_id).bind(now);
    for bind in &binds {
        query = query.bind(bind);
    }
    let rows = query.fetch_all(db.reader()).await?;
    let keys = rows.iter().map(from_row).collect::<sqlx::Result<Vec<_>>>()?;
    Ok(Paged::from_overfetch(keys, page.limit, |k| &k.id))
}

/// Revokes a key at once. Returns the revoked key, or `None` if it was not active.
pub async fn revoke(db: &Db, org_id: &str, id: &str) -> sqlx::Result<Option<KeyRecord>> {
    let Some(mut key) = get_active(db, org_id, id).await? else { return Ok(None) };
    let now = clock::now_ms();
    sqlx::query("UPDATE api_keys SET revoked_at = $1 WHERE org_id = $2 AND id = $3 AND revoked_at IS NULL")
        .bind(now)
        .bind(org_id)
        .bind(id)
        .execute(db.writer())
        .await?;
    key.revoked_at = Some(now);
    Ok(Some(key))
}

/// Replaces a key with a new one of the same name, scopes and line. The old key keeps working
/// for `grace_ms` (revoked at once when 0). Returns the new key, its secret and the moment the
/// old one stops working.
pub async fn rotate(db: &Db, org_id: &str, id: &str, grace_ms: i64) -> sqlx::Result<Option<(KeyRecord, String, i64)>> {
    let mut tx = db.begin().await?;
    let row = sqlx::query(&format!("SELECT {COLUMNS} FROM api_keys WHERE org_id = $1 AND id = $2"))
        .bind(org_id)
        .bind(id)
        .fetch_optional(&mut *tx)
        .await?;
    let now = clock::now_ms();
    let Some(old) = row.as_ref().map(from_row).transpose()?.filter(|k| k.is_active(now)) else {
        return Ok(None);
    };
    let (new, secret) =
        create_in(&mut *tx, NewKey { org_id, name: &old.name, scopes: &old.scopes, line_id: old.line_id.as_deref() })
            .await?;
    // A key already due to expire sooner keeps its earlier end.
    let ends = old.expires_at.map_or(now + grace_ms, |at| at.min(now + grace_ms));
    if grace_ms == 0 {
        sqlx::query("UPDATE api_keys SET revoked_at = $1 WHERE id = $2").bind(now).bind(id).execute(&mut *tx).await?;
    } else {
        sqlx::query("UPDATE api_keys SET expires_at = $1 WHERE id = $2").bind(ends).bind(id).execute(&mut *tx).await?;
    }
    tx.commit().await?;
    Ok(Some((new, secret, ends)))
}

/// Tells every instance listening on this PostgreSQL that key `id` changed (revoked, rotated).
/// Nothing to tell on SQLite, which one instance serves.
pub async fn announce_change(db: &Db, id: &str) -> sqlx::Result<()> {
    super::notify(db.backend(), db.writer(), CHANNEL, id).await
}

/// How many connections named `application_name` (each instance's listener for [`CHANNEL`])
/// this PostgreSQL has open: how many instances share the database.
pub async fn listening_instances(db: &Db, application_name: &str) -> sqlx::Result<i64> {
    sqlx::query_scalar(
        "SELECT COUNT(*) FROM pg_stat_activity WHERE application_name = $1 AND datname = current_database()",
    )
    .bind(application_name)
    .fetch_one(db.writer())
    .await
}
