//! A stored file as an HTTP answer, for the API's and the console's downloads and a line's
//! bridge.

use axum::{
    http::{HeaderValue, header},
    response::{IntoResponse, Response},
};

use crate::{
    db::attachments::Attachment,
    error::{ApiError, ApiResult},
    media::MediaStore,
};

/// The bytes of an attachment with its type and name; 404 if the store no longer has them.
pub async fn file_response(media: &MediaStore, attachment: &Attachment) -> ApiResult<Response> {
    let bytes = media.get(&attachment.storage_key).await.map_err(ApiError::internal)?;
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
