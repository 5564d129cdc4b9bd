//! A line's sending policy: how fast, how widely and how evenly a line may send. A phone line is
//! the scarce part of messaging (an Apple ID blocked after a burst to new numbers, a SIM plan
//! that caps unique recipients), so every send waits for its line's budget; the policy is the
//! budget. Each field is a limit or `None` (no limit).
//!
//! - `max_per_minute`, `max_per_hour`, `max_per_day`: sends in the last 60 s, 60 min, 24 h
//!   (rolling windows, so a burst at midnight is no loophole);
//! - `max_new_contacts_per_hour`, `_per_day` (rolling) and `_per_month` (the calendar month, UTC,
//!   as SIM plans count): sends to a number the line has neither messaged nor heard from;
//! - `max_per_recipient_per_minute`: sends to one number in the last 60 s (the guard against two
//!   bots answering each other for ever);
//! - `min_gap_ms` between two sends of the line, plus a random `0..=jitter_ms` each time.
//!
//! What a line runs on is its kind's defaults ([`defaults_for`]) overlaid with what an operator
//! set ([`Overrides`]); docs/lines.md says where each default comes from.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The fields of a policy, in the order they are shown.
pub const FIELDS: [&str; 9] = [
    "max_per_minute",
    "max_per_hour",
    "max_per_day",
    "max_new_contacts_per_hour",
    "max_new_contacts_per_day",
    "max_new_contacts_per_month",
    "max_per_recipient_per_minute",
    "min_gap_ms",
    "jitter_ms",
];

/// The largest value a field takes: a day in milliseconds for the gaps, far above any real
/// budget for the counts.
pub const MAX_VALUE: u64 = 86_400_000;

/// A policy in force: every limit, `None` where there is none.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Policy {
    pub max_per_minute: Option<u64>,
    pub max_per_hour: Option<u64>,
    pub max_per_day: Option<u64>,
    pub max_new_contacts_per_hour: Option<u64>,
    pub max_new_contacts_per_day: Option<u64>,
    pub max_new_contacts_per_month: Option<u64>,
    pub max_per_recipient_per_minute: Option<u64>,
    pub min_gap_ms: Option<u64>,
    pub jitter_ms: Option<u64>,
}

/// What an operator set on a line: a field named here replaces the kind's default (`None`: no
/// limit); a field not named keeps the default. Stored as a JSON object on the line.
pub type Overrides = BTreeMap<String, Option<u64>>;

impl Policy {
    /// No limit at all: the line's sends need no budget and take the dispatcher's direct path.
    pub fn is_unlimited(&self) -> bool {
        *self == Policy::default()
    }

    /// Whether any limit counts new contacts (the pacer then asks, for each waiting message,
    /// whether its number is new to the line).
    pub fn counts_new_contacts(&self) -> bool {
        self.max_new_contacts_per_hour.is_some()
            || self.max_new_contacts_per_day.is_some()
            || self.max_new_contacts_per_month.is_some()
    }

    fn field_mut(&mut self, name: &str) -> Option<&mut Option<u64>> {
        Some(match name {
            "max_per_minute" => &mut self.max_per_minute,
            "max_per_hour" => &mut self.max_per_hour,
            "max_per_day" => &mut self.max_per_day,
            "max_new_contacts_per_hour" => &mut self.max_new_contacts_per_hour,
            "max_new_contacts_per_day" => &mut self.max_new_contacts_per_day,
            "max_new_contacts_per_month" => &mut self.max_new_contacts_per_month,
            "max_per_recipient_per_minute" => &mut self.max_per_recipient_per_minute,
            "min_gap_ms" => &mut self.min_gap_ms,
            "jitter_ms" => &mut self.jitter_ms,
            _ => return None,
        })
    }

    /// This policy with `overrides` laid over it (names it does not know are left out).
    pub fn with(mut self, overrides: &Overrides) -> Policy {
        for (name, value) in overrides {
            if let Some(field) = self.field_mut(name) {
                *field = *value;
            }
        }
        self
    }
}

