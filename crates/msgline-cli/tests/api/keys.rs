//! API keys: authentication, `GET/POST /keys`, `POST /keys/{id}/rotate`, `DELETE /keys/{id}`.

use reqwest::Method;
use serde_json::{Value, json};

use crate::helpers::{TestApp, eventually, ids, spawn_app};

/// The status a key gets on a plain authenticated read.
async fn status_of(app: &TestApp, key: &str) -> u16 {
    app.get("/lines", key).await.status.as_u16()
}

/// Creates a key through the API as the test organisation's admin key: `(id, secret)`.
async fn new_key(app: &TestApp, body: Value) -> (String, String) {
    let key = app.post("/keys", &app.org.key, body).await.expect(201);
    (key["id"].as_str().unwrap().to_string(), key["key"].as_str().unwrap().to_string())
}

fn ms(timestamp: &Value) -> i64 {
    msgline::clock::parse_rfc3339(timestamp.as_str().expect("a timestamp")).expect("an RFC 3339 timestamp")
}

#[tokio::test]
async fn a_created_key_is_shown_once_works_and_is_listed_without_its_secret() {
    let app = spawn_app().await;
    let created =
        app.post("/keys", &app.org.key, json!({"name": "ci", "scopes": ["messaging_read"]})).await.expect(201);
    let id = created["id"].as_str().unwrap();
    let secret = created["key"].as_str().unwrap();
    assert!(id.starts_with("key_"), "{created}");
    assert!(secret.starts_with("mlk_"), "{created}");
    assert_eq!(created["name"], "ci");
    assert_eq!(created["scopes"], json!(["messaging_read"]));
    assert_eq!(created["line_id"], Value::Null);
    assert!(msgline::clock::parse_rfc3339(created["created_at"].as_str().unwrap()).is_some(), "{created}");

    assert_eq!(status_of(&app, secret).await, 200);

    let list = app.get("/keys", &app.org.key).await.expect(200);
    let listed = list["data"].as_array().unwrap().iter().find(|k| k["id"] == id).expect("the new key is listed");
    assert!(listed.get("key").is_none(), "a listed key carries no secret: {listed}");
    assert_eq!(listed["key_hint"], format!("…{}", &secret[secret.len() - 4..]));
    assert_eq!(listed["scopes"], json!(["messaging_read"]));
    assert!(list.to_string().find(secret).is_none(), "the secret is never listed");
    assert!(ids(&list).contains(&app.org.key_id));
}

#[tokio::test]
async fn a_key_without_a_name_is_named_unnamed() {
    let app = spawn_app().await;
    let created = app.post("/keys", &app.org.key, json!({"scopes": ["messaging_send"]})).await.expect(201);
    assert_eq!(created["name"], "unnamed");
}

#[tokio::test]
async fn creating_a_key_validates_scopes_name_and_line() {
    let app = spawn_app().await;
    let key = &app.org.key;
    for body in [
        json!({"scopes": ["messaging_root"]}),
        json!({"scopes": []}),
        json!({"name": "no scopes"}),
        json!({"scopes": "messaging_read"}),
    ] {
        app.post("/keys", key, body).await.expect_error(400, "invalid_request", Some("scopes"));
    }
    app.post("/keys", key, json!({"name": "n".repeat(101), "scopes": ["messaging_read"]})).await.expect_error(
        400,
        "invalid_request",
        Some("name"),
    );
    app.post("/keys", key, json!({"scopes": ["messaging_read"], "line_id": "line_unknown"})).await.expect_error(
        404,
        "not_found",
        Some("line_id"),
    );
    let other = app.create_org("Other").await;
    let foreign_line = app.create_line_id("+12015550150", Some(&other)).await;
    app.post("/keys", key, json!({"scopes": ["messaging_read"], "line_id": foreign_line})).await.expect_error(
        404,
        "not_found",
        Some("line_id"),
    );
}

#[tokio::test]
async fn a_key_can_be_bound_to_a_dedicated_or_shared_line() {
    let app = spawn_app().await;
    for line in
        [app.create_line_id("+12015550151", Some(&app.org)).await, app.create_line_id("+12015550152", None).await]
    {
        let key =
            app.post("/keys", &app.org.key, json!({"scopes": ["messaging_read"], "line_id": line})).await.expect(201);
        assert_eq!(key["line_id"], line);
        let lines = app.get("/lines", key["key"].as_str().unwrap()).await.expect(200);
        assert_eq!(ids(&lines), [line]);
    }
}

