//! `kannel-line`: msgline's sends through a `kannel` line to Kannel's fake SMSC, beside the
//! `kannel` scenario's rate of Kannel's own `sendsms` in the same run. The load is the `send`
//! scenario's request from the Kannel line's number; the figure is how fast the messages went
//! all the way (accepted by msgline, handed to smsbox, taken by the fake SMSC and reported back
//! as `sent`), counted as `e2e` counts: from the first acceptance to the last report.

use std::time::{Duration, Instant};

use serde_json::{Value, json};
use sqlx::Row;

use super::{BenchArgs, Harness, peer, reported_samples, sends_from, summary};
use msgline::admin;

/// The Kannel line's number (the simulated line has +12015550100).
const E164: &str = "+12015550150";

pub async fn scenario(h: &Harness, args: &BenchArgs) -> anyhow::Result<Value> {
    let script = peer::script();
    if !peer::installed() || !script.exists() {
        return Ok(json!({"scenario": "kannel-line", "skipped": "Kannel is not installed (scripts/kannel install)"}));
    }
    let (dir, url) = peer::start(&script).await?;
    let result = through_kannel(h, args, &url).await;
    peer::stop(&script, &dir).await?;
    result
}

async fn through_kannel(h: &Harness, args: &BenchArgs, sendsms: &str) -> anyhow::Result<Value> {
    let smsbox = sendsms.split("/cgi-bin/").next().unwrap_or_default();
    let org_id: String =
        h.db.write(async |conn| {
            sqlx::query("SELECT org_id FROM lines WHERE e164 = $1").bind(&h.line_e164).fetch_one(conn).await
        })
        .await?
        .try_get(0)?;
    let line_id = match h
        .db
        .write(async |conn| sqlx::query("SELECT id FROM lines WHERE e164 = $1").bind(E164).fetch_optional(conn).await)
        .await?
    {
        Some(row) => row.try_get::<String, _>(0)?,
        None => {
            // scripts/kannel's sendsms user: bench/bench.
            let setup = admin::LineSetup {
                e164: E164,
                kind: "dedicated",
                org_id: Some(&org_id),
                bridge_url: smsbox,
                bridge_token: None,
                bridge_kind: "kannel",
                bridge_username: Some("bench"),
                bridge_password: Some("bench"),
                kannel_smsc: None,
                dial_in: false,
            };
            admin::create_line(&h.db, setup).await?["line_id"].as_str().unwrap_or_default().to_string()
        }
    };
    // Each Kannel start has new ports: the line follows.
    h.db.write(async |conn| {
        sqlx::query("UPDATE lines SET bridge_url = $1 WHERE id = $2").bind(smsbox).bind(&line_id).execute(conn).await
    })
    .await?;

    let (mut accepted, started, ended) = sends_from(h, args, E164).await;
    accepted["scenario"] = json!("kannel-line accepted");

    // Then every accepted message's way to the fake SMSC and its report back.
    let deadline = Instant::now() + Duration::from_secs(120);
    let count = |sql: &'static str| {
        let db = h.db.clone();
        let line_id = line_id.clone();
        async move {
            db.write(async |conn| sqlx::query(sql).bind(&line_id).bind(started).bind(ended).fetch_one(conn).await)
                .await?
                .try_get::<i64, _>(0)
        }
    };
    while count(
        "SELECT COUNT(*) FROM messages WHERE line_id = $1 AND created_at >= $2 AND created_at <= $3 \
         AND COALESCE(sent_at, delivered_at) IS NULL AND status NOT IN ('failed', 'unknown')",
    )
    .await?
        > 0
        && Instant::now() < deadline
    {
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let sql = "SELECT created_at, COALESCE(sent_at, delivered_at) FROM messages WHERE line_id = $1 \
               AND created_at >= $2 AND created_at <= $3";
    let rows =
        h.db.write(async |conn| sqlx::query(sql).bind(&line_id).bind(started).bind(ended).fetch_all(conn).await)
            .await?;
    // Not taken by the fake SMSC by the deadline, failed or unknown: an error. smsbox calls back
    // its two reports at once: a message whose `delivered` came before its `sent` has no
    // sent_at, and its delivered_at is when it was known to be taken.
    let (samples, span) = reported_samples(&rows)?;
    let mut result = summary("kannel-line", samples, span, "messages");
    // What the errors are: the accepted messages never reported taken, by status.
    let mut not_sent = serde_json::Map::new();
    let sql = "SELECT status, COUNT(*) FROM messages WHERE line_id = $1 AND created_at >= $2 AND created_at <= $3 \
               AND COALESCE(sent_at, delivered_at) IS NULL GROUP BY status";
    let rows =
        h.db.write(async |conn| sqlx::query(sql).bind(&line_id).bind(started).bind(ended).fetch_all(conn).await)
            .await?;
    for row in rows {
        not_sent.insert(row.try_get::<String, _>(0)?, json!(row.try_get::<i64, _>(1)?));
    }
    result["not_sent"] = Value::Object(not_sent);
    result["accepted"] = accepted;
    result["measures"] = json!(
        "messages per second from msgline's first acceptance to the fake SMSC's last report of them \
         (sent_at, or delivered_at where that report came first), through smsbox's sendsms; latencies \
         from created_at to that report"
    );
    Ok(result)
}
