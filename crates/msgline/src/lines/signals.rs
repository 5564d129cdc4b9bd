//! What a failed send says about its line, read per kind of line from the words its device uses
//! (docs/lines.md, "Per-kind signals"):
//!
//! - a **blocked** signal flags the line at once: the SIM or the account cannot send now, and
//!   every later send would fail the same way (`line_blocked` from a msgline bridge; an Android
//!   phone's sending-queue limit, barred access or missing SIM; Kannel's throttling that outlived
//!   its retries);
//! - a **line failure** counts towards a run: [`RUN_TO_FLAG`] of them in a row, with no send
//!   between them that went out, flag the line (a run of failed iMessages is how an Apple ID
//!   that Apple throttled or blocked looks from the Mac);
//! - anything else (a recipient without iMessage, a number the network does not know, a phone
//!   with no signal for a moment) says nothing about the line.
//!
//! The run is counted by each instance in its memory, from the send answers and the status
//! callbacks it handles; a restart starts it again. A send that went out (`sent`, `delivered`,
//! `read`) ends it.

use crate::{
    bridge::{BridgeEvent, BridgeEventPayload, directory::LineDirectory},
    db::{
        Db,
        lines::{BridgeKind, Line},
    },
};

/// How many line failures in a row flag a line.
pub const RUN_TO_FLAG: u32 = 5;

/// What a failure's reason says about the line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Signal {
    /// The device cannot send now: flag the line at once.
    Blocked,
    /// Counts towards a run of failures.
    LineFailure,
}

/// SMS Gateway for Android's failure words (`Send result: RESULT_… (…)` from the app's
/// `MessagesService`) that mean the SIM or the phone will not send: its sending-queue limit, a
/// radio rate limit, a premium-rate or rate-limit dialog the user refused, fixed dialling, barred
/// access, an operation the network does not allow, no SIM (with "Can't send message: No SIMs
/// found" and "… SIM <n> not found", which come without a result code).
const ANDROID_BLOCKED: [&str; 8] = [
    "RESULT_ERROR_LIMIT_EXCEEDED",
    "RESULT_RIL_REQUEST_RATE_LIMITED",
    "RESULT_UNEXPECTED_EVENT_STOP_SENDING",
    "RESULT_ERROR_FDN_CHECK_FAILURE",
    "RESULT_RIL_ACCESS_BARRED",
    "RESULT_RIL_OPERATION_NOT_ALLOWED",
    "RESULT_OPERATION_NOT_ALLOWED",
    "RESULT_RIL_SIM_ABSENT",
];

/// Android failures that are the line's when they repeat: a generic failure (how most carriers
/// answer a SIM without credit or barred from sending), the network refusing the SMS, a retry that
/// failed, a code the app does not name.
const ANDROID_FAILURES: [&str; 7] = [
    "RESULT_ERROR_GENERIC_FAILURE",
    "RESULT_NETWORK_REJECT",
    "RESULT_RIL_NETWORK_REJECT",
    "RESULT_RIL_GENERIC_ERROR",
    "RESULT_NETWORK_ERROR",
    "RESULT_SMS_SEND_RETRY_FAILED",
    "Unknown error code",
];

/// Kannel's delivery-report words (`%A` of a type-16 report) for an SMSC that throttles: the
/// SMPP errors 0x58 (throttling) and 0x14 (message queue full), and the resends that ran out
/// (`Retries Exceeded`, which stock Kannel reports after retrying a throttled message).
const KANNEL_BLOCKED: [&str; 5] =
    ["Retries Exceeded", "0x00000058", "Throttling error", "0x00000014", "Message Queue Full"];

/// Kannel's SMSC refusals that are the line's when they repeat: a submit that failed, a system
/// error of the SMSC (a refusal of one destination address says nothing of the line).
const KANNEL_FAILURES: [&str; 2] = ["0x00000045", "0x00000008"];

/// What a failed send's `reason` says about a line of `kind`.
pub fn of(kind: BridgeKind, reason: &str) -> Option<Signal> {
    let has = |words: &[&str]| words.iter().any(|word| reason.contains(word));
    match kind {
        // A msgline bridge says `line_blocked` itself (the send answer), nothing to read here.
        BridgeKind::Msgline => None,
        BridgeKind::BlueBubbles => imessage_error(reason)
            // Error 22: the recipient is not registered with iMessage, which is theirs.
            .filter(|code| *code != 22)
            .map(|_| Signal::LineFailure),
        BridgeKind::AndroidGateway if has(&ANDROID_BLOCKED) || no_sim(reason) => Some(Signal::Blocked),
        BridgeKind::AndroidGateway => has(&ANDROID_FAILURES).then_some(Signal::LineFailure),
        BridgeKind::Kannel if has(&KANNEL_BLOCKED) => Some(Signal::Blocked),
        BridgeKind::Kannel => has(&KANNEL_FAILURES).then_some(Signal::LineFailure),
    }
}

/// The Android app could not find the SIM it was to send with.
fn no_sim(reason: &str) -> bool {
    reason.contains("No SIMs found") || (reason.contains("SIM ") && reason.ends_with("not found"))
}

