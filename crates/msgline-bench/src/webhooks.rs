//! The webhook scenarios. `webhooks`: a send load with an endpoint subscribed to every event,
//! its events delivered to a local receiver that checks each signature; the rate over the whole
//! delivery, and the rate at which the backlog left when the sends stop drains alone. `lag`: sends
//! paced at a steady rate (1,000 a second unless `--rate`) with the same endpoint, and for each
//! event the time from its `created_at` (stamped as its transaction is built; it commits a few
//! milliseconds later) to its arrival at the receiver.

use std::{
    sync::{
        Arc, Mutex,
        atomic::{AtomicU64, Ordering},
    },
    time::{Duration, Instant},
};

use serde_json::{Value, json};
use sqlx::Row;

use super::{BenchArgs, Harness, client, percentile, recipient, send::scenario_send, storage};
use msgline::ids;

/// Deliveries the bench receiver got: with a valid signature, and without; when the first and
/// the last arrived (µs on the scenario's clock); how many arrived after `mark_us` (once set);
/// and, when asked, each event's lag in ms.
#[derive(Default)]
struct Received {
    good: AtomicU64,
    bad: AtomicU64,
    first_us: AtomicU64,
    last_us: AtomicU64,
    mark_us: AtomicU64,
    after_mark: AtomicU64,
    lags_ms: Option<Mutex<Vec<u64>>>,
}

