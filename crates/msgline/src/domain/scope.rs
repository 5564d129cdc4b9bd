//! API key scopes.

use std::fmt;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Scope {
    Send,
    Read,
    Contacts,
    Webhooks,
    Keys,
    Agents,
    /// Lines' policies and health (pause, resume) and sender pools.
    Lines,
}

impl Scope {
    pub const ALL: [Scope; 7] =
        [Scope::Send, Scope::Read, Scope::Contacts, Scope::Webhooks, Scope::Keys, Scope::Agents, Scope::Lines];

    pub fn as_str(self) -> &'static str {
        match self {
            Scope::Send => "messaging_send",
            Scope::Read => "messaging_read",
            Scope::Contacts => "messaging_contacts",
            Scope::Webhooks => "messaging_webhooks",
            Scope::Keys => "messaging_keys",
            Scope::Agents => "messaging_agents",
            Scope::Lines => "messaging_lines",
        }
    }

    pub fn parse(text: &str) -> Option<Scope> {
        Scope::ALL.into_iter().find(|s| s.as_str() == text.trim())
    }
}

impl fmt::Display for Scope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A set of scopes, stored as a space-separated list.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Scopes(Vec<Scope>);

impl Scopes {
    pub fn all() -> Self {
        Scopes(Scope::ALL.to_vec())
    }

    pub fn new(mut scopes: Vec<Scope>) -> Self {
        scopes.sort();
        scopes.dedup();
        Scopes(scopes)
    }

    /// Parses names; the first unknown name is the error.
    pub fn parse<'a>(names: impl IntoIterator<Item = &'a str>) -> Result<Self, String> {
        let mut scopes = Vec::new();
        for name in names {
            match Scope::parse(name) {
                Some(scope) => scopes.push(scope),
                None => return Err(name.to_string()),
            }
        }
        Ok(Scopes::new(scopes))
    }

    /// Reads the stored form; unknown names (from a newer version) are skipped.
    pub fn from_stored(text: &str) -> Self {
        Scopes::new(text.split_whitespace().filter_map(Scope::parse).collect())
    }

    pub fn to_stored(&self) -> String {
        self.names().join(" ")
    }

    pub fn names(&self) -> Vec<&'static str> {
        self.0.iter().map(|s| s.as_str()).collect()
    }

    pub fn contains(&self, scope: Scope) -> bool {
        self.0.contains(&scope)
    }

    pub fn iter(&self) -> impl Iterator<Item = Scope> + '_ {
        self.0.iter().copied()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scopes_round_trip_and_reject_unknown_names() {
        let scopes = Scopes::parse(["messaging_read", "messaging_send", "messaging_read"]).unwrap();
        assert_eq!(scopes.names(), ["messaging_send", "messaging_read"]);
        assert_eq!(Scopes::from_stored(&scopes.to_stored()), scopes);
        assert_eq!(Scopes::parse(["messaging_root"]), Err("messaging_root".to_string()));
    }
}
