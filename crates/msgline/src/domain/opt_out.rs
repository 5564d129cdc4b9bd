//! The words that opt a number out of an organisation's messages on a line, back in, or ask
//! for help, and the replies msgline sends to them.
//!
//! A keyword counts only as the whole message: any case, with surrounding spaces and a closing
//! `.` or `!` ignored. "Stop" opts out; "please stop texting me" is an ordinary message.

/// What an inbound text asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Keyword {
    /// Opt out; the word, in lower case.
    OptOut(&'static str),
    /// Opt back in; the word, in lower case.
    OptIn(&'static str),
    /// The organisation's help text.
    Help,
}

const OPT_OUT: [&str; 6] = ["stop", "stopall", "unsubscribe", "cancel", "end", "quit"];
const OPT_IN: [&str; 3] = ["start", "unstop", "yes"];
const HELP: [&str; 2] = ["help", "info"];

/// The keyword a message body is, if it is one.
pub fn keyword(body: &str) -> Option<Keyword> {
    let word = body.trim().trim_end_matches(['.', '!']).trim_end().to_lowercase();
    if let Some(found) = OPT_OUT.iter().find(|k| **k == word) {
        return Some(Keyword::OptOut(found));
    }
    if let Some(found) = OPT_IN.iter().find(|k| **k == word) {
        return Some(Keyword::OptIn(found));
    }
    HELP.contains(&word.as_str()).then_some(Keyword::Help)
}

/// The longest reply text an organisation may set: two SMS segments of GSM-7.
pub const REPLY_MAX_CHARS: usize = 306;

/// The reply to an opt-out when the organisation set none.
pub fn default_opt_out_reply(org_name: &str) -> String {
    format!(
        "{org_name}: you are unsubscribed and will get no more messages from this number. Reply START to resubscribe."
    )
}

/// The reply to an opt-in when the organisation set none.
pub fn default_opt_in_reply(org_name: &str) -> String {
    format!("{org_name}: you are subscribed again. Reply STOP to unsubscribe.")
}

/// The reply to HELP or INFO when the organisation set none.
pub fn default_help_reply(org_name: &str) -> String {
    format!("{org_name}: reply STOP to unsubscribe, START to resubscribe.")
}

#[cfg(test)]
mod tests {
    use super::{Keyword, keyword};

    #[test]
    fn only_the_whole_message_is_a_keyword_in_any_case() {
        assert_eq!(keyword("STOP"), Some(Keyword::OptOut("stop")));
        assert_eq!(keyword("  Stop. "), Some(Keyword::OptOut("stop")));
        assert_eq!(keyword("unsubscribe!"), Some(Keyword::OptOut("unsubscribe")));
        assert_eq!(keyword("StopAll"), Some(Keyword::OptOut("stopall")));
        for word in ["cancel", "END", "quit"] {
            assert!(matches!(keyword(word), Some(Keyword::OptOut(_))), "{word}");
        }
        assert_eq!(keyword("start"), Some(Keyword::OptIn("start")));
        assert_eq!(keyword("UNSTOP"), Some(Keyword::OptIn("unstop")));
        assert_eq!(keyword("Yes"), Some(Keyword::OptIn("yes")));
        assert_eq!(keyword("help"), Some(Keyword::Help));
        assert_eq!(keyword("INFO"), Some(Keyword::Help));
        for text in ["please stop", "stop it", "s top", "", "yes please", "helpful", "stop?"] {
            assert_eq!(keyword(text), None, "{text:?}");
        }
    }
}
