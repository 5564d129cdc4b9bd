//! A `kannel` line against Kannel itself: bearerbox, smsbox and Kannel's fake SMSC
//! (`fakesmsc`, in interactive mode: each line written to its input arrives as a message from a
//! phone; each message Kannel hands it is logged), with msgline's line pointed at smsbox and
//! smsbox's `sms-service` pointed at msgline. Kannel comes from Debian's `kannel` and
//! `kannel-extras` (`scripts/kannel` installs them; `scripts/test` runs it first).

use std::{path::PathBuf, process::Stdio, time::Duration};

use serde_json::{Value, json};
use tokio::{
    io::AsyncWriteExt,
    process::{Child, ChildStdin, Command},
};

use crate::{
    helpers::{TestApp, eventually, spawn_app_with},
    simline::free_port,
};

/// The fake SMSC's binary, from the `kannel-extras` package.
fn fakesmsc() -> PathBuf {
    let listed = std::process::Command::new("dpkg").args(["-L", "kannel-extras"]).output().expect("dpkg runs");
    let text = String::from_utf8_lossy(&listed.stdout);
    let path = text
        .lines()
        .find(|l| l.ends_with("/fakesmsc"))
        .expect("kannel-extras is installed (scripts/kannel installs it)");
    PathBuf::from(path)
}

fn bin(name: &str) -> PathBuf {
    for dir in ["/usr/sbin", "/usr/bin", "/sbin"] {
        let path = PathBuf::from(dir).join(name);
        if path.exists() {
            return path;
        }
    }
    panic!("{name} is not installed (scripts/kannel installs Debian's kannel)");
}

/// Kannel running for one test.
pub struct Rig {
    pub dir: PathBuf,
    fake_port: u16,
    conf: PathBuf,
    bearerbox: Option<Child>,
    smsbox: Option<Child>,
    fakesmsc: Option<Child>,
    phone: Option<ChildStdin>,
}

impl Rig {
    /// Writes kannel.conf (the line's `hook_url` in the sms-service) and starts the three boxes.
    pub async fn start(hook_url: &str, sendsms: u16) -> Rig {
        let dir = std::env::temp_dir().join(msgline::ids::new_id("kannel"));
        std::fs::create_dir_all(&dir).unwrap();
        let (admin, boxes, fake) = (free_port(), free_port(), free_port());
        let conf = dir.join("kannel.conf");
        let d = dir.display();
        std::fs::write(
            &conf,
            format!(
                r#"group = core
admin-port = {admin}
admin-interface = 127.0.0.1
admin-password = test
admin-allow-ip = 127.0.0.1
smsbox-port = {boxes}
smsbox-interface = 127.0.0.1
box-allow-ip = 127.0.0.1
store-type = file
store-location = {d}/kannel.store
dlr-storage = internal
log-file = {d}/bearerbox.log
log-level = 0

group = smsc
smsc = fake
smsc-id = fake
our-host = 127.0.0.1
port = {fake}
connect-allow-ip = 127.0.0.1

group = smsbox
bearerbox-host = 127.0.0.1
bearerbox-port = {boxes}
sendsms-port = {sendsms}
sendsms-interface = 127.0.0.1
log-file = {d}/smsbox.log
log-level = 0

group = sendsms-user
username = msgline
password = kannel-password
max-messages = 10
concatenation = true

group = sms-service
keyword = default
catch-all = true
max-messages = 0
get-url = "{hook_url}&kind=mo&from=%p&to=%P&text=%b&charset=%C&coding=%c&time=%T&id=%I"
"#
            ),
        )
        .unwrap();
        std::fs::write(dir.join("kannel.store"), b"").unwrap();
        let mut rig = Rig { dir, fake_port: fake, conf, bearerbox: None, smsbox: None, fakesmsc: None, phone: None };
        rig.start_bearerbox().await;
        rig.start_fakesmsc().await;
        rig.smsbox = Some(rig.spawn("smsbox", bin("smsbox"), &[rig.conf.to_str().unwrap()]));
        let url = format!("http://127.0.0.1:{sendsms}/cgi-bin/sendsms");
        eventually(30, "smsbox to answer", || async { reqwest::get(&url).await.ok().map(drop) }).await;
        rig
    }

