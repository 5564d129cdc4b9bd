//! The `retention` scenario: what the janitor's retention pass (`MSGLINE_RETENTION_DAYS`) does to
//! sends while it deletes. `--grown-rows` delivered and received messages with one event each
//! are stored over the past year (`msgline::seed_bench_grown`, as `grown` stores them), `send`
//! is measured, then the pass keeping one day starts on the server (`POST /bench/retention`: the
//! janitor's own pass, run now instead of at its next turn) and `send` is measured again while it
//! deletes; then the pass is waited for, and its time reported.

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::{BenchArgs, Harness, send};

pub(crate) async fn scenario(h: &Harness, args: &BenchArgs) -> anyhow::Result<Vec<Value>> {
    let mut results = Vec::new();
    // A first run makes the recipients' contacts and conversations.
    let _ = send::scenario_send(h, args).await;
    let conversations = (args.grown_rows / 100).max(1);
    eprintln!("storing {} messages over the past year ...", args.grown_rows);
    let grown = msgline::seed_bench_grown(&h.db, args.grown_rows, conversations).await?;

    let (mut before, _, _) = send::measured(h, args).await?;
    before["scenario"] = json!("retention-send-before");
    before["table_rows"] = json!(grown.messages);
    results.push(before);

    // The pass answers when it is done, which takes minutes for a million messages.
    let http = reqwest::Client::builder().timeout(Duration::from_secs(6 * 3600)).build()?;
    let url = format!("{}/bench/retention", h.base);
    let started = Instant::now();
    let pass = tokio::spawn(async move {
        let answer = http.post(&url).json(&json!({"days": 1})).send().await?.error_for_status()?;
        anyhow::Ok(answer.json::<Value>().await?)
    });
    let (mut during, _, _) = send::scenario_send(h, args).await;
    during["scenario"] = json!("retention-send-during");
    during["table_rows"] = json!(grown.messages);
    // Whether the pass was still deleting when the measurement ended: otherwise part of it ran
    // beside no deletes.
    during["purge_running_throughout"] = json!(!pass.is_finished());
    results.push(during);

    let purged = pass.await??;
    let seconds = purged["seconds"].as_f64().unwrap_or_else(|| started.elapsed().as_secs_f64());
    let messages = purged["messages"].as_u64().unwrap_or(0);
    results.push(json!({
        "scenario": "retention-purge",
        "unit": "messages",
        "count": messages,
        "errors": 0,
        "seconds": seconds,
        "per_second": messages as f64 / seconds.max(1e-9),
        "events": purged["events"],
        "rows": purged["rows"],
        "table_rows": grown.messages,
        "p50_ms": Value::Null, "p99_ms": Value::Null, "p999_ms": Value::Null,
    }));
    Ok(results)
}
