//! The services floor: one module per resource under the three edges (the API, the console and
//! MCP). A service takes typed input and the caller ([`Principal`](crate::caller::Principal)),
//! checks the caller's scopes itself and answers with domain values or an
//! [`ApiError`](crate::error::ApiError); an edge only parses, calls and answers. Sends are the
//! send path's ([`crate::send`]), which the services and the edges reach through [`Services`].

pub mod agents;
pub mod contacts;
pub mod dial_in;
pub mod feed;
pub mod keys;
pub mod lines;
pub mod opt_outs;
pub mod pools;
mod state;
pub mod webhooks;

pub use state::Services;
