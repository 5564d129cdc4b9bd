//! `msgline sim`: a complete bridge for one simulated phone line, in its own process.
//!
//! It answers the bridge protocol (capabilities, sends, group creation, status lookups,
//! reachability), progresses what it accepted through sent → delivered (→ read) and reports each
//! step to the callback URL. Its control API (`/control/...`) drives the device from a test or a
//! person: inbound messages, native poll taps, the sent log, and the answering mode.

use std::{
    collections::{HashMap, HashSet},
    net::SocketAddr,
    sync::{
        Arc, Mutex,
        atomic::{AtomicU64, Ordering},
    },
    time::Duration,
};

use axum::{
    Json, Router,
    extract::{Path, State},
    http::{HeaderMap, StatusCode, header},
    response::{IntoResponse, Response},
    routing::{get, post},
};
use rand::{Rng, SeedableRng, rngs::StdRng};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use tokio::sync::mpsc;

use super::{
    BridgeEvent, BridgeEventPayload, CapabilitiesAnswer, ConversationSignal, GroupChangeRequest, GroupRequest,
    InboundFile, ReachabilityAnswer, ReachabilityRequest, ReactionRequest, SendAnswer, SendRequest, StatusAnswer,
};
use crate::{clock, db::lines::Capabilities};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// Accept every send and progress it.
    Accept,
    /// Refuse every send.
    Reject,
    /// Take every send but never answer the call in time; report the real outcome later.
    Timeout,
    /// A random mix of the other three (repeatable with a seed).
    Flaky,
}

#[derive(Debug, Clone)]
pub struct SimConfig {
    pub listen: String,
    pub e164: String,
    pub token: Option<String>,
    pub callback_url: Option<String>,
    pub callback_secret: Option<String>,
    pub groups: bool,
    pub sms_only: Vec<String>,
    pub mode: Mode,
    pub seed: Option<u64>,
    /// Progress delivered messages on to `read`.
    pub read_receipts: bool,
    /// Pause between the steps of a message's progress.
    pub step: Duration,
    /// In `timeout` mode, how long before the line reports the outcome by callback.
    pub late_report: Duration,
    /// Where the line keeps what it was handed across restarts (see [`Journal`]).
    pub journal: Option<std::path::PathBuf>,
    /// How long the line takes to answer a send it has decided (a phone takes a moment).
    pub answer_delay: Duration,
    /// Sends files over SMS (MMS).
    pub mms: bool,
}

impl Default for SimConfig {
    fn default() -> Self {
        Self {
            listen: "127.0.0.1:9090".into(),
            e164: "+12015550100".into(),
            token: None,
            callback_url: None,
            callback_secret: None,
            groups: true,
            sms_only: Vec::new(),
            mode: Mode::Accept,
            seed: None,
            read_receipts: false,
            step: Duration::from_millis(20),
            late_report: Duration::from_secs(30),
            journal: None,
            answer_delay: Duration::ZERO,
            mms: true,
        }
    }
}

/// One entry of the sent log, as `GET /control/sent` shows it.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Sent {
    id: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    to: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    chat: Option<String>,
    channel: String,
    kind: String,
    body: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    poll: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    vcard: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    name: Option<String>,
    /// A group change's participants removed (`to` holds those added).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    remove: Vec<String>,
    /// A group change that makes the line leave the group.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    leave: bool,
    /// A tapback's type and target.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    reaction: Option<ReactionRequest>,
    /// The files of a `media` send as the line fetched them: `{id, content_type, size, sha256}`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    attachments: Vec<Value>,
    at: String,
}

/// How long a typing indicator shows when nothing stops it sooner.
const TYPING_SHOWS: Duration = Duration::from_secs(5);

/// What the line knows of a message or group it was handed.
#[derive(Debug, Clone)]
struct Known {
    status: String,
    reason: Option<String>,
    /// The answer given to the first call, repeated for a repeated id.
    answer: (StatusCode, SendAnswer),
}

struct Sim {
    config: SimConfig,
    sms_only: HashSet<String>,
    mode: Mutex<Mode>,
    groups: Mutex<bool>,
    rng: Mutex<StdRng>,
    sent: Mutex<Vec<Sent>>,
    known: Mutex<HashMap<String, Known>>,
    callbacks: mpsc::UnboundedSender<BridgeEvent>,
    http: reqwest::Client,
    sequence: AtomicU64,
    /// Calls that named an id the line had already been handed (answered, never sent again).
    repeated: AtomicU64,
    /// Set by `/control/mode`: what status lookups of known messages and groups answer instead
    /// of the truth (an answer the protocol does not allow, to test the service's handling).
    lookup_answer: Mutex<Option<String>>,
    /// Callback posts that failed and were tried again (the service was away or refused).
    callback_retries: AtomicU64,
    /// Status lookups of messages and groups the line knew.
    lookups: AtomicU64,
    /// Handles asked about in reachability calls.
    reachability_asks: AtomicU64,
    /// The ids the line gave inbound messages (what a reaction to one names).
    inbound_ids: Mutex<HashSet<String>>,
    /// Files of inbound messages, served to msgline by id.
    files: Mutex<HashMap<String, Vec<u8>>>,
    /// Typing indicators showing now: the conversation (a number or a group's id) and until when.
    typing: Mutex<HashMap<String, std::time::Instant>>,
    journal: Journal,
}

