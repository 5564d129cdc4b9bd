//! Files sent on a BlueBubbles line: uploaded to the Mac as an attachment, with the text.

use super::*;

impl BlueBubbles {
    /// Sends one file into a chat through the server's attachment route, with `temp_guid`.
    pub(super) async fn send_file(
        &self,
        line: &Line,
        chat: &str,
        temp_guid: &str,
        name: String,
        content_type: &str,
        bytes: Vec<u8>,
    ) -> Result<(StatusCode, Envelope), reqwest::Error> {
        let part = reqwest::multipart::Part::bytes(bytes)
            .file_name(name.clone())
            .mime_str(content_type)
            .unwrap_or_else(|_| reqwest::multipart::Part::bytes(Vec::new()));
        let form = reqwest::multipart::Form::new()
            .part("attachment", part)
            .text("name", name)
            .text("chatGuid", chat.to_string())
            .text("tempGuid", temp_guid.to_string())
            .text("method", "apple-script");
        self.call(self.request(reqwest::Method::POST, line, "/message/attachment").multipart(form)).await
    }

    /// A media send: each file through the attachment route (the first with msgline's id as its
    /// temp guid, the next with `<id>-2`, ...), then the caption as a text of its own. The message
    /// stands or falls with its first file, which is what msgline matches and tracks; a later
    /// file or the caption that fails is logged. The caption carries the message's reply, effect
    /// and subject (`private_api`), which the files' route does not take.
    pub(super) async fn send_media(
        &self,
        line: &Line,
        chat: &str,
        message: &SendRequest,
        private_api: Option<&Value>,
    ) -> CallResult<SendOutcome> {
        let failed = |outcome| CallResult { outcome, http_status: None, latency_ms: 0 };
        let mut files = Vec::with_capacity(message.attachments.len());
        for (n, file) in message.attachments.iter().enumerate() {
            let found = match crate::db::attachments::get_on_line(&self.db, &line.id, &file.id).await {
                Ok(found) => found,
                Err(error) => return failed(SendOutcome::Unreachable(error.to_string())),
            };
            let Some(found) = found else { return failed(SendOutcome::Rejected(format!("no file {}", file.id))) };
            let bytes = match self.media.get(&found.storage_key).await {
                Ok(Some(bytes)) => bytes,
                Ok(None) => return failed(SendOutcome::Rejected(format!("the file {} is no longer kept", file.id))),
                Err(error) => return failed(SendOutcome::Unreachable(error.to_string())),
            };
            // The name the Mac matches the sent message by: unique to this message.
            let name = match &file.filename {
                Some(name) => format!("{}-{n}-{name}", message.id),
                None => format!("{}-{n}", message.id),
            };
            files.push((name, file.content_type.clone(), bytes));
        }
        let Some((first_name, _, _)) = files.first() else { return failed(SendOutcome::Rejected("no files".into())) };
        let expected = expectation(chat, first_name);
        if let Err(error) =
            bridge_refs::record(&self.db, &line.id, &format!("{expected}{}", message.id), &message.id).await
        {
            return failed(SendOutcome::Unreachable(error.to_string()));
        }
        let started = Instant::now();
        let mut sent = None;
        for (n, (name, content_type, bytes)) in files.into_iter().enumerate() {
            let temp_guid = if n == 0 { message.id.clone() } else { format!("{}-{}", message.id, n + 1) };
            let result = self.send_file(line, chat, &temp_guid, name, &content_type, bytes).await;
            if n == 0 {
                let outcome = self.outcome(line, &message.id, started, result).await;
                if outcome.outcome != SendOutcome::Accepted {
                    return outcome;
                }
                sent = Some(outcome);
            } else if !matches!(&result, Ok((status, _)) if status.is_success()) {
                tracing::warn!(message = %message.id, file = n + 1, "a later file of the message did not go out");
            }
        }
        if !message.body.trim().is_empty() {
            let caption_id = format!("{}-caption", message.id);
            let caption = self.send_text(line, chat, &caption_id, &message.body, private_api).await;
            if !matches!(&caption, Ok((status, _)) if status.is_success()) {
                tracing::warn!(message = %message.id, "the files went out but their caption did not");
            }
        } else if private_api.is_some() {
            tracing::warn!(message = %message.id, "files without a caption go without their reply, effect or subject");
        }
        sent.unwrap_or_else(|| failed(SendOutcome::Rejected("no files".into())))
    }
}
