//! The `grown` scenario: what a database that has been used for a year does to the figures a
//! user feels. `send` on the database as it is (empty but for earlier scenarios, after a first
//! `send` that makes its recipients' contacts and conversations), then
//! `--grown-rows` messages with one event each over a hundredth as many conversations are
//! stored (`msgline::seed_bench_grown`), then `send` again, the API's reads of a conversation's
//! messages and of the conversations, and the console's list and thread.

use std::time::Instant;

use serde_json::{Value, json};

use crate::{BenchArgs, Harness, client, console, drive, send, storage, summary};

pub(crate) async fn scenario(h: &Harness, args: &BenchArgs) -> anyhow::Result<Vec<Value>> {
    let mut results = Vec::new();
    // A first run makes the recipients' contacts and conversations; the measured ones before
    // and after the seeding both find them made.
    let _ = send::scenario_send(h, args).await;
    let (mut empty, _, _) = send::measured(h, args).await?;
    empty["scenario"] = json!("grown-send-empty");
    let empty_rate = empty["per_second"].as_f64().unwrap_or(0.0);
    results.push(empty);

    let started = Instant::now();
    let conversations = (args.grown_rows / 100).max(1);
    eprintln!("storing {} messages over {conversations} conversations ...", args.grown_rows);
    let grown = msgline::seed_bench_grown(&h.db, args.grown_rows, conversations).await?;
    let seconds = started.elapsed().as_secs_f64();
    let bytes = storage::table_bytes(&h.db).await?;
    let stored: i64 = bytes.values().sum();
    let messages = grown.messages.max(1);
    results.push(json!({
        "scenario": "grown-seed",
        "unit": "messages",
        "count": grown.messages,
        "errors": 0,
        "seconds": seconds,
        "per_second": grown.messages as f64 / seconds.max(1e-9),
        "events": grown.events,
        "conversations": grown.conversations,
        "stored_bytes": stored,
        "stored_bytes_per_message": stored / messages,
        "table_bytes_per_message": bytes.iter().map(|(t, b)| (t.clone(), json!(b / messages))).collect::<serde_json::Map<_, _>>(),
        "p50_ms": Value::Null, "p99_ms": Value::Null, "p999_ms": Value::Null,
    }));

    let (mut after, _, _) = send::measured(h, args).await?;
    after["scenario"] = json!("grown-send");
    after["table_rows"] = json!(args.grown_rows);
    if empty_rate > 0.0 {
        after["to_empty"] = json!((after["per_second"].as_f64().unwrap_or(0.0) / empty_rate * 100.0).round() / 100.0);
    }
    results.push(after);

    for (name, path) in [
        ("grown-read", format!("/api/v1/messaging/messages?conversation_id={}&limit=50", grown.conversation_id)),
        ("grown-conversations", "/api/v1/messaging/conversations?limit=50".to_string()),
    ] {
        let http = client(args.connections);
        let url = format!("{}{path}", h.base);
        let keys = h.keys.clone();
        let (samples, elapsed) = drive(args.connections, args.seconds, move |worker, _| {
            http.get(&url).bearer_auth(&keys[worker % keys.len()])
        })
        .await;
        let mut result = summary(name, samples, elapsed, "requests");
        result["table_rows"] = json!(args.grown_rows);
        results.push(result);
    }
    results.extend(console::scenario(h, args, &grown.conversation_id, "grown-console").await?);
    Ok(results)
}
