//! Webhook rules: event names and subscriptions, signing secrets and Standard Webhooks
//! signatures, the retry schedule with its jitter, and `Retry-After`.

use std::time::Duration;

use base64::{Engine, engine::general_purpose::STANDARD};
use hmac::{Hmac, Mac};
use rand::{Rng, RngCore};
use sha2::Sha256;
use time::{OffsetDateTime, format_description::well_known::Rfc2822};

/// Every event type a webhook can receive.
pub const EVENT_TYPES: [&str; 21] = [
    "messaging.message.scheduled",
    "messaging.message.canceled",
    "messaging.message.queued",
    "messaging.message.submitted",
    "messaging.message.sent",
    "messaging.message.delivered",
    "messaging.message.read",
    "messaging.message.failed",
    "messaging.message.unknown",
    "messaging.message.received",
    "messaging.message.fallback",
    "messaging.message.edited",
    "messaging.message.unsent",
    "messaging.poll.voted",
    "messaging.group.created",
    "messaging.group.failed",
    "messaging.group.updated",
    "messaging.contact.opted_out",
    "messaging.contact.opted_in",
    "messaging.typing",
    "messaging.line.health_changed",
];

const ALL: &str = "*";
const MESSAGE_EVENTS: &str = "messaging.message.*";
const MAX_SUBSCRIPTIONS: usize = 50;

/// The registration names that stand for an event type.
fn alias(name: &str) -> Option<&'static str> {
    match name {
        "message.received" => Some("messaging.message.received"),
        "message.sent" => Some("messaging.message.sent"),
        _ => None,
    }
}

/// Why a list of event names was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SubscriptionError {
    Empty,
    TooMany,
    Unknown(String),
}

impl SubscriptionError {
    pub fn describe(&self) -> String {
        match self {
            SubscriptionError::Empty => "events must name at least one event".into(),
            SubscriptionError::TooMany => format!("events is limited to {MAX_SUBSCRIPTIONS} names"),
            SubscriptionError::Unknown(name) => format!(
                "unknown event {name:?}: use an event type such as messaging.message.delivered, \
                 message.received, message.sent, messaging.message.* or *"
            ),
        }
    }
}

/// What an endpoint is subscribed to: event types (aliases resolved), `messaging.message.*`
/// and `*`, sorted and without repeats.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Subscriptions(Vec<String>);

impl Subscriptions {
    /// Parses registration names; the first unknown one is the error.
    pub fn parse<'a>(names: impl IntoIterator<Item = &'a str>) -> Result<Self, SubscriptionError> {
        let mut parsed = Vec::new();
        for name in names {
            let trimmed = name.trim();
            let canonical = if trimmed == ALL || trimmed == MESSAGE_EVENTS || EVENT_TYPES.contains(&trimmed) {
                trimmed
            } else if let Some(target) = alias(trimmed) {
                target
            } else {
                return Err(SubscriptionError::Unknown(name.to_string()));
            };
            parsed.push(canonical.to_string());
        }
        if parsed.is_empty() {
            return Err(SubscriptionError::Empty);
        }
        if parsed.len() > MAX_SUBSCRIPTIONS {
            return Err(SubscriptionError::TooMany);
        }
        parsed.sort();
        parsed.dedup();
        Ok(Subscriptions(parsed))
    }

    /// Reads the stored form.
    pub fn from_stored(text: &str) -> Self {
        Subscriptions(text.split_whitespace().map(str::to_string).collect())
    }

    pub fn to_stored(&self) -> String {
        self.0.join(" ")
    }

    pub fn names(&self) -> &[String] {
        &self.0
    }

    /// Whether an event of this type goes to the endpoint.
    pub fn matches(&self, event_type: &str) -> bool {
        self.0.iter().any(|s| {
            s == ALL || s == event_type || (s == MESSAGE_EVENTS && event_type.starts_with("messaging.message."))
        })
    }
}

const SECRET_PREFIX: &str = "whsec_";
const SECRET_BYTES: usize = 24;

/// A new signing secret: `whsec_` and the base64 of 24 random bytes.
pub fn new_secret() -> String {
    let mut bytes = [0u8; SECRET_BYTES];
    rand::rng().fill_bytes(&mut bytes);
    format!("{SECRET_PREFIX}{}", STANDARD.encode(bytes))
}

