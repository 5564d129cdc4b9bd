//! Groups after their creation: renames and participant changes through the line, with the
//! creation's outcomes (applied, unknown then settled, refused) and replays; the rules; changes
//! made on a phone.

use serde_json::{Value, json};

use crate::{
    helpers::{Resp, TestApp, eventually, spawn_app, spawn_app_with},
    simline::{LineSpec, SimLine},
};

const A: &str = "+12015550123";
const B: &str = "+12015550124";
const C: &str = "+12015550125";
const LINE: &str = "+12015550100";

async fn line_with(app: &TestApp, args: &[&str]) -> SimLine {
    let org = app.org.clone();
    app.sim_line(LineSpec { e164: LINE, org: Some(&org), sim_args: args, start: true }).await
}

/// A group of A and B, created.
async fn created_group(app: &TestApp) -> String {
    let created = app
        .post("/groups", &app.org.key, json!({"participants": [A, B], "body": "Hi all", "name": "Trip"}))
        .await
        .expect(201);
    created["group"]["id"].as_str().unwrap().to_string()
}

async fn change(app: &TestApp, method: reqwest::Method, path: &str, key: Option<&str>, body: Value) -> Resp {
    let mut request = app.client.request(method, app.url(path)).bearer_auth(&app.org.key).json(&body);
    if let Some(key) = key {
        request = request.header("Idempotency-Key", key);
    }
    let response = request.send().await.unwrap();
    let (status, headers) = (response.status(), response.headers().clone());
    Resp { status, headers, body: response.json().await.unwrap_or(Value::Null) }
}

async fn rename(app: &TestApp, id: &str, key: Option<&str>, name: &str) -> Resp {
    change(app, reqwest::Method::PATCH, &format!("/groups/{id}"), key, json!({"name": name})).await
}

async fn participants(app: &TestApp, id: &str, key: Option<&str>, body: Value) -> Resp {
    change(app, reqwest::Method::POST, &format!("/groups/{id}/participants"), key, body).await
}

/// The group's `messaging.group.updated` events, oldest first.
async fn updates(app: &TestApp) -> Vec<Value> {
    let rows: Vec<(String,)> = sqlx::query_as(
        "SELECT data FROM events WHERE org_id = $1 AND type = 'messaging.group.updated' ORDER BY created_at, id",
    )
    .bind(&app.org.id)
    .fetch_all(app.db().writer_for_tests())
    .await
    .unwrap();
    rows.into_iter().map(|(data,)| serde_json::from_str(&data).unwrap()).collect()
}

async fn changes_written(app: &TestApp) -> i64 {
    let (n,): (i64,) =
        sqlx::query_as("SELECT COUNT(*) FROM group_changes").fetch_one(app.db().writer_for_tests()).await.unwrap();
    n
}

#[tokio::test]
async fn a_group_is_renamed_and_its_participants_changed_through_the_line_once_per_key() {
    let app = spawn_app().await;
    app.keep_events().await;
    let line = line_with(&app, &[]).await;
    let id = created_group(&app).await;

    let renamed = rename(&app, &id, Some("rename-1"), "Trip (Sat)").await.expect(200);
    assert_eq!(renamed["group"]["name"], "Trip (Sat)");
    assert_eq!(renamed["change"]["status"], "applied");
    assert_eq!(renamed["duplicate"], false);
    let change_id = renamed["change"]["id"].as_str().unwrap().to_string();
    let on_line = line.sent_with_id(&change_id).await;
    assert_eq!(on_line.len(), 1);
    assert_eq!((on_line[0]["kind"].as_str(), on_line[0]["name"].as_str()), (Some("group_change"), Some("Trip (Sat)")));
    assert_eq!(on_line[0]["chat"], id.as_str());
    // The same request again: the same answer, and the line is not asked again.
    let replay = rename(&app, &id, Some("rename-1"), "Trip (Sat)").await;
    assert_eq!(replay.header("idempotent-replayed"), Some("true"));
    let replay = replay.expect(200);
    assert_eq!((replay["duplicate"].clone(), replay["change"]["id"].clone()), (json!(true), json!(change_id)));
    assert_eq!(line.sent_with_id(&change_id).await.len(), 1);
    rename(&app, &id, Some("rename-1"), "Another name").await.expect_error(409, "idempotency_key_reused", None);

    let changed = participants(&app, &id, None, json!({"add": [C], "remove": [A]})).await.expect(200);
    assert_eq!(changed["group"]["participants"], json!([B, C]));
    assert_eq!((changed["change"]["add"].clone(), changed["change"]["remove"].clone()), (json!([C]), json!([A])));
    let sent = line.sent_with_id(changed["change"]["id"].as_str().unwrap()).await;
    assert_eq!((sent[0]["to"].clone(), sent[0]["remove"].clone()), (json!([C]), json!([A])));
    let group = app.get(&format!("/groups/{id}"), &app.org.key).await.expect(200);
    assert_eq!((group["name"].clone(), group["participants"].clone()), (json!("Trip (Sat)"), json!([B, C])));
    // Messages to the group go to its participants as they now are, and an added participant is
    // a contact of the organisation.
    app.post("/messages", &app.org.key, json!({"conversation_id": id, "body": "welcome C"})).await.expect(202);
    let contacts = app.get("/contacts?q=0125", &app.org.key).await.expect(200);
    assert_eq!(contacts["data"][0]["phone"], C);

    let unnamed = rename(&app, &id, None, "").await.expect(200);
    assert!(unnamed["group"]["name"].is_null());
    let events = updates(&app).await;
    assert_eq!(events.len(), 3);
    assert_eq!(events[0]["change"]["id"], change_id.as_str());
    assert_eq!(events[1]["group"]["participants"], json!([B, C]));
    assert!(events[2]["group"]["name"].is_null());
}

