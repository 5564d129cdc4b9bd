//! Lines on real-device kinds for tests: the fakes of BlueBubbles Server and of SMS Gateway for
//! Android (`tests/support/fake_*.py`, written from their upstream source) as their own
//! processes, a line on one made with the admin CLI, and `msgline serve` as its own process.

use std::{process::Stdio, time::Duration};

use serde_json::{Value, json};
use tokio::{
    io::{AsyncBufReadExt, BufReader},
    process::{Child, Command},
};

use crate::{
    helpers::{TestDb, cli_json, eventually, serve_process},
    simline::free_port,
};

pub const LINE_E164: &str = "+12015550100";
pub const BB_PASSWORD: &str = "bb-server-password";
pub const GW_USERNAME: &str = "sms";
pub const GW_PASSWORD: &str = "gw-local-password";

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Kind {
    BlueBubbles,
    Android,
}

impl Kind {
    pub fn name(self) -> &'static str {
        match self {
            Kind::BlueBubbles => "bluebubbles",
            Kind::Android => "android-gateway",
        }
    }
}

/// A fake device server in its own process; killed when dropped.
pub struct Fake {
    pub url: String,
    _child: Child,
    client: reqwest::Client,
}

impl Fake {
    pub async fn start(kind: Kind, extra: &[&str]) -> Fake {
        let port = free_port();
        let listen = format!("127.0.0.1:{port}");
        let (script, args): (&str, Vec<&str>) = match kind {
            Kind::BlueBubbles => ("fake_bluebubbles.py", vec!["--password", BB_PASSWORD, "--step-ms", "20"]),
            Kind::Android => (
                "fake_android_gateway.py",
                vec![
                    "--username",
                    GW_USERNAME,
                    "--password",
                    GW_PASSWORD,
                    "--signing-key",
                    "phone-default",
                    "--step-ms",
                    "20",
                ],
            ),
        };
        let path = format!("{}/tests/support/{script}", env!("CARGO_MANIFEST_DIR"));
        let mut child = Command::new("python3")
            .arg(path)
            .args(["--listen", &listen])
            .args(args)
            .args(extra)
            .stdout(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("python3 runs the fake");
        let mut out = BufReader::new(child.stdout.take().expect("piped")).lines();
        let first = out.next_line().await.expect("fake stdout").expect("the fake prints its address");
        assert!(first.starts_with("listening on "), "unexpected first line from the fake: {first}");
        Fake { url: format!("http://{listen}"), _child: child, client: reqwest::Client::new() }
    }

    pub async fn control(&self, path: &str, body: Value) -> Value {
        let answer = self.client.post(format!("{}{path}", self.url)).json(&body).send().await.expect("fake answers");
        assert!(answer.status().is_success(), "fake {path}: {}", answer.status());
        answer.json().await.unwrap_or(Value::Null)
    }

    pub async fn get(&self, path: &str) -> Value {
        self.client.get(format!("{}{path}", self.url)).send().await.expect("fake answers").json().await.expect("json")
    }

    /// What the device sent, oldest first.
    pub async fn sent(&self) -> Vec<Value> {
        self.get("/control/sent").await.as_array().cloned().unwrap_or_default()
    }
}

/// An organisation, a dedicated line of `kind` on a fake device, and `msgline serve`.
pub struct DeviceLine {
    pub db: TestDb,
    pub key: String,
    pub line_id: String,
    pub port: u16,
    pub server: Option<Child>,
    pub fake: Fake,
    pub created: Value,
    serve_env: Vec<(String, String)>,
    client: reqwest::Client,
}

impl DeviceLine {
    pub async fn start(kind: Kind, serve_env: &[(&str, &str)]) -> DeviceLine {
        Self::start_with(kind, &[], serve_env).await
    }

    /// As [`DeviceLine::start`], with extra arguments for the fake.
    pub async fn start_with(kind: Kind, fake_args: &[&str], serve_env: &[(&str, &str)]) -> DeviceLine {
        let db = TestDb::new().await;
        let fake = Fake::start(kind, fake_args).await;
        let port = free_port();
        let org = cli_json(&cli(db.url(), port, &["admin", "org", "create", "--name", "Device Org"]).await);
        let org_id = org["org_id"].as_str().expect("org_id").to_string();
        let mut args = vec![
            "admin",
            "line",
            "create",
            "--e164",
            LINE_E164,
            "--kind",
            "dedicated",
            "--org",
            &org_id,
            "--bridge-kind",
            kind.name(),
            "--bridge-url",
            &fake.url,
            "--bridge-password",
        ];
        match kind {
            Kind::BlueBubbles => args.push(BB_PASSWORD),
            Kind::Android => args.extend([GW_PASSWORD, "--bridge-username", GW_USERNAME]),
        }
        let created = cli_json(&cli(db.url(), port, &args).await);
        let line_id = created["line_id"].as_str().expect("line_id").to_string();
        let mut line = DeviceLine {
            db,
            key: org["api_key"].as_str().expect("api_key").to_string(),
            line_id,
            port,
            server: None,
            fake,
            created,
            serve_env: serve_env.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect(),
            client: reqwest::Client::builder().timeout(Duration::from_secs(30)).build().expect("client"),
        };
        line.serve().await;
        line
    }

