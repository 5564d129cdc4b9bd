//! The console's sign-in over HTTP, as a browser does it (forms, a cookie, redirects): staff made
//! by the admin command, the one-time link, sessions that end when they should, the sign-in
//! throttle, CSRF and the headers every page carries. (The browser suite drives the pages.)

use reqwest::{StatusCode, header};
use serde_json::Value;

use crate::helpers::{TestApp, cli_json, spawn_app, spawn_app_with};

/// A client that shows redirects instead of following them, as the tests check where they go.
pub(crate) fn browser() -> reqwest::Client {
    reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build().expect("client")
}

/// Adds a staff member through the admin command; returns the answer and the link's token.
pub(crate) async fn add_staff(app: &TestApp, email: &str, role: &str) -> (Value, String) {
    let staff =
        cli_json(&app.cli(&["admin", "staff", "create", "--org", &app.org.id, "--email", email, "--role", role]).await);
    let url = staff["sign_in_url"].as_str().expect("sign_in_url").to_string();
    let token = url.split_once("token=").expect("a token in the link").1.to_string();
    (staff, token)
}

/// Sets the password through the link; returns the session cookie (`msgline_session=…`).
pub(crate) async fn welcome(app: &TestApp, token: &str, password: &str) -> String {
    let response = browser()
        .post(format!("{}/console/welcome", app.address))
        .header(header::ORIGIN, &app.address)
        .form(&[("token", token), ("password", password), ("confirm", password)])
        .send()
        .await
        .expect("answered");
    assert_eq!(response.status(), StatusCode::SEE_OTHER, "{:?}", response.text().await);
    assert_eq!(response.headers()[header::LOCATION], "/console");
    session_cookie(&response)
}

fn session_cookie(response: &reqwest::Response) -> String {
    let set = response.headers()[header::SET_COOKIE].to_str().expect("ASCII").to_string();
    assert!(set.starts_with("msgline_session=mls_"), "{set}");
    for attribute in ["HttpOnly", "SameSite=Lax", "Path=/console"] {
        assert!(set.contains(attribute), "{attribute} missing from {set}");
    }
    assert!(!set.contains("Secure"), "plain http has no Secure cookie: {set}");
    set.split(';').next().expect("name=value").to_string()
}

pub(crate) async fn sign_in(app: &TestApp, email: &str, password: &str) -> reqwest::Response {
    browser()
        .post(format!("{}/console/sign-in", app.address))
        .header(header::ORIGIN, &app.address)
        .form(&[("email", email), ("password", password)])
        .send()
        .await
        .expect("answered")
}

pub(crate) async fn page(app: &TestApp, path: &str, cookie: &str) -> reqwest::Response {
    browser().get(format!("{}{path}", app.address)).header(header::COOKIE, cookie).send().await.expect("answered")
}

/// A thread's compose form (multipart, as it carries files) with these text fields.
pub(crate) fn compose(fields: &[(&str, &str)]) -> reqwest::multipart::Form {
    fields
        .iter()
        .fold(reqwest::multipart::Form::new(), |form, (name, value)| form.text(name.to_string(), value.to_string()))
}

/// The CSRF token in a page's forms.
pub(crate) fn csrf_of(html: &str) -> String {
    let at = html.find("name=\"csrf\" value=\"").expect("a csrf field") + "name=\"csrf\" value=\"".len();
    html[at..].split('"').next().expect("its value").to_string()
}

