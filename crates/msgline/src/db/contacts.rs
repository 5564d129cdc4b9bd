//! Contacts: people an organisation texts with, one per (organisation, phone).

use sqlx::{Row, any::AnyRow};

use super::{Db, Page, Paged, like_escape};
use crate::{clock, domain::phone::E164, ids};

#[derive(Debug, Clone)]
pub struct Contact {
    pub id: String,
    pub org_id: String,
    pub phone: String,
    pub name: Option<String>,
    pub email: Option<String>,
    pub organization: Option<String>,
    pub note: Option<String>,
    /// Whether the handle was last seen reachable over iMessage; `None` until a bridge is asked.
    pub imessage_reachable: Option<bool>,
    /// The earliest opt-out still in force on any of the organisation's lines.
    pub opted_out_at: Option<i64>,
    pub created_at: i64,
    pub updated_at: i64,
}

impl Contact {
    /// The public representation, as the API and webhook events show it.
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::json!({
            "id": self.id,
            "phone": self.phone,
            "name": self.name,
            "email": self.email,
            "organization": self.organization,
            "note": self.note,
            "imessage_reachable": self.imessage_reachable,
            "opted_out_at": self.opted_out_at.map(clock::rfc3339),
            "created_at": clock::rfc3339(self.created_at),
            "updated_at": clock::rfc3339(self.updated_at),
        })
    }
}

/// Fields an upsert sets; `None` leaves a stored value as it is, an empty string clears it.
#[derive(Debug, Clone, Default)]
pub struct ContactFields {
    pub name: Option<String>,
    pub email: Option<String>,
    pub organization: Option<String>,
    pub note: Option<String>,
}

const COLUMNS: &str =
    "id, org_id, phone, name, email, organization, note, imessage_reachable, created_at, updated_at, opted_out_at";

fn from_row(row: &AnyRow) -> sqlx::Result<Contact> {
    Ok(Contact {
        id: row.try_get(0)?,
        org_id: row.try_get(1)?,
        phone: row.try_get(2)?,
        name: row.try_get(3)?,
        email: row.try_get(4)?,
        organization: row.try_get(5)?,
        note: row.try_get(6)?,
        imessage_reachable: row.try_get::<Option<i64>, _>(7)?.map(|v| v != 0),
        created_at: row.try_get(8)?,
        updated_at: row.try_get(9)?,
        opted_out_at: row.try_get(10)?,
    })
}

/// Creates the contact for this phone or updates the given fields of the existing one.
/// Returns the contact and whether it was created.
pub async fn upsert(db: &Db, org_id: &str, phone: &E164, fields: &ContactFields) -> sqlx::Result<(Contact, bool)> {
    let now = clock::now_ms();
    let mut tx = db.begin().await?;
    let inserted = sqlx::query(
        "INSERT INTO contacts (id, org_id, phone, name, email, organization, note, created_at, updated_at, name_lower) \
         VALUES ($1, $2, $3, NULLIF($4, ''), NULLIF($5, ''), NULLIF($6, ''), NULLIF($7, ''), $8, $8, NULLIF($9, '')) \
         ON CONFLICT (org_id, phone) DO NOTHING",
    )
    .bind(ids::new_id("ct"))
    .bind(org_id)
    .bind(phone.as_str())
    .bind(&fields.name)
    .bind(&fields.email)
    .bind(&fields.organization)
    .bind(&fields.note)
    .bind(now)
    .bind(fields.name.as_ref().map(|n| n.to_lowercase()))
    .execute(&mut *tx)
    .await?
    .rows_affected()
        == 1;
    if !inserted {
        sqlx::query(
            "UPDATE contacts SET name = CASE WHEN $1 IS NULL THEN name ELSE NULLIF($1, '') END, \
             name_lower = CASE WHEN $8 IS NULL THEN name_lower ELSE NULLIF($8, '') END, \
             email = CASE WHEN $2 IS NULL THEN email ELSE NULLIF($2, '') END, \
             organization = CASE WHEN $3 IS NULL THEN organization ELSE NULLIF($3, '') END, \
             note = CASE WHEN $4 IS NULL THEN note ELSE NULLIF($4, '') END, updated_at = $5 \
             WHERE org_id = $6 AND phone = $7",
        )
        .bind(&fields.name)
        .bind(&fields.email)
        .bind(&fields.organization)
        .bind(&fields.note)
        .bind(now)
        .bind(org_id)
        .bind(phone.as_str())
        .bind(fields.name.as_ref().map(|n| n.to_lowercase()))
        .execute(&mut *tx)
        .await?;
    }
    let row = sqlx::query(&format!("SELECT {COLUMNS} FROM contacts WHERE org_id = $1 AND phone = $2"))
        .bind(org_id)
        .bind(phone.as_str())
        .fetch_one(&mut *tx)
        .await?;
    tx.commit().await?;
    Ok((from_row(&row)?, inserted))
}

pub async fn get(db: &Db, org_id: &str, id: &str) -> sqlx::Result<Option<Contact>> {
    get_in(db.reader(), org_id, id).await
}

/// Several contacts of an organisation in one read, by id (ids it does not have are left out).
pub async fn get_many(
    db: &Db,
    org_id: &str,
    ids: &[String],
) -> sqlx::Result<std::collections::HashMap<String, Contact>> {
    if ids.is_empty() {
        return Ok(Default::default());
    }
    let sql = format!(
        "SELECT {COLUMNS} FROM contacts WHERE org_id = $1 AND id IN ({})",
        (2..ids.len() + 2).map(|i| format!("${i}")).collect::<Vec<_>>().join(", ")
    );
    let mut query = sqlx::query(&sql).bind(org_id);
    for id in ids {
        query = query.bind(id);
    }
    let rows = query.fetch_all(db.reader()).await?;
    rows.iter().map(|row| from_row(row).map(|contact| (contact.id.clone(), contact))).collect()
}

