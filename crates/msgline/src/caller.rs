//! Who a request or an agent run acts as: the [`Principal`] (an API key's organisation, scopes
//! and line binding, or a hosted agent's), and the cache that turns API keys into one.

use std::{
    collections::HashMap,
    sync::RwLock,
    time::{Duration, Instant},
};

use crate::{
    clock,
    db::{self, Db},
    domain::{
        apikey,
        scope::{Scope, Scopes},
    },
    error::{ApiError, ApiResult},
};

/// Who is calling: an API key of one organisation, with its scopes and optional line binding.
#[derive(Debug, Clone)]
pub struct Principal {
    pub key_id: String,
    pub org_id: String,
    pub scopes: Scopes,
    /// The line the key is bound to; read it through the line-binding methods below.
    line_id: Option<String>,
    expires_at: Option<i64>,
}

impl Principal {
    /// A hosted agent acting on its own line with the send scope only; it counts against rate
    /// limits as its own caller.
    pub fn agent(org_id: &str, agent_id: &str, line_id: &str) -> Self {
        Principal {
            key_id: agent_id.to_string(),
            org_id: org_id.to_string(),
            scopes: Scopes::new(vec![Scope::Send]),
            line_id: Some(line_id.to_string()),
            expires_at: None,
        }
    }

    /// A staff member signed in to the console: the scopes of their role, every line of their
    /// organisation, and rate limits counted against them by name.
    pub fn staff(org_id: &str, staff_id: &str, scopes: Scopes) -> Self {
        Principal { key_id: staff_id.to_string(), org_id: org_id.to_string(), scopes, line_id: None, expires_at: None }
    }

    /// 403 `missing <scope> scope` unless the key carries `scope`.
    pub fn require(&self, scope: Scope) -> ApiResult<()> {
        if self.scopes.contains(scope) { Ok(()) } else { Err(ApiError::missing_scope(scope)) }
    }

    /// The caller identity rate limits count against: organisation and key.
    pub fn caller(&self) -> String {
        format!("{}/{}", self.org_id, self.key_id)
    }

    /// The line this key is bound to, if any: what it reads is limited to that line, and a
    /// request that names no line uses it.
    pub fn bound_line(&self) -> Option<&str> {
        self.line_id.as_deref()
    }

    /// Whether this key may act on `line_id` and see what is on it: an unbound key may use
    /// every line of its organisation, a line-bound key its own line only.
    pub fn may_use_line(&self, line_id: &str) -> bool {
        self.line_id.as_deref().is_none_or(|bound| bound == line_id)
    }

    /// Whether this key sees a key or webhook endpoint bound to `line_id` (`None`: bound to no
    /// line): an unbound key sees them all, a line-bound key only those bound to its own line.
    pub fn sees_binding(&self, line_id: Option<&str>) -> bool {
        self.line_id.is_none() || self.line_id.as_deref() == line_id
    }

    /// The line a request works on: the one it names, else the key's own. A line-bound key
    /// naming another line is 409 `line_mismatch`.
    pub fn line_for(&self, named: Option<String>) -> ApiResult<Option<String>> {
        match (named, &self.line_id) {
            (Some(named), Some(bound)) if &named != bound => {
                Err(ApiError::conflict("line_mismatch", "this key is bound to another line"))
            }
            (None, Some(bound)) => Ok(Some(bound.clone())),
            (named, _) => Ok(named),
        }
    }
}

const MAX_ENTRIES: usize = 100_000;

/// Principals by key hash. Lookups are cached for a few seconds so a request does not cost a
/// database read; revocation on this instance evicts at once.
pub struct AuthCache {
    ttl: Duration,
    entries: RwLock<Entries>,
}

/// The credentials of an `Authorization: Bearer …` header's value.
pub fn bearer(header: &str) -> Option<&str> {
    let (scheme, credentials) = header.trim().split_once(' ')?;
    scheme.eq_ignore_ascii_case("bearer").then(|| credentials.trim())
}

#[derive(Default)]
struct Entries {
    by_hash: HashMap<String, (Principal, Instant)>,
    /// How many evictions there have been. A lookup notes it before it reads the database and
    /// caches what it read only if no eviction came meanwhile: the key may have been revoked
    /// after the read, and the announcement that evicted it will not come again.
    evictions: u64,
}

/// The eviction count a lookup saw before it read the database.
#[derive(Debug, Clone, Copy)]
struct Ticket(u64);

impl AuthCache {
    pub fn new(ttl: Duration) -> Self {
        Self { ttl, entries: RwLock::new(Entries::default()) }
    }

