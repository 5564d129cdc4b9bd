//! Phone numbers, always held in E.164.

use std::fmt;

use phonenumber::{Mode, country};
use serde::Serialize;

/// How many parsed inputs [`E164::parse`] remembers.
const PARSED_KEPT: usize = 10_000;
/// The longest input that can be a number: anything longer is refused unread (and never kept).
const MAX_INPUT: usize = 40;
/// The longest country code worth remembering an answer for (`US`; anything longer is refused).
const MAX_COUNTRY: usize = 8;

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
        // An error names what it refused, but never sends a long input back whole.
        let shown: String = input.chars().take(MAX_INPUT).collect();
        let input = if shown.len() < input.len() { format!("{shown}…") } else { shown };
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

type Validated = Result<E164, PhoneError>;
/// Answers remembered by input and default country.
type Parsed = std::collections::HashMap<(String, Option<String>), Validated>;

/// A validation for the numbering plan's thread, and where its answer goes: to a caller blocked
/// until it comes, or to a task that waits for it without holding its thread.
struct Job {
    input: String,
    default_country: Option<String>,
    answer: Answer,
}

enum Answer {
    Blocked(std::sync::mpsc::SyncSender<Validated>),
    Awaited(tokio::sync::oneshot::Sender<Validated>),
}

/// Hands a validation to the numbering plan's thread; false if that thread is gone.
fn ask(input: &str, default_country: Option<&str>, answer: Answer) -> bool {
    let job = Job { input: input.to_string(), default_country: default_country.map(str::to_string), answer };
    plan_thread().send(job).is_ok()
}

/// Where an input's answer is remembered.
fn key(input: &str, default_country: Option<&str>) -> (String, Option<String>) {
    (input.to_string(), default_country.map(str::to_string))
}

/// The one thread that validates numbers. The numbering plan's patterns are regular expressions,
/// and each keeps the states its searches have built for every thread that searched with it: on
/// the server's two worker threads each grew its own, about 6 MB of a send server's memory in
/// all, its largest part after the executable (a heap profile of the bench's `webhooks` run,
/// BENCHMARKS.md). Here they are built once. Sends wait for it without holding their worker
/// ([`E164::prepare`]); other callers, rarer, block until it answers.
fn plan_thread() -> &'static std::sync::mpsc::Sender<Job> {
    static THREAD: std::sync::LazyLock<std::sync::mpsc::Sender<Job>> = std::sync::LazyLock::new(|| {
        let (jobs, queue) = std::sync::mpsc::channel::<Job>();
        let spawned = std::thread::Builder::new().name("msgline-numbers".into()).spawn(move || {
            for job in queue {
                let validated =
                    std::panic::catch_unwind(|| E164::validate_here(&job.input, job.default_country.as_deref()));
                // A panic leaves the caller with no answer: it validates the number itself.
                match (validated, job.answer) {
                    (Ok(validated), Answer::Blocked(answer)) => drop(answer.send(validated)),
                    (Ok(validated), Answer::Awaited(answer)) => drop(answer.send(validated)),
                    _ => {}
                }
            }
        });
        if let Err(error) = spawned {
            tracing::error!(error = %error, "could not start the numbering plan's thread; numbers are validated where they arrive");
        }
        jobs
    });
    &THREAD
}

impl E164 {
    /// Parses a number: E.164 as is, or a national number with an ISO country code.
    ///
    /// Validation against the numbering plan costs more than the rest of a send request, and a
    /// sender writes to the same numbers again and again: answers are remembered (up to
    /// [`PARSED_KEPT`] inputs, then forgotten all at once). Only inputs short enough to be a
    /// number are remembered, so that what the cache holds is bounded (about 1 MB) whatever a
    /// caller sends: a long input is refused before it is kept.
    pub fn parse(input: &str, default_country: Option<&str>) -> Result<E164, PhoneError> {
        if !Self::kept(input, default_country) {
            return Self::validate(input, default_country);
        }
        if let Some(known) = Self::remembered(input, default_country) {
            return known;
        }
        let parsed = Self::validate(input, default_country);
        Self::remember(input, default_country, parsed.clone());
        parsed
    }

