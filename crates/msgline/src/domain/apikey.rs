//! API keys: `mlk_` + 32 random base62 characters + a 6-character checksum. Only a SHA-256 of a
//! key is stored. The checksum lets a malformed or mistyped key be refused without a lookup.

use rand::Rng;
use sha2::{Digest, Sha256};

const PREFIX: &str = "mlk_";
const BASE62: &[u8; 62] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
const RANDOM_LEN: usize = 32;
const CHECK_LEN: usize = 6;

/// A freshly minted key: the secret is shown once, the hash is stored.
pub struct MintedKey {
    pub secret: String,
    pub hash: String,
}

pub fn mint() -> MintedKey {
    let mut rng = rand::rng();
    let random: String = (0..RANDOM_LEN).map(|_| BASE62[rng.random_range(0..62)] as char).collect();
    let secret = format!("{PREFIX}{random}{}", checksum(&random));
    let hash = hash_secret(&secret);
    MintedKey { secret, hash }
}

/// The stored form of a secret (API keys and bridge secrets alike): lowercase hex SHA-256.
pub fn hash_secret(secret: &str) -> String {
    let digest = Sha256::digest(secret.as_bytes());
    crate::ids::hex(&digest)
}

/// Whether `candidate` has the shape and checksum of a key this service minted.
pub fn is_well_formed(candidate: &str) -> bool {
    let Some(rest) = candidate.strip_prefix(PREFIX) else { return false };
    if rest.len() != RANDOM_LEN + CHECK_LEN || !rest.bytes().all(|b| b.is_ascii_alphanumeric()) {
        return false;
    }
    let (random, check) = rest.split_at(RANDOM_LEN);
    checksum(random) == check
}

fn checksum(random: &str) -> String {
    let digest = Sha256::digest(random.as_bytes());
    let mut value = u64::from_be_bytes(digest[..8].try_into().expect("8 bytes"));
    (0..CHECK_LEN)
        .map(|_| {
            let c = BASE62[(value % 62) as usize] as char;
            value /= 62;
            c
        })
        .collect()
}

/// A random secret for other purposes (bridge secrets), with its own prefix.
pub fn random_secret(prefix: &str) -> String {
    let mut rng = rand::rng();
    let random: String = (0..40).map(|_| BASE62[rng.random_range(0..62)] as char).collect();
    format!("{prefix}{random}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn minted_keys_are_well_formed_and_a_changed_character_is_caught() {
        let key = mint();
        assert!(key.secret.starts_with("mlk_"));
        assert!(is_well_formed(&key.secret));
        assert_eq!(key.hash, hash_secret(&key.secret));
        let mut tampered = key.secret.clone().into_bytes();
        tampered[10] = if tampered[10] == b'a' { b'b' } else { b'a' };
        assert!(!is_well_formed(&String::from_utf8(tampered).unwrap()));
        assert!(!is_well_formed("mlk_short"));
        assert!(!is_well_formed("Bearer nonsense"));
    }
}
