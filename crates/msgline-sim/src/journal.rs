//! The simulated phone's journal: what it decided and reported, kept across restarts.

use super::*;

/// A line of the journal.
#[derive(Debug, Serialize, Deserialize)]
#[serde(tag = "entry", rename_all = "lowercase")]
pub(super) enum JournalEntry {
    /// How the line answered a message or group it was handed (and, if it sent it, what it sent).
    Decided {
        id: String,
        #[serde(default)]
        sent: Option<Box<Sent>>,
        status: String,
        #[serde(default)]
        reason: Option<String>,
        code: u16,
        answer: SendAnswer,
    },
    /// The service acknowledged a callback reporting this status.
    Reported { id: String, status: String },
}

/// The line's memory across restarts (`--journal PATH`), as a phone keeps its messages when it
/// reboots: every decision is appended (one JSON line) before the call is answered, and each
/// status once the service has acknowledged its report. A restarted simulator reads it back: a
/// call naming a message it already had gets the first answer again and sends nothing, and a
/// message whose last steps were never acknowledged is reported again.
pub(super) struct Journal(pub(super) Mutex<Option<std::fs::File>>);

impl Journal {
    pub(super) fn open(path: &std::path::Path) -> anyhow::Result<(Journal, Vec<JournalEntry>)> {
        let text = match std::fs::read_to_string(path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
            Err(e) => anyhow::bail!("cannot read the journal {}: {e}", path.display()),
        };
        // A line cut short by a kill is the last one, and was never answered: skip it.
        let entries = text.lines().filter_map(|line| serde_json::from_str(line).ok()).collect();
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .map_err(|e| anyhow::anyhow!("cannot open the journal {}: {e}", path.display()))?;
        Ok((Journal(Mutex::new(Some(file))), entries))
    }

    pub(super) fn write(&self, entries: &[JournalEntry]) {
        use std::io::Write;
        let mut file = self.0.lock().expect("journal lock");
        let Some(file) = file.as_mut() else { return };
        let mut text = Vec::new();
        for entry in entries {
            text.extend(serde_json::to_vec(entry).expect("an entry serialises"));
            text.push(b'\n');
        }
        if let Err(error) = file.write_all(&text) {
            tracing::error!(%error, "could not write the journal");
        }
    }
}
