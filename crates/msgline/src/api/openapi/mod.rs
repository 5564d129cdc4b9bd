//! The OpenAPI 3.1 document, generated from the router: every route is registered together with
//! its `#[utoipa::path]` description (`utoipa_axum::routes!`), so a route cannot be served without
//! being documented. Here: the document's head, the answers every route shares (added to each
//! operation by [`complete`] rather than repeated on 40 handlers), the links between operations
//! that stateful tests follow, and `GET /api/v1/openapi.json`.

mod message_schema;
pub mod schemas;

use std::sync::OnceLock;

use axum::{
    http::header,
    response::{IntoResponse, Response},
};
use serde_json::{Value, json};
use utoipa::{
    OpenApi,
    openapi::{
        self, Content, Ref, RefOr,
        header::HeaderBuilder,
        path::Operation,
        response::{Response as ApiResponse, ResponseBuilder},
        schema::{ObjectBuilder, Type},
        security::{Http, HttpAuthScheme, SecurityScheme},
    },
};
use utoipa_axum::{router::OpenApiRouter, routes};

use super::BASE;
use crate::services::Services;

#[derive(OpenApi)]
#[openapi(
    info(
        title = "msgline",
        description = "A self-hostable messaging API for SMS and iMessage: sends with idempotency keys, \
            contact cards, native iMessage polls and groups, hosted agents, and webhooks. Authenticate \
            with `Authorization: Bearer <API key>`; each operation names the scope its key needs.",
        license(name = "Apache-2.0", identifier = "Apache-2.0"),
    ),
    components(schemas(schemas::Error)),
    tags(
        (name = "messages", description = "Texts, and the delivery attempts behind them"),
        (name = "contact cards", description = "Saveable contact cards (vCard 3.0)"),
        (name = "polls", description = "Native iMessage polls and their tallies"),
        (name = "groups", description = "iMessage group chats"),
        (name = "conversations"),
        (name = "contacts"),
        (name = "opt-outs", description = "Numbers that texted STOP, and the automatic replies to STOP, START and HELP"),
        (name = "lines", description = "The phone lines a key may send from"),
        (name = "keys", description = "API keys"),
        (name = "webhooks", description = "Endpoints that receive events, and their deliveries"),
        (name = "events", description = "The event feed: the events webhooks carry, read as pages or a stream"),
        (name = "agents", description = "Hosted agents that answer on a line"),
        (name = "bridge", description = "Callbacks from the lines' devices (not for API keys)"),
        (name = "operations", description = "Health, metrics and this document"),
    )
)]
pub struct Root;

pub fn router() -> OpenApiRouter<Services> {
    OpenApiRouter::new().routes(routes!(openapi_json))
}

/// This document (no API key needed).
#[utoipa::path(
    get,
    path = "/api/v1/openapi.json",
    tag = "operations",
    operation_id = "get_openapi",
    responses((status = 200, description = "The OpenAPI 3.1 document", body = Object)),
)]
async fn openapi_json() -> Response {
    static JSON: OnceLock<String> = OnceLock::new();
    let body = JSON.get_or_init(|| document().to_string());
    ([(header::CONTENT_TYPE, "application/json")], body.as_str()).into_response()
}

/// The whole document, as `GET /api/v1/openapi.json` and `msgline openapi` give it.
pub fn document() -> Value {
    let (_, mut document) = super::routes(|routes| routes).split_for_parts();
    complete(&mut document);
    let mut document = serde_json::to_value(&document).expect("the document serialises");
    add_links(&mut document);
    document
}

/// Adds what every operation shares: the security scheme, the errors any route of its kind can
/// answer, the headers on every answer, and the links from a creation to its resource.
fn complete(document: &mut openapi::OpenApi) {
    let components = document.components.get_or_insert_with(Default::default);
    components.add_security_scheme(
        "api_key",
        SecurityScheme::Http(
            Http::builder()
                .scheme(HttpAuthScheme::Bearer)
                .bearer_format("mlk_…")
                .description(Some("An API key, from `msgline admin org create` or `POST /keys`"))
                .build(),
        ),
    );
    components.add_security_scheme(
        "bridge_secret",
        SecurityScheme::Http(
            Http::builder()
                .scheme(HttpAuthScheme::Bearer)
                .description(Some("A line's `bridge_secret`, for its bridge's callbacks"))
                .build(),
        ),
    );
    for (path, item) in document.paths.paths.iter_mut() {
        for (method, operation) in operations(item) {
            complete_operation(path, method, operation);
        }
    }
}

fn operations(item: &mut openapi::PathItem) -> Vec<(&'static str, &mut Operation)> {
    [
        ("GET", &mut item.get),
        ("POST", &mut item.post),
        ("PUT", &mut item.put),
        ("PATCH", &mut item.patch),
        ("DELETE", &mut item.delete),
    ]
    .into_iter()
    .filter_map(|(method, operation)| operation.as_mut().map(|operation| (method, operation)))
    .collect()
}

/// Whether a route takes an API key: everything under the base path but the bridges' callbacks.
pub fn takes_api_key(path: &str) -> bool {
    path.starts_with(BASE) && !path.starts_with(&format!("{BASE}/bridge/"))
}

