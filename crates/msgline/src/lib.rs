//! msgline: a self-hostable messaging API for SMS and iMessage.
#![forbid(unsafe_code)]

pub mod admin;
pub mod agents;
pub mod api;
pub mod app;
pub mod bridge;
pub mod caller;
pub mod clock;
pub mod config;
pub mod db;
pub mod dispatch;
pub mod domain;
pub mod egress;
pub mod error;
pub mod fields;
#[cfg(test)]
mod fuzz;
pub mod ids;
pub mod inbound;
pub mod mcp;
pub mod media;
pub mod metrics;
pub mod ratelimit;
pub mod send;
pub mod telemetry;
pub mod workers;

pub use api::AppState;
pub use api::bench::seed_messages as seed_bench_messages;
pub use api::openapi::document as openapi_document;
pub use app::Application;
pub use app::shutdown_signal;
pub use config::Config;
pub use db::Backend;
pub use db::Db;
pub use domain::webhook::sign as sign_webhook;
pub use mcp::run as run_mcp;

/// The line-bridge protocol's messages (docs/bridge-protocol.md), both ways: what msgline sends
/// a bridge and what it answers, and the events a bridge reports back.
pub mod bridge_protocol {
    pub use crate::bridge::{
        AttachmentRef, BridgeEvent, BridgeEventPayload, CapabilitiesAnswer, ConversationSignal, GroupChangeRequest,
        GroupRequest, InboundFile, ReachabilityAnswer, ReachabilityRequest, ReactionRequest, SendAnswer, SendRequest,
        StatusAnswer,
    };
    pub use crate::db::lines::Capabilities;
}
