//! `GET /lines` and `GET /lines/{id}`: dedicated lines for their organisation, shared lines for
//! everyone, a line-bound key for its line only.

use std::collections::BTreeSet;

use serde_json::Value;

use crate::helpers::{ids, spawn_app};

fn id_set(list: &Value) -> BTreeSet<String> {
    ids(list).into_iter().collect()
}

fn set<const N: usize>(items: [&String; N]) -> BTreeSet<String> {
    items.into_iter().cloned().collect()
}

/// The customer's view of a line never carries how to reach or impersonate its bridge.
#[track_caller]
fn assert_no_bridge_credentials(line: &Value) {
    for field in ["bridge_url", "bridge_token", "bridge_secret", "bridge_secret_hash", "org_id"] {
        assert!(line.get(field).is_none(), "{field} is not shown: {line}");
    }
}

#[tokio::test]
async fn an_organisation_lists_its_dedicated_lines_and_every_shared_line() {
    let app = spawn_app().await;
    let other = app.create_org("Other").await;
    let own = app.create_line_id("+12015550160", Some(&app.org)).await;
    let theirs = app.create_line_id("+12015550161", Some(&other)).await;
    let shared = app.create_line_id("+12015550162", None).await;

    let mine = app.get("/lines", &app.org.key).await.expect(200);
    assert_eq!(id_set(&mine), set([&own, &shared]));
    assert_eq!(mine["next_cursor"], Value::Null);
    mine["data"].as_array().unwrap().iter().for_each(assert_no_bridge_credentials);
    assert_eq!(id_set(&app.get("/lines", &other.key).await.expect(200)), set([&theirs, &shared]));

    let third = app.create_org("Third").await;
    assert_eq!(id_set(&app.get("/lines", &third.key).await.expect(200)), set([&shared]));
}

#[tokio::test]
async fn a_line_is_read_by_id() {
    let app = spawn_app().await;
    let dedicated = app.create_line_id("+12015550163", Some(&app.org)).await;
    let shared = app.create_line_id("+1 201 555 0164", None).await;

    let line = app.get(&format!("/lines/{dedicated}"), &app.org.key).await.expect(200);
    assert_eq!(line["id"], dedicated);
    assert_eq!(line["e164"], "+12015550163");
    assert_eq!(line["kind"], "dedicated");
    // No bridge runs at that address: never reached, or tried and found offline.
    assert!(line["status"] == "unknown" || line["status"] == "offline", "{line}");
    assert_eq!(line["capabilities"], Value::Null, "capabilities stay unknown until a bridge answers");
    assert!(msgline::clock::parse_rfc3339(line["created_at"].as_str().unwrap()).is_some(), "{line}");
    assert_no_bridge_credentials(&line);

    let line = app.get(&format!("/lines/{shared}"), &app.org.key).await.expect(200);
    assert_eq!(line["kind"], "shared");
    assert_eq!(line["e164"], "+12015550164");
    assert_no_bridge_credentials(&line);

    app.get("/lines/line_unknown", &app.org.key).await.expect_error(404, "not_found", None);
}

#[tokio::test]
async fn another_organisations_dedicated_line_is_not_found() {
    let app = spawn_app().await;
    let other = app.create_org("Other").await;
    let theirs = app.create_line_id("+12015550165", Some(&other)).await;
    app.get(&format!("/lines/{theirs}"), &app.org.key).await.expect_error(404, "not_found", None);
    app.get(&format!("/lines/{theirs}"), &other.key).await.expect(200);
}

#[tokio::test]
async fn a_line_bound_key_sees_only_its_line() {
    let app = spawn_app().await;
    let own = app.create_line_id("+12015550166", Some(&app.org)).await;
    let second = app.create_line_id("+12015550167", Some(&app.org)).await;
    let shared = app.create_line_id("+12015550168", None).await;

    let bound = app.create_key(&app.org, &["messaging_read"], Some(&own)).await;
    let list = app.get("/lines", &bound).await.expect(200);
    assert_eq!(ids(&list), [own.as_str()]);
    assert_eq!(list["next_cursor"], Value::Null);
    app.get(&format!("/lines/{own}"), &bound).await.expect(200);
    app.get(&format!("/lines/{second}"), &bound).await.expect_error(404, "not_found", None);
    app.get(&format!("/lines/{shared}"), &bound).await.expect_error(404, "not_found", None);

    let bound_to_shared = app.create_key(&app.org, &["messaging_read"], Some(&shared)).await;
    assert_eq!(ids(&app.get("/lines", &bound_to_shared).await.expect(200)), [shared.as_str()]);
    app.get(&format!("/lines/{own}"), &bound_to_shared).await.expect_error(404, "not_found", None);
}

#[tokio::test]
async fn line_routes_need_the_read_scope() {
    let app = spawn_app().await;
    let line = app.create_line_id("+12015550169", Some(&app.org)).await;
    let writer = app.create_key(&app.org, &["messaging_send", "messaging_contacts", "messaging_keys"], None).await;
    app.get("/lines", &writer).await.expect_error(403, "missing messaging_read scope", None);
    app.get(&format!("/lines/{line}"), &writer).await.expect_error(403, "missing messaging_read scope", None);
    app.get("/lines/line_unknown", &writer).await.expect_error(403, "missing messaging_read scope", None);
}

#[tokio::test]
async fn line_lists_page_newest_first() {
    let app = spawn_app().await;
    let mut created = Vec::new();
    for n in 0..5 {
        let owner = if n % 2 == 0 { Some(&app.org) } else { None };
        created.push(app.create_line_id(&format!("+1201555017{n}"), owner).await);
    }
    created.sort_by(|a, b| b.cmp(a));

    let mut paged = Vec::new();
    let mut path = "/lines?limit=2".to_string();
    loop {
        let page = app.get(&path, &app.org.key).await.expect(200);
        let page_ids = ids(&page);
        assert!(page_ids.len() <= 2, "{page}");
        paged.extend(page_ids);
        match page["next_cursor"].as_str() {
            Some(cursor) => path = format!("/lines?limit=2&cursor={cursor}"),
            None => break,
        }
    }
    assert_eq!(paged, created);

    let everything = app.get("/lines?limit=200", &app.org.key).await.expect(200);
    assert_eq!(ids(&everything), created);
    assert_eq!(app.get("/lines?limit=", &app.org.key).await.expect(200)["data"].as_array().unwrap().len(), 5);
}

#[tokio::test]
async fn bad_paging_of_lines_is_400_naming_the_parameter() {
    let app = spawn_app().await;
    for limit in ["0", "-1", "201", "ten", "1.5"] {
        app.get(&format!("/lines?limit={limit}"), &app.org.key).await.expect_error(
            400,
            "invalid_request",
            Some("limit"),
        );
    }
    app.get("/lines?cursor=%25%25%25", &app.org.key).await.expect_error(400, "invalid_request", Some("cursor"));
}