/// [`get`] through any executor (a transaction's connection).
pub async fn get_in<'c, E>(executor: E, org_id: &str, id: &str) -> sqlx::Result<Option<Contact>>
where
    E: sqlx::Executor<'c, Database = sqlx::Any>,
{
    let row = sqlx::query(&format!("SELECT {COLUMNS} FROM contacts WHERE org_id = $1 AND id = $2"))
        .bind(org_id)
        .bind(id)
        .fetch_optional(executor)
        .await?;
    row.as_ref().map(from_row).transpose()
}

/// The organisation's contacts, newest first; `q` matches the name (any case), or, when it has no
/// letters, the digits of the phone number too.
pub async fn search(db: &Db, org_id: &str, q: Option<&str>, page: &Page) -> sqlx::Result<Paged<Contact>> {
    let mut sql = format!("SELECT {COLUMNS} FROM contacts WHERE org_id = $1");
    let mut binds: Vec<String> = vec![org_id.to_string()];
    if let Some(q) = q.map(str::trim).filter(|q| !q.is_empty()) {
        binds.push(format!("%{}%", like_escape(&q.to_lowercase())));
        let name_param = binds.len();
        let digits: String = q.chars().filter(char::is_ascii_digit).collect();
        if digits.is_empty() || q.chars().any(char::is_alphabetic) {
            sql.push_str(&format!(" AND name_lower LIKE ${name_param} ESCAPE '\\'"));
        } else {
            binds.push(format!("%{digits}%"));
            sql.push_str(&format!(
                " AND (name_lower LIKE ${name_param} ESCAPE '\\' OR phone LIKE ${} ESCAPE '\\')",
                binds.len()
            ));
        }
    }
    if let Some(before) = &page.before {
        binds.push(before.clone());
        sql.push_str(&format!(" AND id < ${}", binds.len()));
    }
    sql.push_str(&format!(" ORDER BY id DESC LIMIT {}", page.limit + 1));
    let mut query = sqlx::query(&sql);
    for bind in &binds {
        query = query.bind(bind);
    }
    let rows = query.fetch_all(db.reader()).await?;
    let contacts = rows.iter().map(from_row).collect::<sqlx::Result<Vec<_>>>()?;
    Ok(Paged::from_overfetch(contacts, page.limit, |c| &c.id))
}

/// The contact for this phone, created bare if the organisation has none yet.
pub async fn find_or_create<'c, E>(executor: E, org_id: &str, phone: &str) -> sqlx::Result<Contact>
where
    E: sqlx::Executor<'c, Database = sqlx::Any>,
{
    let now = clock::now_ms();
    // The no-op update makes RETURNING yield the existing row on both engines.
    let row = sqlx::query(&format!(
        "INSERT INTO contacts (id, org_id, phone, created_at, updated_at) VALUES ($1, $2, $3, $4, $4) \
         ON CONFLICT (org_id, phone) DO UPDATE SET phone = excluded.phone RETURNING {COLUMNS}"
    ))
    .bind(ids::new_id("ct"))
    .bind(org_id)
    .bind(phone)
    .bind(now)
    .fetch_one(executor)
    .await?;
    from_row(&row)
}

/// Stages a new contact with nothing but its phone (and what a bridge said of its iMessage
/// reachability); returns its id. The commit fails with a unique violation if the organisation
/// already has a contact with this phone.
pub fn stage_create(batch: &mut super::Batch, org_id: &str, phone: &str, reachable: Option<bool>, now: i64) -> String {
    let id = ids::new_id("ct");
    batch.push(
        "INSERT INTO contacts (id, org_id, phone, imessage_reachable, imessage_checked_at, created_at, updated_at) \
         VALUES ($1, $2, $3, $4, $5, $6, $6)",
        vec![
            (&id).into(),
            org_id.into(),
            phone.into(),
            reachable.map(i64::from).into(),
            reachable.map(|_| now).into(),
            now.into(),
        ],
    );
    id
}

/// [`record_reachability`], staged.
pub fn stage_reachability(batch: &mut super::Batch, contact_id: &str, reachable: bool, now: i64) {
    batch.push(
        "UPDATE contacts SET imessage_reachable = $1, imessage_checked_at = $2 WHERE id = $3",
        vec![i64::from(reachable).into(), now.into(), contact_id.into()],
    );
}

/// Whether the organisation's contact with this phone was last seen reachable over iMessage.
pub async fn reachability_by_phone(db: &Db, org_id: &str, phone: &str) -> sqlx::Result<Option<bool>> {
    // Read on every send that leaves the channel to msgline: through the readers of their own.
    let rows = db
        .read_rows(
            "SELECT imessage_reachable FROM contacts WHERE org_id = $1 AND phone = $2".into(),
            vec![org_id.into(), phone.into()],
            |row| row.opt_int("imessage_reachable"),
        )
        .await?;
    Ok(rows.into_iter().next().flatten().map(|v| v != 0))
}

/// Remembers what a bridge said about the contact's iMessage reachability.
pub async fn record_reachability(
    conn: &mut sqlx::AnyConnection,
    contact_id: &str,
    reachable: bool,
) -> sqlx::Result<()> {
    let mut batch = super::Batch::new();
    stage_reachability(&mut batch, contact_id, reachable, clock::now_ms());
    batch.execute(conn).await
}
