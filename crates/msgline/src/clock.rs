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
    let Ok(at) = OffsetDateTime::from_unix_timestamp_nanos(ms as i128 * 1_000_000) else { return String::new() };
    if !(0..=9999).contains(&at.year()) {
        return at.format(FORMAT).unwrap_or_default();
    }
    // Digit by digit: this runs for every timestamp of every message a list returns, and
    // `write!` with its padding was about 5 % of the server's CPU in the `read` bench.
    let mut text = *b"0000-00-00T00:00:00.000Z";
    let mut put = |at: usize, width: usize, mut value: u32| {
        for slot in text[at..at + width].iter_mut().rev() {
            *slot = b'0' + (value % 10) as u8;
            value /= 10;
        }
    };
    put(0, 4, at.year() as u32);
    put(5, 2, u8::from(at.month()).into());
    put(8, 2, at.day().into());
    put(11, 2, at.hour().into());
    put(14, 2, at.minute().into());
    put(17, 2, at.second().into());
    put(20, 3, at.millisecond().into());
    String::from_utf8(text.to_vec()).expect("digits and separators are ASCII")
}

pub fn rfc3339_opt(ms: Option<i64>) -> Option<String> {
    ms.map(rfc3339)
}

/// Parses an RFC 3339 timestamp into milliseconds.
pub fn parse_rfc3339(text: &str) -> Option<i64> {
    OffsetDateTime::parse(text, &Rfc3339).ok().map(|t| (t.unix_timestamp_nanos() / 1_000_000) as i64)
}

/// The start of the calendar month (UTC) that `ms` falls in, in milliseconds.
pub fn month_start_ms(ms: i64) -> i64 {
    let Ok(at) = OffsetDateTime::from_unix_timestamp_nanos(ms as i128 * 1_000_000) else { return ms };
    let first = at.replace_day(1).expect("every month has a first day").replace_time(time::Time::MIDNIGHT);
    (first.unix_timestamp_nanos() / 1_000_000) as i64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_month_starts_on_its_first_day_at_midnight_utc() {
        let mid_december = parse_rfc3339("2026-12-06T05:28:47.120Z").unwrap();
        assert_eq!(rfc3339(month_start_ms(mid_december)), "2026-12-01T00:00:00.000Z");
        let first = parse_rfc3339("2026-03-01T00:00:00Z").unwrap();
        assert_eq!(month_start_ms(first), first);
    }

    #[test]
    fn timestamps_round_trip_through_rfc3339() {
        let ms = 1_700_000_000_120;
        assert_eq!(rfc3339(ms), "2023-11-14T22:13:20.120Z");
        assert_eq!(rfc3339(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(rfc3339(1_704_067_199_999), "2023-12-31T23:59:59.999Z");
        assert_eq!(rfc3339(-1), "1969-12-31T23:59:59.999Z");
        assert_eq!(rfc3339(253_402_300_799_999), "9999-12-31T23:59:59.999Z");
        assert_eq!(rfc3339(951_782_400_007), "2000-02-29T00:00:00.007Z");
        // The same text as the time crate's own formatting, across four centuries.
        for ms in (-2_208_988_800_000i64..7_258_118_400_000).step_by(86_399_937_001) {
            let at = OffsetDateTime::from_unix_timestamp_nanos(ms as i128 * 1_000_000).unwrap();
            assert_eq!(rfc3339(ms), at.format(FORMAT).unwrap(), "{ms}");
        }
        assert_eq!(parse_rfc3339(&rfc3339(ms)), Some(ms));
    }
}
