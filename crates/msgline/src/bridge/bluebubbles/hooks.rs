//! What the BlueBubbles Server posts to msgline's webhook, read into bridge events.
//!
//! An edit or an unsend (made on a phone, or msgline's own echoed back) comes as an
//! `updated-message` without `chats` whose `dateEdited` moved (`MessagePoller.ts`): an edit with the
//! new `text`, an unsend with none (`text` null, `partCount` 0; Apple leaves `dateRetracted`
//! unset). Receipts of a message edited before carry that `dateEdited` too.

use super::*;

impl BlueBubbles {
    pub(super) async fn read_webhook(&self, line: &Line, hook: &Hook<'_>) -> Result<Vec<BridgeEvent>, HookError> {
        let delivery: Value = serde_json::from_slice(hook.body)
            .map_err(|e| HookError::Malformed(format!("not a BlueBubbles webhook: {e}")))?;
        let kind = delivery.get("type").and_then(Value::as_str).unwrap_or_default();
        let data = delivery.get("data").cloned().unwrap_or(Value::Null);
        let message = MacMessage(&data);
        if kind == "typing-indicator" {
            // `{display, guid}`: the chat's guid; the server reports 1:1 chats only.
            let chat = data.get("guid").and_then(Value::as_str).unwrap_or_default();
            let Some((_, from)) = chat.split_once(";-;") else { return Ok(Vec::new()) };
            let typing = data.get("display").and_then(Value::as_bool).unwrap_or(false);
            return Ok(vec![BridgeEvent {
                id: format!("bluebubbles:typing:{chat}:{typing}:{}", clock::now_ms()),
                payload: BridgeEventPayload::Typing { from: from.to_string(), chat: None, typing },
            }]);
        }
        let Some(guid) = message.guid() else {
            // Read-state changes carry no message: nothing msgline shows.
            return Ok(Vec::new());
        };
        let storage = |e: sqlx::Error| HookError::Malformed(format!("could not read the line's records: {e}"));
        // A group's rename or membership change is a message row of its own (`itemType` 1, 2 or
        // 3, no text): reported as its own event, never as a text.
        let group_event = message.0.get("itemType").and_then(Value::as_i64).unwrap_or(0) != 0;
        if matches!(kind, "participant-added" | "participant-removed" | "participant-left" | "group-name-change") {
            return self.group_changed(line, kind, &message, guid).await.map_err(storage);
        }
        if group_event {
            return Ok(Vec::new());
        }
        match kind {
            "updated-message" if message.date("dateEdited").is_some() => {
                self.message_changed(line, &message, guid).await.map_err(storage)
            }
            "new-message" if !message.is_from_me() => {
                let Some(from) = message.0.get("handle").and_then(|h| h.get("address")).and_then(Value::as_str) else {
                    return Err(HookError::Malformed("new-message without handle.address".into()));
                };
                if let Some(associated) = message.str("associatedMessageGuid").filter(|g| !g.is_empty()) {
                    // A tapback: `associatedMessageType` names it (`love`, `-love` to take it back);
                    // other associated messages (stickers, edits) are not carried.
                    let kind = message.str("associatedMessageType").unwrap_or_default();
                    let (removed, tapback) = match kind.strip_prefix('-') {
                        Some(rest) => (true, rest),
                        None => (false, kind),
                    };
                    if tapback.parse::<crate::domain::lifecycle::Tapback>().is_err() {
                        return Ok(Vec::new());
                    }
                    let chat = match message.chat().filter(|c| is_group_chat(c)) {
                        Some(chat) => bridge_refs::local_for(&self.db, &line.id, chat).await.map_err(storage)?,
                        None => None,
                    };
                    return Ok(vec![BridgeEvent {
                        id: format!("bluebubbles:in:{guid}"),
                        payload: BridgeEventPayload::Reaction {
                            from: from.to_string(),
                            target: target_guid(associated).to_string(),
                            reaction: tapback.to_string(),
                            removed,
                            chat,
                            message_id: Some(guid.to_string()),
                        },
                    }]);
                }
                let chat_guid = message.chat();
                let chat = match chat_guid.filter(|c| is_group_chat(c)) {
                    Some(chat) => bridge_refs::local_for(&self.db, &line.id, chat).await.map_err(storage)?,
                    None => None,
                };
                let sms = message.0.get("handle").and_then(|h| h.get("service")).and_then(Value::as_str) == Some("SMS")
                    || chat_guid.is_some_and(|c| c.starts_with("SMS;"));
                let body = message.str("text").unwrap_or_default().replace('\u{fffc}', "").trim().to_string();
                // Its files, fetched by their guid from the server's download route.
                let attachments: Vec<crate::bridge::InboundFile> = message
                    .0
                    .get("attachments")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .filter_map(|a| {
                        let guid = a.get("guid").and_then(Value::as_str)?;
                        let filename = a.get("transferName").and_then(Value::as_str).map(str::to_string);
                        Some(crate::bridge::InboundFile { url: guid.to_string(), filename, stored: None })
                    })
                    .collect();
                Ok(vec![BridgeEvent {
                    id: format!("bluebubbles:in:{guid}"),
                    payload: BridgeEventPayload::Inbound {
                        from: from.to_string(),
                        body,
                        chat,
                        channel: if sms { "sms".into() } else { "imessage".into() },
                        message_id: Some(guid.to_string()),
                        attachments,
                        // An inline reply names the message its thread started with.
                        reply_to: message.str("threadOriginatorGuid").filter(|g| !g.is_empty()).map(str::to_string),
                        effect: message
                            .str("expressiveSendStyleId")
                            .and_then(crate::domain::message_action::Effect::from_apple_id)
                            .map(|effect| effect.as_str().to_string()),
                        subject: message.str("subject").filter(|s| !s.trim().is_empty()).map(str::to_string),
                    },
                }])
            }
            "new-message" | "updated-message" | "message-send-error" => {
                let Some(id) = self.our_id(line, &message).await.map_err(storage)? else {
                    // A message sent from the Mac itself, not through msgline.
                    return Ok(Vec::new());
                };
                let (status, reason) = message.status();
                Ok(vec![BridgeEvent {
                    id: format!("bluebubbles:{status}:{guid}"),
                    payload: BridgeEventPayload::MessageStatus { message_id: id, status: status.into(), reason },
                }])
            }
            _ => Ok(Vec::new()),
        }
    }