#[tokio::test]
async fn a_new_member_sets_a_password_through_the_link_and_signs_in_with_it() {
    let app = spawn_app().await;
    let (staff, token) = add_staff(&app, "Ann@Example.com", "owner").await;
    assert!(staff["staff_id"].as_str().is_some_and(|id| id.starts_with("stf_")), "{staff}");
    assert_eq!((staff["email"].as_str(), staff["role"].as_str()), (Some("ann@example.com"), Some("owner")));

    let landing = browser().get(format!("{}/", app.address)).send().await.unwrap();
    assert_eq!(landing.headers()[header::LOCATION], "/console");
    let signed_out = browser().get(format!("{}/console", app.address)).send().await.unwrap();
    assert_eq!(signed_out.headers()[header::LOCATION], "/console/sign-in");

    let link = browser().get(format!("{}/console/welcome?token={token}", app.address)).send().await.unwrap();
    assert_eq!(link.status(), StatusCode::OK);
    assert!(link.text().await.unwrap().contains("ann@example.com"));
    let short = browser()
        .post(format!("{}/console/welcome", app.address))
        .form(&[("token", token.as_str()), ("password", "short"), ("confirm", "short")])
        .send()
        .await
        .unwrap();
    assert_eq!(short.status(), StatusCode::BAD_REQUEST);
    let cookie = welcome(&app, &token, "a long enough password").await;
    let overview = page(&app, "/console", &cookie).await;
    assert_eq!(overview.status(), StatusCode::OK);
    let html = overview.text().await.unwrap();
    assert!(html.contains("<h1>Overview</h1>") && html.contains("ann@example.com"), "{html}");

    // The link works once.
    let again = browser().get(format!("{}/console/welcome?token={token}", app.address)).send().await.unwrap();
    assert_eq!(again.status(), StatusCode::NOT_FOUND);
    // The password signs in; the list shows the member, never a password or a link.
    let signed_in = sign_in(&app, "ANN@example.com", "a long enough password").await;
    assert_eq!(signed_in.status(), StatusCode::SEE_OTHER);
    session_cookie(&signed_in);
    let listed = cli_json(&app.cli(&["admin", "staff", "list", "--org", &app.org.id]).await);
    assert_eq!(listed[0]["email"], "ann@example.com");
    assert_eq!(listed[0]["has_password"], true);
    assert!(!listed.to_string().contains("argon2"), "{listed}");
}

#[tokio::test]
async fn sign_out_removal_and_a_new_password_end_sessions_and_state_changes_need_csrf_and_the_same_origin() {
    let app = spawn_app().await;
    let (staff, token) = add_staff(&app, "bo@example.com", "member").await;
    let cookie = welcome(&app, &token, "bo's long password").await;
    let html = page(&app, "/console", &cookie).await.text().await.unwrap();
    let csrf = csrf_of(&html);

    // Without the token, or from another site, sign-out is refused and the session lives on.
    let sign_out = |csrf: String, origin: Option<&str>| {
        let mut request = browser()
            .post(format!("{}/console/sign-out", app.address))
            .header(header::COOKIE, &cookie)
            .form(&[("csrf", csrf)]);
        if let Some(origin) = origin {
            request = request.header(header::ORIGIN, origin);
        }
        request.send()
    };
    assert_eq!(sign_out("0".repeat(64), None).await.unwrap().status(), StatusCode::FORBIDDEN);
    assert_eq!(sign_out(csrf.clone(), Some("https://evil.example")).await.unwrap().status(), StatusCode::FORBIDDEN);
    assert_eq!(page(&app, "/console", &cookie).await.status(), StatusCode::OK);
    let out = sign_out(csrf, Some(&app.address)).await.unwrap();
    assert_eq!(out.headers()[header::LOCATION], "/console/sign-in");
    assert_eq!(page(&app, "/console", &cookie).await.headers()[header::LOCATION], "/console/sign-in");

    // Removal ends every session of the member at once, on every instance (nothing is cached).
    let second = session_cookie(&sign_in(&app, "bo@example.com", "bo's long password").await);
    assert_eq!(page(&app, "/console", &second).await.status(), StatusCode::OK);
    let id = staff["staff_id"].as_str().unwrap();
    cli_json(&app.cli(&["admin", "staff", "remove", "--id", id]).await);
    assert_eq!(page(&app, "/console", &second).await.headers()[header::LOCATION], "/console/sign-in");
    assert_eq!(sign_in(&app, "bo@example.com", "bo's long password").await.status(), StatusCode::UNAUTHORIZED);

    // A new password ends the sessions of the old one.
    let (_, token) = add_staff(&app, "cy@example.com", "member").await;
    let first = welcome(&app, &token, "cy's first password").await;
    let link = cli_json(&app.cli(&["admin", "staff", "list", "--org", &app.org.id]).await);
    let cy = link.as_array().unwrap().iter().find(|s| s["email"] == "cy@example.com").unwrap();
    let hash = msgline::testing::domain::staff::hash_password("cy's second password");
    msgline::testing::db::staff::set_password(
        app.db(),
        cy["staff_id"].as_str().unwrap(),
        &hash,
        msgline::clock::now_ms(),
    )
    .await
    .unwrap();
    assert_eq!(page(&app, "/console", &first).await.headers()[header::LOCATION], "/console/sign-in");
}

