//! `GET /metrics`: Prometheus's text format, moving with what the server does.

use serde_json::json;

use crate::{
    helpers::{TestApp, spawn_app_with},
    simline::LineSpec,
};

/// The sum of the samples of `name` whose labels include every one of `labels`.
pub(crate) fn value(text: &str, name: &str, labels: &[(&str, &str)]) -> Option<f64> {
    let mut found = None;
    for line in text.lines().filter(|l| !l.starts_with('#') && !l.is_empty()) {
        let (series, sample) = line.rsplit_once(' ').expect("a sample has a value");
        let (series_name, series_labels) = match series.split_once('{') {
            Some((n, rest)) => (n, rest.trim_end_matches('}')),
            None => (series, ""),
        };
        if series_name != name || !labels.iter().all(|(k, v)| series_labels.contains(&format!("{k}=\"{v}\""))) {
            continue;
        }
        *found.get_or_insert(0.0) += sample.parse::<f64>().expect("a number");
    }
    found
}

async fn scrape(app: &TestApp, token: Option<&str>) -> reqwest::Response {
    let mut request = app.client.get(format!("http://127.0.0.1:{}/metrics", app.port));
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    request.send().await.expect("the metrics answer")
}

pub(crate) async fn metrics_text(app: &TestApp) -> String {
    let response = scrape(app, Some("scrape-token")).await;
    assert_eq!(response.status(), 200);
    let kind = response.headers()["content-type"].to_str().unwrap().to_string();
    assert!(kind.starts_with("text/plain"), "{kind}");
    response.text().await.expect("text")
}

#[tokio::test]
async fn metrics_move_with_sends_deliveries_failures_refusals_and_replies_and_carry_no_customer_ids() {
    let app = spawn_app_with(|c| {
        c.send_rate_limit_per_minute = 3;
        c.metrics_token = Some("scrape-token".into());
    })
    .await;
    // The token is required when one is set.
    assert_eq!(scrape(&app, None).await.status(), 401);
    assert_eq!(scrape(&app, Some("wrong")).await.status(), 401);

    let line = app.default_line().await;
    let other = app.create_org("Other").await;
    let refusing = app
        .sim_line(LineSpec { e164: "+12015550111", org: Some(&other), sim_args: &["--mode", "reject"], start: true })
        .await;
    let before = metrics_text(&app).await;
    let count = |text: &str, name: &str, labels: &[(&str, &str)]| value(text, name, labels).unwrap_or(0.0);

    // One send delivered, one refused by its line, and one send too many.
    let sent = app.post("/messages", &app.org.key, json!({"to": "+12015550123", "body": "Hello"})).await.expect(202);
    let delivered_id = sent["message"]["id"].as_str().unwrap().to_string();
    app.wait_for_message(&app.org.key, &delivered_id, "delivered", |m| m["status"] == "delivered").await;
    let refused = app.post("/messages", &other.key, json!({"to": "+12015550124", "body": "Hello"})).await.expect(202);
    let failed_id = refused["message"]["id"].as_str().unwrap().to_string();
    app.wait_for_message(&other.key, &failed_id, "failed", |m| m["status"] == "failed").await;
    for n in 0..3 {
        let answer =
            app.post("/messages", &app.org.key, json!({"to": "+12015550125", "body": format!("more {n}")})).await;
        if answer.status.as_u16() == 429 {
            break;
        }
    }

    // And a reply from the phone (the simulator answers once msgline has the callback).
    line.inbound("+12015550123", "Thanks!").await;

    let after = metrics_text(&app).await;
    let grew = |name: &str, labels: &[(&str, &str)]| count(&after, name, labels) - count(&before, name, labels);
    assert!(grew("msgline_messages_accepted_total", &[("kind", "text")]) >= 2.0, "{after}");
    assert!(grew("msgline_bridge_calls_total", &[("line", &line.line_id), ("outcome", "accepted")]) >= 1.0, "{after}");
    assert_eq!(grew("msgline_bridge_calls_total", &[("line", &refusing.line_id), ("outcome", "rejected")]), 1.0);
    assert!(grew("msgline_bridge_call_duration_seconds_count", &[("line", &line.line_id)]) >= 1.0);
    assert!(grew("msgline_status_moves_total", &[("status", "delivered")]) >= 1.0, "{after}");
    assert!(grew("msgline_status_moves_total", &[("status", "failed")]) >= 1.0, "{after}");
    assert_eq!(grew("msgline_messages_received_total", &[("channel", "imessage")]), 1.0, "{after}");
    let sends = [("method", "POST"), ("route", "/api/v1/messaging/messages"), ("status", "202")];
    assert!(grew("msgline_http_requests_total", &sends) >= 2.0, "{after}");
    let sends_timed = [("method", "POST"), ("route", "/api/v1/messaging/messages")];
    assert!(grew("msgline_http_request_duration_seconds_count", &sends_timed) >= 2.0);
    assert!(value(&after, "msgline_http_request_duration_seconds_bucket", &[("le", "0.005")]).is_some());
    assert!(grew("msgline_rate_limited_total", &[("policy", "send")]) >= 1.0, "{after}");
    // What the database holds, read at the scrape.
    assert!(value(&after, "msgline_outbox_messages", &[("state", "pending")]).is_some());
    assert!(value(&after, "msgline_messages_unknown", &[]).is_some());
    assert!(value(&after, "msgline_webhook_backlog", &[("kind", "deliveries")]).is_some());
    assert!(value(&after, "msgline_line_online", &[("line", &refusing.line_id)]).is_some());
    // Routes are templates: no message id, contact or organisation in any label.
    for id in [&delivered_id, &failed_id, &app.org.id, &other.id] {
        assert!(!after.contains(id.as_str()), "{id} appears in the metrics");
    }
}

/// A method no route has is counted as `other`: made-up methods cannot add series without bound.
#[tokio::test]
async fn requests_with_made_up_methods_are_counted_under_one_label() {
    let app = spawn_app_with(|c| c.metrics_token = Some("scrape-token".into())).await;
    let before = metrics_text(&app).await;
    for method in ["BREW", "WHEN1", "WHEN2"] {
        let method = reqwest::Method::from_bytes(method.as_bytes()).unwrap();
        let answer = app.client.request(method, app.url("/messages")).send().await.unwrap();
        assert!(answer.status().is_client_error(), "{}", answer.status());
    }
    let after = metrics_text(&app).await;
    let other = [("method", "other")];
    let grew = value(&after, "msgline_http_requests_total", &other).unwrap_or(0.0)
        - value(&before, "msgline_http_requests_total", &other).unwrap_or(0.0);
    assert_eq!(grew, 3.0, "{after}");
    for method in ["BREW", "WHEN1", "WHEN2"] {
        assert!(!after.contains(method), "{method} appears in the metrics");
    }
}
