//! Identifiers: a type prefix, then 26 characters of Crockford base32 holding 48 bits of
//! milliseconds and 80 random bits. Ids of one type sort by creation time, so lists page by id.

use rand::RngCore;

const CROCKFORD: &[u8; 32] = b"0123456789abcdefghjkmnpqrstvwxyz";

/// A new id such as `msg_01j9z3...`.
pub fn new_id(prefix: &str) -> String {
    let mut random = [0u8; 10];
    rand::rng().fill_bytes(&mut random);
    let mut value: u128 = (crate::clock::now_ms() as u128 & 0xffff_ffff_ffff) << 80;
    for (i, byte) in random.iter().enumerate() {
        value |= (*byte as u128) << (72 - 8 * i);
    }
    let mut out = String::with_capacity(prefix.len() + 27);
    out.push_str(prefix);
    out.push('_');
    for i in (0..26).rev() {
        out.push(CROCKFORD[((value >> (5 * i)) & 31) as usize] as char);
    }
    out
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
    fn ids_carry_their_prefix_and_sort_by_time() {
        let a = new_id("msg");
        std::thread::sleep(std::time::Duration::from_millis(2));
        let b = new_id("msg");
        assert!(looks_like(&a, "msg") && looks_like(&b, "msg"));
        assert!(!looks_like(&a, "ct"));
        assert!(a < b);
    }
}
