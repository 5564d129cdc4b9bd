//! The `scheduled` scenario: what scheduled sends cost the rest. `send` runs as usual, then
//! again beside a table of `--read-rows` (a million) messages scheduled 30 days ahead; then a
//! tenth as many come due at one moment, and the time until the dispatcher handed each to the
//! line gives their hand-over rate, to compare with `send`'s. Between the two, a control of the
//! same size alternates with the scheduled table: the same rows canceled (out of the outbox),
//! then scheduled again, twice (`send+same-size`, `send+sched`).

use std::time::{Duration, Instant};

use serde_json::{Value, json};
use sqlx::Row;

use crate::{BenchArgs, Harness, Samples, scenario_send, summary};

pub(crate) async fn scenario(h: &Harness, args: &BenchArgs) -> anyhow::Result<Vec<Value>> {
    let (before, ..) = scenario_send(h, args).await;
    let day = 86_400_000;
    msgline::seed_bench_scheduled(&h.db, args.read_rows, msgline::clock::now_ms() + 30 * day, "far ahead").await?;
    settle(h).await?;
    let (mut beside, ..) = scenario_send(h, args).await;
    beside["scenario"] = json!("send+sched");
    beside["scheduled_rows"] = json!(args.read_rows);
    let rate = |r: &Value| r["per_second"].as_f64().unwrap_or(0.0);
    let ratio = |a: &Value, b: &Value| json!((rate(a) / rate(b).max(1e-9) * 1000.0).round() / 1000.0);
    beside["of_send_before"] = ratio(&beside, &before);
    let mut results = vec![before.clone(), beside];

    // A control of the same size, alternating with the scheduled table: the same million rows
    // taken out of the outbox (canceled), then scheduled again, twice.
    for _ in 0..2 {
        let mut pair = Vec::new();
        for scheduled in [false, true] {
            let (status, outbox) = if scheduled { ("scheduled", "'pending'") } else { ("canceled", "NULL") };
            h.db.write(async |conn| {
                sqlx::query(&format!(
                    "UPDATE messages SET status = '{status}', outbox_state = {outbox} WHERE body = 'far ahead'"
                ))
                .execute(conn)
                .await
            })
            .await?;
            settle(h).await?;
            let (mut send, ..) = scenario_send(h, args).await;
            send["scenario"] = json!(if scheduled { "send+sched" } else { "send+same-size" });
            send["of_send_before"] = ratio(&send, &before);
            pair.push(send);
        }
        pair[1]["of_same_size"] = ratio(&pair[1], &pair[0]);
        results.extend(pair);
    }

    // A burst: written far ahead, then all made due at one moment.
    let burst = (args.read_rows / 10).max(1);
    msgline::seed_bench_scheduled(&h.db, burst, msgline::clock::now_ms() + 60 * day, "burst").await?;
    settle(h).await?;
    let due = msgline::clock::now_ms() + 1_000;
    h.db.write(async |conn| {
        sqlx::query("UPDATE messages SET send_at = $1, available_at = $1 WHERE body = 'burst' AND status = 'scheduled'")
            .bind(due)
            .execute(conn)
            .await
    })
    .await?;
    let deadline = Instant::now() + Duration::from_secs(600);
    let waiting = loop {
        let sql = "SELECT COUNT(*) FROM messages WHERE body = 'burst' AND status IN ('scheduled', 'queued', 'unknown')";
        let waiting: i64 = h.db.write(async |conn| sqlx::query(sql).fetch_one(conn).await).await?.try_get(0)?;
        if waiting == 0 || Instant::now() > deadline {
            break waiting;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let last: Option<i64> =
        h.db.write(async |conn| {
            sqlx::query("SELECT MAX(submitted_at) FROM messages WHERE body = 'burst'").fetch_one(conn).await
        })
        .await?
        .try_get(0)?;
    let span = Duration::from_millis((last.unwrap_or(due) - due).max(1) as u64);
    let samples = Samples { micros: vec![0; (burst - waiting) as usize], errors: waiting as u64, ..Samples::default() };
    let mut handed = summary("burst", samples, span, "messages");
    for field in ["p50_ms", "p99_ms", "p999_ms", "load_cpu_cores", "machine_cpu_ms_per_request"] {
        handed[field] = Value::Null;
    }
    handed["of_send_before"] = ratio(&handed, &before);
    results.push(handed);
    Ok(results)
}

/// Lets the database finish with the seeding before anything is measured: on SQLite the
/// write-ahead log the seeding wrote is copied back and emptied (else the server's checkpoints
/// of hundreds of megabytes fall inside the measurement); on PostgreSQL the table is vacuumed and
/// its statistics taken, as autovacuum would do soon after.
async fn settle(h: &Harness) -> anyhow::Result<()> {
    let deadline = Instant::now() + Duration::from_secs(120);
    if h.db.backend() == msgline::Backend::Sqlite {
        loop {
            let row =
                h.db.write(async |conn| sqlx::query("PRAGMA wal_checkpoint(TRUNCATE)").fetch_one(conn).await).await?;
            let busy: i64 = row.try_get(0)?;
            if busy == 0 || Instant::now() > deadline {
                break;
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    } else {
        h.db.write(async |conn| sqlx::query("VACUUM (ANALYZE) messages").execute(conn).await).await?;
    }
    tokio::time::sleep(Duration::from_secs(2)).await;
    Ok(())
}
