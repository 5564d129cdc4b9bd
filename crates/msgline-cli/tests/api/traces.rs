//! Traces over OTLP/HTTP: `msgline serve` with `MSGLINE_OTLP_ENDPOINT` posts its spans to
//! tests/support/otlp_receiver.py, an OTLP receiver in its own process that decodes them with the
//! `opentelemetry-proto` package (scripts/test installs it). The tests check the tree of a send's
//! trace, an agent run's span, and that no span carries a secret, a text or a phone number.

use std::{collections::HashMap, process::Stdio, time::Duration};

use serde_json::{Value, json};
use tokio::{
    io::{AsyncBufReadExt, BufReader},
    process::{Child, Command},
};

use crate::{
    fakemodel::{FakeModel, text, tool_calls},
    helpers::{ProcessLine, TestDb, api, eventually, json_answer, process_line, serve_process},
    receiver::Receiver,
};

const SCRIPT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/support/otlp_receiver.py");
const FRIEND: &str = "+12015550142";

/// One span as the receiver decoded it.
#[derive(Debug, Clone)]
struct Span {
    trace_id: String,
    span_id: String,
    parent: String,
    name: String,
    /// How long it took, in milliseconds.
    ms: f64,
    attributes: HashMap<String, Value>,
}

impl Span {
    fn attribute(&self, key: &str) -> Option<&str> {
        self.attributes.get(key).and_then(Value::as_str)
    }

    fn is_about(&self, message_id: &str) -> bool {
        self.attribute("msgline.message_id") == Some(message_id)
    }
}

struct OtlpReceiver {
    base: String,
    client: reqwest::Client,
    _child: Child,
}

impl OtlpReceiver {
    async fn start() -> OtlpReceiver {
        let mut child = Command::new("python3")
            .arg(SCRIPT)
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(true)
            .spawn()
            .expect("python3 runs the OTLP receiver");
        let stdout = child.stdout.take().expect("stdout");
        let first = tokio::time::timeout(Duration::from_secs(20), BufReader::new(stdout).lines().next_line())
            .await
            .expect("the OTLP receiver prints its address in time")
            .expect("receiver stdout")
            .expect("a line");
        let printed: Value = serde_json::from_str(&first).expect("the OTLP receiver prints JSON");
        if let Some(error) = printed["error"].as_str() {
            panic!("the OTLP receiver cannot decode spans: {error} (scripts/test installs it)");
        }
        let base = format!("http://{}", printed["listening"].as_str().expect("listening"));
        OtlpReceiver { base, client: reqwest::Client::new(), _child: child }
    }

    async fn spans(&self) -> Vec<Span> {
        let all: Value = json_answer(self.client.get(format!("{}/spans", self.base))).await;
        all.as_array()
            .expect("a list")
            .iter()
            .map(|s| {
                assert!(s["error"].is_null(), "the receiver could not decode an export: {s}");
                Span {
                    trace_id: s["trace_id"].as_str().expect("trace_id").into(),
                    span_id: s["span_id"].as_str().expect("span_id").into(),
                    parent: s["parent_span_id"].as_str().expect("parent_span_id").into(),
                    name: s["name"].as_str().expect("name").into(),
                    ms: (s["end"].as_u64().expect("end") - s["start"].as_u64().expect("start")) as f64 / 1e6,
                    attributes: serde_json::from_value(s["attributes"].clone()).expect("attributes"),
                }
            })
            .collect()
    }

