//! Integration tests: the real server on a loopback port, real HTTP, a fresh database per test.

mod helpers;
mod receiver;
mod simline;

mod crash;
mod demo;
mod foundation;
mod inbound;
mod messages;
mod webhooks;
