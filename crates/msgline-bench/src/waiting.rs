//! The `waiting` scenario: what messages waiting on a line's budget cost an idle server. A line of
//! its own gets a budget of one send a day; `--read-rows` messages (at most 100,000) are sent to
//! it through the API, the first goes and the rest wait; then the server's own CPU (user and
//! system time from /proc) is read over `--seconds` with nothing else to do, beside the same
//! reading taken before anything waited. The pacer sleeps until a message can go or expires, so
//! both readings should be the idle server's background (the line checker's probes, the workers'
//! timers).

use std::{
    sync::{
        Arc,
        atomic::{AtomicU64, Ordering},
    },
    time::{Duration, Instant},
};

use serde_json::{Value, json};
use sqlx::Row;

use msgline::admin;

use crate::{BenchArgs, Harness, client, recipient, report::process_ticks};

/// The most messages the scenario leaves waiting.
const MOST: i64 = 100_000;

pub(crate) async fn scenario(h: &Harness, args: &BenchArgs) -> anyhow::Result<Value> {
    let count = args.read_rows.clamp(1, MOST) as u64;
    let window = Duration::from_secs_f64(args.seconds.max(1.0));
    let e164 = "+12015550199";
    let setup = admin::LineSetup::msgline(e164, "dedicated", Some(&h.org_id), &h.bridge_url, None);
    let line = admin::create_line(&h.db, setup).await?;
    let line_id = line["line_id"].as_str().unwrap_or_default().to_string();
    let http = client(args.connections);
    let patched = http
        .patch(format!("{}/api/v1/messaging/lines/{line_id}", h.base))
        .bearer_auth(&h.keys[0])
        .json(&json!({"policy": {"max_per_day": 1}}))
        .send()
        .await?;
    anyhow::ensure!(patched.status().is_success(), "the line's policy was not set: {}", patched.status());

    let empty = idle_cpu(h, window).await;

    // Every message through the API, as a client would send them.
    let started = Instant::now();
    let counter = Arc::new(AtomicU64::new(0));
    let errors = Arc::new(AtomicU64::new(0));
    let mut tasks = tokio::task::JoinSet::new();
    for worker in 0..args.connections.max(1) {
        let (http, counter, errors) = (http.clone(), counter.clone(), errors.clone());
        let (url, key) = (format!("{}/api/v1/messaging/messages", h.base), h.keys[worker % h.keys.len()].clone());
        tasks.spawn(async move {
            loop {
                let n = counter.fetch_add(1, Ordering::Relaxed);
                if n >= count {
                    break;
                }
                let body = json!({"to": recipient(n), "from": e164, "body": format!("waiting {n}")});
                let sent = http.post(&url).bearer_auth(&key).json(&body).send().await;
                if !sent.is_ok_and(|r| r.status().as_u16() == 202) {
                    errors.fetch_add(1, Ordering::Relaxed);
                }
            }
        });
    }
    while tasks.join_next().await.is_some() {}
    let enqueue_seconds = started.elapsed().as_secs_f64();
    // Let the server finish what the sends started (the pacer's first look, checkpoints).
    tokio::time::sleep(Duration::from_secs(5)).await;
    let waiting = waiting_on(h, &line_id).await?;
    let busy = idle_cpu(h, window).await;
    let still = waiting_on(h, &line_id).await?;
    Ok(json!({
        "scenario": "waiting",
        "count": waiting,
        "errors": errors.load(Ordering::Relaxed),
        "per_second": (count as f64 / enqueue_seconds.max(1e-9)).round(),
        "waiting_after": still,
        "measured_seconds": window.as_secs_f64(),
        "server_cpu_percent_of_a_core": busy,
        "server_cpu_percent_of_a_core_before": empty,
    }))
}

/// The server's CPU over `window`, in percent of one core.
async fn idle_cpu(h: &Harness, window: Duration) -> Option<f64> {
    let pid = h.pid().to_string();
    let before = process_ticks(&pid)?;
    let at = Instant::now();
    tokio::time::sleep(window).await;
    let ticks = process_ticks(&pid)?.saturating_sub(before);
    // 100 ticks a second.
    Some((ticks as f64 / at.elapsed().as_secs_f64() * 100.0).round() / 100.0)
}

/// Messages of the line waiting for their turn.
async fn waiting_on(h: &Harness, line_id: &str) -> anyhow::Result<i64> {
    let sql = "SELECT COUNT(*) FROM messages WHERE line_id = $1 AND status = 'queued'";
    let row = h.db.write(async |conn| sqlx::query(sql).bind(line_id).fetch_one(conn).await).await?;
    Ok(row.try_get(0)?)
}