    /// Waits until the spans `done` wants have arrived; else fails naming those that did.
    async fn wait_for(&self, what: &str, done: impl Fn(&[Span]) -> bool) -> Vec<Span> {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
        loop {
            let spans = self.spans().await;
            if done(&spans) {
                return spans;
            }
            if tokio::time::Instant::now() > deadline {
                let got: Vec<String> = spans
                    .iter()
                    .map(|s| format!("{} {:?} ({})", s.name, s.attribute("msgline.message_id"), s.trace_id))
                    .collect();
                panic!("timed out waiting for {what}; the receiver got: {got:#?}");
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
}

/// A server process exporting to an OTLP receiver, with a line (the simulator) and a webhook
/// endpoint of a receiver, and hosted agents' model a fake on a loopback port.
struct Traced {
    otlp: OtlpReceiver,
    hooks: Receiver,
    webhook_secret: String,
    bridge_secret: String,
    key: String,
    line_id: String,
    port: u16,
    sim_port: u16,
    client: reqwest::Client,
    _server: Child,
    _sim: Child,
    _db: TestDb,
}

impl Traced {
    async fn start(model: &FakeModel) -> Traced {
        let db = TestDb::new().await;
        let otlp = OtlpReceiver::start().await;
        let ProcessLine { key, line, port, sim_port, sim, .. } = process_line(db.url(), "Traced").await;
        let env = [
            ("MSGLINE_ALLOW_PRIVATE_TARGETS", "true"),
            ("MSGLINE_OTLP_ENDPOINT", otlp.base.as_str()),
            ("MSGLINE_AGENT_MODEL_URL", model.url.as_str()),
            ("MSGLINE_AGENT_MODEL", "test-model"),
            // The exporter sends what it has every 100 ms instead of every 5 s.
            ("OTEL_BSP_SCHEDULE_DELAY", "100"),
        ];
        let server = serve_process(db.url(), port, &env).await;
        let hooks = Receiver::start().await;
        let client = reqwest::Client::new();
        let endpoint = json_answer(client.post(api(port, "/webhooks")).bearer_auth(&key).json(
            &json!({"url": hooks.url("/hook"), "events": ["messaging.message.delivered", "messaging.message.received"]}),
        ))
        .await;
        Traced {
            webhook_secret: endpoint["secret"].as_str().expect("the endpoint's secret").into(),
            bridge_secret: line["bridge_secret"].as_str().expect("bridge_secret").into(),
            line_id: line["line_id"].as_str().expect("line_id").into(),
            otlp,
            hooks,
            key,
            port,
            sim_port,
            client,
            _server: server,
            _sim: sim,
            _db: db,
        }
    }

    async fn message(&self, id: &str) -> Value {
        json_answer(self.client.get(api(self.port, &format!("/messages/{id}"))).bearer_auth(&self.key)).await
    }

    /// What no span may carry, whatever its key: the API key, both secrets, `texts` and the
    /// contact's number.
    fn assert_nothing_secret(&self, spans: &[Span], texts: &[&str]) {
        let secrets = [self.key.as_str(), &self.webhook_secret, &self.bridge_secret, FRIEND, &FRIEND[1..]];
        for span in spans {
            for (key, value) in &span.attributes {
                let value = value.to_string();
                for secret in secrets.iter().chain(texts) {
                    assert!(!value.contains(secret), "span {} carries {secret:?} in {key}: {value}", span.name);
                }
            }
        }
    }
}

/// The spans of one trace as an indented tree, each with its message id: what
/// docs/operations.md shows.
fn tree(spans: &[Span], trace_id: &str) -> String {
    fn walk(spans: &[&Span], parent: &str, depth: usize, out: &mut String) {
        for span in spans.iter().filter(|s| s.parent == parent) {
            let mut keys: Vec<_> = span.attributes.iter().collect();
            keys.sort_by(|a, b| a.0.cmp(b.0));
            let shown: Vec<String> = keys
                .iter()
                .map(|(k, v)| format!("{k}={}", v.as_str().map_or_else(|| v.to_string(), str::to_string)))
                .collect();
            let indent = "  ".repeat(depth);
            out.push_str(&format!("{indent}{} ({:.1} ms)\n{indent}    {}\n", span.name, span.ms, shown.join(" ")));
            walk(spans, &span.span_id, depth + 1, out);
        }
    }
    let in_trace: Vec<&Span> = spans.iter().filter(|s| s.trace_id == trace_id).collect();
    let ids: Vec<&str> = in_trace.iter().map(|s| s.span_id.as_str()).collect();
    let mut out = String::new();
    if let Some(root) = in_trace.iter().find(|s| !ids.contains(&s.parent.as_str())) {
        walk(&in_trace, &root.parent, 0, &mut out);
    }
    out
}

#[tokio::test]
async fn a_send_is_one_trace_from_its_request_through_its_call_to_its_report_and_no_span_holds_a_secret() {
    let model = FakeModel::start(Vec::new()).await;
    let rig = Traced::start(&model).await;
    const BODY: &str = "the canary text of the traced send";
    let sent = json_answer(
        rig.client.post(api(rig.port, "/messages")).bearer_auth(&rig.key).json(&json!({"to": FRIEND, "body": BODY})),
    )
    .await;
    let id = sent["message"]["id"].as_str().unwrap_or_else(|| panic!("accepted: {sent}")).to_string();
    eventually(30, "the message to be delivered", || async {
        (rig.message(&id).await["status"] == "delivered").then_some(())
    })
    .await;
    rig.hooks.wait_for(1, Some("/hook")).await;

    let wanted = ["http.request", "send.commit", "dispatch.claim", "line.call", "line.report", "webhook.delivery"];
    let spans = rig
        .otlp
        .wait_for("the send's spans", |spans| {
            let named = |name: &str| spans.iter().any(|s| s.is_about(&id) && s.name.starts_with(name));
            named("POST ") && wanted[1..].iter().all(|name| named(name))
        })
        .await;
    let of_send: Vec<&Span> = spans.iter().filter(|s| s.is_about(&id)).collect();
    let request = of_send.iter().find(|s| s.name == "POST /api/v1/messaging/messages").expect("the request's span");
    assert_eq!(request.parent, "", "the request starts the trace");
    assert_eq!(request.attribute("http.route"), Some("/api/v1/messaging/messages"));
    assert_eq!(request.attributes["http.response.status_code"], 202);
    let trace = &request.trace_id;
    for span in &of_send {
        assert_eq!(&span.trace_id, trace, "{} is in the send's trace", span.name);
    }
    let by_id: HashMap<&str, &Span> = spans.iter().map(|s| (s.span_id.as_str(), s)).collect();
    let parent_of = |name: &str| {
        let span = of_send.iter().find(|s| s.name == name).unwrap_or_else(|| panic!("a {name} span"));
        by_id.get(span.parent.as_str()).unwrap_or_else(|| panic!("{name}'s parent is in the trace")).name.clone()
    };
    assert_eq!(parent_of("send.commit"), request.name);
    assert_eq!(parent_of("dispatch.claim"), request.name);
    assert_eq!(parent_of("line.call"), "dispatch.claim");
    assert_eq!(parent_of("line.report"), "line.call");
    assert_eq!(parent_of("webhook.delivery"), request.name);
    let call = of_send.iter().find(|s| s.name == "line.call").expect("line.call");
    assert_eq!(call.attribute("msgline.line_id"), Some(rig.line_id.as_str()));
    assert_eq!(call.attribute("msgline.outcome"), Some("accepted"));
    let reports: Vec<&str> =
        of_send.iter().filter(|s| s.name == "line.report").filter_map(|s| s.attribute("msgline.status")).collect();
    assert!(reports.contains(&"delivered"), "the delivered report is in the trace: {reports:?}");
    let delivery = of_send.iter().find(|s| s.name == "webhook.delivery").expect("webhook.delivery");
    assert_eq!(delivery.attribute("msgline.event_type"), Some("messaging.message.delivered"));
    assert_eq!(delivery.attribute("msgline.outcome"), Some("delivered"));
    assert_eq!(delivery.attributes["http.response.status_code"], 200);
    rig.assert_nothing_secret(&spans, &[BODY, &rig.hooks.url("/hook")]);
    println!("the send's trace:\n{}", tree(&spans, trace));
}

#[tokio::test]
async fn an_agent_run_is_a_span_and_the_send_of_its_reply_goes_on_under_it() {
    const REPLY: &str = "the canary reply of the traced agent";
    const ASKED: &str = "the canary question to the traced agent";
    let model = FakeModel::start(vec![tool_calls(&[("messaging_send", json!({"body": REPLY}))]), text("done")]).await;
    let rig = Traced::start(&model).await;
    let agent = json_answer(rig.client.post(api(rig.port, "/agents")).bearer_auth(&rig.key).json(&json!({
        "name": "Ava", "line_id": rig.line_id, "instructions": "the canary instructions", "tools": ["messaging_send"]
    })))
    .await;
    let agent_id = agent["id"].as_str().unwrap_or_else(|| panic!("an agent: {agent}")).to_string();
    let inbound = rig
        .client
        .post(format!("http://127.0.0.1:{}/control/inbound", rig.sim_port))
        .json(&json!({"from": FRIEND, "body": ASKED}))
        .send()
        .await
        .expect("the sim answers");
    assert!(inbound.status().is_success());

    let spans = rig
        .otlp
        .wait_for("the agent run's span and its reply's call", |spans| {
            let run = spans.iter().find(|s| s.name == "agent.run" && s.attribute("msgline.outcome").is_some());
            run.is_some_and(|run| {
                spans.iter().any(|s| {
                    s.name == "line.call" && s.trace_id == run.trace_id && s.attribute("msgline.outcome").is_some()
                })
            })
        })
        .await;
    let run = spans.iter().find(|s| s.name == "agent.run").expect("agent.run");
    assert_eq!(run.parent, "", "an agent run starts a trace of its own");
    assert_eq!(run.attribute("msgline.agent_id"), Some(agent_id.as_str()));
    assert_eq!(run.attribute("msgline.outcome"), Some("replied"));
    let asked = run.attribute("msgline.message_id").expect("the run names the message that started it");
    assert!(asked.starts_with("msg_"), "{asked}");
    let claim = spans
        .iter()
        .find(|s| s.name == "dispatch.claim" && s.trace_id == run.trace_id)
        .expect("the reply's claim is in the run's trace");
    assert_eq!(claim.parent, run.span_id, "the reply's claim hangs under the run");
    let reply = claim.attribute("msgline.message_id").expect("the reply's id");
    assert_ne!(reply, asked);
    rig.assert_nothing_secret(&spans, &[REPLY, ASKED, "the canary instructions"]);
    println!("the agent run's trace:\n{}", tree(&spans, &run.trace_id));
}
