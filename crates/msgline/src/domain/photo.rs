//! Contact-card photos: JPEG, PNG or GIF, at most 200 KB (204,800 bytes), recognised by their
//! first bytes, never by a declared type.

use base64::{Engine, engine::general_purpose::STANDARD};

pub const MAX_PHOTO_BYTES: usize = 200 * 1024;

/// msgline's own mark, the photo of a card that has none of its own.
pub const SERVICE_MARK: &[u8] = include_bytes!("../../assets/mark.png");

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PhotoKind {
    Jpeg,
    Png,
    Gif,
}

impl PhotoKind {
    pub fn vcard_type(self) -> &'static str {
        match self {
            PhotoKind::Jpeg => "JPEG",
            PhotoKind::Png => "PNG",
            PhotoKind::Gif => "GIF",
        }
    }

    pub fn sniff(bytes: &[u8]) -> Option<PhotoKind> {
        if bytes.starts_with(&[0xff, 0xd8, 0xff]) {
            Some(PhotoKind::Jpeg)
        } else if bytes.starts_with(b"\x89PNG\r\n\x1a\n") {
            Some(PhotoKind::Png)
        } else if bytes.starts_with(b"GIF87a") || bytes.starts_with(b"GIF89a") {
            Some(PhotoKind::Gif)
        } else {
            None
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Photo {
    pub bytes: Vec<u8>,
    pub kind: PhotoKind,
}

impl Photo {
    /// Checks size and type of image bytes.
    pub fn from_bytes(bytes: Vec<u8>) -> Result<Photo, String> {
        if bytes.len() > MAX_PHOTO_BYTES {
            return Err(format!("the photo is larger than 200 KB ({MAX_PHOTO_BYTES} bytes)"));
        }
        let kind = PhotoKind::sniff(&bytes).ok_or("the photo is not a JPEG, PNG or GIF image")?;
        Ok(Photo { bytes, kind })
    }

    /// Raw base64, or a `data:image/...;base64,` URL.
    pub fn from_base64(text: &str) -> Result<Photo, String> {
        let text = text.trim();
        let encoded = match text.strip_prefix("data:") {
            Some(rest) => {
                let (header, data) = rest.split_once(',').ok_or("the data URL has no comma")?;
                if !header.starts_with("image/") || !header.ends_with(";base64") {
                    return Err("the data URL must be data:image/...;base64,...".into());
                }
                data
            }
            None => text,
        };
        // Encoded size bounds the decoded size: refuse early rather than decode megabytes.
        if encoded.len() > (MAX_PHOTO_BYTES / 3 + 2) * 4 + 64 {
            return Err(format!("the photo is larger than 200 KB ({MAX_PHOTO_BYTES} bytes)"));
        }
        let compact: String = encoded.chars().filter(|c| !c.is_ascii_whitespace()).collect();
        let bytes = STANDARD.decode(compact).map_err(|_| "the photo is not valid base64".to_string())?;
        Photo::from_bytes(bytes)
    }

    pub fn service_mark() -> Photo {
        Photo { bytes: SERVICE_MARK.to_vec(), kind: PhotoKind::Png }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn images_are_known_by_their_bytes_and_capped_at_200_kb() {
        assert_eq!(Photo::service_mark().kind, PhotoKind::Png);
        assert_eq!(PhotoKind::sniff(SERVICE_MARK), Some(PhotoKind::Png));
        let mut jpeg = vec![0xff, 0xd8, 0xff, 0xe0];
        jpeg.resize(MAX_PHOTO_BYTES, 0);
        assert!(Photo::from_bytes(jpeg.clone()).is_ok());
        jpeg.push(0);
        assert!(Photo::from_bytes(jpeg).is_err());
        assert!(Photo::from_bytes(b"GIF89a....".to_vec()).is_ok());
        assert!(Photo::from_bytes(b"<html>".to_vec()).is_err());
    }

    #[test]
    fn base64_comes_raw_or_as_a_data_url() {
        let encoded = STANDARD.encode(SERVICE_MARK);
        assert_eq!(Photo::from_base64(&encoded).unwrap().kind, PhotoKind::Png);
        assert!(Photo::from_base64(&format!("data:image/png;base64,{encoded}")).is_ok());
        assert!(Photo::from_base64(&format!("data:text/plain;base64,{encoded}")).is_err());
        assert!(Photo::from_base64("data:image/png;base64").is_err());
        assert!(Photo::from_base64("not base64 at all!").is_err());
    }
}
