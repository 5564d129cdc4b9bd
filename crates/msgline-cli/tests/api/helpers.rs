//! The test harness: the real application on a loopback port, a fresh database per test
//! (a new SQLite file, or a new PostgreSQL database dropped afterwards), real HTTP.
//!
//! `MSGLINE_TEST_DATABASE=postgres` runs the suite on PostgreSQL (admin URL from
//! `MSGLINE_TEST_PG_URL`, default `postgres://postgres@127.0.0.1:5432/postgres`).

use std::{process::Output, time::Duration};

use msgline::{Application, Config, Db, Services};
use reqwest::{Method, StatusCode, header::HeaderMap};
use serde_json::Value;
use sqlx::{Connection, Row};

pub const BASE: &str = "/api/v1/messaging";

pub fn pg_admin_url() -> String {
    std::env::var("MSGLINE_TEST_PG_URL").unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/postgres".into())
}

pub fn use_postgres() -> bool {
    std::env::var("MSGLINE_TEST_DATABASE").is_ok_and(|v| v == "postgres")
}

/// A database that exists for one test.
pub enum TestDb {
    Sqlite { _dir: tempfile::TempDir, url: String },
    Postgres { name: String, url: String },
}

impl TestDb {
    pub async fn new_sqlite() -> TestDb {
        let dir = tempfile::tempdir().expect("temp dir");
        let url = format!("sqlite://{}", dir.path().join("msgline.db").display());
        TestDb::Sqlite { _dir: dir, url }
    }

    pub async fn new_postgres() -> TestDb {
        let name = format!("msgline_test_{}", msgline::ids::new_id("db").trim_start_matches("db_"));
        let admin = pg_admin_url();
        let mut conn = sqlx::PgConnection::connect(&admin).await.expect("PostgreSQL is reachable for tests");
        sqlx::query(&format!("CREATE DATABASE {name}")).execute(&mut conn).await.expect("create test database");
        let base = admin.rsplit_once('/').map(|(base, _)| base.to_string()).unwrap_or(admin);
        TestDb::Postgres { url: format!("{base}/{name}"), name }
    }

    /// A fresh database of the kind this run tests.
    pub async fn new() -> TestDb {
        if use_postgres() { TestDb::new_postgres().await } else { TestDb::new_sqlite().await }
    }

    pub fn url(&self) -> &str {
        match self {
            TestDb::Sqlite { url, .. } | TestDb::Postgres { url, .. } => url,
        }
    }
}

impl Drop for TestDb {
    fn drop(&mut self) {
        if let TestDb::Postgres { name, .. } = self {
            let name = name.clone();
            // Drop runs inside the test's runtime: do the async clean-up on a thread of its own.
            let _ = std::thread::spawn(move || {
                let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
                runtime.block_on(async {
                    if let Ok(mut conn) = sqlx::PgConnection::connect(&pg_admin_url()).await {
                        let _ = sqlx::query(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"))
                            .execute(&mut conn)
                            .await;
                    }
                });
            })
            .join();
        }
    }
}

/// An organisation with its all-scope key.
#[derive(Debug, Clone)]
pub struct TestOrg {
    pub id: String,
    pub key: String,
    pub key_id: String,
}

/// What a request answered.
#[derive(Debug)]
pub struct Resp {
    pub status: StatusCode,
    pub body: Value,
    pub headers: HeaderMap,
}

impl Resp {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }

    /// Asserts the status, showing the body when it differs.
    #[track_caller]
    pub fn expect(self, status: u16) -> Value {
        assert_eq!(self.status.as_u16(), status, "unexpected status; body: {}", self.body);
        self.body
    }

    /// Asserts an error status and code (and the field, when given).
    #[track_caller]
    pub fn expect_error(self, status: u16, code: &str, field: Option<&str>) -> Value {
        let body = self.expect(status);
        assert_eq!(body["error"], code, "error body: {body}");
        if let Some(field) = field {
            assert_eq!(body["field"], field, "error body: {body}");
        }
        body
    }
}

pub struct TestApp {
    pub address: String,
    pub port: u16,
    pub client: reqwest::Client,
    pub state: Services,
    pub config: Config,
    /// The organisation every test starts with, and its all-scope key.
    pub org: TestOrg,
    pub db: TestDb,
    server: tokio::task::JoinHandle<()>,
}

impl Drop for TestApp {
    fn drop(&mut self) {
        self.server.abort();
    }
}