/// A line of the journal.
#[derive(Debug, Serialize, Deserialize)]
#[serde(tag = "entry", rename_all = "lowercase")]
enum JournalEntry {
    /// How the line answered a message or group it was handed (and, if it sent it, what it sent).
    Decided {
        id: String,
        #[serde(default)]
        sent: Option<Box<Sent>>,
        status: String,
        #[serde(default)]
        reason: Option<String>,
        code: u16,
        answer: SendAnswer,
    },
    /// The service acknowledged a callback reporting this status.
    Reported { id: String, status: String },
}

/// The line's memory across restarts (`--journal PATH`), as a phone keeps its messages when it
/// reboots: every decision is appended (one JSON line) before the call is answered, and each
/// status once the service has acknowledged its report. A restarted simulator reads it back: a
/// call naming a message it already had gets the first answer again and sends nothing, and a
/// message whose last steps were never acknowledged is reported again.
struct Journal(Mutex<Option<std::fs::File>>);

impl Journal {
    fn open(path: &std::path::Path) -> anyhow::Result<(Journal, Vec<JournalEntry>)> {
        let text = match std::fs::read_to_string(path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
            Err(e) => anyhow::bail!("cannot read the journal {}: {e}", path.display()),
        };
        // A line cut short by a kill is the last one, and was never answered: skip it.
        let entries = text.lines().filter_map(|line| serde_json::from_str(line).ok()).collect();
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .map_err(|e| anyhow::anyhow!("cannot open the journal {}: {e}", path.display()))?;
        Ok((Journal(Mutex::new(Some(file))), entries))
    }

    fn write(&self, entries: &[JournalEntry]) {
        use std::io::Write;
        let mut file = self.0.lock().expect("journal lock");
        let Some(file) = file.as_mut() else { return };
        let mut text = Vec::new();
        for entry in entries {
            text.extend(serde_json::to_vec(entry).expect("an entry serialises"));
            text.push(b'\n');
        }
        if let Err(error) = file.write_all(&text) {
            tracing::error!(%error, "could not write the journal");
        }
    }
}

type Shared = Arc<Sim>;

/// Runs the simulator until the process ends. Prints one JSON line with the bound address.
pub async fn run(config: SimConfig) -> anyhow::Result<()> {
    let addr: SocketAddr =
        config.listen.parse().map_err(|_| anyhow::anyhow!("--listen is not an address: {}", config.listen))?;
    let listener =
        tokio::net::TcpListener::bind(addr).await.map_err(|e| anyhow::anyhow!("cannot listen on {addr}: {e}"))?;
    let bound = listener.local_addr()?;
    // Files the line serves are named by the address it is reached at.
    let config = SimConfig { listen: bound.to_string(), ..config };
    let router = router(config.clone())?;
    println!("{}", json!({"listening": bound.to_string(), "e164": config.e164}));
    axum::serve(listener, router).await?;
    Ok(())
}

/// The simulator's router, for running it inside another process (the demo).
pub fn router(config: SimConfig) -> anyhow::Result<Router> {
    let (tx, rx) = mpsc::unbounded_channel();
    let seed = config.seed.unwrap_or_else(rand::random);
    let (journal, restored) = match &config.journal {
        Some(path) => Journal::open(path)?,
        None => (Journal(Mutex::new(None)), Vec::new()),
    };
    let sim = Arc::new(Sim {
        sms_only: config.sms_only.iter().map(|h| h.trim().to_string()).collect(),
        mode: Mutex::new(config.mode),
        groups: Mutex::new(config.groups),
        rng: Mutex::new(StdRng::seed_from_u64(seed)),
        sent: Mutex::new(Vec::new()),
        known: Mutex::new(HashMap::new()),
        callbacks: tx,
        http: reqwest::Client::builder().timeout(Duration::from_secs(10)).build().expect("HTTP client builds"),
        sequence: AtomicU64::new(0),
        repeated: AtomicU64::new(0),
        lookup_answer: Mutex::new(None),
        callback_retries: AtomicU64::new(0),
        lookups: AtomicU64::new(0),
        reachability_asks: AtomicU64::new(0),
        inbound_ids: Mutex::new(HashSet::new()),
        files: Mutex::new(HashMap::new()),
        typing: Mutex::new(HashMap::new()),
        journal,
        config,
    });
    sim.restore(restored);
    tokio::spawn(deliver_callbacks(sim.clone(), rx));
    Ok(Router::new()
        .route("/v1/capabilities", get(capabilities))
        .route("/v1/reachability", post(reachability))
        .route("/v1/messages", post(send))
        .route("/v1/messages/{id}", get(lookup))
        .route("/v1/groups", post(create_group))
        .route("/v1/groups/{id}", get(lookup))
        .route("/v1/groups/{id}/changes", post(change_group))
        .route("/v1/groups/{id}/changes/{change_id}", get(change_lookup))
        .route("/v1/typing", post(typing))
        .route("/v1/read", post(read))
        .route("/v1/media/{id}", get(serve_file))
        .route("/control/inbound", post(control_inbound))
        .route("/control/vote", post(control_vote))
        .route("/control/group", post(control_group))
        .route("/control/reaction", post(control_reaction))
        .route("/control/typing", get(control_typing_shown).post(control_typing))
        .route("/control/sent", get(control_sent))
        .route("/control/mode", post(control_mode))
        .route("/control/stats", get(control_stats))
        .with_state(sim))
}