    /// Validates a number [`E164::parse`] has no answer for on the numbering plan's thread, and
    /// remembers the answer, so that the `parse` that follows finds it: for a request's handler,
    /// which waits for it without holding its worker thread.
    pub async fn prepare(input: &str, default_country: Option<&str>) {
        if !Self::kept(input, default_country) || Self::remembered(input, default_country).is_some() {
            return;
        }
        let (answer, answered) = tokio::sync::oneshot::channel();
        if ask(input, default_country, Answer::Awaited(answer))
            && let Ok(validated) = answered.await
        {
            Self::remember(input, default_country, validated);
        }
    }

    /// Whether an answer for this input is remembered at all: only inputs short enough to be a
    /// number.
    fn kept(input: &str, default_country: Option<&str>) -> bool {
        input.len() <= MAX_INPUT && default_country.is_none_or(|c| c.len() <= MAX_COUNTRY)
    }

    fn answers() -> std::sync::MutexGuard<'static, Parsed> {
        static PARSED: std::sync::LazyLock<std::sync::Mutex<Parsed>> = std::sync::LazyLock::new(Default::default);
        PARSED.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn remembered(input: &str, default_country: Option<&str>) -> Option<Validated> {
        Self::answers().get(&key(input, default_country)).cloned()
    }

    fn remember(input: &str, default_country: Option<&str>, validated: Validated) {
        let mut answers = Self::answers();
        if answers.len() >= PARSED_KEPT {
            answers.clear();
        }
        answers.insert(key(input, default_country), validated);
    }

    /// Validates on the numbering plan's own thread (see [`plan_thread`]); inline if that thread
    /// is gone, or did not answer because the validation panicked, which then happens here as
    /// it would have.
    fn validate(input: &str, default_country: Option<&str>) -> Result<E164, PhoneError> {
        let (answer, answered) = std::sync::mpsc::sync_channel(1);
        if ask(input, default_country, Answer::Blocked(answer))
            && let Ok(validated) = answered.recv()
        {
            return validated;
        }
        Self::validate_here(input, default_country)
    }