#[tokio::test]
async fn changes_that_break_a_rule_are_refused_before_anything_is_written() {
    let app = spawn_app().await;
    let line = line_with(&app, &["--sms-only", "+12015550126"]).await;
    let id = created_group(&app).await;
    let refusals: Vec<(Value, u16, &str, Option<&str>)> = vec![
        (json!({"add": [A]}), 400, "invalid_request", Some("add")),
        (json!({"remove": [C]}), 400, "invalid_request", Some("remove")),
        (json!({"add": [LINE]}), 400, "invalid_request", Some("add")),
        (json!({"remove": [A]}), 400, "invalid_request", Some("remove")),
        (json!({"add": [C], "remove": [C]}), 400, "invalid_request", Some("remove")),
        (json!({}), 400, "invalid_request", Some("add")),
        (json!({"add": ["banana"]}), 400, "invalid_request", Some("add")),
        (
            json!({"add": (10..40).map(|n| format!("+120155502{n:02}")).collect::<Vec<_>>()}),
            400,
            "invalid_request",
            Some("add"),
        ),
        (json!({"add": ["+12015550126"]}), 400, "participants_not_reachable", None),
    ];
    for (body, status, code, field) in refusals {
        let answer = participants(&app, &id, None, body.clone()).await;
        assert_eq!(answer.status.as_u16(), status, "{body}: {}", answer.body);
        answer.expect_error(status, code, field);
    }
    rename(&app, &id, None, &"x".repeat(101)).await.expect_error(400, "invalid_request", Some("name"));
    change(&app, reqwest::Method::PATCH, &format!("/groups/{id}"), None, json!({})).await.expect_error(
        400,
        "invalid_request",
        Some("name"),
    );
    // An opted-out number cannot be added.
    line.inbound(C, "STOP").await;
    participants(&app, &id, None, json!({"add": [C]})).await.expect_error(409, "recipient_opted_out", None);
    // Another organisation's group, a key without the send scope, a key bound to another line.
    let other = app.create_org("Other").await;
    let theirs = app
        .client
        .patch(app.url(&format!("/groups/{id}")))
        .bearer_auth(&other.key)
        .json(&json!({"name": "mine now"}))
        .send()
        .await
        .unwrap();
    assert_eq!(theirs.status(), 404);
    let reader = app.create_key(&app.org, &["messaging_read"], None).await;
    let read_only = app
        .client
        .patch(app.url(&format!("/groups/{id}")))
        .bearer_auth(&reader)
        .json(&json!({"name": "x"}))
        .send()
        .await;
    assert_eq!(read_only.unwrap().status(), 403);
    let org = app.org.clone();
    let second = app.create_line_id("+12015550101", Some(&org)).await;
    let bound = app.create_key(&app.org, &["messaging_send"], Some(&second)).await;
    let elsewhere = app
        .client
        .patch(app.url(&format!("/groups/{id}")))
        .bearer_auth(&bound)
        .json(&json!({"name": "x"}))
        .send()
        .await;
    assert_eq!(elsewhere.unwrap().status(), 404);
    assert_eq!(changes_written(&app).await, 0);
    let group = app.get(&format!("/groups/{id}"), &app.org.key).await.expect(200);
    assert_eq!((group["name"].clone(), group["participants"].clone()), (json!("Trip"), json!([A, B])));
}