#[tokio::test]
async fn a_key_cannot_grant_or_manage_scopes_it_lacks() {
    let app = spawn_app().await;
    let limited = app.create_key(&app.org, &["messaging_keys", "messaging_read"], None).await;
    app.post("/keys", &limited, json!({"scopes": ["messaging_read", "messaging_send"]})).await.expect_error(
        403,
        "missing messaging_send scope",
        None,
    );
    app.post("/keys", &limited, json!({"scopes": ["messaging_webhooks"]})).await.expect_error(
        403,
        "missing messaging_webhooks scope",
        None,
    );
    let granted = app.post("/keys", &limited, json!({"scopes": ["messaging_read"]})).await.expect(201);
    assert_eq!(granted["scopes"], json!(["messaging_read"]));

    // The admin key carries every scope: the limited key may neither rotate nor revoke it.
    let admin = &app.org.key_id;
    app.post(&format!("/keys/{admin}/rotate"), &limited, json!({})).await.expect_error(
        403,
        "missing messaging_send scope",
        None,
    );
    app.delete(&format!("/keys/{admin}"), &limited).await.expect_error(403, "missing messaging_send scope", None);
    assert_eq!(status_of(&app, &app.org.key).await, 200);
}

#[tokio::test]
async fn key_routes_need_the_keys_scope() {
    let app = spawn_app().await;
    let reader = app.create_key(&app.org, &["messaging_read", "messaging_send", "messaging_contacts"], None).await;
    let admin = &app.org.key_id;
    let missing = "missing messaging_keys scope";
    app.get("/keys", &reader).await.expect_error(403, missing, None);
    app.post("/keys", &reader, json!({"scopes": ["messaging_read"]})).await.expect_error(403, missing, None);
    app.post(&format!("/keys/{admin}/rotate"), &reader, json!({})).await.expect_error(403, missing, None);
    app.delete(&format!("/keys/{admin}"), &reader).await.expect_error(403, missing, None);
}

#[tokio::test]
async fn missing_malformed_and_unknown_keys_are_unauthorized() {
    let app = spawn_app().await;
    app.request(Method::GET, "/lines", None, None).await.expect_error(401, "unauthorized", None);
    let mut tampered = app.org.key.clone().into_bytes();
    tampered[8] = if tampered[8] == b'a' { b'b' } else { b'a' };
    let tampered = String::from_utf8(tampered).unwrap();
    let unknown = msgline::testing::domain::apikey::mint().secret;
    for header in [
        "Bearer".to_string(),
        "Bearer ".to_string(),
        "Bearer nonsense".to_string(),
        format!("Basic {}", app.org.key),
        format!("Token {}", app.org.key),
        app.org.key.clone(),
        format!("Bearer {tampered}"),
        format!("Bearer {}", &app.org.key[..app.org.key.len() - 1]),
        format!("Bearer {unknown}"),
    ] {
        let response = app.client.get(app.url("/lines")).header("authorization", &header).send().await.unwrap();
        assert_eq!(response.status(), 401, "{header}");
        let body: Value = response.json().await.unwrap();
        assert_eq!(body["error"], "unauthorized", "{header}: {body}");
    }
    // Authentication comes before validation and lookups: nothing is revealed without a key.
    app.request(Method::POST, "/contacts", None, Some(json!({}))).await.expect_error(401, "unauthorized", None);
    app.request(Method::GET, "/contacts/ct_unknown", Some(&unknown), None).await.expect_error(
        401,
        "unauthorized",
        None,
    );
}

#[tokio::test]
async fn revoked_and_expired_keys_are_unauthorized() {
    let app = spawn_app().await;
    let (revoked_id, revoked) = new_key(&app, json!({"scopes": ["messaging_read"]})).await;
    assert_eq!(status_of(&app, &revoked).await, 200);
    app.delete(&format!("/keys/{revoked_id}"), &app.org.key).await.expect(200);
    app.get("/lines", &revoked).await.expect_error(401, "unauthorized", None);

    // A key whose end has passed, as a finished grace period leaves it.
    let (expired_id, expired) = new_key(&app, json!({"scopes": ["messaging_read"]})).await;
    sqlx::query("UPDATE api_keys SET expires_at = $1 WHERE id = $2")
        .bind(msgline::clock::now_ms() - 1_000)
        .bind(&expired_id)
        .execute(app.db().writer_for_tests())
        .await
        .unwrap();
    app.get("/lines", &expired).await.expect_error(401, "unauthorized", None);
    let listed = ids(&app.get("/keys", &app.org.key).await.expect(200));
    assert!(!listed.contains(&revoked_id) && !listed.contains(&expired_id), "{listed:?}");
}

