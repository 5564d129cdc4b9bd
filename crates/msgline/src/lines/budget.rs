//! The arithmetic of a line's budget, free of storage: which windows are full, how many sends
//! fit now, and when the gap since the last send has run.

use crate::{
    db::line_sends::{DAY_MS, HOUR_MS, LastSend, MINUTE_MS, Usage},
    domain::line_policy::Policy,
};

/// A window of the budget that is full: no more sends (of its kind) until one leaves it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FullWindow {
    /// Sends counted since then.
    pub since: i64,
    /// How long a send stays in it (for the calendar month, until the month ends).
    pub span: i64,
    pub count: u64,
    pub limit: u64,
    /// A window of new contacts only.
    pub new_only: bool,
}

/// How many more sends, and how many more to new contacts, fit now (`None`: no limit).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Room {
    pub sends: Option<u64>,
    pub new_contacts: Option<u64>,
}

fn left(limit: Option<u64>, count: u64) -> Option<u64> {
    limit.map(|limit| limit.saturating_sub(count))
}

fn least(values: impl IntoIterator<Item = Option<u64>>) -> Option<u64> {
    values.into_iter().flatten().min()
}

/// The room the line's windows leave.
pub fn room(policy: &Policy, usage: &Usage) -> Room {
    Room {
        sends: least([
            left(policy.max_per_minute, usage.minute),
            left(policy.max_per_hour, usage.hour),
            left(policy.max_per_day, usage.day),
        ]),
        new_contacts: least([
            left(policy.max_new_contacts_per_hour, usage.new_contacts_hour),
            left(policy.max_new_contacts_per_day, usage.new_contacts_day),
            left(policy.max_new_contacts_per_month, usage.new_contacts_month),
        ]),
    }
}

/// The windows that are full, each with what is needed to find when it opens again.
pub fn full_windows(policy: &Policy, usage: &Usage, now: i64, month_start: i64, month_end: i64) -> Vec<FullWindow> {
    let windows = [
        (policy.max_per_minute, usage.minute, now - MINUTE_MS, MINUTE_MS, false),
        (policy.max_per_hour, usage.hour, now - HOUR_MS, HOUR_MS, false),
        (policy.max_per_day, usage.day, now - DAY_MS, DAY_MS, false),
        (policy.max_new_contacts_per_hour, usage.new_contacts_hour, now - HOUR_MS, HOUR_MS, true),
        (policy.max_new_contacts_per_day, usage.new_contacts_day, now - DAY_MS, DAY_MS, true),
        // A send of this month leaves the window when the month ends.
        (policy.max_new_contacts_per_month, usage.new_contacts_month, month_start - 1, 0, true),
    ];
    windows
        .into_iter()
        .filter_map(|(limit, count, since, span, new_only)| {
            let limit = limit?;
            (count >= limit).then_some(FullWindow { since, span, count, limit, new_only })
        })
        .map(|window| match window.span {
            0 => FullWindow { span: month_end - month_start, ..window },
            _ => window,
        })
        .collect()
}

/// A send's share of the jitter after it: drawn from its id, so every instance (and a restart)
/// draws the same.
pub fn jitter_after(message_id: &str, jitter_ms: u64) -> i64 {
    if jitter_ms == 0 {
        return 0;
    }
    // FNV-1a: a fixed, well-spread hash of the id.
    let hash = message_id
        .bytes()
        .fold(0xcbf2_9ce4_8422_2325_u64, |hash, b| (hash ^ u64::from(b)).wrapping_mul(0x100_0000_01b3));
    (hash % (jitter_ms + 1)) as i64
}

/// When the line's gap after its last send has run (`None`: no gap to wait for).
pub fn gap_until(policy: &Policy, last: Option<&LastSend>) -> Option<i64> {
    let last = last?;
    let gap = policy.min_gap_ms.unwrap_or(0) as i64;
    let jitter = jitter_after(&last.message_id, policy.jitter_ms.unwrap_or(0));
    (gap + jitter > 0).then_some(last.at + gap + jitter)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy() -> Policy {
        Policy {
            max_per_minute: Some(10),
            max_per_hour: Some(100),
            max_new_contacts_per_day: Some(3),
            max_new_contacts_per_month: Some(5),
            ..Policy::default()
        }
    }

    #[test]
    fn the_room_is_the_least_any_window_leaves_and_none_where_nothing_limits() {
        let usage = Usage { minute: 4, hour: 95, new_contacts_day: 1, new_contacts_month: 4, ..Usage::default() };
        assert_eq!(room(&policy(), &usage), Room { sends: Some(5), new_contacts: Some(1) });
        assert_eq!(room(&Policy::default(), &usage), Room { sends: None, new_contacts: None });
        let over = Usage { minute: 12, ..Usage::default() };
        assert_eq!(room(&policy(), &over).sends, Some(0));
    }

    #[test]
    fn full_windows_are_named_with_their_span_and_the_month_runs_to_its_end() {
        let usage = Usage { minute: 10, new_contacts_month: 5, ..Usage::default() };
        let full = full_windows(&policy(), &usage, 1_000_000, 500_000, 3_000_000);
        assert_eq!(full.len(), 2);
        assert_eq!(
            full[0],
            FullWindow { since: 1_000_000 - MINUTE_MS, span: MINUTE_MS, count: 10, limit: 10, new_only: false }
        );
        assert_eq!(full[1].span, 2_500_000);
        assert!(full[1].new_only);
    }

    #[test]
    fn the_gap_runs_from_the_last_send_with_a_jitter_every_instance_draws_alike() {
        let paced = Policy { min_gap_ms: Some(2_000), jitter_ms: Some(500), ..Policy::default() };
        let last = LastSend { at: 10_000, message_id: "msg_1".into() };
        let until = gap_until(&paced, Some(&last)).unwrap();
        assert!((12_000..=12_500).contains(&until), "{until}");
        assert_eq!(gap_until(&paced, Some(&last)), Some(until));
        assert_eq!(gap_until(&paced, None), None);
        assert_eq!(gap_until(&Policy::default(), Some(&last)), None);
        let draws: std::collections::HashSet<i64> = (0..50).map(|i| jitter_after(&format!("msg_{i}"), 500)).collect();
        assert!(draws.len() > 10 && draws.iter().all(|d| (0..=500).contains(d)), "{draws:?}");
    }
}