#[tokio::test]
async fn a_change_without_an_answer_in_time_is_202_unknown_and_settled_by_asking_the_line() {
    let app = spawn_app_with(|c| c.bridge_timeout_ms = 300).await;
    app.keep_events().await;
    let line = line_with(&app, &[]).await;
    let id = created_group(&app).await;
    line.control("/control/mode", json!({"mode": "timeout"})).await;
    let first = rename(&app, &id, Some("slow-1"), "Late name").await.expect(202);
    assert_eq!(first["change"]["status"], "unknown");
    assert_eq!(first["group"]["name"], "Trip");
    eventually(20, "the rename to be settled", || async {
        let group = app.get(&format!("/groups/{id}"), &app.org.key).await.expect(200);
        (group["name"] == "Late name").then_some(())
    })
    .await;
    let replay = rename(&app, &id, Some("slow-1"), "Late name").await.expect(200);
    assert_eq!(replay["change"]["status"], "applied");
    assert_eq!(line.sent_with_id(first["change"]["id"].as_str().unwrap()).await.len(), 1);
    assert_eq!(updates(&app).await.len(), 1);

    // A refusal fails the change and leaves the group as it was; a replay answers the same.
    line.control("/control/mode", json!({"mode": "reject"})).await;
    let refused = participants(&app, &id, Some("add-c"), json!({"add": [C]})).await;
    let body = refused.expect_error(502, "line_rejected", None);
    assert_eq!(body["change"]["status"], "failed");
    let again = participants(&app, &id, Some("add-c"), json!({"add": [C]})).await;
    assert_eq!(again.status.as_u16(), 502);
    let group = app.get(&format!("/groups/{id}"), &app.org.key).await.expect(200);
    assert_eq!(group["participants"], json!([A, B]));
    assert_eq!(updates(&app).await.len(), 1);
}

#[tokio::test]
async fn a_group_still_being_created_cannot_be_changed() {
    let app = spawn_app_with(|c| c.bridge_timeout_ms = 300).await;
    let mut line = line_with(&app, &["--mode", "timeout"]).await;
    let created =
        app.post("/groups", &app.org.key, json!({"participants": [A, B], "body": "Hi all"})).await.expect(202);
    line.kill().await;
    let id = created["group"]["id"].as_str().unwrap();
    rename(&app, id, None, "Too soon").await.expect_error(409, "group_not_created", None);
    assert_eq!(changes_written(&app).await, 0);
}

#[tokio::test]
async fn a_change_made_on_a_phone_updates_the_group_with_an_event() {
    let app = spawn_app().await;
    app.keep_events().await;
    let line = line_with(&app, &[]).await;
    let id = created_group(&app).await;
    line.control("/control/group", json!({"chat": id, "name": "Renamed on a phone", "participants": [B, A, C, LINE]}))
        .await;
    let group = app.get(&format!("/groups/{id}"), &app.org.key).await.expect(200);
    assert_eq!(group["name"], "Renamed on a phone");
    assert_eq!(group["participants"], json!([A, B, C]));
    let events = updates(&app).await;
    assert_eq!(events.len(), 1);
    assert!(events[0]["change"].is_null());
    assert_eq!(events[0]["group"]["participants"], json!([A, B, C]));
    // The same report again changes nothing and writes no event; someone leaving does.
    line.control("/control/group", json!({"chat": id, "participants": [A, B, C]})).await;
    assert_eq!(updates(&app).await.len(), 1);
    line.control("/control/group", json!({"chat": id, "participants": [A, C]})).await;
    let group = app.get(&format!("/groups/{id}"), &app.org.key).await.expect(200);
    assert_eq!(group["participants"], json!([A, C]));
    assert_eq!(updates(&app).await.len(), 2);
}

#[tokio::test]
async fn the_line_leaves_a_group_and_nothing_more_is_sent_to_it_or_changed() {
    let app = spawn_app().await;
    app.keep_events().await;
    let line = line_with(&app, &[]).await;
    let id = created_group(&app).await;
    let leave = format!("/groups/{id}/leave");
    // Leaving cannot be undone: a body with anything but a key is refused, not ignored.
    change(&app, reqwest::Method::POST, &leave, None, json!({"name": "x"})).await.expect_error(
        400,
        "invalid_request",
        None,
    );
    let left = change(&app, reqwest::Method::POST, &leave, Some("leave-1"), json!({})).await.expect(200);
    assert_eq!((left["group"]["state"].clone(), left["change"]["leave"].clone()), (json!("left"), json!(true)));
    assert_eq!(left["group"]["participants"], json!([A, B]));
    let on_line = line.sent_with_id(left["change"]["id"].as_str().unwrap()).await;
    assert_eq!((on_line.len(), on_line[0]["leave"].clone()), (1, json!(true)));
    let replay = change(&app, reqwest::Method::POST, &leave, Some("leave-1"), json!({})).await.expect(200);
    assert_eq!(replay["duplicate"], true);

    app.post("/messages", &app.org.key, json!({"conversation_id": id, "body": "anyone?"})).await.expect_error(
        409,
        "group_left",
        Some("conversation_id"),
    );
    rename(&app, &id, None, "Too late").await.expect_error(409, "group_left", None);
    change(&app, reqwest::Method::POST, &leave, None, json!({})).await.expect_error(409, "group_left", None);
    assert_eq!(app.get(&format!("/groups/{id}"), &app.org.key).await.expect(200)["state"], "left");
    assert_eq!(updates(&app).await.len(), 1);
}
