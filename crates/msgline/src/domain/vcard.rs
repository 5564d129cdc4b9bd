//! vCard 3.0 as iPhones read it: FN, N, TEL;TYPE=CELL, EMAIL, ORG, NOTE and an inline PHOTO,
//! with `\`, `,`, `;` and newlines escaped and lines folded at 75 octets, CRLF line ends.

use base64::{Engine, engine::general_purpose::STANDARD};

use super::photo::Photo;

#[derive(Debug, Clone, Default)]
pub struct Card<'a> {
    pub name: &'a str,
    pub phone: &'a str,
    pub email: Option<&'a str>,
    pub organization: Option<&'a str>,
    pub note: Option<&'a str>,
    pub photo: Option<&'a Photo>,
}

/// Escapes a text value (RFC 2426 §4).
fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            ',' => out.push_str("\\,"),
            ';' => out.push_str("\\;"),
            '\n' => out.push_str("\\n"),
            '\r' => {}
            c => out.push(c),
        }
    }
    out
}

/// Splits a content line into lines of at most 75 octets, never inside a UTF-8 character;
/// continuation lines start with one space.
fn fold(line: &str, out: &mut String) {
    let mut start = 0;
    let mut limit = 75;
    while line.len() - start > limit {
        let mut end = start + limit;
        while !line.is_char_boundary(end) {
            end -= 1;
        }
        out.push_str(&line[start..end]);
        out.push_str("\r\n ");
        start = end;
        // The leading space counts toward the next line's 75 octets.
        limit = 74;
    }
    out.push_str(&line[start..]);
    out.push_str("\r\n");
}

/// `N` from a display name: the last word is the family name, the rest the given names.
fn structured_name(name: &str) -> String {
    let words: Vec<&str> = name.split_whitespace().collect();
    match words.as_slice() {
        [] => ";;;;".into(),
        [only] => format!("{};;;;", escape(only)),
        [given @ .., family] => format!("{};{};;;", escape(family), escape(&given.join(" "))),
    }
}

impl Card<'_> {
    pub fn to_vcard(&self) -> String {
        let mut lines = vec![
            "BEGIN:VCARD".to_string(),
            "VERSION:3.0".to_string(),
            format!("FN:{}", escape(self.name)),
            format!("N:{}", structured_name(self.name)),
            format!("TEL;TYPE=CELL:{}", self.phone),
        ];
        if let Some(email) = self.email {
            lines.push(format!("EMAIL;TYPE=INTERNET:{}", escape(email)));
        }
        if let Some(organization) = self.organization {
            lines.push(format!("ORG:{}", escape(organization)));
        }
        if let Some(note) = self.note {
            lines.push(format!("NOTE:{}", escape(note)));
        }
        if let Some(photo) = self.photo {
            lines.push(format!("PHOTO;ENCODING=b;TYPE={}:{}", photo.kind.vcard_type(), STANDARD.encode(&photo.bytes)));
        }
        lines.push("END:VCARD".to_string());
        let mut out = String::new();
        for line in &lines {
            fold(line, &mut out);
        }
        out
    }
}

/// A card as one line of text for a device that cannot send attachments: `Name: +1…` (the name
/// and the first number; unfolded and unescaped).
pub fn text_summary(vcard: &str) -> String {
    let unfolded = vcard.replace("\r\n ", "").replace("\n ", "");
    let value = |prefix: &str| {
        unfolded.lines().find_map(|line| {
            let (name, value) = line.split_once(':')?;
            (name == prefix || name.starts_with(&format!("{prefix};"))).then(|| value.trim().to_string())
        })
    };
    let name = value("FN").map(|n| n.replace("\\,", ",").replace("\\;", ";").replace("\\\\", "\\"));
    match (name, value("TEL")) {
        (Some(name), Some(phone)) => format!("{name}: {phone}"),
        (Some(name), None) => name,
        (None, Some(phone)) => phone,
        (None, None) => "a contact card".to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::photo::PhotoKind;

    #[test]
    fn a_card_summarises_as_its_name_and_number() {
        let card = Card { name: "Ada, Countess", phone: "+12015550123", ..Default::default() }.to_vcard();
        assert_eq!(text_summary(&card), "Ada, Countess: +12015550123");
    }

    #[test]
    fn special_characters_are_escaped_and_long_lines_folded_at_75_octets() {
        let photo = Photo { bytes: vec![0xff; 300], kind: PhotoKind::Jpeg };
        let card = Card {
            name: "Ann Lee-Smith",
            phone: "+12015550123",
            email: Some("ann@example.com"),
            organization: Some("Acme, Inc.; Sales"),
            note: Some("line one\nline two \\ done"),
            photo: Some(&photo),
        };
        let text = card.to_vcard();
        assert!(text.starts_with("BEGIN:VCARD\r\nVERSION:3.0\r\nFN:Ann Lee-Smith\r\nN:Lee-Smith;Ann;;;\r\n"));
        assert!(text.contains("TEL;TYPE=CELL:+12015550123\r\n"));
        assert!(text.contains("ORG:Acme\\, Inc.\\; Sales\r\n"));
        assert!(text.contains("NOTE:line one\\nline two \\\\ done\r\n"));
        assert!(text.contains("PHOTO;ENCODING=b;TYPE=JPEG://///"));
        assert!(text.ends_with("END:VCARD\r\n"));
        for line in text.split("\r\n") {
            assert!(line.len() <= 75, "{} octets: {line}", line.len());
        }
    }

    #[test]
    fn folding_never_splits_a_character() {
        let name = "Zoë ".repeat(40);
        let text = Card { name: &name, phone: "+12015550123", ..Card::default() }.to_vcard();
        let unfolded = text.replace("\r\n ", "");
        assert!(unfolded.contains(&format!("FN:{}", name)));
        for line in text.split("\r\n") {
            assert!(line.len() <= 75);
        }
    }
}
