//! Simulated phone lines for tests: the real `msgline sim` binary as its own process, attached
//! to the test's app as a line.

use std::{process::Stdio, time::Duration};

use serde_json::{Value, json};
use tokio::{
    io::{AsyncBufReadExt, BufReader},
    process::{Child, Command},
};

use crate::helpers::{TestApp, TestOrg};

/// A free loopback port (bound and released).
///
/// Chosen below the kernel's ephemeral range (32768 and up on Linux), so that no outgoing
/// connection of this or another test takes it as its local port between the moment it is
/// chosen and the moment a server binds it, or while a killed server is restarted on it.
///
/// A port is handed to one test at a time across the suite's processes: each is claimed with a
/// file made with `create_new` in a directory of the system's temporary one, for ten minutes. A
/// test that kills a server and starts it again on its port leaves the port free meanwhile, and
/// another test's check that the port is free must not find it so.
pub fn free_port() -> u16 {
    let claims = std::env::temp_dir().join("msgline-test-ports");
    let _ = std::fs::create_dir_all(&claims);
    for _ in 0..1000 {
        let port = rand::random_range(20_000..32_000);
        if !claim(&claims.join(port.to_string())) {
            continue;
        }
        if std::net::TcpListener::bind(("127.0.0.1", port)).is_ok() {
            return port;
        }
    }
    panic!("no free loopback port between 20000 and 32000");
}

/// Takes the claim file `path` if nobody holds it, or if its holder took it over ten minutes ago.
fn claim(path: &std::path::Path) -> bool {
    let create = || std::fs::OpenOptions::new().write(true).create_new(true).open(path).is_ok();
    if create() {
        return true;
    }
    let stale = std::fs::metadata(path)
        .and_then(|m| m.modified())
        .ok()
        .and_then(|at| at.elapsed().ok())
        .is_some_and(|age| age > std::time::Duration::from_secs(600));
    // Of two tests that find it stale, one removes it and both race to make it again: one wins.
    stale && std::fs::remove_file(path).is_ok() && create()
}

/// A line of the test's app whose bridge is a running `msgline sim`.
pub struct SimLine {
    pub line_id: String,
    pub secret: String,
    pub port: u16,
    pub url: String,
    args: Vec<String>,
    child: Option<Child>,
    client: reqwest::Client,
}

impl SimLine {
    /// Starts (or restarts) the simulator process and waits until it listens.
    pub async fn start(&mut self) {
        let mut child = Command::new(env!("CARGO_BIN_EXE_msgline"))
            .arg("sim")
            .args(&self.args)
            .env("MSGLINE_LOG", "warn")
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(true)
            .spawn()
            .expect("msgline sim starts");
        let stdout = child.stdout.take().expect("stdout");
        let mut lines = BufReader::new(stdout).lines();
        let first = tokio::time::timeout(Duration::from_secs(20), lines.next_line())
            .await
            .expect("sim prints its address in time")
            .expect("sim stdout")
            .expect("a line");
        let printed: Value = serde_json::from_str(&first).expect("sim prints JSON");
        assert_eq!(printed["listening"], format!("127.0.0.1:{}", self.port));
        self.child = Some(child);
    }

    /// Ends the simulator process at once (kill -9).
    pub async fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill().await;
        }
    }

    /// What the simulated device has sent, oldest first.
    pub async fn sent(&self) -> Vec<Value> {
        let answer = self.client.get(format!("{}/control/sent", self.url)).send().await.expect("sim answers");
        answer.json::<Vec<Value>>().await.expect("sent log")
    }

    /// The sent-log entries for one message id.
    pub async fn sent_with_id(&self, id: &str) -> Vec<Value> {
        self.sent().await.into_iter().filter(|s| s["id"] == id).collect()
    }

    /// A message arrives on the line from `from`; returns once the service has the callback.
    pub async fn inbound(&self, from: &str, body: &str) -> Value {
        self.control("/control/inbound", json!({"from": from, "body": body})).await
    }

    /// A control route's answer to a GET.
    pub async fn get(&self, path: &str) -> Value {
        let answer = self.client.get(format!("{}{path}", self.url)).send().await.expect("sim answers");
        assert!(answer.status().is_success(), "sim control {path} answered {}", answer.status());
        answer.json().await.expect("json")
    }

    pub async fn control(&self, path: &str, body: Value) -> Value {
        let answer = self.client.post(format!("{}{path}", self.url)).json(&body).send().await.expect("sim answers");
        assert!(answer.status().is_success(), "sim control {path} answered {}", answer.status());
        answer.json().await.expect("json")
    }
}

