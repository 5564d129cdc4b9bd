//! What goes through the Private API beside a plain send: a text's reply (`selectedMessageGuid`),
//! effect (`effectId`) and subject, and the edit and unsend of a message msgline sent
//! (`POST /message/:guid/edit` and `/unsend`, macOS 13 and later).
//!
//! Read from the server's source: `validators/messageValidator.ts` (a reply, an effect or a
//! subject makes a send a Private API one), `routers/messageRouter.ts` and
//! `api/interfaces/messageInterface.ts` (an edit or unsend of a guid the Mac does not know is a 400
//! "Selected message does not exist!"; without the Private API or before macOS 13 a 500 with the
//! reason, nothing done; otherwise the helper acknowledges at once whatever Apple does, and the
//! server waits for the message's `dateEdited` to move, then answers with the message as it then
//! is: unchanged, after some 43 s, when Apple refused).

use super::*;
use crate::{bridge::ActionRequest, domain::message_action::Effect};

/// How long after msgline asked for an edit or unsend the Mac may still apply it: its server
/// waits some 43 s for Apple. A message that does not show the action after this was refused.
const ACTION_WAIT: Duration = Duration::from_secs(60);

impl BlueBubbles {
    /// The Mac's guid of a message as the line names it: the guid msgline recorded for a `msg_`
    /// id (none yet when the Mac has not answered its send), else the name itself (the guid an
    /// inbound message arrived with).
    pub(super) async fn mac_guid(&self, line: &Line, name: &str) -> sqlx::Result<Option<String>> {
        if !name.starts_with("msg_") {
            return Ok(Some(name.to_string()));
        }
        let refs = bridge_refs::remotes_for(&self.db, &line.id, name).await?;
        Ok(real_guid(&refs).map(str::to_string))
    }

    /// The fields a text send takes for its reply, effect and subject, each of which makes it a
    /// Private API send; `None` when it has none. `Err`: the send cannot go (the message answered
    /// has no guid yet, an effect msgline does not know).
    pub(super) async fn private_api_fields(
        &self,
        line: &Line,
        message: &SendRequest,
    ) -> Result<Option<Value>, SendOutcome> {
        let mut fields = serde_json::Map::new();
        if let Some(name) = &message.reply_to {
            match self.mac_guid(line, name).await {
                Ok(Some(guid)) => {
                    fields.insert("selectedMessageGuid".into(), json!(guid));
                    fields.insert("partIndex".into(), json!(0));
                }
                Ok(None) => {
                    return Err(SendOutcome::Rejected("the Mac has not named the message this one answers yet".into()));
                }
                Err(error) => return Err(SendOutcome::Unreachable(error.to_string())),
            }
        }
        if let Some(name) = &message.effect {
            let Some(effect) = Effect::parse(name) else {
                return Err(SendOutcome::Rejected(format!("msgline knows no effect {name:?}")));
            };
            fields.insert("effectId".into(), json!(effect.apple_id()));
        }
        if let Some(subject) = message.subject.as_deref().filter(|s| !s.trim().is_empty()) {
            fields.insert("subject".into(), json!(subject));
        }
        Ok((!fields.is_empty()).then_some(Value::Object(fields)))
    }

    /// Edits or unsends a message msgline sent, by the guid the Mac gave it. The answer settles
    /// it only when it shows the Mac's message: changed (applied) or unchanged (Apple refused).
    pub(super) async fn edit_or_unsend(&self, line: &Line, action: &ActionRequest) -> CallResult<SendOutcome> {
        let refused = |outcome| CallResult { outcome, http_status: None, latency_ms: 0 };
        let guid = match self.mac_guid(line, &action.message_id).await {
            Ok(Some(guid)) => guid,
            Ok(None) => return refused(SendOutcome::Rejected("the Mac has not named the message yet".into())),
            Err(error) => return refused(SendOutcome::Unreachable(error.to_string())),
        };
        let body = match &action.body {
            // What a device too old for edits shows instead.
            Some(text) => json!({
                "editedMessage": text,
                "backwardsCompatibilityMessage": format!("Edited to \u{201c}{text}\u{201d}"),
                "partIndex": 0,
            }),
            None => json!({"partIndex": 0}),
        };
        let path = format!("/message/{}/{}", path_segment(&guid), action.verb());
        let started = Instant::now();
        let (outcome, http_status) = match self.call(self.request(reqwest::Method::POST, line, &path).json(&body)).await
        {
            Err(error) => (classify_error(&error), None),
            Ok((status, envelope)) => (action_outcome(action, status, &envelope), Some(status.as_u16())),
        };
        CallResult { outcome, http_status, latency_ms: started.elapsed().as_millis() as i64 }
    }

