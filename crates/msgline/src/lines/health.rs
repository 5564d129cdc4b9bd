//! A line's health, and who moves it: an operator pauses and resumes (`paused` → `active`, and
//! `flagged` or `offline` → `active` too); the dispatcher flags a line whose device says its
//! account is blocked; the line checker takes a line `offline` when its probe fails and back to
//! `active` when one succeeds. Each move writes `messaging.line.health_changed` with it. Only an
//! operator ends a pause or a flag: a probe that succeeds does not.

use crate::{
    db::{
        Db,
        lines::{self, HealthChange},
    },
    domain::lifecycle::Health,
};

/// An operator pauses the line: it sends nothing; its queue waits.
pub async fn pause(db: &Db, line_id: &str) -> sqlx::Result<Option<HealthChange>> {
    let from = [Health::Active, Health::Flagged, Health::Offline];
    lines::change_health(db, line_id, &from, Health::Paused, Some("paused by an operator")).await
}

/// An operator resumes the line, whatever stopped it.
pub async fn resume(db: &Db, line_id: &str) -> sqlx::Result<Option<HealthChange>> {
    let from = [Health::Paused, Health::Flagged, Health::Offline];
    lines::change_health(db, line_id, &from, Health::Active, None).await
}

/// The line's device said its account is blocked: the line stops until an operator resumes it.
pub async fn flag(db: &Db, line_id: &str, reason: &str) -> sqlx::Result<Option<HealthChange>> {
    stop(db, line_id, &format!("the device says its account is blocked: {reason}")).await
}

/// The line is flagged with `reason` (its device's words, read per kind by `lines::signals`): it
/// stops until an operator resumes it.
pub async fn stop(db: &Db, line_id: &str, reason: &str) -> sqlx::Result<Option<HealthChange>> {
    let from = [Health::Active, Health::Offline];
    lines::change_health(db, line_id, &from, Health::Flagged, Some(reason)).await
}

/// A probe of an active line failed.
pub async fn went_offline(db: &Db, line_id: &str, reason: &str) -> sqlx::Result<Option<HealthChange>> {
    lines::change_health(db, line_id, &[Health::Active], Health::Offline, Some(reason)).await
}

/// A probe of an offline line succeeded.
pub async fn came_back(db: &Db, line_id: &str) -> sqlx::Result<Option<HealthChange>> {
    lines::change_health(db, line_id, &[Health::Offline], Health::Active, None).await
}