    fn validate_here(input: &str, default_country: Option<&str>) -> Result<E164, PhoneError> {
        let trimmed = input.trim();
        if trimmed.is_empty() || trimmed.len() > MAX_INPUT {
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

/// An inbound sender's handle as msgline stores it. A number valid in E.164, or valid in the
/// country of the line it arrived on (devices give the network's own form, which on many
/// carriers is national: `2015550188`, `12015550188`), becomes E.164, so that it meets the
/// contact and the opt-out an API send names. Anything else (a short code, an alphanumeric
/// sender, an email handle) is kept as it came, trimmed.
pub fn inbound_handle(from: &str, line_e164: &str) -> String {
    let from = from.trim();
    if let Ok(phone) = E164::parse(from, None) {
        return phone.into_string();
    }
    // Only digits and the usual separators: letters would be read as a vanity number.
    let numeric = from.bytes().any(|b| b.is_ascii_digit())
        && from.bytes().all(|b| b.is_ascii_digit() || matches!(b, b' ' | b'(' | b')' | b'-' | b'.'));
    if numeric
        && let Some(country) = country_of(line_e164)
        && let Ok(phone) = E164::parse(from, Some(country.as_ref()))
    {
        return phone.into_string();
    }
    from.to_string()
}

/// Whether msgline can send to a handle it stored: a number (E.164), a short code (3 to 8
/// digits) or an email address (an iMessage handle). An alphanumeric sender (`AMAZON`, `abc`)
/// cannot be written back to: its messages are kept, nothing is sent to it.
pub fn addressable(handle: &str) -> bool {
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    if let Some(rest) = handle.strip_prefix('+') {
        return digits(rest);
    }
    if digits(handle) {
        return (3..=8).contains(&handle.len());
    }
    match handle.split_once('@') {
        Some((user, domain)) => {
            !user.is_empty()
                && domain.contains('.')
                && !domain.starts_with('.')
                && !domain.ends_with('.')
                && !handle.chars().any(|c| c.is_whitespace() || c.is_control())
        }
        None => false,
    }
}

/// The country of a number in E.164 (`US` for `+12015550100`).
fn country_of(e164: &str) -> Option<country::Id> {
    phonenumber::parse(None, e164).ok()?.country().id()
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

    #[test]
    fn validations_asked_from_many_threads_at_once_each_get_their_own_answer() {
        let answers: Vec<_> = (0..8)
            .map(|t| {
                std::thread::spawn(move || {
                    (0..50)
                        .map(|n| {
                            let national = format!("(201) 555-{:04}", 1000 + t * 100 + n);
                            let international = format!("+1 999 {t}{n}");
                            (E164::validate(&national, Some("US")), E164::validate(&international, None))
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        for (t, thread) in answers.into_iter().enumerate() {
            for (n, (national, international)) in thread.join().unwrap().into_iter().enumerate() {
                assert_eq!(national.unwrap().as_str(), format!("+1201555{:04}", 1000 + t * 100 + n));
                assert_eq!(international, Err(PhoneError::Invalid));
            }
        }
    }

    #[tokio::test]
    async fn a_number_prepared_off_the_worker_is_remembered_with_its_answer() {
        let (valid, invalid) = ("(201) 555-0177", "+1 999 0177");
        assert!(E164::remembered(valid, Some("US")).is_none());
        E164::prepare(valid, Some("US")).await;
        E164::prepare(invalid, None).await;
        assert_eq!(E164::remembered(valid, Some("US")).unwrap().unwrap().as_str(), "+12015550177");
        assert_eq!(E164::remembered(invalid, None), Some(Err(PhoneError::Invalid)));
        assert_eq!(E164::parse(valid, Some("US")).unwrap().as_str(), "+12015550177");
        // An input too long to be a number is neither validated ahead nor remembered.
        let long = format!("+1201555{}", "0".repeat(40));
        E164::prepare(&long, None).await;
        assert!(E164::remembered(&long, None).is_none());
    }

    #[test]
    fn inbound_senders_in_national_form_are_stored_in_e164_for_the_line_country() {
        let line = "+12015550100";
        assert_eq!(inbound_handle("2015550188", line), "+12015550188");
        assert_eq!(inbound_handle("12015550178", line), "+12015550178");
        assert_eq!(inbound_handle("(201) 555-0123", line), "+12015550123");
        assert_eq!(inbound_handle(" +12015550188 ", line), "+12015550188");
        // A UK line reads a national UK number.
        assert_eq!(inbound_handle("020 7946 0018", "+442079460000"), "+442079460018");
        // Short codes, alphanumeric senders and email handles stay as they came.
        assert_eq!(inbound_handle("72345", line), "72345");
        assert_eq!(inbound_handle("AMAZON", line), "AMAZON");
        assert_eq!(inbound_handle("1-800-FLOWERS", line), "1-800-FLOWERS");
        assert_eq!(inbound_handle("ann@example.com", line), "ann@example.com");
        assert_eq!(inbound_handle(" abc ", line), "abc");
    }

    #[test]
    fn only_numbers_short_codes_and_email_handles_are_addressable() {
        for yes in ["+12015550188", "72345", "123", "ann@example.com"] {
            assert!(addressable(yes), "{yes}");
        }
        for no in ["abc", "AMAZON", "12", "123456789", "+", "+1a", "ann@", "@x.com", "a b@x.com", "ann@x"] {
            assert!(!addressable(no), "{no}");
        }
    }

    #[test]
    fn long_inputs_are_refused_and_never_remembered() {
        let long = "1".repeat(900_000);
        assert_eq!(E164::parse(&long, None), Err(PhoneError::Invalid));
        assert_eq!(E164::parse(&long, Some("US")), Err(PhoneError::Invalid));
        let padded = format!("{}+12015550100", " ".repeat(100));
        assert_eq!(E164::parse(&padded, None).unwrap().as_str(), "+12015550100");
    }
}
