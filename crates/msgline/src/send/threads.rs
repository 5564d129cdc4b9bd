//! What sends remember between requests, in memory: each recipient's direct thread (its
//! conversation and contact) and its iMessage reachability. Kept compact, since a sender to many
//! numbers fills it with one entry per number: an organisation and a line are a small number
//! each, a phone is its digits as an integer, and an id is its 128 bits: 48 bytes a thread,
//! where five strings took five allocations and about 800 bytes; 24 bytes a reachability, its
//! time and answer packed in one integer (BENCHMARKS.md).
//!
//! Each map is split in [`SHARDS`] by phone. A hash map that grows allocates a table twice the
//! size and copies into it, holding both meanwhile: one map of 57,344 threads took a table of
//! 6.1 MiB beside its old one of 3.1 MiB (its reachability twin 5.1 beside 2.6), which set the
//! server's peak memory under a load of new recipients; a shard grows by a sixteenth of that.
//! (A lock per shard also keeps concurrent sends to different numbers from waiting on each
//! other.)

use std::{
    collections::HashMap,
    sync::{Mutex, RwLock},
    time::{Duration, Instant},
};

use crate::ids;

/// How long a recipient's iMessage reachability is used without reading it again.
const REACHABILITY_FOR: Duration = Duration::from_secs(60);

/// The shards of each map, chosen by phone.
const SHARDS: usize = 16;

/// Most entries of each shard: as many as a hash table of 4,096 slots holds before it doubles
/// (seven eighths of them), so that a full shard's table never grows. A thread shard is emptied
/// when it is full, a reachability shard loses what is out of date (emptied too if that leaves
/// half of it). Both maps at their most take about 4.8 MiB (16 × 4,096 slots of 49 and 25
/// bytes); with 12,500 entries a shard, as before, a sender past 57,344 numbers doubled every
/// shard's table at once and took the server's peak memory over its limit (BENCHMARKS.md). A
/// sender to more numbers than that reads a thread that was let go again (one query, as for a
/// thread this server never wrote).
const SHARD_ENTRIES: usize = 4_096 / 8 * 7;

/// A phone's shard: the top bits of its product with 2⁶⁴ ÷ φ, which spreads numbers that share
/// their low bits (a sender's numbers may all end alike) over every shard.
fn shard(phone: u64) -> usize {
    (phone.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> (64 - SHARDS.trailing_zeros())) as usize
}

/// A number for each organisation (or line) seen, so that a key does not hold its id.
#[derive(Default)]
struct Scopes(HashMap<String, u32>);

impl Scopes {
    fn get(&self, name: &str) -> Option<u32> {
        self.0.get(name).copied()
    }

    fn get_or_add(&mut self, name: &str) -> u32 {
        let next = self.0.len() as u32;
        *self.0.entry(name.to_string()).or_insert(next)
    }
}

/// An E.164 number (`+` and up to 15 digits, never a leading zero) as the integer of its digits.
fn phone_key(phone: &str) -> Option<u64> {
    let digits = phone.strip_prefix('+')?;
    let shaped = !digits.is_empty() && digits.len() <= 15 && !digits.starts_with('0');
    (shaped && digits.bytes().all(|b| b.is_ascii_digit())).then(|| digits.parse().ok()).flatten()
}

/// Contacts and direct conversations already written, so that a send to a known recipient
/// skips finding them again: (organisation, line, phone) → (conversation, contact). Neither is
/// ever deleted, so an entry never goes stale.
pub struct ThreadCache {
    threads: [RwLock<Threads>; SHARDS],
    /// (organisation, phone) → whether the recipient was reachable over iMessage, and when that
    /// was read or learned. Kept [`REACHABILITY_FOR`]: an inbound iMessage (which marks its
    /// sender reachable) reaches an automatic channel choice within that time.
    reachability: [Mutex<Reachability>; SHARDS],
    /// What the reachability map's times count from.
    started: Instant,
}

impl Default for ThreadCache {
    fn default() -> Self {
        ThreadCache {
            threads: std::array::from_fn(|_| Default::default()),
            reachability: std::array::from_fn(|_| Default::default()),
            started: Instant::now(),
        }
    }
}

#[derive(Default)]
struct Threads {
    orgs: Scopes,
    lines: Scopes,
    /// (organisation, line, phone) → (conversation, contact), each id's 128 bits.
    entries: HashMap<(u32, u32, u64), (u128, u128)>,
}

#[derive(Default)]
struct Reachability {
    orgs: Scopes,
    /// The milliseconds from [`ThreadCache::started`] to when it was learned, shifted left by
    /// one, with whether the recipient was reachable in the lowest bit.
    known: HashMap<(u32, u64), u64>,
}

