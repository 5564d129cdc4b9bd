//! Typed identifiers: a message's id, a line's, a conversation's, … each its own type, so that a
//! function taking a line and a conversation cannot be handed them the wrong way round.
//!
//! An id a request names is taken as it is written: one that names nothing is answered where it
//! is looked up (404 with the field), as before the types existed, so the types refuse nothing.
//! New ids are made by [`crate::ids::new_id`] with the type's prefix.

use std::fmt;

/// Declares an id type over a `String`, with its prefix.
macro_rules! typed_id {
    ($($(#[$doc:meta])* $name:ident = $prefix:literal;)*) => {$(
        $(#[$doc])*
        #[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize)]
        #[serde(transparent)]
        pub struct $name(String);

        impl $name {
            /// What every id of this type starts with.
            #[allow(dead_code)]
            pub const PREFIX: &'static str = $prefix;

            pub fn as_str(&self) -> &str {
                &self.0
            }

            pub fn into_string(self) -> String {
                self.0
            }
        }

        impl From<String> for $name {
            fn from(id: String) -> Self {
                Self(id)
            }
        }

        impl From<&str> for $name {
            fn from(id: &str) -> Self {
                Self(id.to_string())
            }
        }

        impl From<$name> for String {
            fn from(id: $name) -> String {
                id.0
            }
        }

        impl AsRef<str> for $name {
            fn as_ref(&self) -> &str {
                &self.0
            }
        }

        impl std::ops::Deref for $name {
            type Target = str;
            fn deref(&self) -> &str {
                &self.0
            }
        }

        impl PartialEq<str> for $name {
            fn eq(&self, other: &str) -> bool {
                self.0 == other
            }
        }

        impl PartialEq<String> for $name {
            fn eq(&self, other: &String) -> bool {
                &self.0 == other
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }
    )*};
}

typed_id! {
    /// An organisation (`org_…`).
    OrgId = "org";
    /// A line (`line_…`).
    LineId = "line";
    /// A conversation, direct or a group (`conv_…`).
    ConversationId = "conv";
    /// A contact (`ct_…`).
    ContactId = "ct";
    /// A message (`msg_…`).
    MessageId = "msg";
    /// A hosted agent (`agt_…`).
    AgentId = "agt";
    /// An API key (`key_…`).
    KeyId = "key";
    /// A webhook endpoint (`wh_…`).
    WebhookId = "wh";
    /// An opt-out (`opt_…`).
    OptOutId = "opt";
    /// A sender pool (`pool_…`).
    PoolId = "pool";
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_id_reads_and_writes_as_the_bare_string_it_holds() {
        let id: LineId = serde_json::from_value(serde_json::json!("line_01abc")).unwrap();
        assert_eq!(id.as_str(), "line_01abc");
        assert_eq!(serde_json::to_value(&id).unwrap(), serde_json::json!("line_01abc"));
        assert_eq!(id, *"line_01abc");
        assert_eq!(LineId::PREFIX, "line");
    }

    #[test]
    fn an_id_that_names_nothing_is_still_read_so_its_lookup_can_answer_404() {
        let id: MessageId = serde_json::from_value(serde_json::json!("not-an-id")).unwrap();
        assert_eq!(id.to_string(), "not-an-id");
    }
}
