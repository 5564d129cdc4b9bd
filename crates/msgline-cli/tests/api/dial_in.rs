//! Android phones that dial in: `admin line create --bridge-kind android-gateway --dial-in`, and
//! a fake of SMS Gateway for Android in private-server mode (tests/support/fake_android_dialin.py,
//! written from the app's source) that registers, keeps its event stream open, takes its
//! messages, reports their states and posts its webhooks, against `msgline serve` on both engines.

use std::{
    process::Stdio,
    time::{Duration, Instant},
};

use serde_json::{Value, json};
use tokio::{
    io::{AsyncBufReadExt, BufReader},
    process::{Child, Command},
};

use crate::{
    helpers::{TestDb, api, cli_json, cli_value, eventually, json_answer, run_cli, serve_process},
    simline::free_port,
};

const PHONE: &str = "+12015550100";

/// An organisation with a dial-in line, and `msgline serve`.
struct DialIn {
    db: TestDb,
    port: u16,
    key: String,
    line_id: String,
    device_api_url: String,
    registration_token: String,
    server: Option<Child>,
    client: reqwest::Client,
}

const SERVE_ENV: [(&str, &str); 2] = [("MSGLINE_LINE_CHECK_SECONDS", "1"), ("MSGLINE_BRIDGE_TIMEOUT_MS", "2000")];

impl DialIn {
    async fn start() -> DialIn {
        let db = TestDb::new().await;
        let url = db.url().to_string();
        let port = free_port();
        let org = cli_value(&url, &["admin", "org", "create", "--name", "Dial-in Org"]).await;
        let public = format!("http://127.0.0.1:{port}");
        let created = run_cli_with_public(&url, &public, org["org_id"].as_str().unwrap()).await;
        assert_eq!(created["bridge_kind"], "android-gateway");
        let device_api_url = created["device_api_url"].as_str().expect("device_api_url").to_string();
        assert_eq!(device_api_url, format!("{public}/api/mobile/v1"));
        let registration_token = created["registration_token"].as_str().expect("registration_token").to_string();
        assert!(registration_token.starts_with("mlr_"), "{registration_token}");
        let mut env = SERVE_ENV.to_vec();
        env.push(("MSGLINE_PUBLIC_URL", &public));
        let server = serve_process(&url, port, &env).await;
        DialIn {
            key: org["api_key"].as_str().unwrap().to_string(),
            line_id: created["line_id"].as_str().unwrap().to_string(),
            db,
            port,
            device_api_url,
            registration_token,
            server: Some(server),
            client: reqwest::Client::new(),
        }
    }

    async fn restart(&mut self, kill: bool) {
        let mut server = self.server.take().expect("running");
        if kill {
            server.start_kill().unwrap();
        }
        server.wait().await.unwrap();
        let public = format!("http://127.0.0.1:{}", self.port);
        let mut env = SERVE_ENV.to_vec();
        env.push(("MSGLINE_PUBLIC_URL", &public));
        self.server = Some(serve_process(self.db.url(), self.port, &env).await);
    }

    async fn send(&self, to: &str, body: &str) -> String {
        let answer = self
            .client
            .post(api(self.port, "/messages"))
            .bearer_auth(&self.key)
            .json(&json!({"to": to, "body": body}))
            .send()
            .await
            .unwrap();
        assert_eq!(answer.status(), 202);
        answer.json::<Value>().await.unwrap()["message"]["id"].as_str().unwrap().to_string()
    }

    async fn message(&self, id: &str) -> Value {
        json_answer(self.client.get(api(self.port, &format!("/messages/{id}"))).bearer_auth(&self.key)).await
    }

    async fn wait_status(&self, id: &str, status: &str, secs: u64) -> Value {
        eventually(secs, &format!("{id} {status}"), || async {
            let message = self.message(id).await;
            (message["status"] == status).then_some(message)
        })
        .await
    }

    async fn line(&self) -> Value {
        json_answer(self.client.get(api(self.port, &format!("/lines/{}", self.line_id))).bearer_auth(&self.key)).await
    }

