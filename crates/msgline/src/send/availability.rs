//! Whether a number can be reached over iMessage (and SMS) from a line, for
//! `GET /availability`: a remembered answer while it is younger than
//! `MSGLINE_AVAILABILITY_TTL_SECONDS`, else the line's device is asked, once per number however
//! many callers ask at the same time.

use std::hash::{BuildHasher, BuildHasherDefault, DefaultHasher};

use crate::{
    clock,
    db::{self, lines::Line},
    domain::phone::E164,
    error::ApiResult,
    send::Sender,
};

/// Callers asking about the same (line, number) wait for one another here: the first asks the
/// device and remembers the answer; the rest find it remembered. Striped, so numbers never asked
/// leave nothing behind; two numbers on one stripe only take turns.
pub struct Asking {
    stripes: Vec<tokio::sync::Mutex<()>>,
}

const STRIPES: usize = 64;

impl Default for Asking {
    fn default() -> Self {
        Asking { stripes: (0..STRIPES).map(|_| tokio::sync::Mutex::new(())).collect() }
    }
}

impl Asking {
    fn stripe(&self, line_id: &str, phone: &str) -> &tokio::sync::Mutex<()> {
        let hash = BuildHasherDefault::<DefaultHasher>::default().hash_one((line_id, phone));
        &self.stripes[(hash % STRIPES as u64) as usize]
    }
}

/// The answer `GET /availability` gives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Availability {
    /// `None`: not known (the device could not be asked, or did not say).
    pub imessage: Option<bool>,
    pub sms: bool,
    /// When the iMessage answer was learned.
    pub checked_at: Option<i64>,
}

pub async fn check(state: &Sender, org_id: &str, line: &Line, phone: &E164) -> ApiResult<Availability> {
    let capabilities = state.lines.capabilities(line).await;
    let sms = capabilities.is_none_or(|c| c.sms);
    let now = clock::now_ms();
    if capabilities.is_some_and(|c| !c.imessage) {
        // A line without iMessage reaches nobody over it; nothing to ask.
        return Ok(Availability { imessage: Some(false), sms, checked_at: Some(now) });
    }
    let since = now - (state.config.availability_ttl_seconds as i64).saturating_mul(1000);
    let known = |(reachable, at): (bool, i64)| Availability { imessage: Some(reachable), sms, checked_at: Some(at) };
    if let Some(found) = db::availability::remembered(&state.db, org_id, &line.id, phone.as_str(), since).await? {
        return Ok(known(found));
    }
    let _turn = state.asking.stripe(&line.id, phone.as_str()).lock().await;
    // Whoever held the turn before may have just asked about this number.
    if let Some(found) = db::availability::remembered(&state.db, org_id, &line.id, phone.as_str(), since).await? {
        return Ok(known(found));
    }
    let answer = state.lines.client().reachability(line, &[phone.to_string()]).await;
    let reachable = match answer {
        Ok(answer) => answer.imessage.get(phone.as_str()).copied(),
        Err(error) => {
            tracing::info!(line = %line.id, error, "the line could not be asked about reachability");
            None
        }
    };
    let Some(reachable) = reachable else { return Ok(Availability { imessage: None, sms, checked_at: None }) };
    let now = clock::now_ms();
    db::availability::remember(&state.db, org_id, &line.id, phone.as_str(), reachable, now).await?;
    state.threads.note_reachable(org_id, phone.as_str(), reachable);
    Ok(Availability { imessage: Some(reachable), sms, checked_at: Some(now) })
}
