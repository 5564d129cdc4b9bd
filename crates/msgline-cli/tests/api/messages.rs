//! POST /messages, the delivery lifecycle and GET /messages, with `msgline sim` as the line.

use serde_json::{Value, json};

use crate::{
    helpers::{eventually, spawn_app, spawn_app_with},
    simline::LineSpec,
};

const FRIEND: &str = "+12015550123";

/// The events of a message that went all the way to `delivered`, in order.
const DELIVERED: [&str; 4] = [
    "messaging.message.queued",
    "messaging.message.submitted",
    "messaging.message.sent",
    "messaging.message.delivered",
];

fn hello() -> Value {
    json!({"to": FRIEND, "body": "Hello"})
}

#[tokio::test]
async fn an_accepted_send_goes_queued_submitted_sent_delivered_and_reaches_the_phone_once() {
    let app = spawn_app().await;
    app.keep_events().await;
    let line = app.default_line().await;
    let body = app.post("/messages", &app.org.key, hello()).await.expect(202);
    let message = &body["message"];
    assert_eq!(message["status"], "queued");
    assert_eq!(message["direction"], "outbound");
    assert_eq!(message["line_id"], line.line_id.as_str());
    assert_eq!(body["duplicate"], false);
    assert_eq!(body["delivery_unknown"], false);
    let id = message["id"].as_str().unwrap();

    let done = app.wait_for_message(&app.org.key, id, "delivered", |m| m["status"] == "delivered").await;
    assert!(done["submitted_at"].is_string() && done["sent_at"].is_string() && done["delivered_at"].is_string());
    assert_eq!(app.event_types(id).await, DELIVERED);
    let sent = line.sent_with_id(id).await;
    assert_eq!(sent.len(), 1);
    assert_eq!(sent[0]["to"], json!([FRIEND]));
    assert_eq!(sent[0]["body"], "Hello");
    // The sim reaches every number over iMessage unless told otherwise.
    assert_eq!(sent[0]["channel"], "imessage");

    let attempts = app.get(&format!("/events?message_id={id}"), &app.org.key).await.expect(200);
    let attempts = attempts["data"].as_array().unwrap();
    assert_eq!(attempts.len(), 1);
    assert_eq!(attempts[0]["outcome"], "accepted");
    assert_eq!(attempts[0]["attempt"], 1);
    assert_eq!(attempts[0]["http_status"], 202);
    assert!(attempts[0]["latency_ms"].is_i64());
}

#[tokio::test]
async fn the_send_creates_the_contact_and_the_conversation_and_later_sends_reuse_them() {
    let app = spawn_app().await;
    let _line = app.default_line().await;
    let first = app.post("/messages", &app.org.key, hello()).await.expect(202);
    let contact_id = first["message"]["contact_id"].as_str().unwrap().to_string();
    let conversation_id = first["message"]["conversation_id"].as_str().unwrap().to_string();
    let contact = app.get(&format!("/contacts/{contact_id}"), &app.org.key).await.expect(200);
    assert_eq!(contact["phone"], FRIEND);

    let by_contact =
        app.post("/messages", &app.org.key, json!({"contact_id": contact_id, "body": "2"})).await.expect(202);
    assert_eq!(by_contact["message"]["conversation_id"], conversation_id.as_str());
    let by_conversation =
        app.post("/messages", &app.org.key, json!({"conversation_id": conversation_id, "body": "3"})).await.expect(202);
    assert_eq!(by_conversation["message"]["contact_id"], contact_id.as_str());

    let thread = app.get(&format!("/messages?conversation_id={conversation_id}"), &app.org.key).await.expect(200);
    let bodies: Vec<&str> = thread["data"].as_array().unwrap().iter().map(|m| m["body"].as_str().unwrap()).collect();
    assert_eq!(bodies, ["3", "2", "Hello"], "newest first");
}

