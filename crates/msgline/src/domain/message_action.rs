//! What iMessage lets a sender do to a message beside its text: an effect and a subject when
//! sending it, and, once sent, editing it or unsending it within Apple's limits.

/// A bubble or screen effect of Messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Effect {
    Slam,
    Loud,
    Gentle,
    InvisibleInk,
    Echo,
    Spotlight,
    Balloons,
    Confetti,
    Love,
    Lasers,
    Fireworks,
    Celebration,
}

impl Effect {
    pub const ALL: [Effect; 12] = [
        Effect::Slam,
        Effect::Loud,
        Effect::Gentle,
        Effect::InvisibleInk,
        Effect::Echo,
        Effect::Spotlight,
        Effect::Balloons,
        Effect::Confetti,
        Effect::Love,
        Effect::Lasers,
        Effect::Fireworks,
        Effect::Celebration,
    ];

    /// msgline's name for it, as the API takes and shows it.
    pub fn as_str(self) -> &'static str {
        match self {
            Effect::Slam => "slam",
            Effect::Loud => "loud",
            Effect::Gentle => "gentle",
            Effect::InvisibleInk => "invisible_ink",
            Effect::Echo => "echo",
            Effect::Spotlight => "spotlight",
            Effect::Balloons => "balloons",
            Effect::Confetti => "confetti",
            Effect::Love => "love",
            Effect::Lasers => "lasers",
            Effect::Fireworks => "fireworks",
            Effect::Celebration => "celebration",
        }
    }

    pub fn parse(name: &str) -> Option<Effect> {
        Effect::ALL.into_iter().find(|effect| effect.as_str() == name)
    }

    /// The effect's identifier in Messages (what a Mac's Private API takes as `effectId`).
    pub fn apple_id(self) -> &'static str {
        match self {
            Effect::Slam => "com.apple.MobileSMS.expressivesend.impact",
            Effect::Loud => "com.apple.MobileSMS.expressivesend.loud",
            Effect::Gentle => "com.apple.MobileSMS.expressivesend.gentle",
            Effect::InvisibleInk => "com.apple.MobileSMS.expressivesend.invisibleink",
            Effect::Echo => "com.apple.messages.effect.CKEchoEffect",
            Effect::Spotlight => "com.apple.messages.effect.CKSpotlightEffect",
            Effect::Balloons => "com.apple.messages.effect.CKHappyBirthdayEffect",
            Effect::Confetti => "com.apple.messages.effect.CKConfettiEffect",
            Effect::Love => "com.apple.messages.effect.CKHeartEffect",
            Effect::Lasers => "com.apple.messages.effect.CKLasersEffect",
            Effect::Fireworks => "com.apple.messages.effect.CKFireworksEffect",
            Effect::Celebration => "com.apple.messages.effect.CKSparklesEffect",
        }
    }
}

impl Effect {
    /// The effect of a Messages identifier, if msgline knows it.
    pub fn from_apple_id(id: &str) -> Option<Effect> {
        Effect::ALL.into_iter().find(|effect| effect.apple_id() == id)
    }
}

/// The longest subject, in characters.
pub const MAX_SUBJECT_CHARS: usize = 200;

/// How long after it was sent a message can be edited (Apple's limit: 15 minutes).
pub const EDIT_WINDOW_MS: i64 = 15 * 60_000;
/// How many times a message can be edited (Apple's limit: 5).
pub const MAX_EDITS: usize = 5;
/// How long after it was sent a message can be unsent (Apple's limit: 2 minutes).
pub const UNSEND_WINDOW_MS: i64 = 2 * 60_000;

/// An edit or an unsend.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ActionKind {
    Edit,
    Unsend,
}

impl ActionKind {
    pub fn as_str(self) -> &'static str {
        match self {
            ActionKind::Edit => "edit",
            ActionKind::Unsend => "unsend",
        }
    }

    pub fn parse(text: &str) -> ActionKind {
        if text == "unsend" { ActionKind::Unsend } else { ActionKind::Edit }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_effect_reads_back_from_its_name_and_has_its_own_apple_id() {
        let ids: std::collections::HashSet<&str> = Effect::ALL.iter().map(|e| e.apple_id()).collect();
        assert_eq!(ids.len(), Effect::ALL.len());
        for effect in Effect::ALL {
            assert_eq!(Effect::parse(effect.as_str()), Some(effect));
            assert_eq!(Effect::from_apple_id(effect.apple_id()), Some(effect));
        }
        assert_eq!(Effect::parse("Slam"), None);
        assert_eq!(Effect::parse("invisible ink"), None);
    }
}
