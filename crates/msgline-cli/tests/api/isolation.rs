//! Tenant isolation: one organisation's key never reaches, nor lists, another organisation's
//! contacts, conversations, dedicated lines or keys; it gets 404 as for ids that do not exist.

use serde_json::json;

use crate::helpers::{TestApp, TestConversation, TestOrg, ids, spawn_app};

/// What organisation B owns, for A to probe.
struct Theirs {
    org: TestOrg,
    line: String,
    contact: String,
    conversation: TestConversation,
    key_id: String,
    key: String,
}

async fn another_organisation(app: &TestApp) -> Theirs {
    let org = app.create_org("Organisation B").await;
    let line = app.create_line_id("+12015550190", Some(&org)).await;
    let contact =
        app.post("/contacts", &org.key, json!({"phone": "+12015550123", "name": "Zed Secret"})).await.expect(201);
    let conversation = app.create_conversation(&org, &line, "+12015550123").await;
    let (key_id, key) = app.create_key_with_id(&org, &["messaging_read"], None).await;
    Theirs { org, line, contact: contact["id"].as_str().unwrap().to_string(), conversation, key_id, key }
}

#[tokio::test]
async fn another_organisations_ids_are_not_found() {
    let app = spawn_app().await;
    let b = another_organisation(&app).await;
    let a = &app.org.key;

    app.get(&format!("/contacts/{}", b.contact), a).await.expect_error(404, "not_found", None);
    app.get(&format!("/conversations/{}", b.conversation.id), a).await.expect_error(404, "not_found", None);
    app.get(&format!("/lines/{}", b.line), a).await.expect_error(404, "not_found", None);
    app.delete(&format!("/keys/{}", b.key_id), a).await.expect_error(404, "not_found", None);
    app.post(&format!("/keys/{}/rotate", b.key_id), a, json!({"grace_seconds": 0})).await.expect_error(
        404,
        "not_found",
        None,
    );
    app.delete(&format!("/keys/{}", b.org.key_id), a).await.expect_error(404, "not_found", None);

    // B's things are untouched and B still reaches them.
    app.get("/lines", &b.key).await.expect(200);
    app.get(&format!("/contacts/{}", b.contact), &b.key).await.expect(200);
    app.get(&format!("/conversations/{}", b.conversation.id), &b.key).await.expect(200);
    app.get(&format!("/lines/{}", b.line), &b.key).await.expect(200);
}

#[tokio::test]
async fn another_organisations_rows_never_appear_in_lists() {
    let app = spawn_app().await;
    let b = another_organisation(&app).await;
    let a = &app.org.key;
    let own_line = app.create_line_id("+12015550191", Some(&app.org)).await;
    let own = app.create_conversation(&app.org, &own_line, "+12015550124").await;

    let contacts = app.get("/contacts", a).await.expect(200);
    assert_eq!(ids(&contacts), [own.contact_id.as_str()]);
    assert_eq!(app.get("/contacts?q=zed", a).await.expect(200)["data"], json!([]));
    assert_eq!(app.get("/contacts?q=0123", a).await.expect(200)["data"], json!([]));

    assert_eq!(ids(&app.get("/conversations", a).await.expect(200)), [own.id.as_str()]);
    let by_their_line = app.get(&format!("/conversations?line_id={}", b.line), a).await.expect(200);
    assert_eq!(by_their_line["data"], json!([]));
    let by_their_contact = app.get(&format!("/conversations?contact_id={}", b.contact), a).await.expect(200);
    assert_eq!(by_their_contact["data"], json!([]));

    assert_eq!(ids(&app.get("/lines", a).await.expect(200)), [own_line]);
    let keys = ids(&app.get("/keys", a).await.expect(200));
    assert_eq!(keys, [app.org.key_id.as_str()]);
    assert!(!keys.contains(&b.key_id) && !keys.contains(&b.org.key_id));
}

#[tokio::test]
async fn the_same_phone_is_a_separate_contact_in_each_organisation() {
    let app = spawn_app().await;
    let b = another_organisation(&app).await;
    let ours = app.post("/contacts", &app.org.key, json!({"phone": "+12015550123", "name": "Ann"})).await.expect(201);
    assert_ne!(ours["id"], b.contact);
    let theirs = app.get(&format!("/contacts/{}", b.contact), &b.org.key).await.expect(200);
    assert_eq!(theirs["name"], "Zed Secret", "A's upsert did not touch B's contact");
}

#[tokio::test]
async fn a_key_cannot_be_bound_to_another_organisations_line() {
    let app = spawn_app().await;
    let b = another_organisation(&app).await;
    app.post("/keys", &app.org.key, json!({"scopes": ["messaging_read"], "line_id": b.line})).await.expect_error(
        404,
        "not_found",
        Some("line_id"),
    );
    let refused = msgline::admin::create_key(app.db(), &app.org.id, "messaging_read", Some(&b.line), None).await;
    assert!(refused.is_err(), "the admin path refuses it too");
}
