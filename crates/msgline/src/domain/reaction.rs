//! Reactions (tapbacks): the words a phone without them shows, and how those words, arriving as
//! an SMS, are read back as a reaction.
//!
//! An iPhone that reacts to a message from a phone that cannot show tapbacks sends a text
//! instead: `Loved “See you at 6”`, and `Removed a heart “See you at 6”` (some versions write
//! `Removed a heart from “…”`) when it takes the reaction back. msgline writes the same words as
//! the body of a reaction it sends (the text a Mac stores for a tapback, as BlueBubbles Server's
//! `api/apple/mappings.ts` lists them), and reads either form in an inbound message.

use super::lifecycle::Tapback;

/// The verb of each tapback, and the phrase of its removal.
fn words(tapback: Tapback) -> (&'static str, &'static str) {
    match tapback {
        Tapback::Love => ("Loved", "Removed a heart"),
        Tapback::Like => ("Liked", "Removed a like"),
        Tapback::Dislike => ("Disliked", "Removed a dislike"),
        Tapback::Laugh => ("Laughed at", "Removed a laugh"),
        Tapback::Emphasize => ("Emphasized", "Removed an exclamation"),
        Tapback::Question => ("Questioned", "Removed a question mark"),
    }
}

/// The longest quote of the target a reaction's words carry, in characters; a longer text is
/// cut and ends with `…`.
pub const QUOTE_CHARS: usize = 100;

/// The words of a reaction to a message with `target` as its text.
pub fn fallback_text(tapback: Tapback, removed: bool, target: &str) -> String {
    let (verb, removal) = words(tapback);
    let phrase = if removed { removal } else { verb };
    let target = target.trim();
    let quote: String = if target.chars().count() > QUOTE_CHARS {
        target.chars().take(QUOTE_CHARS - 1).chain(std::iter::once('…')).collect()
    } else {
        target.to_string()
    };
    format!("{phrase} “{quote}”")
}

/// A reaction read from its words.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TextReaction {
    pub tapback: Tapback,
    pub removed: bool,
    /// The quoted text of the message reacted to (possibly cut, ending with `…`).
    pub quote: String,
}

/// Reads a whole message as a reaction's words: a verb or removal phrase (a removal with or
/// without `from`), a space and the quoted text, in curly (`“…”`) or straight (`"…"`) quotes.
/// Anything else is not a reaction.
pub fn from_text(body: &str) -> Option<TextReaction> {
    let body = body.trim();
    for tapback in Tapback::ALL {
        let (verb, removal) = words(*tapback);
        for (phrase, removed) in [(verb, false), (removal, true)] {
            let Some(mut rest) = body.strip_prefix(phrase).and_then(|rest| rest.strip_prefix(' ')) else { continue };
            if removed && let Some(after) = rest.strip_prefix("from ") {
                rest = after;
            }
            let quoted = rest
                .strip_prefix('“')
                .and_then(|q| q.strip_suffix('”'))
                .or_else(|| rest.strip_prefix('"').and_then(|q| q.strip_suffix('"')));
            if let Some(quote) = quoted.filter(|q| !q.trim().is_empty()) {
                return Some(TextReaction { tapback: *tapback, removed, quote: quote.to_string() });
            }
        }
    }
    None
}

impl TextReaction {
    /// Whether a message with this text is the one quoted: the same text, or, for a quote cut
    /// with `…`, a text that begins with what was kept.
    pub fn quotes(&self, text: &str) -> bool {
        let text = text.trim();
        let quote = self.quote.trim();
        if text == quote {
            return true;
        }
        match quote.strip_suffix('…') {
            Some(kept) if !kept.is_empty() => text.starts_with(kept),
            _ => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reactions_words_read_back_as_the_same_reaction() {
        for tapback in Tapback::ALL {
            for removed in [false, true] {
                let text = fallback_text(*tapback, removed, "See you at 6");
                let read = from_text(&text).expect("its own words are a reaction");
                assert_eq!((read.tapback, read.removed), (*tapback, removed), "{text}");
                assert!(read.quotes("See you at 6"));
            }
        }
        assert_eq!(fallback_text(Tapback::Laugh, false, "hi"), "Laughed at “hi”");
        assert_eq!(fallback_text(Tapback::Emphasize, true, "hi"), "Removed an exclamation “hi”");
        let older = from_text("Removed a heart from “hi”").unwrap();
        assert_eq!((older.tapback, older.removed, older.quote.as_str()), (Tapback::Love, true, "hi"));
    }

    #[test]
    fn only_the_whole_phrase_with_a_quote_is_a_reaction() {
        assert_eq!(
            from_text("Liked \"ok\""),
            Some(TextReaction { tapback: Tapback::Like, removed: false, quote: "ok".into() })
        );
        assert_eq!(from_text("Loved it, thanks"), None);
        assert_eq!(from_text("Loved “”"), None);
        assert_eq!(from_text("I Loved “this”"), None);
        assert_eq!(from_text("Loved“this”"), None);
        assert_eq!(from_text("Removed a hearth “this”"), None);
    }

    #[test]
    fn a_long_text_is_quoted_cut_and_still_matched() {
        let long = "x".repeat(300);
        let text = fallback_text(Tapback::Love, false, &long);
        assert_eq!(text.chars().count(), "Loved “”".chars().count() + QUOTE_CHARS);
        let read = from_text(&text).unwrap();
        assert!(read.quotes(&long));
        assert!(!read.quotes("y"));
    }
}
