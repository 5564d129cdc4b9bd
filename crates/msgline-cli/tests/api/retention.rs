//! Retention (`MSGLINE_RETENTION_DAYS`): the janitor deletes messages older than the retention
//! that nothing is left to happen to, with their rows and files, and keeps everything else.

use serde_json::{Value, json};
use sqlx::Row;

use crate::{
    helpers::{TestApp, eventually, plan_of, spawn_app, spawn_app_with},
    simline::SimLine,
};

const FRIEND: &str = "+12015550131";
const HOUR_MS: i64 = 3_600_000;

async fn count(app: &TestApp, sql: &str, id: &str) -> i64 {
    sqlx::query(sql).bind(id).fetch_one(app.db().writer_for_tests()).await.unwrap().get(0)
}

async fn exec(app: &TestApp, sql: &str, args: &[&str]) {
    let mut query = sqlx::query(sql);
    for arg in args {
        query = query.bind(*arg);
    }
    query.execute(app.db().writer_for_tests()).await.unwrap();
}

async fn send(app: &TestApp, body: Value) -> String {
    app.post("/messages", &app.org.key, body).await.expect(202)["message"]["id"].as_str().unwrap().to_string()
}

async fn delivered(app: &TestApp, body: &str) -> String {
    let id = send(app, json!({"to": FRIEND, "body": body})).await;
    app.wait_for_message(&app.org.key, &id, "delivered", |m| m["status"] == "delivered").await;
    id
}

/// Waits for the inbound message with `body` and returns its id.
async fn received(app: &TestApp, line: &SimLine, body: &str) -> String {
    line.inbound(FRIEND, body).await;
    eventually(10, "the inbound message", || async {
        sqlx::query("SELECT id FROM messages WHERE body = $1 AND status = 'received'")
            .bind(body)
            .fetch_optional(app.db().writer_for_tests())
            .await
            .unwrap()
            .map(|row| row.get::<String, _>(0))
    })
    .await
}

/// Waits until the webhook worker has fanned every event out (retention keeps those it has not).
async fn fanned_out(app: &TestApp) {
    eventually(10, "every event fanned out", || async {
        (count(app, "SELECT COUNT(*) FROM events WHERE webhooks_pending = 1 AND id <> $1", "").await == 0).then_some(())
    })
    .await;
}

/// The rows a message has in each table that hangs from it.
async fn rows_of(app: &TestApp, id: &str) -> Vec<(&'static str, i64)> {
    let mut rows = Vec::new();
    for (table, sql) in [
        ("messages", "SELECT COUNT(*) FROM messages WHERE id = $1"),
        ("events", "SELECT COUNT(*) FROM events WHERE message_id = $1"),
        ("delivery_attempts", "SELECT COUNT(*) FROM delivery_attempts WHERE message_id = $1"),
        ("attachments", "SELECT COUNT(*) FROM attachments WHERE message_id = $1"),
        ("reactions", "SELECT COUNT(*) FROM reactions WHERE message_id = $1"),
        ("polls", "SELECT COUNT(*) FROM polls WHERE message_id = $1"),
        ("poll_votes", "SELECT COUNT(*) FROM poll_votes WHERE message_id = $1"),
        (
            "webhook_deliveries",
            "SELECT COUNT(*) FROM webhook_deliveries d JOIN events e ON e.id = d.event_id WHERE e.message_id = $1",
        ),
    ] {
        rows.push((table, count(app, sql, id).await));
    }
    rows
}

