//! The HTTP API: one module per resource, each with its types, thin handlers and router.

pub mod agents;
pub(crate) mod attachments;
pub mod auth;
mod availability;
pub mod bench;
mod bridge_events;
pub mod contact_cards;
pub mod contacts;
mod conversations;
mod events;
pub mod extract;
mod feed;
pub mod groups;
mod health;
pub mod keys;
mod lines;
mod message_actions;
pub mod messages;
pub mod mobile;
pub mod openapi;
pub mod opt_outs;
pub mod polls;
mod pools;
pub mod webhooks;

use std::time::Instant;

use axum::{
    Router,
    extract::{MatchedPath, Request, State},
    http::{HeaderName, HeaderValue, header},
    middleware::{self, Next},
    response::{IntoResponse, Response},
};
use tracing::Instrument;
use utoipa::OpenApi;
use utoipa_axum::router::OpenApiRouter;

use crate::{
    error::{ApiError, ErrorKind},
    ids,
    ratelimit::Allowance,
    services::Services,
};

pub const BASE: &str = "/api/v1/messaging";

/// Every route, each registered with its OpenAPI description; `authenticate` puts the API-key
/// check on the routes that take one.
fn routes(authenticate: impl FnOnce(OpenApiRouter<Services>) -> OpenApiRouter<Services>) -> OpenApiRouter<Services> {
    let authenticated = OpenApiRouter::new()
        .merge(keys::router())
        .merge(lines::router())
        .merge(pools::router())
        .merge(contacts::router())
        .merge(opt_outs::router())
        .merge(availability::router())
        .merge(conversations::router())
        .merge(messages::router())
        .merge(message_actions::router())
        .merge(attachments::router())
        .merge(contact_cards::router())
        .merge(polls::router())
        .merge(groups::router())
        .merge(agents::router())
        .merge(events::router())
        .merge(feed::router())
        .merge(webhooks::router());
    OpenApiRouter::with_openapi(openapi::Root::openapi())
        .nest(BASE, authenticate(authenticated).merge(bridge_events::router()))
        .merge(health::router())
        .merge(openapi::router())
}

/// The API's routes and, merged with them under the same request handling, the pages given
/// (the console's).
pub fn router(state: Services, pages: Router<Services>) -> Router {
    let (routes, _) = routes(|routes| routes.route_layer(middleware::from_fn_with_state(state.clone(), authenticate)))
        .split_for_parts();
    let mut router = Router::new();
    if state.sender.config.bench_routes {
        router = router.merge(bench::routes());
    }
    router
        .merge(routes)
        .merge(mobile::router())
        .merge(pages)
        // Inside routing, where the route's template is known: handed to `request_id` below.
        .route_layer(middleware::from_fn(route_template))
        .fallback(|| async { ApiError::not_found("route") })
        .method_not_allowed_fallback(|| async {
            ApiError::new(ErrorKind::NotAllowed, "method_not_allowed")
                .with_message("this route does not take that method")
        })
        .layer(middleware::from_fn(refuse_unreadable_urls))
        .layer(middleware::from_fn(request_id))
        .with_state(state)
}

/// A URL whose path is not UTF-8 once decoded, or with an encoded NUL (`%00`, which PostgreSQL
/// text cannot hold) anywhere, names nothing msgline stores: 400 before any route reads it. A
/// device's hook is the exception for its query: Kannel puts a UCS-2 text's bytes there, zeros
/// among them, and the line's kind decodes them (a NUL left in the text is then taken out).
async fn refuse_unreadable_urls(req: Request, next: Next) -> Response {
    let uri = req.uri();
    let hook = uri.path().strip_prefix(BASE).is_some_and(|rest| rest.starts_with("/bridge/hooks/"));
    let checked = match hook {
        true => uri.path(),
        false => uri.path_and_query().map_or("", |p| p.as_str()),
    };
    if checked.contains("%00") {
        return ApiError::bad_request("the URL may not contain NUL characters (%00)").into_response();
    }
    if percent_encoding::percent_decode_str(uri.path()).decode_utf8().is_err() {
        return ApiError::bad_request("the URL's path is not valid UTF-8").into_response();
    }
    next.run(req).await
}

