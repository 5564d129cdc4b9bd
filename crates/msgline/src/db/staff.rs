//! Staff accounts, their console sessions and the sign-in failures that throttle them. Passwords
//! are stored as Argon2id hashes, session and link tokens as SHA-256 hashes: nothing here can be
//! used to sign in if the database is read.

use sqlx::{Row, any::AnyRow};

use super::Db;
use crate::{
    domain::staff::{Role, mint_token},
    ids,
};

#[derive(Debug, Clone)]
pub struct Staff {
    pub id: String,
    pub org_id: String,
    pub email: String,
    pub role: Role,
    /// Whether a password is set (a new member sets theirs through the sign-in link).
    pub has_password: bool,
    pub created_at: i64,
}

const COLUMNS: &str = "id, org_id, email, role, password_hash IS NOT NULL, created_at";

fn from_row(row: &AnyRow) -> sqlx::Result<Staff> {
    let role: String = row.try_get(3)?;
    Ok(Staff {
        id: row.try_get(0)?,
        org_id: row.try_get(1)?,
        email: row.try_get(2)?,
        role: Role::parse(&role).unwrap_or(Role::Member),
        has_password: row.try_get::<bool, _>(4).or_else(|_| row.try_get::<i64, _>(4).map(|n| n != 0))?,
        created_at: row.try_get(5)?,
    })
}

/// A one-time sign-in link's token, shown once, and when it stops working.
pub struct Link {
    pub token: String,
    pub expires_at: i64,
}

/// Adds a staff member with a one-time sign-in link (valid for `link_ms`), or with a password
/// already hashed. A live account with the same email breaks the unique index: the caller
/// answers that the email is taken.
pub async fn create(
    db: &Db,
    org_id: &str,
    email: &str,
    role: Role,
    password_hash: Option<&str>,
    now: i64,
    link_ms: i64,
) -> sqlx::Result<(Staff, Link)> {
    let (token, link_hash) = mint_token("mls_link_");
    let staff = Staff {
        id: ids::new_id("stf"),
        org_id: org_id.to_string(),
        email: email.to_string(),
        role,
        has_password: password_hash.is_some(),
        created_at: now,
    };
    sqlx::query(
        "INSERT INTO staff (id, org_id, email, role, password_hash, link_hash, link_expires_at, created_at, updated_at) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $8)",
    )
    .bind(&staff.id)
    .bind(org_id)
    .bind(email)
    .bind(role.as_str())
    .bind(password_hash)
    .bind(&link_hash)
    .bind(now + link_ms)
    .bind(now)
    .execute(db.writer())
    .await?;
    Ok((staff, Link { token, expires_at: now + link_ms }))
}

/// The organisation's staff, oldest first.
pub async fn list(db: &Db, org_id: &str) -> sqlx::Result<Vec<Staff>> {
    let rows =
        sqlx::query(&format!("SELECT {COLUMNS} FROM staff WHERE org_id = $1 AND removed_at IS NULL ORDER BY id"))
            .bind(org_id)
            .fetch_all(db.writer())
            .await?;
    rows.iter().map(from_row).collect()
}

/// A live account by email, with its password hash (`None` until set).
pub async fn for_sign_in(db: &Db, email: &str) -> sqlx::Result<Option<(Staff, Option<String>)>> {
    let row =
        sqlx::query(&format!("SELECT {COLUMNS}, password_hash FROM staff WHERE email = $1 AND removed_at IS NULL"))
            .bind(email)
            .fetch_optional(db.writer())
            .await?;
    row.as_ref().map(|row| Ok((from_row(row)?, row.try_get(6)?))).transpose()
}

/// The account a sign-in link belongs to, while the link works.
pub async fn by_link(db: &Db, link_hash: &str, now: i64) -> sqlx::Result<Option<Staff>> {
    let row = sqlx::query(&format!(
        "SELECT {COLUMNS} FROM staff WHERE link_hash = $1 AND link_expires_at > $2 AND removed_at IS NULL"
    ))
    .bind(link_hash)
    .bind(now)
    .fetch_optional(db.writer())
    .await?;
    row.as_ref().map(from_row).transpose()
}

/// Sets a password (the sign-in link is used up) and ends every session of the account.
pub async fn set_password(db: &Db, staff_id: &str, password_hash: &str, now: i64) -> sqlx::Result<()> {
    let mut tx = db.writer().begin().await?;
    sqlx::query(
        "UPDATE staff SET password_hash = $1, link_hash = NULL, link_expires_at = NULL, updated_at = $2 WHERE id = $3",
    )
    .bind(password_hash)
    .bind(now)
    .bind(staff_id)
    .execute(&mut *tx)
    .await?;
    sqlx::query("DELETE FROM staff_sessions WHERE staff_id = $1").bind(staff_id).execute(&mut *tx).await?;
    tx.commit().await
}

/// Changes a member's role; their sessions act with the new role from their next request.
pub async fn set_role(db: &Db, org_id: &str, staff_id: &str, role: Role, now: i64) -> sqlx::Result<bool> {
    let updated =
        sqlx::query("UPDATE staff SET role = $1, updated_at = $2 WHERE id = $3 AND org_id = $4 AND removed_at IS NULL")
            .bind(role.as_str())
            .bind(now)
            .bind(staff_id)
            .bind(org_id)
            .execute(db.writer())
            .await?
            .rows_affected();
    Ok(updated == 1)
}