/// Gives `id` a row in every table that can hang from a message and that the API did not fill
/// here: an attachment with its file, a reaction, a poll with a vote, a settled webhook
/// delivery with an attempt for each of its events. Returns the attachment's storage key.
async fn hang_rows_from(app: &TestApp, id: &str) -> String {
    let (org, key) = (app.org.id.as_str(), format!("{}/file_{id}", app.org.id));
    app.state.sender().media.put(&key, b"old bytes".to_vec()).await.unwrap();
    exec(
        app,
        "INSERT INTO attachments (id, org_id, message_id, content_type, size, filename, storage_key, position, \
         created_at) VALUES ('file_' || $1, $2, $1, 'image/png', 9, NULL, $3, 0, 0)",
        &[id, org, &key],
    )
    .await;
    exec(
        app,
        "INSERT INTO reactions (message_id, org_id, target_id, reaction, removed, created_at) VALUES ($1, $2, NULL, 'love', 0, 0)",
        &[id, org],
    )
    .await;
    exec(
        app,
        "INSERT INTO polls (id, org_id, message_id, conversation_id, line_id, question, options, created_at) \
         SELECT 'poll_' || id, org_id, id, conversation_id, line_id, 'Which?', '[\"a\",\"b\"]', 0 FROM messages WHERE id = $1",
        &[id],
    )
    .await;
    exec(
        app,
        "INSERT INTO poll_votes (id, poll_id, org_id, contact_id, option_index, message_id, created_at) \
         SELECT 'vote_' || id, 'poll_' || id, org_id, contact_id, 0, id, 0 FROM messages WHERE id = $1",
        &[id],
    )
    .await;
    exec(
        app,
        "INSERT INTO webhook_deliveries (id, org_id, webhook_id, event_id, state, attempts, created_at, updated_at) \
         SELECT 'whd_' || e.id, e.org_id, w.id, e.id, 'delivered', 1, 0, 0 FROM events e, webhooks w \
         WHERE e.message_id = $1",
        &[id],
    )
    .await;
    exec(
        app,
        "INSERT INTO webhook_attempts (id, org_id, webhook_id, delivery_id, event_id, event_type, attempt, \
         succeeded, latency_ms, created_at) \
         SELECT 'wha_' || d.id, d.org_id, d.webhook_id, d.id, d.event_id, 'x', 1, 1, 5, 0 \
         FROM webhook_deliveries d JOIN events e ON e.id = d.event_id WHERE e.message_id = $1",
        &[id],
    )
    .await;
    key
}

/// Every kind of message, each older than the cutoff but one; returns the cutoff.
struct Seeded {
    /// Delivered, failed, received: go with all their rows.
    gone: Vec<String>,
    /// Scheduled, waiting for its paused line, `unknown`, under a live idempotency key, newer
    /// than the cutoff: stay with all their rows.
    kept: Vec<String>,
    files: Vec<String>,
    cutoff: i64,
}

async fn seed(app: &TestApp) -> Seeded {
    app.keep_events().await;
    let line = app.default_line().await;
    let a = delivered(app, "delivered long ago").await;
    line.control("/control/mode", json!({"mode": "reject"})).await;
    let failed = send(app, json!({"to": FRIEND, "body": "refused long ago"})).await;
    app.wait_for_message(&app.org.key, &failed, "failed", |m| m["status"] == "failed").await;
    line.control("/control/mode", json!({"mode": "accept"})).await;
    let b = received(app, &line, "received long ago").await;
    let files = vec![hang_rows_from(app, &a).await, hang_rows_from(app, &b).await];

    let scheduled = send(
        app,
        json!({"to": FRIEND, "body": "later", "send_at": msgline::clock::rfc3339(msgline::clock::now_ms() + 3_600_000)}),
    )
    .await;
    let unknown = delivered(app, "not known").await;
    // The state a send whose line timed out holds until the line is asked.
    exec(
        app,
        "UPDATE messages SET status = 'unknown', outbox_state = 'unknown', available_at = 9000000000000 WHERE id = $1",
        &[&unknown],
    )
    .await;
    let keyed = app
        .client
        .post(app.url("/messages"))
        .bearer_auth(&app.org.key)
        .header("Idempotency-Key", "kept-key")
        .json(&json!({"to": FRIEND, "body": "keyed"}))
        .send()
        .await
        .unwrap();
    let keyed = keyed.json::<Value>().await.unwrap()["message"]["id"].as_str().unwrap().to_string();
    app.wait_for_message(&app.org.key, &keyed, "delivered", |m| m["status"] == "delivered").await;
    app.post(&format!("/lines/{}/pause", line.line_id), &app.org.key, json!({})).await.expect(200);
    let waiting = send(app, json!({"to": FRIEND, "body": "waits for its line"})).await;

    let cutoff = msgline::clock::now_ms() + 1;
    eventually(5, "the clock to pass the cutoff", || async { (msgline::clock::now_ms() > cutoff).then_some(()) }).await;
    let newer = received(app, &line, "received after the cutoff").await;
    fanned_out(app).await;
    Seeded { gone: vec![a, failed, b], kept: vec![scheduled, unknown, keyed, waiting, newer], files, cutoff }
}

