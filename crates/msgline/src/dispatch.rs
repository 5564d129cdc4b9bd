//! The seam between an accepted send and the dispatcher, owned by neither: the dispatcher's
//! slots for calls to lines, which a send takes to have its message called at once, and the
//! hand-over of such a message. The send path puts a message here; the dispatcher (a worker)
//! takes it from here. Neither calls the other.

use std::{
    collections::{HashMap, HashSet},
    sync::{Arc, Mutex, OnceLock},
    time::Instant,
};

use tokio::sync::{Notify, OwnedSemaphorePermit, Semaphore};

use crate::db::messages::ForDispatch;

/// A message its request wrote already claimed, with the slot its call is to run in.
pub struct Handover {
    pub slot: OwnedSemaphorePermit,
    pub message: ForDispatch,
}

/// The dispatcher's calls in flight and the queue of messages handed to it.
pub struct Dispatch {
    wake: Notify,
    /// Wakes the lines' pacer, with the lines that have something new to decide (a message now
    /// waits for the line, a call of it ended, its budget or health changed).
    pace: Notify,
    to_pace: Mutex<HashSet<String>>,
    /// When each line last answered a send: a line that answers is not offline, whatever a
    /// probe that timed out under load says.
    answered: Mutex<HashMap<String, Instant>>,
    permits: Arc<Semaphore>,
    /// How many slots there are (`MSGLINE_DISPATCH_CONCURRENCY`).
    size: usize,
    /// What takes a hand-over: installed once, by the dispatcher, when the server is wired.
    deliver: OnceLock<Deliver>,
}

type Deliver = Box<dyn Fn(Handover) + Send + Sync>;

impl Dispatch {
    pub fn new(size: usize) -> Self {
        let size = size.max(1);
        Self {
            wake: Notify::new(),
            pace: Notify::new(),
            to_pace: Mutex::new(HashSet::new()),
            answered: Mutex::new(HashMap::new()),
            permits: Arc::new(Semaphore::new(size)),
            size,
            deliver: OnceLock::new(),
        }
    }

    /// Tells the dispatcher that something may be due.
    pub fn wake(&self) {
        self.wake.notify_one();
    }

    /// Waits until [`Dispatch::wake`] is called (or was, since the last wait).
    pub async fn woken(&self) {
        self.wake.notified().await
    }

    /// Tells the lines' pacer that `line_id` has something new to decide.
    pub fn wake_pacer(&self, line_id: &str) {
        self.to_pace.lock().expect("pacer lines lock").insert(line_id.to_string());
        self.pace.notify_one();
    }

    /// Waits until [`Dispatch::wake_pacer`] is called (or was, since the last wait).
    pub async fn pacer_woken(&self) {
        self.pace.notified().await
    }

    /// Notes that `line_id` answered a send (took it or refused it).
    pub fn line_answered(&self, line_id: &str) {
        self.answered.lock().expect("answered lock").insert(line_id.to_string(), Instant::now());
    }

    /// Whether `line_id` answered a send within `within`.
    pub fn answered_within(&self, line_id: &str, within: std::time::Duration) -> bool {
        self.answered.lock().expect("answered lock").get(line_id).is_some_and(|at| at.elapsed() < within)
    }

    /// The lines named to the pacer since it last asked.
    pub fn lines_to_pace(&self) -> Vec<String> {
        self.to_pace.lock().expect("pacer lines lock").drain().collect()
    }

    /// A free slot, if there is one, for a message its request will hand over.
    pub fn try_take(&self) -> Option<OwnedSemaphorePermit> {
        self.permits.clone().try_acquire_owned().ok()
    }

    /// Every slot, free or taken.
    pub fn permits(&self) -> &Arc<Semaphore> {
        &self.permits
    }

    pub fn size(&self) -> usize {
        self.size
    }

    /// Hands a message written already claimed to the dispatcher, in the slot its request took.
    /// If no dispatcher takes it (the instance is stopping), the claim runs out and the
    /// reconciler asks the line: nothing is lost, nothing is sent twice.
    pub fn hand_over(&self, slot: OwnedSemaphorePermit, message: ForDispatch) {
        match self.deliver.get() {
            Some(deliver) => deliver(Handover { slot, message }),
            None => tracing::warn!("no dispatcher takes hand-overs; the message's claim will run out"),
        }
    }

    /// Installs what takes the hand-overs (the dispatcher's delivery); only the first counts.
    pub fn on_handover(&self, deliver: impl Fn(Handover) + Send + Sync + 'static) {
        if self.deliver.set(Box::new(deliver)).is_err() {
            tracing::warn!("hand-overs are taken already");
        }
    }
}

/// How long a claim lasts: the bridge's timeout and a margin. A claim that runs out (its
/// instance stopped mid-call) is the reconciler's to settle.
pub fn lease_ms(bridge_timeout_ms: u64) -> i64 {
    bridge_timeout_ms as i64 + 5_000
}
