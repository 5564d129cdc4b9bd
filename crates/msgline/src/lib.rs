//! msgline: a self-hostable messaging API for SMS and iMessage.
#![forbid(unsafe_code)]

pub mod admin;
pub mod agents;
pub mod api;
pub mod app;
pub mod bench;
pub mod bridge;
pub mod caller;
pub mod clock;
pub mod config;
pub mod console;
pub mod db;
pub mod demo;
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
pub use app::Application;
pub use config::Config;