    /// An `updated-message` of a message edited or unsent: for a message msgline sent, its
    /// receipt as any update's, and for every message the change, read from the Mac's message as
    /// it now is (`GET /message/:guid`; the webhook's own when the Mac cannot be asked), so that
    /// a webhook overtaken by a later one reports nothing stale. Event ids name the Mac's state:
    /// a webhook repeated, or another of the same state, is one change.
    async fn message_changed(
        &self,
        line: &Line,
        message: &MacMessage<'_>,
        guid: &str,
    ) -> sqlx::Result<Vec<BridgeEvent>> {
        let mut events = Vec::new();
        let name = if message.is_from_me() {
            // A message sent from the Mac itself, not through msgline: nothing to report.
            let Some(id) = self.our_id(line, message).await? else { return Ok(events) };
            let (status, reason) = message.status();
            events.push(BridgeEvent {
                id: format!("bluebubbles:{status}:{guid}"),
                payload: BridgeEventPayload::MessageStatus { message_id: id.clone(), status: status.into(), reason },
            });
            id
        } else {
            guid.to_string()
        };
        let path = format!("/message/{}", path_segment(guid));
        let current = match self.call(self.request(reqwest::Method::GET, line, &path)).await {
            Ok((status, envelope)) if status.is_success() && MacMessage(&envelope.data).guid() == Some(guid) => {
                Some(envelope.data)
            }
            _ => None,
        };
        let now = current.as_ref().map_or(MacMessage(message.0), MacMessage);
        if now.is_unsent() {
            events.push(BridgeEvent {
                id: format!("bluebubbles:unsend:{guid}"),
                payload: BridgeEventPayload::MessageUnsent { message_id: name },
            });
        } else if let Some(body) = now.shown_text().filter(|body| !body.is_empty()) {
            let edited_at = now.date("dateEdited").unwrap_or_default();
            events.push(BridgeEvent {
                id: format!("bluebubbles:edit:{guid}:{edited_at}"),
                payload: BridgeEventPayload::MessageEdited { message_id: name, body },
            });
        }
        Ok(events)
    }
}
