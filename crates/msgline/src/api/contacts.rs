//! `POST /contacts` (upsert by phone; scope `messaging_contacts`), `GET /contacts?q=` and
//! `GET /contacts/{id}` (scope `messaging_read`).

use axum::{
    Json,
    extract::{Path, State},
    http::StatusCode,
};
use serde::Deserialize;
use serde_json::Value;
use utoipa_axum::{router::OpenApiRouter, routes};

use super::{
    extract::{ApiJson, ApiQuery, PageParams, PageQuery, list},
    openapi::schemas,
};
use crate::services::contacts::{UpsertContact, save};
use crate::{
    caller::Principal,
    db::{self, contacts::Contact},
    domain::scope::Scope,
    error::{ApiError, ApiResult},
    fields::bounded,
    services::Services,
};

pub fn router() -> OpenApiRouter<Services> {
    OpenApiRouter::new().routes(routes!(search, upsert)).routes(routes!(get_contact))
}

pub fn view(contact: &Contact) -> Value {
    contact.to_json()
}

/// Create or update a contact, by phone number.
#[utoipa::path(
    post,
    path = "/contacts",
    tag = "contacts",
    security(("api_key" = ["messaging_contacts"])),
    request_body = UpsertContact,
    responses(
        (status = 201, description = "A new contact", body = schemas::Contact),
        (status = 200, description = "The existing contact with this number, updated", body = schemas::Contact),
    ),
)]
async fn upsert(
    State(state): State<Services>,
    caller: Principal,
    ApiJson(body): ApiJson<UpsertContact>,
) -> ApiResult<(StatusCode, Json<Value>)> {
    let (contact, created) = save(&state, &caller, body).await?;
    let status = if created { StatusCode::CREATED } else { StatusCode::OK };
    Ok((status, Json(view(&contact))))
}

#[derive(Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
struct SearchQuery {
    /// Part of a name, number, email or organisation (up to 200 characters).
    #[param(max_length = 200)]
    q: Option<String>,
}

/// Search contacts.
#[utoipa::path(
    get,
    path = "/contacts",
    tag = "contacts",
    security(("api_key" = ["messaging_read"])),
    params(SearchQuery, PageParams),
    responses((status = 200, description = "A page of contacts", body = schemas::List<schemas::Contact>)),
)]
async fn search(
    State(state): State<Services>,
    caller: Principal,
    ApiQuery(query): ApiQuery<SearchQuery>,
    PageQuery(page): PageQuery,
) -> ApiResult<Json<Value>> {
    caller.require(Scope::Read)?;
    let page = page?;
    let q = bounded("q", query.q, 200)?;
    let paged = db::contacts::search(&state.sender.db, &caller.org_id, q.as_deref(), &page).await?;
    Ok(Json(list(paged, view)))
}

/// A contact.
#[utoipa::path(
    get,
    path = "/contacts/{id}",
    tag = "contacts",
    security(("api_key" = ["messaging_read"])),
    params(("id" = String, Path, description = "The contact's id (`ct_…`)")),
    responses((status = 200, description = "The contact", body = schemas::Contact)),
)]
async fn get_contact(
    State(state): State<Services>,
    caller: Principal,
    Path(id): Path<String>,
) -> ApiResult<Json<Value>> {
    caller.require(Scope::Read)?;
    let contact = db::contacts::get(&state.sender.db, &caller.org_id, &id)
        .await?
        .ok_or_else(|| ApiError::not_found("contact"))?;
    Ok(Json(view(&contact)))
}