/// Settled messages older than the cutoff go with their events, attempts, attachments and
/// files, reactions, polls and votes, webhook deliveries and attempts; messages still waiting,
/// scheduled, `unknown`, under a live idempotency key or newer stay with all of theirs; the
/// contact, the conversation and the opt-outs stay, and read as before.
#[tokio::test]
async fn retention_deletes_settled_old_messages_with_their_rows_and_keeps_the_rest() {
    let app = spawn_app_with(|c| c.feed_retention_hours = 1).await;
    let seeded = seed(&app).await;
    exec(
        &app,
        "INSERT INTO opt_outs (id, org_id, line_id, phone, contact_id, keyword, created_at) \
         SELECT 'opt_1', org_id, line_id, '+12015550199', contact_id, 'stop', 0 FROM messages WHERE id = $1",
        &[&seeded.kept[0]],
    )
    .await;
    let mut kept_before = Vec::new();
    for id in &seeded.kept {
        kept_before.push(rows_of(&app, id).await);
    }
    for id in &seeded.gone {
        assert!(rows_of(&app, id).await.iter().any(|(table, n)| *table == "events" && *n > 0), "{id} has events");
    }
    let conversation =
        app.get(&format!("/messages/{}", seeded.gone[0]), &app.org.key).await.expect(200)["conversation_id"]
            .as_str()
            .unwrap()
            .to_string();

    // Two hours on: the event feed's window (an hour here) is behind every event as well.
    let purged =
        msgline::testing::workers::retention::purge(app.state.sender(), seeded.cutoff, seeded.cutoff + 2 * HOUR_MS)
            .await
            .unwrap();

    assert_eq!(purged.messages, 3, "{purged:?}");
    assert_eq!(purged.files, 2, "{purged:?}");
    for id in &seeded.gone {
        assert!(rows_of(&app, id).await.iter().all(|(_, n)| *n == 0), "{id}: {:?}", rows_of(&app, id).await);
        app.get(&format!("/messages/{id}"), &app.org.key).await.expect(404);
    }
    assert_eq!(count(&app, "SELECT COUNT(*) FROM webhook_attempts WHERE event_id <> $1", "").await, 0);
    assert_eq!(count(&app, "SELECT COUNT(*) FROM poll_votes WHERE id <> $1", "").await, 0);
    for file in &seeded.files {
        assert_eq!(app.state.sender().media.get(file).await.unwrap(), None, "{file} removed");
    }
    for (id, before) in seeded.kept.iter().zip(&kept_before) {
        assert_eq!(&rows_of(&app, id).await, before, "{id} kept with its rows");
    }
    assert_eq!(count(&app, "SELECT COUNT(*) FROM opt_outs WHERE id = $1", "opt_1").await, 1);
    assert_eq!(count(&app, "SELECT COUNT(*) FROM conversations WHERE id = $1", &conversation).await, 1);
    assert_eq!(count(&app, "SELECT COUNT(*) FROM contacts WHERE phone = $1", FRIEND).await, 1);

    // The conversation lists and reads as before, with the messages that are left.
    let list = app.get("/conversations", &app.org.key).await.expect(200);
    assert!(list["data"].as_array().unwrap().iter().any(|c| c["id"] == conversation.as_str()), "{list}");
    let thread = app.get(&format!("/messages?conversation_id={conversation}"), &app.org.key).await.expect(200);
    let ids: Vec<&str> = thread["data"].as_array().unwrap().iter().map(|m| m["id"].as_str().unwrap()).collect();
    for id in &seeded.kept {
        assert!(ids.contains(&id.as_str()), "{id} in {ids:?}");
    }
    assert!(seeded.gone.iter().all(|id| !ids.contains(&id.as_str())));

    // The replay of the keyed send answers with its message, as before.
    let replay = app
        .client
        .post(app.url("/messages"))
        .bearer_auth(&app.org.key)
        .header("Idempotency-Key", "kept-key")
        .json(&json!({"to": FRIEND, "body": "keyed"}))
        .send()
        .await
        .unwrap()
        .json::<Value>()
        .await
        .unwrap();
    assert_eq!(replay["message"]["id"], seeded.kept[2].as_str());

    // A second pass finds nothing more.
    let again =
        msgline::testing::workers::retention::purge(app.state.sender(), seeded.cutoff, seeded.cutoff + 2 * HOUR_MS)
            .await
            .unwrap();
    assert_eq!((again.messages, again.files), (0, 0), "{again:?}");
}