fn complete_operation(path: &str, method: &str, operation: &mut Operation) {
    let authenticated = takes_api_key(path);
    let has_input = operation.request_body.is_some() || operation.parameters.as_ref().is_some_and(|p| !p.is_empty());
    let mut shared = vec![("500", "Something failed on our side; retry with backoff (`internal_error`)")];
    if has_input || path.starts_with(&format!("{BASE}/bridge/")) {
        shared.push(("400", "The request is malformed (`invalid_request`, with `field` where one is at fault)"));
    }
    if operation.request_body.is_some() {
        shared.push(("413", "The body is over 1 MiB (`payload_too_large`)"));
    }
    if path.contains('{') {
        shared.push(("404", "No such resource for this organisation (`not_found`)"));
    }
    if authenticated || path.starts_with(&format!("{BASE}/bridge/")) {
        shared.push(("401", "A missing, unknown, revoked or expired key (`unauthorized`)"));
    }
    if authenticated {
        shared.push(("403", "The key lacks the operation's scope (`missing <scope> scope`)"));
        shared.push(("429", "Over a rate limit (`rate_limited`); see `Retry-After`"));
    }
    if takes_idempotency_key(operation) && !operation.responses.responses.contains_key("200") {
        let accepted = ["202", "201"].iter().find_map(|s| operation.responses.responses.get(*s)).cloned();
        if let Some(RefOr::T(mut replay)) = accepted {
            replay.description = "An idempotent replay: the first answer, with `duplicate: true`".into();
            replay.headers.insert(
                "Idempotent-Replayed".into(),
                string_header("`true`: this answers an earlier request with the same key"),
            );
            operation.responses.responses.insert("200".into(), RefOr::T(replay));
        }
    }
    for (status, description) in shared {
        if !operation.responses.responses.contains_key(status) {
            operation.responses.responses.insert(status.to_string(), RefOr::T(error_response(description)));
        }
    }
    for (status, response) in operation.responses.responses.iter_mut() {
        if let RefOr::T(response) = response {
            add_headers(status, authenticated, response);
        }
    }
    if authenticated {
        assert!(
            operation.security.as_ref().is_some_and(|s| !s.is_empty()),
            "{method} {path} takes an API key but does not name its scope"
        );
    }
}

/// Whether an operation takes `Idempotency-Key`: the same request again answers `200` with the
/// first answer.
fn takes_idempotency_key(operation: &Operation) -> bool {
    operation.parameters.iter().flatten().any(|p| p.name == "Idempotency-Key")
}

fn error_response(description: &str) -> ApiResponse {
    ResponseBuilder::new()
        .description(description)
        .content("application/json", Content::new(Some(Ref::from_schema_name("Error"))))
        .build()
}

fn string_header(description: &str) -> openapi::header::Header {
    HeaderBuilder::new().schema(ObjectBuilder::new().schema_type(Type::String)).description(Some(description)).build()
}

fn add_headers(status: &str, authenticated: bool, response: &mut ApiResponse) {
    response.headers.insert(
        "X-Request-Id".into(),
        string_header("The request's id (a sane one the client sent is echoed); quote it when reporting a problem"),
    );
    if authenticated && status != "401" && status != "429" {
        response.headers.insert(
            "RateLimit-Policy".into(),
            string_header("The caller's policies, e.g. `\"global\";q=100;w=60, \"send\";q=60;w=60`"),
        );
        response
            .headers
            .insert("RateLimit".into(), string_header("What is left of each policy, e.g. `\"global\";r=97;t=2`"));
    }
    if status == "429" || status == "409" {
        response.headers.insert(
            "Retry-After".into(),
            HeaderBuilder::new()
                .schema(ObjectBuilder::new().schema_type(Type::Integer))
                .description(Some("Seconds to wait (on 429, and on 409 `idempotency_key_in_progress`)"))
                .build(),
        );
    }
}

/// Where a creation's answer leads: (path, status, the JSON pointer of the new id, the path whose
/// `GET` reads it). Written into the JSON, as OpenAPI's `links`, for stateful tests to follow.
const LINKS: &[(&str, &str, &str, &str)] = &[
    ("/messages", "202", "/message/id", "/messages/{id}"),
    ("/contact-cards", "202", "/message/id", "/messages/{id}"),
    ("/polls", "202", "/poll/id", "/polls/{id}"),
    ("/groups", "201", "/group/id", "/groups/{id}"),
    ("/contacts", "201", "/id", "/contacts/{id}"),
    ("/webhooks", "201", "/id", "/webhooks/{id}"),
    ("/agents", "201", "/id", "/agents/{id}"),
];

fn add_links(document: &mut Value) {
    for (from, status, pointer, to) in LINKS {
        let target = document["paths"][format!("{BASE}{to}")]["get"]["operationId"].clone();
        let Some(target) = target.as_str().map(str::to_string) else { continue };
        let response = &mut document["paths"][format!("{BASE}{from}")]["post"]["responses"][*status];
        if response.is_object() {
            response["links"][&target] =
                json!({"operationId": target, "parameters": {"id": format!("$response.body#{pointer}")}});
        }
    }
}
