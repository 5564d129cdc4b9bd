//! Several `msgline serve` processes on one PostgreSQL behave as one: rate limits shared through
//! Redis, a revoked key refused everywhere within a second, a `kill -9` of one instance that
//! loses nothing, and webhooks delivered once, not once per instance. These need a database
//! that several processes share, so they run in the PostgreSQL pass of `scripts/test` (Redis on
//! 127.0.0.1:6379, or `MSGLINE_TEST_REDIS_URL`). The Redis fallback is tested on both engines.

use std::{
    collections::{HashMap, HashSet},
    process::Stdio,
    sync::Arc,
    time::{Duration, Instant},
};

use serde_json::{Value, json};
use tokio::{process::Child, sync::Mutex};

use crate::{
    crash::send_numbered,
    helpers::{
        ProcessLine, TestDb, api, cli_value, eventually, json_answer, process_line, serve_process, serve_process_with,
        three, use_postgres,
    },
    receiver::Receiver,
    simline::free_port,
};

fn redis_url() -> String {
    std::env::var("MSGLINE_TEST_REDIS_URL").unwrap_or_else(|_| "redis://127.0.0.1:6379".into())
}

#[tokio::test]
async fn the_13th_request_in_a_minute_is_refused_by_whichever_of_three_instances_gets_it() {
    if !use_postgres() {
        return; // several instances need a shared server database: the PostgreSQL pass runs this
    }
    let db = TestDb::new_postgres().await;
    let url = db.url().to_string();
    let org = cli_value(&url, &["admin", "org", "create", "--name", "Limits"]).await;
    let key = org["api_key"].as_str().unwrap().to_string();
    let ports = [free_port(), free_port(), free_port()];
    let redis = redis_url();
    let env = [
        ("MSGLINE_REDIS_URL", redis.as_str()),
        ("MSGLINE_RATE_LIMIT_PER_MINUTE", "12"),
        ("MSGLINE_SEND_RATE_LIMIT_PER_MINUTE", "60"),
    ];
    // 12 a minute: a request's allowance comes back after 5 s, far longer than the 12 requests
    // and the 3 refused take. At 100 a minute it came back every 0.6 s, and a run slowed by the
    // rest of the suite (2.8 s for the test) saw a count that had not fallen.
    let _servers = three(&url, ports, &env).await;
    let client = reqwest::Client::new();
    let mut last_remaining = 12;
    for i in 0..12 {
        let answer = client.get(api(ports[i % 3], "/lines")).bearer_auth(&key).send().await.unwrap();
        assert_eq!(answer.status(), 200, "request {} on instance {}", i + 1, i % 3 + 1);
        let state = answer.headers()["ratelimit"].to_str().unwrap().to_string();
        let remaining: u32 = state.split(";r=").nth(1).unwrap().split(';').next().unwrap().parse().unwrap();
        assert!(remaining < last_remaining, "the count is shared: {state} after {last_remaining}");
        last_remaining = remaining;
    }
    for port in ports {
        let answer = client.get(api(port, "/lines")).bearer_auth(&key).send().await.unwrap();
        assert_eq!(answer.status(), 429, "the 13th on port {port}");
        let retry_after: u64 = answer.headers()["retry-after"].to_str().unwrap().parse().unwrap();
        let body: Value = answer.json().await.unwrap();
        assert_eq!(body["error"], "rate_limited");
        assert_eq!(body["retry_after"], retry_after);
        assert!((1..=60).contains(&retry_after), "{retry_after}");
    }
}