pub async fn spawn_app() -> TestApp {
    spawn_app_with(|_| {}).await
}

/// Starts the application with the test's changes to the default configuration.
pub async fn spawn_app_with(configure: impl FnOnce(&mut Config)) -> TestApp {
    if let Ok(filter) = std::env::var("MSGLINE_TEST_LOG") {
        let _logs = msgline::telemetry::init(&Config { log: filter, ..Config::default() });
    }
    let db = TestDb::new().await;
    let mut config = Config {
        listen: "127.0.0.1:0".into(),
        database_url: db.url().to_string(),
        media_store: test_media_store(),
        ..Config::default()
    };
    configure(&mut config);
    let app = Application::build(config.clone()).await.expect("application builds");
    let port = app.port();
    let state = app.state();
    let server = tokio::spawn(async move {
        let _ = app.run_until_stopped(std::future::pending()).await;
    });
    let org_json = msgline::admin::create_org(state.db(), "Test Org").await.expect("org");
    let org = org_from_json(&org_json);
    TestApp {
        address: format!("http://127.0.0.1:{port}"),
        port,
        client: reqwest::Client::builder().timeout(Duration::from_secs(30)).build().expect("client"),
        state,
        config,
        org,
        db,
        server,
    }
}

fn org_from_json(value: &Value) -> TestOrg {
    TestOrg {
        id: value["org_id"].as_str().expect("org_id").to_string(),
        key: value["api_key"].as_str().expect("api_key").to_string(),
        key_id: value["key_id"].as_str().expect("key_id").to_string(),
    }
}

impl TestApp {
    pub fn db(&self) -> &Db {
        self.state.db()
    }

    /// `path` below the API base, e.g. `/contacts`.
    pub fn url(&self, path: &str) -> String {
        format!("{}{BASE}{path}", self.address)
    }

    pub async fn request(&self, method: Method, path: &str, key: Option<&str>, body: Option<Value>) -> Resp {
        let mut request = self.client.request(method, self.url(path));
        if let Some(key) = key {
            request = request.bearer_auth(key);
        }
        if let Some(body) = body {
            request = request.json(&body);
        }
        let response = request.send().await.expect("request is answered");
        let status = response.status();
        let headers = response.headers().clone();
        let text = response.text().await.expect("body");
        let body =
            if text.is_empty() { Value::Null } else { serde_json::from_str(&text).unwrap_or(Value::String(text)) };
        Resp { status, body, headers }
    }

    pub async fn get(&self, path: &str, key: &str) -> Resp {
        self.request(Method::GET, path, Some(key), None).await
    }

    pub async fn post(&self, path: &str, key: &str, body: Value) -> Resp {
        self.request(Method::POST, path, Some(key), Some(body)).await
    }

    pub async fn delete(&self, path: &str, key: &str) -> Resp {
        self.request(Method::DELETE, path, Some(key), None).await
    }

    /// A second organisation, through the same code as `msgline admin org create`.
    pub async fn create_org(&self, name: &str) -> TestOrg {
        org_from_json(&msgline::admin::create_org(self.db(), name).await.expect("org"))
    }

    /// A key of `org` with these scopes (and line), through the admin code path.
    pub async fn create_key(&self, org: &TestOrg, scopes: &[&str], line: Option<&str>) -> String {
        let answer =
            msgline::admin::create_key(self.db(), &org.id, &scopes.join(","), line, Some("test")).await.expect("key");
        answer["api_key"].as_str().expect("api_key").to_string()
    }

    /// Registers a line: dedicated to `org`, or shared when `org` is `None`.
    pub async fn create_line(&self, e164: &str, org: Option<&TestOrg>, bridge_url: &str) -> Value {
        let kind = if org.is_some() { "dedicated" } else { "shared" };
        let setup = msgline::admin::LineSetup::msgline(
            e164,
            kind,
            org.map(|o| o.id.as_str()),
            bridge_url,
            Some("bridge-token"),
        );
        msgline::admin::create_line(self.db(), setup).await.expect("line")
    }

    /// Runs the real `msgline` binary against this test's database.
    pub async fn cli(&self, args: &[&str]) -> Output {
        run_cli(self.db.url(), args).await
    }

    /// A key of `org` with these scopes (and line), and its id.
    pub async fn create_key_with_id(&self, org: &TestOrg, scopes: &[&str], line: Option<&str>) -> (String, String) {
        let answer =
            msgline::admin::create_key(self.db(), &org.id, &scopes.join(","), line, Some("test")).await.expect("key");
        (
            answer["key_id"].as_str().expect("key_id").to_string(),
            answer["api_key"].as_str().expect("api_key").to_string(),
        )
    }