    /// Takes the kind's default sending policy off the line, for a test of something else that
    /// sends many messages (a running server reads the change at its next look at the line).
    pub async fn unlimited(&self) {
        let nulls: serde_json::Map<String, Value> =
            msgline::testing::domain::line_policy::FIELDS.iter().map(|f| (f.to_string(), Value::Null)).collect();
        let policy = Value::Object(nulls).to_string();
        let args = ["admin", "line", "update", "--id", &self.line_id, "--policy", &policy];
        let output = cli(self.db.url(), self.port, &args).await;
        assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    }

    /// Starts `msgline serve` (again) and waits for the line to be online.
    pub async fn serve(&mut self) {
        let env: Vec<(&str, &str)> = self.serve_env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        self.server = Some(serve_process(self.db.url(), self.port, &env).await);
        let lines_path = format!("/lines/{}", self.line_id);
        eventually(30, "the line to be online", || async {
            let line = self.api_get(&lines_path).await;
            (line["status"] == "online").then_some(())
        })
        .await;
    }

    /// `kill -9` of the server.
    pub async fn kill(&mut self) {
        if let Some(mut server) = self.server.take() {
            server.start_kill().expect("kill");
            server.wait().await.expect("killed");
        }
    }

    pub fn api(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}/api/v1/messaging{path}", self.port)
    }

    pub async fn api_get(&self, path: &str) -> Value {
        let answer = self.client.get(self.api(path)).bearer_auth(&self.key).send().await.expect("serve answers");
        answer.json().await.expect("json")
    }

    /// POSTs and returns (status, body).
    pub async fn api_post(&self, path: &str, body: Value) -> (u16, Value) {
        let answer =
            self.client.post(self.api(path)).bearer_auth(&self.key).json(&body).send().await.expect("serve answers");
        let status = answer.status().as_u16();
        (status, answer.json().await.unwrap_or(Value::Null))
    }

    /// A request of any method with a JSON body; returns (status, body).
    pub async fn api_call(&self, method: reqwest::Method, path: &str, body: Value) -> (u16, Value) {
        let answer = self
            .client
            .request(method, self.api(path))
            .bearer_auth(&self.key)
            .json(&body)
            .send()
            .await
            .expect("serve answers");
        let status = answer.status().as_u16();
        (status, answer.json().await.unwrap_or(Value::Null))
    }

    /// Sends a text; returns the message id.
    pub async fn send_text(&self, to: &str, body: &str) -> String {
        let (status, answer) = self.api_post("/messages", json!({"to": to, "body": body})).await;
        assert_eq!(status, 202, "send answered {answer}");
        answer["message"]["id"].as_str().expect("message id").to_string()
    }

    /// A message's status as stored (read from the database, so polling costs no rate limit).
    pub async fn status(&self, id: &str) -> (String, Option<String>) {
        let db = msgline::Db::connect(self.db.url()).await.expect("db");
        let row: (String, Option<String>) = sqlx::query_as("SELECT status, error FROM messages WHERE id = $1")
            .bind(id)
            .fetch_one(db.writer_for_tests())
            .await
            .expect("message");
        db.close().await;
        row
    }

    /// Waits until the message has `status` or a later one on the way to `read` (receipts come
    /// fast on a fake device: a poll may only ever see `read`); returns its error text.
    pub async fn wait_status(&self, id: &str, status: &str) -> Option<String> {
        const ORDER: [&str; 3] = ["sent", "delivered", "read"];
        let at_least = ORDER.iter().position(|s| *s == status);
        eventually(60, &format!("{id} to be {status}"), || async {
            let (now, error) = self.status(id).await;
            let reached = match (at_least, ORDER.iter().position(|s| *s == now)) {
                (Some(wanted), Some(is)) => is >= wanted,
                _ => now == status,
            };
            reached.then_some(error)
        })
        .await
    }

    /// The inbound messages, newest first.
    pub async fn inbound(&self) -> Vec<Value> {
        let list = self.api_get("/messages?direction=inbound").await;
        list["data"].as_array().cloned().unwrap_or_default()
    }

