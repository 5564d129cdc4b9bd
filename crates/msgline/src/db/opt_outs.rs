//! Opt-outs: numbers that asked a line to stop texting them (SMS compliance). One row per
//! (organisation, line, number) while the opt-out is in force; opting back in deletes it. The
//! contact's `opted_out_at` is its earliest opt-out still in force, on any of the
//! organisation's lines.

use serde_json::{Value, json};
use sqlx::{AnyConnection, Row, any::AnyRow};

use super::{Db, ListQuery, Page, Paged, contacts::Contact};
use crate::{clock, ids};

#[derive(Debug, Clone)]
pub struct OptOut {
    pub id: String,
    pub org_id: String,
    pub line_id: String,
    pub phone: String,
    pub contact_id: String,
    pub keyword: String,
    pub created_at: i64,
}

impl OptOut {
    /// The public representation, as the API and webhook events show it.
    pub fn to_json(&self) -> Value {
        json!({
            "id": self.id,
            "line_id": self.line_id,
            "phone": self.phone,
            "contact_id": self.contact_id,
            "keyword": self.keyword,
            "opted_out_at": clock::rfc3339(self.created_at),
        })
    }
}

const COLUMNS: &str = "id, org_id, line_id, phone, contact_id, keyword, created_at";

fn from_row(row: &AnyRow) -> sqlx::Result<OptOut> {
    Ok(OptOut {
        id: row.try_get(0)?,
        org_id: row.try_get(1)?,
        line_id: row.try_get(2)?,
        phone: row.try_get(3)?,
        contact_id: row.try_get(4)?,
        keyword: row.try_get(5)?,
        created_at: row.try_get(6)?,
    })
}

/// The first of `phones` opted out of the organisation's messages on the line, if any.
pub async fn first_opted_out(db: &Db, org_id: &str, line_id: &str, phones: &[&str]) -> sqlx::Result<Option<String>> {
    if phones.is_empty() {
        return Ok(None);
    }
    // Read on every send: on PostgreSQL with other sends' checks (alone if their statement
    // failed), else through the readers.
    if let Some(checks) = db.opt_out_checks()
        && let Some(answer) = checks.first_opted_out(org_id, line_id, phones).await?
    {
        return Ok(answer);
    }
    let marks = (0..phones.len()).map(|i| format!("${}", i + 3)).collect::<Vec<_>>().join(", ");
    let sql = format!("SELECT phone FROM opt_outs WHERE org_id = $1 AND line_id = $2 AND phone IN ({marks}) LIMIT 1");
    let mut args: Vec<super::Arg> = vec![org_id.into(), line_id.into()];
    args.extend(phones.iter().map(|phone| (*phone).into()));
    let rows = db.read_rows(sql, args, |row| row.text("phone")).await?;
    Ok(rows.into_iter().next())
}

/// What a send learns of its recipient's opt-out before it commits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OptOutCheck {
    /// The number has not opted out on the line.
    Clear,
    /// The number opted out on the line: the send is refused.
    OptedOut(String),
    /// Not read: the commit checks it ([`stage_refusal`] into the send's batch), at no read's cost.
    AtCommit,
}

/// Checks a send's one recipient where it costs least, so that the send path never asks which
/// engine it runs on: on SQLite's committer and PostgreSQL's lanes the check runs inside the
/// commit ([`OptOutCheck::AtCommit`], the caller stages [`stage_refusal`]; on PostgreSQL the
/// checks of a commit's sends are one statement); elsewhere (an in-memory database) it is read
/// now with [`first_opted_out`].
pub async fn check_now_or_at_commit(db: &Db, org_id: &str, line_id: &str, phone: &str) -> sqlx::Result<OptOutCheck> {
    if db.refuses_in_commit() {
        return Ok(OptOutCheck::AtCommit);
    }
    Ok(match first_opted_out(db, org_id, line_id, &[phone]).await? {
        Some(phone) => OptOutCheck::OptedOut(phone),
        None => OptOutCheck::Clear,
    })
}

/// Finds the phone `$3` if it opted out of the organisation `$1`'s messages on the line `$2`.
const OPTED_OUT: &str =
    "SELECT phone AS refused FROM opt_outs WHERE org_id = $1 AND line_id = $2 AND phone = $3 LIMIT 1";

/// Refuses the batch if `phone` opted out on the line (see [`super::Batch::refuse_if_found`]):
/// [`super::Db::commit_or_refuse`] then answers the phone and writes nothing. The check runs
/// inside the commit, so it costs a send no read of its own.
pub fn stage_refusal(batch: &mut super::Batch, org_id: &str, line_id: &str, phone: &str) {
    batch.refuse_if_found(OPTED_OUT, vec![org_id.into(), line_id.into(), phone.into()]);
}

/// The first of `phones` that opted out on the line after `since` (a message's acceptance, when
/// its recipients were checked): what the dispatcher checks again at hand-over. The reply msgline
/// itself sends to a STOP is written with the opt-out, so it is not caught.
pub async fn first_opted_out_since(
    db: &Db,
    org_id: &str,
    line_id: &str,
    phones: &[&str],
    since: i64,
) -> sqlx::Result<Option<String>> {
    if phones.is_empty() {
        return Ok(None);
    }
    let marks = (0..phones.len()).map(|i| format!("${}", i + 4)).collect::<Vec<_>>().join(", ");
    let sql = format!(
        "SELECT phone FROM opt_outs WHERE org_id = $1 AND line_id = $2 AND created_at > $3 AND phone IN ({marks}) LIMIT 1"
    );
    let mut args: Vec<super::Arg> = vec![org_id.into(), line_id.into(), since.into()];
    args.extend(phones.iter().map(|phone| (*phone).into()));
    let rows = db.read_rows(sql, args, |row| row.text("phone")).await?;
    Ok(rows.into_iter().next())
}