    /// Registers a line (as [`TestApp::create_line`]) and returns its id.
    pub async fn create_line_id(&self, e164: &str, org: Option<&TestOrg>) -> String {
        let line = self.create_line(e164, org, "http://127.0.0.1:9").await;
        line["line_id"].as_str().expect("line_id").to_string()
    }

    /// A direct conversation of `org` on `line_id` with `phone` (its contact created if needed),
    /// through the library: conversations have no creating route yet. Returns the conversation.
    pub async fn create_conversation(&self, org: &TestOrg, line_id: &str, phone: &str) -> TestConversation {
        // Released before the caller's next request: on SQLite the writer is a single connection.
        let mut conn = self.db().writer_for_tests().acquire().await.expect("writer connection");
        let contact =
            msgline::testing::db::contacts::find_or_create(&mut *conn, &org.id, phone).await.expect("contact");
        let conversation =
            msgline::testing::db::conversations::find_or_create_direct(&mut conn, &org.id, line_id, &contact.id, phone)
                .await
                .expect("conversation");
        TestConversation { id: conversation.id, contact_id: contact.id }
    }
}

/// A conversation made by [`TestApp::create_conversation`].
#[derive(Debug, Clone)]
pub struct TestConversation {
    pub id: String,
    pub contact_id: String,
}

/// Runs the real `msgline` binary with `MSGLINE_DATABASE_URL` set to `database_url`.
pub async fn run_cli(database_url: &str, args: &[&str]) -> Output {
    tokio::process::Command::new(env!("CARGO_BIN_EXE_msgline"))
        .args(args)
        .env("MSGLINE_DATABASE_URL", database_url)
        .env_remove("MSGLINE_CONFIG")
        .output()
        .await
        .expect("msgline runs")
}

