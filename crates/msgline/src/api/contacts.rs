//! `POST /contacts` (upsert by phone; scope `messaging_contacts`), `GET /contacts?q=` and
//! `GET /contacts/{id}` (scope `messaging_read`).

use axum::{
    Json, Router,
    extract::{Path, State},
    http::StatusCode,
    routing::get,
};
use serde::Deserialize;
use serde_json::Value;

use super::extract::{ApiJson, ApiQuery, list, page};
use crate::{
    db::{
        self,
        contacts::{Contact, ContactFields},
    },
    domain::scope::Scope,
    error::{ApiError, ApiResult},
    fields::{bounded, email_field, phone_field},
    state::{AppState, Principal},
};

pub fn router() -> Router<AppState> {
    Router::new().route("/contacts", get(search).post(upsert)).route("/contacts/{id}", get(get_contact))
}

pub fn view(contact: &Contact) -> Value {
    contact.to_json()
}

#[derive(Deserialize)]
struct UpsertContact {
    phone: String,
    name: Option<String>,
    email: Option<String>,
    organization: Option<String>,
    note: Option<String>,
    default_country: Option<String>,
}

async fn upsert(
    State(state): State<AppState>,
    caller: Principal,
    ApiJson(body): ApiJson<UpsertContact>,
) -> ApiResult<(StatusCode, Json<Value>)> {
    caller.require(Scope::Contacts)?;
    let phone = phone_field("phone", &body.phone, body.default_country.as_deref())?;
    let fields = ContactFields {
        name: bounded("name", body.name, 200)?,
        email: email_field(body.email)?,
        organization: bounded("organization", body.organization, 200)?,
        note: bounded("note", body.note, 2000)?,
    };
    let (contact, created) = db::contacts::upsert(&state.db, &caller.org_id, &phone, &fields).await?;
    let status = if created { StatusCode::CREATED } else { StatusCode::OK };
    Ok((status, Json(view(&contact))))
}

#[derive(Deserialize)]
struct SearchQuery {
    q: Option<String>,
    limit: Option<String>,
    cursor: Option<String>,
}

async fn search(
    State(state): State<AppState>,
    caller: Principal,
    ApiQuery(query): ApiQuery<SearchQuery>,
) -> ApiResult<Json<Value>> {
    caller.require(Scope::Read)?;
    let page = page(query.limit.as_deref(), query.cursor.as_deref())?;
    let q = bounded("q", query.q, 200)?;
    let paged = db::contacts::search(&state.db, &caller.org_id, q.as_deref(), &page).await?;
    Ok(Json(list(paged, view)))
}

async fn get_contact(
    State(state): State<AppState>,
    caller: Principal,
    Path(id): Path<String>,
) -> ApiResult<Json<Value>> {
    caller.require(Scope::Read)?;
    let contact =
        db::contacts::get(&state.db, &caller.org_id, &id).await?.ok_or_else(|| ApiError::not_found("contact"))?;
    Ok(Json(view(&contact)))
}
