//! Rendering: the templates (embedded in the binary, parsed once), the page a template makes,
//! and the static assets.

use std::sync::OnceLock;

use axum::{
    extract::Path,
    http::{HeaderValue, StatusCode, header},
    response::{Html, IntoResponse, Response},
};
use minijinja::Environment;
use serde::Serialize;

/// Every template, by name. A name ending in `.html` is escaped for HTML by default.
const TEMPLATES: &[(&str, &str)] = &[
    ("base.html", include_str!("templates/base.html")),
    ("sign_in.html", include_str!("templates/sign_in.html")),
    ("welcome.html", include_str!("templates/welcome.html")),
    ("notice.html", include_str!("templates/notice.html")),
    ("overview.html", include_str!("templates/overview.html")),
    ("conversations.html", include_str!("templates/conversations.html")),
    ("thread.html", include_str!("templates/thread.html")),
    ("thread_messages.html", include_str!("templates/thread_messages.html")),
    ("contacts.html", include_str!("templates/contacts.html")),
    ("contact.html", include_str!("templates/contact.html")),
    ("opt_outs.html", include_str!("templates/opt_outs.html")),
    ("keys.html", include_str!("templates/keys.html")),
    ("lines.html", include_str!("templates/lines.html")),
    ("pools.html", include_str!("templates/pools.html")),
    ("settings.html", include_str!("templates/settings.html")),
    ("webhooks.html", include_str!("templates/webhooks.html")),
    ("agents.html", include_str!("templates/agents.html")),
    ("groups.html", include_str!("templates/groups.html")),
    ("group.html", include_str!("templates/group.html")),
    ("agent.html", include_str!("templates/agent.html")),
    ("webhook.html", include_str!("templates/webhook.html")),
    ("staff.html", include_str!("templates/staff.html")),
];

/// The static files, by name: content type and bytes.
const ASSETS: &[(&str, &str, &str)] = &[
    ("console.css", "text/css; charset=utf-8", include_str!("assets/console.css")),
    ("console.js", "text/javascript; charset=utf-8", include_str!("assets/console.js")),
];

fn environment() -> &'static Environment<'static> {
    static ENVIRONMENT: OnceLock<Environment<'static>> = OnceLock::new();
    ENVIRONMENT.get_or_init(|| {
        let mut env = Environment::new();
        for (name, source) in TEMPLATES {
            env.add_template(name, source).expect("the console's templates parse");
        }
        env
    })
}

/// A rendered page with the given status.
pub fn render(status: StatusCode, template: &str, context: impl Serialize) -> Response {
    let rendered = environment().get_template(template).and_then(|t| t.render(context));
    match rendered {
        Ok(html) => (status, Html(html)).into_response(),
        Err(error) => {
            tracing::error!(template, error = %error, "a console page could not be rendered");
            (StatusCode::INTERNAL_SERVER_ERROR, "the page could not be rendered").into_response()
        }
    }
}

/// A part of a page, as text (what a live update sends); empty if it cannot be rendered.
pub fn render_fragment(template: &str, context: impl Serialize) -> String {
    environment().get_template(template).and_then(|t| t.render(context)).unwrap_or_else(|error| {
        tracing::error!(template, error = %error, "a console fragment could not be rendered");
        String::new()
    })
}

/// A page that only says something: a refusal, a wait, a link that no longer works.
pub fn notice(status: StatusCode, title: &str, text: &str) -> Response {
    render(status, "notice.html", minijinja::context! { title, text })
}

/// `GET /console/assets/{name}`.
pub async fn asset(Path(name): Path<String>) -> Response {
    match ASSETS.iter().find(|(n, ..)| *n == name) {
        Some((_, content_type, body)) => {
            let mut response = (*body).into_response();
            let headers = response.headers_mut();
            headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
            headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("public, max-age=3600"));
            response
        }
        None => notice(StatusCode::NOT_FOUND, "Not found", "There is no such file."),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_template_parses_and_text_is_escaped() {
        let env = environment();
        for (name, _) in TEMPLATES {
            assert!(env.get_template(name).is_ok(), "{name}");
        }
        let html = env
            .get_template("notice.html")
            .unwrap()
            .render(minijinja::context! { title => "t", text => "<script>alert(1)</script>" })
            .unwrap();
        assert!(html.contains("&lt;script&gt;") && !html.contains("<script>alert"), "{html}");
    }
}
