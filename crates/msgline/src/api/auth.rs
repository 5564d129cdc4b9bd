//! Bearer-key authentication: the key becomes a [`Principal`]. Lookups are cached for a few
//! seconds so a request does not cost a database read; revocation on this instance evicts at once.

use std::{
    collections::HashMap,
    sync::RwLock,
    time::{Duration, Instant},
};

use axum::{extract::FromRequestParts, http::request::Parts};

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
    pub line_id: Option<String>,
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

    /// 403 `missing <scope> scope` unless the key carries `scope`.
    pub fn require(&self, scope: Scope) -> ApiResult<()> {
        if self.scopes.contains(scope) { Ok(()) } else { Err(ApiError::missing_scope(scope)) }
    }

    /// The caller identity rate limits count against: organisation and key.
    pub fn caller(&self) -> String {
        format!("{}/{}", self.org_id, self.key_id)
    }
}

impl<S: Send + Sync> FromRequestParts<S> for Principal {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, Self::Rejection> {
        parts.extensions.get::<Principal>().cloned().ok_or_else(ApiError::unauthorized)
    }
}

const MAX_ENTRIES: usize = 100_000;

/// The credentials of a `Bearer` authorization header (the scheme name in any case).
pub fn bearer(header: &str) -> Option<&str> {
    let (scheme, credentials) = header.trim().split_once(' ')?;
    scheme.eq_ignore_ascii_case("bearer").then(|| credentials.trim())
}

pub struct AuthCache {
    ttl: Duration,
    entries: RwLock<HashMap<String, (Principal, Instant)>>,
}

impl AuthCache {
    pub fn new(ttl: Duration) -> Self {
        Self { ttl, entries: RwLock::new(HashMap::new()) }
    }

    /// The principal for an `Authorization` header value, or 401.
    pub async fn authenticate(&self, db: &Db, header: Option<&str>) -> ApiResult<Principal> {
        let secret =
            header.and_then(bearer).filter(|key| apikey::is_well_formed(key)).ok_or_else(ApiError::unauthorized)?;
        let hash = apikey::hash_secret(secret);
        let now = clock::now_ms();
        let cached = self.entries.read().expect("auth cache lock").get(&hash).cloned();
        if let Some((principal, at)) = cached
            && at.elapsed() < self.ttl
        {
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
        let mut entries = self.entries.write().expect("auth cache lock");
        if entries.len() >= MAX_ENTRIES {
            entries.clear();
        }
        entries.insert(hash, (principal.clone(), Instant::now()));
        Ok(principal)
    }

    /// Drops a key from the cache, so a revocation or rotation applies to the next request.
    pub fn forget(&self, key_id: &str) {
        self.entries.write().expect("auth cache lock").retain(|_, (p, _)| p.key_id != key_id);
    }
}
