//! msgline: a self-hostable messaging API for SMS and iMessage. This is the server library;
//! the `msgline` binary (crates/msgline-cli) and the tools (crates/msgline-sim, -bench, -demo)
//! are built on it.
//!
//! # Its surface
//!
//! The modules are the crate's own (`pub(crate)`); other crates see only what is listed here
//! (docs/architecture.md, "The library's surface"):
//!
//! - running the server: [`Application`], [`Config`], [`Services`], [`shutdown_signal`];
//! - the database: [`Db`] and its [`Backend`];
//! - the operator commands: [`admin`] (organisations, keys, lines);
//! - the line-bridge protocol's messages, which a bridge such as the simulator speaks:
//!   [`bridge_protocol`];
//! - small helpers: [`clock`] (times), [`ids`] (prefixed ids), [`telemetry`] (logging and traces);
//! - what one command each needs: [`openapi_document`], [`run_mcp`], and for the bench
//!   [`sign_webhook`] and [`seed_bench_messages`];
//! - with the cargo feature `testing` only: `testing`, the internals the integration tests reach
//!   into. It is **not a stable API**.
#![forbid(unsafe_code)]

pub mod admin;
pub(crate) mod agents;
pub(crate) mod api;
pub(crate) mod app;
pub(crate) mod bridge;
pub(crate) mod caller;
pub mod clock;
pub(crate) mod config;
pub(crate) mod console;
pub(crate) mod db;
pub(crate) mod dispatch;
pub(crate) mod domain;
pub(crate) mod egress;
pub(crate) mod error;
pub(crate) mod fields;
#[cfg(test)]
mod fuzz;
pub mod ids;
pub(crate) mod inbound;
pub(crate) mod lines;
pub(crate) mod mcp;
pub(crate) mod media;
pub(crate) mod metrics;
pub(crate) mod ratelimit;
pub(crate) mod send;
pub(crate) mod services;
pub mod telemetry;
pub(crate) mod trace;
pub(crate) mod web;
pub(crate) mod workers;

#[cfg(feature = "testing")]
pub mod testing;

pub use app::Application;
pub use app::shutdown_signal;
pub use config::Config;
pub use db::Backend;
pub use db::Db;
pub use services::Services;

/// `msgline openapi`: the OpenAPI 3.1 document of the HTTP API.
pub use api::openapi::document as openapi_document;
/// Fills a database with messages for the bench's read scenario (`db/bench.rs`).
pub use db::bench::seed_messages as seed_bench_messages;
/// `msgline bench`'s seeder of scheduled messages (the `scheduled` scenario).
pub use db::bench::seed_scheduled as seed_bench_scheduled;
/// `msgline bench`'s seeder of a grown database (the `grown` scenario).
pub use db::bench::{Grown as BenchGrown, seed_grown as seed_bench_grown};
/// A Standard Webhooks signature (docs/webhooks.md), as msgline signs its deliveries.
pub use domain::webhook::sign as sign_webhook;
/// `msgline mcp`: an MCP server on stdio, acting with an API key against a running server.
pub use mcp::run as run_mcp;

/// The line-bridge protocol's messages (docs/bridge-protocol.md), both ways: what msgline sends
/// a bridge and what it answers, and the events a bridge reports back.
pub mod bridge_protocol {
    pub use crate::bridge::{
        ActionRequest, AttachmentRef, BatchAnswer, BatchResult, BridgeEvent, BridgeEventPayload, CapabilitiesAnswer,
        ConversationSignal, GroupChangeRequest, GroupRequest, InboundFile, LINE_BLOCKED, ReachabilityAnswer,
        ReachabilityRequest, ReactionRequest, SendAnswer, SendBatch, SendRequest, StatusAnswer,
    };
    pub use crate::db::lines::Capabilities;
}
