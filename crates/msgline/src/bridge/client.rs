//! msgline's side of a line: [`BridgeClient`] hands each call to the adapter of the line's
//! bridge kind, and defines what a call can come to.

use std::time::Duration;

pub use super::call::{CallResult, SendOutcome, StatusLookup};
use super::{
    BridgeEvent, CapabilitiesAnswer, GroupRequest, ReachabilityAnswer, SendRequest,
    adapter::{Hook, HookError, LineAdapter},
    android::AndroidGateway,
    bluebubbles::BlueBubbles,
    dial_in::AndroidDialIn,
    kannel::Kannel,
    protocol::MsglineBridge,
};
use crate::{
    config::Config,
    db::{
        Db,
        lines::{BridgeKind, Line},
    },
    domain::apikey::hash_secret,
};

/// Every kind's adapter; each call goes to the one of the line's kind. Registering a new kind
/// is a field here and an arm in [`on_kind!`].
#[derive(Clone)]
pub struct BridgeClient {
    msgline: MsglineBridge,
    bluebubbles: BlueBubbles,
    android: AndroidGateway,
    dial_in: AndroidDialIn,
    kannel: Kannel,
}

/// Calls `$method` on the adapter of `$line`'s kind.
macro_rules! on_kind {
    (sync $self:ident, $line:expr, $method:ident()) => {
        match $line.bridge_kind {
            BridgeKind::Msgline => $self.msgline.$method(),
            BridgeKind::BlueBubbles => $self.bluebubbles.$method(),
            BridgeKind::AndroidGateway if $line.bridge_settings.dial_in => $self.dial_in.$method(),
            BridgeKind::AndroidGateway => $self.android.$method(),
            BridgeKind::Kannel => $self.kannel.$method(),
        }
    };
    ($self:ident, $line:expr, $method:ident($($arg:expr),*)) => {
        match $line.bridge_kind {
            BridgeKind::Msgline => $self.msgline.$method($line, $($arg),*).await,
            BridgeKind::BlueBubbles => $self.bluebubbles.$method($line, $($arg),*).await,
            BridgeKind::AndroidGateway if $line.bridge_settings.dial_in => $self.dial_in.$method($line, $($arg),*).await,
            BridgeKind::AndroidGateway => $self.android.$method($line, $($arg),*).await,
            BridgeKind::Kannel => $self.kannel.$method($line, $($arg),*).await,
        }
    };
}

impl BridgeClient {
    /// `media`: where attachments' bytes are, for kinds that hand the device the bytes themselves.
    pub fn new(config: &Config, db: Db, media: crate::media::MediaStore) -> Self {
        let timeout = config.bridge_timeout();
        let http = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .connect_timeout(timeout.min(Duration::from_secs(5)))
            .pool_max_idle_per_host(64)
            .build()
            .expect("HTTP client builds");
        let hooks = format!("{}/api/v1/messaging/bridge/hooks", config.public_base());
        Self {
            msgline: MsglineBridge::new(http.clone(), timeout),
            bluebubbles: BlueBubbles::new(http.clone(), timeout, db.clone(), hooks.clone(), media),
            android: AndroidGateway::new(http.clone(), timeout, hooks.clone(), db.clone()),
            dial_in: AndroidDialIn::new(
                AndroidGateway::new(http.clone(), timeout, hooks.clone(), db.clone()),
                db.clone(),
                Duration::from_secs(config.line_check_seconds.max(1)),
            ),
            kannel: Kannel::new(http, timeout, hooks, db),
        }
    }

    /// Asks what the line can do.
    /// The dial-in phones' side of the client: their queue's signal and webhook URL.
    pub fn dial_in(&self) -> &AndroidDialIn {
        &self.dial_in
    }

    pub async fn capabilities(&self, line: &Line) -> Result<CapabilitiesAnswer, String> {
        on_kind!(self, line, capabilities())
    }

    /// Asks which handles are reachable over iMessage.
    pub async fn reachability(&self, line: &Line, handles: &[String]) -> Result<ReachabilityAnswer, String> {
        on_kind!(self, line, reachability(handles))
    }

    /// Hands a message to the line.
    pub async fn send(&self, line: &Line, message: &SendRequest) -> CallResult<SendOutcome> {
        on_kind!(self, line, send(message))
    }

    /// Asks the line to create a group with its opening message.
    pub async fn create_group(&self, line: &Line, group: &GroupRequest) -> CallResult<SendOutcome> {
        on_kind!(self, line, create_group(group))
    }

    /// Asks the line what became of a message.
    /// See [`LineAdapter::reports_may_be_lost`].
    pub fn reports_may_be_lost(&self, line: &Line) -> bool {
        on_kind!(sync self, line, reports_may_be_lost())
    }

    pub async fn message_status(&self, line: &Line, id: &str) -> StatusLookup {
        on_kind!(self, line, message_status(id))
    }

    /// Asks the line to rename a group or change its participants.
    pub async fn change_group(&self, line: &Line, change: &super::GroupChangeRequest) -> CallResult<SendOutcome> {
        on_kind!(self, line, change_group(change))
    }

    /// Shows (or hides) a typing indicator in a conversation.
    pub async fn typing(&self, line: &Line, signal: &super::ConversationSignal) -> CallResult<SendOutcome> {
        on_kind!(self, line, typing(signal))
    }

    /// Sends a read receipt for a conversation.
    pub async fn mark_read(&self, line: &Line, signal: &super::ConversationSignal) -> CallResult<SendOutcome> {
        on_kind!(self, line, mark_read(signal))
    }

    /// Fetches a file that arrived on the line.
    pub async fn fetch_file(
        &self,
        line: &Line,
        url: &str,
        max_bytes: usize,
    ) -> Result<Vec<u8>, super::adapter::FileError> {
        on_kind!(self, line, fetch_file(url, max_bytes))
    }

    /// Asks the line what became of a group change.
    pub async fn group_change_status(&self, line: &Line, group_id: &str, change_id: &str) -> StatusLookup {
        on_kind!(self, line, group_change_status(group_id, change_id))
    }

    /// Asks the line to edit or unsend a message msgline sent.
    pub async fn act(&self, line: &Line, action: &super::ActionRequest) -> CallResult<SendOutcome> {
        on_kind!(self, line, act(action))
    }

    /// Asks the line what became of an edit or unsend.
    pub async fn action_status(&self, line: &Line, action: &super::ActionRequest) -> StatusLookup {
        on_kind!(self, line, action_status(action))
    }

    /// Asks the line what became of a group.
    pub async fn group_status(&self, line: &Line, id: &str) -> StatusLookup {
        on_kind!(self, line, group_status(id))
    }

    /// Makes sure the line's device reports to msgline (registers msgline's webhook with it).
    pub async fn connect(&self, line: &Line) -> Result<(), String> {
        on_kind!(self, line, connect())
    }

    /// Turns a webhook from the line's device into bridge events. The hook URL must carry the
    /// line's hook secret; a kind may check more (a signature).
    pub async fn receive(&self, line: &Line, hook: &Hook<'_>) -> Result<Vec<BridgeEvent>, HookError> {
        let presented = hook.query_value("secret").unwrap_or_default();
        if line.bridge_settings.hook_secret.is_empty()
            // Hashes compared, so the time taken says nothing about the secret.
            || hash_secret(presented) != hash_secret(&line.bridge_settings.hook_secret)
        {
            return Err(HookError::Unauthorized("the hook URL does not carry this line's secret".into()));
        }
        on_kind!(self, line, receive(hook))
    }
}
