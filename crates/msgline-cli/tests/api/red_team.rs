//! What the round-4 red team found in the release build, tried again as they did it: console
//! sign-ins pinning Argon2's memory on the system allocator, and connections that send nothing,
//! part of their headers or part of their body and were held for ever.

use std::time::Duration;

use serde_json::Value;
use tokio::{
    io::{AsyncReadExt, AsyncWriteExt},
    net::TcpStream,
};

use crate::{
    helpers::{TestDb, cli_value, serve_process, spawn_app_with},
    hostile::rss_mib,
    simline::free_port,
};

/// `msgline admin staff create … --password-stdin` on `database_url`.
async fn staff_with_password(database_url: &str, org_id: &str, email: &str, password: &str) {
    let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_msgline"))
        .args(["admin", "staff", "create", "--org", org_id, "--email", email, "--role", "owner", "--password-stdin"])
        .env("MSGLINE_DATABASE_URL", database_url)
        .env_remove("MSGLINE_CONFIG")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .spawn()
        .expect("msgline runs");
    child.stdin.take().expect("piped").write_all(password.as_bytes()).await.expect("password written");
    assert!(child.wait().await.expect("msgline ends").success(), "staff create");
}

#[tokio::test]
async fn console_sign_ins_do_not_pin_the_password_hashs_memory() {
    // The test binary's server is the debug build: the system allocator, as `target/release`.
    let db = TestDb::new().await;
    let org = cli_value(db.url(), &["admin", "org", "create", "--name", "Sign-ins"]).await;
    let org_id = org["org_id"].as_str().unwrap().to_string();
    let emails: Vec<String> = (0..3).map(|i| format!("staff{i}@example.com")).collect();
    for email in &emails {
        staff_with_password(db.url(), &org_id, email, "a long enough password").await;
    }
    let port = free_port();
    let server = serve_process(db.url(), port, &[]).await;
    let pid = server.id().expect("a pid");
    let client = reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build().unwrap();
    let url = format!("http://127.0.0.1:{port}/console/sign-in");
    let sign_in = |email: String, password: &'static str| {
        let request = client.post(&url).form(&[("email", email.as_str()), ("password", password)]);
        async move { request.send().await.expect("answered").status().as_u16() }
    };
    // One of each first, so that the baseline holds what any server that signs anyone in holds.
    assert_eq!(sign_in(emails[0].clone(), "a long enough password").await, 303);
    assert_eq!(sign_in("nobody@example.com".to_string(), "not the password").await, 401);
    tokio::time::sleep(Duration::from_millis(500)).await;
    let before = rss_mib(pid);

    // 48 sign-ins that succeed and 12 that fail (4 per email, under both throttles), 6 at a time:
    // before the fix each left Argon2's 19 MiB with the thread that hashed.
    use futures_util::StreamExt;
    let statuses: Vec<u16> = futures_util::stream::iter(0..60usize)
        .map(|n| {
            let email = emails[n % 3].clone();
            let password = if n % 5 == 4 { "not the password" } else { "a long enough password" };
            sign_in(email, password)
        })
        .buffer_unordered(6)
        .collect()
        .await;
    assert_eq!(statuses.iter().filter(|s| **s == 303).count(), 48, "{statuses:?}");
    assert_eq!(statuses.iter().filter(|s| **s == 401).count(), 12, "{statuses:?}");

    let mut after = rss_mib(pid);
    for _ in 0..50 {
        if after - before <= 40.0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
        after = rss_mib(pid);
    }
    eprintln!("sign-in memory: {before:.1} MiB before 60 sign-ins, {after:.1} MiB after");
    assert!(after - before <= 40.0, "60 sign-ins grew the server from {before:.1} to {after:.1} MiB");
}

/// Reads what the server writes until it closes the connection; `None` if it is still open after
/// `within`.
async fn closed_within(stream: &mut TcpStream, within: Duration) -> Option<String> {
    let mut seen = Vec::new();
    let read = tokio::time::timeout(within, stream.read_to_end(&mut seen)).await;
    match read {
        Ok(_) => Some(String::from_utf8_lossy(&seen).into_owned()),
        Err(_) => None,
    }
}

