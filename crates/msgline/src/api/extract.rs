//! Request extractors that answer with the contract's errors: 413 past 1 MiB, 400 naming the
//! field for malformed JSON or a wrong type, 400 for a bad query string.

use axum::{
    extract::{FromRequest, FromRequestParts, OptionalFromRequest, Query, Request},
    http::{header, request::Parts},
};
use base64::{Engine, engine::general_purpose::URL_SAFE_NO_PAD};
use serde::{Serialize, de::DeserializeOwned};
use serde_json::Value;

use crate::{
    db::{Page, Paged},
    error::{ApiError, ErrorKind},
    fields::parse_json,
};

pub const MAX_BODY_BYTES: usize = 1024 * 1024;

/// A JSON request body.
pub struct ApiJson<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned> FromRequest<S> for ApiJson<T> {
    type Rejection = ApiError;

    async fn from_request(req: Request, _: &S) -> Result<Self, Self::Rejection> {
        let declared = json_declared(&req);
        let bytes = read_body(req).await?;
        declared?;
        parse_json(&bytes).map(ApiJson)
    }
}

/// An optional body: absent or empty is `None`.
impl<S: Send + Sync, T: DeserializeOwned> OptionalFromRequest<S> for ApiJson<T> {
    type Rejection = ApiError;

    async fn from_request(req: Request, _: &S) -> Result<Option<Self>, Self::Rejection> {
        let declared = json_declared(&req);
        let bytes = read_body(req).await?;
        if bytes.iter().all(u8::is_ascii_whitespace) {
            return Ok(None);
        }
        declared?;
        parse_json(&bytes).map(|value| Some(ApiJson(value)))
    }
}

/// A body that carries no fields: a route that takes none still reads what it is sent, so that
/// a body that is not JSON (or is over 1 MiB) is refused as on every other route.
#[derive(serde::Deserialize)]
pub struct NoFields {}

/// 415 `unsupported_media_type` for a body declared as something other than JSON (`text/plain`,
/// a form, XML). A body with no `Content-Type` is read as JSON.
fn json_declared(req: &Request) -> Result<(), ApiError> {
    let Some(declared) = req.headers().get(header::CONTENT_TYPE) else { return Ok(()) };
    let essence = declared.to_str().unwrap_or("").split(';').next().unwrap_or("").trim().to_ascii_lowercase();
    let json = essence == "application/json" || (essence.starts_with("application/") && essence.ends_with("+json"));
    match json {
        true => Ok(()),
        false => Err(ApiError::new(ErrorKind::UnsupportedMedia, "unsupported_media_type")
            .with_message("send the body as JSON, with Content-Type: application/json")),
    }
}

/// A body as bytes (a device's webhook, in its own format), with the same 1 MiB limit and JSON
/// 413 as every other body.
pub struct RawBody(pub axum::body::Bytes);

impl<S: Send + Sync> FromRequest<S> for RawBody {
    type Rejection = ApiError;

    async fn from_request(req: Request, _: &S) -> Result<Self, Self::Rejection> {
        read_body(req).await.map(RawBody)
    }
}

async fn read_body(req: Request) -> Result<axum::body::Bytes, ApiError> {
    let declared =
        req.headers().get(header::CONTENT_LENGTH).and_then(|v| v.to_str().ok()).and_then(|v| v.parse::<usize>().ok());
    if declared.is_some_and(|len| len > MAX_BODY_BYTES) {
        return Err(ApiError::payload_too_large());
    }
    axum::body::to_bytes(req.into_body(), MAX_BODY_BYTES).await.map_err(|error| {
        if crate::web::server::timed_out(&error) {
            ApiError::bad_request("the request's body did not arrive within MSGLINE_BODY_READ_TIMEOUT_SECONDS")
        } else {
            ApiError::payload_too_large()
        }
    })
}

/// A query string.
pub struct ApiQuery<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned> FromRequestParts<S> for ApiQuery<T> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, Self::Rejection> {
        Query::<T>::try_from_uri(&parts.uri)
            .map(|Query(value)| ApiQuery(value))
            .map_err(|rejection| ApiError::bad_request(rejection.body_text()))
    }
}

/// `?limit=` and `?cursor=` of a list with no other filters, read as a [`Page`]. A bad value is
/// kept as its error, for the handler to answer after its scope check.
pub struct PageQuery(pub Result<Page, ApiError>);

/// The paging parameters of every list.
#[derive(serde::Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct PageParams {
    /// How many rows, 1 to 200 (default 50).
    #[param(value_type = Option<i64>, minimum = 1, maximum = 200)]
    limit: Option<String>,
    /// `next_cursor` of the previous page.
    cursor: Option<String>,
}

impl<S: Send + Sync> FromRequestParts<S> for PageQuery {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        let read = ApiQuery::<PageParams>::from_request_parts(parts, state).await;
        Ok(PageQuery(read.and_then(|ApiQuery(params)| page(params.limit.as_deref(), params.cursor.as_deref()))))
    }
}

/// Reads `?limit=` (default 50, 1 to 200) and `?cursor=`.
pub fn page(limit: Option<&str>, cursor: Option<&str>) -> Result<Page, ApiError> {
    let limit = match limit {
        None | Some("") => 50,
        Some(text) => match text.parse::<i64>() {
            Ok(n) if (1..=200).contains(&n) => n,
            _ => return Err(ApiError::invalid("limit", "limit must be a whole number from 1 to 200")),
        },
    };
    let before = match cursor.filter(|c| !c.is_empty()) {
        None => None,
        Some(cursor) => Some(
            URL_SAFE_NO_PAD
                .decode(cursor)
                .ok()
                .and_then(|bytes| String::from_utf8(bytes).ok())
                // A cursor is an id: letters, digits and `_`.
                .filter(|id| !id.is_empty() && id.len() <= 64)
                .filter(|id| id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_'))
                .ok_or_else(|| ApiError::invalid("cursor", "cursor is not one this API returned"))?,
        ),
    };
    Ok(Page { limit, before })
}

/// `{"data": [...], "next_cursor": ...}` for a page of rows.
pub fn list<T, V: Serialize>(paged: Paged<T>, view: impl Fn(&T) -> V) -> Value {
    serde_json::to_value(list_body(&paged, view)).expect("a list serialises")
}

/// [`list`], kept typed so that it is written straight to the response.
pub fn list_body<'a, T, V: Serialize>(paged: &'a Paged<T>, view: impl Fn(&'a T) -> V) -> ListBody<V> {
    ListBody {
        data: paged.rows.iter().map(view).collect(),
        next_cursor: paged.next.as_ref().map(|id| URL_SAFE_NO_PAD.encode(id)),
    }
}

/// A `200` with `value` as JSON, serialised once, straight from typed views.
pub fn json_response<T: Serialize>(value: &T) -> axum::response::Response {
    use axum::response::IntoResponse;
    match serde_json::to_vec(value) {
        Ok(body) => ([(axum::http::header::CONTENT_TYPE, "application/json")], body).into_response(),
        Err(error) => {
            tracing::error!(error = %error, "a response could not be serialised");
            axum::http::StatusCode::INTERNAL_SERVER_ERROR.into_response()
        }
    }
}

/// A page of a list as the API answers it, written straight to the response.
#[derive(Debug, Serialize)]
pub struct ListBody<V> {
    data: Vec<V>,
    next_cursor: Option<String>,
}
