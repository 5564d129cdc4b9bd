from enum import StrEnum


class Tapback(StrEnum):
    DISLIKE = "dislike"
    EMPHASIZE = "emphasize"
    LAUGH = "laugh"
    LIKE = "like"
    LOVE = "love"
    QUESTION = "question"

    def __str__(self) -> str:
        return str(self.value)