#[tokio::test]
async fn connections_that_send_nothing_or_part_of_a_request_are_closed_after_the_read_timeouts() {
    let app = spawn_app_with(|c| {
        c.header_read_timeout_seconds = 1;
        c.body_read_timeout_seconds = 1;
    })
    .await;
    let address = format!("127.0.0.1:{}", app.port);
    let connect = || TcpStream::connect(address.clone());

    let mut silent = connect().await.unwrap();
    let mut partial_head = connect().await.unwrap();
    partial_head.write_all(b"POST /api/v1/messaging/messages HTTP/1.1\r\nHost: x\r\nContent-Ty").await.unwrap();
    let mut partial_body = connect().await.unwrap();
    let head = format!(
        "POST /api/v1/messaging/messages HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {}\r\n\
         Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{{\"to\": \"+1201",
        app.org.key
    );
    partial_body.write_all(head.as_bytes()).await.unwrap();
    let mut idle = connect().await.unwrap();
    idle.write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n").await.unwrap();
    let mut answer = [0u8; 512];
    let n = idle.read(&mut answer).await.unwrap();
    assert!(answer[..n].starts_with(b"HTTP/1.1 200"), "{}", String::from_utf8_lossy(&answer[..n]));

    // Each is closed within a few seconds of its timeout; without timeouts, never.
    let limit = Duration::from_secs(6);
    assert!(closed_within(&mut silent, limit).await.is_some(), "a connection that sends nothing is held");
    assert!(closed_within(&mut partial_head, limit).await.is_some(), "partial headers are held");
    assert!(closed_within(&mut idle, limit).await.is_some(), "an idle kept-alive connection is held");
    let body_answer = closed_within(&mut partial_body, limit).await.expect("a partial body is held");
    if !body_answer.is_empty() {
        assert!(body_answer.starts_with("HTTP/1.1 400"), "{body_answer}");
        assert!(body_answer.contains("\"error\":\"invalid_request\""), "{body_answer}");
    }
    // Nothing of the partial send was accepted, and the server still answers.
    let listed = app.get("/messages", &app.org.key).await.expect(200);
    assert_eq!(listed["data"], serde_json::json!([]));
}

/// Sends `GET /healthz` on a new connection; the status line's code and the body.
async fn healthz(stream: &mut TcpStream) -> (u16, String) {
    stream.write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").await.unwrap();
    let text = closed_within(stream, Duration::from_secs(5)).await.expect("answered and closed");
    let code = text.get(9..12).and_then(|c| c.parse().ok()).unwrap_or(0);
    (code, text.split("\r\n\r\n").nth(1).unwrap_or_default().to_string())
}

/// A server with these caps: `held` connections taken, the next one is refused with `code` and
/// the JSON error `error`, and once one of the held is closed a new one is answered.
async fn past_a_cap(per_address: usize, total: usize, held: usize, code: u16, error: &str) {
    let app = spawn_app_with(|c| {
        c.max_connections_per_address = per_address;
        c.max_connections = total;
    })
    .await;
    let address = format!("127.0.0.1:{}", app.port);
    let mut open = Vec::new();
    for _ in 0..held {
        open.push(TcpStream::connect(&address).await.unwrap());
    }
    // The held ones are counted once the server has taken them.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let mut next = TcpStream::connect(&address).await.unwrap();
    let (answered, body) = healthz(&mut next).await;
    assert_eq!(answered, code, "{body}");
    let refusal: Value = serde_json::from_str(&body).expect("a JSON error");
    assert_eq!(refusal["error"], error);
    // A place freed is a place taken again.
    drop(open.pop());
    tokio::time::sleep(Duration::from_millis(300)).await;
    let mut again = TcpStream::connect(&address).await.unwrap();
    assert_eq!(healthz(&mut again).await.0, 200);
}

#[tokio::test]
async fn connections_past_the_caps_are_refused_with_a_json_error_and_freed_places_are_taken_again() {
    past_a_cap(4, 100, 4, 429, "rate_limited").await;
}

#[tokio::test]
async fn connections_past_the_servers_total_are_refused_with_503() {
    past_a_cap(100, 3, 3, 503, "internal_error").await;
}
