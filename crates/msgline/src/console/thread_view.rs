//! How a thread shows its messages: each with its steps and files, the message it answers, what
//! became of it after it was sent (edited, unsent, an edit or unsend not settled yet), and
//! whether the organisation may still edit or unsend it.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use crate::{
    clock,
    db::{lines::Capabilities, messages::Message},
    domain::{lifecycle::Direction, message_action::ActionKind, payload::Payload},
};

/// How many characters of the message a reply answers its quote shows.
const QUOTE_CHARS: usize = 80;

#[derive(Serialize)]
pub(super) struct Shown {
    id: String,
    outbound: bool,
    body: String,
    kind: &'static str,
    channel: &'static str,
    status: &'static str,
    error: Option<String>,
    /// `status: time` of each step the message took.
    times: Vec<(&'static str, String)>,
    /// A media message's files.
    files: Vec<File>,
    /// A scheduled message's time.
    send_at: Option<String>,
    /// The message it answers.
    reply: Option<Quote>,
    subject: Option<String>,
    /// Its iMessage effect, in words (`invisible ink`).
    effect: Option<String>,
    edited_at: Option<String>,
    /// Its earlier texts, oldest first.
    earlier: Vec<Earlier>,
    unsent_at: Option<String>,
    /// The organisation's latest edit or unsend of it, while not applied.
    action: Option<ActionNote>,
    can_edit: bool,
    can_unsend: bool,
}

#[derive(Serialize)]
struct File {
    id: String,
    name: String,
    /// Shown inline: a picture type browsers draw safely.
    image: bool,
}

/// A message as a reply or the compose box names it: its id when it is on the page (a link to
/// it), and the start of its text (none: "a message").
#[derive(Serialize)]
pub(super) struct Quote {
    pub id: Option<String>,
    pub text: Option<String>,
}

/// One of a message's earlier texts, as `edits` stores it.
#[derive(Serialize, Deserialize)]
struct Earlier {
    body: String,
    at: String,
}

/// An edit or unsend not applied, as `action` stores it.
#[derive(Deserialize)]
struct Action {
    kind: String,
    status: String,
    body: Option<String>,
    error: Option<String>,
}

#[derive(Serialize)]
struct ActionNote {
    /// "Edit pending", "Unsend not confirmed yet", "Edit failed: …".
    text: String,
    /// An edit's new text.
    body: Option<String>,
    failed: bool,
}

/// The page's messages as the thread shows them, at `now`; `lines` are the recorded
/// capabilities of their lines (a line without is taken to allow edits and unsends).
pub(super) fn shown(messages: &[Message], lines: &HashMap<String, Capabilities>, now: i64) -> Vec<Shown> {
    messages.iter().map(|message| show(message, messages, lines, now)).collect()
}

fn show(message: &Message, page: &[Message], lines: &HashMap<String, Capabilities>, now: i64) -> Shown {
    let steps = [
        ("created", Some(message.created_at)),
        ("submitted", message.submitted_at),
        ("sent", message.sent_at),
        ("delivered", message.delivered_at),
        ("read", message.read_at),
    ];
    let action = message.action.as_deref().and_then(|text| serde_json::from_str::<Action>(text).ok());
    let (can_edit, can_unsend) = changeable(message, lines.get(&message.line_id), now);
    Shown {
        id: message.id.clone(),
        outbound: message.direction == Direction::Outbound,
        body: message.body.clone(),
        kind: message.kind.as_str(),
        channel: message.channel.as_str(),
        status: message.status.as_str(),
        error: message.error.clone(),
        times: steps.into_iter().filter_map(|(name, at)| at.map(|at| (name, clock::rfc3339(at)))).collect(),
        send_at: clock::rfc3339_opt(message.send_at),
        files: match &message.payload {
            Some(Payload::Media(files)) => files
                .iter()
                .map(|f| File {
                    id: f.id.clone(),
                    name: f.filename.clone().unwrap_or_else(|| f.id.clone()),
                    image: ["image/png", "image/jpeg", "image/gif", "image/webp"].contains(&f.content_type.as_str()),
                })
                .collect(),
            _ => Vec::new(),
        },
        reply: message.extras.reply_to.as_deref().map(|id| quote(page, id)),
        subject: message.extras.subject.clone(),
        effect: message.extras.effect.as_deref().map(|effect| effect.replace('_', " ")),
        edited_at: clock::rfc3339_opt(message.edited_at),
        earlier: message.edits.as_deref().and_then(|text| serde_json::from_str(text).ok()).unwrap_or_default(),
        unsent_at: clock::rfc3339_opt(message.unsent_at),
        action: action.map(note),
        can_edit,
        can_unsend,
    }
}

/// The message `id` as a reply names it: the start of its text when it is on the page.
pub(super) fn quote(page: &[Message], id: &str) -> Quote {
    match page.iter().find(|m| m.id == id) {
        Some(message) => {
            let text = message.body.trim();
            let mut start: String = text.chars().take(QUOTE_CHARS).collect();
            if start.len() < text.len() {
                start.push('…');
            }
            Quote { id: Some(message.id.clone()), text: Some(start).filter(|s| !s.is_empty()) }
        }
        None => Quote { id: None, text: None },
    }
}

fn note(action: Action) -> ActionNote {
    let what = if action.kind == "unsend" { "Unsend" } else { "Edit" };
    let failed = action.status == "failed";
    let text = match action.status.as_str() {
        "pending" => format!("{what} pending"),
        "failed" => match action.error {
            Some(error) => format!("{what} failed: {error}"),
            None => format!("{what} failed"),
        },
        _ => format!("{what} not confirmed yet"),
    };
    ActionNote { text, body: action.body.filter(|_| what == "Edit"), failed }
}

/// Whether the organisation may edit, and unsend, the message at `now`: Apple's rules as the
/// send path (`send::actions`) applies them (an iMessage text the line sent, not unsent; edits
/// within 15 minutes, at most 5; unsend within 2 minutes), no edit or unsend of it unsettled,
/// and a line that has not said it cannot. The send path checks again when asked.
pub(super) fn changeable(message: &Message, line: Option<&Capabilities>, now: i64) -> (bool, bool) {
    let unsettled = message.action.as_deref().is_some_and(|text| {
        serde_json::from_str::<Action>(text).is_ok_and(|a| a.status == "pending" || a.status == "unknown")
    });
    if unsettled {
        return (false, false);
    }
    // The API's own rules (windows, limits, what can be changed), so the buttons never disagree.
    let allowed = |kind| crate::send::actions::allowed(message, kind, now).is_ok();
    let can_edit = allowed(ActionKind::Edit) && line.is_none_or(|c| c.edits);
    let can_unsend = allowed(ActionKind::Unsend) && line.is_none_or(|c| c.unsend);
    (can_edit, can_unsend)
}
