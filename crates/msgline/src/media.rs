//! Attachment bytes, behind one interface (`MSGLINE_MEDIA_STORE`): a directory of local files by
//! default, or an S3-compatible bucket (through `object_store`) for several instances that must
//! see the same files. Rows in `attachments` say which organisation and message a file belongs
//! to; the store only keeps bytes by key.

use std::sync::Arc;

use object_store::{ObjectStore, PutPayload, aws::AmazonS3Builder, local::LocalFileSystem, path::Path};

/// Where attachments' bytes live.
#[derive(Clone)]
pub struct MediaStore {
    store: Arc<dyn ObjectStore>,
    /// Prepended to every key (an S3 URL's path).
    prefix: String,
    /// The store's URL, for the logs (never carries a secret: S3 credentials come from the
    /// standard `AWS_*` environment).
    pub url: String,
}

impl MediaStore {
    /// `file://PATH` (the directory is created) or `s3://BUCKET[/PREFIX]`; the S3 endpoint,
    /// region and credentials come from the usual `AWS_*` variables (`AWS_ENDPOINT` for an
    /// S3-compatible service, `AWS_ALLOW_HTTP=true` for one without TLS).
    pub fn open(url: &str) -> anyhow::Result<Self> {
        if let Some(dir) = url.strip_prefix("file://") {
            anyhow::ensure!(!dir.is_empty(), "MSGLINE_MEDIA_STORE: file:// needs a directory");
            std::fs::create_dir_all(dir)
                .map_err(|e| anyhow::anyhow!("MSGLINE_MEDIA_STORE: cannot create {dir}: {e}"))?;
            let store = LocalFileSystem::new_with_prefix(dir)
                .map_err(|e| anyhow::anyhow!("MSGLINE_MEDIA_STORE: cannot use {dir}: {e}"))?;
            return Ok(MediaStore { store: Arc::new(store), prefix: String::new(), url: url.to_string() });
        }
        if let Some(rest) = url.strip_prefix("s3://") {
            let (bucket, prefix) = rest.split_once('/').unwrap_or((rest, ""));
            anyhow::ensure!(!bucket.is_empty(), "MSGLINE_MEDIA_STORE: s3:// needs a bucket");
            let store = AmazonS3Builder::from_env()
                .with_bucket_name(bucket)
                .build()
                .map_err(|e| anyhow::anyhow!("MSGLINE_MEDIA_STORE: {e}"))?;
            let prefix = prefix.trim_matches('/');
            let prefix = if prefix.is_empty() { String::new() } else { format!("{prefix}/") };
            return Ok(MediaStore { store: Arc::new(store), prefix, url: url.to_string() });
        }
        anyhow::bail!("MSGLINE_MEDIA_STORE must be file://DIRECTORY or s3://BUCKET/PREFIX, not {url}")
    }

    fn path(&self, key: &str) -> Path {
        Path::from(format!("{}{key}", self.prefix))
    }

    /// Stores `bytes` under `key`, replacing what was there.
    pub async fn put(&self, key: &str, bytes: Vec<u8>) -> anyhow::Result<()> {
        self.store.put(&self.path(key), PutPayload::from(bytes)).await?;
        Ok(())
    }

    /// The bytes under `key`, or `None` if there are none.
    pub async fn get(&self, key: &str) -> anyhow::Result<Option<Vec<u8>>> {
        match self.store.get(&self.path(key)).await {
            Ok(found) => Ok(Some(found.bytes().await?.to_vec())),
            Err(object_store::Error::NotFound { .. }) => Ok(None),
            Err(error) => Err(error.into()),
        }
    }

    /// Every key whose bytes were last written before `before_ms` (milliseconds since the epoch).
    pub async fn keys_written_before(&self, before_ms: i64) -> anyhow::Result<Vec<String>> {
        let root = self.prefix.trim_end_matches('/');
        let mut dirs = vec![(!root.is_empty()).then(|| Path::from(root))];
        let mut keys = Vec::new();
        while let Some(dir) = dirs.pop() {
            let listed = self.store.list_with_delimiter(dir.as_ref()).await?;
            dirs.extend(listed.common_prefixes.into_iter().map(Some));
            for object in listed.objects {
                if object.last_modified.timestamp_millis() < before_ms {
                    let location = object.location.as_ref();
                    keys.push(location.strip_prefix(&self.prefix).unwrap_or(location).to_string());
                }
            }
        }
        Ok(keys)
    }

    /// Removes `key`; removing what is not there is not an error.
    pub async fn delete(&self, key: &str) -> anyhow::Result<()> {
        match self.store.delete(&self.path(key)).await {
            Ok(()) | Err(object_store::Error::NotFound { .. }) => Ok(()),
            Err(error) => Err(error.into()),
        }
    }
}

/// The content type of a file from its first bytes: what it is, whatever its URL or the server
/// that sent it claims. Text that is valid UTF-8 is `text/plain`; anything else unrecognised
/// is `application/octet-stream`.
pub fn sniff(bytes: &[u8]) -> &'static str {
    if let Some(kind) = infer::get(bytes) {
        return kind.mime_type();
    }
    let head = &bytes[..bytes.len().min(64)];
    if head.starts_with(b"BEGIN:VCARD") {
        return "text/vcard";
    }
    if std::str::from_utf8(bytes).is_ok() { "text/plain" } else { "application/octet-stream" }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_is_known_by_its_bytes_not_its_name() {
        assert_eq!(sniff(&[0x89, b'P', b'N', b'G', 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 0]), "image/png");
        assert_eq!(sniff(&[0xff, 0xd8, 0xff, 0xe0, 0, 0x10, b'J', b'F', b'I', b'F']), "image/jpeg");
        assert_eq!(sniff(b"%PDF-1.7\n"), "application/pdf");
        assert_eq!(sniff(b"BEGIN:VCARD\r\nVERSION:3.0\r\n"), "text/vcard");
        assert_eq!(sniff(b"hello"), "text/plain");
        assert_eq!(sniff(&[0xff, 0xfe, 0x00, 0x01, 0x80]), "application/octet-stream");
    }

    #[tokio::test]
    async fn a_file_store_keeps_bytes_by_key_and_forgets_them_when_asked() {
        let dir = tempfile::tempdir().unwrap();
        let store = MediaStore::open(&format!("file://{}", dir.path().join("media").display())).unwrap();
        assert_eq!(store.get("org_1/file_1").await.unwrap(), None);
        store.put("org_1/file_1", b"bytes".to_vec()).await.unwrap();
        assert_eq!(store.get("org_1/file_1").await.unwrap().as_deref(), Some(&b"bytes"[..]));
        store.delete("org_1/file_1").await.unwrap();
        store.delete("org_1/file_1").await.unwrap();
        assert_eq!(store.get("org_1/file_1").await.unwrap(), None);
        assert!(MediaStore::open("ftp://x").is_err());
    }
}