#[tokio::test]
async fn a_rotated_key_keeps_working_for_its_grace_period_then_stops() {
    let app = spawn_app().await;
    let line = app.create_line_id("+12015550153", Some(&app.org)).await;
    let (old_id, old) =
        new_key(&app, json!({"name": "worker", "scopes": ["messaging_read", "messaging_keys"], "line_id": line})).await;
    assert_eq!(status_of(&app, &old).await, 200);

    let before = msgline::clock::now_ms();
    let rotated =
        app.post(&format!("/keys/{old_id}/rotate"), &app.org.key, json!({"grace_seconds": 2})).await.expect(201);
    let new_id = rotated["id"].as_str().unwrap();
    let new = rotated["key"].as_str().unwrap();
    assert!(new_id.starts_with("key_") && new_id != old_id, "{rotated}");
    assert!(new.starts_with("mlk_") && new != old, "{rotated}");
    assert_eq!(rotated["name"], "worker");
    assert_eq!(rotated["scopes"], json!(["messaging_read", "messaging_keys"]));
    assert_eq!(rotated["line_id"], line);
    assert_eq!(rotated["previous_key_id"], old_id);
    let ends = ms(&rotated["previous_key_expires_at"]);
    assert!((before + 2_000..=msgline::clock::now_ms() + 2_000).contains(&ends), "{rotated}");

    assert_eq!(status_of(&app, &old).await, 200, "the old key works during the grace period");
    assert_eq!(status_of(&app, new).await, 200);
    eventually(15, "the old key to stop working", || async { (status_of(&app, &old).await == 401).then_some(()) })
        .await;
    let stopped = msgline::clock::now_ms();
    assert!(stopped >= ends, "the old key stopped before its grace period ended");
    // Not a key-cache lifetime later either (the cache keeps keys for 5 s).
    assert!(stopped - ends < 2_000, "the old key worked {} ms past its end", stopped - ends);
    assert_eq!(status_of(&app, new).await, 200);
    let listed = ids(&app.get("/keys", &app.org.key).await.expect(200));
    assert!(listed.contains(&new_id.to_string()) && !listed.contains(&old_id), "{listed:?}");
}

#[tokio::test]
async fn rotating_with_no_grace_revokes_the_old_key_at_once() {
    let app = spawn_app().await;
    let (old_id, old) = new_key(&app, json!({"scopes": ["messaging_read"]})).await;
    assert_eq!(status_of(&app, &old).await, 200);
    let rotated =
        app.post(&format!("/keys/{old_id}/rotate"), &app.org.key, json!({"grace_seconds": 0})).await.expect(201);
    app.get("/lines", &old).await.expect_error(401, "unauthorized", None);
    assert_eq!(status_of(&app, rotated["key"].as_str().unwrap()).await, 200);
    app.post(&format!("/keys/{old_id}/rotate"), &app.org.key, json!({})).await.expect_error(404, "not_found", None);
}

#[tokio::test]
async fn rotating_without_a_body_keeps_the_old_key_for_a_day() {
    let app = spawn_app().await;
    let (old_id, old) = new_key(&app, json!({"scopes": ["messaging_read"]})).await;
    let before = msgline::clock::now_ms();
    let rotated =
        app.request(Method::POST, &format!("/keys/{old_id}/rotate"), Some(&app.org.key), None).await.expect(201);
    let ends = ms(&rotated["previous_key_expires_at"]);
    let day = 86_400_000;
    assert!((before + day..=msgline::clock::now_ms() + day).contains(&ends), "{rotated}");
    assert_eq!(status_of(&app, &old).await, 200);
}

#[tokio::test]
async fn a_key_can_rotate_itself() {
    let app = spawn_app().await;
    let rotated = app
        .post(&format!("/keys/{}/rotate", app.org.key_id), &app.org.key, json!({"grace_seconds": 0}))
        .await
        .expect(201);
    app.get("/lines", &app.org.key).await.expect_error(401, "unauthorized", None);
    assert_eq!(status_of(&app, rotated["key"].as_str().unwrap()).await, 200);
}

#[tokio::test]
async fn rotation_checks_grace_seconds_and_the_key() {
    let app = spawn_app().await;
    let (id, _) = new_key(&app, json!({"scopes": ["messaging_read"]})).await;
    let path = format!("/keys/{id}/rotate");
    for grace in [json!(-1), json!(2_592_001), json!("soon"), json!(1.5)] {
        app.post(&path, &app.org.key, json!({"grace_seconds": grace})).await.expect_error(
            400,
            "invalid_request",
            Some("grace_seconds"),
        );
    }
    let response = app.client.post(app.url(&path)).bearer_auth(&app.org.key).body("{not json").send().await.unwrap();
    assert_eq!(response.status(), 400);
    assert_eq!(response.json::<Value>().await.unwrap()["error"], "invalid_request");
    app.post("/keys/key_unknown/rotate", &app.org.key, json!({})).await.expect_error(404, "not_found", None);
    // The failed attempts left the key as it was: the longest grace is accepted.
    app.post(&path, &app.org.key, json!({"grace_seconds": 2_592_000})).await.expect(201);
}

