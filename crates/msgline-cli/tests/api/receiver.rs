//! A customer's webhook receiver for tests: `tests/support/receiver.py` as its own process on a
//! loopback port. It records what it gets, answers as told, and verifies signatures with code
//! independent of msgline's (the `standardwebhooks` package when installed, and Python's hmac).

use std::{process::Stdio, time::Duration};

use serde_json::{Value, json};
use tokio::{
    io::{AsyncBufReadExt, BufReader},
    process::{Child, Command},
};

use crate::helpers::eventually;

const SCRIPT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/support/receiver.py");

/// One delivery as the receiver got it.
#[derive(Debug, Clone)]
pub struct Received {
    pub index: usize,
    pub path: String,
    pub headers: Value,
    /// The raw body, exactly as it arrived.
    pub body: String,
    /// Arrival, seconds since the Unix epoch.
    pub at: f64,
}

impl Received {
    pub fn header(&self, name: &str) -> &str {
        self.headers[name].as_str().unwrap_or_else(|| panic!("header {name} in {}", self.headers))
    }

    pub fn json(&self) -> Value {
        serde_json::from_str(&self.body).expect("the body is JSON")
    }

    /// The `webhook-id` header.
    pub fn id(&self) -> String {
        self.header("webhook-id").to_string()
    }

    pub fn event_type(&self) -> String {
        self.json()["type"].as_str().expect("type").to_string()
    }

    pub fn timestamp(&self) -> i64 {
        self.header("webhook-timestamp").parse().expect("whole seconds")
    }
}

pub struct Receiver {
    pub base: String,
    pub verifiers: Vec<String>,
    client: reqwest::Client,
    _child: Child,
}

impl Receiver {
    pub async fn start() -> Receiver {
        let mut child = Command::new("python3")
            .arg(SCRIPT)
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(true)
            .spawn()
            .expect("python3 runs the test receiver");
        let stdout = child.stdout.take().expect("stdout");
        let first = tokio::time::timeout(Duration::from_secs(20), BufReader::new(stdout).lines().next_line())
            .await
            .expect("the receiver prints its address in time")
            .expect("receiver stdout")
            .expect("a line");
        let printed: Value = serde_json::from_str(&first).expect("the receiver prints JSON");
        let verifiers = printed["verifiers"].as_array().expect("verifiers").iter().map(|v| v.to_string()).collect();
        Receiver {
            base: format!("http://{}", printed["listening"].as_str().expect("listening")),
            verifiers,
            client: reqwest::Client::new(),
            _child: child,
        }
    }

    /// The URL of one of the receiver's paths, to register as an endpoint.
    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    /// Answers to give, in order, then `default` for every later delivery.
    pub async fn script(&self, responses: Value, default: Value) {
        let answer = self
            .client
            .post(self.url("/_control/script"))
            .json(&json!({"responses": responses, "default": default}))
            .send()
            .await
            .expect("receiver answers");
        assert!(answer.status().is_success());
    }

    /// Every delivery so far, oldest first.
    pub async fn received(&self) -> Vec<Received> {
        let all = self.control("/_control/received").await;
        all.as_array()
            .expect("a list")
            .iter()
            .enumerate()
            .map(|(index, r)| Received {
                index,
                path: r["path"].as_str().expect("path").to_string(),
                headers: r["headers"].clone(),
                body: r["body"].as_str().expect("body").to_string(),
                at: r["at"].as_f64().expect("at"),
            })
            .collect()
    }

    /// The most deliveries the receiver was answering at the same time.
    pub async fn most_at_once(&self) -> u64 {
        self.control("/_control/at_once").await["most"].as_u64().expect("most")
    }

    /// What one of the receiver's control reads answers.
    async fn control(&self, path: &str) -> Value {
        self.client.get(self.url(path)).send().await.expect("receiver answers").json().await.expect("JSON")
    }

    /// The deliveries to one path.
    pub async fn received_on(&self, path: &str) -> Vec<Received> {
        self.received().await.into_iter().filter(|r| r.path == path).collect()
    }

    /// Waits until at least `count` deliveries have arrived (on `path`, when given).
    pub async fn wait_for(&self, count: usize, path: Option<&str>) -> Vec<Received> {
        eventually(30, &format!("{count} deliveries on {path:?}"), || async {
            let got: Vec<Received> =
                self.received().await.into_iter().filter(|r| path.is_none_or(|p| r.path == p)).collect();
            (got.len() >= count).then_some(got)
        })
        .await
    }

    /// Whether every verifier the receiver has accepts delivery `index` under `secret`; panics
    /// when they disagree.
    pub async fn verifies(&self, index: usize, secret: &str, tamper: bool) -> bool {
        let answer: Value = self
            .client
            .post(self.url("/_control/verify"))
            .json(&json!({"index": index, "secret": secret, "tamper": tamper}))
            .send()
            .await
            .expect("receiver answers")
            .json()
            .await
            .expect("JSON");
        let results = answer["results"].as_object().expect("results");
        assert!(!results.is_empty(), "at least one verifier ran");
        let verdicts: Vec<bool> = results.values().map(|r| r["valid"].as_bool().expect("valid")).collect();
        assert!(verdicts.iter().all(|v| *v == verdicts[0]), "the verifiers disagree: {answer}");
        verdicts[0]
    }
}
