//! The router's state: a plain struct of what the edges' handlers and the services reach (the
//! send path, the API-key cache, the rate limits and the hosted agents). A handler takes the
//! whole of it (`State<Services>`) or just the part it uses (`State<Sender>`), through axum's
//! `FromRef`; nothing is reached through a `Deref`.

use std::sync::Arc;

use axum::extract::FromRef;

use crate::{
    agents::Agents,
    caller::{self, AuthCache, Principal},
    db::Db,
    error::{ApiError, ApiResult},
    ratelimit::{Allowance, Policy, RateLimits},
    send::Sender,
};

/// Cheap to clone: each part is a handle.
#[derive(Clone, FromRef)]
pub struct Services {
    /// The send path, with the database, the configuration and the lines.
    pub(crate) sender: Sender,
    pub(crate) auth: Arc<AuthCache>,
    pub(crate) limits: Arc<RateLimits>,
    /// The hosted agents (their try-it runs and the tools they call use the send path too).
    pub(crate) agents: Agents,
}

impl Services {
    pub(crate) fn new(sender: Sender, auth: Arc<AuthCache>, limits: Arc<RateLimits>, agents: Agents) -> Self {
        Services { sender, auth, limits, agents }
    }

    /// Who makes a request with this `Authorization` header value: its bearer key authenticated
    /// (401 `unauthorized`), and the request counted against the key's global rate policy (429
    /// `rate_limited`), with what the policy leaves for the `RateLimit` headers. The API's
    /// requests and MCP's over HTTP are admitted alike.
    pub(crate) async fn admit(&self, authorization: Option<&str>) -> ApiResult<(Principal, Vec<Allowance>)> {
        let principal = self.auth.authenticate(&self.sender.db, authorization.and_then(caller::bearer)).await?;
        match self.limits.check_all(&[Policy::Global], &principal.caller()).await {
            Ok(allowances) => Ok((principal, allowances)),
            Err((policy, retry_after)) => {
                crate::metrics::rate_limited(policy.name());
                Err(ApiError::rate_limited(retry_after))
            }
        }
    }

    /// The database the server runs on (the demo and the tests read it).
    pub fn db(&self) -> &Db {
        &self.sender.db
    }

    /// The send path (the tests run workers' steps with it).
    #[cfg(feature = "testing")]
    pub fn sender(&self) -> &Sender {
        &self.sender
    }

    /// Where attachments' bytes are kept (the tests read it).
    #[cfg(feature = "testing")]
    pub fn media(&self) -> &crate::media::MediaStore {
        &self.sender.media
    }
}