    /// Whether the Mac's message shows the action (`GET /message/:guid`). Not yet, while the Mac
    /// may still apply it, is asked again; after that, it was refused.
    pub(super) async fn action_shown(&self, line: &Line, action: &ActionRequest) -> StatusLookup {
        let guid = match self.mac_guid(line, &action.message_id).await {
            Ok(Some(guid)) => guid,
            // The Mac is only ever asked by this guid, and a guid once recorded stays: without
            // one, the action never reached it.
            Ok(None) => return StatusLookup::NotFound,
            Err(error) => return StatusLookup::Failed(error.to_string()),
        };
        let waited = clock::now_ms() - action.requested_at >= ACTION_WAIT.as_millis() as i64;
        let path = format!("/message/{}", path_segment(&guid));
        let (status, envelope) = match self.call(self.request(reqwest::Method::GET, line, &path)).await {
            Ok(answer) => answer,
            Err(error) => return StatusLookup::Failed(describe(&error)),
        };
        let message = MacMessage(&envelope.data);
        let known = |status: &str, reason: Option<String>| {
            StatusLookup::Known(StatusAnswer { id: action.id.clone(), status: status.into(), reason })
        };
        match status {
            s if s.is_success() && message.guid().is_some() => {
                if shows(action, &message) {
                    known("applied", None)
                } else if waited {
                    known("failed", Some(not_applied(action)))
                } else {
                    StatusLookup::Failed("not applied yet".into())
                }
            }
            // A message the Mac does not know at all cannot have been changed; the Mac keeps an
            // unsent message's row, so it was not unsent either.
            StatusCode::NOT_FOUND if waited && envelope.reason().contains("does not exist") => StatusLookup::NotFound,
            s => StatusLookup::Failed(format!("the BlueBubbles Server answered {s} for message {guid}")),
        }
    }
}

/// Whether the Mac's message shows the action: the edit's text, or no text left.
fn shows(action: &ActionRequest, message: &MacMessage<'_>) -> bool {
    match &action.body {
        Some(body) => message.reads(body),
        None => message.is_unsent(),
    }
}

fn not_applied(action: &ActionRequest) -> String {
    format!("Apple did not {} the message: the Mac shows it unchanged", action.verb())
}

/// What an edit or unsend call's answer says. Only the message in a success answer settles it;
/// a refusal the server gives before asking the helper (an unknown guid, the Private API off,
/// macOS before 13) and the helper's own error mean nothing was done; anything else is unknown.
fn action_outcome(action: &ActionRequest, status: StatusCode, envelope: &Envelope) -> SendOutcome {
    let message = MacMessage(&envelope.data);
    let reason = envelope.reason();
    match status {
        s if s.is_success() && message.guid().is_none() => {
            SendOutcome::Unknown(format!("the BlueBubbles Server answered {s} without the message"))
        }
        s if s.is_success() && shows(action, &message) => SendOutcome::Accepted,
        s if s.is_success() => SendOutcome::Rejected(not_applied(action)),
        StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN => {
            SendOutcome::Rejected("the BlueBubbles Server refused msgline's password".into())
        }
        // A proxy in front of the Mac giving up on a call the server may still be running.
        StatusCode::REQUEST_TIMEOUT => SendOutcome::Unknown(format!("the call timed out on its way: {reason}")),
        s if s.is_client_error() => SendOutcome::Rejected(format!("the BlueBubbles Server refused it: {reason}")),
        _ if ["Private API", "Ventura", "macOS", "does not exist"].iter().any(|why| reason.contains(why)) => {
            SendOutcome::Rejected(format!("the Mac cannot {} it: {reason}", action.verb()))
        }
        s => SendOutcome::Unknown(format!("the BlueBubbles Server answered {s}: {reason}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn action(body: Option<&str>) -> ActionRequest {
        ActionRequest {
            id: "mac_1".into(),
            message_id: "msg_1".into(),
            body: body.map(str::to_string),
            requested_at: 0,
        }
    }

    fn answer(status: u16, envelope: Value) -> SendOutcome {
        let envelope: Envelope = serde_json::from_value(envelope).unwrap();
        action_outcome(&action(Some("at 9")), StatusCode::from_u16(status).unwrap(), &envelope)
    }

    #[test]
    fn only_the_macs_message_settles_an_edit_and_a_refusal_before_the_helper_is_rejected() {
        let message = |text: Value| json!({"status": 200, "data": {"guid": "G", "text": text, "dateEdited": 5}});
        assert_eq!(answer(200, message(json!("at 9"))), SendOutcome::Accepted);
        assert!(matches!(answer(200, message(json!("at 8"))), SendOutcome::Rejected(why) if why.contains("Apple")));
        // A success without a readable message, or a server error of unknown cause: unknown.
        assert!(matches!(answer(200, json!({"status": 200})), SendOutcome::Unknown(_)));
        let unhandled = json!({"error": {"type": "Server Error", "message": "An unhandled error has occurred!"}});
        assert!(matches!(answer(500, unhandled), SendOutcome::Unknown(_)));
        assert!(matches!(answer(502, json!({})), SendOutcome::Unknown(_)));
        assert!(matches!(answer(408, json!({})), SendOutcome::Unknown(_)));
        for refusal in [
            "iMessage Private API is not enabled!",
            "Unsend message is only supported on macOS Ventura and newer!",
            "Chat does not exist in IMChatRegistry!",
        ] {
            let envelope = json!({"error": {"type": "iMessage Error", "message": refusal}});
            assert!(matches!(answer(500, envelope), SendOutcome::Rejected(_)), "{refusal}");
        }
        let unknown_guid =
            json!({"error": {"type": "Validation Error", "message": "Selected message does not exist!"}});
        assert!(matches!(answer(400, unknown_guid), SendOutcome::Rejected(_)));
    }

    #[test]
    fn an_unsend_shows_as_a_message_without_text_or_parts() {
        let unsend = action(None);
        let shown = |message: Value| shows(&unsend, &MacMessage(&message));
        assert!(shown(json!({"guid": "G", "text": null, "partCount": 0, "dateEdited": 5})));
        assert!(shown(json!({"guid": "G", "text": "hi", "dateRetracted": 5})));
        assert!(!shown(json!({"guid": "G", "text": "hi", "partCount": 1, "dateEdited": 5})));
        // An attachment's placeholder is text: a message of files only is not unsent.
        assert!(!shown(json!({"guid": "G", "text": "\u{fffc}", "partCount": 1})));
    }
}
