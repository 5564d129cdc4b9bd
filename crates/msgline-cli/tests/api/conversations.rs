//! `GET /conversations` (filters `line_id`, `contact_id`) and `GET /conversations/{id}`.
//! Conversations are made through the library until sending exists.

use serde_json::Value;

use crate::helpers::{TestApp, ids, spawn_app};

/// The conversation ids a list query returns with the org's admin key.
async fn listed(app: &TestApp, query: &str) -> Vec<String> {
    ids(&app.get(&format!("/conversations{query}"), &app.org.key).await.expect(200))
}

/// `ids` newest first, as lists order them.
fn newest_first<S: AsRef<str>>(ids: &[S]) -> Vec<String> {
    let mut ids: Vec<String> = ids.iter().map(|id| id.as_ref().to_string()).collect();
    ids.sort_by(|a, b| b.cmp(a));
    ids
}

#[tokio::test]
async fn a_conversation_is_read_by_id_with_its_participants() {
    let app = spawn_app().await;
    let line = app.create_line_id("+12015550180", Some(&app.org)).await;
    let conversation = app.create_conversation(&app.org, &line, "+12015550123").await;

    let read = app.get(&format!("/conversations/{}", conversation.id), &app.org.key).await.expect(200);
    assert!(conversation.id.starts_with("conv_"), "{read}");
    assert_eq!(read["id"], conversation.id);
    assert_eq!(read["kind"], "direct");
    assert_eq!(read["line_id"], line);
    assert_eq!(read["contact_id"], conversation.contact_id);
    assert_eq!(read["participants"], serde_json::json!(["+12015550123"]));
    assert_eq!(read["name"], Value::Null);
    assert_eq!(read["group_state"], Value::Null);
    assert_eq!(read["last_message_at"], Value::Null);
    assert!(msgline::clock::parse_rfc3339(read["created_at"].as_str().unwrap()).is_some(), "{read}");

    // The contact behind it is a real contact of the organisation.
    let contact = app.get(&format!("/contacts/{}", conversation.contact_id), &app.org.key).await.expect(200);
    assert_eq!(contact["phone"], "+12015550123");

    // Asking again finds the same conversation.
    let again = app.create_conversation(&app.org, &line, "+12015550123").await;
    assert_eq!(again.id, conversation.id);
    assert_eq!(listed(&app, "").await, [conversation.id]);
}

#[tokio::test]
async fn conversations_filter_by_line_and_contact() {
    let app = spawn_app().await;
    let dedicated = app.create_line_id("+12015550181", Some(&app.org)).await;
    let shared = app.create_line_id("+12015550182", None).await;
    let ann_dedicated = app.create_conversation(&app.org, &dedicated, "+12015550123").await;
    let ann_shared = app.create_conversation(&app.org, &shared, "+12015550123").await;
    let bob_dedicated = app.create_conversation(&app.org, &dedicated, "+12015550124").await;
    assert_eq!(ann_dedicated.contact_id, ann_shared.contact_id, "one contact per phone");
    let ann = &ann_dedicated.contact_id;

    let all = [ann_dedicated.id.as_str(), ann_shared.id.as_str(), bob_dedicated.id.as_str()];
    assert_eq!(listed(&app, "").await, newest_first(&all));
    assert_eq!(
        listed(&app, &format!("?line_id={dedicated}")).await,
        newest_first(&[&ann_dedicated.id, &bob_dedicated.id])
    );
    assert_eq!(listed(&app, &format!("?line_id={shared}")).await, [ann_shared.id.as_str()]);
    assert_eq!(listed(&app, &format!("?contact_id={ann}")).await, newest_first(&[&ann_dedicated.id, &ann_shared.id]));
    assert_eq!(listed(&app, &format!("?contact_id={ann}&line_id={shared}")).await, [ann_shared.id.as_str()]);
    assert_eq!(
        listed(&app, &format!("?contact_id={}&line_id={shared}", bob_dedicated.contact_id)).await,
        Vec::<String>::new()
    );
    assert_eq!(listed(&app, "?line_id=line_unknown").await, Vec::<String>::new());
    assert_eq!(listed(&app, "?contact_id=ct_unknown").await, Vec::<String>::new());
    assert_eq!(listed(&app, "?line_id=&contact_id=").await, newest_first(&all), "empty filters are no filters");
}

