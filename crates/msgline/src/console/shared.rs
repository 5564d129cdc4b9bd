//! What every signed-in page shares: its context (the header's staff member and CSRF token),
//! and how it says no.

use axum::{http::StatusCode, response::Response};
use minijinja::context;

use super::{pages::notice, session::SignedIn};
use crate::{
    db::{self, Page},
    error::ApiError,
    services::Services,
};

/// A page's context with the header's: `page` names the navigation entry it is under.
pub fn page_context(signed_in: &SignedIn, page: &str, values: minijinja::Value) -> minijinja::Value {
    context! {
        page,
        staff => context! { email => signed_in.staff.email, role => signed_in.staff.role.as_str() },
        csrf => signed_in.csrf,
        ..values
    }
}

/// An error as a sentence for a page: its message, and the field at fault.
pub fn describe(error: &ApiError) -> String {
    let message = error.message.clone().unwrap_or_else(|| error.code.to_string());
    match error.extra.get("field").and_then(|f| f.as_str()) {
        Some(field) => format!("{message} ({field})"),
        None => message,
    }
}

/// A refusal (a scope the role lacks, something not found) as a page, with the API's status.
pub fn refused(error: &ApiError) -> Response {
    notice(crate::web::errors::status(error.kind), "Not allowed", &describe(error))
}

pub fn unavailable(error: impl std::fmt::Display) -> Response {
    tracing::error!(error = %error, "a console page could not be read");
    notice(StatusCode::SERVICE_UNAVAILABLE, "Unavailable", "The page could not be read. Try again.")
}

/// A posted form as its pairs, for forms that repeat a name (a checkbox per item), which the
/// form extractor would read as one.
pub struct FormPairs(Vec<(String, String)>);

pub fn form_pairs(body: &[u8]) -> FormPairs {
    FormPairs(url::form_urlencoded::parse(body).into_owned().collect())
}

impl FormPairs {
    /// The first value of `name` (empty if absent).
    pub fn one(&self, name: &str) -> String {
        self.0.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone()).unwrap_or_default()
    }

    /// Every value of `name`, in order.
    pub fn all(&self, name: &str) -> Vec<String> {
        self.0.iter().filter(|(k, _)| k == name).map(|(_, v)| v.clone()).collect()
    }
}

/// The organisation's lines as a form's choices (`{id, e164}`).
pub async fn line_choices(state: &Services, org_id: &str) -> sqlx::Result<Vec<minijinja::Value>> {
    let lines = db::lines::list_for_org(&state.sender.db, org_id, &Page { limit: 100, before: None }).await?;
    Ok(lines.rows.into_iter().map(|l| context! { id => l.id, e164 => l.e164 }).collect())
}
