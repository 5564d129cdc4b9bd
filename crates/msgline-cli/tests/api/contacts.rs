//! `POST /contacts` (upsert by phone), `GET /contacts?q=` and `GET /contacts/{id}`.

use serde_json::{Value, json};

use crate::helpers::{TestApp, ids, spawn_app};

async fn upsert(app: &TestApp, body: Value) -> Value {
    let response = app.post("/contacts", &app.org.key, body).await;
    assert!(matches!(response.status.as_u16(), 200 | 201), "{}: {}", response.status, response.body);
    response.body
}

/// The names of the contacts a search finds, sorted.
async fn search_names(app: &TestApp, q: &str) -> Vec<String> {
    let path = format!("/contacts?q={}", urlencode(q));
    let list = app.get(&path, &app.org.key).await.expect(200);
    let mut names: Vec<String> =
        list["data"].as_array().unwrap().iter().map(|c| c["name"].as_str().unwrap_or("(none)").to_string()).collect();
    names.sort();
    names
}

fn urlencode(text: &str) -> String {
    text.bytes()
        .map(|b| if b.is_ascii_alphanumeric() { (b as char).to_string() } else { format!("%{b:02X}") })
        .collect()
}

#[tokio::test]
async fn creating_a_contact_is_201_and_updating_it_is_200() {
    let app = spawn_app().await;
    let created = app
        .post(
            "/contacts",
            &app.org.key,
            json!({"phone": "+12015550123", "name": "  Ann Lee ", "email": "ann@example.com",
                   "organization": "Acme", "note": "met at the fair", "unknown_field": true}),
        )
        .await
        .expect(201);
    let id = created["id"].as_str().unwrap();
    assert!(id.starts_with("ct_"), "{created}");
    assert_eq!(created["phone"], "+12015550123");
    assert_eq!(created["name"], "Ann Lee", "text fields are trimmed");
    assert_eq!(created["email"], "ann@example.com");
    assert_eq!(created["organization"], "Acme");
    assert_eq!(created["note"], "met at the fair");
    assert_eq!(created["imessage_reachable"], Value::Null);
    assert_eq!(created["created_at"], created["updated_at"]);

    let updated =
        app.post("/contacts", &app.org.key, json!({"phone": "+12015550123", "name": "Ann B. Lee"})).await.expect(200);
    assert_eq!(updated["id"], id, "the phone number identifies the contact");
    assert_eq!(updated["name"], "Ann B. Lee");
    assert_eq!(updated["email"], "ann@example.com", "fields left out keep their values");
    assert_eq!(updated["organization"], "Acme");
    assert_eq!(updated["note"], "met at the fair");
    assert_eq!(updated["created_at"], created["created_at"]);
    let (created_at, updated_at) = (created["created_at"].as_str().unwrap(), updated["updated_at"].as_str().unwrap());
    assert!(
        msgline::clock::parse_rfc3339(updated_at) >= msgline::clock::parse_rfc3339(created_at),
        "{created_at} {updated_at}"
    );

    let read = app.get(&format!("/contacts/{id}"), &app.org.key).await.expect(200);
    assert_eq!(read, updated);
}

#[tokio::test]
async fn an_empty_string_clears_a_field() {
    let app = spawn_app().await;
    upsert(&app, json!({"phone": "+12015550123", "name": "Ann", "email": "ann@example.com", "organization": "Acme", "note": "n"}))
        .await;
    let cleared = app
        .post("/contacts", &app.org.key, json!({"phone": "+12015550123", "name": "", "email": "", "note": "   "}))
        .await
        .expect(200);
    assert_eq!(cleared["name"], Value::Null);
    assert_eq!(cleared["email"], Value::Null);
    assert_eq!(cleared["note"], Value::Null, "a blank string is empty once trimmed");
    assert_eq!(cleared["organization"], "Acme");

    let fresh = app.post("/contacts", &app.org.key, json!({"phone": "+12015550124", "name": ""})).await.expect(201);
    assert_eq!(fresh["name"], Value::Null);
}

#[tokio::test]
async fn a_national_number_is_read_in_its_default_country() {
    let app = spawn_app().await;
    let us = app
        .post("/contacts", &app.org.key, json!({"phone": "(201) 555-0123", "default_country": "us"}))
        .await
        .expect(201);
    assert_eq!(us["phone"], "+12015550123");
    let gb = app
        .post("/contacts", &app.org.key, json!({"phone": "020 7946 0018", "default_country": "GB"}))
        .await
        .expect(201);
    assert_eq!(gb["phone"], "+442079460018");
    // The same number written another way is the same contact.
    let again = app
        .post("/contacts", &app.org.key, json!({"phone": "+1 201-555-0123", "default_country": "GB"}))
        .await
        .expect(200);
    assert_eq!(again["id"], us["id"]);
}

