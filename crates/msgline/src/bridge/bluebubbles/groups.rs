//! Group chats on a BlueBubbles line: creation with the opening message, renames and
//! participant changes, and whether the Mac shows them.

use super::*;

impl BlueBubbles {
    /// The chat guid msgline knows for a group conversation.
    pub(super) async fn group_chat(&self, line: &Line, conversation_id: &str) -> sqlx::Result<Option<String>> {
        let refs = bridge_refs::remotes_for(&self.db, &line.id, conversation_id).await?;
        Ok(real_guid(&refs).map(str::to_string))
    }

    /// A group changed on the Mac: its name (`groupTitle`) or its participants as the event's
    /// chat lists them, for the group msgline knows by that chat.
    pub(super) async fn group_changed(
        &self,
        line: &Line,
        kind: &str,
        message: &MacMessage<'_>,
        guid: &str,
    ) -> sqlx::Result<Vec<BridgeEvent>> {
        let Some(chat) = message.chat() else { return Ok(Vec::new()) };
        let Some(group_id) = bridge_refs::local_for(&self.db, &line.id, chat).await? else { return Ok(Vec::new()) };
        let (name, participants) = if kind == "group-name-change" {
            (Some(message.str("groupTitle").unwrap_or_default().to_string()), None)
        } else {
            let listed = message.0["chats"][0]["participants"].as_array();
            let phones: Vec<String> = listed
                .into_iter()
                .flatten()
                .filter_map(|p| p.get("address").and_then(Value::as_str))
                .filter(|address| *address != line.e164)
                .map(str::to_string)
                .collect();
            if phones.is_empty() {
                return Ok(Vec::new());
            }
            (None, Some(phones))
        };
        Ok(vec![BridgeEvent {
            id: format!("bluebubbles:group:{guid}"),
            payload: BridgeEventPayload::GroupUpdated { group_id, name, participants },
        }])
    }

    /// A new chat with its opening message, through the Private API (as the server requires).
    pub(super) async fn create_group_chat(&self, line: &Line, group: &GroupRequest) -> CallResult<SendOutcome> {
        let notes = [
            (format!("{}{}", expectation(NEW_CHAT, &group.body), group.message_id), group.message_id.as_str()),
            (format!("group:{}", group.message_id), group.id.as_str()),
        ];
        for (remote, local) in &notes {
            if let Err(error) = bridge_refs::record(&self.db, &line.id, remote, local).await {
                return CallResult {
                    outcome: SendOutcome::Unreachable(error.to_string()),
                    http_status: None,
                    latency_ms: 0,
                };
            }
        }
        let body = json!({
            "addresses": group.participants,
            "message": group.body,
            "method": "private-api",
            "service": "iMessage",
            "tempGuid": group.message_id,
        });
        let started = Instant::now();
        let result = self.call(self.request(reqwest::Method::POST, line, "/chat/new").json(&body)).await;
        if let Ok((status, envelope)) = &result
            && status.is_success()
            && let Some(chat) = envelope.data.get("guid").and_then(Value::as_str)
        {
            let opening = envelope.data.get("messages").and_then(Value::as_array).and_then(|m| m.first());
            let opening = opening.and_then(|m| MacMessage(m).guid().map(str::to_string));
            let recorded = async {
                bridge_refs::record(&self.db, &line.id, chat, &group.id).await?;
                if let Some(guid) = &opening {
                    bridge_refs::record(&self.db, &line.id, guid, &group.message_id).await?;
                }
                Ok::<(), sqlx::Error>(())
            };
            if let Err(error) = recorded.await {
                tracing::warn!(group = %group.id, error = %error, "could not record the group's chat guid");
            }
            return CallResult {
                outcome: SendOutcome::Accepted,
                http_status: Some(status.as_u16()),
                latency_ms: started.elapsed().as_millis() as i64,
            };
        }
        self.outcome(line, &group.message_id, started, result).await
    }

    /// A group is created once its chat guid is known; its opening message tells.
    pub(super) async fn group_created(&self, line: &Line, id: &str) -> StatusLookup {
        let refs = match bridge_refs::remotes_for(&self.db, &line.id, id).await {
            Ok(refs) => refs,
            Err(error) => return StatusLookup::Failed(error.to_string()),
        };
        if real_guid(&refs).is_some() {
            return StatusLookup::Known(StatusAnswer { id: id.to_string(), status: "created".into(), reason: None });
        }
        let Some(opening) = refs.iter().find_map(|(remote, _)| remote.strip_prefix("group:")) else {
            return StatusLookup::NotFound;
        };
        match self.lookup(line, opening).await {
            Ok(Some(answer)) if answer.status != "failed" => {
                StatusLookup::Known(StatusAnswer { id: id.to_string(), status: "created".into(), reason: None })
            }
            Ok(Some(answer)) => StatusLookup::Known(StatusAnswer { id: id.to_string(), ..answer }),
            Ok(None) => StatusLookup::NotFound,
            Err(error) => StatusLookup::Failed(error),
        }
    }