#[tokio::test]
async fn a_national_number_needs_default_country_and_an_sms_only_number_gets_sms() {
    let app = spawn_app().await;
    let org = app.org.clone();
    let line = app
        .sim_line(LineSpec {
            e164: "+12015550100",
            org: Some(&org),
            sim_args: &["--sms-only", "+12015550124"],
            start: true,
        })
        .await;
    app.post("/messages", &app.org.key, json!({"to": "(201) 555-0124", "body": "x"})).await.expect_error(
        400,
        "invalid_request",
        Some("to"),
    );
    let sent = app
        .post("/messages", &app.org.key, json!({"to": "(201) 555-0124", "default_country": "US", "body": "x"}))
        .await
        .expect(202);
    assert_eq!(sent["message"]["channel"], "sms");
    let id = sent["message"]["id"].as_str().unwrap();
    app.wait_for_message(&app.org.key, id, "delivered", |m| m["status"] == "delivered").await;
    assert_eq!(line.sent_with_id(id).await[0]["channel"], "sms");
    // An explicit channel is used as given.
    let explicit = app.post("/messages", &app.org.key, json!({"to": FRIEND, "channel": "sms", "body": "y"})).await;
    assert_eq!(explicit.expect(202)["message"]["channel"], "sms");
}

#[tokio::test]
async fn invalid_sends_are_400_naming_the_field_and_write_nothing() {
    let app = spawn_app().await;
    let _line = app.default_line().await;
    let key = &app.org.key;
    let cases = [
        (json!({"to": FRIEND}), "body"),
        (json!({"to": FRIEND, "body": ""}), "body"),
        (json!({"to": FRIEND, "body": "x".repeat(10_001)}), "body"),
        (json!({"body": "x"}), "to"),
        (json!({"to": "not a number", "body": "x"}), "to"),
        (json!({"to": FRIEND, "body": "x", "channel": "fax"}), "channel"),
        (json!({"to": FRIEND, "body": 5}), "body"),
        (json!({"to": FRIEND, "body": "x", "from": "+12015550100", "line_e164": "+12015550101"}), "from"),
        (json!({"to": FRIEND, "body": "x", "default_country": "ZZ"}), "default_country"),
    ];
    for (request, field) in cases {
        app.post("/messages", key, request.clone()).await.expect_error(400, "invalid_request", Some(field));
    }
    let listed = app.get("/messages", key).await.expect(200);
    assert_eq!(listed["data"].as_array().unwrap().len(), 0);
    // The longest body is accepted.
    app.post("/messages", key, json!({"to": FRIEND, "body": "x".repeat(10_000)})).await.expect(202);
}

#[tokio::test]
async fn recipients_that_disagree_are_400_and_unknown_ones_are_404() {
    let app = spawn_app().await;
    let _line = app.default_line().await;
    let key = &app.org.key;
    let first = app.post("/messages", key, hello()).await.expect(202);
    let contact_id = first["message"]["contact_id"].as_str().unwrap();
    app.post("/messages", key, json!({"to": "+12015550125", "contact_id": contact_id, "body": "x"}))
        .await
        .expect_error(400, "invalid_request", Some("contact_id"));
    app.post("/messages", key, json!({"contact_id": "ct_01m80b6h6e744vr7hxxgt73870", "body": "x"})).await.expect_error(
        404,
        "not_found",
        Some("contact_id"),
    );
    app.post("/messages", key, json!({"conversation_id": "conv_01m80b6h6e744vr7hxxgt73870", "body": "x"}))
        .await
        .expect_error(404, "not_found", Some("conversation_id"));
    app.post("/messages", key, json!({"to": FRIEND, "line_id": "line_01m80b6h6e744vr7hxxgt73870", "body": "x"}))
        .await
        .expect_error(404, "not_found", Some("line_id"));
}

#[tokio::test]
async fn the_line_is_the_named_one_else_the_keys_else_the_only_one() {
    let app = spawn_app().await;
    let org = app.org.clone();
    let first = app.default_line().await;
    // One usable line: chosen without being named.
    app.post("/messages", &org.key, hello()).await.expect(202);
    let second = app.sim_line(LineSpec { e164: "+12015550101", org: Some(&org), sim_args: &[], start: true }).await;
    // Two: it must be named.
    app.post("/messages", &org.key, hello()).await.expect_error(400, "invalid_request", Some("line_id"));
    let by_from = app.post("/messages", &org.key, json!({"to": FRIEND, "from": "+12015550101", "body": "x"})).await;
    assert_eq!(by_from.expect(202)["message"]["line_id"], second.line_id.as_str());
    let by_id = app.post("/messages", &org.key, json!({"to": FRIEND, "line_id": first.line_id, "body": "x"})).await;
    assert_eq!(by_id.expect(202)["message"]["line_id"], first.line_id.as_str());
    // A line-bound key uses its line, and naming another is line_mismatch.
    let bound = app.create_key(&org, &["messaging_send", "messaging_read"], Some(&second.line_id)).await;
    let implicit = app.post("/messages", &bound, hello()).await.expect(202);
    assert_eq!(implicit["message"]["line_id"], second.line_id.as_str());
    app.post("/messages", &bound, json!({"to": FRIEND, "line_id": first.line_id, "body": "x"})).await.expect_error(
        409,
        "line_mismatch",
        None,
    );
}