static X_REQUEST_ID: HeaderName = HeaderName::from_static("x-request-id");

/// Gives every request an id (keeping a sane one the client sent), a log span and a log line.
async fn request_id(req: Request, next: Next) -> Response {
    let id = req
        .headers()
        .get(&X_REQUEST_ID)
        .and_then(|v| v.to_str().ok())
        .filter(|v| !v.is_empty() && v.len() <= 128)
        .filter(|v| v.bytes().all(|b| b.is_ascii_alphanumeric() || b"-_.:".contains(&b)))
        .map(str::to_string)
        .unwrap_or_else(|| ids::new_id("req"));
    let span = tracing::info_span!("request", request_id = %id, method = %req.method(), path = %req.uri().path());
    let method = req.method().clone();
    let started = Instant::now();
    let mut response = next.run(req).instrument(span.clone()).await;
    let status = response.status().as_u16();
    let route = response.extensions().get::<RouteTemplate>().map_or("unmatched", |r| r.0.as_str());
    crate::metrics::http_request(&method, route, status, started.elapsed().as_secs_f64());
    span.in_scope(|| {
        let elapsed_ms = started.elapsed().as_secs_f64() * 1000.0;
        if status >= 500 {
            tracing::warn!(status, elapsed_ms, "request failed");
        } else {
            tracing::debug!(status, elapsed_ms, "request served");
        }
    });
    if let Ok(value) = HeaderValue::from_str(&id) {
        response.headers_mut().insert(X_REQUEST_ID.clone(), value);
    }
    response
}

/// The template of the route that served a request (`/api/v1/messaging/messages/{id}`): the
/// metrics' label, never the path itself, which carries ids.
#[derive(Debug, Clone)]
struct RouteTemplate(MatchedPath);

/// Also the request's span of the trace (`MSGLINE_OTLP_ENDPOINT`), named for its method and
/// route, never its path or query (a device's hook carries a secret in its query).
async fn route_template(req: Request, next: Next) -> Response {
    let template = req.extensions().get::<MatchedPath>().cloned();
    let route = template.as_ref().map_or("unmatched", |t| t.as_str());
    let span = tracing::info_span!(target: crate::trace::TARGET, crate::trace::REQUEST,
        otel.name = %format!("{} {route}", req.method()), otel.kind = "server",
        http.request.method = %req.method(), http.route = route,
        http.response.status_code = tracing::field::Empty, msgline.message_id = tracing::field::Empty);
    let mut response = next.run(req).instrument(span.clone()).await;
    span.record("http.response.status_code", i64::from(response.status().as_u16()));
    if let Some(template) = template {
        response.extensions_mut().insert(RouteTemplate(template));
    }
    response
}

/// Authenticates the bearer key and counts the request against the caller's rate limits.
async fn authenticate(State(state): State<Services>, mut req: Request, next: Next) -> Response {
    let header = req.headers().get(header::AUTHORIZATION).and_then(|v| v.to_str().ok());
    // The send policy is counted where a send is accepted (`send::rates`), for every edge alike;
    // its allowance comes back on the response.
    let (principal, mut allowances) = match state.admit(header).await {
        Ok(admitted) => admitted,
        Err(error) => return error.into_response(),
    };
    req.extensions_mut().insert(principal);
    let mut response = next.run(req).await;
    allowances.extend(response.extensions_mut().remove::<Allowance>());
    let policy = allowances.iter().map(|a| a.policy_item()).collect::<Vec<_>>().join(", ");
    let remaining = allowances.iter().map(|a| a.state_item()).collect::<Vec<_>>().join(", ");
    let headers = response.headers_mut();
    if let (Ok(policy), Ok(remaining)) = (HeaderValue::from_str(&policy), HeaderValue::from_str(&remaining)) {
        headers.insert(HeaderName::from_static("ratelimit-policy"), policy);
        headers.insert(HeaderName::from_static("ratelimit"), remaining);
    }
    response
}
