//! Integration tests: the real server on a loopback port, real HTTP, a fresh database per test.

mod helpers;

mod cli;
mod contacts;
mod conversations;
mod errors;
mod foundation;
mod isolation;
mod keys;
mod lines;
mod ratelimit;
mod schema;
