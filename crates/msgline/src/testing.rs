//! The internals the integration tests reach into (crates/msgline-cli/tests/api), at the paths
//! they have inside the crate: `msgline::testing::db::messages::get` is `crate::db::messages::get`.
//!
//! **Not a stable API.** It exists only with the cargo feature `testing`, which the binary's
//! package turns on for its tests alone (its dev-dependency); it changes whenever the code it
//! exposes does. Tools use the library's surface (lib.rs), never this. An item here that nothing
//! in the crate itself uses is compiled only for tests (`#[cfg(feature = "testing")]`).

/// The storage layer: a table's queries and staged writes, seen from a test.
pub mod db {
    pub use crate::db::{Backend, Batch, Db, MIGRATIONS};

    pub mod contacts {
        pub use crate::db::contacts::{find_or_create, reachability_by_phone};
    }
    pub mod conversations {
        pub use crate::db::conversations::{Recipient, find_or_create_direct, get_any, recipient};
    }
    pub mod events {
        pub use crate::db::events::{insert, types_for_message};
    }
    pub mod idempotency {
        pub use crate::db::idempotency::find_send;
    }
    pub mod keys {
        pub use crate::db::keys::find_by_hash;
    }
    pub mod lines {
        pub use crate::db::lines::{Capabilities, adopt_signing_key, get, record_check};
    }
    pub mod messages {
        pub use crate::db::messages::{LAST_SENDER_ORG, Message, NewMessage, get, stage_insert};
    }
    pub mod moves {
        pub use crate::db::moves::{stage_advance, stage_advance_settling, stage_through};
    }
    pub mod outbox {
        pub use crate::db::outbox::claim_pending;
    }
    pub mod planner {
        pub use crate::db::planner::analyze_grown;
    }
    pub mod reports {
        pub use crate::db::reports::{CALLBACKS_BEFORE, StatusReport, apply_reports};
    }
    pub mod staff {
        pub use crate::db::staff::set_password;
    }
    pub mod retention {
        pub use crate::db::retention::{EVENTS_BATCH, messages_batch};
    }
    pub mod unrouted {
        pub use crate::db::unrouted::count;
    }
    pub mod webhook_deliveries {
        pub use crate::db::webhook_deliveries::{ANY_DUE, any_due, outstanding, prune, settled_before};
    }
    pub mod webhook_fan_out {
        pub use crate::db::webhook_fan_out::ANY_UNFANNED;
    }
    pub mod webhooks {
        pub use crate::db::webhooks::{NewWebhook, create, disable};
    }
}

/// Parsed types and rules.
pub mod domain {
    pub mod apikey {
        pub use crate::domain::apikey::{hash_secret, mint};
    }
    pub mod lifecycle {
        pub use crate::domain::lifecycle::{Channel, Direction, MessageKind, MessageStatus};
    }
    pub mod line_policy {
        pub use crate::domain::line_policy::FIELDS;
    }
    pub mod photo {
        pub use crate::domain::photo::SERVICE_MARK;
    }
    pub mod staff {
        pub use crate::domain::staff::hash_password;
    }
    pub mod webhook {
        pub use crate::domain::webhook::Subscriptions;
    }
}

/// The background loops, one step at a time.
pub mod workers {
    pub mod janitor {
        pub use crate::workers::janitor::{orphaned_files, step};
    }
    pub mod retention {
        pub use crate::workers::retention::{Purged, purge, run_once};
    }
}

/// How long a Kannel line's `unknown` message waits for a report before it is failed as never
/// known.
pub use crate::bridge::kannel::UNKNOWN_WINDOW_MS as KANNEL_UNKNOWN_WINDOW_MS;
/// How a Kannel line decodes an arriving message's bytes by their charset.
pub use crate::bridge::kannel::decode_text as kannel_decode_text;
