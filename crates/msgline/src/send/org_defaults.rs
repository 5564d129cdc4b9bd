//! An organisation's defaults for its sends (today: SMS fallback), read once and kept for
//! `MSGLINE_KEY_CACHE_SECONDS`, so that a send does not read its organisation's row. A change
//! made on this instance applies at once; one made on another within that time.

use std::{
    collections::HashMap,
    sync::Mutex,
    time::{Duration, Instant},
};

use crate::db::{self, Db};

pub struct OrgDefaults {
    keep: Duration,
    known: Mutex<HashMap<String, (bool, Instant)>>,
}

impl OrgDefaults {
    pub fn new(keep: Duration) -> Self {
        OrgDefaults { keep, known: Mutex::new(HashMap::new()) }
    }

    /// Whether the organisation's sends fall back to SMS unless they say otherwise.
    pub async fn fallback_sms(&self, db: &Db, org_id: &str) -> sqlx::Result<bool> {
        if let Some((sms, read_at)) = self.known.lock().expect("defaults lock").get(org_id).copied()
            && read_at.elapsed() < self.keep
        {
            return Ok(sms);
        }
        let sms = db::orgs::replies(db, org_id).await?.default_fallback.as_deref() == Some("sms");
        let mut known = self.known.lock().expect("defaults lock");
        // Bounded: organisations are few, but a long-running server forgets the stale ones.
        if known.len() > 10_000 {
            known.retain(|_, (_, read_at)| read_at.elapsed() < self.keep);
        }
        known.insert(org_id.to_string(), (sms, Instant::now()));
        Ok(sms)
    }

    /// Forgets what is kept of an organisation (its settings changed here).
    pub fn forget(&self, org_id: &str) {
        self.known.lock().expect("defaults lock").remove(org_id);
    }
}
