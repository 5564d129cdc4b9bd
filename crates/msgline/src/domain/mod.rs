//! Parse-don't-validate types and pure rules. Once a value has one of these types it is valid.

pub mod apikey;
pub mod idempotency;
pub mod lifecycle;
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
