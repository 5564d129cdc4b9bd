//! The clean-up of what is past keeping (the janitor's and the webhook worker's), on the
//! configured engine.

use msgline::testing::db::{reports::CALLBACKS_BEFORE, webhook_deliveries::settled_before};
use sqlx::Row;

use crate::helpers::{plan_of, spawn_app};

const WEEK_MS: i64 = 7 * 86_400_000;

/// `count` callback ids of one line, named `{prefix}{n}`, all received at `at`.
async fn record_callbacks(app: &crate::helpers::TestApp, prefix: &str, count: i64, at: i64) {
    sqlx::query(
        "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < $1) \
         INSERT INTO bridge_events (line_id, event_id, received_at) SELECT 'line_x', $2 || CAST(i AS TEXT), $3 FROM n",
    )
    .bind(count)
    .bind(prefix)
    .bind(at)
    .execute(app.state.db().writer_for_tests())
    .await
    .unwrap();
}

/// Callback ids older than a week go, in several batches; newer ones stay.
#[tokio::test]
async fn the_janitor_deletes_callback_ids_older_than_a_week_and_keeps_the_rest() {
    let app = spawn_app().await;
    let now = msgline::clock::now_ms();
    record_callbacks(&app, "old_", 1_203, now - WEEK_MS - 60_000).await;
    record_callbacks(&app, "new_", 2, now - WEEK_MS + 600_000).await;

    let removed = msgline::testing::workers::janitor::step(app.state.sender()).await.unwrap();

    assert_eq!(removed, 1_203);
    let left: Vec<String> = sqlx::query("SELECT event_id FROM bridge_events ORDER BY event_id")
        .fetch_all(app.state.db().reader_for_tests())
        .await
        .unwrap()
        .iter()
        .map(|row| row.get(0))
        .collect();
    assert_eq!(left, ["new_1", "new_2"]);
}

/// The janitor finds old callback ids through an index, not by reading the whole table: on
/// SQLite the read held the write lock for over a second once the table had two million rows.
#[tokio::test]
async fn the_janitor_finds_old_callback_ids_through_an_index() {
    let app = spawn_app().await;
    let plan = plan_of(app.state.db(), true, CALLBACKS_BEFORE).await;
    assert!(plan.iter().any(|line| line.contains("bridge_events_by_age")), "{plan:#?}");
}

/// The webhook worker finds settled deliveries past keeping through an index of settled ones
/// only, not by reading every delivered one (a million rows in a ten-minute soak).
#[tokio::test]
async fn the_webhook_prune_finds_settled_deliveries_through_an_index() {
    let app = spawn_app().await;
    let plan = plan_of(app.state.db(), true, settled_before(app.state.db().backend())).await;
    assert!(plan.iter().any(|line| line.contains("webhook_deliveries_settled")), "{plan:#?}");
    // And the delete built on it runs (there is nothing to delete).
    assert_eq!(msgline::testing::db::webhook_deliveries::prune(app.state.db(), i64::MAX, 10).await.unwrap(), 0);
}
