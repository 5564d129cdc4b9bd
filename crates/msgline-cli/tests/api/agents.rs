//! Hosted agents: the resource, and runs against a fake chat-completions server.

use base64::{Engine, engine::general_purpose::STANDARD};
use serde_json::{Value, json};

use crate::{
    fakemodel::{FakeModel, text, tool_calls},
    helpers::{TestApp, eventually, spawn_app, spawn_app_with},
    simline::{LineSpec, SimLine},
};

const FRIEND: &str = "+12015550123";
const GIF: &[u8] = b"GIF89a\x01\x00\x01\x00\x00\x00\x00;";

async fn app_with_model(answers: Vec<Value>, runs_per_minute: u32, timeout_ms: u64) -> (TestApp, FakeModel) {
    let model = FakeModel::start(answers).await;
    let url = model.url.clone();
    let app = spawn_app_with(move |c| {
        c.agent_model_url = url;
        c.agent_model = "test-model".into();
        c.agent_runs_per_minute = runs_per_minute;
        c.agent_timeout_ms = timeout_ms;
    })
    .await;
    (app, model)
}

async fn create_agent(app: &TestApp, line: &SimLine, tools: &[&str]) -> Value {
    app.post(
        "/agents",
        &app.org.key,
        json!({"name": "Ava", "line_id": line.line_id, "instructions": "You help with orders.", "tools": tools,
               "photo_base64": STANDARD.encode(GIF)}),
    )
    .await
    .expect(201)
}

/// Waits until the agent has `n` finished runs; returns them newest first.
async fn finished_runs(app: &TestApp, agent_id: &str, n: usize) -> Vec<Value> {
    eventually(20, "agent runs to finish", || async {
        let runs = app.get(&format!("/agents/{agent_id}/runs"), &app.org.key).await.expect(200);
        let runs = runs["data"].as_array().unwrap().clone();
        let finished = runs.iter().filter(|r| r["state"] != "pending" && r["state"] != "running").count();
        (runs.len() >= n && finished == runs.len()).then_some(runs)
    })
    .await
}

