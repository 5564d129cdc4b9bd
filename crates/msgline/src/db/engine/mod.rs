//! The write engine, behind the per-table queries: how a unit of work reaches the database.
//! Queries stage their statements into a [`Batch`]; [`super::Db::commit`] and
//! [`super::Db::transaction`] choose the path (SQLite's committer thread with its native readers,
//! PostgreSQL's commit lanes with merged statements, or a plain transaction). Nothing outside
//! `db` reaches in here except [`Batch`] and [`Arg`] (and the planner's statistics worker).
//!
//! - [`batch`]: statements staged as text and arguments, run on either engine.
//! - [`group_commit`]: the shared commits (several requests' units in one transaction).
//! - [`merge`]: statements of one commit merged into one per kind (PostgreSQL lanes).
//! - [`native`]: SQLite's committer and readers on threads of their own (rusqlite).
//! - [`planner`]: PostgreSQL's statistics kept up with tables that grow fast.

pub(super) mod batch;
pub(super) mod group_commit;
pub(super) mod merge;
pub(super) mod native;
pub mod planner;

pub use batch::{Arg, Batch};

/// Most requests one commit carries.
pub(in crate::db) const MAX_GROUP: usize = 256;

// What the engine uses of the storage layer around it.
#[cfg(test)]
use super::is_unique_violation;
use super::{Backend, Columns, Db, SQLITE_READER_PRAGMAS, column_index};
