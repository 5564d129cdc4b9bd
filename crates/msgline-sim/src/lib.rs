//! `msgline sim`: a complete bridge for one simulated phone line, in its own process.
//!
//! It answers the bridge protocol (capabilities, sends, group creation, status lookups,
//! reachability), progresses what it accepted through sent → delivered (→ read) and reports each
//! step to the callback URL. Its control API (`/control/...`) drives the device from a test or a
//! person: inbound messages, native poll taps, the sent log, and the answering mode. Messages it
//! sent can be edited and unsent, once per action id (see `actions`).

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

use msgline::{
    bridge_protocol::{
        BridgeEvent, BridgeEventPayload, Capabilities, CapabilitiesAnswer, ConversationSignal, GroupChangeRequest,
        GroupRequest, InboundFile, ReachabilityAnswer, ReachabilityRequest, ReactionRequest, SendAnswer, SendRequest,
        StatusAnswer,
    },
    clock,
};

mod actions;
mod control;
mod groups;
mod journal;
mod media;
mod sends;
mod signals;
use actions::{action_lookup, edit, unsend};
use groups::{change_group, change_lookup, create_group};
use journal::{Journal, JournalEntry};
use media::serve_file;
use sends::{send, send_batch};
use signals::{conversation_key, read, typing};

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
    /// Most sends one `POST /v1/messages/batch` call may carry (the `batch` capability); 0: the
    /// line speaks only one call per message.
    pub batch: u16,
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
            batch: 100,
        }
    }
}

/// One entry of the sent log, as `GET /control/sent` shows it.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
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
    /// What a send answers (an inline reply), as the line names it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    reply_to: Option<String>,
    /// A send's bubble or screen effect (msgline's name for it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    effect: Option<String>,
    /// A send's subject line.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    subject: Option<String>,
    /// The message an edit or unsend changed (msgline's id).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    target: Option<String>,
    at: String,
}

/// How long a typing indicator shows when nothing stops it sooner.
const TYPING_SHOWS: Duration = Duration::from_secs(5);

