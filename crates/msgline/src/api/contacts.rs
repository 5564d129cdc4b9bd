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
use crate::{
    api::AppState,
    caller::Principal,
    db::{
        self,
        contacts::{Contact, ContactFields},
    },
    domain::scope::Scope,
    error::{ApiError, ApiResult},
    fields::{bounded, email_field, phone_field},
};

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(search, upsert)).routes(routes!(get_contact))
}

pub fn view(contact: &Contact) -> Value {
    contact.to_json()
}

/// `POST /contacts`: a contact's fields; an omitted field is left as it is, `""` clears it.
#[derive(Deserialize, utoipa::ToSchema)]
#[schema(example = json!({"phone": "+12015550123", "name": "Ann Lee", "email": "ann@example.com"}))]
pub struct UpsertContact {
    /// E.164, or national with `default_country`: the contact's identity in the organisation.
    pub phone: String,
    #[schema(max_length = 200)]
    pub name: Option<String>,
    pub email: Option<String>,
    #[schema(max_length = 200)]
    pub organization: Option<String>,
    #[schema(max_length = 2000)]
    pub note: Option<String>,
    pub default_country: Option<String>,
}

/// Creates or updates a contact by its number, with the API's rules; whether it is new. The
/// console saves a contact through this too.
pub async fn save(state: &AppState, caller: &Principal, body: UpsertContact) -> ApiResult<(Contact, bool)> {
    caller.require(Scope::Contacts)?;
    let phone = phone_field("phone", &body.phone, body.default_country.as_deref())?;
    let fields = ContactFields {
        name: bounded("name", body.name, 200)?,
        email: email_field(body.email)?,
        organization: bounded("organization", body.organization, 200)?,
        note: bounded("note", body.note, 2000)?,
    };
    Ok(db::contacts::upsert(&state.db, &caller.org_id, &phone, &fields).await?)
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
    State(state): State<AppState>,
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
    State(state): State<AppState>,
    caller: Principal,
    ApiQuery(query): ApiQuery<SearchQuery>,
    PageQuery(page): PageQuery,
) -> ApiResult<Json<Value>> {
    caller.require(Scope::Read)?;
    let page = page?;
    let q = bounded("q", query.q, 200)?;
    let paged = db::contacts::search(&state.db, &caller.org_id, q.as_deref(), &page).await?;
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
    State(state): State<AppState>,
    caller: Principal,
    Path(id): Path<String>,
) -> ApiResult<Json<Value>> {
    caller.require(Scope::Read)?;
    let contact =
        db::contacts::get(&state.db, &caller.org_id, &id).await?.ok_or_else(|| ApiError::not_found("contact"))?;
    Ok(Json(view(&contact)))
}
