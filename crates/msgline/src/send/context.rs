//! What the send path works with: the database, the lines, the dispatcher's slots and the
//! caches sends fill. The API's handlers, the hosted agents and the workers that move messages
//! (dispatcher, reconciler, line checker) hold one; nothing else is in it.

use std::{ops::Deref, sync::Arc};

use crate::{
    bridge::{client::BridgeClient, directory::LineDirectory},
    config::Config,
    db::Db,
    dispatch::Dispatch,
    egress::Egress,
    media::MediaStore,
    ratelimit::RateLimits,
};

/// The send path's handles; cheap to clone.
#[derive(Clone)]
pub struct Sender(Arc<Handles>);

pub struct Handles {
    pub db: Db,
    pub config: Config,
    pub lines: LineDirectory,
    /// The dispatcher's slots for calls to lines, which sends take to call the line at once.
    pub dispatch: Dispatch,
    /// The one client for customer-supplied URLs.
    pub egress: Egress,
    /// Contacts and conversations sends have already written.
    pub threads: super::ThreadCache,
    /// Turns for asking a line's device about a number's reachability (`GET /availability`).
    pub asking: super::availability::Asking,
    /// Where attachments' bytes are kept.
    pub media: MediaStore,
    /// Organisations' defaults for their sends.
    pub org_defaults: super::org_defaults::OrgDefaults,
    /// The rate limits: sends count against the send policy where they are accepted.
    pub limits: Arc<RateLimits>,
    /// Wakes this instance's open event-feed streams.
    pub feed: crate::db::feed::Signal,
    /// Where a send's trace goes on in later tasks and requests (on with `MSGLINE_OTLP_ENDPOINT`).
    pub traces: crate::trace::Links,
}

/// The one `Deref` on the way to a handle: `sender.db` is the send path's database.
impl Deref for Sender {
    type Target = Handles;
    fn deref(&self) -> &Handles {
        &self.0
    }
}

impl Sender {
    pub fn new(db: Db, config: Config, limits: Arc<RateLimits>) -> anyhow::Result<Self> {
        let media = MediaStore::open(&config.media_store)?;
        Ok(Sender(Arc::new(Handles {
            lines: LineDirectory::new(db.clone(), BridgeClient::new(&config, db.clone(), media.clone())),
            dispatch: Dispatch::new(config.dispatch_concurrency),
            egress: Egress::new(config.allow_private_targets),
            threads: Default::default(),
            asking: Default::default(),
            org_defaults: super::org_defaults::OrgDefaults::new(std::time::Duration::from_secs(
                config.key_cache_seconds,
            )),
            media,
            limits,
            feed: Default::default(),
            traces: crate::trace::Links::new(config.otlp_endpoint.is_some()),
            db,
            config,
        })))
    }

    /// A handle that does not keep the send path alive (for what the send path itself holds).
    pub fn downgrade(&self) -> std::sync::Weak<Handles> {
        Arc::downgrade(&self.0)
    }

    /// The send path again from a [`Sender::downgrade`], while it is alive.
    pub fn upgrade(weak: &std::sync::Weak<Handles>) -> Option<Sender> {
        weak.upgrade().map(Sender)
    }
}