impl Sim {
    /// Takes back what the journal remembers, and reports again the steps of accepted messages
    /// that the service never acknowledged.
    fn restore(self: &Arc<Self>, entries: Vec<JournalEntry>) {
        let mut reported: HashMap<String, String> = HashMap::new();
        let mut accepted = Vec::new();
        {
            let mut known = self.known.lock().expect("known lock");
            let mut sent = self.sent.lock().expect("sent lock");
            for entry in entries {
                match entry {
                    JournalEntry::Decided { id, sent: record, status, reason, code, answer } => {
                        let code = StatusCode::from_u16(code).unwrap_or(StatusCode::ACCEPTED);
                        if let Some(record) = record {
                            // A group change has no steps to report.
                            if record.kind != "group_change" {
                                accepted.push(id.clone());
                            }
                            sent.push(*record);
                        }
                        known.insert(id, Known { status, reason, answer: (code, answer) });
                    }
                    JournalEntry::Reported { id, status } => {
                        reported.insert(id, status);
                    }
                }
            }
            for (id, status) in &reported {
                if let Some(known) = known.get_mut(id) {
                    known.status = status.clone();
                }
            }
        }
        let last = if self.config.read_receipts { "read" } else { "delivered" };
        for id in accepted {
            if reported.get(&id).is_none_or(|status| status != last && status != "failed") {
                self.progress(id, Duration::ZERO);
            }
        }
    }

    /// Records a decision in the memory and the journal.
    fn remember(&self, id: &str, known: Known, sent: Option<Sent>) {
        self.journal.write(&[JournalEntry::Decided {
            id: id.to_string(),
            sent: sent.clone().map(Box::new),
            status: known.status.clone(),
            reason: known.reason.clone(),
            code: known.answer.0.as_u16(),
            answer: known.answer.1.clone(),
        }]);
        self.known.lock().expect("known lock").insert(id.to_string(), known);
        if let Some(sent) = sent {
            self.sent.lock().expect("sent lock").push(sent);
        }
    }

    /// Whether the line has the message: one it was handed, or one that arrived on it.
    fn knows_message(&self, id: &str) -> bool {
        self.known.lock().expect("known lock").contains_key(id)
            || self.inbound_ids.lock().expect("inbound lock").contains(id)
    }

    fn authorized(&self, headers: &HeaderMap) -> bool {
        let Some(token) = &self.config.token else { return true };
        headers
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "))
            .is_some_and(|given| given == token)
    }

    fn next_event_id(&self) -> String {
        format!("sim_{}_{}", self.config.e164.trim_start_matches('+'), self.sequence.fetch_add(1, Ordering::Relaxed))
    }

    fn event(&self, payload: BridgeEventPayload) -> BridgeEvent {
        BridgeEvent { id: self.next_event_id(), payload }
    }

    /// The mode for this send: `flaky` draws one of the others.
    fn draw_mode(&self) -> Mode {
        let mode = *self.mode.lock().expect("mode lock");
        if mode != Mode::Flaky {
            return mode;
        }
        match self.rng.lock().expect("rng lock").random_range(0..3) {
            0 => Mode::Accept,
            1 => Mode::Reject,
            _ => Mode::Timeout,
        }
    }

    fn set_status(&self, id: &str, status: &str) {
        if let Some(known) = self.known.lock().expect("known lock").get_mut(id) {
            known.status = status.to_string();
        }
    }

    /// Moves an accepted message on, one step at a time, reporting each step.
    fn progress(self: &Arc<Self>, id: String, report_after: Duration) {
        let sim = self.clone();
        tokio::spawn(async move {
            let mut steps = vec!["sent", "delivered"];
            if sim.config.read_receipts {
                steps.push("read");
            }
            let mut reports = Vec::new();
            for step in steps {
                tokio::time::sleep(sim.config.step).await;
                sim.set_status(&id, step);
                reports.push(sim.event(BridgeEventPayload::MessageStatus {
                    message_id: id.clone(),
                    status: step.into(),
                    reason: None,
                }));
                if report_after.is_zero() {
                    let _ = sim.callbacks.send(reports.pop().expect("just pushed"));
                }
            }
            if !reports.is_empty() {
                tokio::time::sleep(report_after).await;
                for report in reports {
                    let _ = sim.callbacks.send(report);
                }
            }
        });
    }