    fn spawn(&self, name: &str, program: PathBuf, args: &[&str]) -> Child {
        let log = std::fs::File::create(self.dir.join(format!("{name}.out"))).unwrap();
        Command::new(program)
            .args(args)
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .stdin(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .unwrap_or_else(|e| panic!("{name} starts: {e}"))
    }

    pub async fn start_bearerbox(&mut self) {
        self.bearerbox = Some(self.spawn("bearerbox", bin("bearerbox"), &["-v", "0", self.conf.to_str().unwrap()]));
        tokio::time::sleep(Duration::from_millis(500)).await;
    }

    /// The fake SMSC in interactive mode, at debug level so that it logs every message it gets.
    pub async fn start_fakesmsc(&mut self) {
        let log = std::fs::OpenOptions::new().create(true).append(true).open(self.dir.join("fakesmsc.out")).unwrap();
        let mut child = Command::new(fakesmsc())
            .args(["-H", "127.0.0.1", "-r", &self.fake_port.to_string(), "-v", "0"])
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .stdin(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("fakesmsc starts");
        self.phone = child.stdin.take();
        self.fakesmsc = Some(child);
        tokio::time::sleep(Duration::from_millis(1_000)).await;
    }

    /// A message from a phone: `kind` is `text` or `ucs2` (then `data` is url-encoded UTF-16BE).
    pub async fn phone_sends(&mut self, from: &str, to: &str, kind: &str, data: &str) {
        let line = format!("{from} {to} {kind} {data}\n");
        let phone = self.phone.as_mut().expect("fakesmsc runs");
        phone.write_all(line.as_bytes()).await.unwrap();
        phone.flush().await.unwrap();
        // fakesmsc reads one line each time its input becomes readable: lines written together
        // would wait in its buffer.
        tokio::time::sleep(Duration::from_millis(400)).await;
    }

    /// What the fake SMSC got from Kannel: `(receiver, text)` of each message, UCS-2 decoded and
    /// the parts of a long message joined.
    pub fn delivered(&self) -> Vec<(String, String)> {
        let log = std::fs::read_to_string(self.dir.join("fakesmsc.out")).unwrap_or_default();
        let mut messages: Vec<(String, String)> = Vec::new();
        // A long message's parts: by (receiver, reference), the parts' texts by their number.
        let mut parts: Vec<LongMessage> = Vec::new();
        for got in log.lines().filter_map(|l| l.split_once("Got message").map(|(_, rest)| rest)) {
            let Some(line) = got.split_once('<').and_then(|(_, rest)| rest.rsplit_once('>')).map(|(l, _)| l) else {
                continue;
            };
            let mut fields = line.splitn(4, ' ');
            let (_, receiver, kind, rest) = (
                fields.next().unwrap_or(""),
                fields.next().unwrap_or(""),
                fields.next().unwrap_or(""),
                fields.next().unwrap_or(""),
            );
            let text = match kind {
                "text" => rest.to_string(),
                "ucs-2" => decode_ucs2(&url_decode(rest)),
                "data" => String::from_utf8_lossy(&url_decode(rest)).to_string(),
                "udh" => {
                    let (udh, data) = rest.split_once(" data ").unwrap_or((rest, ""));
                    let udh = url_decode(udh);
                    let bytes = url_decode(data);
                    let text = if bytes.contains(&0) {
                        decode_ucs2(&bytes)
                    } else {
                        String::from_utf8_lossy(&bytes).to_string()
                    };
                    // 05 00 03 reference total number
                    let (reference, total, number) = (udh[3], udh[4], udh[5]);
                    let key = (receiver.to_string(), reference);
                    match parts.iter_mut().find(|(k, ..)| *k == key) {
                        Some((_, got, _)) => got.push((number, text)),
                        None => parts.push((key, vec![(number, text)], total)),
                    }
                    continue;
                }
                _ => rest.to_string(),
            };
            messages.push((receiver.to_string(), text));
        }
        for ((receiver, _), mut got, total) in parts {
            if got.len() == total as usize {
                got.sort();
                messages.push((receiver, got.into_iter().map(|(_, t)| t).collect()));
            }
        }
        messages
    }
}

/// Kannel's url-encoding undone (`%XX`, `+` a space).
/// A long message's parts as they arrive: (receiver, reference), the parts by number, how many.
type LongMessage = ((String, u8), Vec<(u8, String)>, u8);

fn url_decode(text: &str) -> Vec<u8> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'%' if i + 2 < bytes.len() => {
                let hex = std::str::from_utf8(&bytes[i + 1..i + 3]).ok().and_then(|h| u8::from_str_radix(h, 16).ok());
                match hex {
                    Some(byte) => {
                        out.push(byte);
                        i += 3;
                        continue;
                    }
                    None => out.push(b'%'),
                }
            }
            b'+' => out.push(b' '),
            byte => out.push(byte),
        }
        i += 1;
    }
    out
}