#[tokio::test]
async fn sending_needs_the_messaging_send_scope() {
    let app = spawn_app().await;
    let _line = app.default_line().await;
    let reader = app.create_key(&app.org, &["messaging_read"], None).await;
    app.post("/messages", &reader, hello()).await.expect_error(403, "missing messaging_send scope", None);
    let no_key = app.request(reqwest::Method::POST, "/messages", None, Some(hello())).await;
    no_key.expect_error(401, "unauthorized", None);
}

#[tokio::test]
async fn the_61st_send_inside_a_minute_is_rate_limited() {
    let app = spawn_app().await;
    let _line = app.default_line().await;
    // GCRA refills one send a second: a run slower than a second earns one more per second.
    let started = std::time::Instant::now();
    let mut accepted = 0;
    let limited = loop {
        let answer = app.post("/messages", &app.org.key, json!({"to": FRIEND, "body": format!("{accepted}")})).await;
        if answer.status == 429 {
            break answer;
        }
        assert_eq!(answer.status, 202, "send {accepted}: {}", answer.body);
        assert!(answer.header("ratelimit").unwrap().contains("\"send\""));
        accepted += 1;
        assert!(accepted <= 70, "no limit after {accepted} sends");
    };
    let earned = started.elapsed().as_secs() as usize;
    assert!((60..=60 + earned + 1).contains(&accepted), "{accepted} accepted in {:?}", started.elapsed());
    let retry_after = limited.header("retry-after").unwrap().parse::<u64>().unwrap();
    let body = limited.expect_error(429, "rate_limited", None);
    assert!(body["retry_after"].as_u64().unwrap() >= 1 && retry_after >= 1);
    // Reads still pass: the send policy is for POST /messages only.
    app.get("/messages", &app.org.key).await.expect(200);
}

#[tokio::test]
async fn a_line_that_refuses_fails_the_message_with_its_reason() {
    let app = spawn_app().await;
    app.keep_events().await;
    let org = app.org.clone();
    let line = app
        .sim_line(LineSpec { e164: "+12015550100", org: Some(&org), sim_args: &["--mode", "reject"], start: true })
        .await;
    let sent = app.post("/messages", &app.org.key, hello()).await.expect(202);
    let id = sent["message"]["id"].as_str().unwrap();
    let failed = app.wait_for_message(&app.org.key, id, "failed", |m| m["status"] == "failed").await;
    assert!(failed["error"].as_str().unwrap().contains("refused"), "{failed}");
    assert_eq!(app.event_types(id).await, ["messaging.message.queued", "messaging.message.failed"]);
    let attempts = app.get(&format!("/events?message_id={id}"), &app.org.key).await.expect(200);
    assert_eq!(attempts["data"][0]["outcome"], "rejected");
    assert_eq!(attempts["data"][0]["http_status"], 422);
    assert!(line.sent().await.is_empty());
}

#[tokio::test]
async fn a_timeout_makes_the_message_unknown_until_the_reconciler_learns_the_outcome() {
    let app = spawn_app_with(|c| c.bridge_timeout_ms = 300).await;
    app.keep_events().await;
    let org = app.org.clone();
    let line = app
        .sim_line(LineSpec { e164: "+12015550100", org: Some(&org), sim_args: &["--mode", "timeout"], start: true })
        .await;
    let sent = app.post("/messages", &app.org.key, hello()).await.expect(202);
    let id = sent["message"]["id"].as_str().unwrap();
    let settled = app.wait_for_message(&app.org.key, id, "delivered", |m| m["status"] == "delivered").await;
    assert_eq!(settled["delivery_unknown"], false);
    let types = app.event_types(id).await;
    assert_eq!(
        types,
        [
            "messaging.message.queued",
            "messaging.message.unknown",
            "messaging.message.submitted",
            "messaging.message.sent",
            "messaging.message.delivered"
        ]
    );
    // Exactly one call: a timeout is never followed by a blind resend.
    let attempts = app.get(&format!("/events?message_id={id}"), &app.org.key).await.expect(200);
    let attempts = attempts["data"].as_array().unwrap();
    assert_eq!(attempts.len(), 1);
    assert_eq!(attempts[0]["outcome"], "timeout");
    assert_eq!(line.sent_with_id(id).await.len(), 1);
}

