from enum import StrEnum


class MessageStatus(StrEnum):
    CANCELED = "canceled"
    DELIVERED = "delivered"
    FAILED = "failed"
    QUEUED = "queued"
    READ = "read"
    RECEIVED = "received"
    SCHEDULED = "scheduled"
    SENT = "sent"
    SUBMITTED = "submitted"
    UNKNOWN = "unknown"

    def __str__(self) -> str:
        return str(self.value)