/// A receiver that checks every delivery's signature (with the secret set once the endpoint is
/// registered) and counts what it got.
async fn receiver(
    secret: Arc<std::sync::RwLock<String>>,
    clock: Instant,
    lags: bool,
) -> anyhow::Result<(String, Arc<Received>)> {
    use axum::{body::Bytes, http::HeaderMap, routing::post};
    let received = Arc::new(Received { lags_ms: lags.then(Default::default), ..Received::default() });
    let counts = received.clone();
    let router = axum::Router::new().route(
        "/hook",
        post(move |headers: HeaderMap, body: Bytes| {
            let (counts, secret) = (counts.clone(), secret.clone());
            async move {
                let header =
                    |name: &str| headers.get(name).and_then(|v| v.to_str().ok()).unwrap_or_default().to_string();
                let timestamp = header("webhook-timestamp").parse::<i64>().unwrap_or_default();
                let secret = secret.read().expect("secret lock").clone();
                let expected = msgline::sign_webhook(&secret, &header("webhook-id"), timestamp, &body);
                if header("webhook-signature").split(' ').any(|s| s == expected) {
                    counts.good.fetch_add(1, Ordering::Relaxed);
                } else {
                    counts.bad.fetch_add(1, Ordering::Relaxed);
                }
                if let Some(lags) = &counts.lags_ms {
                    let now = msgline::clock::now_ms();
                    let created = serde_json::from_slice::<Value>(&body)
                        .ok()
                        .and_then(|event| event["created_at"].as_str().and_then(msgline::clock::parse_rfc3339));
                    if let Some(created) = created {
                        lags.lock().expect("lags lock").push((now - created).max(0) as u64);
                    }
                }
                let now = clock.elapsed().as_micros() as u64;
                let _ = counts.first_us.compare_exchange(0, now, Ordering::Relaxed, Ordering::Relaxed);
                counts.last_us.fetch_max(now, Ordering::Relaxed);
                let mark = counts.mark_us.load(Ordering::Relaxed);
                if mark > 0 && now > mark {
                    counts.after_mark.fetch_add(1, Ordering::Relaxed);
                }
                axum::http::StatusCode::NO_CONTENT
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let url = format!("http://{}/hook", listener.local_addr()?);
    tokio::spawn(async move {
        let _ = axum::serve(listener, router).await;
    });
    Ok((url, received))
}

/// An endpoint for every event at a new receiver: its id and what the receiver gets.
async fn subscribe(h: &Harness, clock: Instant, lags: bool) -> anyhow::Result<(String, Arc<Received>)> {
    let secret = Arc::new(std::sync::RwLock::new(String::new()));
    let (url, received) = receiver(secret.clone(), clock, lags).await?;
    let registration: Value = client(1)
        .post(format!("{}/api/v1/messaging/webhooks", h.base))
        .bearer_auth(&h.keys[0])
        .json(&json!({"url": url, "events": ["*"]}))
        .send()
        .await?
        .json()
        .await?;
    let key = registration["secret"].as_str().ok_or_else(|| anyhow::anyhow!("registration failed: {registration}"))?;
    *secret.write().expect("secret lock") = key.to_string();
    Ok((registration["id"].as_str().unwrap_or_default().to_string(), received))
}

/// Removes the scenario's endpoint, so that later scenarios write no events for it.
async fn unsubscribe(h: &Harness, id: &str) -> anyhow::Result<()> {
    let answer =
        client(1).delete(format!("{}/api/v1/messaging/webhooks/{id}", h.base)).bearer_auth(&h.keys[0]).send().await?;
    anyhow::ensure!(answer.status().is_success(), "removing the endpoint answered {}", answer.status());
    Ok(())
}

/// Events written since `since` (ms).
async fn events_since(h: &Harness, since: i64) -> anyhow::Result<u64> {
    let count: i64 =
        h.db.write(async |conn| {
            sqlx::query("SELECT COUNT(*) FROM events WHERE created_at >= $1").bind(since).fetch_one(conn).await
        })
        .await?
        .try_get(0)?;
    Ok(count as u64)
}

/// Waits (up to two minutes) until the receiver has every event written since `since`; returns
/// how many were written.
async fn all_delivered(h: &Harness, since: i64, received: &Received) -> anyhow::Result<u64> {
    let deadline = Instant::now() + Duration::from_secs(120);
    let mut expected = 0;
    while Instant::now() < deadline {
        expected = events_since(h, since).await?;
        let got = received.good.load(Ordering::Relaxed) + received.bad.load(Ordering::Relaxed);
        if got >= expected && expected > 0 {
            tokio::time::sleep(Duration::from_millis(300)).await;
            if events_since(h, since).await? == expected {
                break;
            }
        }
        // Counting the events is a scan of the run's events: asked seldom, so that the count
        // takes little from the server it measures.
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
    Ok(expected)
}

/// Events delivered per second to a local receiver that verifies each signature. A send load
/// produces the events (queued, submitted, sent, delivered: four per message); `per_second` is
/// counted from the first delivery to the last, once every event is delivered, and
/// `drain_per_second` over the deliveries that arrived after the sends stopped: the backlog
/// draining alone. With what a message stores and writes when an endpoint takes its events.
pub(crate) async fn scenario_webhooks(h: &Harness, args: &BenchArgs) -> anyhow::Result<Value> {
    // Read before the endpoint exists: what earlier scenarios still report while the counts
    // settle writes no event for it.
    let (bytes_before, writes_before) = (storage::table_bytes(&h.db).await?, storage::writes_settled(&h.db).await);
    let clock = Instant::now();
    let (id, received) = subscribe(h, clock, false).await?;
    let since = msgline::clock::now_ms();
    let (sends, _, _) = scenario_send(h, args).await;
    let stopped_us = clock.elapsed().as_micros() as u64;
    received.mark_us.store(stopped_us, Ordering::Relaxed);
    let expected = all_delivered(h, since, &received).await?;
    let good = received.good.load(Ordering::Relaxed);
    let bad = received.bad.load(Ordering::Relaxed);
    let last = received.last_us.load(Ordering::Relaxed);
    let span = last.saturating_sub(received.first_us.load(Ordering::Relaxed));
    let seconds = (span as f64 / 1e6).max(1e-3);
    let drained = received.after_mark.load(Ordering::Relaxed);
    let drain_seconds = last.saturating_sub(stopped_us) as f64 / 1e6;
    let messages = sends["count"].as_u64().unwrap_or(0);
    tokio::time::sleep(storage::settle_time(&h.db)).await;
    let stored = storage::bytes_per_message(&bytes_before, &storage::table_bytes(&h.db).await?, messages);
    let writes = match (writes_before, storage::writes(&h.db).await) {
        (Some(before), Some(after)) => storage::writes_per_message(&before, &after, messages),
        _ => Value::Null,
    };
    unsubscribe(h, &id).await?;
    Ok(json!({
        "scenario": "webhooks",
        "unit": "events",
        "count": good,
        "errors": bad + expected.saturating_sub(good + bad),
        "expected": expected,
        "seconds": seconds,
        "per_second": good as f64 / seconds,
        "drained": drained,
        "drain_seconds": drain_seconds,
        "drain_per_second": (drain_seconds > 0.0).then(|| drained as f64 / drain_seconds),
        "messages": messages,
        "sends_per_second": sends["per_second"],
        "stored_bytes_per_message": stored,
        "row_writes_per_message": writes,
        "p50_ms": Value::Null, "p99_ms": Value::Null, "p999_ms": Value::Null,
    }))
}

/// Sends paced at `--rate` a second (1,000 unless given) for the scenario's time, `--connections`
/// at a time, with an endpoint taking every event: per event, ms from its `created_at` to its
/// arrival; `count` is the events that arrived. Request n is due at n / rate s; the sends that
/// could not keep that pace show as a `sends_per_second` below the rate.
pub(crate) async fn scenario_lag(h: &Harness, args: &BenchArgs) -> anyhow::Result<Value> {
    let rate = args.rate.unwrap_or(1000.0);
    let clock = Instant::now();
    let (id, received) = subscribe(h, clock, true).await?;
    let since = msgline::clock::now_ms();
    let http = client(args.connections);
    let url = format!("{}/api/v1/messaging/messages", h.base);
    let run = ids::new_id("lag");
    let total = (rate * args.seconds).floor() as u64;
    let (counter, failed) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
    let started = Instant::now();
    let mut tasks = tokio::task::JoinSet::new();
    for worker in 0..args.connections {
        let (http, url, run, counter, failed) =
            (http.clone(), url.clone(), run.clone(), counter.clone(), failed.clone());
        let (key, from) = (h.keys[worker % h.keys.len()].clone(), h.line_e164.clone());
        tasks.spawn(async move {
            loop {
                let n = counter.fetch_add(1, Ordering::Relaxed);
                if n >= total {
                    break;
                }
                tokio::time::sleep_until((started + Duration::from_secs_f64(n as f64 / rate)).into()).await;
                let answer = http
                    .post(&url)
                    .bearer_auth(&key)
                    .header("Idempotency-Key", format!("{run}-{n}"))
                    .json(&json!({"to": recipient(n), "from": from, "body": format!("lag message {n}")}))
                    .send()
                    .await;
                if !matches!(answer, Ok(response) if response.status().is_success()) {
                    failed.fetch_add(1, Ordering::Relaxed);
                }
            }
        });
    }
    while tasks.join_next().await.is_some() {}
    let sending = started.elapsed().as_secs_f64();
    let expected = all_delivered(h, since, &received).await?;
    unsubscribe(h, &id).await?;
    let mut lags = std::mem::take(&mut *received.lags_ms.as_ref().expect("lags kept").lock().expect("lags lock"));
    lags.sort_unstable();
    let micros: Vec<u64> = lags.iter().map(|ms| ms * 1000).collect();
    let failed = failed.load(Ordering::Relaxed);
    Ok(json!({
        "scenario": "lag",
        "unit": "events",
        "count": lags.len(),
        "errors": failed + received.bad.load(Ordering::Relaxed) + expected.saturating_sub(lags.len() as u64),
        "expected": expected,
        "target_sends_per_second": rate,
        "sends_per_second": (total - failed) as f64 / sending.max(1e-9),
        "seconds": sending,
        "per_second": lags.len() as f64 / sending.max(1e-9),
        "p50_ms": percentile(&micros, 50.0),
        "p99_ms": percentile(&micros, 99.0),
        "p999_ms": percentile(&micros, 99.9),
        "max_ms": lags.last().copied().unwrap_or(0),
    }))
}