/// What the line knows of a message, group, group change, edit or unsend it was handed.
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
    /// `POST /control/mode {"imessage": "reject"}`: every iMessage send is refused.
    imessage_rejected: std::sync::atomic::AtomicBool,
    /// `POST /control/mode {"blocked": true}`: the device's account is blocked; every send is
    /// refused with the bridge error `line_blocked` (and not remembered: nothing was sent).
    blocked: std::sync::atomic::AtomicBool,
    /// `POST /control/mode {"offline": true}`: every call from msgline is answered 503.
    offline: std::sync::atomic::AtomicBool,
    /// `POST /control/mode {"message_actions": false}`: the device has no replies, edits, unsend
    /// or effects (its capabilities say so, and edits and unsends are refused).
    message_actions: std::sync::atomic::AtomicBool,
    /// Callback posts that failed and were tried again (the service was away or refused).
    callback_retries: AtomicU64,
    /// Status lookups of messages and groups the line knew.
    lookups: AtomicU64,
    /// Handles asked about in reachability calls, and the calls.
    reachability_asks: AtomicU64,
    reachability_calls: AtomicU64,
    /// How long a reachability call takes to answer, in ms (`/control/mode`'s `ask_ms`).
    ask_ms: AtomicU64,
    /// `POST /v1/messages/batch` calls answered, and the sends they carried.
    batches: AtomicU64,
    batched: AtomicU64,
    /// The most sends a batch may carry now (`--batch`, changed by `/control/mode`).
    batch: std::sync::atomic::AtomicU16,
    /// The ids the line gave inbound messages (what a reaction to one names).
    inbound_ids: Mutex<HashSet<String>>,
    /// Files of inbound messages, served to msgline by id.
    files: Mutex<HashMap<String, Vec<u8>>>,
    /// Typing indicators showing now: the conversation (a number or a group's id) and until when.
    typing: Mutex<HashMap<String, std::time::Instant>>,
    journal: Journal,
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
        imessage_rejected: std::sync::atomic::AtomicBool::new(false),
        blocked: std::sync::atomic::AtomicBool::new(false),
        offline: std::sync::atomic::AtomicBool::new(false),
        message_actions: std::sync::atomic::AtomicBool::new(true),
        callback_retries: AtomicU64::new(0),
        lookups: AtomicU64::new(0),
        reachability_asks: AtomicU64::new(0),
        reachability_calls: AtomicU64::new(0),
        ask_ms: AtomicU64::new(0),
        batches: AtomicU64::new(0),
        batched: AtomicU64::new(0),
        batch: std::sync::atomic::AtomicU16::new(config.batch),
        inbound_ids: Mutex::new(HashSet::new()),
        files: Mutex::new(HashMap::new()),
        typing: Mutex::new(HashMap::new()),
        journal,
        config,
    });
    sim.restore(restored);
    tokio::spawn(deliver_callbacks(sim.clone(), rx));
    let device = Router::new()
        .route("/v1/capabilities", get(capabilities))
        .route("/v1/reachability", post(reachability))
        .route("/v1/messages", post(send))
        .route("/v1/messages/batch", post(send_batch))
        .route("/v1/messages/{id}", get(lookup))
        .route("/v1/messages/{id}/edit", post(edit))
        .route("/v1/messages/{id}/unsend", post(unsend))
        .route("/v1/messages/{id}/actions/{action_id}", get(action_lookup))
        .route("/v1/groups", post(create_group))
        .route("/v1/groups/{id}", get(lookup))
        .route("/v1/groups/{id}/changes", post(change_group))
        .route("/v1/groups/{id}/changes/{change_id}", get(change_lookup))
        .route("/v1/typing", post(typing))
        .route("/v1/read", post(read))
        .route("/v1/media/{id}", get(serve_file))
        .layer(axum::middleware::from_fn_with_state(sim.clone(), control::offline_gate));
    Ok(device.merge(control::routes()).with_state(sim))
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
                            // A group change, an edit and an unsend have no steps to report.
                            if !matches!(record.kind.as_str(), "group_change" | "edit" | "unsend") {
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
        if self.blocked.load(Ordering::Relaxed) {
            let reason = Some("the simulated device's account is blocked".to_string());
            let error = Some(msgline::bridge_protocol::LINE_BLOCKED.to_string());
            return Some((StatusCode::UNPROCESSABLE_ENTITY, SendAnswer { status: "rejected".into(), reason, error }));
        }
        let mode = self.draw_mode();
        let reason = match (refusal, mode) {
            (Some(reason), _) => Some(reason.to_string()),
            (None, Mode::Reject) => Some("the simulated line refused the message".to_string()),
            _ => None,
        };
        if let Some(reason) = reason {
            let answer = SendAnswer { status: "rejected".into(), reason: Some(reason.clone()), error: None };
            let answer = (StatusCode::UNPROCESSABLE_ENTITY, answer);
            self.remember(id, Known { status: "failed".into(), reason: Some(reason), answer: answer.clone() }, None);
            return Some(answer);
        }
        let answer = (StatusCode::ACCEPTED, SendAnswer { status: "accepted".into(), reason: None, error: None });
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
    let actions = sim.message_actions.load(Ordering::Relaxed);
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
            replies: actions,
            edits: actions,
            unsend: actions,
            effects: actions,
            batch: sim.batch.load(Ordering::Relaxed),
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
    sim.reachability_calls.fetch_add(1, Ordering::Relaxed);
    tokio::time::sleep(Duration::from_millis(sim.ask_ms.load(Ordering::Relaxed))).await;
    let imessage = request.handles.iter().map(|h| (h.clone(), !sim.sms_only.contains(h.trim()))).collect();
    Json(ReachabilityAnswer { imessage }).into_response()
}

/// Holds a call that "times out": the caller gives up first and drops it.
async fn never_answer() -> Response {
    tokio::time::sleep(Duration::from_secs(3600)).await;
    StatusCode::GATEWAY_TIMEOUT.into_response()
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
