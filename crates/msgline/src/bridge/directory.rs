//! The lines and what their bridges can do, cached so that a send does not read the line or ask
//! its bridge every time.

use std::{
    collections::HashMap,
    sync::{Mutex, RwLock},
    time::{Duration, Instant},
};

use super::client::BridgeClient;
use crate::db::{
    self, Db,
    lines::{Capabilities, Line},
};

const TTL: Duration = Duration::from_secs(10);

pub struct LineDirectory {
    db: Db,
    client: BridgeClient,
    cache: RwLock<HashMap<String, (Line, Instant)>>,
    /// A line's number never changes: number → id.
    by_number: RwLock<HashMap<String, String>>,
    /// Each line's failed messages in a row that say something about the line
    /// (`lines::signals`), as this instance saw them: a message counts once, whether its failure
    /// came in the send's answer, a callback or both.
    runs: Mutex<HashMap<String, Vec<String>>>,
}

impl LineDirectory {
    pub fn new(db: Db, client: BridgeClient) -> Self {
        Self {
            db,
            client,
            cache: RwLock::new(HashMap::new()),
            by_number: RwLock::new(HashMap::new()),
            runs: Mutex::default(),
        }
    }

    pub fn client(&self) -> &BridgeClient {
        &self.client
    }

    /// A line by id, whoever owns it.
    pub async fn get(&self, id: &str) -> sqlx::Result<Option<Line>> {
        if let Some((line, at)) = self.cache.read().expect("line cache lock").get(id)
            && at.elapsed() < TTL
        {
            return Ok(Some(line.clone()));
        }
        let line = db::lines::get(&self.db, id).await?;
        if let Some(line) = &line {
            self.cache.write().expect("line cache lock").insert(id.to_string(), (line.clone(), Instant::now()));
        }
        Ok(line)
    }

    /// Forgets what this instance cached of a line (its health or policy changed): the next
    /// look reads it again.
    pub fn forget(&self, id: &str) {
        self.cache.write().expect("line cache lock").remove(id);
    }

    /// One more failed message of the line in a row: how many now.
    pub fn failed_again(&self, id: &str, message_id: &str) -> u32 {
        let mut runs = self.runs.lock().expect("line runs lock");
        let run = runs.entry(id.to_string()).or_default();
        if !run.iter().any(|m| m == message_id) {
            run.push(message_id.to_string());
        }
        run.len() as u32
    }

    /// A send of the line went out, or it was resumed: its run of failures ends.
    pub fn end_run(&self, id: &str) {
        self.runs.lock().expect("line runs lock").remove(id);
    }

    /// Forgets every line this instance cached (it may have missed a change).
    pub fn clear(&self) {
        self.cache.write().expect("line cache lock").clear();
    }

    /// A line by its number, whoever owns it.
    pub async fn get_by_e164(&self, e164: &str) -> sqlx::Result<Option<Line>> {
        let cached = self.by_number.read().expect("line cache lock").get(e164).cloned();
        if let Some(id) = cached {
            return self.get(&id).await;
        }
        let line = db::lines::get_by_e164(&self.db, e164).await?;
        if let Some(line) = &line {
            self.by_number.write().expect("line cache lock").insert(e164.to_string(), line.id.clone());
        }
        Ok(line)
    }

    /// What the line can do: as last recorded, or asked of its bridge now when never recorded.
    /// `None` when the bridge has never answered.
    pub async fn capabilities(&self, line: &Line) -> Option<Capabilities> {
        if line.capabilities.is_some() {
            return line.capabilities;
        }
        self.refresh(line).await.ok().flatten()
    }

    /// Asks the bridge what it can do and records the answer (or that it did not answer).
    pub async fn refresh(&self, line: &Line) -> sqlx::Result<Option<Capabilities>> {
        let capabilities = match self.client.capabilities(line).await {
            Ok(answer) => Some(answer.capabilities),
            Err(error) => {
                tracing::debug!(line = %line.id, error, "bridge did not answer a capability check");
                None
            }
        };
        db::lines::record_check(&self.db, &line.id, capabilities).await?;
        self.cache.write().expect("line cache lock").remove(&line.id);
        Ok(capabilities)
    }
}