#[tokio::test]
async fn repeated_failures_are_throttled_alike_for_known_and_unknown_emails() {
    let app = spawn_app().await;
    let (_, token) = add_staff(&app, "di@example.com", "owner").await;
    welcome(&app, &token, "di's right password").await;

    let wrong = sign_in(&app, "di@example.com", "not the password").await;
    assert_eq!(wrong.status(), StatusCode::UNAUTHORIZED);
    let wrong_text = wrong.text().await.unwrap();
    let unknown = sign_in(&app, "nobody@example.com", "not the password").await;
    assert_eq!(unknown.status(), StatusCode::UNAUTHORIZED);
    let unknown_text = unknown.text().await.unwrap();
    let said = |html: &str| html.split("role=\"alert\">").nth(1).and_then(|s| s.split('<').next()).map(str::to_string);
    assert_eq!(said(&wrong_text), said(&unknown_text), "an unknown email is answered like a wrong password");

    for _ in 0..4 {
        assert_eq!(sign_in(&app, "di@example.com", "still wrong").await.status(), StatusCode::UNAUTHORIZED);
        assert_eq!(sign_in(&app, "nobody@example.com", "still wrong").await.status(), StatusCode::UNAUTHORIZED);
    }
    // Five failures for each email: the right password waits too, and so does the unknown email.
    let waiting = sign_in(&app, "di@example.com", "di's right password").await;
    assert_eq!(waiting.status(), StatusCode::TOO_MANY_REQUESTS);
    assert!(waiting.text().await.unwrap().contains("Try again in 15 minutes"));
    assert_eq!(sign_in(&app, "nobody@example.com", "x").await.status(), StatusCode::TOO_MANY_REQUESTS);
    // A cross-site sign-in form is refused before anything is counted.
    let cross = browser()
        .post(format!("{}/console/sign-in", app.address))
        .header("sec-fetch-site", "cross-site")
        .form(&[("email", "di@example.com"), ("password", "di's right password")])
        .send()
        .await
        .unwrap();
    assert_eq!(cross.status(), StatusCode::FORBIDDEN);
}

#[tokio::test]
async fn every_console_page_carries_a_strict_content_security_policy() {
    let app = spawn_app().await;
    for path in ["/console/sign-in", "/console/welcome?token=mls_link_nothing", "/console/assets/console.css"] {
        let response = browser().get(format!("{}{path}", app.address)).send().await.unwrap();
        let csp = response.headers()[header::CONTENT_SECURITY_POLICY].to_str().unwrap().to_string();
        assert!(csp.contains("frame-ancestors 'none'") && csp.contains("script-src 'self'"), "{path}: {csp}");
        assert!(!csp.contains("unsafe-inline") && !csp.contains("unsafe-eval"), "{path}: {csp}");
        assert_eq!(response.headers()[header::REFERRER_POLICY], "same-origin", "{path}");
        assert_eq!(response.headers()[header::X_CONTENT_TYPE_OPTIONS], "nosniff", "{path}");
    }
    let html = browser().get(format!("{}/console/sign-in", app.address)).send().await.unwrap().text().await.unwrap();
    assert!(
        html.contains("<label for=\"email\">Email</label>")
            && html.contains("<label for=\"password\">Password</label>")
    );
    assert!(html.contains(">Sign in</button>") && !html.contains("<script>") && !html.contains("style="));
}