/// A send that finds a dispatcher slot free calls the line from its own request, its message
/// written already claimed; one that finds every slot taken leaves its message queued for the
/// dispatcher. Either way each message reaches the line once.
#[tokio::test]
async fn with_every_dispatch_slot_taken_a_send_waits_queued_and_is_sent_once_a_slot_frees() {
    let app = spawn_app_with(|c| {
        c.bridge_timeout_ms = 300;
        c.dispatch_concurrency = 1;
    })
    .await;
    let org = app.org.clone();
    // Every call holds the one slot for the bridge timeout.
    let line = app
        .sim_line(LineSpec { e164: "+12015550100", org: Some(&org), sim_args: &["--mode", "timeout"], start: true })
        .await;
    let mut ids = Vec::new();
    for i in 0..3 {
        let sent = app.post("/messages", &app.org.key, json!({"to": FRIEND, "body": format!("in turn {i}")}));
        ids.push(sent.await.expect(202)["message"]["id"].as_str().unwrap().to_string());
    }
    let state_of = async |id: &str| {
        // A claim is on the row, or (PostgreSQL, a send that calls its line itself) apart.
        sqlx::query_scalar::<_, Option<String>>(
            "SELECT COALESCE(outbox_state, (SELECT 'claimed' FROM message_claims c WHERE c.message_id = m.id)) \
             FROM messages m WHERE id = $1",
        )
        .bind(id)
        .fetch_one(app.db().writer_for_tests())
        .await
        .unwrap()
    };
    assert_eq!(state_of(&ids[0]).await.as_deref(), Some("claimed"), "the first send took the slot");
    assert_eq!(state_of(&ids[1]).await.as_deref(), Some("pending"), "the second found none free");
    for id in &ids {
        app.wait_for_message(&app.org.key, id, "delivered", |m| m["status"] == "delivered").await;
        assert_eq!(line.sent_with_id(id).await.len(), 1, "{id} reached the line once");
    }
}

/// The claim of a send that called its line itself ends with the line's answer: on PostgreSQL
/// it was a row of its own, and the answer leaves neither that row nor an outbox state on the
/// message (on SQLite the claim was the row's state).
#[tokio::test]
async fn a_send_answered_by_its_line_leaves_no_claim_behind() {
    let app = spawn_app().await;
    let line = app.default_line().await;
    let mut ids = Vec::new();
    for i in 0..5 {
        let sent = app.post("/messages", &app.org.key, json!({"to": FRIEND, "body": format!("claimed {i}")}));
        ids.push(sent.await.expect(202)["message"]["id"].as_str().unwrap().to_string());
    }
    for id in &ids {
        app.wait_for_message(&app.org.key, id, "delivered", |m| m["status"] == "delivered").await;
        assert_eq!(line.sent_with_id(id).await.len(), 1, "{id} reached the line once");
    }
    let count =
        async |sql: &str| sqlx::query_scalar::<_, i64>(sql).fetch_one(app.db().writer_for_tests()).await.unwrap();
    assert_eq!(count("SELECT COUNT(*) FROM message_claims").await, 0);
    assert_eq!(count("SELECT COUNT(*) FROM messages WHERE outbox_state IS NOT NULL").await, 0);
}

#[tokio::test]
async fn the_unknown_state_is_visible_while_the_line_cannot_be_asked() {
    let app = spawn_app_with(|c| c.bridge_timeout_ms = 300).await;
    let org = app.org.clone();
    let mut line = app
        .sim_line(LineSpec { e164: "+12015550100", org: Some(&org), sim_args: &["--mode", "timeout"], start: true })
        .await;
    let sent = app.post("/messages", &app.org.key, hello()).await.expect(202);
    let id = sent["message"]["id"].as_str().unwrap().to_string();
    // The line took the message, then went away before anyone could ask it.
    eventually(10, "the send to reach the line", || async { (!line.sent().await.is_empty()).then_some(()) }).await;
    line.kill().await;
    let unknown = app.wait_for_message(&app.org.key, &id, "unknown", |m| m["status"] == "unknown").await;
    assert_eq!(unknown["delivery_unknown"], true);
}