    /// A call of the app's API as the phone makes it.
    async fn mobile(&self, method: reqwest::Method, path: &str, token: &str, body: Option<Value>) -> reqwest::Response {
        let mut request = self.client.request(method, format!("{}{path}", self.device_api_url)).bearer_auth(token);
        if let Some(body) = body {
            request = request.json(&body);
        }
        request.send().await.unwrap()
    }
}

async fn run_cli_with_public(url: &str, public: &str, org_id: &str) -> Value {
    let output = Command::new(env!("CARGO_BIN_EXE_msgline"))
        .args(["admin", "line", "create", "--e164", PHONE, "--kind", "dedicated", "--org", org_id])
        .args(["--bridge-kind", "android-gateway", "--dial-in"])
        .env("MSGLINE_DATABASE_URL", url)
        .env("MSGLINE_PUBLIC_URL", public)
        .env_remove("MSGLINE_CONFIG")
        .output()
        .await
        .unwrap();
    cli_json(&output)
}

/// The fake phone, dialling `device_api_url` with `token`; killed when dropped.
struct Phone {
    url: String,
    _child: Child,
    client: reqwest::Client,
}

impl Phone {
    async fn start(device_api_url: &str, token: &str) -> Phone {
        Self::start_with_step(device_api_url, token, 20).await
    }