impl ThreadCache {
    /// Whether the recipient was reachable over iMessage, if that was learned in the last
    /// minute.
    pub(crate) fn reachable(&self, org_id: &str, phone: &str) -> Option<bool> {
        let phone = phone_key(phone)?;
        let cache = self.reachability[shard(phone)].lock().expect("reachability lock");
        let org = cache.orgs.get(org_id)?;
        let known = *cache.known.get(&(org, phone))?;
        fresh(known, self.now_ms()).then_some(known & 1 == 1)
    }

    pub(crate) fn note_reachable(&self, org_id: &str, phone: &str, reachable: bool) {
        let Some(phone) = phone_key(phone) else { return };
        let now = self.now_ms();
        let mut cache = self.reachability[shard(phone)].lock().expect("reachability lock");
        if cache.known.len() >= SHARD_ENTRIES {
            cache.known.retain(|_, known| fresh(*known, now));
            if cache.known.len() >= SHARD_ENTRIES / 2 {
                // Full of answers younger than that: emptied, or every insert would look at them all.
                cache.known.clear();
            } else {
                // Into a table of the same size without the gaps the dropped answers left: a gap
                // is not free room, and an insert that found no room would double the table.
                let kept = std::mem::replace(&mut cache.known, HashMap::with_capacity(SHARD_ENTRIES));
                cache.known.extend(kept);
            }
        }
        let org = cache.orgs.get_or_add(org_id);
        cache.known.insert((org, phone), (now << 1) | reachable as u64);
    }

    /// Milliseconds since the cache was made.
    fn now_ms(&self) -> u64 {
        self.started.elapsed().as_millis() as u64
    }

    /// The direct thread with `phone` on the line, if this server wrote or found it:
    /// (conversation, contact).
    pub(crate) fn thread(&self, org_id: &str, line_id: &str, phone: &str) -> Option<(String, String)> {
        let phone = phone_key(phone)?;
        let cache = self.threads[shard(phone)].read().expect("thread cache lock");
        let (org, line) = (cache.orgs.get(org_id)?, cache.lines.get(line_id)?);
        let (conversation, contact) = cache.entries.get(&(org, line, phone))?;
        Some((ids::encode(CONVERSATION, *conversation), ids::encode(CONTACT, *contact)))
    }

    /// Remembers the direct thread with `phone` on the line. Ids not of msgline's own shape are
    /// not kept (the send then reads them, as for a recipient not seen before).
    pub(crate) fn remember_thread(&self, org_id: &str, line_id: &str, phone: &str, conversation: &str, contact: &str) {
        let (Some(phone), Some(conversation), Some(contact)) =
            (phone_key(phone), ids::decode(conversation, CONVERSATION), ids::decode(contact, CONTACT))
        else {
            return;
        };
        let mut cache = self.threads[shard(phone)].write().expect("thread cache lock");
        if cache.entries.len() >= SHARD_ENTRIES {
            cache.entries.clear();
        }
        let (org, line) = (cache.orgs.get_or_add(org_id), cache.lines.get_or_add(line_id));
        cache.entries.insert((org, line, phone), (conversation, contact));
    }
}

/// Whether a reachability entry (see [`Reachability::known`]) was learned less than
/// [`REACHABILITY_FOR`] before `now` (milliseconds from the cache's start).
fn fresh(known: u64, now: u64) -> bool {
    now.saturating_sub(known >> 1) < REACHABILITY_FOR.as_millis() as u64
}