#[tokio::test]
async fn conversation_lists_page_newest_first() {
    let app = spawn_app().await;
    let line = app.create_line_id("+12015550183", Some(&app.org)).await;
    let mut created = Vec::new();
    for n in 0..5 {
        created.push(app.create_conversation(&app.org, &line, &format!("+1201555014{n}")).await.id);
    }
    let mut paged = Vec::new();
    let mut path = "/conversations?limit=2".to_string();
    loop {
        let page = app.get(&path, &app.org.key).await.expect(200);
        assert!(ids(&page).len() <= 2, "{page}");
        assert!(page["data"].as_array().unwrap().iter().all(|c| c["participants"].as_array().unwrap().len() == 1));
        paged.extend(ids(&page));
        match page["next_cursor"].as_str() {
            Some(cursor) => path = format!("/conversations?limit=2&cursor={cursor}"),
            None => break,
        }
    }
    assert_eq!(paged, newest_first(&created));

    app.get("/conversations?limit=0", &app.org.key).await.expect_error(400, "invalid_request", Some("limit"));
    app.get("/conversations?limit=201", &app.org.key).await.expect_error(400, "invalid_request", Some("limit"));
    app.get("/conversations?cursor=%21", &app.org.key).await.expect_error(400, "invalid_request", Some("cursor"));
}

#[tokio::test]
async fn a_line_bound_key_sees_only_the_conversations_of_its_line() {
    let app = spawn_app().await;
    let own = app.create_line_id("+12015550184", Some(&app.org)).await;
    let other = app.create_line_id("+12015550185", Some(&app.org)).await;
    let mine = app.create_conversation(&app.org, &own, "+12015550123").await;
    let elsewhere = app.create_conversation(&app.org, &other, "+12015550123").await;

    let bound = app.create_key(&app.org, &["messaging_read"], Some(&own)).await;
    assert_eq!(ids(&app.get("/conversations", &bound).await.expect(200)), [mine.id.as_str()]);
    assert_eq!(ids(&app.get(&format!("/conversations?line_id={own}"), &bound).await.expect(200)), [mine.id.as_str()]);
    assert_eq!(
        ids(&app.get(&format!("/conversations?contact_id={}", mine.contact_id), &bound).await.expect(200)),
        [mine.id.as_str()]
    );
    app.get(&format!("/conversations?line_id={other}"), &bound).await.expect_error(409, "line_mismatch", None);
    app.get(&format!("/conversations/{}", mine.id), &bound).await.expect(200);
    app.get(&format!("/conversations/{}", elsewhere.id), &bound).await.expect_error(404, "not_found", None);
}

#[tokio::test]
async fn an_unknown_conversation_is_404() {
    let app = spawn_app().await;
    app.get("/conversations/conv_unknown", &app.org.key).await.expect_error(404, "not_found", None);
}

#[tokio::test]
async fn conversation_routes_need_the_read_scope() {
    let app = spawn_app().await;
    let line = app.create_line_id("+12015550186", Some(&app.org)).await;
    let conversation = app.create_conversation(&app.org, &line, "+12015550123").await;
    let writer = app.create_key(&app.org, &["messaging_send", "messaging_contacts"], None).await;
    app.get("/conversations", &writer).await.expect_error(403, "missing messaging_read scope", None);
    app.get(&format!("/conversations/{}", conversation.id), &writer).await.expect_error(
        403,
        "missing messaging_read scope",
        None,
    );
}
