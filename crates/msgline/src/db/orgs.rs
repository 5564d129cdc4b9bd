//! Organisations: the tenants. Every other row belongs to one (shared lines to all).

use sqlx::Row;

use super::Db;
use crate::{clock, domain::opt_out, ids};

#[derive(Debug, Clone)]
pub struct Org {
    pub id: String,
    pub name: String,
    pub created_at: i64,
}

pub async fn create(db: &Db, name: &str) -> sqlx::Result<Org> {
    let org = Org { id: ids::new_id("org"), name: name.to_string(), created_at: clock::now_ms() };
    sqlx::query("INSERT INTO orgs (id, name, created_at) VALUES ($1, $2, $3)")
        .bind(&org.id)
        .bind(&org.name)
        .bind(org.created_at)
        .execute(db.writer())
        .await?;
    Ok(org)
}

pub async fn get(db: &Db, id: &str) -> sqlx::Result<Option<Org>> {
    let row =
        sqlx::query("SELECT id, name, created_at FROM orgs WHERE id = $1").bind(id).fetch_optional(db.writer()).await?;
    row.map(|row| Ok(Org { id: row.try_get(0)?, name: row.try_get(1)?, created_at: row.try_get(2)? })).transpose()
}

/// The texts an organisation set for its automatic replies (`None`: the default).
#[derive(Debug, Clone, Default)]
pub struct Replies {
    pub org_name: String,
    pub opt_out: Option<String>,
    pub opt_in: Option<String>,
    pub help: Option<String>,
    /// The default SMS fallback of the organisation's sends: `Some("sms")`, or `None`. In a
    /// change, `Some("none")` turns it off.
    pub default_fallback: Option<String>,
    /// Whether the organisation's event feed is on (in a change, `None` leaves it as it is).
    pub event_feed: Option<bool>,
}

impl Replies {
    pub fn opt_out_text(&self) -> String {
        self.opt_out.clone().unwrap_or_else(|| opt_out::default_opt_out_reply(&self.org_name))
    }

    pub fn opt_in_text(&self) -> String {
        self.opt_in.clone().unwrap_or_else(|| opt_out::default_opt_in_reply(&self.org_name))
    }

    pub fn help_text(&self) -> String {
        self.help.clone().unwrap_or_else(|| opt_out::default_help_reply(&self.org_name))
    }
}

/// The organisation's replies, through the readers: its settings, as the API, the console and the
/// send path's fallback default show them.
pub async fn replies(db: &Db, org_id: &str) -> sqlx::Result<Replies> {
    replies_in(db.reader(), org_id).await
}

/// The organisation's replies, through any executor (inside a unit that handles an inbound
/// message, on its connection).
pub async fn replies_in<'c, E>(executor: E, org_id: &str) -> sqlx::Result<Replies>
where
    E: sqlx::Executor<'c, Database = sqlx::Any>,
{
    let row = sqlx::query(
        "SELECT name, opt_out_reply, opt_in_reply, help_reply, default_fallback, event_feed FROM orgs WHERE id = $1",
    )
    .bind(org_id)
    .fetch_optional(executor)
    .await?;
    let Some(row) = row else { return Ok(Replies::default()) };
    Ok(Replies {
        org_name: row.try_get(0)?,
        opt_out: row.try_get(1)?,
        opt_in: row.try_get(2)?,
        help: row.try_get(3)?,
        default_fallback: row.try_get(4)?,
        event_feed: Some(row.try_get::<i64, _>(5)? == 1),
    })
}

/// Sets the given replies in one statement: `Some("")` goes back to the default, `None` leaves
/// one as it is.
pub async fn set_replies(db: &Db, org_id: &str, changes: &Replies) -> sqlx::Result<Replies> {
    let keep = |value: &Option<String>| i64::from(value.is_none());
    let text = |value: &Option<String>| value.clone().filter(|text| !text.is_empty());
    sqlx::query(
        "UPDATE orgs SET opt_out_reply = CASE WHEN $1 = 1 THEN opt_out_reply ELSE $2 END, \
         opt_in_reply = CASE WHEN $3 = 1 THEN opt_in_reply ELSE $4 END, \
         help_reply = CASE WHEN $5 = 1 THEN help_reply ELSE $6 END, \
         default_fallback = CASE WHEN $8 = 1 THEN default_fallback ELSE $9 END, \
         event_feed = CASE WHEN $10 = 1 THEN event_feed ELSE $11 END WHERE id = $7",
    )
    .bind(keep(&changes.opt_out))
    .bind(text(&changes.opt_out))
    .bind(keep(&changes.opt_in))
    .bind(text(&changes.opt_in))
    .bind(keep(&changes.help))
    .bind(text(&changes.help))
    .bind(org_id)
    .bind(keep(&changes.default_fallback))
    .bind(changes.default_fallback.clone().filter(|f| f == "sms"))
    .bind(i64::from(changes.event_feed.is_none()))
    .bind(i64::from(changes.event_feed == Some(true)))
    .execute(db.writer())
    .await?;
    replies_in(db.writer(), org_id).await
}
