//! `msgline demo`: a newcomer's first run, with the curl commands it prints.

use std::process::Stdio;

use serde_json::Value;
use tokio::{
    io::{AsyncBufReadExt, BufReader},
    process::Command,
};

use crate::{helpers::eventually, simline::free_port};

#[tokio::test]
async fn the_demo_prints_a_key_and_curl_commands_that_send_a_message_to_delivered() {
    let dir = tempfile::tempdir().unwrap();
    let (port, dedicated, shared) = (free_port(), free_port(), free_port());
    let mut demo = Command::new(env!("CARGO_BIN_EXE_msgline"))
        .args(["demo", "--database", dir.path().join("demo.db").to_str().unwrap()])
        .args(["--dedicated-sim", &format!("127.0.0.1:{dedicated}"), "--shared-sim", &format!("127.0.0.1:{shared}")])
        .env("MSGLINE_LISTEN", format!("127.0.0.1:{port}"))
        .env_remove("MSGLINE_DATABASE_URL")
        .stdout(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(demo.stdout.take().unwrap()).lines();
    let mut printed = String::new();
    while let Some(line) = lines.next_line().await.unwrap() {
        printed.push_str(&line);
        printed.push('\n');
        if line.starts_with("Stop with Ctrl-C") {
            break;
        }
    }
    let key = printed
        .lines()
        .find_map(|l| l.trim().strip_prefix("export MSGLINE_KEY="))
        .expect("the demo prints the key")
        .to_string();
    // The console's sign-in link opens the page where the demo owner sets a password.
    let link = printed
        .lines()
        .map(str::trim)
        .find(|l| l.starts_with(&format!("http://127.0.0.1:{port}/console/welcome?token=mls_link_")))
        .expect("the demo prints the console's sign-in link");
    let welcome = reqwest::get(link).await.unwrap();
    assert_eq!(welcome.status(), 200);
    assert!(welcome.text().await.unwrap().contains("owner@demo.example"));
    let commands = printed.split("Try:").nth(1).unwrap().split("Stop with Ctrl-C").next().unwrap();
    let script = format!("set -e\nexport MSGLINE_KEY={key}\n{commands}");
    let output = Command::new("bash").arg("-c").arg(&script).output().await.unwrap();
    assert!(output.status.success(), "the printed commands run: {}", String::from_utf8_lossy(&output.stderr));
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(stdout.contains("\"status\":\"queued\""), "the send was accepted: {stdout}");

    let client = reqwest::Client::new();
    let sent: Vec<Value> =
        client.get(format!("http://127.0.0.1:{dedicated}/control/sent")).send().await.unwrap().json().await.unwrap();
    assert_eq!(sent.len(), 1);
    assert_eq!(sent[0]["body"], "Hello from msgline");
    eventually(20, "the demo message to be delivered", || async {
        let list: Value = client
            .get(format!("http://127.0.0.1:{port}/api/v1/messaging/messages?direction=outbound"))
            .bearer_auth(&key)
            .send()
            .await
            .ok()?
            .json()
            .await
            .ok()?;
        (list["data"][0]["status"] == "delivered").then_some(())
    })
    .await;
}
