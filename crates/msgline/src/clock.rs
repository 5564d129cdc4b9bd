//! Time: integer milliseconds in storage, RFC 3339 UTC at the API edge.

use time::{
    OffsetDateTime,
    format_description::{FormatItem, well_known::Rfc3339},
    macros::format_description,
};

pub fn now_ms() -> i64 {
    (OffsetDateTime::now_utc().unix_timestamp_nanos() / 1_000_000) as i64
}

/// Always three fractional digits, so timestamps have one width and sort as text.
const FORMAT: &[FormatItem<'static>] =
    format_description!("[year]-[month]-[day]T[hour]:[minute]:[second].[subsecond digits:3]Z");

/// `1700000000120` → `"2023-11-14T22:13:20.120Z"`.
pub fn rfc3339(ms: i64) -> String {
    use std::fmt::Write;
    let Ok(at) = OffsetDateTime::from_unix_timestamp_nanos(ms as i128 * 1_000_000) else { return String::new() };
    if !(0..=9999).contains(&at.year()) {
        return at.format(FORMAT).unwrap_or_default();
    }
    // Written by hand: this runs for every timestamp of every message a list returns.
    let mut text = String::with_capacity(24);
    let _ = write!(
        text,
        "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z",
        at.year(),
        u8::from(at.month()),
        at.day(),
        at.hour(),
        at.minute(),
        at.second(),
        at.millisecond()
    );
    text
}

pub fn rfc3339_opt(ms: Option<i64>) -> Option<String> {
    ms.map(rfc3339)
}

/// Parses an RFC 3339 timestamp into milliseconds.
pub fn parse_rfc3339(text: &str) -> Option<i64> {
    OffsetDateTime::parse(text, &Rfc3339).ok().map(|t| (t.unix_timestamp_nanos() / 1_000_000) as i64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_round_trip_through_rfc3339() {
        let ms = 1_700_000_000_120;
        assert_eq!(rfc3339(ms), "2023-11-14T22:13:20.120Z");
        assert_eq!(rfc3339(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(rfc3339(1_704_067_199_999), "2023-12-31T23:59:59.999Z");
        assert_eq!(parse_rfc3339(&rfc3339(ms)), Some(ms));
    }
}
