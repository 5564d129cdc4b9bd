//! A message's typed fields and the rules of its lifecycle, in one place.
//!
//! An outbound message moves forward only: (`scheduled` →) `queued` → (`unknown`) → `submitted` →
//! `sent` → `delivered` → `read`, or to `failed` from anywhere before `delivered`; a `scheduled`
//! one may instead be `canceled`. An inbound message is
//! `received` and never moves. Each type maps to and from the name stored in the database and
//! shown in the API; nothing else in msgline spells these names.

use std::{fmt, str::FromStr};

use serde::{Deserialize, Serialize};

/// Declares a string-backed enum: its variants with their names, `as_str`, `ALL`, `FromStr`,
/// `Display` and serde by name.
macro_rules! named_enum {
    ($(#[$meta:meta])* $name:ident { $($(#[$vmeta:meta])* $variant:ident = $text:literal),+ $(,)? }) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
        pub enum $name {
            $($(#[$vmeta])* #[serde(rename = $text)] $variant),+
        }

        impl $name {
            pub const ALL: &'static [$name] = &[$($name::$variant),+];

            pub fn as_str(self) -> &'static str {
                match self {
                    $($name::$variant => $text),+
                }
            }

            /// Every name, comma-separated (for error messages).
            pub fn names() -> String {
                Self::ALL.iter().map(|v| v.as_str()).collect::<Vec<_>>().join(", ")
            }
        }

        impl FromStr for $name {
            type Err = UnknownName;

            fn from_str(text: &str) -> Result<Self, UnknownName> {
                match text {
                    $($text => Ok($name::$variant),)+
                    other => Err(UnknownName { kind: stringify!($name), name: other.to_string() }),
                }
            }
        }

        /// In the OpenAPI document: a string, one of the names.
        impl utoipa::PartialSchema for $name {
            fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
                utoipa::openapi::ObjectBuilder::new()
                    .schema_type(utoipa::openapi::Type::String)
                    .enum_values(Some([$($text),+]))
                    .into()
            }
        }

        impl utoipa::ToSchema for $name {}

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }
    };
}

/// A name that is none of a type's names (a row written by a newer msgline, or bad input).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownName {
    pub kind: &'static str,
    pub name: String,
}

impl fmt::Display for UnknownName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?} is not a {}", self.name, self.kind)
    }
}

impl std::error::Error for UnknownName {}

named_enum!(
    /// Where a message stands.
    MessageStatus {
        /// Waiting for its `send_at`; not yet the dispatcher's.
        Scheduled = "scheduled",
        Queued = "queued",
        /// The line may or may not have it; msgline asks until it knows.
        Unknown = "unknown",
        Submitted = "submitted",
        Sent = "sent",
        Delivered = "delivered",
        Read = "read",
        Failed = "failed",
        /// A scheduled message canceled before its time.
        Canceled = "canceled",
        /// An inbound message.
        Received = "received",
    }
);

/// The forward steps of an outbound message, in order.
const FORWARD: [MessageStatus; 4] =
    [MessageStatus::Submitted, MessageStatus::Sent, MessageStatus::Delivered, MessageStatus::Read];

impl MessageStatus {
    /// Where the status stands in the outbound lifecycle; `None` for `failed`, `canceled` and
    /// `received`.
    fn rank(self) -> Option<u8> {
        match self {
            Self::Scheduled => Some(0),
            Self::Queued => Some(1),
            Self::Unknown => Some(2),
            Self::Submitted => Some(3),
            Self::Sent => Some(4),
            Self::Delivered => Some(5),
            Self::Read => Some(6),
            Self::Failed | Self::Canceled | Self::Received => None,
        }
    }

    /// Whether a message may move from `self` to `to`: forward only, to `failed` only before it
    /// was delivered; `scheduled` only to `queued` (its time came), `canceled` or `failed`.
    pub fn may_move_to(self, to: MessageStatus) -> bool {
        match (self.rank(), to) {
            (None, _) => false,
            (Some(_), MessageStatus::Canceled) => self == Self::Scheduled,
            (Some(_), to) if self == Self::Scheduled => matches!(to, Self::Queued | Self::Failed),
            (Some(from), MessageStatus::Failed) => Self::Delivered.rank().is_some_and(|delivered| from < delivered),
            (Some(from), to) => to.rank().is_some_and(|to| to > from),
        }
    }

    /// The statuses a message may move to `self` from (the condition of a move's write).
    pub fn sources(self) -> Vec<MessageStatus> {
        Self::ALL.iter().copied().filter(|from| from.may_move_to(self)).collect()
    }

    /// The moves from `self` towards `target`, one status at a time (each writes its own event):
    /// a line that reports `delivered` first still yields `sent`. Empty when `target` is no move
    /// forward.
    pub fn steps_to(self, target: MessageStatus) -> Vec<MessageStatus> {
        if matches!(target, Self::Failed | Self::Canceled) || self == Self::Scheduled {
            return if self.may_move_to(target) { vec![target] } else { Vec::new() };
        }
        let (Some(from), Some(to)) = (self.rank(), target.rank()) else { return Vec::new() };
        FORWARD.into_iter().filter(|step| step.rank().is_some_and(|r| r > from && r <= to)).collect()
    }

    /// Nothing more will happen to the message (`read` can still follow `delivered`, but msgline
    /// does not wait for it).
    pub fn is_final(self) -> bool {
        matches!(self, Self::Delivered | Self::Read | Self::Failed | Self::Canceled | Self::Received)
    }