    /// Decides and records the answer to a send or group creation; `None` means the caller
    /// must hold the call past any timeout.
    fn accept_or_refuse(
        self: &Arc<Self>,
        id: &str,
        refusal: Option<&str>,
        record: Sent,
    ) -> Option<(StatusCode, SendAnswer)> {
        if let Some(known) = self.known.lock().expect("known lock").get(id) {
            self.repeated.fetch_add(1, Ordering::Relaxed);
            return Some(known.answer.clone());
        }
        let mode = self.draw_mode();
        let reason = match (refusal, mode) {
            (Some(reason), _) => Some(reason.to_string()),
            (None, Mode::Reject) => Some("the simulated line refused the message".to_string()),
            _ => None,
        };
        if let Some(reason) = reason {
            let answer = SendAnswer { status: "rejected".into(), reason: Some(reason.clone()) };
            let answer = (StatusCode::UNPROCESSABLE_ENTITY, answer);
            self.remember(id, Known { status: "failed".into(), reason: Some(reason), answer: answer.clone() }, None);
            return Some(answer);
        }
        let answer = (StatusCode::ACCEPTED, SendAnswer { status: "accepted".into(), reason: None });
        self.remember(id, Known { status: "submitted".into(), reason: None, answer: answer.clone() }, Some(record));
        if mode == Mode::Timeout {
            self.progress(id.to_string(), self.config.late_report);
            None
        } else {
            self.progress(id.to_string(), Duration::ZERO);
            Some(answer)
        }
    }
}

fn unauthorized() -> Response {
    (StatusCode::UNAUTHORIZED, Json(json!({"error": "unauthorized"}))).into_response()
}

async fn capabilities(State(sim): State<Shared>, headers: HeaderMap) -> Response {
    if !sim.authorized(&headers) {
        return unauthorized();
    }
    let groups = *sim.groups.lock().expect("groups lock");
    Json(CapabilitiesAnswer {
        e164: sim.config.e164.clone(),
        capabilities: Capabilities {
            imessage: true,
            sms: true,
            groups,
            polls: true,
            reactions: true,
            typing: true,
            read_receipts: true,
            media: true,
            mms: sim.config.mms,
        },
    })
    .into_response()
}

async fn reachability(
    State(sim): State<Shared>,
    headers: HeaderMap,
    Json(request): Json<ReachabilityRequest>,
) -> Response {
    if !sim.authorized(&headers) {
        return unauthorized();
    }
    sim.reachability_asks.fetch_add(request.handles.len() as u64, Ordering::Relaxed);
    let imessage = request.handles.iter().map(|h| (h.clone(), !sim.sms_only.contains(h.trim()))).collect();
    Json(ReachabilityAnswer { imessage }).into_response()
}

/// Fetches a send's files from msgline with the callback secret (the line's bridge secret):
/// what the line got of each (its size and SHA-256), and whether any fetch failed.
async fn fetch_attachments(sim: &Sim, request: &SendRequest) -> (Vec<Value>, bool) {
    use sha2::Digest;
    let mut fetched = Vec::new();
    for file in &request.attachments {
        let mut call = sim.http.get(&file.url);
        if let Some(secret) = &sim.config.callback_secret {
            call = call.bearer_auth(secret);
        }
        let bytes = match call.send().await {
            Ok(answer) if answer.status().is_success() => answer.bytes().await.ok(),
            _ => None,
        };
        let Some(bytes) = bytes else { return (fetched, true) };
        let digest: String = sha2::Sha256::digest(&bytes).iter().map(|b| format!("{b:02x}")).collect();
        fetched.push(json!({"id": file.id, "content_type": file.content_type, "size": bytes.len(), "sha256": digest}));
    }
    (fetched, false)
}

/// Holds a call that "times out": the caller gives up first and drops it.
async fn never_answer() -> Response {
    tokio::time::sleep(Duration::from_secs(3600)).await;
    StatusCode::GATEWAY_TIMEOUT.into_response()
}

