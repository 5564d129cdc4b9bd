//! msgline: a self-hostable messaging API for SMS and iMessage.
#![forbid(unsafe_code)]

pub mod admin;
pub mod api;
pub mod app;
pub mod clock;
pub mod config;
pub mod db;
pub mod domain;
pub mod error;
pub mod ids;
pub mod telemetry;

pub use app::Application;
pub use config::Config;