#[tokio::test]
async fn a_key_revoked_or_rotated_on_one_instance_is_refused_by_the_others_within_a_second() {
    if !use_postgres() {
        return; // several instances need a shared server database: the PostgreSQL pass runs this
    }
    let db = TestDb::new_postgres().await;
    let url = db.url().to_string();
    let org = cli_value(&url, &["admin", "org", "create", "--name", "Revoke"]).await;
    let (org_id, admin_key) = (org["org_id"].as_str().unwrap(), org["api_key"].as_str().unwrap().to_string());
    let ports = [free_port(), free_port(), free_port()];
    // A long key cache: only the announcement can make the others refuse within a second. No
    // Redis: the first instance warns that its rate limits are its own.
    let env = [("MSGLINE_KEY_CACHE_SECONDS", "300")];
    let json_log = [env[0], ("MSGLINE_LOG_FORMAT", "json")];
    let mut first = serve_process_with(&url, ports[0], &json_log, Stdio::piped()).await;
    let _others = [serve_process(&url, ports[1], &env).await, serve_process(&url, ports[2], &env).await];
    let client = reqwest::Client::new();

    for (action, path_end) in [("revoke", ""), ("rotate", "/rotate")] {
        let made = cli_value(&url, &["admin", "key", "create", "--org", org_id, "--scopes", "messaging_read"]).await;
        let (key_id, key) = (made["key_id"].as_str().unwrap(), made["api_key"].as_str().unwrap());
        // Cached on instance 3 first.
        for _ in 0..2 {
            let answer = client.get(api(ports[2], "/lines")).bearer_auth(key).send().await.unwrap();
            assert_eq!(answer.status(), 200);
        }
        let request = match action {
            "revoke" => client.delete(api(ports[0], &format!("/keys/{key_id}{path_end}"))),
            _ => client.post(api(ports[0], &format!("/keys/{key_id}{path_end}"))).json(&json!({"grace_seconds": 0})),
        };
        let answer = request.bearer_auth(&admin_key).send().await.unwrap();
        assert!(answer.status().is_success(), "{action}: {}", answer.status());
        let done = Instant::now();
        loop {
            let status = client.get(api(ports[2], "/lines")).bearer_auth(key).send().await.unwrap().status();
            if status == 401 {
                break;
            }
            assert!(done.elapsed() < Duration::from_secs(1), "instance 3 still takes the {action}d key");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let status = client.get(api(ports[1], "/lines")).bearer_auth(key).send().await.unwrap().status();
        assert_eq!(status, 401, "instance 2 refuses the {action}d key");
    }

    use tokio::io::AsyncBufReadExt;
    let mut log = tokio::io::BufReader::new(first.stderr.take().unwrap()).lines();
    let warning = tokio::time::timeout(Duration::from_secs(20), async {
        while let Some(line) = log.next_line().await.unwrap() {
            let Ok(entry) = serde_json::from_str::<Value>(&line) else { continue };
            if entry.to_string().contains("several msgline instances share this database") {
                return entry;
            }
        }
        panic!("the log ended without the warning");
    })
    .await
    .expect("an instance without Redis warns that it is not alone");
    assert_eq!(warning["fields"]["instances"], 3, "{warning}");
}

#[tokio::test]
async fn a_send_load_over_three_instances_with_one_killed_loses_nothing_and_sends_nothing_twice() {
    if !use_postgres() {
        return; // several instances need a shared server database: the PostgreSQL pass runs this
    }
    const TOTAL: usize = 300;
    let db = TestDb::new_postgres().await;
    let url = db.url().to_string();
    // The line reports to instance 1; instance 2 is the one killed.
    let ProcessLine { key, port, sim_port, sim: _sim, .. } = process_line(&url, "Three").await;
    let ports = [port, free_port(), free_port()];
    let redis = redis_url();
    let env = [("MSGLINE_BRIDGE_TIMEOUT_MS", "1000"), ("MSGLINE_REDIS_URL", redis.as_str())];
    let mut servers = three(&url, ports, &env).await;
    let client = reqwest::Client::builder().timeout(Duration::from_secs(30)).build().unwrap();
    let accepted = Arc::new(Mutex::new(HashSet::<String>::new()));
    // Send `i` to the instance on `port`.
    let send = {
        let (client, key) = (client.clone(), key.clone());
        move |port: u16, i: usize| {
            let (client, key) = (client.clone(), key.clone());
            async move { send_numbered(&client, &api(port, "/messages"), &key, "three", i).await }
        }
    };
    // Round-robin; a send the killed instance did not answer goes to instance 1 with the same
    // idempotency key.
    let sending = tokio::spawn({
        let (send, accepted) = (send.clone(), accepted.clone());
        async move {
            use futures_util::StreamExt;
            futures_util::stream::iter(0..TOTAL)
                .for_each_concurrent(12, |i| {
                    let (send, accepted) = (send.clone(), accepted.clone());
                    async move {
                        let id = match send(ports[i % 3], i).await {
                            Some(id) => Some(id),
                            None => send(ports[0], i).await,
                        };
                        accepted.lock().await.insert(id.expect("instance 1 answers every send"));
                    }
                })
                .await;
        }
    });
    eventually(60, "a third of the sends to be accepted", || async {
        (accepted.lock().await.len() >= TOTAL / 3).then_some(())
    })
    .await;
    servers[1].start_kill().unwrap();
    servers[1].wait().await.unwrap();
    let at_kill = accepted.lock().await.len();
    assert!(at_kill < TOTAL, "the kill came before every send was done ({at_kill})");
    sending.await.unwrap();
    let accepted = accepted.lock().await.clone();
    assert_eq!(accepted.len(), TOTAL, "every send was accepted by an instance, the same key once");

    let reader = msgline::Db::connect(&url).await.unwrap();
    let statuses = eventually(90, "every accepted message to settle", || async {
        let rows: Vec<(String, String)> =
            sqlx::query_as("SELECT id, status FROM messages").fetch_all(reader.writer_for_tests()).await.unwrap();
        let settled = rows.iter().all(|(_, s)| matches!(s.as_str(), "delivered" | "read" | "failed"));
        (settled && rows.len() >= accepted.len()).then_some(rows)
    })
    .await;
    assert_eq!(statuses.len(), TOTAL, "one message per idempotency key");
    assert!(statuses.iter().all(|(_, s)| s == "delivered"), "in accept mode every message is delivered");
    let sent = json_answer(client.get(format!("http://127.0.0.1:{sim_port}/control/sent"))).await;
    let sent_ids: Vec<&str> = sent.as_array().unwrap().iter().map(|s| s["id"].as_str().unwrap()).collect();
    let unique: HashSet<&str> = sent_ids.iter().copied().collect();
    assert_eq!(unique.len(), sent_ids.len(), "the line sent no message twice");
    assert_eq!(unique.len(), TOTAL, "the line sent every message");
    let stats: Value = json_answer(client.get(format!("http://127.0.0.1:{sim_port}/control/stats"))).await;
    assert_eq!(stats["repeated_ids"], 0, "no instance handed the line a message another had handed it");
    reader.close().await;
}

#[tokio::test]
async fn three_instances_deliver_each_webhook_event_once_not_once_per_instance() {
    if !use_postgres() {
        return; // several instances need a shared server database: the PostgreSQL pass runs this
    }
    const TOTAL: usize = 30;
    let db = TestDb::new_postgres().await;
    let url = db.url().to_string();
    let ProcessLine { key, port, sim: _sim, .. } = process_line(&url, "Hooks").await;
    let ports = [port, free_port(), free_port()];
    let _servers = three(&url, ports, &[("MSGLINE_ALLOW_PRIVATE_TARGETS", "true")]).await;
    let receiver = Receiver::start().await;
    let client = reqwest::Client::new();
    let endpoint: Value = json_answer(
        client
            .post(api(ports[1], "/webhooks"))
            .bearer_auth(&key)
            .json(&json!({"url": receiver.url("/hook"), "events": ["messaging.message.delivered"]})),
    )
    .await;
    assert!(endpoint["id"].is_string(), "{endpoint}");
    for i in 0..TOTAL {
        let answer = client
            .post(api(ports[i % 3], "/messages"))
            .bearer_auth(&key)
            .json(&json!({"to": format!("+1201555{:04}", 2000 + i), "body": format!("hello {i}")}))
            .send()
            .await
            .unwrap();
        assert_eq!(answer.status(), 202);
    }
    let received = receiver.wait_for(TOTAL, Some("/hook")).await;
    // Time for a second copy to arrive, were any instance to deliver its own.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let received = {
        let again = receiver.received_on("/hook").await;
        assert!(again.len() >= received.len());
        again
    };
    let mut per_event: HashMap<String, usize> = HashMap::new();
    for delivery in &received {
        *per_event.entry(delivery.id()).or_default() += 1;
    }
    assert_eq!(per_event.len(), TOTAL, "one event per delivered message");
    assert!(per_event.values().all(|n| *n == 1), "each event once: {per_event:?}");
}

