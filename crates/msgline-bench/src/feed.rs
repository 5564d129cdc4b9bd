//! The `feed` scenario: what a client reading the event feed costs the send path. The
//! organisation turns its feed on; then `send`'s load runs four times, alternating without and
//! with a reader of `GET /feed/stream` beside it (the reader takes every event as it comes, as a
//! client would). Each run's rate is reported, with the events the reader got; `per_second` is
//! the median rate with a reader, and `reader_cost` how much lower it is than without one.

use std::sync::{
    Arc,
    atomic::{AtomicU64, Ordering},
};

use serde_json::{Value, json};

use crate::{BenchArgs, Harness, client, send::sends_from};

/// Reads the stream until aborted, counting its events.
async fn read_stream(url: String, key: String, events: Arc<AtomicU64>) {
    let Ok(mut response) =
        client(1).get(&url).bearer_auth(&key).timeout(std::time::Duration::from_secs(3600)).send().await
    else {
        return;
    };
    while let Ok(Some(chunk)) = response.chunk().await {
        let found = chunk.windows(4).filter(|w| w == b"\nid:" || w == b"\nid ").count()
            + usize::from(chunk.starts_with(b"id:"));
        events.fetch_add(found as u64, Ordering::Relaxed);
    }
}

fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    values.get(values.len() / 2).copied().unwrap_or(0.0)
}

pub(crate) async fn scenario(h: &Harness, args: &BenchArgs) -> anyhow::Result<Value> {
    let http = client(1);
    let on = http
        .patch(format!("{}/api/v1/messaging/settings", h.base))
        .bearer_auth(&h.keys[0])
        .json(&json!({"event_feed": true}))
        .send()
        .await?;
    anyhow::ensure!(on.status().is_success(), "the feed was not turned on: {}", on.status());
    let stream_url = format!("{}/api/v1/messaging/feed/stream", h.base);
    let (mut without, mut with, mut runs, mut count) = (Vec::new(), Vec::new(), Vec::new(), 0);
    for round in 0..4 {
        let reading = round % 2 == 1;
        let events = Arc::new(AtomicU64::new(0));
        let reader = reading.then(|| tokio::spawn(read_stream(stream_url.clone(), h.keys[0].clone(), events.clone())));
        let (result, _, _) = sends_from(h, args, &h.line_e164).await;
        // What the line's reports still add once the load stops, for the reader to take.
        if reading {
            tokio::time::sleep(std::time::Duration::from_secs(2)).await;
        }
        if let Some(reader) = reader {
            reader.abort();
        }
        let rate = result["per_second"].as_f64().unwrap_or(0.0);
        count += result["count"].as_u64().unwrap_or(0);
        match reading {
            true => with.push(rate),
            false => without.push(rate),
        }
        runs.push(json!({
            "reader": reading,
            "per_second": rate,
            "errors": result["errors"],
            "p99_ms": result["p99_ms"],
            "events_streamed": reading.then(|| events.load(Ordering::Relaxed)),
        }));
    }
    let (without, with) = (median(&mut without), median(&mut with));
    Ok(json!({
        "scenario": "feed",
        "unit": "messages",
        "count": count,
        "per_second": with,
        "per_second_without_reader": without,
        "reader_cost": if without > 0.0 { ((1.0 - with / without) * 1000.0).round() / 1000.0 } else { 0.0 },
        "runs": runs,
        "errors": runs.iter().map(|r| r["errors"].as_u64().unwrap_or(0)).sum::<u64>(),
    }))
}

/// The smoke run's check: every run with a reader streamed events.
pub(crate) fn check(result: &Value) -> anyhow::Result<()> {
    for run in result["runs"].as_array().into_iter().flatten().filter(|r| r["reader"] == true) {
        anyhow::ensure!(run["events_streamed"].as_u64().unwrap_or(0) > 0, "the feed's reader got no events: {run}");
    }
    Ok(())
}