/// Removes a staff member (the row stays, marked) and ends their sessions. `org_id` `None`: any
/// organisation's (the admin command).
pub async fn remove(db: &Db, org_id: Option<&str>, staff_id: &str, now: i64) -> sqlx::Result<bool> {
    let mut tx = db.writer().begin().await?;
    let sql = "UPDATE staff SET removed_at = $1, updated_at = $1, link_hash = NULL, link_expires_at = NULL \
               WHERE id = $2 AND removed_at IS NULL";
    let in_org = format!("{sql} AND org_id = $3");
    let removed = match org_id {
        Some(org_id) => sqlx::query(&in_org).bind(now).bind(staff_id).bind(org_id),
        None => sqlx::query(sql).bind(now).bind(staff_id),
    }
    .execute(&mut *tx)
    .await?
    .rows_affected();
    sqlx::query("DELETE FROM staff_sessions WHERE staff_id = $1").bind(staff_id).execute(&mut *tx).await?;
    tx.commit().await?;
    Ok(removed == 1)
}

// --- sessions --------------------------------------------------------------------------------

/// A live session and the account it is for.
#[derive(Debug, Clone)]
pub struct Session {
    pub id: String,
    pub staff: Staff,
    pub last_seen_at: i64,
}

/// Starts a session that ends at `now + absolute_ms` at the latest; returns its cookie token.
pub async fn start_session(db: &Db, staff_id: &str, now: i64, absolute_ms: i64) -> sqlx::Result<String> {
    let (token, hash) = mint_token("mls_");
    sqlx::query(
        "INSERT INTO staff_sessions (id, staff_id, token_hash, created_at, last_seen_at, expires_at) \
         VALUES ($1, $2, $3, $4, $4, $5)",
    )
    .bind(ids::new_id("ses"))
    .bind(staff_id)
    .bind(&hash)
    .bind(now)
    .bind(now + absolute_ms)
    .execute(db.writer())
    .await?;
    Ok(token)
}

/// The session a token's hash names, if it is live at `now`: not past its absolute end, not idle
/// for `idle_ms` or longer, and its account not removed.
pub async fn session(db: &Db, token_hash: &str, now: i64, idle_ms: i64) -> sqlx::Result<Option<Session>> {
    // Every console request runs this: the account's columns (as [`COLUMNS`]), then the session's.
    const SQL: &str = "SELECT s.id, s.org_id, s.email, s.role, s.password_hash IS NOT NULL, s.created_at, x.id, \
                       x.last_seen_at FROM staff_sessions x JOIN staff s ON s.id = x.staff_id \
                       WHERE x.token_hash = $1 AND x.expires_at > $2 AND x.last_seen_at > $3 AND s.removed_at IS NULL";
    let row = sqlx::query(SQL).bind(token_hash).bind(now).bind(now - idle_ms).fetch_optional(db.writer()).await?;
    row.as_ref()
        .map(|row| Ok(Session { staff: from_row(row)?, id: row.try_get(6)?, last_seen_at: row.try_get(7)? }))
        .transpose()
}

/// Records that a session was used (what its idle limit counts from).
pub async fn touch_session(db: &Db, session_id: &str, now: i64) -> sqlx::Result<()> {
    sqlx::query("UPDATE staff_sessions SET last_seen_at = $1 WHERE id = $2")
        .bind(now)
        .bind(session_id)
        .execute(db.writer())
        .await?;
    Ok(())
}

/// Ends a session (sign-out).
pub async fn end_session(db: &Db, token_hash: &str) -> sqlx::Result<()> {
    sqlx::query("DELETE FROM staff_sessions WHERE token_hash = $1").bind(token_hash).execute(db.writer()).await?;
    Ok(())
}

// --- sign-in failures ------------------------------------------------------------------------

/// Records a failed sign-in against each subject (`email:…`, `address:…`).
pub async fn record_failure(db: &Db, subjects: &[String], now: i64) -> sqlx::Result<()> {
    for subject in subjects {
        sqlx::query("INSERT INTO sign_in_failures (subject, failed_at) VALUES ($1, $2)")
            .bind(subject)
            .bind(now)
            .execute(db.writer())
            .await?;
    }
    Ok(())
}

/// Failures of a subject since `since`, and the oldest of them (from which the wait is counted).
pub async fn failures_since(db: &Db, subject: &str, since: i64) -> sqlx::Result<(i64, Option<i64>)> {
    let row =
        sqlx::query("SELECT COUNT(*), MIN(failed_at) FROM sign_in_failures WHERE subject = $1 AND failed_at > $2")
            .bind(subject)
            .bind(since)
            .fetch_one(db.writer())
            .await?;
    Ok((row.try_get(0)?, row.try_get(1)?))
}

/// Deletes failures and sessions that no longer count; returns how many rows went.
pub async fn prune(db: &Db, failures_before: i64, now: i64) -> sqlx::Result<u64> {
    let failures = sqlx::query("DELETE FROM sign_in_failures WHERE failed_at <= $1")
        .bind(failures_before)
        .execute(db.writer())
        .await?
        .rows_affected();
    let sessions = sqlx::query("DELETE FROM staff_sessions WHERE expires_at <= $1")
        .bind(now)
        .execute(db.writer())
        .await?
        .rows_affected();
    Ok(failures + sessions)
}
