//! Parse-don't-validate types and pure rules. Once a value has one of these types it is valid.

/// The longest text a message holds, in characters, either way: a send longer is refused, and
/// an arriving one is refused by the bridge protocol or cut to this by a device's webhook.
pub const MAX_TEXT_CHARS: usize = 10_000;

/// The longest sender handle an arriving message may name, in characters: an email address's
/// limit (RFC 5321), far above any phone number (15 digits) or sender ID (11 characters).
pub const MAX_HANDLE_CHARS: usize = 254;

pub mod apikey;
pub mod id;
pub mod idempotency;
pub mod lifecycle;
pub mod line_policy;
pub mod message_action;
pub mod opt_out;
pub mod payload;
pub mod phone;
pub mod photo;
pub mod poll;
pub mod reaction;
pub mod scope;
pub mod staff;
pub mod vcard;
pub mod webhook;
