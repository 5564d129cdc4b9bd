//! Rate limits: GCRA per organisation and caller (API key), the IETF RateLimit headers, 429s.

use std::{process::Stdio, time::Instant};

use serde_json::Value;

use crate::helpers::{
    BASE, Resp, TestDb, authenticated_routes, cli_json, eventually, run_cli, spawn_app, spawn_app_with,
};

/// Asserts a 429 as the contract has it: body and `Retry-After` agree, at least one second.
#[track_caller]
fn assert_rate_limited(response: Resp) -> u64 {
    let header: u64 = response.header("retry-after").expect("a 429 has Retry-After").parse().expect("whole seconds");
    let body = response.expect_error(429, "rate_limited", None);
    let retry_after = body["retry_after"].as_u64().expect("retry_after is a whole number");
    assert!(retry_after >= 1, "{body}");
    assert_eq!(retry_after, header, "body and header agree: {body}");
    retry_after
}

#[tokio::test]
async fn the_request_past_the_quota_is_429_while_another_key_of_the_organisation_goes_on() {
    let app = spawn_app().await;
    let busy = app.create_key(&app.org, &["messaging_read"], None).await;
    let other = app.create_key(&app.org, &["messaging_read"], None).await;

    let started = Instant::now();
    let mut passed = 0u128;
    let limited = loop {
        let response = app.get("/lines", &busy).await;
        if response.status == 429 {
            break response;
        }
        assert_eq!(response.status, 200, "{}", response.body);
        passed += 1;
        assert!(passed <= 300, "a caller was never limited");
    };
    // The quota is a burst of 100 that refills one request every 600 ms: the 101st request is
    // refused unless the run was so slow that the bucket refilled on the way.
    let refilled = started.elapsed().as_millis() / 600;
    assert!((100..=100 + refilled).contains(&passed), "{passed} requests passed, {refilled} refilled");
    let retry_after = assert_rate_limited(limited);
    assert!(retry_after <= 60, "{retry_after}");

    // Another caller of the same organisation has its own quota.
    assert_eq!(app.get("/lines", &other).await.expect(200)["data"], serde_json::json!([]));
    app.get("/lines", &app.org.key).await.expect(200);
}

#[tokio::test]
async fn responses_carry_the_ratelimit_headers() {
    let app = spawn_app().await;
    let key = app.create_key(&app.org, &["messaging_read"], None).await;
    let first = app.get("/lines", &key).await;
    assert_eq!(first.header("ratelimit-policy"), Some(r#""global";q=100;w=60"#));
    assert_eq!(first.header("ratelimit"), Some(r#""global";r=99;t=1"#));
    first.expect(200);

    // Errors past authentication carry them too, and count.
    let missing = app.get("/contacts/ct_unknown", &key).await;
    assert_eq!(missing.header("ratelimit-policy"), Some(r#""global";q=100;w=60"#));
    let state = missing.header("ratelimit").expect("RateLimit header").to_string();
    let remaining: u32 = state.split(";r=").nth(1).and_then(|r| r.split(';').next()).unwrap().parse().unwrap();
    assert!(remaining <= 98, "{state}");
    missing.expect_error(404, "not_found", None);
}

#[tokio::test]
async fn every_authenticated_route_counts_against_the_limit() {
    let app = spawn_app_with(|config| config.rate_limit_per_minute = 1).await;
    assert_eq!(app.config.rate_limit_per_minute, 1);
    for (method, path, _, body) in authenticated_routes() {
        let key = app.create_key(&app.org, &["messaging_keys", "messaging_read", "messaging_contacts"], None).await;
        let first = app.request(method.clone(), path, Some(&key), body.clone()).await;
        assert_ne!(first.status, 429, "{method} {path}: {}", first.body);
        let second = app.request(method.clone(), path, Some(&key), body).await;
        assert_eq!(second.status, 429, "{method} {path}: {}", second.body);
        let retry_after = assert_rate_limited(second);
        // One request a minute: the next one is most of a minute away.
        assert!((30..=60).contains(&retry_after), "{method} {path}: {retry_after}");
    }
}

#[tokio::test]
async fn requests_without_a_valid_key_are_refused_before_they_are_counted() {
    let app = spawn_app_with(|config| config.rate_limit_per_minute = 1).await;
    for _ in 0..3 {
        app.request(reqwest::Method::GET, "/lines", None, None).await.expect_error(401, "unauthorized", None);
    }
    app.get("/lines", &app.org.key).await.expect(200);
}

#[tokio::test]
async fn limits_follow_the_env_settings() {
    let db = TestDb::new().await;
    let org = cli_json(&run_cli(db.url(), &["admin", "org", "create", "--name", "Env Org"]).await);
    let key = org["api_key"].as_str().unwrap();

    let address = format!("127.0.0.1:{}", crate::simline::free_port());
    let mut server = tokio::process::Command::new(env!("CARGO_BIN_EXE_msgline"))
        .arg("serve")
        .env("MSGLINE_LISTEN", &address)
        .env("MSGLINE_DATABASE_URL", db.url())
        .env("MSGLINE_RATE_LIMIT_PER_MINUTE", "5")
        .env("MSGLINE_LOG", "warn")
        .env_remove("MSGLINE_CONFIG")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("msgline serve starts");

    let client = reqwest::Client::new();
    let base = format!("http://{address}");
    eventually(60, "msgline serve to answer /healthz", || async {
        let response = client.get(format!("{base}/healthz")).send().await.ok()?;
        (response.status() == 200).then_some(())
    })
    .await;

    let lines = format!("{base}{BASE}/lines");
    for n in 1..=5 {
        let response = client.get(&lines).bearer_auth(key).send().await.unwrap();
        assert_eq!(response.status(), 200, "request {n}");
        assert_eq!(response.headers()["ratelimit-policy"], r#""global";q=5;w=60"#);
    }
    let response = client.get(&lines).bearer_auth(key).send().await.unwrap();
    let headers = response.headers().clone();
    let status = response.status();
    let body: Value = response.json().await.unwrap();
    let retry_after = assert_rate_limited(Resp { status, body, headers });
    assert!((2..=12).contains(&retry_after), "5 a minute refill one every 12 s: {retry_after}");

    server.kill().await.expect("msgline serve stops");
}