    /// Rows of a table, counted.
    pub async fn count(&self, sql: &str) -> i64 {
        let db = msgline::Db::connect(self.db.url()).await.expect("db");
        let (n,): (i64,) = sqlx::query_as(sql).fetch_one(db.writer_for_tests()).await.expect("count");
        db.close().await;
        n
    }

    /// Gives the line's organisation a disabled webhook endpoint, never called, so that its
    /// events are written (see `TestApp::keep_events`).
    pub async fn keep_events(&self) {
        let db = msgline::Db::connect(self.db.url()).await.expect("db");
        let (org_id,): (String,) = sqlx::query_as("SELECT org_id FROM lines WHERE id = $1")
            .bind(&self.line_id)
            .fetch_one(db.writer_for_tests())
            .await
            .expect("line");
        let events = msgline::testing::domain::webhook::Subscriptions::parse(["*"]).expect("all events");
        let new = msgline::testing::db::webhooks::NewWebhook {
            org_id: &org_id,
            line_id: None,
            url: "https://receiver.example/kept",
            description: None,
            events: &events,
        };
        let endpoint = msgline::testing::db::webhooks::create(&db, new).await.expect("an endpoint");
        let mut conn = db.writer_for_tests().acquire().await.expect("a connection");
        msgline::testing::db::webhooks::disable(
            &mut conn,
            &endpoint.id,
            "events kept for the test",
            msgline::clock::now_ms(),
        )
        .await
        .expect("disabled");
        drop(conn);
        db.close().await;
    }

    /// The line's hook secret, which the URL msgline registers with the device carries.
    pub async fn hook_secret(&self) -> String {
        self.setting("hook_secret").await.as_str().expect("hook secret").to_string()
    }

    /// The key the device signs its webhooks with (Android gateway), as msgline holds it: waited
    /// for, since a server that has just started gives a line from before the keys one as it
    /// connects to the device, in the background.
    pub async fn signing_key(&self) -> String {
        crate::helpers::eventually(20, "the line's signing key", || async {
            self.setting("signing_key").await.as_str().filter(|key| !key.is_empty()).map(str::to_string)
        })
        .await
    }

    /// The line's `bridge_settings`, as stored.
    pub async fn settings(&self) -> Value {
        let db = msgline::Db::connect(self.db.url()).await.expect("db");
        let (settings,): (String,) = sqlx::query_as("SELECT bridge_settings FROM lines WHERE id = $1")
            .bind(&self.line_id)
            .fetch_one(db.writer_for_tests())
            .await
            .expect("line");
        db.close().await;
        serde_json::from_str(&settings).expect("settings json")
    }

    /// Replaces the line's `bridge_settings` (with `serve` stopped: it caches lines).
    pub async fn write_settings(&self, settings: &Value) {
        let db = msgline::Db::connect(self.db.url()).await.expect("db");
        sqlx::query("UPDATE lines SET bridge_settings = $1 WHERE id = $2")
            .bind(settings.to_string())
            .bind(&self.line_id)
            .execute(db.writer_for_tests())
            .await
            .expect("settings written");
        db.close().await;
    }

    async fn setting(&self, name: &str) -> Value {
        self.settings().await[name].clone()
    }

    /// POSTs to the line's hook route as a device would.
    pub async fn post_hook(&self, query: &str, headers: &[(&str, &str)], body: &str) -> u16 {
        let mut request = self.client.post(format!("{}?{query}", self.api(&format!("/bridge/hooks/{}", self.line_id))));
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        request.body(body.to_string()).send().await.expect("serve answers").status().as_u16()
    }
}

/// The real binary with the database and the address devices reach `serve` at.
async fn cli(database_url: &str, port: u16, args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_msgline"))
        .args(args)
        .env("MSGLINE_DATABASE_URL", database_url)
        .env("MSGLINE_LISTEN", format!("127.0.0.1:{port}"))
        .env_remove("MSGLINE_CONFIG")
        .env_remove("MSGLINE_BRIDGE_PASSWORD")
        .output()
        .await
        .expect("msgline runs")
}

