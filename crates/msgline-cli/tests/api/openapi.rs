//! The OpenAPI document against the router that serves it: every documented operation is served,
//! no undocumented method is, and the scope each operation names is the one it checks.
//! (schemathesis runs the document against a live server in `scripts/schemathesis`.)

use reqwest::Method;
use serde_json::{Value, json};

use crate::helpers::{ALL_SCOPES, TestApp, cli_json, spawn_app};

pub const METHODS: [&str; 5] = ["get", "post", "put", "patch", "delete"];

pub async fn document(app: &TestApp) -> Value {
    let response =
        app.client.get(format!("{}/api/v1/openapi.json", app.address)).send().await.expect("the document answers");
    assert_eq!(response.status(), 200);
    assert!(response.headers().contains_key("x-request-id"));
    assert_eq!(response.headers()["content-type"], "application/json");
    response.json().await.expect("JSON")
}

/// A documented path with its parameters filled: ids that name nothing.
fn concrete(path: &str) -> String {
    path.replace("{id}", "x_none").replace("{line_id}", "line_none")
}

/// The request body an operation documents an example of, or `{}`.
pub fn example_body(document: &Value, operation: &Value) -> Option<Value> {
    let schema = &operation["requestBody"]["content"]["application/json"]["schema"];
    if schema.is_null() {
        return None;
    }
    let name = schema["$ref"].as_str().and_then(|r| r.rsplit('/').next()).unwrap_or_default();
    let example = &document["components"]["schemas"][name]["example"];
    Some(if example.is_null() { json!({}) } else { example.clone() })
}

async fn call(app: &TestApp, method: &str, path: &str, key: Option<&str>, body: Option<Value>) -> (u16, Value) {
    let method = Method::from_bytes(method.to_uppercase().as_bytes()).expect("a method");
    let mut request = app.client.request(method, format!("{}{}", app.address, concrete(path)));
    if let Some(key) = key {
        request = request.bearer_auth(key);
    }
    if let Some(body) = body {
        request = request.json(&body);
    }
    let response = request.send().await.expect("answered");
    let status = response.status().as_u16();
    let text = response.text().await.expect("body");
    (status, serde_json::from_str(&text).unwrap_or(Value::String(text)))
}

#[tokio::test]
async fn the_document_is_served_without_a_key_and_is_what_msgline_openapi_prints() {
    let app = spawn_app().await;
    let served = document(&app).await;
    assert_eq!(served["openapi"], "3.1.0");
    assert_eq!(served["components"]["securitySchemes"]["api_key"]["scheme"], "bearer");
    let printed = cli_json(&app.cli(&["openapi"]).await);
    assert_eq!(printed, served);

    // Lists document their paging, sends their idempotency key, errors their body.
    let list = &served["paths"]["/api/v1/messaging/messages"]["get"];
    let names: Vec<&str> = list["parameters"].as_array().unwrap().iter().filter_map(|p| p["name"].as_str()).collect();
    for name in ["limit", "cursor", "status", "direction", "conversation_id", "contact_id"] {
        assert!(names.contains(&name), "GET /messages documents {name}: {names:?}");
    }
    let send = &served["paths"]["/api/v1/messaging/messages"]["post"];
    assert!(
        send["parameters"].as_array().unwrap().iter().any(|p| p["name"] == "Idempotency-Key" && p["in"] == "header")
    );
    for status in ["200", "202", "400", "401", "403", "409", "413", "429", "500"] {
        assert!(send["responses"][status].is_object(), "POST /messages documents {status}");
    }
    assert!(send["responses"]["429"]["headers"]["Retry-After"].is_object());
    assert!(send["responses"]["202"]["headers"]["RateLimit"].is_object());
    assert_eq!(send["responses"]["409"]["content"]["application/json"]["schema"]["$ref"], "#/components/schemas/Error");
}

#[tokio::test]
async fn every_documented_operation_is_served_and_every_other_method_is_405() {
    let app = spawn_app().await;
    let document = document(&app).await;
    let paths = document["paths"].as_object().expect("paths");
    assert!(paths.len() >= 30, "{} paths", paths.len());
    let mut operations = 0;
    for (path, item) in paths {
        for method in METHODS {
            let operation = &item[method];
            let body = if operation.is_null() { None } else { example_body(&document, operation) };
            let (status, answer) = call(&app, method, path, Some(&app.org.key), body).await;
            if operation.is_null() {
                assert_eq!(status, 405, "{method} {path} is not documented but answered {status} {answer}");
                assert_eq!(answer["error"], "method_not_allowed");
            } else {
                operations += 1;
                assert_ne!(status, 405, "{method} {path} is documented but not served");
                assert!(
                    !(status == 404 && answer["message"] == "no such route"),
                    "{method} {path} is documented but not routed"
                );
                assert!(
                    operation["responses"][status.to_string()].is_object(),
                    "{method} {path} answered {status}, which it does not document: {answer}"
                );
            }
        }
    }
    assert!(operations >= 38, "{operations} operations");
    // A path nobody documented is nobody's route.
    let (status, answer) = call(&app, "get", "/api/v1/messaging/nothing-here", Some(&app.org.key), None).await;
    assert_eq!((status, answer["error"].as_str()), (404, Some("not_found")));
}

#[tokio::test]
async fn each_operation_refuses_a_key_without_the_scope_it_documents_and_no_other() {
    let app = spawn_app().await;
    let document = document(&app).await;
    let mut checked = 0;
    for (path, item) in document["paths"].as_object().expect("paths") {
        for method in METHODS {
            let operation = &item[method];
            if operation.is_null() {
                continue;
            }
            let security = operation["security"].as_array().cloned().unwrap_or_default();
            let scopes: Vec<&str> =
                security.iter().filter_map(|s| s["api_key"].as_array()).flatten().filter_map(Value::as_str).collect();
            if !path.starts_with("/api/v1/messaging/") || path.starts_with("/api/v1/messaging/bridge/") {
                assert!(scopes.is_empty(), "{method} {path} takes no API key but names {scopes:?}");
                continue;
            }
            assert_eq!(scopes.len(), 1, "{method} {path} names one scope: {security:?}");
            let scope = scopes[0];
            assert!(ALL_SCOPES.contains(&scope), "{method} {path}: {scope}");
            let others: Vec<&str> = ALL_SCOPES.iter().copied().filter(|s| *s != scope).collect();
            let without = app.create_key(&app.org, &others, None).await;
            let body = example_body(&document, operation);
            let (status, answer) = call(&app, method, path, Some(&without), body.clone()).await;
            assert_eq!(
                (status, answer["error"].as_str()),
                (403, Some(format!("missing {scope} scope").as_str())),
                "{method} {path} without {scope}"
            );
            let (status, _) = call(&app, method, path, None, body).await;
            assert_eq!(status, 401, "{method} {path} without a key");
            checked += 1;
        }
    }
    assert!(checked >= 30, "{checked} operations checked");
}