    /// The event a move to this status writes: `messaging.message.<status>`.
    pub fn event_type(self) -> &'static str {
        match self {
            Self::Scheduled => "messaging.message.scheduled",
            Self::Queued => "messaging.message.queued",
            Self::Unknown => "messaging.message.unknown",
            Self::Submitted => "messaging.message.submitted",
            Self::Sent => "messaging.message.sent",
            Self::Delivered => "messaging.message.delivered",
            Self::Read => "messaging.message.read",
            Self::Failed => "messaging.message.failed",
            Self::Canceled => "messaging.message.canceled",
            Self::Received => "messaging.message.received",
        }
    }
}

named_enum!(
    /// Which way a message went.
    Direction {
        Inbound = "inbound",
        Outbound = "outbound",
    }
);

named_enum!(
    /// Whether a line sends: `active`; `paused` by an operator; `flagged` when its device said its
    /// account is blocked (until an operator resumes it); `offline` while its probes fail.
    Health {
        Active = "active",
        Paused = "paused",
        Flagged = "flagged",
        Offline = "offline",
    }
);

named_enum!(
    /// The network a message went over.
    Channel {
        Imessage = "imessage",
        Sms = "sms",
    }
);

named_enum!(
    /// What a message is.
    MessageKind {
        Text = "text",
        ContactCard = "contact_card",
        Poll = "poll",
        PollVote = "poll_vote",
        /// A tapback on another message (iMessage; over SMS, recognised from its text).
        Reaction = "reaction",
        /// One or more files (`attachments`), with the text as their caption.
        Media = "media",
    }
);

named_enum!(
    /// The six tapbacks of iMessage.
    Tapback {
        Love = "love",
        Like = "like",
        Dislike = "dislike",
        Laugh = "laugh",
        Emphasize = "emphasize",
        Question = "question",
    }
);

// The macro's enums derive a fixed set of traits; this one also has a default.
#[allow(clippy::derivable_impls)]
impl Default for MessageKind {
    fn default() -> Self {
        Self::Text
    }
}

named_enum!(
    /// A conversation with one contact, or a group.
    ConversationKind {
        Direct = "direct",
        Group = "group",
    }
);

#[cfg(test)]
mod tests {
    use super::{MessageStatus::*, *};

    #[test]
    fn names_round_trip_and_unknown_names_are_refused() {
        for status in MessageStatus::ALL {
            assert_eq!(status.as_str().parse::<MessageStatus>(), Ok(*status));
            assert_eq!(serde_json::to_value(status).unwrap(), status.as_str());
        }
        for kind in MessageKind::ALL {
            assert_eq!(kind.as_str().parse::<MessageKind>(), Ok(*kind));
        }
        let refused = "delivering".parse::<MessageStatus>().unwrap_err();
        assert_eq!(refused.to_string(), "\"delivering\" is not a MessageStatus");
        assert!("Group".parse::<ConversationKind>().is_err(), "names are exact");
    }

    #[test]
    fn messages_move_forward_only_and_fail_only_before_delivery() {
        assert!(Queued.may_move_to(Unknown) && Unknown.may_move_to(Submitted) && Sent.may_move_to(Read));
        assert!(!Sent.may_move_to(Submitted) && !Read.may_move_to(Delivered) && !Unknown.may_move_to(Queued));
        assert!(Sent.may_move_to(Failed) && !Delivered.may_move_to(Failed) && !Read.may_move_to(Failed));
        assert!(!Failed.may_move_to(Read) && !Received.may_move_to(Sent) && !Queued.may_move_to(Received));
        assert!(!Queued.may_move_to(Queued), "staying put is no move");
        assert!(Scheduled.may_move_to(Queued) && Scheduled.may_move_to(Canceled) && Scheduled.may_move_to(Failed));
        assert!(
            !Scheduled.may_move_to(Submitted) && !Scheduled.may_move_to(Delivered),
            "a scheduled message was never sent"
        );
        assert!(!Queued.may_move_to(Canceled) && !Canceled.may_move_to(Queued) && !Queued.may_move_to(Scheduled));
    }

    #[test]
    fn sources_are_exactly_the_statuses_that_may_move() {
        assert_eq!(Unknown.sources(), vec![Queued]);
        assert_eq!(Submitted.sources(), vec![Queued, Unknown]);
        assert_eq!(Failed.sources(), vec![Scheduled, Queued, Unknown, Submitted, Sent]);
        assert_eq!(Read.sources(), vec![Queued, Unknown, Submitted, Sent, Delivered]);
        assert_eq!(Queued.sources(), vec![Scheduled]);
        assert_eq!(Canceled.sources(), vec![Scheduled]);
        assert!(Scheduled.sources().is_empty() && Received.sources().is_empty());
        for to in MessageStatus::ALL {
            for from in MessageStatus::ALL {
                assert_eq!(to.sources().contains(from), from.may_move_to(*to), "{from} -> {to}");
            }
        }
    }

    #[test]
    fn steps_pass_every_status_on_the_way() {
        assert_eq!(Queued.steps_to(Delivered), vec![Submitted, Sent, Delivered]);
        assert_eq!(Unknown.steps_to(Read), vec![Submitted, Sent, Delivered, Read]);
        assert!(Sent.steps_to(Sent).is_empty());
        assert!(Read.steps_to(Delivered).is_empty());
        assert_eq!(Sent.steps_to(Failed), vec![Failed]);
        assert!(Delivered.steps_to(Failed).is_empty());
        assert!(Received.steps_to(Read).is_empty());
        // Every step is itself an allowed move from the one before.
        for from in MessageStatus::ALL {
            for to in MessageStatus::ALL {
                let mut at = *from;
                for step in from.steps_to(*to) {
                    assert!(at.may_move_to(step), "{at} -> {step} on the way from {from} to {to}");
                    at = step;
                }
            }
        }
    }
}