    /// The phone taking `step_ms` between two states of a message.
    async fn start_with_step(device_api_url: &str, token: &str, step_ms: u64) -> Phone {
        let port = free_port();
        let script = format!("{}/tests/support/fake_android_dialin.py", env!("CARGO_MANIFEST_DIR"));
        let mut child = Command::new("python3")
            .arg(script)
            .args(["--server", device_api_url, "--token", token, "--listen", &format!("127.0.0.1:{port}")])
            .args(["--reconnect-scale", "0.05", "--poll-seconds", "3600", "--step-ms", &step_ms.to_string()])
            .stdout(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("python3 runs the fake phone");
        let mut out = BufReader::new(child.stdout.take().unwrap()).lines();
        let first = out.next_line().await.unwrap().expect("the fake prints its address");
        assert!(first.starts_with("listening on "), "{first}");
        Phone { url: format!("http://127.0.0.1:{port}"), _child: child, client: reqwest::Client::new() }
    }

    async fn get(&self, path: &str) -> Value {
        self.client.get(format!("{}{path}", self.url)).send().await.unwrap().json().await.unwrap()
    }

    async fn control(&self, path: &str, body: Value) -> Value {
        let answer = self.client.post(format!("{}{path}", self.url)).json(&body).send().await.unwrap();
        assert!(answer.status().is_success(), "{path}: {}", answer.status());
        answer.json().await.unwrap_or(Value::Null)
    }

    async fn sent(&self) -> Vec<Value> {
        self.get("/control/sent").await.as_array().cloned().unwrap_or_default()
    }

    async fn connected(&self) {
        eventually(20, "the phone's stream open", || async {
            (self.get("/control/state").await["connected"] == true).then_some(())
        })
        .await;
    }
}

#[tokio::test]
async fn a_phone_registers_only_with_its_line_s_token_and_a_second_registration_replaces_the_first() {
    let rig = DialIn::start().await;
    // Wrong token: refused, and the fake keeps trying as the app does.
    let phone = Phone::start(&rig.device_api_url, "mlr_wrong").await;
    eventually(10, "the refusal", || async {
        (phone.get("/control/state").await["register_status"] == 401).then_some(())
    })
    .await;
    assert_eq!(phone.get("/control/state").await["registered"], false);
    assert_eq!(rig.line().await["device_last_seen_at"], Value::Null);
    // The right one.
    let answer = phone.control("/control/register", json!({"token": rig.registration_token})).await;
    assert_eq!(answer["status"], 201, "{answer}");
    phone.connected().await;
    let line = rig.line().await;
    assert_eq!(line["dial_in"], true);
    assert!(line["device_last_seen_at"].is_string(), "{line}");
    // The webhooks and the signing key reach the phone over its stream (it asks for neither
    // after its first registration).
    eventually(10, "the webhooks learned", || async {
        let learned = phone.get("/control/webhooks").await;
        (learned["webhooks"].as_array().is_some_and(|w| w.len() == 6) && learned["signing_key"].is_string())
            .then_some(learned)
    })
    .await;

    // The app's own calls: a registration gives a device token, a second replaces the first.
    let body = json!({"name": "Google/sdk_phone64", "simCards": []});
    let first: Value = rig
        .mobile(reqwest::Method::POST, "/device", &rig.registration_token, Some(body.clone()))
        .await
        .json()
        .await
        .unwrap();
    let second = rig.mobile(reqwest::Method::POST, "/device", &rig.registration_token, Some(body)).await;
    assert_eq!(second.status(), 201);
    let second: Value = second.json().await.unwrap();
    let (old, new) = (first["token"].as_str().unwrap(), second["token"].as_str().unwrap());
    assert_ne!(first["id"], second["id"]);
    assert_eq!(rig.mobile(reqwest::Method::GET, "/message", old, None).await.status(), 401, "the replaced device");
    assert_eq!(rig.mobile(reqwest::Method::GET, "/message", new, None).await.status(), 200);
    assert_eq!(rig.mobile(reqwest::Method::GET, "/message", &rig.key, None).await.status(), 401, "an API key");
    assert_eq!(
        rig.mobile(reqwest::Method::POST, "/device", new, Some(json!({}))).await.status(),
        401,
        "a device token"
    );
    let patch = rig.mobile(reqwest::Method::PATCH, "/device", new, Some(json!({"id": first["id"]}))).await;
    assert_eq!(patch.status(), 403, "another device's id");
    let patch = rig.mobile(reqwest::Method::PATCH, "/device", new, Some(json!({"id": second["id"]}))).await;
    assert_eq!(patch.status(), 204);
    let bad = rig.client.patch(format!("{}/message", rig.device_api_url)).bearer_auth(new).body("[{").send().await;
    assert_eq!(bad.unwrap().status(), 400, "a body that is not JSON");
    // The settings the phone reads carry the line's signing key, and only its own hook.
    let settings: Value = rig.mobile(reqwest::Method::GET, "/settings", new, None).await.json().await.unwrap();
    assert!(settings["webhooks"]["signing_key"].as_str().unwrap().starts_with("mls_"));
    let hooks: Value = rig.mobile(reqwest::Method::GET, "/webhooks", new, None).await.json().await.unwrap();
    for hook in hooks.as_array().unwrap() {
        let url = hook["url"].as_str().unwrap();
        assert!(
            url.starts_with(&format!("http://127.0.0.1:{}/api/v1/messaging/bridge/hooks/{}", rig.port, rig.line_id))
        );
    }
    // The replaced phone's stream ends, and its calls are refused: it is the new device's line now.
    eventually(15, "the fake told it is not registered", || async {
        let calls = phone.get("/control/calls").await;
        calls.as_array().unwrap().iter().rev().take(3).any(|c| c["status"] == 401).then_some(())
    })
    .await;
    // The command line: --dial-in takes no bridge address.
    let refused = run_cli(
        rig.db.url(),
        &["admin", "line", "create", "--e164", "+12015550111", "--kind", "dedicated", "--org", "org_x"],
    )
    .await;
    assert!(!refused.status.success());
}

#[tokio::test]
async fn a_send_reaches_a_connected_phone_over_its_stream_and_its_reports_move_it_once() {
    let rig = DialIn::start().await;
    let phone = Phone::start(&rig.device_api_url, &rig.registration_token).await;
    phone.connected().await;
    eventually(10, "the line active", || async { (rig.line().await["health"] == "active").then_some(()) }).await;
    // The phone repeats every report and webhook ten times, as its retries can.
    phone.control("/control/repeat-reports", json!({"times": 10})).await;
    let settings =
        rig.client.patch(api(rig.port, "/settings")).bearer_auth(&rig.key).json(&json!({"event_feed": true}));
    assert_eq!(settings.send().await.unwrap().status(), 200);
    let started = Instant::now();
    let id = rig.send("+12015550123", "over the stream").await;
    let reached = eventually(10, "the phone has it", || async {
        let sent = phone.sent().await;
        sent.iter().any(|m| m["id"] == id.as_str()).then_some(started.elapsed())
    })
    .await;
    assert!(reached < Duration::from_secs(1), "the phone got the send after {reached:?}");
    rig.wait_status(&id, "delivered", 30).await;
    // Each step once, though the phone said each ten times (by PATCH and by webhook).
    let feed = json_answer(rig.client.get(format!("{}?limit=200", api(rig.port, "/feed"))).bearer_auth(&rig.key)).await;
    let steps: Vec<&str> = feed["data"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["data"]["message"]["id"] == id.as_str())
        .map(|e| e["type"].as_str().unwrap())
        .collect();
    assert_eq!(
        steps,
        [
            "messaging.message.queued",
            "messaging.message.submitted",
            "messaging.message.sent",
            "messaging.message.delivered"
        ]
    );
    let stats = phone.get("/control/stats").await;
    assert_eq!(stats["duplicate_pulls"], 0, "{stats}");
    assert_eq!(phone.sent().await.len(), 1);

    // A recipient the phone failed: the message fails with the phone's reason.
    phone.control("/control/recipient-states", json!({"+12015550124": "Failed"})).await;
    let failed = rig.send("+12015550124", "fails on the phone").await;
    let message = rig.wait_status(&failed, "failed", 30).await;
    assert!(message["error"].as_str().unwrap().contains("RESULT_ERROR_GENERIC_FAILURE"), "{message}");
}

#[tokio::test]
async fn a_send_while_the_phone_is_away_waits_and_reaches_it_when_it_calls_again() {
    let rig = DialIn::start().await;
    let phone = Phone::start(&rig.device_api_url, &rig.registration_token).await;
    phone.connected().await;
    phone.control("/control/disconnect", json!({})).await;
    eventually(40, "the line offline", || async {
        let line = rig.line().await;
        (line["health"] == "offline").then_some(())
    })
    .await;
    let id = rig.send("+12015550125", "while away").await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(rig.message(&id).await["status"], "queued");
    assert!(phone.sent().await.is_empty());
    phone.control("/control/connect", json!({})).await;
    rig.wait_status(&id, "delivered", 30).await;
    assert_eq!(rig.line().await["health"], "active");
    assert_eq!(phone.sent().await.len(), 1);
}

#[tokio::test]
async fn texts_a_stop_and_a_ping_from_the_phone_reach_msgline() {
    let rig = DialIn::start().await;
    let phone = Phone::start(&rig.device_api_url, &rig.registration_token).await;
    phone.connected().await;
    eventually(10, "the signing key learned", || async {
        phone.get("/control/webhooks").await["signing_key"].is_string().then_some(())
    })
    .await;
    phone.control("/control/inbound", json!({"from": "+12015550126", "body": "hello from a phone"})).await;
    let inbound = eventually(20, "the text received", || async {
        let list = json_answer(rig.client.get(api(rig.port, "/messages")).bearer_auth(&rig.key)).await;
        list["data"].as_array().unwrap().iter().find(|m| m["body"] == "hello from a phone").cloned()
    })
    .await;
    assert_eq!(inbound["status"], "received");
    phone.control("/control/inbound", json!({"from": "+12015550126", "body": "STOP"})).await;
    eventually(20, "the number opted out", || async {
        let list = json_answer(rig.client.get(api(rig.port, "/opt-outs")).bearer_auth(&rig.key)).await;
        list["data"].as_array().unwrap().iter().any(|o| o["phone"] == "+12015550126").then_some(())
    })
    .await;
    let before = rig.line().await["device_last_seen_at"].as_str().unwrap().to_string();
    tokio::time::sleep(Duration::from_millis(20)).await;
    phone.control("/control/ping", json!({})).await;
    eventually(10, "the ping seen", || async {
        let seen = rig.line().await["device_last_seen_at"].as_str().unwrap().to_string();
        (seen > before).then_some(())
    })
    .await;
}

#[tokio::test]
async fn kill_9_while_the_phone_holds_its_messages_loses_none_and_hands_none_out_twice() {
    let mut rig = DialIn::start().await;
    // Two seconds between a message's states: the phone still holds them when msgline dies, and
    // its reports meet a server that is down, then one that is back.
    let phone = Phone::start_with_step(&rig.device_api_url, &rig.registration_token, 2000).await;
    phone.connected().await;
    let mut ids = Vec::new();
    for i in 0..5 {
        ids.push(rig.send(&format!("+1201555013{i}"), &format!("held {i}")).await);
    }
    eventually(20, "the phone took all five", || async { (phone.sent().await.len() == 5).then_some(()) }).await;
    let mut settled = 0;
    for id in &ids {
        settled += usize::from(rig.message(id).await["status"] == "delivered");
    }
    assert!(settled < 5, "the phone still holds messages at the kill");
    rig.restart(true).await;
    for id in &ids {
        rig.wait_status(id, "delivered", 90).await;
    }
    let sent = phone.sent().await;
    assert_eq!(sent.len(), 5, "each sent once: {sent:?}");
    assert_eq!(phone.get("/control/stats").await["duplicate_pulls"], 0);
}

#[tokio::test]
async fn a_message_the_phone_takes_and_never_reports_is_unknown_then_settled_by_a_late_report() {
    let rig = DialIn::start().await;
    // The test is the phone here: it takes the message and says nothing for a while.
    let registered = rig
        .mobile(reqwest::Method::POST, "/device", &rig.registration_token, Some(json!({"name": "test/phone"})))
        .await;
    let token = registered.json::<Value>().await.unwrap()["token"].as_str().unwrap().to_string();
    eventually(10, "the line active", || async { (rig.line().await["health"] == "active").then_some(()) }).await;
    let id = rig.send("+12015550140", "taken, then silence").await;
    let taken: Value = eventually(10, "the message held for the phone", || async {
        let taken: Value =
            rig.mobile(reqwest::Method::GET, "/message?order=fifo", &token, None).await.json().await.unwrap();
        (!taken.as_array().unwrap().is_empty()).then_some(taken)
    })
    .await;
    let item = &taken[0];
    assert_eq!(item["id"], id.as_str());
    assert_eq!(item["phoneNumbers"], json!(["+12015550140"]));
    assert_eq!(item["textMessage"]["text"], "taken, then silence");
    let valid_until = item["validUntil"].as_str().expect("validUntil");
    assert_eq!(valid_until.len(), "2026-01-01T00:00:00.000Z".len(), "three fraction digits and a zone: {valid_until}");
    // Never handed out twice.
    let again: Value = rig.mobile(reqwest::Method::GET, "/message", &token, None).await.json().await.unwrap();
    assert_eq!(again, json!([]));
    let message = rig.wait_status(&id, "unknown", 30).await;
    assert_eq!(message["status"], "unknown");
    // The phone reports at last: Delivered settles it.
    let report = json!([{"id": id, "state": "Delivered", "recipients": [{"phoneNumber": "+12015550140", "state": "Delivered"}],
        "states": {"Pending": "2026-12-06T12:00:00.000Z", "Delivered": "2026-12-06T12:00:05.000Z"}}]);
    assert_eq!(rig.mobile(reqwest::Method::PATCH, "/message", &token, Some(report.clone())).await.status(), 204);
    rig.wait_status(&id, "delivered", 30).await;
    // A report of a message the line does not have is taken and ignored, as the Go server does.
    let stray = json!([{"id": "msg_notours", "state": "Sent", "recipients": [{"phoneNumber": "+1", "state": "Sent"}]}]);
    assert_eq!(rig.mobile(reqwest::Method::PATCH, "/message", &token, Some(stray)).await.status(), 204);
    assert!(
        rig.mobile(reqwest::Method::GET, "/message", &token, None).await.json::<Value>().await.unwrap() == json!([])
    );
}