/// Opts the contact's number out on the line, with the `messaging.contact.opted_out` event.
/// Returns the opt-out if it is new (a repeat changes nothing).
pub async fn opt_out(
    conn: &mut AnyConnection,
    line_id: &str,
    contact: &Contact,
    keyword: &str,
) -> sqlx::Result<Option<OptOut>> {
    let opt_out = OptOut {
        id: ids::new_id("opt"),
        org_id: contact.org_id.clone(),
        line_id: line_id.to_string(),
        phone: contact.phone.clone(),
        contact_id: contact.id.clone(),
        keyword: keyword.to_string(),
        created_at: clock::now_ms(),
    };
    let inserted = sqlx::query(&format!(
        "INSERT INTO opt_outs ({COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7) \
         ON CONFLICT (org_id, line_id, phone) DO NOTHING"
    ))
    .bind(&opt_out.id)
    .bind(&opt_out.org_id)
    .bind(&opt_out.line_id)
    .bind(&opt_out.phone)
    .bind(&opt_out.contact_id)
    .bind(&opt_out.keyword)
    .bind(opt_out.created_at)
    .execute(&mut *conn)
    .await?
    .rows_affected();
    if inserted == 0 {
        return Ok(None);
    }
    sqlx::query("UPDATE contacts SET opted_out_at = COALESCE(opted_out_at, $1), updated_at = $1 WHERE id = $2")
        .bind(opt_out.created_at)
        .bind(&contact.id)
        .execute(&mut *conn)
        .await?;
    announce(conn, "messaging.contact.opted_out", &opt_out).await?;
    Ok(Some(opt_out))
}

/// Ends the number's opt-out on the line, with the `messaging.contact.opted_in` event. Returns
/// the opt-out that ended, if there was one.
pub async fn opt_in(
    conn: &mut AnyConnection,
    org_id: &str,
    line_id: &str,
    phone: &str,
) -> sqlx::Result<Option<OptOut>> {
    let row = sqlx::query(&format!(
        "DELETE FROM opt_outs WHERE org_id = $1 AND line_id = $2 AND phone = $3 RETURNING {COLUMNS}"
    ))
    .bind(org_id)
    .bind(line_id)
    .bind(phone)
    .fetch_optional(&mut *conn)
    .await?;
    ended(conn, row).await
}

/// Clears an opt-out by id, as [`opt_in`] does: the organisation's own only, and only one on
/// `line_id` when given (a line-bound key's).
pub async fn clear(db: &Db, org_id: &str, id: &str, line_id: Option<&str>) -> sqlx::Result<Option<OptOut>> {
    let on_line = if line_id.is_some() { " AND line_id = $3" } else { "" };
    let sql = format!("DELETE FROM opt_outs WHERE org_id = $1 AND id = $2{on_line} RETURNING {COLUMNS}");
    db.transaction(async |tx| {
        let mut query = sqlx::query(&sql).bind(org_id).bind(id);
        if let Some(line_id) = line_id {
            query = query.bind(line_id);
        }
        let row = query.fetch_optional(&mut *tx).await?;
        ended(tx, row).await
    })
    .await
}

/// After an opt-out's row is deleted: the contact's `opted_out_at` follows what is left, and
/// the event is written.
async fn ended(conn: &mut AnyConnection, row: Option<AnyRow>) -> sqlx::Result<Option<OptOut>> {
    let Some(opt_out) = row.as_ref().map(from_row).transpose()? else { return Ok(None) };
    sqlx::query(
        "UPDATE contacts SET opted_out_at = (SELECT MIN(created_at) FROM opt_outs WHERE contact_id = $1), \
         updated_at = $2 WHERE id = $1",
    )
    .bind(&opt_out.contact_id)
    .bind(clock::now_ms())
    .execute(&mut *conn)
    .await?;
    announce(conn, "messaging.contact.opted_in", &opt_out).await?;
    Ok(Some(opt_out))
}

/// The event of an opt-out starting or ending: the opt-out and the contact as it now stands.
async fn announce(conn: &mut AnyConnection, kind: &str, opt_out: &OptOut) -> sqlx::Result<()> {
    let contact = super::contacts::get_in(&mut *conn, &opt_out.org_id, &opt_out.contact_id).await?;
    let data = json!({
        "opt_out": opt_out.to_json(),
        "contact": contact.as_ref().map(Contact::to_json),
    });
    super::events::insert(conn, &opt_out.org_id, kind, None, data.to_string()).await?;
    Ok(())
}

/// The organisation's opt-outs in force, newest first; only those of `line_id` or `phone`
/// when given.
pub async fn list(
    db: &Db,
    org_id: &str,
    line_id: Option<&str>,
    phone: Option<&str>,
    page: &Page,
) -> sqlx::Result<Paged<OptOut>> {
    ListQuery::new(format!("SELECT {COLUMNS} FROM opt_outs WHERE org_id = $1"), org_id)
        .eq("line_id", line_id)
        .eq("phone", phone)
        .fetch(db, page, from_row, |o| &o.id)
        .await
}