/// An event older than the cutoff whose webhook delivery is still being retried stays, with the
/// delivery, until it is settled; the message's other events go.
#[tokio::test]
async fn retention_keeps_an_event_whose_webhook_delivery_is_still_retrying() {
    let app = spawn_app_with(|c| c.feed_retention_hours = 1).await;
    app.keep_events().await;
    let _line = app.default_line().await;
    let id = delivered(&app, "retried").await;
    exec(
        &app,
        "INSERT INTO webhook_deliveries (id, org_id, webhook_id, event_id, state, attempts, next_attempt_at, \
         created_at, updated_at) \
         SELECT 'whd_pending', e.org_id, w.id, e.id, 'pending', 3, 9000000000000, 0, 0 FROM events e, webhooks w \
         WHERE e.message_id = $1 AND e.type = 'messaging.message.delivered'",
        &[&id],
    )
    .await;
    let cutoff = msgline::clock::now_ms() + 1;
    eventually(5, "the clock to pass the cutoff", || async { (msgline::clock::now_ms() > cutoff).then_some(()) }).await;
    fanned_out(&app).await;

    msgline::testing::workers::retention::purge(app.state.sender(), cutoff, cutoff + 2 * HOUR_MS).await.unwrap();

    assert_eq!(count(&app, "SELECT COUNT(*) FROM messages WHERE id = $1", &id).await, 0);
    assert_eq!(app.event_types(&id).await, ["messaging.message.delivered"]);
    assert_eq!(count(&app, "SELECT COUNT(*) FROM webhook_deliveries WHERE id = $1", "whd_pending").await, 1);
}

/// Unset, the janitor's pass deletes nothing; set to a day, it keeps today's messages.
#[tokio::test]
async fn retention_unset_deletes_nothing_and_a_day_keeps_todays_messages() {
    for days in [None, Some(1)] {
        let app = spawn_app_with(|c| c.retention_days = days).await;
        app.keep_events().await;
        let _line = app.default_line().await;
        let id = delivered(&app, "today").await;
        let purged = msgline::testing::workers::retention::run_once(app.state.sender()).await.unwrap();
        assert_eq!(purged, Default::default(), "{days:?}");
        assert_eq!(count(&app, "SELECT COUNT(*) FROM messages WHERE id = $1", &id).await, 1);
        assert!(!app.event_types(&id).await.is_empty());
    }
}

/// `MSGLINE_RETENTION_DAYS=0` is refused with a sentence saying why.
#[test]
fn retention_of_zero_days_is_refused() {
    let config = msgline::Config { retention_days: Some(0), ..Default::default() };
    let error = config.validate().unwrap_err().to_string();
    assert!(error.contains("MSGLINE_RETENTION_DAYS must be at least 1"), "{error}");
}

/// Each batch finds its messages and events through their primary keys, from the last id the
/// batch before took, and the rows that hang from an event through the index made for it: no
/// batch reads a whole table while it holds SQLite's write lock.
#[tokio::test]
async fn retention_batches_find_their_rows_through_indexes() {
    let app = spawn_app().await;
    let fill = |sql: &str| {
        sql.replace("$1", "'msg_0'")
            .replace("$2", "'msg_1'")
            .replace("$3", "1000")
            .replace("$4", "1000")
            .replace("$5", "500")
    };
    let messages = plan_of(app.db(), true, &fill(&msgline::testing::db::retention::messages_batch())).await;
    let events = plan_of(app.db(), true, &fill(msgline::testing::db::retention::EVENTS_BATCH)).await;
    let (messages_key, events_key) = match app.db().backend() {
        msgline::Backend::Sqlite => {
            ("sqlite_autoindex_messages_1 (id>? AND id<?)", "sqlite_autoindex_events_1 (id>? AND id<?)")
        }
        msgline::Backend::Postgres => ("messages_pkey", "events_pkey"),
    };
    assert!(messages.iter().any(|line| line.contains(messages_key)), "{messages:#?}");
    assert!(events.iter().any(|line| line.contains(events_key)), "{events:#?}");
    assert!(events.iter().any(|line| line.contains("webhook_deliveries_by_event")), "{events:#?}");
}
