//! The `send` and `e2e` scenarios: the request a real client makes, and the way of its messages
//! to the line's report.

use std::time::{Duration, Instant};

use serde_json::{Value, json};
use sqlx::Row;

use super::{BenchArgs, Harness, Samples, client, drive, recipient, storage, summary};
use msgline::ids;

/// The request a real client sends: an `Idempotency-Key` on every request, `from`, no
/// `channel` (msgline chooses), to 5,000 recipients.
pub(crate) async fn scenario_send(h: &Harness, args: &BenchArgs) -> (Value, i64, i64) {
    sends_from(h, args, &h.line_e164).await
}

/// `send`'s load from the line numbered `from`: its summary, and when it started and ended.
pub(crate) async fn sends_from(h: &Harness, args: &BenchArgs, from: &str) -> (Value, i64, i64) {
    let http = client(args.connections);
    let url = format!("{}/api/v1/messaging/messages", h.base);
    let keys = h.keys.clone();
    let from = from.to_string();
    let started = msgline::clock::now_ms();
    let run = ids::new_id("run");
    let (samples, elapsed) = drive(args.connections, args.seconds, move |worker, n| {
        http.post(&url)
            .bearer_auth(&keys[worker % keys.len()])
            .header("Idempotency-Key", format!("{run}-{n}"))
            .json(&json!({"to": recipient(n), "from": from, "body": format!("bench message {n}")}))
    })
    .await;
    (summary("send", samples, elapsed, "messages"), started, msgline::clock::now_ms())
}

/// [`scenario_send`], then, once its messages are sent and their reports written, what the
/// database wrote and keeps per message: `row_writes_per_message` (PostgreSQL) and
/// `stored_bytes_per_message` (without a webhook endpoint: no events).
pub(crate) async fn measured(h: &Harness, args: &BenchArgs) -> anyhow::Result<(Value, i64, i64)> {
    let (bytes, writes) = (storage::table_bytes(&h.db).await?, storage::writes_settled(&h.db).await);
    let (mut result, from, to) = scenario_send(h, args).await;
    settle(h, from, to).await?;
    // The delivered reports follow the sent ones, and the database's counts follow the writes.
    tokio::time::sleep(storage::settle_time(&h.db)).await;
    let messages = result["count"].as_u64().unwrap_or(0);
    result["stored_bytes_per_message"] =
        storage::bytes_per_message(&bytes, &storage::table_bytes(&h.db).await?, messages);
    if let (Some(before), Some(after)) = (writes, storage::writes(&h.db).await) {
        result["row_writes_per_message"] = storage::writes_per_message(&before, &after, messages);
    }
    Ok((result, from, to))
}

/// Waits (up to two minutes) until the messages accepted between `from` and `to` are sent (or
/// failed).
async fn settle(h: &Harness, from: i64, to: i64) -> anyhow::Result<()> {
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let sql = "SELECT COUNT(*) FROM messages WHERE created_at >= $1 AND created_at <= $2 AND sent_at IS NULL \
                   AND status <> 'failed'";
        let pending: i64 =
            h.db.write(async |conn| sqlx::query(sql).bind(from).bind(to).fetch_one(conn).await).await?.try_get(0)?;
        if pending == 0 || Instant::now() > deadline {
            return Ok(());
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// From the 202 to the line reporting the send: `sent_at - created_at` of the messages a send
/// run accepted, once they have all been sent.
pub(crate) async fn scenario_e2e(h: &Harness, from: i64, to: i64) -> anyhow::Result<Value> {
    settle(h, from, to).await?;
    let rows =
        h.db.write(async |conn| {
            sqlx::query("SELECT created_at, sent_at FROM messages WHERE created_at >= $1 AND created_at <= $2")
                .bind(from)
                .bind(to)
                .fetch_all(conn)
                .await
        })
        .await?;
    // Accepted but not sent by the deadline (or failed, which the simulated line never does):
    // an error, not a message left out of the count.
    let (samples, span) = reported_samples(&rows)?;
    Ok(summary("e2e", samples, span, "messages"))
}

/// Rows of `(created_at, the report's time or NULL)`: each report's latency, a row without one
/// as an error, and the span from the first acceptance to the last report.
pub(crate) fn reported_samples(rows: &[sqlx::any::AnyRow]) -> anyhow::Result<(Samples, Duration)> {
    let mut samples = Samples::default();
    let (mut first, mut last) = (i64::MAX, i64::MIN);
    for row in rows {
        let created: i64 = row.try_get(0)?;
        let Some(reported) = row.try_get::<Option<i64>, _>(1)? else {
            samples.errors += 1;
            continue;
        };
        first = first.min(created);
        last = last.max(reported);
        samples.micros.push(((reported - created).max(0) * 1000) as u64);
    }
    Ok((samples, Duration::from_millis((last - first).max(1) as u64)))
}