/// The HMAC key of a secret: the base64-decoded part after `whsec_`.
fn secret_key(secret: &str) -> Vec<u8> {
    let encoded = secret.strip_prefix(SECRET_PREFIX).unwrap_or(secret);
    // Secrets are minted here, so they always decode; the raw text is a safe fallback.
    STANDARD.decode(encoded).unwrap_or_else(|_| encoded.as_bytes().to_vec())
}

/// One Standard Webhooks signature: `v1,` and the base64 HMAC-SHA256 of `{id}.{timestamp}.{body}`.
pub fn sign(secret: &str, msg_id: &str, timestamp: i64, body: &[u8]) -> String {
    let mut mac = Hmac::<Sha256>::new_from_slice(&secret_key(secret)).expect("HMAC takes keys of any length");
    mac.update(msg_id.as_bytes());
    mac.update(b".");
    mac.update(timestamp.to_string().as_bytes());
    mac.update(b".");
    mac.update(body);
    format!("v1,{}", STANDARD.encode(mac.finalize().into_bytes()))
}

/// The `webhook-signature` header: one signature per secret, space-separated.
pub fn signature_header<'a>(
    secrets: impl IntoIterator<Item = &'a str>,
    msg_id: &str,
    timestamp: i64,
    body: &[u8],
) -> String {
    secrets.into_iter().map(|secret| sign(secret, msg_id, timestamp, body)).collect::<Vec<_>>().join(" ")
}

/// Parses `250ms`, `5s`, `5m`, `2h` or `5d`.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    let split = text.find(|c: char| !c.is_ascii_digit()).unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let number: u64 = number.parse().map_err(|_| format!("{text:?} is not a duration such as 500ms, 5s, 5m or 2h"))?;
    let unit_ms = match unit.trim() {
        "ms" => 1,
        "s" => 1_000,
        "m" => 60_000,
        "h" => 3_600_000,
        "d" => 86_400_000,
        _ => return Err(format!("{text:?} needs a unit: ms, s, m, h or d")),
    };
    let ms =
        number.checked_mul(unit_ms).filter(|ms| *ms <= 366 * 86_400_000).ok_or("durations are limited to a year")?;
    Ok(Duration::from_millis(ms))
}

/// The delays between attempts after the first, which is immediate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RetrySchedule(Vec<Duration>);

impl RetrySchedule {
    /// Parses a comma-separated list such as `5s,5m,30m,2h,5h,10h,10h`; empty means no retries.
    pub fn parse(text: &str) -> Result<Self, String> {
        let delays = text
            .split(',')
            .filter(|part| !part.trim().is_empty())
            .map(parse_duration)
            .collect::<Result<Vec<_>, _>>()?;
        if delays.len() > 50 {
            return Err("the schedule is limited to 50 retries".into());
        }
        Ok(RetrySchedule(delays))
    }

    /// The delay before the next attempt once `attempts` have been made; `None` when the
    /// schedule has run out.
    pub fn delay_after(&self, attempts: i64) -> Option<Duration> {
        usize::try_from(attempts).ok().filter(|n| *n >= 1).and_then(|n| self.0.get(n - 1)).copied()
    }

    /// The longest a failing endpoint with queued deliveries waits between two attempts: twice
    /// the schedule's longest delay (jitter, a receiver's `Retry-After`, and other deliveries'
    /// schedules all fall inside it). Two failures further apart than this are not one streak.
    pub fn streak_gap(&self) -> Duration {
        self.0.iter().max().copied().unwrap_or(Duration::from_secs(60)) * 2
    }

    /// How many attempts the schedule allows in all.
    #[cfg(test)]
    fn max_attempts(&self) -> usize {
        self.0.len() + 1
    }
}

/// `delay` moved by up to 20 % either way, so that receivers that failed together are not
/// retried together.
pub fn jittered(delay: Duration, rng: &mut impl Rng) -> Duration {
    delay.mul_f64(rng.random_range(0.8..=1.2))
}

/// Longest wait a `Retry-After` can ask for.
pub const MAX_RETRY_AFTER: Duration = Duration::from_secs(24 * 3600);

