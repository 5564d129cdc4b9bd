from enum import StrEnum


class ConversationKind(StrEnum):
    DIRECT = "direct"
    GROUP = "group"

    def __str__(self) -> str:
        return str(self.value)
