//! What the database writes and keeps per message: on PostgreSQL the row writes of each table
//! (inserts, updates, of which HOT, deletes) and the transactions committed over a scenario, from
//! the statistics views; on both engines the bytes each table holds with its indexes (PostgreSQL's
//! relation sizes, SQLite's `dbstat`). Figures are taken before and after a scenario and divided
//! by the messages it accepted.

use std::collections::BTreeMap;

use serde_json::{Value, json};
use sqlx::Row;

use msgline::{Backend, Db};

/// [`writes`] after waiting [`settle_time`] on PostgreSQL, so that the writes of what ran
/// before are counted in full before a scenario starts.
pub(crate) async fn writes_settled(db: &Db) -> Option<Writes> {
    if db.backend() != Backend::Postgres {
        return None;
    }
    tokio::time::sleep(settle_time(db)).await;
    writes(db).await
}

/// Per table: inserts, updates, HOT updates, deletes; and the database's commits under `""`.
#[derive(Default, Clone)]
pub(crate) struct Writes(BTreeMap<String, [i64; 4]>);

/// How long after the load a reading of [`writes`] waits: a PostgreSQL backend reports its
/// counts when it goes idle, but not twice within a second; one that has reported within the
/// second reports again 10 s later.
pub(crate) fn settle_time(db: &Db) -> std::time::Duration {
    std::time::Duration::from_millis(if db.backend() == Backend::Postgres { 11_000 } else { 1_500 })
}

/// The row writes counted so far (PostgreSQL; `None` on SQLite, which keeps no such counts),
/// once what came before has been counted: [`settle_time`] after the last write. The caller
/// waits as long after its load before it reads them again.
pub(crate) async fn writes(db: &Db) -> Option<Writes> {
    if db.backend() != Backend::Postgres {
        return None;
    }
    let rows = db
        .write(async |conn| {
            sqlx::query(
                "SELECT relname::text AS name, n_tup_ins, n_tup_upd, n_tup_hot_upd, n_tup_del FROM pg_stat_user_tables \
                 UNION ALL SELECT '' AS name, xact_commit, 0, 0, 0 FROM pg_stat_database WHERE datname = current_database()",
            )
            .fetch_all(conn)
            .await
        })
        .await
        .ok()?;
    let mut writes = Writes::default();
    for row in rows {
        let name: String = row.try_get("name").ok()?;
        let counts = [1, 2, 3, 4].map(|i| row.try_get::<i64, _>(i).unwrap_or_default());
        writes.0.insert(name, counts);
    }
    Some(writes)
}

/// The row writes between two readings per accepted message, per table that had any, with the
/// commits per message: `{"commits": c, "tables": {"messages": {"insert": .., "update": ..,
/// "hot_update": .., "delete": ..}, ...}, "total": rows written}`.
pub(crate) fn writes_per_message(before: &Writes, after: &Writes, messages: u64) -> Value {
    if messages == 0 {
        return Value::Null;
    }
    let per = |n: i64| (n as f64 / messages as f64 * 100.0).round() / 100.0;
    let mut tables = serde_json::Map::new();
    let mut total = 0;
    let mut commits = 0;
    for (name, counts) in &after.0 {
        let was = before.0.get(name).copied().unwrap_or_default();
        let delta: Vec<i64> = counts.iter().zip(was).map(|(a, b)| a - b).collect();
        if name.is_empty() {
            commits = delta[0];
            continue;
        }
        if delta.iter().all(|d| *d == 0) {
            continue;
        }
        total += delta[0] + delta[1] + delta[3];
        tables.insert(
            name.clone(),
            json!({"insert": per(delta[0]), "update": per(delta[1]), "hot_update": per(delta[2]), "delete": per(delta[3])}),
        );
    }
    json!({"commits": per(commits), "rows": per(total), "tables": tables})
}

/// Bytes each table holds, its indexes (and on PostgreSQL its TOAST) included.
pub(crate) async fn table_bytes(db: &Db) -> anyhow::Result<BTreeMap<String, i64>> {
    let sql = match db.backend() {
        Backend::Postgres => {
            "SELECT relname::text AS name, pg_total_relation_size(relid) AS bytes FROM pg_stat_user_tables"
        }
        // An index's pages count for its table.
        Backend::Sqlite => {
            "SELECT COALESCE(m.tbl_name, d.name) AS name, SUM(d.pgsize) AS bytes FROM dbstat d \
             LEFT JOIN sqlite_master m ON m.name = d.name GROUP BY 1"
        }
    };
    let rows = db.write(async |conn| sqlx::query(sql).fetch_all(conn).await).await?;
    let mut bytes = BTreeMap::new();
    for row in rows {
        bytes.insert(row.try_get::<String, _>("name")?, row.try_get::<i64, _>("bytes")?);
    }
    Ok(bytes)
}

/// The tables that grew between two readings, in bytes per accepted message, and their sum.
pub(crate) fn bytes_per_message(before: &BTreeMap<String, i64>, after: &BTreeMap<String, i64>, messages: u64) -> Value {
    if messages == 0 {
        return Value::Null;
    }
    let mut tables = serde_json::Map::new();
    let mut total = 0;
    for (name, bytes) in after {
        let grew = bytes - before.get(name).copied().unwrap_or_default();
        if grew > 0 {
            total += grew;
            tables.insert(name.clone(), json!(grew / messages as i64));
        }
    }
    json!({"total": total / messages as i64, "tables": tables})
}