#[tokio::test]
async fn a_line_whose_bridge_is_down_keeps_messages_queued_and_sends_them_when_it_returns() {
    let app = spawn_app().await;
    let org = app.org.clone();
    let mut line = app.sim_line(LineSpec { e164: "+12015550100", org: Some(&org), sim_args: &[], start: false }).await;
    let sent = app.post("/messages", &app.org.key, json!({"to": FRIEND, "channel": "imessage", "body": "later"})).await;
    let id = sent.expect(202)["message"]["id"].as_str().unwrap().to_string();
    let errors = eventually(10, "two failed attempts", || async {
        let attempts = app.get(&format!("/events?message_id={id}"), &app.org.key).await.expect(200);
        let attempts = attempts["data"].as_array().unwrap().clone();
        (attempts.len() >= 2).then_some(attempts)
    })
    .await;
    assert!(errors.iter().all(|a| a["outcome"] == "error" && a["http_status"].is_null()));
    let message = app.get(&format!("/messages/{id}"), &app.org.key).await.expect(200);
    assert_eq!(message["status"], "queued");

    line.start().await;
    app.wait_for_message(&app.org.key, &id, "delivered", |m| m["status"] == "delivered").await;
    assert_eq!(line.sent_with_id(&id).await.len(), 1);
}

#[tokio::test]
async fn messages_list_filters_by_direction_status_contact_and_pages() {
    let app = spawn_app().await;
    let line = app.default_line().await;
    let mut ids = Vec::new();
    for i in 0..5 {
        let sent =
            app.post("/messages", &app.org.key, json!({"to": FRIEND, "body": format!("m{i}")})).await.expect(202);
        ids.push(sent["message"]["id"].as_str().unwrap().to_string());
    }
    line.inbound(FRIEND, "a reply").await;
    let inbound = app.get("/messages?direction=inbound", &app.org.key).await.expect(200);
    assert_eq!(inbound["data"].as_array().unwrap().len(), 1);
    assert_eq!(inbound["data"][0]["status"], "received");

    let page1 = app.get("/messages?direction=outbound&limit=2", &app.org.key).await.expect(200);
    let cursor = page1["next_cursor"].as_str().unwrap();
    let page2 =
        app.get(&format!("/messages?direction=outbound&limit=2&cursor={cursor}"), &app.org.key).await.expect(200);
    let page3_cursor = page2["next_cursor"].as_str().unwrap();
    let page3 =
        app.get(&format!("/messages?direction=outbound&limit=2&cursor={page3_cursor}"), &app.org.key).await.expect(200);
    let seen: Vec<String> = [&page1, &page2, &page3]
        .iter()
        .flat_map(|p| p["data"].as_array().unwrap().iter().map(|m| m["id"].as_str().unwrap().to_string()))
        .collect();
    ids.reverse();
    assert_eq!(seen, ids);
    assert!(page3["next_cursor"].is_null());

    app.get("/messages?direction=sideways", &app.org.key).await.expect_error(400, "invalid_request", Some("direction"));
    app.get("/messages?status=lost", &app.org.key).await.expect_error(400, "invalid_request", Some("status"));
    app.get("/messages/msg_01m80b6h6e744vr7hxxgt73872", &app.org.key).await.expect_error(404, "not_found", None);
}