#[tokio::test]
async fn a_phone_that_is_not_a_valid_number_is_400_naming_phone() {
    let app = spawn_app().await;
    for phone in [json!("2015550123"), json!("+1 999"), json!("hello"), json!(""), json!("+1".repeat(21)), json!(null)]
    {
        app.post("/contacts", &app.org.key, json!({"phone": phone})).await.expect_error(
            400,
            "invalid_request",
            Some("phone"),
        );
    }
    app.post("/contacts", &app.org.key, json!({"phone": "hello", "default_country": "US"})).await.expect_error(
        400,
        "invalid_request",
        Some("phone"),
    );
}

#[tokio::test]
async fn an_unknown_default_country_is_400_naming_default_country() {
    let app = spawn_app().await;
    for country in ["XX", "USA", "", "1"] {
        app.post("/contacts", &app.org.key, json!({"phone": "2015550123", "default_country": country}))
            .await
            .expect_error(400, "invalid_request", Some("default_country"));
    }
}

#[tokio::test]
async fn an_invalid_email_is_400_naming_email() {
    let app = spawn_app().await;
    for email in ["not-an-email", "ann@localhost", "@example.com", "ann @example.com", "a@b@example.com"] {
        app.post("/contacts", &app.org.key, json!({"phone": "+12015550123", "email": email})).await.expect_error(
            400,
            "invalid_request",
            Some("email"),
        );
    }
    let none = app.get("/contacts", &app.org.key).await.expect(200);
    assert_eq!(none["data"], json!([]), "refused requests store nothing");
}

#[tokio::test]
async fn overlong_or_mistyped_fields_are_400_naming_them() {
    let app = spawn_app().await;
    let phone = "+12015550123";
    for (field, value) in [
        ("name", json!("n".repeat(201))),
        ("organization", json!("o".repeat(201))),
        ("note", json!("n".repeat(2001))),
        ("email", json!(format!("{}@example.com", "a".repeat(250)))),
        ("name", json!(5)),
        ("email", json!(["ann@example.com"])),
        ("default_country", json!(1)),
    ] {
        let mut body = json!({"phone": phone});
        body[field] = value;
        app.post("/contacts", &app.org.key, body).await.expect_error(400, "invalid_request", Some(field));
    }
}

#[tokio::test]
async fn search_matches_names_in_any_case_and_phone_digits() {
    let app = spawn_app().await;
    upsert(&app, json!({"phone": "+12015550123", "name": "Ann Lee"})).await;
    upsert(&app, json!({"phone": "+12015550124", "name": "ANNA Smith"})).await;
    upsert(&app, json!({"phone": "+442079460018", "name": "Bob"})).await;
    upsert(&app, json!({"phone": "+12015550125"})).await;
    upsert(&app, json!({"phone": "+442079460019", "name": "Flat 3B"})).await;

    assert_eq!(search_names(&app, "ann").await, ["ANNA Smith", "Ann Lee"]);
    assert_eq!(search_names(&app, "aNN").await, ["ANNA Smith", "Ann Lee"]);
    assert_eq!(search_names(&app, "  lee ").await, ["Ann Lee"]);
    assert_eq!(search_names(&app, "0018").await, ["Bob"]);
    assert_eq!(search_names(&app, "(201) 555-0124").await, ["ANNA Smith"]);
    assert_eq!(search_names(&app, "+1 201 555").await, ["(none)", "ANNA Smith", "Ann Lee"]);
    // A query with letters matches names only, in any case, accented letters included.
    assert_eq!(search_names(&app, "flat 3b").await, ["Flat 3B"]);
    upsert(&app, json!({"phone": "+12015550126", "name": "Ängel Öz"})).await;
    assert_eq!(search_names(&app, "ängel").await, ["Ängel Öz"]);
    assert_eq!(search_names(&app, "ÄNGEL ö").await, ["Ängel Öz"]);
    assert_eq!(search_names(&app, "zed").await, Vec::<String>::new());
    // LIKE wildcards are plain characters in a query.
    assert_eq!(search_names(&app, "%").await, Vec::<String>::new());
    assert_eq!(search_names(&app, "_").await, Vec::<String>::new());
    assert_eq!(search_names(&app, "").await.len(), 6, "an empty query lists everyone");
    app.get(&format!("/contacts?q={}", "q".repeat(201)), &app.org.key).await.expect_error(
        400,
        "invalid_request",
        Some("q"),
    );
}

