//! What the line reports was done to a message after it arrived or was sent: an edit or an
//! unsend (by the person who sent it, or on the line's own device), and which message an
//! arriving one answers.

use sqlx::AnyConnection;

use crate::{
    db::{
        self,
        lines::Line,
        messages::{Extras, Message},
    },
    domain::message_action::{ActionKind, Effect, MAX_SUBJECT_CHARS},
};

/// The message a line names: msgline's `msg_` id of a message on the line, or the id the line
/// gave a message when it arrived or was reported.
pub(super) async fn named(conn: &mut AnyConnection, line: &Line, name: &str) -> anyhow::Result<Option<Message>> {
    let local = if name.starts_with("msg_") {
        Some(name.to_string())
    } else {
        db::bridge_refs::local_for_in(&mut *conn, &line.id, name).await?
    };
    Ok(match local {
        Some(id) => db::messages::get_any(conn, &id).await?.filter(|m| m.line_id == line.id),
        None => None,
    })
}

/// A message was edited (`body`) or unsent on the device: the stored message follows, with one
/// event; msgline's own action echoed back settles that action instead.
pub(super) async fn changed(
    conn: &mut AnyConnection,
    line: &Line,
    name: &str,
    kind: ActionKind,
    body: Option<&str>,
) -> anyhow::Result<()> {
    let Some(message) = named(conn, line, name).await? else {
        tracing::info!(line = %line.id, message = name, kind = kind.as_str(), "an edit or unsend of a message msgline does not know; ignored");
        return Ok(());
    };
    if db::message_actions::apply_reported(conn, &message, kind, body).await? {
        tracing::debug!(line = %line.id, message = %message.id, kind = kind.as_str(), "the line reported a message changed");
    }
    Ok(())
}

/// What an arriving message carries besides its text: the message it answers (msgline's id, found
/// in its conversation), and the effect and subject it was sent with. An effect msgline does not
/// know is left out; a subject is cut to [`MAX_SUBJECT_CHARS`].
pub(super) fn extras(reply_to: Option<String>, (effect, subject): (Option<&str>, Option<&str>)) -> Extras {
    Extras {
        reply_to,
        effect: effect.and_then(Effect::parse).map(|effect| effect.as_str().to_string()),
        subject: subject
            .map(|text| text.chars().filter(|c| !c.is_control()).take(MAX_SUBJECT_CHARS).collect::<String>())
            .filter(|text| !text.trim().is_empty()),
    }
}
