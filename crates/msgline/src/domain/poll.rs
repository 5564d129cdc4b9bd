//! Poll questions and options, and how a text reply is read as a vote.

/// A valid question: 1–200 characters.
pub fn parse_question(question: &str) -> Result<String, String> {
    let trimmed = question.trim();
    if trimmed.is_empty() {
        return Err("question must not be empty".into());
    }
    if trimmed.chars().count() > 200 {
        return Err("question is limited to 200 characters".into());
    }
    Ok(trimmed.to_string())
}

/// Valid options: 2–12, each 1–80 characters, distinct after trimming and ignoring case.
pub fn parse_options(options: &[String]) -> Result<Vec<String>, String> {
    if options.len() < 2 || options.len() > 12 {
        return Err(format!("a poll has 2 to 12 options, not {}", options.len()));
    }
    let mut seen: Vec<String> = Vec::with_capacity(options.len());
    let mut out = Vec::with_capacity(options.len());
    for (i, option) in options.iter().enumerate() {
        let trimmed = option.trim();
        if trimmed.is_empty() {
            return Err(format!("option {} is empty", i + 1));
        }
        if trimmed.chars().count() > 80 {
            return Err(format!("option {} is longer than 80 characters", i + 1));
        }
        let folded = trimmed.to_lowercase();
        if seen.contains(&folded) {
            return Err(format!("option {} repeats an earlier option", i + 1));
        }
        seen.push(folded);
        out.push(trimmed.to_string());
    }
    Ok(out)
}

/// The option a text reply chooses: its text (ignoring case and surrounding space) or its
/// number counted from 1.
pub fn match_reply(reply: &str, options: &[String]) -> Option<usize> {
    let reply = reply.trim();
    if let Some(i) = options.iter().position(|o| o.to_lowercase() == reply.to_lowercase()) {
        return Some(i);
    }
    reply.parse::<usize>().ok().filter(|n| (1..=options.len()).contains(n)).map(|n| n - 1)
}

/// The body of the inbound message that records a vote.
pub fn vote_text(option: &str, question: &str) -> String {
    format!("Voted \"{option}\" in the poll \"{question}\"")
}

/// What a device without native polls shows.
pub fn fallback_text(question: &str, options: &[String]) -> String {
    let numbered: Vec<String> = options.iter().enumerate().map(|(i, o)| format!("{}. {o}", i + 1)).collect();
    format!("Poll: {question}\n{}\nReply with a number or an option.", numbered.join("\n"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(items: &[&str]) -> Vec<String> {
        items.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn options_are_checked_at_their_limits() {
        assert!(parse_options(&strings(&["a"])).is_err());
        assert!(parse_options(&strings(&["a", "b"])).is_ok());
        assert!(parse_options(&(0..12).map(|i| i.to_string()).collect::<Vec<_>>()).is_ok());
        assert!(parse_options(&(0..13).map(|i| i.to_string()).collect::<Vec<_>>()).is_err());
        assert!(parse_options(&["x".repeat(80), "y".into()]).is_ok());
        assert!(parse_options(&["x".repeat(81), "y".into()]).is_err());
        assert!(parse_options(&strings(&["Pizza", " pizza "])).is_err());
        assert!(parse_question(&"q".repeat(200)).is_ok());
        assert!(parse_question(&"q".repeat(201)).is_err());
    }

    #[test]
    fn replies_match_an_option_by_text_or_number() {
        let options = strings(&["Pizza", "Tacos", "Sushi"]);
        assert_eq!(match_reply(" tacos ", &options), Some(1));
        assert_eq!(match_reply("3", &options), Some(2));
        assert_eq!(match_reply("4", &options), None);
        assert_eq!(match_reply("0", &options), None);
        assert_eq!(match_reply("I like pizza", &options), None);
    }
}