/// The defaults of a line's kind of bridge (`msgline`, `bluebubbles`, `android-gateway`,
/// `kannel`): docs/lines.md, "Sending policy", gives the source of each figure.
pub fn defaults_for(bridge_kind: &str) -> Policy {
    match bridge_kind {
        // An Apple ID on a Mac: below the ~200 iMessages an hour that got accounts blocked, and the
        // hosted iMessage APIs' published new-contact budgets (15 an hour, 50 a day).
        "bluebubbles" => Policy {
            max_per_minute: Some(20),
            max_per_hour: Some(150),
            max_per_day: Some(1_500),
            max_new_contacts_per_hour: Some(15),
            max_new_contacts_per_day: Some(50),
            max_new_contacts_per_month: None,
            max_per_recipient_per_minute: Some(10),
            min_gap_ms: Some(2_000),
            jitter_ms: Some(1_000),
        },
        // A SIM in an Android phone: Android asks the owner to confirm past 30 SMS in 30 minutes
        // from one app, so an hour holds 60; the gateway app's own delays are a few seconds.
        "android-gateway" => Policy {
            max_per_minute: Some(10),
            max_per_hour: Some(60),
            max_per_day: Some(500),
            max_new_contacts_per_hour: None,
            max_new_contacts_per_day: None,
            max_new_contacts_per_month: None,
            max_per_recipient_per_minute: Some(10),
            min_gap_ms: Some(1_000),
            jitter_ms: Some(500),
        },
        // An SMPP bind behind Kannel takes 100 to 150 messages a second; Kannel queues the rest.
        "kannel" => Policy { max_per_minute: Some(6_000), ..Policy::default() },
        // msgline's own bridge protocol (and `msgline sim`): no limit; a bridge for a real device
        // sets the device's policy.
        _ => Policy::default(),
    }
}

/// Reads a `policy` object of `PATCH /lines/{id}` into the overrides it sets, over `current`: a
/// field given as a non-negative integer sets that limit, `null` removes the limit, a field left
/// out keeps what it was. `Err` names the field at fault (`policy.max_per_day`) and why.
pub fn patch(current: &Overrides, policy: &Value) -> Result<Overrides, (String, String)> {
    let Some(object) = policy.as_object() else {
        return Err(("policy".into(), "policy is a JSON object of limits".into()));
    };
    let mut next = current.clone();
    for name in FIELDS {
        match object.get(name) {
            None => {}
            Some(Value::Null) => {
                next.insert(name.to_string(), None);
            }
            Some(value) => match value.as_u64().filter(|v| *v <= MAX_VALUE) {
                Some(limit) => {
                    next.insert(name.to_string(), Some(limit));
                }
                None => {
                    return Err((
                        format!("policy.{name}"),
                        format!("{name} is a whole number from 0 to {MAX_VALUE}, or null for no limit"),
                    ));
                }
            },
        }
    }
    Ok(next)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_patch_sets_clears_and_keeps_each_field_and_names_a_bad_one() {
        let current = patch(&Overrides::new(), &json!({"max_per_day": 100, "min_gap_ms": 500})).unwrap();
        let next = patch(&current, &json!({"max_per_day": null, "jitter_ms": 0, "unknown": 3})).unwrap();
        assert_eq!(next.get("max_per_day"), Some(&None));
        assert_eq!(next.get("min_gap_ms"), Some(&Some(500)));
        assert_eq!(next.get("jitter_ms"), Some(&Some(0)));
        assert!(!next.contains_key("unknown"));
        for bad in [json!(-1), json!(1.5), json!("10"), json!(true), json!(MAX_VALUE + 1)] {
            let (field, why) = patch(&current, &json!({"max_per_hour": bad})).unwrap_err();
            assert_eq!(field, "policy.max_per_hour");
            assert!(why.contains("whole number"), "{why}");
        }
        assert_eq!(patch(&current, &json!([1])).unwrap_err().0, "policy");
    }

    #[test]
    fn overrides_lie_over_the_kind_s_defaults() {
        let defaults = defaults_for("bluebubbles");
        assert!(defaults.counts_new_contacts());
        let overrides =
            patch(&Overrides::new(), &json!({"max_new_contacts_per_day": null, "max_per_day": 10})).unwrap();
        let policy = defaults.with(&overrides);
        assert_eq!(policy.max_new_contacts_per_day, None);
        assert_eq!(policy.max_per_day, Some(10));
        assert_eq!(policy.max_per_hour, defaults.max_per_hour);
        assert!(defaults_for("msgline").is_unlimited());
        assert!(!defaults_for("kannel").is_unlimited());
    }
}
