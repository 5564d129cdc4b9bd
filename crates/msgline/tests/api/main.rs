//! Integration tests: the real server on a loopback port, real HTTP, a fresh database per test.

mod devices;
mod fakemodel;
mod helpers;
mod receiver;
mod simline;

mod agents;
mod android;
mod bluebubbles;
mod cards;
mod cli;
mod contacts;
mod conversations;
mod crash;
mod demo;
mod errors;
mod foundation;
mod groups;
mod idempotency;
mod inbound;
mod isolation;
mod keys;
mod lines;
mod locks;
mod mcp;
mod messages;
mod metrics;
mod moves;
mod openapi;
mod plans;
mod polls;
mod ratelimit;
mod rows;
mod schema;
mod webhook_delivery;
mod webhooks;