fn decode_ucs2(bytes: &[u8]) -> String {
    let units: Vec<u16> = bytes.chunks(2).map(|p| u16::from_be_bytes([p[0], *p.get(1).unwrap_or(&0)])).collect();
    String::from_utf16_lossy(&units)
}

pub fn ucs2_url(text: &str) -> String {
    let bytes: Vec<u8> = text.encode_utf16().flat_map(u16::to_be_bytes).collect();
    bytes
        .iter()
        .map(|b| if b.is_ascii_alphanumeric() { (*b as char).to_string() } else { format!("%{b:02X}") })
        .collect()
}

/// `msgline admin line create`'s arguments for a Kannel line of `org` on smsbox's `sendsms_port`.
fn line_args(org: &str, sendsms_port: u16) -> Vec<String> {
    let url = format!("http://127.0.0.1:{sendsms_port}");
    ["admin", "line", "create", "--e164", "+12015550100", "--kind", "dedicated", "--org", org, "--bridge-kind"]
        .into_iter()
        .chain(["kannel", "--bridge-url", &url, "--bridge-username", "msgline", "--bridge-password", "kannel-password"])
        .map(str::to_string)
        .collect()
}

/// The app with a Kannel line of its organisation, and Kannel pointed at it.
async fn kannel_line(app: &TestApp) -> (Rig, Value) {
    let sendsms_port = free_port();
    let args = line_args(&app.org.id, sendsms_port);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let answer: Value = serde_json::from_slice(&app.cli(&args).await.stdout).expect("admin line create prints JSON");
    // The command prints the URL with MSGLINE_PUBLIC_URL's base; the test's server is elsewhere.
    let printed = answer["hook_url"].as_str().expect("hook_url");
    let path = &printed[printed.find("/api/").expect("a path")..];
    let rig = Rig::start(&format!("{}{path}", app.address), sendsms_port).await;
    (rig, answer)
}

async fn app() -> TestApp {
    spawn_app_with(|c| {
        c.rate_limit_per_minute = 100_000;
        c.send_rate_limit_per_minute = 100_000;
    })
    .await
}

