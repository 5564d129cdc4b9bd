"""A client library for accessing msgline"""

from .client import AuthenticatedClient, Client
from .webhooks import WebhookVerificationError, verify_webhook

__all__ = (
    "AuthenticatedClient",
    "Client",
    "WebhookVerificationError",
    "verify_webhook",
)
