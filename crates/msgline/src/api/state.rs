//! What the HTTP handlers reach: the send path, the API-key cache and the rate limits. The
//! handlers read the send path's handles through it (`state.db`, `state.lines`, ...).

use std::{ops::Deref, sync::Arc};

use crate::{agents::Agents, caller::AuthCache, ratelimit::RateLimits, send::Sender};

/// The router's state; cheap to clone.
#[derive(Clone)]
pub struct AppState(Arc<Parts>);

pub struct Parts {
    pub sender: Sender,
    pub auth: Arc<AuthCache>,
    pub limits: Arc<RateLimits>,
    /// The hosted agents (their try-it runs and the tools they call use the send path too).
    pub agents: Agents,
}

impl AppState {
    pub fn new(sender: Sender, auth: Arc<AuthCache>, limits: Arc<RateLimits>, agents: Agents) -> Self {
        AppState(Arc::new(Parts { sender, auth, limits, agents }))
    }

    pub fn parts(&self) -> &Parts {
        &self.0
    }

    pub fn auth(&self) -> &AuthCache {
        &self.0.auth
    }

    pub fn limits(&self) -> &RateLimits {
        &self.0.limits
    }
}

/// The send path's handles (`state.db`, `state.config`, `state.lines`, ...), and a `&AppState`
/// passes as the `&Sender` the send functions take.
impl Deref for AppState {
    type Target = Sender;
    fn deref(&self) -> &Sender {
        &self.0.sender
    }
}
