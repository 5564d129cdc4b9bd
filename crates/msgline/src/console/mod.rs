//! The console: the web pages the people who run msgline sign in to, served by `msgline serve`
//! under `/console` (`GET /` redirects there). Pages are rendered on the server from templates
//! embedded in the binary; every text from a message, a contact or an agent is escaped.
//!
//! A signed-in staff member is a caller like an API key: each page acts through the same service
//! functions as the API, with a [`Principal`](crate::caller::Principal) whose scopes come from the
//! staff member's role and whose rate limits are counted against them (see `session.rs`).
//!
//! Every response carries a Content-Security-Policy without inline scripts or styles,
//! `frame-ancestors 'none'` and a same-origin referrer policy; every state change needs the
//! session's CSRF token and a same-origin request (see `session.rs`).

mod agents;
mod contacts;
mod conversations;
mod groups;
mod keys;
mod lines;
mod overview;
mod pages;
mod pools;
mod session;
mod settings;
mod shared;
mod thread_actions;
mod thread_view;
mod webhooks;

use axum::{
    Router,
    extract::{DefaultBodyLimit, Request},
    http::{HeaderValue, header},
    middleware::{self, Next},
    response::{IntoResponse, Redirect, Response},
    routing::{get, post},
};

use crate::services::Services;

pub use session::LINK_MS;

/// The console's routes: the public ones (sign-in, a sign-in link, the assets) and the pages that
/// need a session.
pub fn router(state: Services) -> Router<Services> {
    let signed_in = Router::new()
        .route("/console", get(overview::page))
        .route("/console/sign-out", post(session::sign_out))
        .route("/console/conversations", get(conversations::list).post(conversations::start))
        .route("/console/conversations/{id}", get(conversations::thread))
        .route(
            "/console/conversations/{id}/messages",
            // The files of one message together up to the media limit, and its text besides.
            post(conversations::send)
                .layer(DefaultBodyLimit::max(state.sender.config.media_max_bytes as usize + (1 << 20))),
        )
        .route("/console/conversations/{id}/messages/{message_id}/{action}", post(thread_actions::act))
        .route("/console/conversations/{id}/typing", post(conversations::typing))
        .route("/console/attachments/{id}", get(conversations::attachment))
        .route("/console/conversations/{id}/live", get(conversations::live))
        .route("/console/conversations/{id}/{kind}", post(conversations::send_extra))
        .route("/console/contacts", get(contacts::list))
        .route("/console/contacts/{id}", get(contacts::contact).post(contacts::save))
        .route("/console/opt-outs", get(contacts::opt_outs))
        .route("/console/opt-outs/{id}/clear", post(contacts::clear))
        .route("/console/lines", get(lines::list))
        .route("/console/lines/{id}/{action}", post(lines::act))
        .route("/console/pools", get(pools::list).post(pools::create))
        .route("/console/pools/{id}/{action}", post(pools::act))
        .route("/console/keys", get(keys::list).post(keys::create))
        .route("/console/keys/{id}/rotate", post(keys::rotate))
        .route("/console/keys/{id}/revoke", post(keys::revoke))
        .route("/console/groups", get(groups::list).post(groups::create))
        .route("/console/groups/{id}", get(groups::group))
        .route("/console/groups/{id}/{action}", post(groups::change))
        .route("/console/agents", get(agents::list).post(agents::create))
        .route("/console/agents/new", get(agents::new))
        .route("/console/agents/{id}", get(agents::edit).post(agents::update))
        .route("/console/agents/{id}/try", post(agents::try_it))
        .route("/console/webhooks", get(webhooks::list).post(webhooks::create))
        .route("/console/webhooks/{id}", get(webhooks::endpoint))
        .route("/console/webhooks/{id}/{action}", post(webhooks::act))
        .route("/console/settings", get(settings::settings).post(settings::save_settings))
        .route("/console/staff", get(settings::staff).post(settings::invite))
        .route("/console/staff/{id}/role", post(settings::change_role))
        .route("/console/staff/{id}/remove", post(settings::remove))
        .route_layer(middleware::from_fn_with_state(state, session::require));
    Router::new()
        .route("/", get(|| async { Redirect::to("/console") }))
        .route("/console/sign-in", get(session::sign_in_page).post(session::sign_in))
        .route("/console/welcome", get(session::welcome_page).post(session::welcome))
        .route("/console/assets/{name}", get(pages::asset))
        .merge(signed_in)
        .layer(middleware::from_fn(secure_headers))
}

/// The headers every console response carries.
async fn secure_headers(req: Request, next: Next) -> Response {
    let mut response = next.run(req).await.into_response();
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(
            "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; \
             form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
        ),
    );
    headers.insert(header::REFERRER_POLICY, HeaderValue::from_static("same-origin"));
    headers.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    headers.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    if !headers.contains_key(header::CACHE_CONTROL) {
        headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    }
    response
}
