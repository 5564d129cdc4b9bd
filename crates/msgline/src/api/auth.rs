//! Bearer-key authentication over HTTP: the `Authorization` header's key becomes the request's
//! [`Principal`] (see [`crate::caller::AuthCache`]).

use axum::{extract::FromRequestParts, http::request::Parts};

use crate::{caller::Principal, error::ApiError};

impl<S: Send + Sync> FromRequestParts<S> for Principal {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, Self::Rejection> {
        parts.extensions.get::<Principal>().cloned().ok_or_else(ApiError::unauthorized)
    }
}

/// The credentials of a `Bearer` authorization header (the scheme name in any case).
pub use crate::caller::bearer;
