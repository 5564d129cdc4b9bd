//! Identifiers: a type prefix, then 26 characters of Crockford base32 holding 48 bits of
//! milliseconds and 80 random bits. Ids of one type sort by creation time, so lists page by id.

use std::sync::Mutex;

use rand::RngCore;

const CROCKFORD: &[u8; 32] = b"0123456789abcdefghjkmnpqrstvwxyz";

/// The last id's time and random part: ids made in one millisecond count up from it, so ids
/// from one process are strictly increasing.
static LAST: Mutex<(u64, u128)> = Mutex::new((0, 0));

const RANDOM_BITS: u32 = 80;

/// Lowercase hex of `bytes`: how digests are stored, compared and shown.
pub fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut text = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        text.push(DIGITS[usize::from(b >> 4)] as char);
        text.push(DIGITS[usize::from(b & 0x0f)] as char);
    }
    text
}

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
pub fn encode(prefix: &str, value: u128) -> String {
    let mut out = String::with_capacity(prefix.len() + 27);
    out.push_str(prefix);
    out.push('_');
    for i in (0..26).rev() {
        out.push(CROCKFORD[((value >> (5 * i)) & 31) as usize] as char);
    }
    out
}

/// The 128 bits of an id of msgline's shape with the given prefix: [`encode`] gives the same
/// id back. `None` for anything else.
pub fn decode(id: &str, prefix: &str) -> Option<u128> {
    let body = id.strip_prefix(prefix)?.strip_prefix('_')?.as_bytes();
    if body.len() != 26 {
        return None;
    }
    let mut value: u128 = 0;
    for (i, byte) in body.iter().enumerate() {
        let digit = CROCKFORD.iter().position(|c| c == byte)? as u128;
        // 26 digits of 5 bits are 130 bits: the first may hold only 3.
        if i == 0 && digit > 7 {
            return None;
        }
        value = (value << 5) | digit;
    }
    Some(value)
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
    fn hex_is_two_lowercase_digits_per_byte_in_order() {
        let every: Vec<u8> = (0..=255).collect();
        let expected: String = every.iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(hex(&every), expected);
        assert_eq!(hex(&[]), "");
    }

    #[test]
    fn a_floor_sorts_before_every_id_made_at_or_after_its_time_and_after_older_ones() {
        let before = new_id("msg");
        std::thread::sleep(std::time::Duration::from_millis(3));
        let floor = floor("msg", crate::clock::now_ms());
        let after = new_id("msg");
        assert!(before < floor && floor <= after, "{before} {floor} {after}");
    }

    #[test]
    fn an_id_decodes_to_bits_that_encode_to_it_again_and_nothing_else_decodes() {
        for _ in 0..100 {
            let id = new_id("conv");
            assert_eq!(decode(&id, "conv").map(|bits| encode("conv", bits)), Some(id.clone()));
            assert_eq!(decode(&id, "ct"), None);
        }
        assert_eq!(decode(&encode("ct", u128::MAX), "ct"), Some(u128::MAX));
        for not in [
            "conv_demo",
            "conv_8zzzzzzzzzzzzzzzzzzzzzzzzz",
            "conv_01J9Z3ABCDEFGHJKMNPQRSTVWX",
            "conv01j9z3abcdefghjkmnpqrstvwx",
        ] {
            assert_eq!(decode(not, "conv"), None, "{not}");
        }
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
