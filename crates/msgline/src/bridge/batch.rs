//! Sends to one line that arrive together go out together: each line whose bridge says `batch`
//! has a lane (and so does every line for reachability questions, which the protocol always let
//! carry several numbers), a queue of sends waiting for a call. At most [`CALLS_PER_LINE`] calls to the line
//! run at once; a send that finds one free is called at once (alone, on `POST /v1/messages`), and
//! sends that arrive while every call is busy wait and leave together in the next
//! (`POST /v1/messages/batch`). Nothing waits for a batch to fill: a batch is what queued while
//! the line was answering, so a quiet line sees one call per message and a busy one sees few.
//!
//! Each send keeps its own deadline, the bridge timeout from when it was handed over: time spent
//! queued counts against it, so that a send's whole call ends within its claim (see
//! [`crate::dispatch::lease_ms`]). One whose time ran out before its call began was never sent,
//! and is retried like a call the line never received.

use std::{
    collections::{HashMap, VecDeque},
    sync::Mutex,
    time::{Duration, Instant},
};

use tokio::sync::oneshot;

use super::call::SendOutcome;

/// Calls one line may have in flight at once. Fewer means larger batches under load (fewer
/// exchanges per message); more means less waiting behind a slow answer.
pub const CALLS_PER_LINE: usize = 2;

/// A call's worth of work waiting for its line: a send, or a reachability question.
pub struct Waiting<Q, A> {
    pub request: Q,
    /// When its call must have ended.
    pub deadline: Instant,
    answer: oneshot::Sender<A>,
}

impl<Q, A> Waiting<Q, A> {
    /// Work handed over now, and where its outcome will arrive.
    pub fn new(request: Q, timeout: Duration) -> (Self, oneshot::Receiver<A>) {
        let (answer, outcome) = oneshot::channel();
        (Self { request, deadline: Instant::now() + timeout, answer }, outcome)
    }

    /// Gives the work its outcome (its waiter may have gone: the instance is stopping).
    pub fn answer(self, result: A) {
        let _ = self.answer.send(result);
    }

    /// Time left for its call; zero once its deadline has passed.
    pub fn time_left(&self, now: Instant) -> Duration {
        self.deadline.saturating_duration_since(now)
    }
}

/// Work split for a call: what can still be called, what ran out of time, and the time the call
/// has ([`split_due`]).
pub type Split<Q, A> = (Vec<Waiting<Q, A>>, Vec<Waiting<Q, A>>, Option<Duration>);

/// Work taken for a call, split into what can still be called and what ran out of time while it
/// queued (never sent), with the time the call has: the shortest left among the first; `None`
/// when none can be called.
pub fn split_due<Q, A>(work: Vec<Waiting<Q, A>>, now: Instant) -> Split<Q, A> {
    let (due, late): (Vec<_>, Vec<_>) = work.into_iter().partition(|w| !w.time_left(now).is_zero());
    let within = due.iter().map(|w| w.time_left(now)).min();
    (due, late, within)
}

/// Every line's queue and calls in flight.
pub struct Lanes<Q, A>(Mutex<HashMap<String, Lane<Q, A>>>);

struct Lane<Q, A> {
    queue: VecDeque<Waiting<Q, A>>,
    calls: usize,
}

impl<Q, A> Default for Lanes<Q, A> {
    fn default() -> Self {
        Self(Mutex::default())
    }
}

impl<Q, A> Lanes<Q, A> {
    /// Queues work for `line_id`; `true` when the caller is to start a new call loop for the
    /// line (a call was free), which then drains the queue with [`Lanes::take`].
    pub fn enqueue(&self, line_id: &str, waiting: Waiting<Q, A>) -> bool {
        let mut lanes = self.0.lock().expect("lanes lock");
        let lane = lanes.entry(line_id.to_string()).or_insert_with(|| Lane { queue: VecDeque::new(), calls: 0 });
        lane.queue.push_back(waiting);
        if lane.calls < CALLS_PER_LINE {
            lane.calls += 1;
            true
        } else {
            false
        }
    }