#[tokio::test]
async fn another_organisations_conversation_is_404_and_a_form_sent_twice_sends_once() {
    let app = spawn_app().await;
    let line_id = app.create_line_id("+12015550100", Some(&app.org)).await;
    let (_, token) = add_staff(&app, "ed@example.com", "member").await;
    let cookie = welcome(&app, &token, "ed's long password").await;

    // A conversation of another organisation, by its id: not found, never shown.
    let other = app.create_org("Other").await;
    let other_line = app.create_line_id("+12015550111", Some(&other)).await;
    let theirs = app.create_conversation(&other, &other_line, "+12015550155").await;
    let answer = page(&app, &format!("/console/conversations/{}", theirs.id), &cookie).await;
    assert_eq!(answer.status(), StatusCode::NOT_FOUND);

    // The same compose form twice (a double click): one message.
    let ours = app.create_conversation(&app.org, &line_id, "+12015550156").await;
    let html = page(&app, &format!("/console/conversations/{}", ours.id), &cookie).await.text().await.unwrap();
    let csrf = csrf_of(&html);
    let at = html.find("name=\"idempotency_key\" value=\"").expect("a key field") + 30;
    let key = html[at..].split('"').next().unwrap().to_string();
    for _ in 0..2 {
        let sent = browser()
            .post(format!("{}/console/conversations/{}/messages", app.address, ours.id))
            .header(header::COOKIE, &cookie)
            .header(header::ORIGIN, &app.address)
            .multipart(compose(&[("csrf", &csrf), ("idempotency_key", &key), ("body", "once only")]))
            .send()
            .await
            .unwrap();
        assert_eq!(sent.status(), StatusCode::SEE_OTHER);
    }
    let listed = app.get(&format!("/messages?conversation_id={}", ours.id), &app.org.key).await.expect(200);
    let bodies: Vec<&str> = listed["data"].as_array().unwrap().iter().filter_map(|m| m["body"].as_str()).collect();
    assert_eq!(bodies, ["once only"]);

    // A member sending into another organisation's conversation is refused the same way.
    let foreign = browser()
        .post(format!("{}/console/conversations/{}/messages", app.address, theirs.id))
        .header(header::COOKIE, &cookie)
        .multipart(compose(&[("csrf", &csrf), ("idempotency_key", "k2"), ("body", "not yours")]))
        .send()
        .await
        .unwrap();
    assert_eq!(foreign.status(), StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn another_organisations_contact_and_opt_out_are_404_from_the_console() {
    let app = spawn_app().await;
    let (_, token) = add_staff(&app, "fay@example.com", "member").await;
    let cookie = welcome(&app, &token, "fay's long password").await;
    let other = app.create_org("Other").await;
    let contact = app.post("/contacts", &other.key, serde_json::json!({"phone": "+12015550166"})).await.expect(201);
    let id = contact["id"].as_str().unwrap();
    assert_eq!(page(&app, &format!("/console/contacts/{id}"), &cookie).await.status(), StatusCode::NOT_FOUND);
    let csrf = csrf_of(&page(&app, "/console/contacts", &cookie).await.text().await.unwrap());
    let edit = browser()
        .post(format!("{}/console/contacts/{id}", app.address))
        .header(header::COOKIE, &cookie)
        .form(&[("csrf", csrf.as_str()), ("name", "taken over")])
        .send()
        .await
        .unwrap();
    assert_eq!(edit.status(), StatusCode::NOT_FOUND);
    let theirs = app.get(&format!("/contacts/{id}"), &other.key).await.expect(200);
    assert_eq!(theirs["name"], Value::Null, "the other organisation's contact is unchanged");
    let clear = browser()
        .post(format!("{}/console/opt-outs/opt_01m8f4ky4pddhddy0rbmvesjzv/clear", app.address))
        .header(header::COOKIE, &cookie)
        .form(&[("csrf", csrf.as_str())])
        .send()
        .await
        .unwrap();
    assert_eq!(clear.status(), StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn an_owner_rotates_and_revokes_keys_of_the_organisation_only() {
    let app = spawn_app().await;
    let (_, token) = add_staff(&app, "gus@example.com", "owner").await;
    let cookie = welcome(&app, &token, "gus's long password").await;
    let csrf = csrf_of(&page(&app, "/console/keys", &cookie).await.text().await.unwrap());
    let (old_id, old_key) = app.create_key_with_id(&app.org, &["messaging_read"], None).await;

    let post = |path: String, form: Vec<(&'static str, String)>| {
        browser().post(format!("{}{path}", app.address)).header(header::COOKIE, &cookie).form(&form).send()
    };
    let rotated =
        post(format!("/console/keys/{old_id}/rotate"), vec![("csrf", csrf.clone()), ("grace_seconds", "0".into())])
            .await
            .unwrap();
    assert_eq!(rotated.status(), StatusCode::CREATED);
    let html = rotated.text().await.unwrap();
    let at = html.find("id=\"new-secret\">").expect("the new secret") + "id=\"new-secret\">".len();
    let new_key = html[at..].split('<').next().unwrap().to_string();
    assert_eq!(app.get("/lines", &new_key).await.status, 200);
    assert_eq!(app.get("/lines", &old_key).await.status, 401, "no grace: the old key stops at once");

    // Another organisation's key is not found, and keeps working.
    let other = app.create_org("Other").await;
    let (their_id, _) = app.create_key_with_id(&other, &["messaging_read"], None).await;
    let revoke = post(format!("/console/keys/{their_id}/revoke"), vec![("csrf", csrf.clone())]).await.unwrap();
    assert_eq!(revoke.status(), StatusCode::NOT_FOUND);
    assert_eq!(app.get("/lines", &other.key).await.status, 200);
    let mine = post(format!("/console/keys/{}/revoke", app.org.key_id), vec![("csrf", csrf)]).await.unwrap();
    assert_eq!(mine.status(), StatusCode::SEE_OTHER);
    assert_eq!(app.get("/lines", &app.org.key).await.status, 401);
}

#[tokio::test]
async fn the_last_owner_stays_and_members_have_no_settings_or_staff_pages() {
    let app = spawn_app().await;
    let (owner, token) = add_staff(&app, "hal@example.com", "owner").await;
    let cookie = welcome(&app, &token, "hal's long password").await;
    let csrf = csrf_of(&page(&app, "/console/staff", &cookie).await.text().await.unwrap());
    let id = owner["staff_id"].as_str().unwrap();
    for action in ["remove", "role"] {
        let answer = browser()
            .post(format!("{}/console/staff/{id}/{action}", app.address))
            .header(header::COOKIE, &cookie)
            .form(&[("csrf", csrf.as_str()), ("role", "member")])
            .send()
            .await
            .unwrap();
        assert_eq!(answer.status(), StatusCode::CONFLICT, "{action}");
    }
    assert_eq!(page(&app, "/console", &cookie).await.status(), StatusCode::OK, "the owner is still signed in");

    let (_, token) = add_staff(&app, "ivy@example.com", "member").await;
    let member = welcome(&app, &token, "ivy's long password").await;
    for path in ["/console/settings", "/console/staff", "/console/keys"] {
        assert_eq!(page(&app, path, &member).await.status(), StatusCode::FORBIDDEN, "{path}");
    }
    let member_csrf = csrf_of(&page(&app, "/console", &member).await.text().await.unwrap());
    let changed = browser()
        .post(format!("{}/console/settings", app.address))
        .header(header::COOKIE, &member)
        .form(&[("csrf", member_csrf.as_str()), ("opt_out_reply", "members cannot set this")])
        .send()
        .await
        .unwrap();
    assert_eq!(changed.status(), StatusCode::FORBIDDEN);
    let settings = app.get("/settings", &app.org.key).await.expect(200);
    assert_ne!(settings["opt_out_reply"], "members cannot set this");
}

#[tokio::test]
async fn another_organisations_webhook_is_404_for_every_action() {
    let app = spawn_app_with(|c| c.allow_private_targets = true).await;
    let (_, token) = add_staff(&app, "jo@example.com", "owner").await;
    let cookie = welcome(&app, &token, "jo's long password").await;
    let csrf = csrf_of(&page(&app, "/console/webhooks", &cookie).await.text().await.unwrap());
    let other = app.create_org("Other").await;
    let hook = app
        .post("/webhooks", &other.key, serde_json::json!({"url": "http://127.0.0.1:9/hook", "events": ["*"]}))
        .await
        .expect(201);
    let id = hook["id"].as_str().unwrap();
    assert_eq!(page(&app, &format!("/console/webhooks/{id}"), &cookie).await.status(), StatusCode::NOT_FOUND);
    for action in ["replay", "rotate", "disable", "enable", "delete"] {
        let answer = browser()
            .post(format!("{}/console/webhooks/{id}/{action}", app.address))
            .header(header::COOKIE, &cookie)
            .form(&[("csrf", csrf.as_str()), ("hours", "1")])
            .send()
            .await
            .unwrap();
        assert_eq!(answer.status(), StatusCode::NOT_FOUND, "{action}");
    }
    let theirs = app.get(&format!("/webhooks/{id}"), &other.key).await.expect(200);
    assert_eq!(theirs["enabled"], true, "the other organisation's endpoint is untouched");
}

#[tokio::test]
async fn another_organisations_agent_is_404_and_unchanged() {
    let app = spawn_app().await;
    let (_, token) = add_staff(&app, "kit@example.com", "member").await;
    let cookie = welcome(&app, &token, "kit's long password").await;
    let other = app.create_org("Other").await;
    let line = app.create_line_id("+12015550122", Some(&other)).await;
    let agent = app
        .post("/agents", &other.key, serde_json::json!({"name": "Theirs", "line_id": line, "instructions": "hi"}))
        .await
        .expect(201);
    let id = agent["id"].as_str().unwrap();
    assert_eq!(page(&app, &format!("/console/agents/{id}"), &cookie).await.status(), StatusCode::NOT_FOUND);
    let csrf = csrf_of(&page(&app, "/console/agents", &cookie).await.text().await.unwrap());
    let form = reqwest::multipart::Form::new().text("csrf", csrf).text("name", "Ours now").text("instructions", "x");
    let saved = browser()
        .post(format!("{}/console/agents/{id}", app.address))
        .header(header::COOKIE, &cookie)
        .multipart(form)
        .send()
        .await
        .unwrap();
    assert_eq!(saved.status(), StatusCode::NOT_FOUND);
    assert_eq!(app.get(&format!("/agents/{id}"), &other.key).await.expect(200)["name"], "Theirs");
}

#[tokio::test]
async fn another_organisations_group_is_404_for_its_page_and_every_change() {
    let app = spawn_app().await;
    let (_, token) = add_staff(&app, "lu@example.com", "member").await;
    let cookie = welcome(&app, &token, "lu's long password").await;
    let other = app.create_org("Other").await;
    let line = app.create_line_id("+12015550133", Some(&other)).await;
    let theirs = app.create_conversation(&other, &line, "+12015550134").await;
    let csrf = csrf_of(&page(&app, "/console/groups", &cookie).await.text().await.unwrap());
    assert_eq!(page(&app, &format!("/console/groups/{}", theirs.id), &cookie).await.status(), StatusCode::NOT_FOUND);
    for action in ["rename", "add", "remove", "leave"] {
        let answer = browser()
            .post(format!("{}/console/groups/{}/{action}", app.address, theirs.id))
            .header(header::COOKIE, &cookie)
            .form(&[("csrf", csrf.as_str()), ("idempotency_key", action), ("name", "x"), ("phone", "+12015550135")])
            .send()
            .await
            .unwrap();
        assert_eq!(answer.status(), StatusCode::NOT_FOUND, "{action}");
    }
}

#[tokio::test]
async fn a_tapback_from_a_thread_names_only_a_message_of_that_thread() {
    let app = spawn_app().await;
    let line_id = app.create_line_id("+12015550100", Some(&app.org)).await;
    let (_, token) = add_staff(&app, "mo@example.com", "member").await;
    let cookie = welcome(&app, &token, "mo's long password").await;
    let first = app.create_conversation(&app.org, &line_id, "+12015550161").await;
    let second = app.create_conversation(&app.org, &line_id, "+12015550162").await;
    let elsewhere = app
        .post("/messages", &app.org.key, serde_json::json!({"conversation_id": second.id, "body": "elsewhere"}))
        .await
        .expect(202);
    let csrf =
        csrf_of(&page(&app, &format!("/console/conversations/{}", first.id), &cookie).await.text().await.unwrap());
    let react = browser()
        .post(format!("{}/console/conversations/{}/react", app.address, first.id))
        .header(header::COOKIE, &cookie)
        .form(&[
            ("csrf", csrf.as_str()),
            ("message_id", elsewhere["message"]["id"].as_str().unwrap()),
            ("reaction", "love"),
        ])
        .send()
        .await
        .unwrap();
    assert_eq!(react.status(), StatusCode::NOT_FOUND);
    let listed = app.get(&format!("/messages?conversation_id={}", second.id), &app.org.key).await.expect(200);
    assert_eq!(listed["data"].as_array().unwrap().len(), 1, "no reaction was sent");
}
