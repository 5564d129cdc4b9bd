//! Inbound senders as devices really give them (found by device fakes written from upstream
//! source): national numbers are stored in E.164 for the line's country, so that STOP opts the
//! number out and replies stay in one conversation; short codes, alphanumeric senders and email
//! handles stay as they came, and a sender that cannot be written back to is never written to.

use serde_json::{Value, json};

use crate::{
    devices::{DeviceLine, Kind},
    helpers::{eventually, spawn_app},
};

#[tokio::test]
async fn stop_from_a_national_number_opts_out_the_e164_number() {
    let app = spawn_app().await;
    let line = app.default_line().await;
    let key = &app.org.key;
    let first =
        app.post("/messages", key, json!({"to": "+12015550188", "body": "Your order shipped"})).await.expect(202);
    line.inbound("2015550188", "Thanks!").await;
    let replies = app.get("/messages?direction=inbound", key).await.expect(200);
    let reply = &replies["data"][0];
    assert_eq!(reply["conversation_id"], first["message"]["conversation_id"], "one conversation: {reply}");
    assert_eq!(reply["contact_id"], first["message"]["contact_id"]);

    line.inbound("2015550188", "STOP").await;
    line.inbound("12015550178", "stop").await;
    for number in ["+12015550188", "+12015550178"] {
        app.post("/messages", key, json!({"to": number, "body": "Still there?"})).await.expect_error(
            409,
            "recipient_opted_out",
            None,
        );
    }
    let opt_outs = app.get("/opt-outs", key).await.expect(200);
    let mut phones: Vec<&str> =
        opt_outs["data"].as_array().unwrap().iter().map(|o| o["phone"].as_str().unwrap()).collect();
    phones.sort();
    assert_eq!(phones, ["+12015550178", "+12015550188"]);
}

#[tokio::test]
async fn short_codes_stay_as_they_came_and_a_sender_id_is_never_written_to() {
    let app = spawn_app().await;
    let line = app.default_line().await;
    let key = &app.org.key;
    line.inbound("72345", "Your code is 1234").await;
    line.inbound("AMAZON", "Your parcel is on its way").await;
    line.inbound("AMAZON", "HELP").await;
    let contacts = app.get("/contacts", key).await.expect(200);
    let mut phones: Vec<&str> =
        contacts["data"].as_array().unwrap().iter().map(|c| c["phone"].as_str().unwrap()).collect();
    phones.sort();
    assert_eq!(phones, ["72345", "AMAZON"]);
    let by_phone = |phone: &str| -> Value {
        contacts["data"].as_array().unwrap().iter().find(|c| c["phone"] == phone).unwrap().clone()
    };

    // A short code can be answered; an alphanumeric sender cannot.
    let code = by_phone("72345");
    app.post("/messages", key, json!({"contact_id": code["id"], "body": "STOP"})).await.expect(202);
    let sender = by_phone("AMAZON");
    app.post("/messages", key, json!({"contact_id": sender["id"], "body": "Hi"})).await.expect_error(
        400,
        "invalid_request",
        Some("contact_id"),
    );
    let messages = app.get("/messages?direction=inbound", key).await.expect(200);
    let conversation =
        messages["data"].as_array().unwrap().iter().find(|m| m["body"] == "HELP").unwrap()["conversation_id"].clone();
    app.post("/messages", key, json!({"conversation_id": conversation, "body": "Hi"})).await.expect_error(
        400,
        "invalid_request",
        Some("conversation_id"),
    );

    // The short code's message went out; nothing, not even the HELP reply, went to AMAZON.
    eventually(20, "the message to the short code to be sent", || async {
        line.sent().await.iter().any(|s| s["to"] == json!(["72345"])).then_some(())
    })
    .await;
    assert!(line.sent().await.iter().all(|s| s["to"] != json!(["AMAZON"])), "{:?}", line.sent().await);
}

#[tokio::test]
async fn an_android_gateway_sender_in_national_form_is_opted_out_by_stop() {
    let line = DeviceLine::start(Kind::Android, &[]).await;
    line.fake.control("/control/inbound", json!({"from": "2015550188", "body": "STOP"})).await;
    eventually(20, "the opt-out to be recorded", || async {
        let opt_outs = line.api_get("/opt-outs").await;
        (opt_outs["data"][0]["phone"] == "+12015550188").then_some(())
    })
    .await;
    let (status, body) = line.api_post("/messages", json!({"to": "+12015550188", "body": "Hello again"})).await;
    assert_eq!((status, body["error"].as_str()), (409, Some("recipient_opted_out")), "{body}");
}

#[tokio::test]
async fn a_bluebubbles_handle_in_national_form_and_a_nul_in_its_text_are_kept_as_one_message() {
    let line = DeviceLine::start(Kind::BlueBubbles, &[]).await;
    line.fake.control("/control/inbound", json!({"from": "2015550188", "body": "On my\u{0} way"})).await;
    let inbound = eventually(20, "the message to arrive", || async {
        let inbound = line.inbound().await;
        (!inbound.is_empty()).then_some(inbound)
    })
    .await;
    assert_eq!(inbound.len(), 1);
    assert_eq!(inbound[0]["body"], "On my way", "a NUL is taken out of a device's text");
    let contact = line.api_get(&format!("/contacts/{}", inbound[0]["contact_id"].as_str().unwrap())).await;
    assert_eq!(contact["phone"], "+12015550188");
}
