//! Prometheus metrics, served at `GET /metrics` on the main listener (see docs/operations.md,
//! "Monitoring"). Counters and histograms are recorded where things happen; the gauges that
//! describe the database (the outbox, the webhook backlog, the lines) are read from it when
//! the endpoint is scraped, so that every instance on one database reports the same figures
//! and nothing has to be kept in step. Labels never carry a customer's ids: routes are the
//! router's templates, and lines (a handful an operator configures) are the only ids.

use std::sync::OnceLock;

use metrics_exporter_prometheus::{Matcher, PrometheusBuilder, PrometheusHandle};

use crate::clock;

/// Latency buckets, in seconds: from a millisecond to the bridge's longest timeouts.
const LATENCY_BUCKETS: &[f64] = &[0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0];

/// Sends per batch call: from two to the most a bridge may say it takes.
const BATCH_BUCKETS: &[f64] = &[2.0, 5.0, 10.0, 25.0, 50.0, 100.0, 250.0, 1000.0];

static HANDLE: OnceLock<Option<PrometheusHandle>> = OnceLock::new();

/// Installs the process's recorder (once; a process that runs several servers, as the tests
/// do, shares it) and returns its handle, or `None` if another recorder was installed first.
pub fn handle() -> Option<&'static PrometheusHandle> {
    HANDLE
        .get_or_init(|| {
            let recorder = PrometheusBuilder::new()
                .set_buckets_for_metric(Matcher::Suffix("_seconds".into()), LATENCY_BUCKETS)
                .expect("the buckets are not empty")
                .set_buckets_for_metric(Matcher::Full("msgline_bridge_batch_sends".into()), BATCH_BUCKETS)
                .expect("the buckets are not empty")
                .build_recorder();
            let handle = recorder.handle();
            metrics::set_global_recorder(recorder).ok()?;
            describe();
            spawn_upkeep(handle.clone());
            Some(handle)
        })
        .as_ref()
}

/// How often histogram samples are folded into their buckets when nothing scrapes.
const UPKEEP_EVERY: std::time::Duration = std::time::Duration::from_secs(5);

/// A recorder made with `build_recorder` keeps every histogram sample until a scrape renders
/// it or its upkeep runs, and nothing runs the upkeep for it: a server nobody scraped grew by
/// about 55 MiB in a ten-minute soak (1.4 million sends). A thread of its own runs it, whatever
/// runtime the servers of this process use.
fn spawn_upkeep(handle: PrometheusHandle) {
    let spawned = std::thread::Builder::new().name("msgline-metrics-upkeep".into()).spawn(move || {
        loop {
            std::thread::sleep(UPKEEP_EVERY);
            handle.run_upkeep();
        }
    });
    if let Err(error) = spawned {
        tracing::warn!(%error, "could not start the metrics upkeep; histograms are folded only when scraped");
    }
}

fn describe() {
    use metrics::{Unit, describe_counter, describe_gauge, describe_histogram};
    describe_counter!("msgline_http_requests_total", "HTTP requests answered, by method, route template and status");
    describe_histogram!(
        "msgline_http_request_duration_seconds",
        Unit::Seconds,
        "Time to answer an HTTP request, by method and route template"
    );
    describe_counter!("msgline_messages_accepted_total", "Messages accepted for delivery (202), by channel and kind");
    describe_counter!("msgline_messages_received_total", "Inbound messages stored, by channel");
    describe_counter!("msgline_bridge_calls_total", "Sends to a line's bridge, by line and outcome");
    describe_histogram!(
        "msgline_bridge_call_duration_seconds",
        Unit::Seconds,
        "Time a line's bridge took to answer a send, by line"
    );
    describe_histogram!("msgline_bridge_batch_sends", "Sends carried by each batch call to a line, by line");
    describe_counter!(
        "msgline_status_moves_total",
        "Status moves recorded (the line's answer to a send, its reports), by the status moved to"
    );
    describe_counter!("msgline_webhook_attempts_total", "Webhook delivery attempts, by outcome");
    describe_counter!("msgline_rate_limited_total", "Requests refused by a rate limit (429), by policy");
    describe_counter!("msgline_agent_runs_total", "Hosted agent runs finished, by outcome");
    describe_counter!(
        "msgline_retention_deleted_total",
        "Rows past MSGLINE_RETENTION_DAYS deleted by the janitor: messages and events"
    );
    describe_gauge!(
        "msgline_outbox_messages",
        "Messages with delivery work left, by outbox state (pending, claimed, unknown)"
    );
    describe_gauge!(
        "msgline_outbox_oldest_age_seconds",
        Unit::Seconds,
        "Age of the oldest message with delivery work left"
    );
    describe_gauge!(
        "msgline_messages_unknown",
        "Messages whose outcome is unknown and that msgline is still asking their line about"
    );
    describe_gauge!(
        "msgline_webhook_backlog",
        "Webhook deliveries not yet made (pending or claimed), and events not yet fanned out"
    );
    describe_gauge!(
        "msgline_webhook_oldest_pending_age_seconds",
        Unit::Seconds,
        "Age of the oldest webhook delivery not yet made"
    );
    describe_gauge!(
        "msgline_line_online",
        "1 if the line's bridge answered its last capability check, else 0, by line"
    );
    describe_gauge!("msgline_line_health", "1 for the line's health now (active, paused, flagged, offline), else 0");
    describe_gauge!("msgline_line_waiting", "Messages waiting for their line's budget or health, by line");
    describe_gauge!("msgline_line_sends_day", "Sends the line was handed in the last 24 hours, by line");
}