    /// The next work for a call loop, at most `most`; `None` ends the loop (the queue is
    /// empty, and the loop's call is given back).
    pub fn take(&self, line_id: &str, most: usize) -> Option<Vec<Waiting<Q, A>>> {
        let mut lanes = self.0.lock().expect("lanes lock");
        let lane = lanes.get_mut(line_id)?;
        if lane.queue.is_empty() {
            lane.calls -= 1;
            if lane.calls == 0 {
                lanes.remove(line_id);
            }
            return None;
        }
        let n = lane.queue.len().min(most.max(1));
        Some(lane.queue.drain(..n).collect())
    }
}

/// What each message of a batch came to, from the bridge's answer: matched by id; a message the
/// answer leaves out is `Unknown` (the line may have it).
pub fn outcomes(ids: &[&str], answer: super::BatchAnswer) -> Vec<SendOutcome> {
    let mut by_id: HashMap<String, super::BatchResult> =
        answer.results.into_iter().map(|result| (result.id.clone(), result)).collect();
    ids.iter()
        .map(|id| match by_id.remove(*id) {
            Some(result) if result.status == "accepted" => SendOutcome::Accepted,
            Some(result) if result.error.as_deref() == Some(super::LINE_BLOCKED) => {
                SendOutcome::Blocked(result.reason.unwrap_or_else(|| "the line's account is blocked".into()))
            }
            Some(result) if result.status == "rejected" => {
                SendOutcome::Rejected(result.reason.unwrap_or_else(|| "the line refused the message".into()))
            }
            Some(result) if result.status == "retry" => SendOutcome::RetryLater,
            Some(result) => SendOutcome::Unknown(format!("the line's batch answer says {:?}", result.status)),
            None => SendOutcome::Unknown("the line's batch answer has no result for the message".into()),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bridge::{BatchAnswer, BatchResult, SendRequest, call::CallResult};

    fn request(id: &str) -> SendRequest {
        SendRequest {
            id: id.into(),
            to: vec!["+12015550123".into()],
            chat: None,
            channel: "sms".into(),
            kind: "text".into(),
            body: "hi".into(),
            vcard: None,
            poll: None,
            reaction: None,
            attachments: Vec::new(),
            reply_to: None,
            effect: None,
            subject: None,
        }
    }

    #[test]
    fn a_lane_starts_at_most_its_calls_and_hands_out_what_queued_behind_them() {
        let lanes: Lanes<SendRequest, CallResult<SendOutcome>> = Lanes::default();
        let timeout = Duration::from_secs(1);
        let started: Vec<bool> =
            (0..5).map(|i| lanes.enqueue("line_a", Waiting::new(request(&i.to_string()), timeout).0)).collect();
        assert_eq!(started, [true, true, false, false, false]);
        // Another line has its own calls.
        assert!(lanes.enqueue("line_b", Waiting::new(request("b"), timeout).0));
        let first = lanes.take("line_a", 3).expect("queued");
        assert_eq!(first.iter().map(|w| w.request.id.as_str()).collect::<Vec<_>>(), ["0", "1", "2"]);
        assert_eq!(lanes.take("line_a", 3).expect("queued").len(), 2);
        // Both loops end; then a new send starts a loop again.
        assert!(lanes.take("line_a", 3).is_none());
        assert!(lanes.take("line_a", 3).is_none());
        assert!(lanes.enqueue("line_a", Waiting::new(request("5"), timeout).0));
    }

    #[test]
    fn each_message_gets_its_own_result_and_one_left_out_is_unknown() {
        let result = |id: &str, status: &str, reason: Option<&str>| BatchResult {
            id: id.into(),
            status: status.into(),
            reason: reason.map(Into::into),
            error: None,
        };
        let answer = BatchAnswer {
            results: vec![
                result("m3", "retry", None),
                result("m1", "accepted", None),
                result("m2", "rejected", Some("no such number")),
                result("m5", "queued", None),
            ],
        };
        assert_eq!(
            outcomes(&["m1", "m2", "m3", "m4", "m5"], answer),
            [
                SendOutcome::Accepted,
                SendOutcome::Rejected("no such number".into()),
                SendOutcome::RetryLater,
                SendOutcome::Unknown("the line's batch answer has no result for the message".into()),
                SendOutcome::Unknown("the line's batch answer says \"queued\"".into()),
            ]
        );
    }
}
