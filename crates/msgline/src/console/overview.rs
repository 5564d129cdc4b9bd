//! The overview: each line's health, the last day's sends by status, what needs attention (lines
//! flagged or offline, messages `unknown` or `failed`) and the webhook endpoints that are failing or disabled.

use axum::{extract::State, http::StatusCode, response::Response};
use minijinja::context;
use serde::Serialize;

use super::{pages::render, session::SignedIn};
use crate::{
    clock,
    db::{self, Page, messages::MessageFilter},
    domain::{lifecycle::MessageStatus, scope::Scope},
    services::Services,
};

#[derive(Serialize)]
struct LineRow {
    id: String,
    e164: String,
    kind: &'static str,
    bridge_kind: &'static str,
    status: String,
    capabilities: Vec<&'static str>,
    checked_at: Option<String>,
    health: &'static str,
    health_reason: Option<String>,
}

#[derive(Serialize)]
struct Attention {
    id: String,
    status: &'static str,
    channel: &'static str,
    conversation_id: String,
    body: String,
    error: Option<String>,
    updated_at: String,
}

#[derive(Serialize)]
struct Failing {
    id: String,
    url: String,
    state: &'static str,
    since: Option<String>,
    reason: Option<String>,
}

/// `GET /console`.
pub async fn page(State(state): State<Services>, signed_in: SignedIn) -> Response {
    match gather(&state, &signed_in).await {
        Ok(context) => render(StatusCode::OK, "overview.html", context),
        Err(error) => {
            tracing::error!(error = %error, "the overview could not be read");
            super::pages::notice(StatusCode::SERVICE_UNAVAILABLE, "Unavailable", "The overview could not be read.")
        }
    }
}

async fn gather(state: &Services, signed_in: &SignedIn) -> sqlx::Result<minijinja::Value> {
    let org_id = &signed_in.principal.org_id;
    let lines = db::lines::list_for_org(&state.sender.db, org_id, &Page { limit: 100, before: None }).await?;
    let lines: Vec<LineRow> = lines
        .rows
        .iter()
        .map(|line| LineRow {
            id: line.id.clone(),
            e164: line.e164.clone(),
            kind: line.kind.as_str(),
            bridge_kind: line.bridge_kind.as_str(),
            status: line.status.clone(),
            capabilities: line.capabilities.as_ref().map(capability_names).unwrap_or_default(),
            checked_at: clock::rfc3339_opt(line.checked_at),
            health: line.health.as_str(),
            health_reason: line.health_reason.clone(),
        })
        .collect();
    // Lines that stopped by themselves need a person: a flag waits for one, an offline device too.
    let stopped: Vec<&LineRow> = lines.iter().filter(|l| matches!(l.health, "flagged" | "offline")).collect();
    let now = clock::now_ms();
    let sends = db::stats::sends_by_status(&state.sender.db, org_id, now - 24 * 3_600_000).await?;
    let mut attention = Vec::new();
    for status in [MessageStatus::Unknown, MessageStatus::Failed] {
        let filter = MessageFilter { status: Some(status), ..MessageFilter::default() };
        let page = db::messages::list(&state.sender.db, org_id, &filter, &Page { limit: 10, before: None }).await?;
        attention.extend(page.rows.into_iter().map(|listed| {
            let message = listed.message;
            Attention {
                status: message.status.as_str(),
                channel: message.channel.as_str(),
                conversation_id: message.conversation_id,
                body: message.body.chars().take(80).collect(),
                error: message.error,
                updated_at: clock::rfc3339(message.updated_at),
                id: message.id,
            }
        }));
    }
    // Webhook endpoints are the owners' to see (the API's webhooks scope).
    let mut failing = Vec::new();
    if signed_in.principal.scopes.contains(Scope::Webhooks) {
        let hooks = db::webhooks::list(&state.sender.db, org_id, None, &Page { limit: 100, before: None }).await?;
        failing.extend(hooks.rows.into_iter().filter(|h| !h.enabled || h.failing_since.is_some()).map(|h| Failing {
            state: if h.enabled { "failing" } else { "disabled" },
            since: clock::rfc3339_opt(if h.enabled { h.failing_since } else { h.disabled_at }),
            reason: h.disabled_reason,
            url: h.url,
            id: h.id,
        }));
    }
    Ok(context! {
        page => "overview",
        staff => context! { email => signed_in.staff.email, role => signed_in.staff.role.as_str() },
        csrf => signed_in.csrf,
        stopped,
        lines,
        sends,
        attention,
        failing,
    })
}

fn capability_names(capabilities: &db::lines::Capabilities) -> Vec<&'static str> {
    let flags = [
        (capabilities.sms, "SMS"),
        (capabilities.imessage, "iMessage"),
        (capabilities.groups, "groups"),
        (capabilities.polls, "polls"),
        (capabilities.media, "media"),
        (capabilities.mms, "MMS"),
        (capabilities.typing, "typing"),
        (capabilities.read_receipts, "read receipts"),
    ];
    flags.into_iter().filter(|(on, _)| *on).map(|(_, name)| name).collect()
}
