//! Staff of an organisation, who sign in to the console: their roles and what each may do, their
//! emails, their passwords (kept only as Argon2id hashes) and the random tokens of their
//! sessions and sign-in links (kept only as SHA-256 hashes, like API keys).

use argon2::{
    Algorithm, Argon2, Params, Version,
    password_hash::{PasswordHash, PasswordHasher, PasswordVerifier, SaltString, rand_core::OsRng},
};

use super::{
    apikey::{hash_secret, random_secret},
    scope::{Scope, Scopes},
};

/// What a staff member may do in the console.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// Everything, including keys, webhooks, settings and staff.
    Owner,
    /// Conversations, sends, contacts, groups, agents and opt-outs; lines read-only.
    Member,
}

impl Role {
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Owner => "owner",
            Role::Member => "member",
        }
    }

    pub fn parse(text: &str) -> Option<Role> {
        match text {
            "owner" => Some(Role::Owner),
            "member" => Some(Role::Member),
            _ => None,
        }
    }

    /// The API scopes a session of this role acts with: the console goes through the same rules
    /// as an API key with these scopes.
    pub fn scopes(self) -> Scopes {
        match self {
            Role::Owner => Scopes::all(),
            Role::Member => Scopes::new(vec![Scope::Send, Scope::Read, Scope::Contacts, Scope::Agents]),
        }
    }
}

/// An email as staff sign in with: trimmed and lowercased, `local@domain.tld`, at most 254
/// characters.
pub fn parse_email(text: &str) -> Result<String, &'static str> {
    let email = text.trim().to_lowercase();
    let valid = email.len() <= 254
        && !email.contains(char::is_whitespace)
        && email.split_once('@').is_some_and(|(local, domain)| {
            !local.is_empty() && domain.contains('.') && !domain.contains('@') && !domain.starts_with('.')
        });
    if valid { Ok(email) } else { Err("email is not an email address") }
}

/// The shortest and longest passwords accepted, in characters.
pub const PASSWORD_CHARS: (usize, usize) = (10, 128);

/// Checks a new password's length.
pub fn check_password(password: &str) -> Result<(), String> {
    let chars = password.chars().count();
    let (min, max) = PASSWORD_CHARS;
    if chars < min || chars > max {
        return Err(format!("a password has {min} to {max} characters"));
    }
    Ok(())
}

/// Argon2id with OWASP's first recommended setting: 19 MiB of memory, 2 passes, 1 lane.
fn hasher() -> Argon2<'static> {
    Argon2::new(Algorithm::Argon2id, Version::V0x13, Params::new(19 * 1024, 2, 1, None).expect("valid parameters"))
}

/// The stored form of a password: a PHC string (`$argon2id$v=19$m=19456,t=2,p=1$…`) with its
/// own random salt.
pub fn hash_password(password: &str) -> String {
    let salt = SaltString::generate(&mut OsRng);
    hasher().hash_password(password.as_bytes(), &salt).expect("argon2 hashes any password").to_string()
}

/// Whether `password` is the one `stored` was made from.
pub fn verify_password(password: &str, stored: &str) -> bool {
    PasswordHash::new(stored).is_ok_and(|hash| hasher().verify_password(password.as_bytes(), &hash).is_ok())
}

/// A stored hash to check a password against when there is no account: a sign-in for an email
/// that does not exist takes as long as one with a wrong password.
pub fn decoy_hash() -> &'static str {
    static DECOY: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    DECOY.get_or_init(|| hash_password("no account has this password"))
}

/// A new random token (a session's cookie, a sign-in link) and the hash that is stored.
pub fn mint_token(prefix: &str) -> (String, String) {
    let token = random_secret(prefix);
    let hash = hash_secret(&token);
    (token, hash)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_password_verifies_against_its_own_hash_only() {
        let stored = hash_password("correct horse battery");
        assert!(stored.starts_with("$argon2id$v=19$m=19456,t=2,p=1$"), "{stored}");
        assert!(verify_password("correct horse battery", &stored));
        assert!(!verify_password("correct horse battery!", &stored));
        assert!(!verify_password("anything", "not a hash"));
        assert_ne!(stored, hash_password("correct horse battery"), "each hash has its own salt");
    }

    #[test]
    fn emails_are_compared_lowercased_and_roles_carry_their_scopes() {
        assert_eq!(parse_email("  Ann@Example.COM "), Ok("ann@example.com".to_string()));
        assert!(parse_email("ann@localhost").is_err() && parse_email("a b@x.io").is_err());
        assert!(Role::Owner.scopes().contains(Scope::Keys));
        assert!(!Role::Member.scopes().contains(Scope::Keys) && !Role::Member.scopes().contains(Scope::Webhooks));
        assert!(check_password("short").is_err() && check_password("long enough!").is_ok());
    }
}