/// `kill -9` of `msgline serve` in the middle of sends on a line of `kind`: every accepted message
/// is stored and settles, the device sends none twice, and msgline never hands it one again.
pub async fn kill_9_test(kind: Kind) {
    use futures_util::StreamExt;
    use std::{collections::HashSet, sync::Arc};
    use tokio::sync::Mutex;

    const TOTAL: usize = 120;
    let mut line = DeviceLine::start(kind, &[("MSGLINE_BRIDGE_TIMEOUT_MS", "1000")]).await;
    line.unlimited().await;
    // Each send takes the device a while, so the kill finds calls in flight.
    line.fake.control("/control/mode", json!({"mode": "slow", "delay_ms": 300})).await;
    let accepted = Arc::new(Mutex::new(HashSet::<String>::new()));
    let client = reqwest::Client::builder().timeout(Duration::from_secs(10)).build().unwrap();
    let send = crate::crash::numbered_sends(client, line.api("/messages"), line.key.clone(), accepted.clone());
    let sending = tokio::spawn({
        let send = send.clone();
        async move { futures_util::stream::iter(0..TOTAL / 2).for_each_concurrent(8, send).await }
    });
    eventually(60, "a third of the sends to be accepted", || async {
        (accepted.lock().await.len() >= TOTAL / 6).then_some(())
    })
    .await;
    line.kill().await;
    sending.await.unwrap();
    assert!(accepted.lock().await.len() < TOTAL / 2, "the kill came before every send was done");
    line.serve().await;
    futures_util::stream::iter(TOTAL / 2..TOTAL).for_each_concurrent(8, send).await;
    let accepted = accepted.lock().await.clone();

    let db = msgline::Db::connect(line.db.url()).await.unwrap();
    // Settled: delivered or read (the device sent it), or failed (it never reached the device).
    let deadline = tokio::time::Instant::now() + Duration::from_secs(150);
    let statuses = loop {
        let rows: Vec<(String, String, Option<String>)> =
            sqlx::query_as("SELECT id, status, error FROM messages").fetch_all(db.writer_for_tests()).await.unwrap();
        let unsettled: Vec<_> =
            rows.iter().filter(|(_, s, _)| !matches!(s.as_str(), "delivered" | "read" | "failed")).collect();
        if unsettled.is_empty() && rows.len() >= accepted.len() {
            break rows;
        }
        if tokio::time::Instant::now() >= deadline {
            let mut story = Vec::new();
            // What happened to the first two, for the failure message.
            let history = [
                ("events", "SELECT type, created_at FROM events WHERE message_id = $1 ORDER BY created_at"),
                ("refs", "SELECT remote_id, created_at FROM bridge_refs WHERE local_id = $1"),
                ("attempts", "SELECT outcome, created_at FROM delivery_attempts WHERE message_id = $1"),
            ];
            for (id, _, _) in unsettled.iter().take(2) {
                let mut told = id.clone();
                for (what, sql) in history {
                    let rows: Vec<(String, i64)> =
                        sqlx::query_as(sql).bind(id).fetch_all(db.writer_for_tests()).await.unwrap();
                    told.push_str(&format!(" {what} {rows:?}"));
                }
                story.push(told);
            }
            panic!("messages still unsettled: {unsettled:?}\n{}", story.join("\n"));
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    db.close().await;
    let stored: HashSet<String> = statuses.iter().map(|(id, _, _)| id.clone()).collect();
    assert!(accepted.is_subset(&stored), "every 202 is stored");

    let id_field = if kind == Kind::BlueBubbles { "tempGuid" } else { "id" };
    let sent: Vec<String> =
        line.fake.sent().await.iter().map(|s| s[id_field].as_str().unwrap_or_default().to_string()).collect();
    let unique: HashSet<&String> = sent.iter().collect();
    assert_eq!(unique.len(), sent.len(), "the device sent no message twice");
    let stats = line.fake.get("/control/stats").await;
    let repeated = if kind == Kind::BlueBubbles { "repeated_temp_guids" } else { "repeated_ids" };
    assert_eq!(stats[repeated], 0, "msgline never handed the device a message again: {stats}");
    for id in &sent {
        assert!(stored.contains(id), "the device sent {id}, which msgline does not know");
    }
    for (id, status, error) in &statuses {
        if unique.contains(id) {
            assert!(matches!(status.as_str(), "delivered" | "read"), "{id} went out but is {status} ({error:?})");
        } else {
            assert_eq!(status, "failed", "{id} never reached the device but is {status}");
        }
    }
    let delivered = statuses.iter().filter(|(id, _, _)| unique.contains(id)).count();
    let db = msgline::Db::connect(line.db.url()).await.unwrap();
    let attempted: HashSet<String> = sqlx::query_as::<_, (String,)>("SELECT message_id FROM delivery_attempts")
        .fetch_all(db.writer_for_tests())
        .await
        .unwrap()
        .into_iter()
        .map(|(id,)| id)
        .collect();
    db.close().await;
    // Sent by the device but with no attempt on record: the call was in flight at the kill.
    let in_flight = unique.iter().filter(|id| !attempted.contains(**id)).count();
    eprintln!(
        "kill -9 on {}: {} accepted, {} sent by the device, {} failed, {} in flight at the kill",
        kind.name(),
        accepted.len(),
        unique.len(),
        statuses.len() - delivered,
        in_flight
    );
    assert!(in_flight > 0, "the kill found calls in flight (each took the device 300 ms)");
    assert!(delivered > TOTAL / 2, "most messages went out ({delivered} of {})", statuses.len());
}
