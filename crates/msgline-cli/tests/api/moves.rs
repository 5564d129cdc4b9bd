//! Status moves made together: a line's report that passes several statuses at once, committed
//! with (or after) another move of the same message.

use msgline::testing::{
    db::{self, Batch, messages::NewMessage},
    domain::lifecycle::{Channel, Direction, MessageKind, MessageStatus},
};
use serde_json::json;

use crate::helpers::{TestApp, TestOrg, spawn_app};

/// A queued outbound message in a new conversation, as written by a send, of an organisation
/// with a webhook endpoint (events are written for such organisations only).
async fn queued(app: &TestApp) -> db::messages::Message {
    app.post("/webhooks", &app.org.key, json!({"url": "https://hooks.example.com/in", "events": ["*"]}))
        .await
        .expect(201);
    let mut batch = Batch::new();
    let message = stage_queued(app, &mut batch, &app.org, "+12015550100", "+12015550123").await;
    app.db().commit(batch).await.expect("the message is written");
    message
}

/// A queued message (as [`queued`]) and the same message once the line has accepted it,
/// committed.
async fn submitted(app: &TestApp) -> (db::messages::Message, db::messages::Message) {
    let message = queued(app).await;
    let mut batch = Batch::new();
    let submitted =
        db::moves::stage_advance_settling(&mut batch, app.db().backend(), &message, MessageStatus::Submitted, None)
            .expect("queued may move to submitted");
    app.db().commit(batch).await.expect("the move commits");
    (message, submitted)
}

/// Stages a queued outbound message of `org` from a new line to a new conversation.
async fn stage_queued(app: &TestApp, batch: &mut Batch, org: &TestOrg, line: &str, to: &str) -> db::messages::Message {
    let line = app.create_line_id(line, Some(org)).await;
    let conversation = app.create_conversation(org, &line, to).await;
    db::messages::stage_insert(
        batch,
        NewMessage {
            fallback: Default::default(),
            org_id: org.id.clone(),
            conversation_id: conversation.id,
            contact_id: Some(conversation.contact_id),
            line_id: line,
            direction: Direction::Outbound,
            channel: Channel::Sms,
            kind: MessageKind::Text,
            body: "hello".into(),
            payload: None,
            status: MessageStatus::Queued,
            agent_id: None,
            attachment: None,
            send_at: None,
            wait: Default::default(),
            from: None,
            to: None,
            extras: Default::default(),
        },
    )
}

#[tokio::test]
async fn a_report_passing_several_statuses_after_another_move_in_the_same_commit_skips_and_repeats_none() {
    let app = spawn_app().await;
    let message = queued(&app).await;
    let backend = app.db().backend();

    // As when the line's `sent` and `delivered` reach the same commit as the dispatcher's record
    // of its answer: both planned from the message as read, queued.
    let mut batch = Batch::new();
    db::moves::stage_advance_settling(&mut batch, backend, &message, MessageStatus::Submitted, None)
        .expect("queued may move to submitted");
    let steps = message.status.steps_to(MessageStatus::Delivered);
    assert_eq!(steps, [MessageStatus::Submitted, MessageStatus::Sent, MessageStatus::Delivered]);
    db::moves::stage_through(&mut batch, backend, &message, &steps, None, None).expect("a move forward");
    app.db().commit(batch).await.expect("the moves commit");

    let now = db::messages::get(app.db(), &app.org.id, &message.id).await.expect("read").expect("the message");
    assert_eq!(now.status, MessageStatus::Delivered);
    assert!(now.submitted_at.is_some() && now.sent_at.is_some() && now.delivered_at.is_some(), "{now:?}");
    let types = db::events::types_for_message(app.db(), &message.id).await.expect("events");
    assert_eq!(
        types,
        [
            "messaging.message.queued",
            "messaging.message.submitted",
            "messaging.message.sent",
            "messaging.message.delivered"
        ],
        "each status once, in order"
    );
}

#[tokio::test]
async fn a_report_passing_several_statuses_moves_its_message_with_an_event_each_and_a_repeat_writes_nothing() {
    let app = spawn_app().await;
    let (message, submitted) = submitted(&app).await;
    let backend = app.db().backend();

    let mut batch = Batch::new();
    let steps = [MessageStatus::Sent, MessageStatus::Delivered];
    let after = db::moves::stage_through(&mut batch, backend, &submitted, &steps, None, None).expect("a move forward");
    app.db().commit(batch).await.expect("the moves commit");
    let now = db::messages::get(app.db(), &app.org.id, &message.id).await.expect("read").expect("the message");
    assert_eq!((now.status, after.status), (MessageStatus::Delivered, MessageStatus::Delivered));
    if backend == db::Backend::Postgres {
        assert_eq!(now.sent_at, now.delivered_at, "both stamped by the one update");
    }
    let types = db::events::types_for_message(app.db(), &message.id).await.expect("events");
    assert_eq!(
        types,
        [
            "messaging.message.queued",
            "messaging.message.submitted",
            "messaging.message.sent",
            "messaging.message.delivered"
        ]
    );

    // The same report again finds the message past it: nothing more is written.
    let mut batch = Batch::new();
    db::moves::stage_through(&mut batch, backend, &submitted, &steps, None, None);
    app.db().commit(batch).await.expect("the repeat commits");
    assert_eq!(db::events::types_for_message(app.db(), &message.id).await.expect("events").len(), 4);
}