#[tokio::test]
async fn contact_lists_page_newest_first() {
    let app = spawn_app().await;
    let mut created = Vec::new();
    for n in 0..5 {
        created.push(upsert(&app, json!({"phone": format!("+1201555013{n}"), "name": format!("Pat {n}")})).await);
    }
    let mut pages = Vec::new();
    let mut path = "/contacts?q=pat&limit=2".to_string();
    loop {
        let page = app.get(&path, &app.org.key).await.expect(200);
        assert!(ids(&page).len() <= 2, "{page}");
        let next = page["next_cursor"].as_str().map(str::to_string);
        pages.push(page);
        match next {
            Some(cursor) => path = format!("/contacts?q=pat&limit=2&cursor={cursor}"),
            None => break,
        }
    }
    assert_eq!(pages.len(), 3);
    let listed: Vec<Value> = pages.iter().flat_map(|p| p["data"].as_array().unwrap().clone()).collect();
    let listed_ids: Vec<&str> = listed.iter().map(|c| c["id"].as_str().unwrap()).collect();
    // Ids are time-ordered: strictly descending ids are newest first, with no repeats.
    assert!(listed_ids.windows(2).all(|w| w[0] > w[1]), "{listed_ids:?}");
    let times: Vec<i64> =
        listed.iter().map(|c| msgline::clock::parse_rfc3339(c["created_at"].as_str().unwrap()).unwrap()).collect();
    assert!(times.windows(2).all(|w| w[0] >= w[1]), "{times:?}");
    let mut expected: Vec<&str> = created.iter().map(|c| c["id"].as_str().unwrap()).collect();
    expected.sort_by(|a, b| b.cmp(a));
    assert_eq!(listed_ids, expected);
}

#[tokio::test]
async fn bad_paging_of_contacts_is_400_naming_the_parameter() {
    let app = spawn_app().await;
    for limit in ["0", "201", "many", "-5"] {
        app.get(&format!("/contacts?limit={limit}"), &app.org.key).await.expect_error(
            400,
            "invalid_request",
            Some("limit"),
        );
    }
    for cursor in ["%21%21%21", "not%20a%20cursor", "%2F%2F%2F%2F"] {
        app.get(&format!("/contacts?cursor={cursor}"), &app.org.key).await.expect_error(
            400,
            "invalid_request",
            Some("cursor"),
        );
    }
}

#[tokio::test]
async fn an_unknown_contact_is_404() {
    let app = spawn_app().await;
    app.get("/contacts/ct_unknown", &app.org.key).await.expect_error(404, "not_found", None);
    app.get("/contacts/not-even-an-id", &app.org.key).await.expect_error(404, "not_found", None);
}

#[tokio::test]
async fn contact_routes_need_their_scopes() {
    let app = spawn_app().await;
    let contact = upsert(&app, json!({"phone": "+12015550123"})).await;
    let id = contact["id"].as_str().unwrap();

    let reader = app.create_key(&app.org, &["messaging_read", "messaging_send"], None).await;
    app.post("/contacts", &reader, json!({"phone": "+12015550123"})).await.expect_error(
        403,
        "missing messaging_contacts scope",
        None,
    );
    app.get(&format!("/contacts/{id}"), &reader).await.expect(200);

    let editor = app.create_key(&app.org, &["messaging_contacts"], None).await;
    app.post("/contacts", &editor, json!({"phone": "+12015550123", "name": "Ann"})).await.expect(200);
    app.get("/contacts", &editor).await.expect_error(403, "missing messaging_read scope", None);
    app.get(&format!("/contacts/{id}"), &editor).await.expect_error(403, "missing messaging_read scope", None);
}

#[tokio::test]
async fn a_contact_body_over_one_mebibyte_is_413() {
    let app = spawn_app().await;
    let body = json!({"phone": "+12015550123", "note": "x".repeat(1024 * 1024)});
    app.post("/contacts", &app.org.key, body).await.expect_error(413, "payload_too_large", None);
    assert_eq!(app.get("/contacts", &app.org.key).await.expect(200)["data"], json!([]));
}
