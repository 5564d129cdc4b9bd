//! Organisations: the tenants. Every other row belongs to one (shared lines to all).

use sqlx::Row;

use super::Db;
use crate::{clock, ids};

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