#[tokio::test]
async fn a_report_read_in_its_commit_moves_once_and_writes_events_only_where_the_organisation_has_an_endpoint() {
    let app = spawn_app().await;
    let backend = app.db().backend();
    let (message, submitted) = submitted(&app).await;

    // As SQLite's committer plans a callback: from the message as it stands, knowing the
    // organisation has an endpoint. One update through both statuses, an event for each.
    let steps = [MessageStatus::Sent, MessageStatus::Delivered];
    let mut batch = Batch::new();
    db::moves::stage_through(&mut batch, backend, &submitted, &steps, None, Some(true)).expect("a move forward");
    app.db().commit(batch).await.expect("the moves commit");
    let now = db::messages::get(app.db(), &app.org.id, &message.id).await.expect("read").expect("the message");
    assert_eq!(now.status, MessageStatus::Delivered);
    assert_eq!(now.sent_at, now.delivered_at, "both stamped by the one update");
    let types = db::events::types_for_message(app.db(), &message.id).await.expect("events");
    assert_eq!(types.len(), 4, "queued, submitted, sent, delivered: {types:?}");

    // Without an endpoint: the message moves, and no event is written.
    let mut batch = Batch::new();
    db::moves::stage_through(&mut batch, backend, &now, &[MessageStatus::Read], None, Some(false))
        .expect("a move forward");
    app.db().commit(batch).await.expect("the move commits");
    let read = db::messages::get(app.db(), &app.org.id, &message.id).await.expect("read").expect("the message");
    assert_eq!(read.status, MessageStatus::Read);
    assert_eq!(db::events::types_for_message(app.db(), &message.id).await.expect("events").len(), 4);
}

#[tokio::test]
async fn an_event_is_written_in_a_commit_that_also_holds_an_organisation_without_an_endpoint() {
    // SQLite's committer and a PostgreSQL commit ask once per commit whether an organisation
    // has an endpoint: the answer for one organisation must not stand for another's in the
    // same commit, and where there is none the move is made without its events.
    let app = spawn_app().await;
    let backend = app.db().backend();
    let with = queued(&app).await;
    let other = app.create_org("Other").await;
    let mut batch = Batch::new();
    let without = stage_queued(&app, &mut batch, &other, "+12015550111", "+12015550124").await;
    db::moves::stage_advance_settling(&mut batch, backend, &without, MessageStatus::Submitted, None)
        .expect("queued may move to submitted");
    db::moves::stage_advance_settling(&mut batch, backend, &with, MessageStatus::Submitted, None)
        .expect("queued may move to submitted");
    app.db().commit(batch).await.expect("one commit");
    assert!(db::events::types_for_message(app.db(), &without.id).await.expect("events").is_empty());
    // Without its events the move is still made, in full: status, stamp and the job's end.
    for message in [&without, &with] {
        let row = sqlx::query("SELECT status, submitted_at, outbox_state FROM messages WHERE id = $1")
            .bind(&message.id)
            .fetch_one(app.db().writer_for_tests())
            .await
            .expect("the message");
        assert_eq!(sqlx::Row::get::<String, _>(&row, 0), "submitted");
        assert!(sqlx::Row::get::<Option<i64>, _>(&row, 1).is_some());
        assert_eq!(sqlx::Row::get::<Option<String>, _>(&row, 2), None);
    }
    assert_eq!(
        db::events::types_for_message(app.db(), &with.id).await.expect("events"),
        ["messaging.message.queued", "messaging.message.submitted"]
    );
}

#[tokio::test]
async fn a_lines_sent_and_delivered_in_two_callbacks_that_share_a_commit_both_stamp_the_message() {
    // Kannel reports the SMSC's acceptance (`sent`) and the handset's receipt (`delivered`) in
    // two requests, which may share a commit with another message's `delivered`. Planned from
    // where the reports before them leave it, the message's moves must still run in their order.
    let app = spawn_app().await;
    let backend = app.db().backend();
    let (_, other) = submitted(&app).await;
    let mut batch = Batch::new();
    let other = db::moves::stage_advance(&mut batch, backend, &other, MessageStatus::Sent, None).expect("a move");
    app.db().commit(batch).await.expect("the move commits");
    let mut batch = Batch::new();
    let queued = stage_queued(&app, &mut batch, &app.org, "+12015550112", "+12015550125").await;
    let message = db::moves::stage_advance_settling(&mut batch, backend, &queued, MessageStatus::Submitted, None)
        .expect("queued may move to submitted");
    app.db().commit(batch).await.expect("the message is written and submitted");

    let report = |id: &str, status| db::reports::StatusReport { message_id: id.into(), status, reason: None };
    let (a, b, c) = tokio::join!(
        db::reports::apply_reports(app.db(), &other.line_id, vec![report(&other.id, MessageStatus::Delivered)]),
        db::reports::apply_reports(app.db(), &message.line_id, vec![report(&message.id, MessageStatus::Sent)]),
        db::reports::apply_reports(app.db(), &message.line_id, vec![report(&message.id, MessageStatus::Delivered)]),
    );
    assert_eq!((a.unwrap(), b.unwrap(), c.unwrap()), (vec![true], vec![true], vec![true]), "each report moved");

    let now = db::messages::get(app.db(), &app.org.id, &message.id).await.expect("read").expect("the message");
    assert_eq!(now.status, MessageStatus::Delivered);
    assert!(now.sent_at.is_some() && now.delivered_at.is_some(), "both stamped: {now:?}");
    assert_eq!(
        db::events::types_for_message(app.db(), &message.id).await.expect("events"),
        [
            "messaging.message.queued",
            "messaging.message.submitted",
            "messaging.message.sent",
            "messaging.message.delivered"
        ]
    );
    let other = db::messages::get(app.db(), &app.org.id, &other.id).await.expect("read").expect("the message");
    assert_eq!(other.status, MessageStatus::Delivered);
}