const CONVERSATION: &str = "conv";
const CONTACT: &str = "ct";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_remembered_thread_comes_back_as_it_was_given_for_its_organisation_line_and_phone_only() {
        let cache = ThreadCache::default();
        let (conversation, contact) = (ids::new_id("conv"), ids::new_id("ct"));
        cache.remember_thread("org_a", "line_1", "+12015550123", &conversation, &contact);
        assert_eq!(cache.thread("org_a", "line_1", "+12015550123"), Some((conversation, contact)));
        assert_eq!(cache.thread("org_b", "line_1", "+12015550123"), None);
        assert_eq!(cache.thread("org_a", "line_2", "+12015550123"), None);
        assert_eq!(cache.thread("org_a", "line_1", "+12015550124"), None);
        // Two numbers whose digits differ only by a leading country code are two keys.
        cache.remember_thread("org_a", "line_1", "+4412015550123", &ids::new_id("conv"), &ids::new_id("ct"));
        assert_ne!(cache.thread("org_a", "line_1", "+4412015550123"), cache.thread("org_a", "line_1", "+12015550123"));
    }

    #[test]
    fn ids_of_another_shape_are_not_kept() {
        let cache = ThreadCache::default();
        cache.remember_thread("org_a", "line_1", "+12015550123", "conv_demo", &ids::new_id("ct"));
        assert_eq!(cache.thread("org_a", "line_1", "+12015550123"), None);
    }

    #[test]
    fn reachability_is_kept_per_organisation_and_phone() {
        let cache = ThreadCache::default();
        assert_eq!(cache.reachable("org_a", "+12015550123"), None);
        cache.note_reachable("org_a", "+12015550123", true);
        cache.note_reachable("org_b", "+12015550123", false);
        assert_eq!(cache.reachable("org_a", "+12015550123"), Some(true));
        assert_eq!(cache.reachable("org_b", "+12015550123"), Some(false));
        assert_eq!(cache.reachable("org_a", "+12015550124"), None);
    }

    #[test]
    fn a_reachability_learned_longer_ago_than_it_is_kept_is_not_used() {
        let cache =
            ThreadCache { started: Instant::now() - REACHABILITY_FOR - Duration::from_secs(1), ..Default::default() };
        cache.note_reachable("org_a", "+12015550123", true);
        cache.note_reachable("org_a", "+12015550124", false);
        // Learned when the cache was made, a minute and a second ago.
        let phone = phone_key("+12015550125").unwrap();
        let mut shard = cache.reachability[shard(phone)].lock().unwrap();
        let org = shard.orgs.get_or_add("org_a");
        shard.known.insert((org, phone), 1);
        drop(shard);
        assert_eq!(cache.reachable("org_a", "+12015550123"), Some(true));
        assert_eq!(cache.reachable("org_a", "+12015550124"), Some(false));
        assert_eq!(cache.reachable("org_a", "+12015550125"), None);
    }

    #[test]
    fn numbers_that_end_alike_are_spread_over_every_shard() {
        // As a sender's numbers may be: every sixteenth of a run, all even, or all ending in 00.
        for step in [16, 2, 100] {
            let mut used = [0usize; SHARDS];
            for i in 0..1_600u64 {
                used[shard(12_012_000_000 + i * step)] += 1;
            }
            assert!(used.iter().all(|&n| n > 50), "step {step}: {used:?}");
        }
    }

    #[test]
    fn a_full_reachability_shard_of_fresh_answers_is_emptied_not_scanned_again_and_again() {
        let cache = ThreadCache::default();
        let phones = shard_zero(SHARD_ENTRIES + 1);
        let first = phones[0];
        for phone in &phones {
            cache.note_reachable("org_a", &format!("+{phone}"), true);
        }
        let held = cache.reachability[0].lock().unwrap().known.len();
        assert!(held < SHARD_ENTRIES / 2, "{held}");
        assert_eq!(cache.reachable("org_a", &format!("+{first}")), None, "forgotten, so asked again");
    }

    /// The first `n` numbers (as keys) of shard 0.
    fn shard_zero(n: usize) -> Vec<u64> {
        (0u64..).map(|i| 12_012_000_000 + i).filter(|p| shard(*p) == 0).take(n).collect()
    }

    #[test]
    fn a_thread_shard_keeps_the_table_it_had_when_full_and_the_latest_thread() {
        let cache = ThreadCache::default();
        let phones = shard_zero(3 * SHARD_ENTRIES + 7);
        for phone in &phones {
            cache.remember_thread("org_a", "line_1", &format!("+{phone}"), &ids::new_id("conv"), &ids::new_id("ct"));
            let shard = cache.threads[0].read().unwrap();
            let held = &shard.entries;
            assert!(held.capacity() <= SHARD_ENTRIES, "{} slots for {} threads", held.capacity(), held.len());
        }
        let last = format!("+{}", phones.last().unwrap());
        assert!(cache.thread("org_a", "line_1", &last).is_some());
        assert_eq!(SHARD_ENTRIES * SHARDS, 57_344);
    }

    #[test]
    fn a_reachability_shard_keeps_the_table_it_had_when_full_whatever_is_out_of_date() {
        // Answers learned a minute and a second ago, among fresh ones: each time the shard is
        // full, most are dropped and the rest stay, where the dropped ones leave gaps.
        let cache =
            ThreadCache { started: Instant::now() - REACHABILITY_FOR - Duration::from_secs(1), ..Default::default() };
        for (n, phone) in shard_zero(8 * SHARD_ENTRIES).into_iter().enumerate() {
            let mut shard = cache.reachability[0].lock().unwrap();
            if n % 3 != 0 && shard.known.len() + 1 < SHARD_ENTRIES {
                let org = shard.orgs.get_or_add("org_a");
                shard.known.insert((org, phone), 1);
                drop(shard);
            } else {
                drop(shard);
                cache.note_reachable("org_a", &format!("+{phone}"), n % 2 == 0);
            }
            let shard = cache.reachability[0].lock().unwrap();
            let held = &shard.known;
            assert!(held.capacity() <= SHARD_ENTRIES, "{} slots for {} answers", held.capacity(), held.len());
        }
    }

    #[test]
    fn only_e164_numbers_have_a_key() {
        assert_eq!(phone_key("+12015550123"), Some(12015550123));
        assert_eq!(phone_key("+999999999999999"), Some(999_999_999_999_999));
        for not in ["12015550123", "+", "+1234567890123456", "+1201a550123", "+012015550123", "group"] {
            assert_eq!(phone_key(not), None, "{not}");
        }
    }
}
