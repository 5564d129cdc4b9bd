//! `GET /availability`: the line's device asked once per number however many callers ask,
//! remembered answers and their age, and the refusals.

use serde_json::{Value, json};

use crate::{
    helpers::{TestApp, spawn_app, spawn_app_with},
    simline::{LineSpec, SimLine},
};

const FRIEND: &str = "+12015550123";
const SMS_ONLY: &str = "+12015550124";

async fn sms_only_line(app: &TestApp) -> SimLine {
    let org = app.org.clone();
    app.sim_line(LineSpec { e164: "+12015550100", org: Some(&org), sim_args: &["--sms-only", SMS_ONLY], start: true })
        .await
}

/// How many numbers the line's device has been asked about.
async fn asks(line: &SimLine) -> u64 {
    let stats: Value = reqwest::get(format!("{}/control/stats", line.url)).await.unwrap().json().await.unwrap();
    stats["reachability_asks"].as_u64().unwrap()
}

fn path(to: &str) -> String {
    format!("/availability?to={}", to.replace('+', "%2B"))
}

#[tokio::test]
async fn the_line_is_asked_once_per_number_however_many_callers_ask_at_once() {
    let app = spawn_app().await;
    let line = sms_only_line(&app).await;
    let friend = path(FRIEND);
    let answers = futures_util::future::join_all((0..20).map(|_| app.get(&friend, &app.org.key))).await;
    let first = answers[0].body.clone();
    assert_eq!(first["to"], FRIEND);
    assert_eq!((first["imessage"].clone(), first["sms"].clone()), (json!(true), json!(true)));
    assert!(first["checked_at"].is_string());
    for answer in answers {
        assert_eq!(answer.expect(200), first);
    }
    assert_eq!(asks(&line).await, 1);

    let sms_only = app.get(&format!("{}&line_id={}", path(SMS_ONLY), line.line_id), &app.org.key).await.expect(200);
    assert_eq!((sms_only["imessage"].clone(), sms_only["sms"].clone()), (json!(false), json!(true)));
    // National numbers with a country, and the same answers again from memory.
    let national = app.get("/availability?to=(201)%20555-0123&default_country=US", &app.org.key).await.expect(200);
    assert_eq!(national, first);
    app.get(&path(SMS_ONLY), &app.org.key).await.expect(200);
    assert_eq!(asks(&line).await, 2);

    // What the device said is what a send's automatic channel choice uses: no ask either.
    let sent = app.post("/messages", &app.org.key, json!({"to": SMS_ONLY, "body": "hi"})).await.expect(202);
    assert_eq!(sent["message"]["channel"], "sms");
    assert_eq!(asks(&line).await, 2);
}

#[tokio::test]
async fn an_answer_older_than_the_ttl_is_asked_again_and_an_inbound_imessage_counts_as_one() {
    let app = spawn_app_with(|c| c.availability_ttl_seconds = 1).await;
    let line = sms_only_line(&app).await;
    app.get(&path(FRIEND), &app.org.key).await.expect(200);
    app.get(&path(FRIEND), &app.org.key).await.expect(200);
    assert_eq!(asks(&line).await, 1);
    tokio::time::sleep(std::time::Duration::from_millis(1_100)).await;
    app.get(&path(FRIEND), &app.org.key).await.expect(200);
    assert_eq!(asks(&line).await, 2);

    // A number that just wrote over iMessage is known to be reachable.
    line.inbound("+12015550125", "hello").await;
    let known = app.get(&path("+12015550125"), &app.org.key).await.expect(200);
    assert_eq!(known["imessage"], true);
    assert_eq!(asks(&line).await, 2);
}

#[tokio::test]
async fn a_device_that_cannot_be_asked_answers_null_and_bad_requests_are_refused() {
    let app = spawn_app().await;
    let org = app.org.clone();
    // A line whose device is not running: nothing is known, and nothing is remembered.
    let down = app.sim_line(LineSpec { e164: "+12015550100", org: Some(&org), sim_args: &[], start: false }).await;
    let unknown = app.get(&path(FRIEND), &app.org.key).await.expect(200);
    assert_eq!(unknown, json!({"to": FRIEND, "imessage": null, "sms": true, "checked_at": null}));
    let (rows,): (i64,) =
        sqlx::query_as("SELECT COUNT(*) FROM availability").fetch_one(app.db().writer_for_tests()).await.unwrap();
    assert_eq!(rows, 0);

    let key = &app.org.key;
    app.get("/availability", key).await.expect_error(400, "invalid_request", Some("to"));
    app.get("/availability?to=banana", key).await.expect_error(400, "invalid_request", Some("to"));
    app.get(&format!("{}&line_id=line_nope", path(FRIEND)), key).await.expect_error(404, "not_found", Some("line_id"));
    let other = app.create_org("Other").await;
    app.get(&format!("{}&line_id={}", path(FRIEND), down.line_id), &other.key).await.expect_error(
        404,
        "not_found",
        Some("line_id"),
    );
    let sender = app.create_key(&app.org, &["messaging_send"], None).await;
    app.get(&path(FRIEND), &sender).await.expect_error(403, "missing messaging_read scope", None);
    let second = app.create_line_id("+12015550101", Some(&org)).await;
    let bound = app.create_key(&app.org, &["messaging_read"], Some(&second)).await;
    app.get(&format!("{}&line_id={}", path(FRIEND), down.line_id), &bound).await.expect_error(
        409,
        "line_mismatch",
        None,
    );
}