#[tokio::test]
async fn a_deleted_key_is_unauthorized_at_once_and_leaves_the_list() {
    let app = spawn_app().await;
    let (id, key) = new_key(&app, json!({"name": "doomed", "scopes": ["messaging_read"]})).await;
    assert_eq!(status_of(&app, &key).await, 200);
    let revoked = app.delete(&format!("/keys/{id}"), &app.org.key).await.expect(200);
    assert_eq!(revoked["id"], id);
    assert!(revoked["revoked_at"].is_string(), "{revoked}");
    assert!(revoked.get("key").is_none(), "{revoked}");
    app.get("/lines", &key).await.expect_error(401, "unauthorized", None);
    assert!(!ids(&app.get("/keys", &app.org.key).await.expect(200)).contains(&id));
    app.delete(&format!("/keys/{id}"), &app.org.key).await.expect_error(404, "not_found", None);
    app.post(&format!("/keys/{id}/rotate"), &app.org.key, json!({})).await.expect_error(404, "not_found", None);
    app.delete("/keys/key_unknown", &app.org.key).await.expect_error(404, "not_found", None);
}

#[tokio::test]
async fn key_lists_page_newest_first() {
    let app = spawn_app().await;
    let mut created = vec![app.org.key_id.clone()];
    for n in 0..4 {
        created.push(new_key(&app, json!({"name": format!("k{n}"), "scopes": ["messaging_read"]})).await.0);
    }
    let first = app.get("/keys?limit=2", &app.org.key).await.expect(200);
    assert_eq!(ids(&first).len(), 2);
    let cursor = first["next_cursor"].as_str().expect("more keys follow");
    let second = app.get(&format!("/keys?limit=2&cursor={cursor}"), &app.org.key).await.expect(200);
    let cursor = second["next_cursor"].as_str().expect("more keys follow");
    let third = app.get(&format!("/keys?limit=2&cursor={cursor}"), &app.org.key).await.expect(200);
    assert_eq!(third["next_cursor"], Value::Null);

    let paged: Vec<String> = [first, second, third].iter().flat_map(ids).collect();
    let mut newest_first = created.clone();
    newest_first.sort_by(|a, b| b.cmp(a));
    assert_eq!(paged, newest_first);

    app.get("/keys?limit=0", &app.org.key).await.expect_error(400, "invalid_request", Some("limit"));
    app.get("/keys?limit=201", &app.org.key).await.expect_error(400, "invalid_request", Some("limit"));
    app.get("/keys?cursor=not%20a%20cursor", &app.org.key).await.expect_error(400, "invalid_request", Some("cursor"));
}

#[tokio::test]
async fn a_line_bound_key_manages_only_keys_of_its_line() {
    let app = spawn_app().await;
    let line = app.create_line_id("+12015550154", Some(&app.org)).await;
    let other_line = app.create_line_id("+12015550155", Some(&app.org)).await;
    let bound = app.create_key(&app.org, &["messaging_keys", "messaging_read"], Some(&line)).await;

    let made = app.post("/keys", &bound, json!({"scopes": ["messaging_read"]})).await.expect(201);
    assert_eq!(made["line_id"], line, "a line-bound key makes keys of its line");
    app.post("/keys", &bound, json!({"scopes": ["messaging_read"], "line_id": other_line})).await.expect_error(
        409,
        "line_mismatch",
        None,
    );

    let listed = app.get("/keys", &bound).await.expect(200);
    assert!(listed["data"].as_array().unwrap().iter().all(|k| k["line_id"] == line), "{listed}");
    assert!(ids(&listed).contains(&made["id"].as_str().unwrap().to_string()));
    assert!(!ids(&listed).contains(&app.org.key_id));

    let (unbound_id, _) = app.create_key_with_id(&app.org, &["messaging_read"], None).await;
    app.delete(&format!("/keys/{unbound_id}"), &bound).await.expect_error(404, "not_found", None);
    app.post(&format!("/keys/{unbound_id}/rotate"), &bound, json!({})).await.expect_error(404, "not_found", None);
    app.delete(&format!("/keys/{}", made["id"].as_str().unwrap()), &bound).await.expect(200);
}

#[tokio::test]
async fn key_bodies_over_one_mebibyte_are_refused() {
    let app = spawn_app().await;
    let huge = "x".repeat(1024 * 1024 + 1);
    app.post("/keys", &app.org.key, json!({"name": huge, "scopes": ["messaging_read"]})).await.expect_error(
        413,
        "payload_too_large",
        None,
    );
    app.post(&format!("/keys/{}/rotate", app.org.key_id), &app.org.key, json!({"padding": huge})).await.expect_error(
        413,
        "payload_too_large",
        None,
    );
    assert_eq!(status_of(&app, &app.org.key).await, 200, "the refused rotation left the key alone");
}