/// A Redis of the test's own, on a free port, that the test can stop and start again.
struct OwnRedis {
    port: u16,
    process: Option<Child>,
}

impl OwnRedis {
    async fn start(port: u16) -> OwnRedis {
        let mut redis = OwnRedis { port, process: None };
        redis.restart().await;
        redis
    }

    async fn restart(&mut self) {
        let process = tokio::process::Command::new("redis-server")
            .args(["--port", &self.port.to_string(), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"])
            .stdout(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .expect("redis-server runs (install Redis: apt-get install redis-server)");
        self.process = Some(process);
        let port = self.port;
        eventually(10, "redis-server to listen", || async move {
            tokio::net::TcpStream::connect(("127.0.0.1", port)).await.ok().map(|_| ())
        })
        .await;
    }

    async fn stop(&mut self) {
        if let Some(mut process) = self.process.take() {
            process.start_kill().unwrap();
            process.wait().await.unwrap();
        }
    }

    /// The rate-limit buckets Redis holds.
    async fn buckets(&self) -> usize {
        let client = redis::Client::open(format!("redis://127.0.0.1:{}", self.port)).unwrap();
        let mut connection = client.get_multiplexed_async_connection().await.unwrap();
        let keys: Vec<String> =
            redis::cmd("KEYS").arg("msgline:ratelimit:*").query_async(&mut connection).await.unwrap();
        keys.len()
    }
}

#[tokio::test]
async fn without_redis_an_instance_keeps_serving_with_its_own_limits_and_shares_them_again_when_redis_returns() {
    let db = TestDb::new().await;
    let url = db.url().to_string();
    let org = cli_value(&url, &["admin", "org", "create", "--name", "Fallback"]).await;
    let key = org["api_key"].as_str().unwrap().to_string();
    let mut redis = OwnRedis::start(free_port()).await;
    let redis_url = format!("redis://127.0.0.1:{}", redis.port);
    let port = free_port();
    let env = [("MSGLINE_REDIS_URL", redis_url.as_str()), ("MSGLINE_RATE_LIMIT_PER_MINUTE", "5")];
    let _server = serve_process(&url, port, &env).await;
    let client = reqwest::Client::new();
    let get = || client.get(api(port, "/lines")).bearer_auth(&key).send();

    assert_eq!(get().await.unwrap().status(), 200);
    assert_eq!(redis.buckets().await, 1, "the count is kept in Redis");

    // Redis goes away: requests are still answered, and limited by the instance itself.
    redis.stop().await;
    let mut statuses = Vec::new();
    for _ in 0..8 {
        statuses.push(get().await.unwrap().status().as_u16());
    }
    assert!(statuses.iter().all(|s| *s == 200 || *s == 429), "{statuses:?}");
    assert!(statuses.contains(&429), "the instance's own limiter still limits: {statuses:?}");
    assert!(statuses.iter().take(4).all(|s| *s == 200), "fails open, not closed: {statuses:?}");

    // Redis returns (empty): the instance counts there again by itself.
    redis.restart().await;
    eventually(10, "the limits to be kept in Redis again", || async {
        let _ = get().await;
        (redis.buckets().await == 1).then_some(())
    })
    .await;
}
