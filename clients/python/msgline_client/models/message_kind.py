from enum import StrEnum


class MessageKind(StrEnum):
    CONTACT_CARD = "contact_card"
    MEDIA = "media"
    POLL = "poll"
    POLL_VOTE = "poll_vote"
    REACTION = "reaction"
    TEXT = "text"

    def __str__(self) -> str:
        return str(self.value)
