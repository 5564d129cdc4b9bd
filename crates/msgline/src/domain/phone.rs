//! Phone numbers, always held in E.164.

use std::fmt;

use phonenumber::{Mode, country};
use serde::Serialize;

/// How many parsed inputs [`E164::parse`] remembers.
const PARSED_KEPT: usize = 10_000;

/// A valid phone number in E.164 form, such as `+12015550100`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(transparent)]
pub struct E164(String);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PhoneError {
    /// Not a phone number at all, or not valid for its country.
    Invalid,
    /// A national number and no (or an unknown) default country.
    NeedsCountry,
    UnknownCountry,
}

impl PhoneError {
    pub fn describe(&self, input: &str) -> String {
        match self {
            PhoneError::Invalid => format!("{input:?} is not a valid phone number"),
            PhoneError::NeedsCountry => {
                format!(
                    "{input:?} is not in E.164 form (+ and country code); give default_country for national numbers"
                )
            }
            PhoneError::UnknownCountry => "default_country must be an ISO 3166 alpha-2 code such as US".into(),
        }
    }
}

impl E164 {
    /// Parses a number: E.164 as is, or a national number with an ISO country code.
    ///
    /// Validation against the numbering plan costs more than the rest of a send request, and a
    /// sender writes to the same numbers again and again: answers are remembered (up to
    /// [`PARSED_KEPT`] inputs, then forgotten all at once).
    pub fn parse(input: &str, default_country: Option<&str>) -> Result<E164, PhoneError> {
        type Parsed = std::collections::HashMap<(String, Option<String>), Result<E164, PhoneError>>;
        static PARSED: std::sync::LazyLock<std::sync::Mutex<Parsed>> = std::sync::LazyLock::new(Default::default);
        let key = (input.to_string(), default_country.map(str::to_string));
        if let Some(known) = PARSED.lock().unwrap_or_else(|e| e.into_inner()).get(&key) {
            return known.clone();
        }
        let parsed = Self::validate(input, default_country);
        let mut cache = PARSED.lock().unwrap_or_else(|e| e.into_inner());
        if cache.len() >= PARSED_KEPT {
            cache.clear();
        }
        cache.insert(key, parsed.clone());
        parsed
    }

    fn validate(input: &str, default_country: Option<&str>) -> Result<E164, PhoneError> {
        let trimmed = input.trim();
        if trimmed.is_empty() || trimmed.len() > 40 {
            return Err(PhoneError::Invalid);
        }
        let country = match default_country {
            Some(code) => Some(parse_country(code)?),
            None => None,
        };
        if !trimmed.starts_with('+') && country.is_none() {
            return Err(PhoneError::NeedsCountry);
        }
        let number = phonenumber::parse(country, trimmed).map_err(|_| PhoneError::Invalid)?;
        if !number.is_valid() {
            return Err(PhoneError::Invalid);
        }
        Ok(E164(number.format().mode(Mode::E164).to_string()))
    }

    /// Loads the numbering plan, which the first validation would otherwise load in the middle
    /// of a request: tens of milliseconds, and about 8 MB of memory while it is read, of which
    /// about 4 MB stay (BENCHMARKS.md). At start, the rest is handed back before the first
    /// request; under a burst of first sends, it came on top of the burst's own memory.
    pub fn load_numbering_plan() {
        let loaded = Self::validate("+12015550100", None);
        debug_assert!(loaded.is_ok(), "a valid number was refused: {loaded:?}");
    }

    /// Wraps a number that was validated before it was stored.
    pub fn from_trusted(stored: String) -> E164 {
        E164(stored)
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    pub fn into_string(self) -> String {
        self.0
    }
}

pub fn parse_country(code: &str) -> Result<country::Id, PhoneError> {
    code.trim().to_ascii_uppercase().parse::<country::Id>().map_err(|_| PhoneError::UnknownCountry)
}

impl fmt::Display for E164 {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_normalise_to_e164() {
        assert_eq!(E164::parse("+12015550100", None).unwrap().as_str(), "+12015550100");
        assert_eq!(E164::parse("(201) 555-0123", Some("us")).unwrap().as_str(), "+12015550123");
        assert_eq!(E164::parse("+44 20 7946 0018", None).unwrap().as_str(), "+442079460018");
        assert_eq!(E164::parse("2015550100", None), Err(PhoneError::NeedsCountry));
        assert_eq!(E164::parse("+1 999", None), Err(PhoneError::Invalid));
        assert_eq!(E164::parse("hello", Some("US")), Err(PhoneError::Invalid));
        assert_eq!(E164::parse("2015550100", Some("XX")), Err(PhoneError::UnknownCountry));
        // Remembered answers are the same answers.
        assert_eq!(E164::parse("(201) 555-0123", Some("us")).unwrap().as_str(), "+12015550123");
        assert_eq!(E164::parse("(201) 555-0123", Some("XX")), Err(PhoneError::UnknownCountry));
        assert_eq!(E164::parse("+1 999", None), Err(PhoneError::Invalid));
    }
}