async fn send(State(sim): State<Shared>, headers: HeaderMap, Json(request): Json<SendRequest>) -> Response {
    if !sim.authorized(&headers) {
        return unauthorized();
    }
    let unreachable = request.channel == "imessage" && request.to.iter().any(|to| sim.sms_only.contains(to));
    let refusal = if unreachable {
        Some("the recipient is not reachable over iMessage")
    } else if let Some(reaction) = &request.reaction
        && !sim.knows_message(&reaction.target)
    {
        Some("the line has no such message to react to")
    } else {
        None
    };
    // The files of a media send, fetched from msgline as a phone would download them.
    let (attachments, fetch_failed) = fetch_attachments(&sim, &request).await;
    let refusal = refusal.or(fetch_failed.then_some("the line could not fetch a file of the message"));
    let refusal = refusal.or((request.channel == "sms" && !request.attachments.is_empty() && !sim.config.mms)
        .then_some("this line cannot send files over SMS"));
    // A message sent into a conversation ends the typing indicator there.
    sim.typing.lock().expect("typing lock").remove(&conversation_key(&request.to, request.chat.as_deref()));
    let record = Sent {
        id: request.id.clone(),
        to: request.to.clone(),
        chat: request.chat.clone(),
        channel: request.channel.clone(),
        kind: request.kind.clone(),
        body: request.body.clone(),
        poll: request.poll.clone(),
        vcard: request.vcard.clone(),
        name: None,
        remove: Vec::new(),
        leave: false,
        reaction: request.reaction.clone(),
        attachments,
        at: clock::rfc3339(clock::now_ms()),
    };
    match sim.accept_or_refuse(&request.id, refusal, record) {
        Some((status, answer)) => {
            tokio::time::sleep(sim.config.answer_delay).await;
            (status, Json(answer)).into_response()
        }
        None => never_answer().await,
    }
}

async fn create_group(State(sim): State<Shared>, headers: HeaderMap, Json(request): Json<GroupRequest>) -> Response {
    if !sim.authorized(&headers) {
        return unauthorized();
    }
    let groups = *sim.groups.lock().expect("groups lock");
    let refusal = if !groups {
        Some("this device has no native group support")
    } else if request.participants.iter().any(|p| sim.sms_only.contains(p)) {
        Some("a participant is not reachable over iMessage")
    } else {
        None
    };
    let record = Sent {
        id: request.message_id.clone(),
        to: request.participants.clone(),
        chat: Some(request.id.clone()),
        channel: "imessage".into(),
        kind: "text".into(),
        body: request.body.clone(),
        poll: None,
        vcard: None,
        name: request.name.clone(),
        remove: Vec::new(),
        leave: false,
        reaction: None,
        attachments: Vec::new(),
        at: clock::rfc3339(clock::now_ms()),
    };
    // The group and its opening message share one fate on the line.
    let answer = sim.accept_or_refuse(&request.message_id, refusal, record);
    let group_status = match &answer {
        Some((_, a)) if a.status == "rejected" => {
            Known { status: "failed".into(), reason: a.reason.clone(), answer: answer.clone().expect("some") }
        }
        _ => Known {
            status: "created".into(),
            reason: None,
            answer: (StatusCode::ACCEPTED, SendAnswer { status: "accepted".into(), reason: None }),
        },
    };
    let new_group = !sim.known.lock().expect("known lock").contains_key(&request.id);
    if new_group {
        sim.remember(&request.id, group_status, None);
    }
    match answer {
        Some((status, answer)) => (status, Json(answer)).into_response(),
        None => never_answer().await,
    }
}

/// A change to a group the line created: applied at once (or refused), never twice for one id.
/// In `timeout` mode it is applied but the call is never answered in time.
async fn change_group(
    State(sim): State<Shared>,
    headers: HeaderMap,
    Path(group_id): Path<String>,
    Json(request): Json<GroupChangeRequest>,
) -> Response {
    if !sim.authorized(&headers) {
        return unauthorized();
    }
    if let Some(known) = sim.known.lock().expect("known lock").get(&request.id) {
        sim.repeated.fetch_add(1, Ordering::Relaxed);
        let (status, answer) = known.answer.clone();
        return (status, Json(answer)).into_response();
    }
    let mode = sim.draw_mode();
    let refusal = if !*sim.groups.lock().expect("groups lock") {
        Some("this device has no native group support".to_string())
    } else if !sim.known.lock().expect("known lock").contains_key(&group_id) {
        Some("this device has no such group".to_string())
    } else if request.add.iter().any(|p| sim.sms_only.contains(p)) {
        Some("a participant is not reachable over iMessage".to_string())
    } else if mode == Mode::Reject {
        Some("the simulated line refused the change".to_string())
    } else {
        None
    };
    if let Some(reason) = refusal {
        let answer = (StatusCode::UNPROCESSABLE_ENTITY, SendAnswer { status: "rejected".into(), reason: Some(reason) });
        let known = Known { status: "failed".into(), reason: answer.1.reason.clone(), answer: answer.clone() };
        sim.remember(&request.id, known, None);
        return (answer.0, Json(answer.1)).into_response();
    }
    let record = Sent {
        id: request.id.clone(),
        to: request.add.clone(),
        chat: Some(group_id),
        channel: "imessage".into(),
        kind: "group_change".into(),
        body: String::new(),
        poll: None,
        vcard: None,
        name: request.name.clone(),
        remove: request.remove.clone(),
        leave: request.leave,
        reaction: None,
        attachments: Vec::new(),
        at: clock::rfc3339(clock::now_ms()),
    };
    let answer = (StatusCode::ACCEPTED, SendAnswer { status: "accepted".into(), reason: None });
    sim.remember(&request.id, Known { status: "applied".into(), reason: None, answer: answer.clone() }, Some(record));
    if mode == Mode::Timeout {
        return never_answer().await;
    }
    (answer.0, Json(answer.1)).into_response()
}

