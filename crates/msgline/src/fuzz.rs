//! Property tests of every parser of outside input that runs without a server: phone numbers,
//! vCards built from odd names, idempotency keys, customer URLs and the addresses they name,
//! poll text replies, tapbacks' words, bridge callback JSON (group changes among them),
//! `Retry-After`, API keys in `Authorization`, paging parameters, request bodies as bytes, contact
//! photos and webhook subscriptions and schedules.
//! None may panic, and each keeps the promise its docs make. The same parsers behind a running
//! server, and the device webhooks, are fuzzed over HTTP in tests/api/fuzz.rs.
//!
//! `PROPTEST_CASES` sets the cases per property (256 by default; `scripts/fuzz` runs more).

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use proptest::prelude::*;
use serde_json::Value;

use crate::{
    api::{auth::bearer, extract::page},
    bridge::{BridgeEvent, BridgeEventPayload},
    domain::lifecycle::{MessageKind, Tapback},
    domain::{
        apikey,
        idempotency::IdempotencyKey,
        phone::E164,
        photo::Photo,
        poll, reaction,
        vcard::{Card, text_summary},
        webhook::{RetrySchedule, Subscriptions, parse_duration, parse_retry_after},
    },
    egress::{Egress, is_public},
    fields::parse_json,
    send::request::SendFields,
};

/// Text as people and machines send it: any Unicode, weighted toward what parsers trip on.
fn odd_text() -> impl Strategy<Value = String> {
    prop_oneof![
        any::<String>(),
        "[ \t\r\n\\\\,;:\"'+0-9a-zA-Z\u{0}\u{85}\u{2028}\u{200b}\u{feff}\u{1F600}é中]{0,120}",
        "\\PC{0,300}",
    ]
}

/// JSON of any shape, its strings from [`odd_text`] and its keys sometimes the ones a parser
/// looks for.
fn any_json() -> impl Strategy<Value = Value> {
    let key = prop_oneof![
        Just("id".to_string()),
        Just("type".to_string()),
        Just("data".to_string()),
        Just("message_id".to_string()),
        Just("status".to_string()),
        Just("from".to_string()),
        Just("body".to_string()),
        Just("to".to_string()),
        Just("option_index".to_string()),
        Just("group_id".to_string()),
        Just("name".to_string()),
        Just("participants".to_string()),
        "[a-z_]{1,12}",
    ];
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<f64>().prop_filter("JSON has no NaN", |f| f.is_finite()).prop_map(Value::from),
        odd_text().prop_map(Value::String),
        prop_oneof![
            Just("message.status"),
            Just("message.inbound"),
            Just("poll.vote"),
            Just("group.state"),
            Just("group.updated"),
            Just("delivered"),
            Just("+12015550123"),
        ]
        .prop_map(Value::from),
    ];
    leaf.prop_recursive(4, 48, 8, move |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..8).prop_map(Value::Array),
            prop::collection::btree_map(key.clone(), inner, 0..8).prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

/// Reverses the vCard text escaping (RFC 2426 §4).
fn unescape(text: &str) -> String {
    let mut out = String::new();
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        match (c, c == '\\') {
            (_, true) => match chars.next() {
                Some('n') | Some('N') => out.push('\n'),
                Some(other) => out.push(other),
                None => out.push('\\'),
            },
            (c, false) => out.push(c),
        }
    }
    out
}

/// A private IPv4 address of each kind the egress refuses.
fn private_v4() -> impl Strategy<Value = Ipv4Addr> {
    prop_oneof![
        any::<[u8; 3]>().prop_map(|[a, b, c]| Ipv4Addr::new(10, a, b, c)),
        any::<[u8; 3]>().prop_map(|[a, b, c]| Ipv4Addr::new(127, a, b, c)),
        any::<[u8; 2]>().prop_map(|[a, b]| Ipv4Addr::new(192, 168, a, b)),
        (16u8..32, any::<[u8; 2]>()).prop_map(|(x, [a, b])| Ipv4Addr::new(172, x, a, b)),
        any::<[u8; 2]>().prop_map(|[a, b]| Ipv4Addr::new(169, 254, a, b)),
        (64u8..128, any::<[u8; 2]>()).prop_map(|(x, [a, b])| Ipv4Addr::new(100, x, a, b)),
        any::<[u8; 3]>().prop_map(|[a, b, c]| Ipv4Addr::new(0, a, b, c)),
    ]
}