/// How a test line is set up.
pub struct LineSpec<'a> {
    pub e164: &'a str,
    /// `None` for a shared line.
    pub org: Option<&'a TestOrg>,
    /// Extra `msgline sim` flags (`--mode timeout`, `--no-groups`, ...).
    pub sim_args: &'a [&'a str],
    /// Start the simulator now (a test of a bridge that is down starts it later).
    pub start: bool,
}

impl TestApp {
    /// Registers a line and starts a simulator process as its bridge.
    pub async fn sim_line(&self, spec: LineSpec<'_>) -> SimLine {
        let port = free_port();
        let url = format!("http://127.0.0.1:{port}");
        let line = self.create_line(spec.e164, spec.org, &url).await;
        let secret = line["bridge_secret"].as_str().expect("bridge_secret").to_string();
        let mut args: Vec<String> = vec![
            "--listen".into(),
            format!("127.0.0.1:{port}"),
            "--e164".into(),
            spec.e164.into(),
            "--token".into(),
            "bridge-token".into(),
            "--callback-url".into(),
            format!("{}/api/v1/messaging/bridge/events", self.address),
            "--callback-secret".into(),
            secret.clone(),
        ];
        // Quick steps unless the test sets its own.
        if !spec.sim_args.contains(&"--step-ms") {
            args.extend(["--step-ms".to_string(), "10".to_string()]);
        }
        args.extend(spec.sim_args.iter().map(|a| a.to_string()));
        let mut sim = SimLine {
            line_id: line["line_id"].as_str().expect("line_id").to_string(),
            secret,
            port,
            url,
            args,
            child: None,
            client: reqwest::Client::new(),
        };
        if spec.start {
            sim.start().await;
        }
        sim
    }

    /// A dedicated line of the test's organisation with a simulator in `accept` mode.
    pub async fn default_line(&self) -> SimLine {
        let org = self.org.clone();
        self.sim_line(LineSpec { e164: "+12015550100", org: Some(&org), sim_args: &[], start: true }).await
    }

    /// Waits until `done` holds for the message, then returns it as `GET /messages/{id}` shows
    /// it. The waiting reads the database, so that polling does not use up the key's rate limit.
    pub async fn wait_for_message(&self, key: &str, id: &str, what: &str, done: impl Fn(&Value) -> bool) -> Value {
        let org =
            msgline::testing::db::keys::find_by_hash(self.db(), &msgline::testing::domain::apikey::hash_secret(key))
                .await
                .expect("key lookup")
                .expect("a known key")
                .org_id;
        crate::helpers::eventually(20, what, || async {
            let message =
                msgline::testing::db::messages::get(self.db(), &org, id).await.expect("read").expect("message exists");
            done(&message.to_json()).then_some(())
        })
        .await;
        self.get(&format!("/messages/{id}"), key).await.expect(200)
    }

    /// Gives the test's organisation a disabled webhook endpoint, never called: events are
    /// written only for an organisation with an endpoint (with none, a message costs no event
    /// rows), and [`Self::event_types`] reads them.
    pub async fn keep_events(&self) {
        let events = msgline::testing::domain::webhook::Subscriptions::parse(["*"]).expect("all events");
        let endpoint = msgline::testing::db::webhooks::create(
            self.db(),
            msgline::testing::db::webhooks::NewWebhook {
                org_id: &self.org.id,
                line_id: None,
                url: "https://receiver.example/kept",
                description: None,
                events: &events,
            },
        )
        .await
        .expect("an endpoint");
        let mut conn = self.db().writer_for_tests().acquire().await.expect("a connection");
        msgline::testing::db::webhooks::disable(
            &mut conn,
            &endpoint.id,
            "events kept for the test",
            msgline::clock::now_ms(),
        )
        .await
        .expect("disabled");
    }

    /// The event types written for a message, oldest first (see [`Self::keep_events`]).
    pub async fn event_types(&self, message_id: &str) -> Vec<String> {
        msgline::testing::db::events::types_for_message(self.db(), message_id).await.expect("events")
    }
}