/// The iMessage error code in a BlueBubbles failure's reason (`… (error N)`).
fn imessage_error(reason: &str) -> Option<i64> {
    let (_, rest) = reason.split_once("(error ")?;
    rest.split(')').next()?.trim().parse().ok()
}

/// What a line's run of failures comes to after one more signal: the reason to flag it with,
/// when it should stop now.
pub fn verdict(signal: Signal, run: u32, reason: &str) -> Option<String> {
    match signal {
        Signal::Blocked => Some(format!("the device says it cannot send: {reason}")),
        Signal::LineFailure if run >= RUN_TO_FLAG => {
            Some(format!("{run} sends in a row failed on the line; the last: {reason}"))
        }
        Signal::LineFailure => None,
    }
}

/// What one send (`message_id`) of `line` came to, from its answer or its status report:
/// `Some(reason)` failed, `None` went out. Counts or ends the line's run, and flags the line on a
/// blocked signal or a full run (with `messaging.line.health_changed`). The line's sends wait
/// from then on.
pub async fn observe(
    db: &Db,
    lines: &LineDirectory,
    line: &Line,
    message_id: &str,
    failure: Option<&str>,
) -> sqlx::Result<()> {
    let Some(reason) = failure else {
        lines.end_run(&line.id);
        return Ok(());
    };
    let Some(signal) = of(line.bridge_kind, reason) else { return Ok(()) };
    let run = if signal == Signal::LineFailure { lines.failed_again(&line.id, message_id) } else { 0 };
    if let Some(why) = verdict(signal, run, reason) {
        if super::health::stop(db, &line.id, &why).await?.is_some() {
            tracing::warn!(line = %line.id, reason = %why, "line flagged");
        }
        lines.end_run(&line.id);
        lines.forget(&line.id);
    }
    Ok(())
}

/// [`observe`] for the status reports of a device's callback, each with whether it was applied (a
/// report sent again counts once).
pub async fn observe_reports(
    db: &Db,
    lines: &LineDirectory,
    line: &Line,
    events: &[BridgeEvent],
    applied: &[bool],
) -> sqlx::Result<()> {
    for (event, applied) in events.iter().zip(applied) {
        let BridgeEventPayload::MessageStatus { message_id, status, reason } = &event.payload else { continue };
        if !applied {
            continue;
        }
        match status.as_str() {
            "failed" => observe(db, lines, line, message_id, Some(reason.as_deref().unwrap_or_default())).await?,
            "sent" | "delivered" | "read" => observe(db, lines, line, message_id, None).await?,
            _ => {}
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_kind_reads_its_own_words() {
        let bb = |r: &str| of(BridgeKind::BlueBubbles, r);
        assert_eq!(bb("iMessage could not send it (error 38)"), Some(Signal::LineFailure));
        assert_eq!(bb("iMessage could not send it (error 22)"), None, "the recipient has no iMessage");
        assert_eq!(bb("the BlueBubbles Server refused it: bad chat"), None);

        let android = |r: &str| of(BridgeKind::AndroidGateway, r);
        let limit = "Send result: RESULT_ERROR_LIMIT_EXCEEDED (Failed because we reached the sending queue limit)";
        assert_eq!(android(limit), Some(Signal::Blocked));
        assert_eq!(android("Can't send message: No SIMs found"), Some(Signal::Blocked));
        assert_eq!(android("Can't send message: SIM 2 not found"), Some(Signal::Blocked));
        assert_eq!(
            android("Send result: RESULT_ERROR_GENERIC_FAILURE (Generic failure cause)"),
            Some(Signal::LineFailure)
        );
        assert_eq!(android("Send result: Unknown error code: 135."), Some(Signal::LineFailure));
        assert_eq!(
            android("Send result: RESULT_ERROR_NO_SERVICE (Failed because service is currently unavailable)"),
            None
        );
        assert_eq!(android("Send result: RESULT_ERROR_SHORT_CODE_NOT_ALLOWED (Failed because user denied)"), None);
        assert_eq!(android("TTL expired"), None);

        let kannel = |r: &str| of(BridgeKind::Kannel, r);
        assert_eq!(kannel("the SMSC did not deliver it: NACK/Retries Exceeded"), Some(Signal::Blocked));
        assert_eq!(kannel("NACK/0x00000058/Throttling error"), Some(Signal::Blocked));
        assert_eq!(kannel("NACK/0x00000045/Submit failed"), Some(Signal::LineFailure));
        assert_eq!(kannel("NACK/0x0000000b/Invalid Destination Address"), None);

        assert_eq!(of(BridgeKind::Msgline, "NACK/Retries Exceeded"), None);
    }

    #[test]
    fn a_run_flags_at_its_length_and_a_block_at_once() {
        assert!(verdict(Signal::LineFailure, RUN_TO_FLAG - 1, "x").is_none());
        assert!(verdict(Signal::LineFailure, RUN_TO_FLAG, "x").unwrap().contains("5 sends in a row"));
        assert!(verdict(Signal::Blocked, 1, "limit").unwrap().contains("limit"));
    }
}