/// What the database holds now, for the gauges a scrape sets before it renders.
#[derive(Debug, Default)]
pub struct Backlog {
    /// Messages with delivery work left, by outbox state (`pending`, `claimed`, `unknown`).
    pub outbox: Vec<(String, i64)>,
    pub oldest_outbox_at: Option<i64>,
    pub webhook_deliveries: i64,
    pub events_unfanned: i64,
    pub oldest_webhook_at: Option<i64>,
    /// Each line's gauges.
    pub lines: Vec<LineGauges>,
}

/// One line's gauges: whether its bridge answered its last check, its health, what waits for it
/// and its sends in the last 24 hours.
#[derive(Debug, Default, Clone)]
pub struct LineGauges {
    pub id: String,
    pub online: bool,
    pub health: String,
    pub waiting: i64,
    pub sends_day: i64,
}

/// The text a scrape gets: the gauges of `backlog` (read by the caller just before), then
/// everything recorded.
pub fn render(backlog: &Backlog) -> anyhow::Result<String> {
    let Some(handle) = handle() else { anyhow::bail!("another metrics recorder is installed in this process") };
    let now = clock::now_ms();
    for state_name in ["pending", "claimed", "unknown"] {
        let count = backlog.outbox.iter().find(|(s, _)| s == state_name).map_or(0, |(_, n)| *n) as f64;
        metrics::gauge!("msgline_outbox_messages", "state" => state_name).set(count);
        if state_name == "unknown" {
            metrics::gauge!("msgline_messages_unknown").set(count);
        }
    }
    let age = |at: Option<i64>| at.map_or(0.0, |at| (now - at).max(0) as f64 / 1000.0);
    metrics::gauge!("msgline_outbox_oldest_age_seconds").set(age(backlog.oldest_outbox_at));
    metrics::gauge!("msgline_webhook_backlog", "kind" => "deliveries").set(backlog.webhook_deliveries as f64);
    metrics::gauge!("msgline_webhook_backlog", "kind" => "events").set(backlog.events_unfanned as f64);
    metrics::gauge!("msgline_webhook_oldest_pending_age_seconds").set(age(backlog.oldest_webhook_at));
    for line in &backlog.lines {
        metrics::gauge!("msgline_line_online", "line" => line.id.clone()).set(if line.online { 1.0 } else { 0.0 });
        for health in ["active", "paused", "flagged", "offline"] {
            let now = if line.health == health { 1.0 } else { 0.0 };
            metrics::gauge!("msgline_line_health", "line" => line.id.clone(), "health" => health).set(now);
        }
        metrics::gauge!("msgline_line_waiting", "line" => line.id.clone()).set(line.waiting as f64);
        metrics::gauge!("msgline_line_sends_day", "line" => line.id.clone()).set(line.sends_day as f64);
    }
    Ok(handle.render())
}

/// An HTTP request answered. A method no route has (a client may send any token) is counted as
/// `other`, so that requests cannot add series without bound.
pub fn http_request(method: &axum::http::Method, route: &str, status: u16, seconds: f64) {
    let (requests, duration) = http_handles(method_label(method), route, status);
    requests.increment(1);
    duration.record(seconds);
}

