//! Contacts: creating or updating one by its number, with `messaging_contacts`.

use serde::Deserialize;

use crate::{
    caller::Principal,
    db::{
        self,
        contacts::{Contact, ContactFields},
    },
    domain::scope::Scope,
    error::ApiResult,
    fields::{bounded, email_field, phone_field},
    services::Services,
};

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
pub async fn save(state: &Services, caller: &Principal, body: UpsertContact) -> ApiResult<(Contact, bool)> {
    caller.require(Scope::Contacts)?;
    let phone = phone_field("phone", &body.phone, body.default_country.as_deref())?;
    let fields = ContactFields {
        name: bounded("name", body.name, 200)?,
        email: email_field(body.email)?,
        organization: bounded("organization", body.organization, 200)?,
        note: bounded("note", body.note, 2000)?,
    };
    Ok(db::contacts::upsert(&state.sender.db, &caller.org_id, &phone, &fields).await?)
}