/// Reads a `Retry-After` value (seconds or an HTTP date) as a delay from `now`, at most a day.
pub fn parse_retry_after(value: &str, now: OffsetDateTime) -> Option<Duration> {
    let value = value.trim();
    let delay = if let Ok(seconds) = value.parse::<u64>() {
        Duration::from_secs(seconds)
    } else {
        let at = OffsetDateTime::parse(value, &Rfc2822).ok()?;
        Duration::try_from(at - now).unwrap_or(Duration::ZERO)
    };
    Some(delay.min(MAX_RETRY_AFTER))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn subscriptions_resolve_aliases_and_patterns_and_refuse_unknown_names() {
        let subs = Subscriptions::parse(["message.received", "message.sent", "messaging.message.sent"]).unwrap();
        assert_eq!(subs.names(), ["messaging.message.received", "messaging.message.sent"]);
        assert!(subs.matches("messaging.message.sent") && subs.matches("messaging.message.received"));
        assert!(!subs.matches("messaging.message.queued"));

        let messages = Subscriptions::parse(["messaging.message.*"]).unwrap();
        assert!(messages.matches("messaging.message.read") && !messages.matches("messaging.poll.voted"));
        let all = Subscriptions::parse(["*"]).unwrap();
        assert!(EVENT_TYPES.iter().all(|t| all.matches(t)));
        assert_eq!(Subscriptions::from_stored(&all.to_stored()), all);

        assert_eq!(Subscriptions::parse([]), Err(SubscriptionError::Empty));
        for bad in ["message.delivered", "messaging.*", "messaging.message.exploded", "", "MESSAGING.MESSAGE.SENT"] {
            assert_eq!(Subscriptions::parse(["*", bad]), Err(SubscriptionError::Unknown(bad.to_string())), "{bad:?}");
        }
    }

    #[test]
    fn signatures_match_the_standard_webhooks_test_vector() {
        // From the Standard Webhooks specification's reference libraries.
        let secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
        let signature = sign(secret, "msg_p5jXN8AQM9LWM0D4loKWxJek", 1614265330, br#"{"test": 2432232314}"#);
        assert_eq!(signature, "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=");
        let both = signature_header(
            [new_secret().as_str(), secret],
            "msg_p5jXN8AQM9LWM0D4loKWxJek",
            1614265330,
            br#"{"test": 2432232314}"#,
        );
        assert!(both.ends_with(" v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="), "{both}");
    }

    #[test]
    fn new_secrets_carry_24_random_bytes() {
        let (a, b) = (new_secret(), new_secret());
        assert!(a.starts_with("whsec_") && a != b);
        assert_eq!(secret_key(&a).len(), 24);
    }

    #[test]
    fn the_retry_schedule_parses_units_and_ends() {
        let schedule = RetrySchedule::parse("5s,5m,30m,2h,5h,10h,10h").unwrap();
        assert_eq!(schedule.max_attempts(), 8);
        assert_eq!(schedule.delay_after(1), Some(Duration::from_secs(5)));
        assert_eq!(schedule.delay_after(7), Some(Duration::from_secs(36_000)));
        assert_eq!(schedule.delay_after(8), None);
        assert_eq!(schedule.delay_after(0), None);
        assert_eq!(RetrySchedule::parse("250ms, 1d").unwrap().delay_after(1), Some(Duration::from_millis(250)));
        assert_eq!(RetrySchedule::parse("").unwrap().max_attempts(), 1);
        for bad in ["5", "5x", "s", "-5s", "5s,,x"] {
            assert!(RetrySchedule::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn jitter_stays_within_twenty_percent_and_spreads() {
        let mut rng = rand::rng();
        let base = Duration::from_secs(300);
        let samples: Vec<Duration> = (0..10_000).map(|_| jittered(base, &mut rng)).collect();
        assert!(samples.iter().all(|d| *d >= base.mul_f64(0.8) && *d <= base.mul_f64(1.2)));
        assert!(samples.iter().any(|d| *d < base.mul_f64(0.85)), "some land early");
        assert!(samples.iter().any(|d| *d > base.mul_f64(1.15)), "some land late");
    }

    #[test]
    fn retry_after_takes_seconds_or_a_date_and_is_capped() {
        let now = OffsetDateTime::from_unix_timestamp(784_111_777).unwrap(); // Sun, 06 Nov 1994 08:49:37 GMT
        assert_eq!(parse_retry_after("120", now), Some(Duration::from_secs(120)));
        assert_eq!(parse_retry_after("Sun, 06 Nov 1994 08:51:37 GMT", now), Some(Duration::from_secs(120)));
        assert_eq!(parse_retry_after("Sun, 06 Nov 1994 08:00:00 GMT", now), Some(Duration::ZERO));
        assert_eq!(parse_retry_after("99999999", now), Some(MAX_RETRY_AFTER));
        assert_eq!(parse_retry_after("soon", now), None);
    }
}
