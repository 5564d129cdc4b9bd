//! SMS fallback: watches the iMessages sent with `fallback: "sms"` (or under their
//! organisation's default) and, when one fails (or is still not delivered at its
//! `fallback_after_seconds`), writes one SMS with its text from the same line. The decision and
//! the SMS are one transaction that only one instance can commit, so each message falls back at
//! most once, whatever restarts and instances do; the dispatcher then sends the SMS as any other.

use std::time::Duration;

use tokio::sync::watch;

use super::pause;
use crate::{
    clock,
    db::{self, messages::Message},
    domain::lifecycle::MessageStatus,
    send::Sender,
};

/// How often the watch list is looked at.
const EVERY: Duration = Duration::from_millis(250);
const BATCH: i64 = 100;

pub async fn run(state: Sender, mut shutdown: watch::Receiver<bool>) {
    loop {
        let decided = match step(&state).await {
            Ok(n) => n,
            Err(error) => {
                tracing::error!(error = %error, "SMS fallback step failed");
                0
            }
        };
        let wait = if decided as i64 == BATCH { Duration::from_millis(10) } else { EVERY };
        if !pause(&mut shutdown, wait).await {
            break;
        }
    }
}

/// Decides the fallbacks due now; returns how many messages it looked at.
pub async fn step(state: &Sender) -> anyhow::Result<usize> {
    let due = db::fallback::due(&state.db, clock::now_ms(), BATCH).await?;
    let count = due.len();
    let mut wrote = false;
    for id in due {
        let Some(message) = state.db.read(async |conn| db::messages::get_any(conn, &id).await).await? else { continue };
        wrote |= decide(state, &message).await?;
    }
    if wrote {
        state.dispatch.wake();
    }
    Ok(count)
}

/// Whether the message needs its SMS, and if so writes it; `true` when an SMS was written.
async fn decide(state: &Sender, message: &Message) -> anyhow::Result<bool> {
    let got_through =
        matches!(message.status, MessageStatus::Delivered | MessageStatus::Read | MessageStatus::Canceled);
    let why_not = if got_through {
        Some("it got through")
    } else if !can_send_sms(state, message).await? {
        Some("its line cannot send SMS")
    } else {
        let phones: Vec<String> =
            state.db.read(async |conn| db::messages::recipients(conn, &message.conversation_id).await).await?;
        let phones: Vec<&str> = phones.iter().map(String::as_str).collect();
        let opted_out = db::opt_outs::first_opted_out(&state.db, &message.org_id, &message.line_id, &phones).await?;
        opted_out.is_some().then_some("its recipient opted out")
    };
    if let Some(why_not) = why_not {
        if state.db.write(async |conn| db::fallback::end_watch(conn, &message.id).await).await? && !got_through {
            tracing::info!(message = %message.id, why_not, "no SMS fallback");
        }
        return Ok(false);
    }
    let written = state
        .db
        .transaction(async |tx| match db::fallback::fall_back(tx, message).await? {
            Some(sms) => Ok(Some(sms)),
            // Another instance decided first: nothing of this transaction stays.
            None => Err(Decided::ElsewhereFirst),
        })
        .await;
    match written {
        Ok(Some(sms)) => {
            crate::metrics::status_moves(MessageStatus::Queued.as_str(), 1);
            tracing::info!(message = %message.id, sms = %sms.id, "fell back to SMS");
            Ok(true)
        }
        Ok(None) | Err(Decided::ElsewhereFirst) => Ok(false),
        Err(Decided::Db(error)) => Err(error.into()),
    }
}

async fn can_send_sms(state: &Sender, message: &Message) -> anyhow::Result<bool> {
    let Some(line) = state.lines.get(&message.line_id).await? else { return Ok(false) };
    Ok(state.lines.capabilities(&line).await.is_none_or(|c| c.sms))
}

enum Decided {
    ElsewhereFirst,
    Db(sqlx::Error),
}

impl From<sqlx::Error> for Decided {
    fn from(error: sqlx::Error) -> Self {
        Decided::Db(error)
    }
}
