//! Identifiers: a type prefix, then 26 characters of Crockford base32 holding 48 bits of
//! milliseconds and 80 random bits. Ids of one type sort by creation time, so lists page by id.

use std::sync::Mutex;

use rand::RngCore;

const CROCKFORD: &[u8; 32] = b"0123456789abcdefghjkmnpqrstvwxyz";

/// The last id's time and random part: ids made in one millisecond count up from it, so ids
/// from one process are strictly increasing.
static LAST: Mutex<(u64, u128)> = Mutex::new((0, 0));

const RANDOM_BITS: u32 = 80;

/// A new id such as `msg_01j9z3...`.
pub fn new_id(prefix: &str) -> String {
    let now = crate::clock::now_ms().max(0) as u64 & 0xffff_ffff_ffff;
    let (ms, random) = {
        let mut last = LAST.lock().unwrap_or_else(|e| e.into_inner());
        if now > last.0 {
            let mut bytes = [0u8; 16];
            rand::rng().fill_bytes(&mut bytes);
            // Leave headroom so that counting up within a millisecond never overflows.
            *last = (now, u128::from_be_bytes(bytes) >> (128 - RANDOM_BITS + 1));
        } else {
            last.1 += 1;
        }
        *last
    };
    encode(prefix, ((ms as u128) << RANDOM_BITS) | random)
}

/// `prefix_` and 26 characters of Crockford base32 of `value`.
fn encode(prefix: &str, value: u128) -> String {
    let mut out = String::with_capacity(prefix.len() + 27);
    out.push_str(prefix);
    out.push('_');
    for i in (0..26).rev() {
        out.push(CROCKFORD[((value >> (5 * i)) & 31) as usize] as char);
    }
    out
}

/// The smallest id of a type made at or after `ms`: ids compare with it as their times do, so
/// `id >= floor(prefix, t)` reads what was made since `t` through an index on the id.
pub fn floor(prefix: &str, ms: i64) -> String {
    encode(prefix, ((ms.max(0) as u64 & 0xffff_ffff_ffff) as u128) << RANDOM_BITS)
}

/// Whether `id` has the given prefix and the shape of an id; a cheap check before a lookup.
pub fn looks_like(id: &str, prefix: &str) -> bool {
    id.strip_prefix(prefix)
        .and_then(|rest| rest.strip_prefix('_'))
        .is_some_and(|body| body.len() == 26 && body.bytes().all(|b| CROCKFORD.contains(&b)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_floor_sorts_before_every_id_made_at_or_after_its_time_and_after_older_ones() {
        let before = new_id("msg");
        std::thread::sleep(std::time::Duration::from_millis(3));
        let floor = floor("msg", crate::clock::now_ms());
        let after = new_id("msg");
        assert!(before < floor && floor <= after, "{before} {floor} {after}");
    }

    #[test]
    fn ids_carry_their_prefix_and_sort_by_time() {
        let a = new_id("msg");
        let b = new_id("msg");
        std::thread::sleep(std::time::Duration::from_millis(2));
        let c = new_id("msg");
        assert!(looks_like(&a, "msg") && looks_like(&b, "msg"));
        assert!(!looks_like(&a, "ct"));
        assert!(a < b && b < c, "{a} {b} {c}");
    }
}