async fn change_lookup(
    State(sim): State<Shared>,
    headers: HeaderMap,
    Path((_group_id, change_id)): Path<(String, String)>,
) -> Response {
    lookup(State(sim), headers, Path(change_id)).await
}

async fn lookup(State(sim): State<Shared>, headers: HeaderMap, Path(id): Path<String>) -> Response {
    if !sim.authorized(&headers) {
        return unauthorized();
    }
    let answer = sim.lookup_answer.lock().expect("lookup lock").clone();
    match sim.known.lock().expect("known lock").get(&id) {
        Some(known) => {
            sim.lookups.fetch_add(1, Ordering::Relaxed);
            let status = answer.unwrap_or_else(|| known.status.clone());
            Json(StatusAnswer { id, status, reason: known.reason.clone() }).into_response()
        }
        None => (StatusCode::NOT_FOUND, Json(json!({"error": "not_found"}))).into_response(),
    }
}

/// A file of an inbound message, for msgline to fetch (with the line's token).
async fn serve_file(State(sim): State<Shared>, headers: HeaderMap, Path(id): Path<String>) -> Response {
    if !sim.authorized(&headers) {
        return unauthorized();
    }
    match sim.files.lock().expect("files lock").get(&id) {
        Some(bytes) => bytes.clone().into_response(),
        None => (StatusCode::NOT_FOUND, Json(json!({"error": "not_found"}))).into_response(),
    }
}

/// The key of a conversation on the line: a group's id, or the number of a direct one.
fn conversation_key(to: &[String], chat: Option<&str>) -> String {
    chat.map(str::to_string).or_else(|| to.first().cloned()).unwrap_or_default()
}

/// Records a typing indicator or a read receipt in the sent log.
fn signal_record(sim: &Sim, kind: &str, request: &ConversationSignal) -> Sent {
    Sent {
        id: format!("sim-{kind}-{}", sim.sequence.fetch_add(1, Ordering::Relaxed)),
        to: request.to.clone(),
        chat: request.chat.clone(),
        channel: "imessage".into(),
        kind: kind.into(),
        body: String::new(),
        poll: None,
        vcard: None,
        name: None,
        remove: Vec::new(),
        leave: false,
        reaction: None,
        attachments: Vec::new(),
        at: clock::rfc3339(clock::now_ms()),
    }
}

/// Whether the request names a conversation the line can show an indicator in: a group it has,
/// or a number reachable over iMessage.
fn signal_refusal(sim: &Sim, request: &ConversationSignal) -> Option<&'static str> {
    match (&request.chat, request.to.as_slice()) {
        (Some(chat), []) if sim.known.lock().expect("known lock").contains_key(chat) => None,
        (Some(_), []) => Some("this device has no such group"),
        (None, [to]) if sim.sms_only.contains(to) => Some("the recipient is not reachable over iMessage"),
        (None, [_]) => None,
        _ => Some("name one number in to, or a chat"),
    }
}

/// Shows (or, with `"typing": false`, hides) the typing indicator; it hides by itself after a few
/// seconds or when a message is sent into the conversation.
async fn typing(State(sim): State<Shared>, headers: HeaderMap, Json(request): Json<ConversationSignal>) -> Response {
    if !sim.authorized(&headers) {
        return unauthorized();
    }
    if let Some(reason) = signal_refusal(&sim, &request) {
        let answer = SendAnswer { status: "rejected".into(), reason: Some(reason.into()) };
        return (StatusCode::UNPROCESSABLE_ENTITY, Json(answer)).into_response();
    }
    let key = conversation_key(&request.to, request.chat.as_deref());
    if request.typing.unwrap_or(true) {
        sim.typing.lock().expect("typing lock").insert(key, std::time::Instant::now() + TYPING_SHOWS);
        let record = signal_record(&sim, "typing", &request);
        sim.sent.lock().expect("sent lock").push(record);
    } else {
        sim.typing.lock().expect("typing lock").remove(&key);
    }
    (StatusCode::OK, Json(SendAnswer { status: "accepted".into(), reason: None })).into_response()
}