/// The JSON a successful CLI command printed on stdout.
#[track_caller]
pub fn cli_json(output: &Output) -> Value {
    assert!(
        output.status.success(),
        "msgline failed: {}; stderr: {}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).expect("the CLI prints JSON on stdout")
}

/// The ids in a list response's `data`, in order.
#[track_caller]
pub fn ids(list: &Value) -> Vec<String> {
    list["data"]
        .as_array()
        .expect("a list body has data")
        .iter()
        .map(|item| item["id"].as_str().expect("an item has an id").to_string())
        .collect()
}

/// Every scope a key can carry.
pub const ALL_SCOPES: [&str; 7] = [
    "messaging_send",
    "messaging_read",
    "messaging_contacts",
    "messaging_webhooks",
    "messaging_keys",
    "messaging_agents",
    "messaging_lines",
];

/// Every authenticated route, the scope it needs and a body that passes validation where one
/// is needed. Ids in paths need not exist: authentication, scopes and limits come first.
pub fn authenticated_routes() -> Vec<(Method, &'static str, &'static str, Option<Value>)> {
    use serde_json::json;
    vec![
        (Method::GET, "/keys", "messaging_keys", None),
        (Method::POST, "/keys", "messaging_keys", Some(json!({"scopes": ["messaging_read"]}))),
        (Method::POST, "/keys/key_unknown/rotate", "messaging_keys", Some(json!({}))),
        (Method::DELETE, "/keys/key_unknown", "messaging_keys", None),
        (Method::GET, "/lines", "messaging_read", None),
        (Method::GET, "/lines/line_unknown", "messaging_read", None),
        (Method::PATCH, "/lines/line_unknown", "messaging_lines", Some(json!({"policy": {}}))),
        (Method::POST, "/lines/line_unknown/pause", "messaging_lines", Some(json!({}))),
        (Method::POST, "/lines/line_unknown/resume", "messaging_lines", Some(json!({}))),
        (Method::GET, "/pools", "messaging_lines", None),
        (Method::POST, "/pools", "messaging_lines", Some(json!({"name": "p", "line_ids": ["line_unknown"]}))),
        (Method::GET, "/pools/pool_unknown", "messaging_lines", None),
        (Method::PATCH, "/pools/pool_unknown", "messaging_lines", Some(json!({"name": "q"}))),
        (Method::DELETE, "/pools/pool_unknown", "messaging_lines", None),
        (Method::POST, "/contacts", "messaging_contacts", Some(json!({"phone": "+12015550123"}))),
        (Method::GET, "/contacts?q=ann", "messaging_read", None),
        (Method::GET, "/contacts/ct_unknown", "messaging_read", None),
        (Method::GET, "/conversations", "messaging_read", None),
        (Method::GET, "/conversations/conv_unknown", "messaging_read", None),
        (Method::GET, "/availability?to=%2B12015550123", "messaging_read", None),
        (Method::GET, "/opt-outs", "messaging_contacts", None),
        (Method::DELETE, "/opt-outs/opt_unknown", "messaging_contacts", None),
        (Method::GET, "/settings", "messaging_read", None),
        (Method::GET, "/feed", "messaging_read", None),
        (Method::GET, "/feed/stream", "messaging_read", None),
        (Method::POST, "/messages/msg_unknown/reactions", "messaging_send", Some(json!({"reaction": "love"}))),
        (Method::DELETE, "/messages/msg_unknown/reactions/love", "messaging_send", None),
        (Method::POST, "/messages/msg_unknown/edit", "messaging_send", Some(json!({"body": "x"}))),
        (Method::POST, "/messages/msg_unknown/unsend", "messaging_send", Some(json!({}))),
    ]
}

/// Polls `check` until it returns `Some`, failing after `secs` seconds.
pub async fn eventually<T, F, Fut>(secs: u64, what: &str, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    let deadline = tokio::time::Instant::now() + Duration::from_secs(secs);
    loop {
        if let Some(value) = check().await {
            return value;
        }
        assert!(tokio::time::Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
}

/// Runs an admin command of the real binary and returns the JSON it printed.
/// The JSON answer to a request, for tests that talk to a server started as a process.
pub async fn json_answer(request: reqwest::RequestBuilder) -> Value {
    request.send().await.expect("request is answered").json().await.expect("a JSON answer")
}

pub async fn cli_value(database_url: &str, args: &[&str]) -> Value {
    cli_json(&run_cli(database_url, args).await)
}

/// `msgline serve` as its own process on `port` (limits raised, quiet logs, plus `env`), once it
/// answers `/readyz`. Killed when dropped.
/// The URL of an API path on a server process's port.
pub fn api(port: u16, path: &str) -> String {
    format!("http://127.0.0.1:{port}/api/v1/messaging{path}")
}

/// Three `msgline serve` processes on `database_url`, with `env`, on the given ports.
pub async fn three(database_url: &str, ports: [u16; 3], env: &[(&str, &str)]) -> Vec<tokio::process::Child> {
    let mut servers = Vec::new();
    for port in ports {
        servers.push(serve_process(database_url, port, env).await);
    }
    servers
}

pub async fn serve_process(database_url: &str, port: u16, env: &[(&str, &str)]) -> tokio::process::Child {
    serve_process_with(database_url, port, env, std::process::Stdio::inherit()).await
}

/// [`serve_process`] with its log (stderr) going to `log`.
/// A directory of its own for a test server's attachments, under the system's temporary
/// directory.
pub fn test_media_store() -> String {
    let dir = std::env::temp_dir().join("msgline-test-media").join(msgline::ids::new_id("run"));
    format!("file://{}", dir.display())
}

pub async fn serve_process_with(
    database_url: &str,
    port: u16,
    env: &[(&str, &str)],
    log: std::process::Stdio,
) -> tokio::process::Child {
    let child = tokio::process::Command::new(env!("CARGO_BIN_EXE_msgline"))
        .arg("serve")
        .env("MSGLINE_DATABASE_URL", database_url)
        .env("MSGLINE_LISTEN", format!("127.0.0.1:{port}"))
        .env("MSGLINE_RATE_LIMIT_PER_MINUTE", "1000000")
        .env("MSGLINE_SEND_RATE_LIMIT_PER_MINUTE", "1000000")
        .env("MSGLINE_LOG", "warn")
        .env("MSGLINE_MEDIA_STORE", test_media_store())
        .env_remove("MSGLINE_CONFIG")
        .envs(env.iter().copied())
        .stdout(std::process::Stdio::null())
        .stderr(log)
        .kill_on_drop(true)
        .spawn()
        .expect("serve starts");
    let client = reqwest::Client::new();
    eventually(30, "serve to answer /readyz", || async {
        let answer = client.get(format!("http://127.0.0.1:{port}/readyz")).send().await.ok()?;
        answer.status().is_success().then_some(())
    })
    .await;
    child
}

/// An organisation and a dedicated line made with the admin commands, and `msgline sim` as the
/// line's bridge in its own process, reporting to a server that is to listen on `port`.
/// Starts `msgline sim` on `sim_port` as the +12015550100 line (token `t`) of the server on
/// `port`, with `extra` arguments; waits until it listens.
pub async fn start_sim(sim_port: u16, port: u16, secret: &str, extra: &[&std::ffi::OsStr]) -> tokio::process::Child {
    use tokio::io::AsyncBufReadExt;
    let mut sim = tokio::process::Command::new(env!("CARGO_BIN_EXE_msgline"))
        .args(["sim", "--listen", &format!("127.0.0.1:{sim_port}"), "--e164", "+12015550100", "--token", "t"])
        .args(["--step-ms", "5", "--callback-url", &format!("http://127.0.0.1:{port}/api/v1/messaging/bridge/events")])
        .args(["--callback-secret", secret])
        .args(extra)
        .env("MSGLINE_LOG", "warn")
        .stdout(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("msgline sim starts");
    let mut out = tokio::io::BufReader::new(sim.stdout.take().expect("piped")).lines();
    out.next_line().await.expect("sim stdout").expect("sim prints its address");
    sim
}

pub struct ProcessLine {
    pub org_id: String,
    pub key: String,
    pub line: Value,
    pub port: u16,
    pub sim_port: u16,
    /// The simulator; killed when dropped.
    pub sim: tokio::process::Child,
}

pub async fn process_line(database_url: &str, org_name: &str) -> ProcessLine {
    let org = cli_value(database_url, &["admin", "org", "create", "--name", org_name]).await;
    let key = org["api_key"].as_str().expect("api_key").to_string();
    let (port, sim_port) = (crate::simline::free_port(), crate::simline::free_port());
    let bridge = format!("http://127.0.0.1:{sim_port}");
    let org_id = org["org_id"].as_str().expect("org_id");
    let line = cli_value(
        database_url,
        &[
            "admin",
            "line",
            "create",
            "--e164",
            "+12015550100",
            "--kind",
            "dedicated",
            "--org",
            org_id,
            "--bridge-url",
            &bridge,
            "--bridge-token",
            "t",
        ],
    )
    .await;
    let sim = start_sim(sim_port, port, line["bridge_secret"].as_str().expect("bridge_secret"), &[]).await;
    ProcessLine { org_id: org_id.to_string(), key, line, port, sim_port, sim }
}

/// A listener on a loopback port that only counts the connections it gets: proof that nothing
/// reached an address. Returns the port and the count.
pub async fn counting_listener() -> (u16, std::sync::Arc<std::sync::atomic::AtomicUsize>) {
    use std::sync::{
        Arc,
        atomic::{AtomicUsize, Ordering},
    };
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("a loopback port");
    let port = listener.local_addr().expect("bound").port();
    let count = Arc::new(AtomicUsize::new(0));
    tokio::spawn({
        let count = count.clone();
        async move {
            while let Ok((socket, _)) = listener.accept().await {
                count.fetch_add(1, Ordering::SeqCst);
                drop(socket);
            }
        }
    });
    (port, count)
}

/// The plan of `select` (with `$1` and `$2` filled in), one line per row. With
/// `rule_out_seqscan`, PostgreSQL is told not to read whole tables: the tables of a test are
/// small, and only then does the plan show whether an index can serve the query. Without it,
/// the plan is the one the planner would choose from the statistics it has.
pub async fn plan_of(db: &Db, rule_out_seqscan: bool, select: &str) -> Vec<String> {
    let select = select.replace("$1", "1000").replace("$2", "500");
    let mut conn = db.writer_for_tests().acquire().await.unwrap();
    match db.backend() {
        msgline::Backend::Sqlite => sqlx::query(&format!("EXPLAIN QUERY PLAN {select}"))
            .fetch_all(&mut *conn)
            .await
            .unwrap()
            .iter()
            .map(|row| row.get::<String, _>(3))
            .collect(),
        msgline::Backend::Postgres => {
            if rule_out_seqscan {
                sqlx::query("SET enable_seqscan = off").execute(&mut *conn).await.unwrap();
            }
            let plan = sqlx::query(&format!("EXPLAIN {select}"))
                .fetch_all(&mut *conn)
                .await
                .unwrap()
                .iter()
                .map(|row| row.get::<String, _>(0))
                .collect();
            sqlx::query("RESET enable_seqscan").execute(&mut *conn).await.unwrap();
            plan
        }
    }
}