    /// The principal for the secret of a `Bearer` header, or 401.
    pub async fn authenticate(&self, db: &Db, secret: Option<&str>) -> ApiResult<Principal> {
        let secret = secret.filter(|key| apikey::is_well_formed(key)).ok_or_else(ApiError::unauthorized)?;
        let hash = apikey::hash_secret(secret);
        let now = clock::now_ms();
        let (cached, ticket) = self.cached(&hash);
        if let Some(principal) = cached {
            return if principal.expires_at.is_none_or(|t| t > now) {
                Ok(principal)
            } else {
                Err(ApiError::unauthorized())
            };
        }
        let key = db::keys::find_by_hash(db, &hash)
            .await?
            .filter(|key| key.is_active(now))
            .ok_or_else(ApiError::unauthorized)?;
        let principal = Principal {
            key_id: key.id,
            org_id: key.org_id,
            scopes: key.scopes,
            line_id: key.line_id,
            expires_at: key.expires_at,
        };
        self.remember(ticket, hash, principal.clone());
        Ok(principal)
    }

    /// The principal cached for `hash` if it is still fresh, and the ticket a lookup of the
    /// database takes along.
    fn cached(&self, hash: &str) -> (Option<Principal>, Ticket) {
        let entries = self.entries.read().expect("auth cache lock");
        let fresh = entries.by_hash.get(hash).filter(|(_, at)| at.elapsed() < self.ttl);
        (fresh.map(|(principal, _)| principal.clone()), Ticket(entries.evictions))
    }

    /// Caches what a lookup read, unless a key was evicted since it took `ticket`.
    fn remember(&self, ticket: Ticket, hash: String, principal: Principal) {
        let mut entries = self.entries.write().expect("auth cache lock");
        if entries.evictions != ticket.0 {
            return;
        }
        if entries.by_hash.len() >= MAX_ENTRIES {
            entries.by_hash.clear();
        }
        entries.by_hash.insert(hash, (principal, Instant::now()));
    }

    /// Drops a key from the cache, so a revocation or rotation applies to the next request.
    pub fn forget(&self, key_id: &str) {
        let mut entries = self.entries.write().expect("auth cache lock");
        entries.by_hash.retain(|_, (p, _)| p.key_id != key_id);
        entries.evictions += 1;
    }

    /// Drops every key: each is read from the database again on its next request.
    pub fn clear(&self) {
        let mut entries = self.entries.write().expect("auth cache lock");
        entries.by_hash.clear();
        entries.evictions += 1;
    }

    /// A key was revoked or rotated: forgotten here at once, and on PostgreSQL announced to
    /// every other instance (`workers::instances` forgets it there).
    pub async fn changed(&self, db: &Db, key_id: &str) {
        self.forget(key_id);
        if let Err(error) = db::keys::announce_change(db, key_id).await {
            tracing::warn!(error = %error, "could not tell the other instances of a key change");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn principal(key_id: &str) -> Principal {
        Principal {
            key_id: key_id.into(),
            org_id: "org_1".into(),
            scopes: Scopes::new(vec![Scope::Send]),
            line_id: None,
            expires_at: None,
        }
    }

    #[test]
    fn a_key_read_before_its_revocation_was_announced_is_not_cached_after_the_announcement() {
        let cache = AuthCache::new(Duration::from_secs(60));
        // A request misses the cache and reads the key from the database, still active; the
        // revocation commits and its announcement evicts the key (not cached yet); then the
        // request's read comes back.
        let (_, ticket) = cache.cached("hash_1");
        cache.forget("key_1");
        cache.remember(ticket, "hash_1".into(), principal("key_1"));
        assert!(cache.cached("hash_1").0.is_none(), "the revoked key must be read again");
        // The same when the listener lost its connection and dropped everything.
        let (_, ticket) = cache.cached("hash_1");
        cache.clear();
        cache.remember(ticket, "hash_1".into(), principal("key_1"));
        assert!(cache.cached("hash_1").0.is_none());
    }

    #[test]
    fn a_lookup_after_an_eviction_is_cached_until_its_key_is_forgotten() {
        let cache = AuthCache::new(Duration::from_secs(60));
        cache.forget("key_2");
        let (_, ticket) = cache.cached("hash_1");
        cache.remember(ticket, "hash_1".into(), principal("key_1"));
        assert_eq!(cache.cached("hash_1").0.map(|p| p.key_id), Some("key_1".to_string()));
        cache.forget("key_1");
        assert!(cache.cached("hash_1").0.is_none());
    }
}