/// Sends a read receipt for the conversation.
async fn read(State(sim): State<Shared>, headers: HeaderMap, Json(request): Json<ConversationSignal>) -> Response {
    if !sim.authorized(&headers) {
        return unauthorized();
    }
    if let Some(reason) = signal_refusal(&sim, &request) {
        let answer = SendAnswer { status: "rejected".into(), reason: Some(reason.into()) };
        return (StatusCode::UNPROCESSABLE_ENTITY, Json(answer)).into_response();
    }
    let record = signal_record(&sim, "read", &request);
    sim.sent.lock().expect("sent lock").push(record);
    (StatusCode::OK, Json(SendAnswer { status: "accepted".into(), reason: None })).into_response()
}

#[derive(Debug, Deserialize)]
struct InboundControl {
    from: String,
    #[serde(default)]
    body: String,
    #[serde(default)]
    chat: Option<String>,
    #[serde(default)]
    channel: Option<String>,
    /// Files that come with the message: `{"base64", "filename"?}` each.
    #[serde(default)]
    media: Vec<InboundMedia>,
}

#[derive(Debug, Deserialize)]
struct InboundMedia {
    base64: String,
    #[serde(default)]
    filename: Option<String>,
}

async fn control_inbound(State(sim): State<Shared>, Json(request): Json<InboundControl>) -> Response {
    let channel = request
        .channel
        .unwrap_or_else(|| if sim.sms_only.contains(&request.from) { "sms".into() } else { "imessage".into() });
    // The line's own id for the message, which a reaction to it names.
    let message_id = format!("sim-in-{}", sim.sequence.fetch_add(1, Ordering::Relaxed));
    sim.inbound_ids.lock().expect("inbound lock").insert(message_id.clone());
    // The files are served by the line until msgline fetches them (`GET /v1/media/{id}`).
    let mut attachments = Vec::new();
    for file in request.media {
        use base64::Engine;
        let Ok(bytes) = base64::engine::general_purpose::STANDARD.decode(file.base64.as_bytes()) else {
            return (StatusCode::BAD_REQUEST, Json(json!({"error": "media[].base64 is not base64"}))).into_response();
        };
        let id = format!("sim-file-{}", sim.sequence.fetch_add(1, Ordering::Relaxed));
        sim.files.lock().expect("files lock").insert(id.clone(), bytes);
        attachments.push(InboundFile {
            url: format!("http://{}/v1/media/{id}", sim.config.listen),
            filename: file.filename,
            stored: None,
        });
    }
    let event = sim.event(BridgeEventPayload::Inbound {
        from: request.from,
        body: request.body,
        chat: request.chat,
        channel,
        message_id: Some(message_id),
        attachments,
    });
    report_now(&sim, event).await
}

#[derive(Debug, Deserialize)]
struct ReactionControl {
    from: String,
    /// msgline's `msg_` id of a message the line sent, or the line's id of an inbound message.
    target: String,
    reaction: String,
    #[serde(default)]
    remove: bool,
    #[serde(default)]
    chat: Option<String>,
}

/// Someone reacted to a message with a tapback (or took one back).
async fn control_reaction(State(sim): State<Shared>, Json(request): Json<ReactionControl>) -> Response {
    let message_id = format!("sim-in-{}", sim.sequence.fetch_add(1, Ordering::Relaxed));
    let event = sim.event(BridgeEventPayload::Reaction {
        from: request.from,
        target: request.target,
        reaction: request.reaction,
        removed: request.remove,
        chat: request.chat,
        message_id: Some(message_id),
    });
    report_now(&sim, event).await
}

#[derive(Debug, Deserialize)]
struct TypingControl {
    from: String,
    #[serde(default)]
    chat: Option<String>,
    #[serde(default)]
    typing: Option<bool>,
}

/// Someone started (or, with `"typing": false`, stopped) typing to the line.
async fn control_typing(State(sim): State<Shared>, Json(request): Json<TypingControl>) -> Response {
    let event = sim.event(BridgeEventPayload::Typing {
        from: request.from,
        chat: request.chat,
        typing: request.typing.unwrap_or(true),
    });
    report_now(&sim, event).await
}

/// The typing indicators the line shows now: `{"typing": [{"to" or "chat"}]}`.
async fn control_typing_shown(State(sim): State<Shared>) -> Json<Value> {
    let now = std::time::Instant::now();
    let mut shown = sim.typing.lock().expect("typing lock");
    shown.retain(|_, until| *until > now);
    let list: Vec<Value> = shown
        .keys()
        .map(|key| if key.starts_with("conv_") { json!({"chat": key}) } else { json!({"to": [key]}) })
        .collect();
    Json(json!({"typing": list}))
}

#[derive(Debug, Deserialize)]
struct VoteControl {
    from: String,
    poll_message_id: String,
    option_index: i64,
}

async fn control_vote(State(sim): State<Shared>, Json(request): Json<VoteControl>) -> Response {
    let event = sim.event(BridgeEventPayload::PollVote {
        from: request.from,
        poll_message_id: request.poll_message_id,
        option_index: request.option_index,
    });
    report_now(&sim, event).await
}