fn method_label(method: &axum::http::Method) -> &'static str {
    use axum::http::Method;
    const KNOWN: [(Method, &str); 7] = [
        (Method::GET, "GET"),
        (Method::POST, "POST"),
        (Method::PUT, "PUT"),
        (Method::PATCH, "PATCH"),
        (Method::DELETE, "DELETE"),
        (Method::HEAD, "HEAD"),
        (Method::OPTIONS, "OPTIONS"),
    ];
    KNOWN.iter().find(|(known, _)| known == method).map_or("other", |(_, label)| label)
}

/// Per route template, the request counter and duration histogram of each method and status
/// seen, registered once: building the labels and finding them in the recorder on every
/// request hashed and compared each label every time.
type RouteHandles = Vec<(&'static str, u16, metrics::Counter, metrics::Histogram)>;

/// The request counter and duration histogram of a route, method and status: kept once the
/// recorder is installed (a handle made before records nowhere), registered each time before.
fn http_handles(method: &'static str, route: &str, status: u16) -> (metrics::Counter, metrics::Histogram) {
    static HANDLES: std::sync::LazyLock<std::sync::RwLock<std::collections::HashMap<String, RouteHandles>>> =
        std::sync::LazyLock::new(Default::default);
    let register = || {
        let route = route.to_string();
        (
            metrics::counter!("msgline_http_requests_total", "method" => method, "route" => route.clone(), "status" => status.to_string()),
            metrics::histogram!("msgline_http_request_duration_seconds", "method" => method, "route" => route),
        )
    };
    if HANDLE.get().is_none_or(Option::is_none) {
        return register();
    }
    let find = |handles: &RouteHandles| {
        handles.iter().find(|(m, s, ..)| *m == method && *s == status).map(|(.., c, h)| (c.clone(), h.clone()))
    };
    if let Some(found) = HANDLES.read().ok().and_then(|handles| handles.get(route).and_then(find)) {
        return found;
    }
    let (requests, duration) = register();
    if let Ok(mut handles) = HANDLES.write() {
        let of_route = handles.entry(route.to_string()).or_default();
        if find(of_route).is_none() {
            of_route.push((method, status, requests.clone(), duration.clone()));
        }
    }
    (requests, duration)
}

/// Messages or events deleted for being past the retention (`what`: `messages`, `events`).
pub fn retention_deleted(what: &'static str, count: u64) {
    metrics::counter!("msgline_retention_deleted_total", "what" => what).increment(count);
}

/// A message accepted for delivery.
pub fn message_accepted(channel: &'static str, kind: &'static str) {
    metrics::counter!("msgline_messages_accepted_total", "channel" => channel, "kind" => kind).increment(1);
}

/// An inbound message stored.
pub fn message_received(channel: &'static str) {
    metrics::counter!("msgline_messages_received_total", "channel" => channel).increment(1);
}

/// A send to a line's bridge and its outcome (`accepted`, `rejected`, `timeout`, `error`).
pub fn bridge_call(line: &str, outcome: &'static str, latency_ms: i64) {
    metrics::counter!("msgline_bridge_calls_total", "line" => line.to_string(), "outcome" => outcome).increment(1);
    metrics::histogram!("msgline_bridge_call_duration_seconds", "line" => line.to_string())
        .record(latency_ms.max(0) as f64 / 1000.0);
}

/// One batch call to a line (`POST /v1/messages/batch`) and how many sends it carried.
pub fn bridge_batch(line: &str, sends: usize) {
    metrics::histogram!("msgline_bridge_batch_sends", "line" => line.to_string()).record(sends as f64);
}

/// Messages moved to `status`, once committed.
pub fn status_moves(status: &'static str, count: u64) {
    if count > 0 {
        metrics::counter!("msgline_status_moves_total", "status" => status).increment(count);
    }
}

/// A webhook delivery attempt (`delivered`, `failed`, `retrying`).
pub fn webhook_attempt(outcome: &'static str) {
    metrics::counter!("msgline_webhook_attempts_total", "outcome" => outcome).increment(1);
}

/// A request refused by a rate limit.
pub fn rate_limited(policy: &'static str) {
    metrics::counter!("msgline_rate_limited_total", "policy" => policy).increment(1);
}

/// A hosted agent run finished.
pub fn agent_run(outcome: &'static str) {
    metrics::counter!("msgline_agent_runs_total", "outcome" => outcome).increment(1);
}