#[tokio::test]
async fn sends_reach_kannels_fake_smsc_intact_and_its_reports_move_them_to_delivered() {
    let app = app().await;
    let (rig, line) = kannel_line(&app).await;
    assert!(line["hook_url"].as_str().unwrap().contains("secret="));
    let lines = app.get("/lines", &app.org.key).await.expect(200);
    let shown = lines["data"].as_array().unwrap().iter().find(|l| l["id"] == line["line_id"]).cloned().unwrap();
    assert_eq!(shown["bridge_kind"], "kannel");
    assert!(!shown.to_string().contains("kannel-password") && !shown.to_string().contains("secret"));

    let long: String = (0..40).map(|i| format!("part{i:02} ")).collect::<String>().trim().to_string();
    let texts = ["Your code is 4821", long.as_str(), "Ticket 🎫 für Zoë, Привет"];
    let mut ids = Vec::new();
    for (i, text) in texts.iter().enumerate() {
        let to = format!("+1201555016{i}");
        let sent = app.post("/messages", &app.org.key, json!({"to": to, "body": text})).await.expect(202);
        assert_eq!(sent["message"]["channel"], "sms");
        ids.push(sent["message"]["id"].as_str().unwrap().to_string());
    }
    for id in &ids {
        let done = app.wait_for_message(&app.org.key, id, "delivered", |m| m["status"] == "delivered").await;
        assert!(done["sent_at"].is_string(), "the SMSC's acceptance came first: {done}");
    }
    let delivered = eventually(10, "the fake SMSC to log the messages", || async {
        let got = rig.delivered();
        (got.len() >= texts.len()).then_some(got)
    })
    .await;
    for (i, text) in texts.iter().enumerate() {
        let to = format!("1201555016{i}");
        let found = delivered.iter().filter(|(receiver, _)| receiver.ends_with(&to)).collect::<Vec<_>>();
        assert_eq!(found.len(), 1, "{to}: {delivered:?}");
        assert_eq!(found[0].1, *text, "the text arrived intact");
    }
}

#[tokio::test]
async fn a_message_from_the_fake_smsc_arrives_once_and_stop_opts_the_number_out() {
    let app = app().await;
    app.keep_events().await;
    let (mut rig, _line) = kannel_line(&app).await;
    rig.phone_sends("+12015550170", "+12015550100", "text", "Hello from a phone").await;
    rig.phone_sends("+12015550171", "+12015550100", "ucs2", &ucs2_url("Привет 🎫")).await;
    let inbound = eventually(20, "both messages to arrive", || async {
        let listed = app.get("/messages?direction=inbound", &app.org.key).await.expect(200);
        let data = listed["data"].as_array().unwrap().clone();
        (data.len() >= 2).then_some(data)
    })
    .await;
    let bodies: Vec<&str> = inbound.iter().map(|m| m["body"].as_str().unwrap()).collect();
    assert!(bodies.contains(&"Hello from a phone"), "{bodies:?}");
    assert!(bodies.contains(&"Привет 🎫"), "{bodies:?}");
    tokio::time::sleep(Duration::from_millis(800)).await;
    let listed = app.get("/messages?direction=inbound", &app.org.key).await.expect(200);
    assert_eq!(listed["data"].as_array().unwrap().len(), 2, "each arrived once");

    rig.phone_sends("+12015550170", "+12015550100", "text", "STOP").await;
    eventually(20, "the opt-out", || async {
        let opt_outs = app.get("/opt-outs", &app.org.key).await.expect(200);
        (opt_outs["data"].as_array().unwrap().len() == 1).then_some(())
    })
    .await;
    app.post("/messages", &app.org.key, json!({"to": "+12015550170", "body": "still there?"})).await.expect_error(
        409,
        "recipient_opted_out",
        None,
    );
    // The reply to STOP went out through Kannel.
    eventually(20, "the STOP reply at the fake SMSC", || async {
        rig.delivered().iter().any(|(to, _)| to.ends_with("12015550170")).then_some(())
    })
    .await;
}