#[derive(Debug, Deserialize)]
struct GroupControl {
    /// msgline's id of the group.
    chat: String,
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    participants: Option<Vec<String>>,
}

/// Someone changed a group on their phone: the line reports its name and participants.
async fn control_group(State(sim): State<Shared>, Json(request): Json<GroupControl>) -> Response {
    let event = sim.event(BridgeEventPayload::GroupUpdated {
        group_id: request.chat,
        name: request.name,
        participants: request.participants,
    });
    report_now(&sim, event).await
}

/// Delivers one callback before answering, so a test knows the service has it.
async fn report_now(sim: &Shared, event: BridgeEvent) -> Response {
    let id = event.id.clone();
    match post_callback(sim, &[event]).await {
        Ok(status) => (StatusCode::OK, Json(json!({"event_id": id, "callback_status": status}))).into_response(),
        Err(error) => (StatusCode::BAD_GATEWAY, Json(json!({"event_id": id, "error": error}))).into_response(),
    }
}

async fn control_sent(State(sim): State<Shared>) -> Json<Value> {
    Json(json!(*sim.sent.lock().expect("sent lock")))
}

/// Counters for tests: how much was sent, and how often an id came again.
async fn control_stats(State(sim): State<Shared>) -> Json<Value> {
    Json(json!({
        "sent": sim.sent.lock().expect("sent lock").len(),
        "repeated_ids": sim.repeated.load(Ordering::Relaxed),
        "callback_retries": sim.callback_retries.load(Ordering::Relaxed),
        "lookups": sim.lookups.load(Ordering::Relaxed),
        "reachability_asks": sim.reachability_asks.load(Ordering::Relaxed),
    }))
}

#[derive(Debug, Deserialize)]
struct ModeControl {
    #[serde(default)]
    mode: Option<Mode>,
    #[serde(default)]
    groups: Option<bool>,
    /// A status for lookups to answer (`""` answers the truth again).
    #[serde(default)]
    lookup_status: Option<String>,
}

async fn control_mode(State(sim): State<Shared>, Json(request): Json<ModeControl>) -> Json<Value> {
    if let Some(mode) = request.mode {
        *sim.mode.lock().expect("mode lock") = mode;
    }
    if let Some(groups) = request.groups {
        *sim.groups.lock().expect("groups lock") = groups;
    }
    if let Some(status) = request.lookup_status {
        *sim.lookup_answer.lock().expect("lookup lock") = Some(status).filter(|s| !s.is_empty());
    }
    Json(json!({
        "mode": *sim.mode.lock().expect("mode lock"),
        "groups": *sim.groups.lock().expect("groups lock"),
        "lookup_status": *sim.lookup_answer.lock().expect("lookup lock"),
    }))
}

async fn post_callback(sim: &Sim, events: &[BridgeEvent]) -> Result<u16, String> {
    let url = sim.config.callback_url.as_ref().ok_or("no --callback-url was given")?;
    let mut request = sim.http.post(url).json(events);
    if let Some(secret) = &sim.config.callback_secret {
        request = request.bearer_auth(secret);
    }
    let response = request.send().await.map_err(|e| e.without_url().to_string())?;
    let status = response.status();
    if status.is_success() { Ok(status.as_u16()) } else { Err(format!("callback answered {status}")) }
}

/// Most status reports in one callback. One callback is in flight at a time (that keeps them in
/// order), so when reports queue faster than the service answers, each post takes as many as
/// have queued: in alternating bench runs on PostgreSQL (`send`, `e2e`), 200 a post left a p50
/// of 176-432 ms from a send's acceptance to its `sent` report, 1,000 a post 50-64 ms.
const MAX_REPORTS_PER_CALLBACK: usize = 1_000;

/// Posts status reports in order, in batches, retrying while the service is away.
async fn deliver_callbacks(sim: Shared, mut rx: mpsc::UnboundedReceiver<BridgeEvent>) {
    let mut batch = Vec::new();
    while rx.recv_many(&mut batch, MAX_REPORTS_PER_CALLBACK).await > 0 {
        if sim.config.callback_url.is_none() {
            batch.clear();
            continue;
        }
        let mut delay = Duration::from_millis(100);
        while let Err(error) = post_callback(&sim, &batch).await {
            tracing::debug!(error, "callback failed; retrying");
            sim.callback_retries.fetch_add(1, Ordering::Relaxed);
            tokio::time::sleep(delay).await;
            delay = (delay * 2).min(Duration::from_secs(5));
        }
        let acknowledged: Vec<JournalEntry> = batch
            .iter()
            .filter_map(|event| match &event.payload {
                BridgeEventPayload::MessageStatus { message_id, status, .. } => {
                    Some(JournalEntry::Reported { id: message_id.clone(), status: status.clone() })
                }
                _ => None,
            })
            .collect();
        sim.journal.write(&acknowledged);
        batch.clear();
    }
}