#[tokio::test]
async fn an_inbound_message_makes_the_agent_send_a_text_a_card_with_its_defaults_and_a_poll() {
    let (app, model) = app_with_model(
        vec![
            tool_calls(&[
                ("messaging_send", json!({"body": "Hi! Here is my card and a quick poll."})),
                ("send_contact_card", json!({})),
                ("send_poll", json!({"question": "Pickup or delivery?", "options": ["Pickup", "Delivery"]})),
            ]),
            text("Anything else?"),
        ],
        5,
        5_000,
    )
    .await;
    let line = app.default_line().await;
    let agent = create_agent(&app, &line, &["messaging_send", "send_contact_card", "send_poll"]).await;
    let agent_id = agent["id"].as_str().unwrap();
    assert!(agent_id.starts_with("agt_"));
    assert_eq!(agent["has_photo"], true);

    line.inbound(FRIEND, "hello, where is my order?").await;
    let runs = finished_runs(&app, agent_id, 1).await;
    assert_eq!(runs[0]["state"], "done");
    assert_eq!(runs[0]["outcome"], "replied");
    let calls = runs[0]["tool_calls"].as_array().unwrap();
    assert_eq!(calls.len(), 3);
    assert!(calls.iter().all(|c| c["status"] == "ok"), "{calls:?}");

    // What the model was asked.
    let requests = model.requests();
    assert_eq!(requests.len(), 2);
    let first = &requests[0];
    assert_eq!(first["model"], "test-model");
    assert_eq!(first["messages"][0]["role"], "system");
    assert!(first["messages"][0]["content"].as_str().unwrap().contains("You help with orders."));
    assert_eq!(first["messages"].as_array().unwrap().last().unwrap()["content"], "hello, where is my order?");
    let names: Vec<&str> =
        first["tools"].as_array().unwrap().iter().map(|t| t["function"]["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["messaging_send", "send_contact_card", "send_poll"]);
    for tool in first["tools"].as_array().unwrap() {
        assert_eq!(tool["type"], "function");
        assert_eq!(tool["function"]["parameters"]["type"], "object");
    }
    // The tool results were fed back.
    let second = &requests[1];
    assert!(second["messages"].as_array().unwrap().iter().any(|m| m["role"] == "tool"));

    // What the phone sent: all four, each once, marked with the agent.
    let sent = eventually(20, "four sends", || async {
        let sent = line.sent().await;
        (sent.len() >= 4).then_some(sent)
    })
    .await;
    let mut kinds: Vec<&str> = sent.iter().map(|s| s["kind"].as_str().unwrap()).collect();
    kinds.sort();
    assert_eq!(kinds, ["contact_card", "poll", "text", "text"]);
    assert!(sent.iter().any(|s| s["body"] == "Anything else?"), "the final text is sent as a message");
    let card = sent.iter().find(|s| s["kind"] == "contact_card").unwrap();
    let vcard = card["vcard"].as_str().unwrap().replace("\r\n ", "");
    assert!(vcard.contains("FN:Ava\r\n"), "{vcard}");
    assert!(vcard.contains("TEL;TYPE=CELL:+12015550100\r\n"), "the card carries the agent's line");
    assert!(vcard.contains(&format!("PHOTO;ENCODING=b;TYPE=GIF:{}", STANDARD.encode(GIF))), "and the agent's photo");
    let outbound = app.get("/messages?direction=outbound", &app.org.key).await.expect(200);
    assert!(outbound["data"].as_array().unwrap().iter().all(|m| m["agent_id"] == agent_id));
    assert_eq!(outbound["data"].as_array().unwrap().len(), 4);
}

#[tokio::test]
async fn a_tool_the_agent_does_not_have_is_refused_and_reported_to_the_model() {
    let (app, model) = app_with_model(
        vec![tool_calls(&[("send_poll", json!({"question": "q", "options": ["a", "b"]}))]), text("Sorry, no polls.")],
        5,
        5_000,
    )
    .await;
    let line = app.default_line().await;
    let agent = create_agent(&app, &line, &["messaging_send"]).await;
    line.inbound(FRIEND, "make a poll").await;
    let runs = finished_runs(&app, agent["id"].as_str().unwrap(), 1).await;
    let call = &runs[0]["tool_calls"][0];
    assert_eq!(call["tool"], "send_poll");
    assert_eq!(call["status"], "error");
    assert_eq!(call["result"]["error"], "tool_not_allowed");
    let requests = model.requests();
    let offered: Vec<&str> =
        requests[0]["tools"].as_array().unwrap().iter().map(|t| t["function"]["name"].as_str().unwrap()).collect();
    assert_eq!(offered, ["messaging_send"]);
    let fed_back = requests[1]["messages"].as_array().unwrap().iter().find(|m| m["role"] == "tool").unwrap();
    assert!(fed_back["content"].as_str().unwrap().contains("tool_not_allowed"));
    let sent = eventually(10, "the reply", || async {
        let sent = line.sent().await;
        (!sent.is_empty()).then_some(sent)
    })
    .await;
    assert!(sent.iter().all(|s| s["kind"] == "text"), "no poll was sent: {sent:?}");
}

#[tokio::test]
async fn a_run_stops_after_five_tool_calls() {
    let sends = |n: usize, from: usize| {
        tool_calls(
            &(from..from + n)
                .map(|i| ("messaging_send", json!({"body": format!("message {i}")})))
                .collect::<Vec<_>>()
                .iter()
                .map(|(n, v)| (*n, v.clone()))
                .collect::<Vec<_>>(),
        )
    };
    let (app, model) = app_with_model(vec![sends(3, 0), sends(3, 3), text("never asked")], 5, 5_000).await;
    let line = app.default_line().await;
    let agent = create_agent(&app, &line, &["messaging_send"]).await;
    line.inbound(FRIEND, "spam me").await;
    let runs = finished_runs(&app, agent["id"].as_str().unwrap(), 1).await;
    assert_eq!(runs[0]["outcome"], "tool_call_limit");
    assert_eq!(runs[0]["tool_calls"].as_array().unwrap().len(), 5);
    assert_eq!(model.requests().len(), 2, "the model is not asked again after the cap");
    eventually(10, "five sends", || async { (line.sent().await.len() == 5).then_some(()) }).await;
}

#[tokio::test]
async fn the_agent_never_answers_its_own_messages_or_another_line_of_the_service() {
    let (app, model) = app_with_model(vec![text("Hello!"), text("Hello again!")], 5, 5_000).await;
    let line = app.default_line().await;
    let org = app.org.clone();
    let _other = app.sim_line(LineSpec { e164: "+12015550101", org: Some(&org), sim_args: &[], start: true }).await;
    let agent = create_agent(&app, &line, &["messaging_send"]).await;
    let agent_id = agent["id"].as_str().unwrap();
    line.inbound(FRIEND, "hi").await;
    finished_runs(&app, agent_id, 1).await;
    eventually(10, "the reply to be delivered", || async {
        let sent = line.sent().await;
        (sent.len() == 1).then_some(())
    })
    .await;
    // The agent's own delivered reply and an API send trigger nothing.
    app.post("/messages", &app.org.key, json!({"to": FRIEND, "from": "+12015550100", "body": "from the backend"}))
        .await
        .expect(202);
    // A message from another line of this service: no run either. (A run would be queued in the
    // same transaction that stores the message, so it would exist once `inbound` returns.)
    line.inbound("+12015550101", "I am another line's agent").await;
    let runs = app.get(&format!("/agents/{agent_id}/runs"), &app.org.key).await.expect(200);
    assert_eq!(runs["data"].as_array().unwrap().len(), 1);
    assert_eq!(model.requests().len(), 1);
}

#[tokio::test]
async fn runs_per_conversation_are_limited_per_minute() {
    let (app, _model) = app_with_model(vec![], 2, 5_000).await;
    let line = app.default_line().await;
    let agent = create_agent(&app, &line, &["messaging_send"]).await;
    for i in 0..3 {
        line.inbound(FRIEND, &format!("message {i}")).await;
    }
    let runs = finished_runs(&app, agent["id"].as_str().unwrap(), 3).await;
    let states: Vec<&str> = runs.iter().map(|r| r["state"].as_str().unwrap()).collect();
    assert_eq!(states.iter().filter(|s| **s == "skipped").count(), 1, "{states:?}");
    assert_eq!(runs[0]["state"], "skipped", "the newest is the one over the limit");
    assert!(runs[0]["outcome"].as_str().unwrap().starts_with("rate_limited"));
}

#[tokio::test]
async fn a_model_that_errors_or_times_out_fails_the_run_and_blocks_nothing_else() {
    let (app, _model) = app_with_model(
        vec![json!({"status": 500}), json!({"delay_ms": 3000, "message": {"content": "late"}})],
        5,
        1_000,
    )
    .await;
    let line = app.default_line().await;
    let agent = create_agent(&app, &line, &["messaging_send"]).await;
    let agent_id = agent["id"].as_str().unwrap();
    line.inbound(FRIEND, "first").await;
    line.inbound("+12015550124", "second").await;
    // Other work goes on while the model is slow.
    let sent =
        app.post("/messages", &app.org.key, json!({"to": "+12015550125", "body": "unrelated"})).await.expect(202);
    app.wait_for_message(&app.org.key, sent["message"]["id"].as_str().unwrap(), "delivered", |m| {
        m["status"] == "delivered"
    })
    .await;
    let runs = finished_runs(&app, agent_id, 2).await;
    let errors: Vec<&str> = runs.iter().map(|r| r["error"].as_str().unwrap_or_default()).collect();
    assert!(runs.iter().all(|r| r["state"] == "failed" && r["outcome"] == "model_error"), "{runs:?}");
    assert!(errors.iter().any(|e| e.contains("500")), "{errors:?}");
    assert!(errors.iter().any(|e| e.contains("in time")), "{errors:?}");
}

#[tokio::test]
async fn agents_are_managed_with_their_rules() {
    let app = spawn_app().await;
    let line = app.default_line().await;
    let key = &app.org.key;
    let agent = create_agent(&app, &line, &["messaging_send"]).await;
    let id = agent["id"].as_str().unwrap();
    assert_eq!(agent["tools"], json!(["messaging_send"]));
    assert_eq!(agent["enabled"], true);
    assert!(agent.get("api_key").is_none());
    // One enabled agent per line.
    app.post("/agents", key, json!({"name": "Bo", "line_id": line.line_id, "instructions": "x"})).await.expect_error(
        409,
        "agent_line_taken",
        None,
    );
    let second = app
        .post("/agents", key, json!({"name": "Bo", "line_id": line.line_id, "instructions": "x", "enabled": false}))
        .await
        .expect(201);
    app.request(
        reqwest::Method::PATCH,
        &format!("/agents/{}", second["id"].as_str().unwrap()),
        Some(key),
        Some(json!({"enabled": true})),
    )
    .await
    .expect_error(409, "agent_line_taken", None);
    let patched = app
        .request(
            reqwest::Method::PATCH,
            &format!("/agents/{id}"),
            Some(key),
            Some(json!({"enabled": false, "tools": ["send_poll"]})),
        )
        .await
        .expect(200);
    assert_eq!(patched["enabled"], false);
    assert_eq!(patched["tools"], json!(["send_poll"]));
    // Validation.
    app.post("/agents", key, json!({"name": "X", "line_id": line.line_id, "instructions": "x", "tools": ["shell"]}))
        .await
        .expect_error(400, "invalid_request", Some("tools"));
    app.post("/agents", key, json!({"line_id": line.line_id, "instructions": "x"})).await.expect_error(
        400,
        "invalid_request",
        Some("name"),
    );
    app.post("/agents", key, json!({"name": "X", "line_id": "line_01m80b6h6e744vr7hxxgt73870", "instructions": "x"}))
        .await
        .expect_error(404, "not_found", Some("line_id"));
    app.post(
        "/agents",
        key,
        json!({"name": "X", "line_id": line.line_id, "instructions": "x", "photo_base64": "bm90IGFuIGltYWdl"}),
    )
    .await
    .expect_error(400, "invalid_request", Some("photo_base64"));
    // Scope, isolation, listing, deletion.
    let no_scope = app.create_key(&app.org, &["messaging_send"], None).await;
    app.get("/agents", &no_scope).await.expect_error(403, "missing messaging_agents scope", None);
    let other = app.create_org("Other").await;
    app.get(&format!("/agents/{id}"), &other.key).await.expect_error(404, "not_found", None);
    let listed = app.get("/agents", key).await.expect(200);
    assert_eq!(listed["data"].as_array().unwrap().len(), 2);
    app.delete(&format!("/agents/{id}"), key).await.expect(200);
    app.get(&format!("/agents/{id}"), key).await.expect_error(404, "not_found", None);
    // A card for an agent: its defaults.
    let card = app.post("/contact-cards", key, json!({"to": FRIEND, "agent_id": second["id"]})).await.expect(202);
    assert_eq!(card["contact_card"], json!({"name": "Bo", "phone": "+12015550100"}));
}

#[tokio::test]
async fn an_agents_text_reply_counts_against_the_rate_limits_like_its_tool_sends() {
    let model = FakeModel::start(vec![text("first reply"), text("second reply")]).await;
    let url = model.url.clone();
    let app = spawn_app_with(move |c| {
        c.agent_model_url = url;
        c.agent_model = "test-model".into();
        c.send_rate_limit_per_minute = 1;
    })
    .await;
    let line = app.default_line().await;
    let agent = create_agent(&app, &line, &["messaging_send"]).await;
    let agent_id = agent["id"].as_str().unwrap();
    line.inbound(FRIEND, "one").await;
    let runs = finished_runs(&app, agent_id, 1).await;
    assert_eq!(runs[0]["outcome"], "replied");
    line.inbound(FRIEND, "two").await;
    let runs = finished_runs(&app, agent_id, 2).await;
    assert_eq!(runs[0]["outcome"], "rate_limited", "{:?}", runs[0]);
    assert!(runs[0]["error"].as_str().unwrap().contains("rate limit"), "{:?}", runs[0]);
    let sent = app.get("/messages?direction=outbound", &app.org.key).await.expect(200);
    let by_agent: Vec<&Value> = sent["data"].as_array().unwrap().iter().filter(|m| m["agent_id"] == agent_id).collect();
    assert_eq!(by_agent.len(), 1, "the second reply was not sent: {by_agent:?}");
    assert_eq!(by_agent[0]["body"], "first reply");
}

#[tokio::test]
async fn a_slow_model_holds_up_only_its_own_run() {
    let model = FakeModel::start(vec![json!({"delay_ms": 8000, "message": {"content": "slow"}}), text("fast")]).await;
    let url = model.url.clone();
    let app = spawn_app_with(move |c| {
        c.agent_model_url = url;
        c.agent_model = "test-model".into();
        c.agent_timeout_ms = 15_000;
        // The test reads the runs often.
        c.rate_limit_per_minute = 100_000;
    })
    .await;
    let line = app.default_line().await;
    let agent = create_agent(&app, &line, &["messaging_send"]).await;
    let agent_id = agent["id"].as_str().unwrap().to_string();
    line.inbound(FRIEND, "first").await;
    eventually(10, "the first run to ask the model", || async { (!model.requests().is_empty()).then_some(()) }).await;
    line.inbound("+12015550124", "second").await;
    // The second run answers while the first still waits for its model.
    let runs = eventually(6, "the second run to finish before the first", || async {
        let runs = app.get(&format!("/agents/{agent_id}/runs"), &app.org.key).await.expect(200);
        let runs = runs["data"].as_array().unwrap().clone();
        let done = runs.iter().filter(|r| r["state"] == "done").count();
        (runs.len() == 2 && done == 1).then_some(runs)
    })
    .await;
    assert_eq!(runs[0]["state"], "done", "the newer run finished: {runs:?}");
    assert_eq!(runs[1]["state"], "running", "the older run still waits for its model: {runs:?}");
    let runs = finished_runs(&app, &agent_id, 2).await;
    assert!(runs.iter().all(|r| r["outcome"] == "replied"), "{runs:?}");
}
