//! Group rules under timing an attacker (or a slow phone) can arrange: a creation whose call
//! timed out but whose reports came before msgline asked, and changes sent at the same moment.

use serde_json::{Value, json};

use crate::{
    helpers::{TestApp, eventually, spawn_app, spawn_app_with},
    simline::{LineSpec, SimLine},
};

const LINE: &str = "+12015550100";

async fn line_with(app: &TestApp, args: &[&str]) -> SimLine {
    let org = app.org.clone();
    app.sim_line(LineSpec { e164: LINE, org: Some(&org), sim_args: args, start: true }).await
}

/// `count` participants from the fictional range, `+12015550120` on.
fn people(from: usize, count: usize) -> Vec<String> {
    (from..from + count).map(|n| format!("+120155501{n:02}")).collect()
}

async fn group_events(app: &TestApp, kind: &str) -> usize {
    let rows: Vec<(String,)> = sqlx::query_as("SELECT id FROM events WHERE org_id = $1 AND type = $2")
        .bind(&app.org.id)
        .bind(kind)
        .fetch_all(app.db().writer_for_tests())
        .await
        .unwrap();
    rows.len()
}

#[tokio::test]
async fn a_timed_out_creation_whose_reports_come_before_the_first_lookup_is_settled_created() {
    let app = spawn_app_with(|c| c.bridge_timeout_ms = 1500).await;
    app.keep_events().await;
    let line = line_with(&app, &["--mode", "timeout", "--late-report-ms", "1600"]).await;
    let created = app
        .post("/groups", &app.org.key, json!({"participants": people(20, 2), "body": "Hi all", "name": "Trip"}))
        .await
        .expect(202);
    assert_eq!(created["group"]["state"], "unknown");
    let id = created["group"]["id"].as_str().unwrap().to_string();
    let message_id = created["message"]["id"].as_str().unwrap().to_string();
    app.wait_for_message(&app.org.key, &message_id, "the late reports", |m| m["status"] == "delivered").await;
    // Read from the database while waiting, so that the waiting spends none of the key's rate limit.
    eventually(20, "the group to be settled as created", || async {
        let mut conn = app.db().writer_for_tests().acquire().await.expect("a connection");
        let group =
            msgline::testing::db::conversations::get_any(&mut conn, &id).await.expect("read").expect("the group");
        (group.group_state.as_deref() == Some("created")).then_some(())
    })
    .await;
    assert_eq!(app.get(&format!("/groups/{id}"), &app.org.key).await.expect(200)["state"], "created");
    assert_eq!(group_events(&app, "messaging.group.created").await, 1);
    // It can now be changed.
    line.control("/control/mode", json!({"mode": "accept"})).await;
    let renamed = app
        .request(
            reqwest::Method::PATCH,
            &format!("/groups/{id}"),
            Some(&app.org.key),
            Some(json!({"name": "Trip (Sat)"})),
        )
        .await;
    assert_eq!(renamed.expect(200)["group"]["name"], "Trip (Sat)");
}

/// Sends two participant changes of a group at the same moment; returns both answers.
async fn at_once(app: &TestApp, id: &str, first: Value, second: Value) -> [(u16, Value); 2] {
    let path = format!("/groups/{id}/participants");
    let (a, b) = tokio::join!(app.post(&path, &app.org.key, first), app.post(&path, &app.org.key, second));
    [(a.status.as_u16(), a.body), (b.status.as_u16(), b.body)]
}

/// One change applied, the other refused while the first was under way.
fn one_applied(answers: &[(u16, Value); 2]) {
    let mut statuses: Vec<u16> = answers.iter().map(|(s, _)| *s).collect();
    statuses.sort();
    assert_eq!(statuses, [200, 409], "{answers:?}");
    let refused = &answers.iter().find(|(s, _)| *s == 409).unwrap().1;
    assert_eq!(refused["error"], "group_change_in_progress", "{refused}");
}

#[tokio::test]
async fn changes_sent_at_the_same_moment_cannot_take_a_group_out_of_2_to_31() {
    let app = spawn_app().await;
    // The phone takes a moment to apply a change, as a real one does.
    let _line = line_with(&app, &["--answer-ms", "400"]).await;
    let three = people(20, 3);
    let small = app.post("/groups", &app.org.key, json!({"participants": three, "body": "Hi"})).await.expect(201);
    let small = small["group"]["id"].as_str().unwrap().to_string();
    let answers = at_once(&app, &small, json!({"remove": [three[0]]}), json!({"remove": [three[1]]})).await;
    one_applied(&answers);
    let group = app.get(&format!("/groups/{small}"), &app.org.key).await.expect(200);
    assert_eq!(group["participants"].as_array().unwrap().len(), 2, "{group}");

    let thirty = people(20, 30);
    let large = app.post("/groups", &app.org.key, json!({"participants": thirty, "body": "Hi"})).await.expect(201);
    let large = large["group"]["id"].as_str().unwrap().to_string();
    let extra = people(50, 2);
    let answers = at_once(&app, &large, json!({"add": [extra[0]]}), json!({"add": [extra[1]]})).await;
    one_applied(&answers);
    let group = app.get(&format!("/groups/{large}"), &app.org.key).await.expect(200);
    assert_eq!(group["participants"].as_array().unwrap().len(), 31, "{group}");
    // Once the first has settled, the next change is checked against the group as it is.
    let after = app.post(&format!("/groups/{large}/participants"), &app.org.key, json!({"add": [extra[1]]})).await;
    after.expect_error(400, "invalid_request", Some("add"));
}