    /// Renames the group (`PUT /chat/:guid {displayName}`) and adds and removes participants
    /// (`POST /chat/:guid/participant/add|remove {address}`), one call each, through the Private
    /// API. The server waits up to 30 s for each step to show in the Mac's database and answers
    /// 500 if it has not: the step may still happen, so that is `unknown`, as is any failure after
    /// a step went through; the lookup then compares the chat with the change.
    pub(super) async fn apply_group_change(&self, line: &Line, change: &GroupChangeRequest) -> CallResult<SendOutcome> {
        let started = Instant::now();
        let done = |outcome: SendOutcome, http_status: Option<u16>| CallResult {
            outcome,
            http_status,
            latency_ms: started.elapsed().as_millis() as i64,
        };
        if change.name.as_deref() == Some("") {
            return done(
                SendOutcome::Rejected("a BlueBubbles line cannot remove a group's name, only change it".into()),
                None,
            );
        }
        let chat = match self.group_chat(line, &change.group_id).await {
            Ok(Some(chat)) => chat,
            Ok(None) => return done(SendOutcome::Rejected("the Mac has no chat for this group".into()), None),
            Err(error) => return done(SendOutcome::Unreachable(error.to_string()), None),
        };
        let segment = path_segment(&chat);
        let mut steps: Vec<(reqwest::Method, String, Value)> = Vec::new();
        if change.leave {
            steps.push((reqwest::Method::POST, format!("/chat/{segment}/leave"), json!({})));
        }
        if let Some(name) = &change.name {
            steps.push((reqwest::Method::PUT, format!("/chat/{segment}"), json!({"displayName": name})));
        }
        for (verb, phones) in [("add", &change.add), ("remove", &change.remove)] {
            for phone in phones {
                steps.push((
                    reqwest::Method::POST,
                    format!("/chat/{segment}/participant/{verb}"),
                    json!({"address": phone}),
                ));
            }
        }
        let mut applied = false;
        let mut last_status = None;
        for (method, path, body) in steps {
            let (status, envelope) = match self.call(self.request(method, line, &path).json(&body)).await {
                Ok(answer) => answer,
                Err(error) => {
                    let outcome = match classify_error(&error) {
                        SendOutcome::Unreachable(_) | SendOutcome::RetryLater if applied => SendOutcome::Unknown(
                            "part of the change went through before the Mac stopped answering".into(),
                        ),
                        outcome => outcome,
                    };
                    return done(outcome, last_status);
                }
            };
            last_status = Some(status.as_u16());
            if status.is_success() {
                applied = true;
                continue;
            }
            let reason = envelope.reason();
            let outcome = if (status.is_server_error() && !reason.contains("Private API")) || applied {
                SendOutcome::Unknown(format!("the BlueBubbles Server answered {status}: {reason}"))
            } else {
                SendOutcome::Rejected(format!("the BlueBubbles Server refused it: {reason}"))
            };
            return done(outcome, last_status);
        }
        done(SendOutcome::Accepted, last_status)
    }

    pub(super) async fn group_change_shown(&self, line: &Line, group_id: &str, change_id: &str) -> StatusLookup {
        let change = match crate::db::group_changes::get(&self.db, change_id).await {
            Ok(Some(change)) => change,
            Ok(None) => return StatusLookup::NotFound,
            Err(error) => return StatusLookup::Failed(error.to_string()),
        };
        let chat = match self.group_chat(line, group_id).await {
            Ok(Some(chat)) => chat,
            Ok(None) => return StatusLookup::NotFound,
            Err(error) => return StatusLookup::Failed(error.to_string()),
        };
        if change.leave {
            // The server answers a leave at once and keeps no trace of it that can be read back.
            if clock::now_ms() - change.created_at < self.grace() {
                return StatusLookup::Failed("a leave cannot be checked on the Mac yet".into());
            }
            let reason = "the Mac's answer was lost and a BlueBubbles Server cannot be asked whether the line left: \
                          leave again (leaving twice does no harm)";
            return StatusLookup::Known(StatusAnswer {
                id: change_id.to_string(),
                status: "failed".into(),
                reason: Some(reason.into()),
            });
        }
        let request = self
            .request(reqwest::Method::GET, line, &format!("/chat/{}", path_segment(&chat)))
            .query(&[("with", "participants")]);
        let (status, envelope) = match self.call(request).await {
            Ok(answer) => answer,
            Err(error) => return StatusLookup::Failed(describe(&error)),
        };
        if !status.is_success() {
            return StatusLookup::Failed(format!("the BlueBubbles Server answered {status}: {}", envelope.reason()));
        }
        let members: Vec<&str> = envelope.data["participants"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|p| p.get("address").and_then(Value::as_str))
            .collect();
        let named = change.name.as_deref().is_none_or(|name| envelope.data["displayName"].as_str() == Some(name));
        let shown = named
            && change.add.iter().all(|p| members.contains(&p.as_str()))
            && !change.remove.iter().any(|p| members.contains(&p.as_str()));
        let answer = |status: &str, reason: Option<String>| {
            StatusLookup::Known(StatusAnswer { id: change_id.to_string(), status: status.into(), reason })
        };
        if shown {
            answer("applied", None)
        } else if clock::now_ms() - change.created_at < self.grace() {
            StatusLookup::Failed("the Mac does not show the change yet".into())
        } else {
            answer("failed", Some("the Mac did not apply the change".into()))
        }
    }
}
