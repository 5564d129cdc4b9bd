//! `GET /attachments/{id}` (scope `messaging_read`): an attachment's bytes, to its organisation
//! (and, for a line-bound key, only on its line).

use axum::{
    extract::{Path, State},
    response::Response,
};
use utoipa_axum::{router::OpenApiRouter, routes};

use crate::{
    caller::Principal,
    db,
    domain::scope::Scope,
    error::{ApiError, ApiResult},
    services::Services,
};

pub fn router() -> OpenApiRouter<Services> {
    OpenApiRouter::new().routes(routes!(get_attachment))
}

/// An attachment's bytes, as stored: its `Content-Type` the one msgline read from the bytes.
#[utoipa::path(
    get,
    path = "/attachments/{id}",
    tag = "messages",
    security(("api_key" = ["messaging_read"])),
    params(("id" = String, Path, description = "The attachment's id (`file_…`), as its message lists it")),
    responses(
        (status = 200, description = "The file", content_type = "application/octet-stream"),
        (status = 404, description = "No such attachment in the organisation, or its file is no longer kept", body = super::openapi::schemas::Error),
    ),
)]
async fn get_attachment(
    State(state): State<Services>,
    caller: Principal,
    Path(id): Path<String>,
) -> ApiResult<Response> {
    caller.require(Scope::Read)?;
    let attachment = db::attachments::get(&state.sender.db, &caller.org_id, &id)
        .await?
        .ok_or_else(|| ApiError::not_found("attachment"))?;
    if caller.bound_line().is_some() {
        let message = db::messages::get(&state.sender.db, &caller.org_id, &attachment.message_id).await?;
        if !message.is_some_and(|m| caller.may_use_line(&m.line_id)) {
            return Err(ApiError::not_found("attachment"));
        }
    }
    crate::web::files::file_response(&state.sender.media, &attachment).await
}
