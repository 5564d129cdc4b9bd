//! Kannel for one test: bearerbox, smsbox and Kannel's fake SMSC (`fakesmsc`, in interactive
//! mode) from Debian's `kannel` and `kannel-extras`, on loopback ports, with a kannel.conf that
//! points its `sms-service` at msgline's hook URL for the line.

use std::{path::PathBuf, process::Stdio, time::Duration};

use tokio::{
    io::AsyncWriteExt,
    process::{Child, ChildStdin, Command},
};

use crate::{helpers::eventually, simline::free_port};

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
    sendsms_port: u16,
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
        let dlr_table = format!("msgline_test_{}", dir.file_name().unwrap().to_string_lossy());
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
dlr-storage = redis
# What the fake SMSC's connection had queued when it dropped is tried again after this long.
sms-resend-freq = 2
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
# Reports and arriving messages that find msgline stopped (a restart, a kill) are called again,
# every second here (docs/lines.md asks for minutes of this).
http-request-retry = 60
http-queue-delay = 1

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

# Reports' bookkeeping outlives a restart of bearerbox (docs/lines.md): Redis, under a key
# prefix of this test's own.
group = redis-connection
id = dlr
host = 127.0.0.1
port = 6379
database = 0
max-connections = 1

group = dlr-db
id = dlr
table = {dlr_table}
ttl = 3600
field-smsc = smsc
field-timestamp = ts
field-destination = destination
field-source = source
field-service = service
field-url = url
field-mask = mask
field-status = status
field-boxc-id = boxc
"#
            ),
        )
        .unwrap();
        std::fs::write(dir.join("kannel.store"), b"").unwrap();
        let mut rig = Rig {
            dir,
            fake_port: fake,
            sendsms_port: sendsms,
            conf,
            bearerbox: None,
            smsbox: None,
            fakesmsc: None,
            phone: None,
        };
        rig.start_bearerbox().await;
        rig.start_fakesmsc().await;
        rig.restart_smsbox().await;
        rig
    }

    fn spawn(&self, name: &str, program: PathBuf, args: &[&str]) -> Child {
        let path = self.dir.join(format!("{name}.out"));
        let log = std::fs::OpenOptions::new().create(true).append(true).open(path).unwrap();
        Command::new(program)
            .args(args)
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .stdin(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .unwrap_or_else(|e| panic!("{name} starts: {e}"))
    }

    /// kill -9 of bearerbox; the fake SMSC, whose connection it held, exits with it. Returns the
    /// receivers of the messages that bearerbox handed to the fake SMSC's connection (whose
    /// driver then records where their reports go, which bearerbox logs at debug level).
    pub async fn kill_bearerbox(&mut self) -> Vec<String> {
        let mut bearerbox = self.bearerbox.take().expect("bearerbox runs");
        let pid = bearerbox.id().expect("bearerbox runs");
        bearerbox.start_kill().unwrap();
        bearerbox.wait().await.unwrap();
        let mut fakesmsc = self.fakesmsc.take().expect("fakesmsc runs");
        self.phone = None;
        if tokio::time::timeout(Duration::from_secs(5), fakesmsc.wait()).await.is_err() {
            fakesmsc.start_kill().unwrap();
            fakesmsc.wait().await.unwrap();
        }
        let log = std::fs::read_to_string(self.dir.join("bearerbox.log")).unwrap_or_default();
        log.lines()
            .filter(|l| l.contains(&format!("[{pid}]")) && l.contains("Adding DLR"))
            .filter_map(|l| l.split("dst=").nth(1).and_then(|rest| rest.split(',').next()))
            .map(str::to_string)
            .collect()
    }

    /// smsbox stopped (it ends itself once bearerbox is gone, for Debian's run_kannel_box to
    /// start it again, and sometimes hangs on the way out) and started again; answers once its
    /// `sendsms` does.
    pub async fn restart_smsbox(&mut self) {
        if let Some(mut smsbox) = self.smsbox.take() {
            smsbox.start_kill().ok();
            smsbox.wait().await.unwrap();
        }
        self.smsbox = Some(self.spawn("smsbox", bin("smsbox"), &[self.conf.to_str().unwrap()]));
        let url = format!("http://127.0.0.1:{}/cgi-bin/sendsms", self.sendsms_port);
        eventually(30, "smsbox to answer", || async { reqwest::get(&url).await.ok().map(drop) }).await;
    }

    pub async fn start_bearerbox(&mut self) {
        self.bearerbox = Some(self.spawn("bearerbox", bin("bearerbox"), &["-v", "0", self.conf.to_str().unwrap()]));
        tokio::time::sleep(Duration::from_millis(500)).await;
    }

    /// The fake SMSC stopped: bearerbox keeps what it is given in its store until it is back.
    pub async fn stop_fakesmsc(&mut self) {
        let mut fakesmsc = self.fakesmsc.take().expect("fakesmsc runs");
        self.phone = None;
        fakesmsc.start_kill().unwrap();
        fakesmsc.wait().await.unwrap();
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

/// UTF-16BE bytes as text, as msgline decodes a UCS-2 message from Kannel.
fn decode_ucs2(bytes: &[u8]) -> String {
    msgline::testing::kannel_decode_text(bytes, "UTF-16BE").expect("UTF-16 always decodes")
}

pub fn ucs2_url(text: &str) -> String {
    let bytes: Vec<u8> = text.encode_utf16().flat_map(u16::to_be_bytes).collect();
    bytes
        .iter()
        .map(|b| if b.is_ascii_alphanumeric() { (*b as char).to_string() } else { format!("%{b:02X}") })
        .collect()
}
