//! `GET /attachments/{id}` (scope `messaging_read`): an attachment's bytes, to its organisation
//! (and, for a line-bound key, only on its line).

use axum::{
    extract::{Path, State},
    http::{HeaderValue, header},
    response::{IntoResponse, Response},
};
use utoipa_axum::{router::OpenApiRouter, routes};

use crate::{
    api::AppState,
    caller::Principal,
    db::{self, attachments::Attachment},
    domain::scope::Scope,
    error::{ApiError, ApiResult},
};

pub fn router() -> OpenApiRouter<AppState> {
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
    State(state): State<AppState>,
    caller: Principal,
    Path(id): Path<String>,
) -> ApiResult<Response> {
    caller.require(Scope::Read)?;
    let attachment =
        db::attachments::get(&state.db, &caller.org_id, &id).await?.ok_or_else(|| ApiError::not_found("attachment"))?;
    if caller.bound_line().is_some() {
        let message = db::messages::get(&state.db, &caller.org_id, &attachment.message_id).await?;
        if !message.is_some_and(|m| caller.may_use_line(&m.line_id)) {
            return Err(ApiError::not_found("attachment"));
        }
    }
    file_response(&state, &attachment).await
}

/// The bytes of an attachment with its type and name; 404 if the store no longer has them.
pub async fn file_response(state: &AppState, attachment: &Attachment) -> ApiResult<Response> {
    let bytes = state.media.get(&attachment.storage_key).await.map_err(ApiError::internal)?;
    let bytes = bytes.ok_or_else(|| ApiError::not_found("attachment"))?;
    let mut response = bytes.into_response();
    let headers = response.headers_mut();
    if let Ok(kind) = HeaderValue::from_str(&attachment.content_type) {
        headers.insert(header::CONTENT_TYPE, kind);
    }
    let name: String = attachment
        .filename
        .as_deref()
        .unwrap_or(&attachment.id)
        .chars()
        .map(|c| if c.is_ascii_graphic() && c != '"' && c != '\\' || c == ' ' { c } else { '_' })
        .collect();
    if let Ok(disposition) = HeaderValue::from_str(&format!("attachment; filename=\"{name}\"")) {
        headers.insert(header::CONTENT_DISPOSITION, disposition);
    }
    headers.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    Ok(response)
}