fn v6_embedding(v4: Ipv4Addr, form: u8, noise: u16) -> Ipv6Addr {
    let [a, b, c, d] = v4.octets();
    let (hi, lo) = (u16::from_be_bytes([a, b]), u16::from_be_bytes([c, d]));
    match form % 5 {
        // IPv4-mapped and IPv4-compatible.
        0 => v4.to_ipv6_mapped(),
        1 => Ipv6Addr::new(0, 0, 0, 0, 0, 0, hi, lo),
        // NAT64's well-known prefix.
        2 => Ipv6Addr::new(0x64, 0xff9b, 0, 0, 0, 0, hi, lo),
        // 6to4: 2002:AABB:CCDD::/48.
        3 => Ipv6Addr::new(0x2002, hi, lo, noise, 0, 0, 0, 1),
        // Teredo: the client's address is the last 32 bits, inverted.
        _ => Ipv6Addr::new(0x2001, 0, 0x4136, 0xe378, 0x8000, noise, !hi, !lo),
    }
}

proptest! {
    #[test]
    fn phone_numbers_parse_without_panic_and_what_parses_is_e164_and_stable(
        input in prop_oneof![odd_text(), "\\+?[0-9 ()\\-.]{0,24}", "\\+1[0-9]{10}"],
        country in prop::option::of(prop_oneof![Just("US".to_string()), Just("GB".to_string()), "[A-Za-z]{0,3}"]),
    ) {
        if let Ok(number) = E164::parse(&input, country.as_deref()) {
            let text = number.as_str();
            prop_assert!(text.starts_with('+') && text.len() <= 16, "{text}");
            prop_assert!(text[1..].bytes().all(|b| b.is_ascii_digit()), "{text}");
            prop_assert_eq!(E164::parse(text, None).map(|n| n.into_string()), Ok(text.to_string()));
        }
    }

    #[test]
    fn a_vcard_from_any_name_is_folded_escaped_and_gives_the_name_back(
        name in odd_text(),
        organization in prop::option::of(odd_text()),
        note in prop::option::of(odd_text()),
    ) {
        let card = Card {
            name: &name,
            phone: "+12015550123",
            organization: organization.as_deref(),
            note: note.as_deref(),
            ..Card::default()
        };
        let text = card.to_vcard();
        prop_assert!(text.starts_with("BEGIN:VCARD\r\nVERSION:3.0\r\n") && text.ends_with("END:VCARD\r\n"));
        let physical: Vec<&str> = text.strip_suffix("\r\n").unwrap_or(&text).split("\r\n").collect();
        for line in &physical {
            prop_assert!(line.len() <= 75, "a line of {} octets: {line:?}", line.len());
        }
        // Unfolded, there is one content line per property: no value broke out of its line.
        let unfolded = text.replace("\r\n ", "");
        let properties: Vec<&str> =
            unfolded.split("\r\n").filter(|l| !l.is_empty()).map(|l| l.split([':', ';']).next().unwrap_or("")).collect();
        let mut expected = vec!["BEGIN", "VERSION", "FN", "N", "TEL"];
        if organization.is_some() { expected.push("ORG"); }
        if note.is_some() { expected.push("NOTE"); }
        expected.push("END");
        prop_assert_eq!(properties, expected);
        let full_name = unfolded.split("\r\n").find_map(|l| l.strip_prefix("FN:")).unwrap_or_default();
        prop_assert_eq!(unescape(full_name), name.replace('\r', ""));
        prop_assert!(text_summary(&text).contains("+12015550123"));
    }

    #[test]
    fn idempotency_keys_are_printable_ascii_of_at_most_255_and_quoting_changes_nothing(raw in odd_text()) {
        if let Ok(key) = IdempotencyKey::parse(&raw) {
            let text = key.as_str();
            prop_assert!(!text.is_empty() && text.len() <= 255);
            prop_assert!(text.bytes().all(|b| (0x20..0x7f).contains(&b)));
            prop_assert_eq!(IdempotencyKey::parse(&format!("\"{text}\"")), Ok(key.clone()));
        }
    }

    #[test]
    fn a_customer_url_is_refused_or_names_a_public_https_host(
        url in prop_oneof![
            odd_text(),
            "https?://[a-z0-9.:@\\[\\]%-]{0,40}(/[a-z]{0,8})?",
            (any::<u32>(), prop_oneof![Just("https://"), Just("http://")]).prop_map(|(n, s)| format!("{s}{n}/hook")),
            any::<Ipv6Addr>().prop_map(|ip| format!("https://[{ip}]/hook")),
            any::<Ipv4Addr>().prop_map(|ip| format!("https://{ip}:8443/hook")),
        ],
    ) {
        let egress = Egress::new(false);
        if let Ok(checked) = egress.check_url(&url) {
            prop_assert_eq!(checked.scheme(), "https");
            prop_assert!(checked.username().is_empty() && checked.password().is_none());
            match checked.host() {
                Some(url::Host::Ipv4(ip)) => prop_assert!(is_public(IpAddr::V4(ip)), "{url}"),
                Some(url::Host::Ipv6(ip)) => prop_assert!(is_public(IpAddr::V6(ip)), "{url}"),
                Some(url::Host::Domain(name)) => prop_assert!(!name.eq_ignore_ascii_case("localhost")),
                None => prop_assert!(false, "no host: {url}"),
            }
        }
    }

    #[test]
    fn a_private_ipv4_address_is_refused_however_ipv6_embeds_it(v4 in private_v4(), form in any::<u8>(), noise in any::<u16>()) {
        prop_assert!(!is_public(IpAddr::V4(v4)));
        let v6 = v6_embedding(v4, form, noise);
        prop_assert!(!is_public(IpAddr::V6(v6)), "{v6} embeds {v4}");
        let url = format!("https://[{v6}]/");
        prop_assert!(Egress::new(false).check_url(&url).is_err());
    }

    #[test]
    fn a_poll_reply_chooses_at_most_one_existing_option_and_an_option_chooses_itself(
        options in prop::collection::vec(odd_text(), 0..14),
        reply in prop_oneof![odd_text(), "[ 0-9]{0,6}", (0usize..20).prop_map(|n| n.to_string())],
    ) {
        if let Some(index) = poll::match_reply(&reply, &options) {
            prop_assert!(index < options.len());
        }
        if let Ok(valid) = poll::parse_options(&options) {
            prop_assert!((2..=12).contains(&valid.len()));
            for (i, option) in valid.iter().enumerate() {
                // Case is ignored as `to_lowercase` sees it; some letters (`ῲ`) do not come back
                // from upper case, so the shouted reply here changes ASCII letters only.
                let shouted = format!("  {}  ", option.to_ascii_uppercase());
                prop_assert!(poll::match_reply(&shouted, &valid).is_some());
                prop_assert_eq!(poll::match_reply(option, &valid), Some(i));
            }
            let fallback = poll::fallback_text("Q", &valid);
            prop_assert!(fallback.lines().count() > valid.len());
        }
        let _ = poll::parse_question(&reply);
    }

    #[test]
    fn any_text_reads_as_a_tapback_only_when_it_is_one_and_a_tapbacks_words_read_back(
        text in odd_text(),
        target in odd_text(),
        index in 0usize..6,
        removed in any::<bool>(),
    ) {
        if let Some(read) = reaction::from_text(&text) {
            prop_assert!(!read.quote.trim().is_empty());
            prop_assert!(text.trim().ends_with('”') || text.trim().ends_with('"'));
        }
        let tapback = Tapback::ALL[index];
        let words = reaction::fallback_text(tapback, removed, &target);
        if !target.trim().is_empty() && !target.contains(['“', '”', '"']) {
            let read = reaction::from_text(&words);
            prop_assert!(read.is_some(), "{words}");
            let read = read.unwrap();
            prop_assert_eq!((read.tapback, read.removed), (tapback, removed));
            prop_assert!(read.quotes(&target), "{words} quotes {target}");
        }
    }

    #[test]
    fn bridge_callback_json_of_any_shape_parses_or_is_refused_without_panic(value in any_json()) {
        let _ = serde_json::from_value::<BridgeEvent>(value.clone());
        let _ = serde_json::from_value::<Vec<BridgeEvent>>(value.clone());
        let text = value.to_string();
        let _ = parse_json::<Vec<BridgeEvent>>(text.as_bytes());
        // The fields every send request shares, through to the send they describe.
        if let Ok(fields) = crate::fields::from_value::<SendFields>(value) {
            let _ = fields.into_input("hello".into(), MessageKind::Text);
        }
    }

    #[test]
    fn a_group_updated_callback_parses_exactly_when_its_fields_have_their_types_and_keeps_them(
        id in odd_text(),
        group_id in prop_oneof![3 => odd_text().prop_map(Value::from), 1 => any_json()],
        name in prop::option::of(prop_oneof![3 => odd_text().prop_map(Value::from), 1 => any_json()]),
        participants in prop::option::of(prop_oneof![
            3 => prop::collection::vec(prop_oneof![odd_text(), "\\+1[0-9]{10}"], 0..40).prop_map(Value::from),
            1 => any_json(),
        ]),
    ) {
        let mut data = serde_json::json!({"group_id": group_id});
        if let Some(name) = &name { data["name"] = name.clone(); }
        if let Some(participants) = &participants { data["participants"] = participants.clone(); }
        let event = serde_json::json!({"id": id, "type": "group.updated", "data": data});
        let strings = |list: &Value| list.as_array().is_some_and(|l| l.iter().all(Value::is_string));
        let typed = group_id.is_string()
            && name.as_ref().is_none_or(|n| n.is_string() || n.is_null())
            && participants.as_ref().is_none_or(|p| p.is_null() || strings(p));
        match serde_json::from_value::<BridgeEvent>(event).map(|e| e.payload) {
            Ok(BridgeEventPayload::GroupUpdated { group_id: read, name: read_name, participants: read_list }) => {
                prop_assert!(typed);
                prop_assert_eq!(Value::from(read), group_id);
                // `null` reads as absent: nothing changed.
                prop_assert_eq!(read_name.map(Value::from), name.filter(|n| !n.is_null()));
                prop_assert_eq!(read_list.map(Value::from), participants.filter(|p| !p.is_null()));
            }
            Ok(other) => prop_assert!(false, "read as another event: {other:?}"),
            Err(_) => prop_assert!(!typed, "a well-typed group.updated was refused"),
        }
    }

    #[test]
    fn request_bodies_as_any_bytes_are_parsed_or_refused_without_panic(bytes in prop::collection::vec(any::<u8>(), 0..400)) {
        let _ = parse_json::<Value>(&bytes);
        let _ = parse_json::<SendFields>(&bytes);
        let _ = Photo::from_bytes(bytes.clone());
        let _ = Photo::from_base64(&String::from_utf8_lossy(&bytes));
    }

    #[test]
    fn headers_and_parameters_from_outside_parse_without_panic(
        text in odd_text(),
        other in prop::option::of(odd_text()),
        number in any::<i64>(),
    ) {
        let _ = bearer(&text);
        let _ = apikey::is_well_formed(&text);
        let _ = page(Some(&text), other.as_deref());
        let _ = page(Some(&number.to_string()), None);
        if let Ok(page) = page(Some(&number.to_string()), Some(&text)) {
            prop_assert!((1..=200).contains(&page.limit));
        }
        let now = time::OffsetDateTime::now_utc();
        if let Some(delay) = parse_retry_after(&text, now) {
            prop_assert!(delay <= crate::domain::webhook::MAX_RETRY_AFTER);
        }
        let _ = parse_retry_after(&number.to_string(), now);
        let _ = parse_duration(&text);
        let _ = RetrySchedule::parse(&text);
        let _ = Subscriptions::parse(text.split(','));
    }
}
