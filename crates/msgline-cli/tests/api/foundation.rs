//! Health, errors and the basics every route shares.

use serde_json::json;

use crate::helpers::spawn_app;

#[tokio::test]
async fn health_and_readiness_answer_without_a_key() {
    let app = spawn_app().await;
    let health = app.client.get(format!("{}/healthz", app.address)).send().await.unwrap();
    assert_eq!(health.status(), 200);
    let ready = app.client.get(format!("{}/readyz", app.address)).send().await.unwrap();
    assert_eq!(ready.status(), 200);
}

#[tokio::test]
async fn every_response_carries_a_request_id_and_echoes_a_valid_one() {
    let app = spawn_app().await;
    let response = app
        .client
        .get(app.url("/lines"))
        .bearer_auth(&app.org.key)
        .header("x-request-id", "client-chosen-42")
        .send()
        .await
        .unwrap();
    assert_eq!(response.headers()["x-request-id"], "client-chosen-42");
    let response = app.client.get(app.url("/lines")).header("x-request-id", "bad id with spaces").send().await.unwrap();
    let id = response.headers()["x-request-id"].to_str().unwrap();
    assert!(id.starts_with("req_"), "{id}");
}

#[tokio::test]
async fn a_malformed_body_is_a_400_naming_the_field() {
    let app = spawn_app().await;
    app.post("/contacts", &app.org.key, json!({"phone": 5})).await.expect_error(400, "invalid_request", Some("phone"));
    app.post("/contacts", &app.org.key, json!({"name": "Ann"})).await.expect_error(
        400,
        "invalid_request",
        Some("phone"),
    );
}

#[tokio::test]
async fn the_bearer_scheme_is_read_in_any_case_and_a_wrong_method_is_a_json_405() {
    let app = spawn_app().await;
    let answer = app
        .client
        .get(app.url("/lines"))
        .header("authorization", format!("BEARER {}", app.org.key))
        .send()
        .await
        .unwrap();
    assert_eq!(answer.status(), 200);
    let wrong = app.request(reqwest::Method::DELETE, "/contacts", Some(&app.org.key), None).await;
    wrong.expect_error(405, "method_not_allowed", None);
}
