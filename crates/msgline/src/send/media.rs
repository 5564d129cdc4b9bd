//! A message's media: `media_urls` fetched through the egress client (https, public addresses
//! only, at most `MSGLINE_MEDIA_MAX_BYTES` each), typed by their bytes, and stored before the
//! message is written, so the message and its attachment rows are one commit.

use crate::{
    clock,
    db::attachments::Attachment,
    egress::EgressError,
    error::{ApiError, ApiResult, ErrorKind},
    media,
    send::Sender,
};

/// A file sent with a message as uploaded bytes (the console's compose form) rather than fetched
/// from a URL.
pub struct Upload {
    pub filename: Option<String>,
    pub bytes: Vec<u8>,
}

/// The most attachments one message carries.
pub const MAX_MEDIA: usize = 10;

/// How long one fetch may take.
const FETCH_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(30);

/// Checks every URL (so a bad one is refused before any is fetched), then fetches and stores
/// each. Files stored for a request that then fails are left to the janitor.
pub async fn fetch_all(state: &Sender, org_id: &str, urls: &[String]) -> ApiResult<Vec<Attachment>> {
    if urls.len() > MAX_MEDIA {
        return Err(ApiError::invalid("media_urls", format!("a message carries at most {MAX_MEDIA} files")));
    }
    for url in urls {
        state.egress.check_url(url).map_err(|e| ApiError::invalid("media_urls", format!("{url}: {e}")))?;
    }
    let max = state.config.media_max_bytes as usize;
    let now = clock::now_ms();
    let mut attachments = Vec::with_capacity(urls.len());
    for (position, url) in urls.iter().enumerate() {
        let fetched = state.egress.get(url, max, FETCH_TIMEOUT).await.map_err(|error| match error {
            EgressError::TooLarge(_) => ApiError::new(ErrorKind::TooLarge, "media_too_large")
                .with_message(format!("{url} is larger than {max} bytes"))
                .with("field", "media_urls"),
            other => ApiError::invalid("media_urls", format!("{url} could not be fetched: {other}")),
        })?;
        if !(200..300).contains(&fetched.status) {
            return Err(ApiError::invalid("media_urls", format!("fetching {url} answered {}", fetched.status)));
        }
        if fetched.body.is_empty() {
            return Err(ApiError::invalid("media_urls", format!("{url} is empty")));
        }
        let content_type = media::sniff(&fetched.body);
        let attachment =
            Attachment::new(org_id, position as i64, content_type, fetched.body.len() as i64, file_name(url), now);
        state.media.put(&attachment.storage_key, fetched.body).await.map_err(ApiError::internal)?;
        attachments.push(attachment);
    }
    Ok(attachments)
}

/// Stores uploaded files (at most [`MAX_MEDIA`], each at most `MSGLINE_MEDIA_MAX_BYTES`, none
/// empty), typed by their bytes. Every file is checked before any is stored.
pub async fn store_uploads(state: &Sender, org_id: &str, uploads: Vec<Upload>) -> ApiResult<Vec<Attachment>> {
    if uploads.len() > MAX_MEDIA {
        return Err(ApiError::invalid("files", format!("a message carries at most {MAX_MEDIA} files")));
    }
    let max = state.config.media_max_bytes as usize;
    for upload in &uploads {
        let name = upload.filename.as_deref().unwrap_or("a file");
        if upload.bytes.is_empty() {
            return Err(ApiError::invalid("files", format!("{name} is empty")));
        }
        if upload.bytes.len() > max {
            return Err(ApiError::new(ErrorKind::TooLarge, "media_too_large")
                .with_message(format!("{name} is larger than {max} bytes"))
                .with("field", "files"));
        }
    }
    let now = clock::now_ms();
    let mut attachments = Vec::with_capacity(uploads.len());
    for (position, upload) in uploads.into_iter().enumerate() {
        let content_type = media::sniff(&upload.bytes);
        let filename = upload.filename.map(|name| clean_name(&name)).filter(|name| !name.trim().is_empty());
        let attachment =
            Attachment::new(org_id, position as i64, content_type, upload.bytes.len() as i64, filename, now);
        state.media.put(&attachment.storage_key, upload.bytes).await.map_err(ApiError::internal)?;
        attachments.push(attachment);
    }
    Ok(attachments)
}

/// A file name as msgline keeps it: no control characters or path separators, 200 characters.
fn clean_name(name: &str) -> String {
    name.chars().filter(|c| !c.is_control() && *c != '/' && *c != '\\').take(200).collect()
}

/// The last path segment of a URL, if it names a file.
fn file_name(url: &str) -> Option<String> {
    let parsed = url::Url::parse(url).ok()?;
    let last = parsed.path_segments()?.next_back()?.to_string();
    let decoded = percent_encoding::percent_decode_str(&last).decode_utf8().ok()?.to_string();
    let clean = clean_name(&decoded);
    (!clean.trim().is_empty()).then_some(clean)
}

#[cfg(test)]
mod tests {
    use super::file_name;

    #[test]
    fn a_file_name_is_the_urls_last_segment_when_it_has_one() {
        assert_eq!(file_name("https://cdn.example/a/receipt%20May.pdf?sig=1").as_deref(), Some("receipt May.pdf"));
        assert_eq!(file_name("https://cdn.example/"), None);
        assert_eq!(file_name("https://cdn.example/a/%2e%2e%2fetc"), Some("..etc".into()));
    }
}