#[tokio::test]
async fn msgline_killed_mid_load_loses_nothing_and_sends_nothing_twice_through_kannel() {
    use crate::helpers::{TestDb, cli_value, serve_process};
    let db = TestDb::new().await;
    let url = db.url().to_string();
    let org = cli_value(&url, &["admin", "org", "create", "--name", "Kannel crash"]).await;
    let (org_id, key) = (org["org_id"].as_str().unwrap(), org["api_key"].as_str().unwrap().to_string());
    let (port, sendsms_port) = (free_port(), free_port());
    let args = line_args(org_id, sendsms_port);
    let line = cli_value(&url, &args.iter().map(String::as_str).collect::<Vec<_>>()).await;
    let printed = line["hook_url"].as_str().expect("hook_url");
    let path = &printed[printed.find("/api/").unwrap()..];
    let rig = Rig::start(&format!("http://127.0.0.1:{port}{path}"), sendsms_port).await;
    let env = [("MSGLINE_BRIDGE_TIMEOUT_MS", "2000")];
    let mut server = serve_process(&url, port, &env).await;
    let client = reqwest::Client::builder().timeout(Duration::from_secs(30)).build().unwrap();
    let api = format!("http://127.0.0.1:{port}/api/v1/messaging/messages");
    let total = 80;
    let send = move |i: usize| {
        let (client, api, key) = (client.clone(), api.clone(), key.clone());
        async move {
            let answer = client
                .post(&api)
                .bearer_auth(&key)
                .header("Idempotency-Key", format!("kannel-crash-{i}"))
                .json(&json!({"to": format!("+1201555{:04}", 2000 + i), "body": format!("crash message {i}")}))
                .send()
                .await
                .ok()?;
            answer.status().is_success().then_some(())
        }
    };
    // Half the sends, with the server killed while they are under way.
    let first = tokio::spawn({
        let send = send.clone();
        async move {
            use futures_util::StreamExt;
            futures_util::stream::iter(0..total / 2)
                .for_each_concurrent(8, |i| {
                    let send = send.clone();
                    async move {
                        send(i).await;
                    }
                })
                .await;
        }
    });
    tokio::time::sleep(Duration::from_millis(300)).await;
    server.start_kill().unwrap();
    server.wait().await.unwrap();
    first.await.unwrap();
    let _server = serve_process(&url, port, &env).await;
    // Every send again (a client retries what it did not see answered), then the rest.
    {
        use futures_util::StreamExt;
        futures_util::stream::iter(0..total)
            .for_each_concurrent(8, |i| {
                let send = send.clone();
                async move {
                    send(i).await;
                }
            })
            .await;
    }
    let reader = msgline::Db::connect(&url).await.unwrap();
    let statuses = eventually(60, "every message to settle", || async {
        let rows: Vec<(String, String)> =
            sqlx::query_as("SELECT body, status FROM messages WHERE direction = 'outbound'")
                .fetch_all(reader.writer())
                .await
                .unwrap();
        let settled = rows.iter().all(|(_, s)| matches!(s.as_str(), "delivered" | "failed"));
        (rows.len() == total && settled).then_some(rows)
    })
    .await;
    reader.close().await;
    let delivered = statuses.iter().filter(|(_, s)| s == "delivered").count();
    // The fake SMSC logs what it got a moment after Kannel reported it.
    let at_smsc = eventually(20, "the fake SMSC to log every delivered message", || async {
        let got = rig.delivered();
        (got.len() >= delivered).then_some(got)
    })
    .await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let at_smsc = if rig.delivered().len() > at_smsc.len() { rig.delivered() } else { at_smsc };
    let mut seen = std::collections::HashMap::new();
    for (_, text) in &at_smsc {
        *seen.entry(text.clone()).or_insert(0) += 1;
    }
    assert!(seen.values().all(|n| *n == 1), "nothing reached the SMSC twice: {seen:?}");
    assert_eq!(statuses.len(), total, "one message per idempotency key");
    for (body, status) in &statuses {
        if status == "delivered" {
            assert_eq!(seen.get(body), Some(&1), "{body} is delivered and reached the SMSC once");
        }
    }
    // A message whose answer was lost in the kill would be failed as never known only after
    // ten minutes: in this run every call was answered or certainly never made.
    assert_eq!(delivered, total, "{statuses:?}");
}