#[tokio::test]
async fn concurrent_first_sends_to_a_new_recipient_share_one_contact_and_one_conversation() {
    let app = spawn_app().await;
    let line = app.default_line().await;
    // No key and a recipient never seen: each request creates the contact and the conversation
    // if nobody has, and the ones that lose the race find the winner's.
    let requests: Vec<_> = (0..20)
        .map(|i| {
            app.client
                .post(app.url("/messages"))
                .bearer_auth(&app.org.key)
                .json(&json!({"to": "+12015550177", "body": format!("first {i}")}))
                .send()
        })
        .collect();
    let mut conversations = std::collections::HashSet::new();
    let mut contacts = std::collections::HashSet::new();
    let mut ids = Vec::new();
    for response in futures_util::future::join_all(requests).await {
        let response = response.unwrap();
        assert_eq!(response.status().as_u16(), 202);
        let body: Value = response.json().await.unwrap();
        conversations.insert(body["message"]["conversation_id"].as_str().unwrap().to_string());
        contacts.insert(body["message"]["contact_id"].as_str().unwrap().to_string());
        ids.push(body["message"]["id"].as_str().unwrap().to_string());
    }
    assert_eq!(conversations.len(), 1, "{conversations:?}");
    assert_eq!(contacts.len(), 1, "{contacts:?}");
    let listed = app.get("/contacts", &app.org.key).await.expect(200);
    assert_eq!(listed["data"].as_array().unwrap().len(), 1, "{listed}");
    let listed = app.get("/conversations", &app.org.key).await.expect(200);
    assert_eq!(listed["data"].as_array().unwrap().len(), 1, "{listed}");
    let conversation = conversations.into_iter().next().unwrap();
    let listed =
        app.get(&format!("/messages?conversation_id={conversation}&limit=100"), &app.org.key).await.expect(200);
    assert_eq!(listed["data"].as_array().unwrap().len(), 20);
    for id in &ids {
        app.wait_for_message(&app.org.key, id, "delivered", |m| m["status"] == "delivered").await;
    }
    assert_eq!(line.sent().await.len(), 20);
}

#[tokio::test]
async fn a_burst_of_concurrent_sends_gives_each_message_its_own_events_attempt_and_delivery() {
    // Limits high enough for the burst and for reading each message back.
    let app = spawn_app_with(|config| {
        config.rate_limit_per_minute = 10_000;
        config.send_rate_limit_per_minute = 10_000;
    })
    .await;
    app.keep_events().await;
    let line = app.default_line().await;
    // Requests in flight together share commits (and on PostgreSQL, statements): each still
    // gets its own message, one event per status, one attempt and one delivery.
    let phone = |i: usize| format!("+120155502{:02}", i % 6);
    let requests: Vec<_> = (0..48)
        .map(|i| {
            let mut request = app.client.post(app.url("/messages")).bearer_auth(&app.org.key);
            if i % 2 == 0 {
                request = request.header("Idempotency-Key", format!("burst-{i}"));
            }
            request.json(&json!({"to": phone(i), "body": format!("burst {i}")})).send()
        })
        .collect();
    let mut sent = Vec::new();
    for response in futures_util::future::join_all(requests).await {
        let response = response.unwrap();
        assert_eq!(response.status().as_u16(), 202);
        let body: Value = response.json().await.unwrap();
        sent.push(body["message"].clone());
    }
    let ids: std::collections::HashSet<String> = sent.iter().map(|m| m["id"].as_str().unwrap().to_string()).collect();
    assert_eq!(ids.len(), 48);
    for id in &ids {
        app.wait_for_message(&app.org.key, id, "delivered", |m| m["status"] == "delivered").await;
        assert_eq!(app.event_types(id).await, DELIVERED, "{id}");
        let attempts = app.get(&format!("/events?message_id={id}"), &app.org.key).await.expect(200);
        assert_eq!(attempts["data"].as_array().unwrap().len(), 1, "{attempts}");
        assert_eq!(line.sent_with_id(id).await.len(), 1, "{id}");
    }
    assert_eq!(line.sent().await.len(), 48);
    // Six conversations, each showing its latest message's time.
    let listed = app.get("/conversations?limit=100", &app.org.key).await.expect(200);
    let conversations = listed["data"].as_array().unwrap();
    assert_eq!(conversations.len(), 6, "{listed}");
    for conversation in conversations {
        let latest = sent
            .iter()
            .filter(|m| m["conversation_id"] == conversation["id"])
            .map(|m| m["created_at"].as_str().unwrap())
            .max()
            .unwrap();
        assert_eq!(conversation["last_message_at"], latest, "{conversation}");
    }
    // A repeated key answers the first request's message.
    let again = app
        .client
        .post(app.url("/messages"))
        .bearer_auth(&app.org.key)
        .header("Idempotency-Key", "burst-4")
        .json(&json!({"to": phone(4), "body": "burst 4"}))
        .send()
        .await
        .unwrap();
    assert_eq!(again.status().as_u16(), 200);
    let again: Value = again.json().await.unwrap();
    assert_eq!(again["message"]["id"], sent[4]["id"]);
}
