//! The HTTP server under both HTTP edges (the API and the console): the accept loop with its
//! timeouts and caps, the listener that rewrites the HTTP layer's own answers, the one mapping of
//! an error to its status and body, and stored files as answers. Neither edge imports the other;
//! both import this.

pub mod errors;
pub mod files;
pub mod listener;
pub mod server;
