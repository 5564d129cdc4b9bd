"""Verifies a webhook delivery from msgline (Standard Webhooks).

Written by hand and kept when the client is regenerated; needs only the standard library.
"""

import base64
import binascii
import hashlib
import hmac
import json
import re
import time
from collections.abc import Mapping
from typing import Any

__all__ = ("WebhookVerificationError", "verify_webhook")

_TIMESTAMP = re.compile(r"\d{1,15}")


class WebhookVerificationError(Exception):
    """A delivery's headers, timestamp or signature do not check out."""


def verify_webhook(
    secret: str,
    headers: Mapping[str, str] | Any,
    body: bytes,
    tolerance: int = 300,
    *,
    now: float | None = None,
) -> dict[str, Any]:
    """Checks a delivery and returns its event (the parsed body).

    ``secret`` is the endpoint's ``whsec_...`` secret; ``headers`` any mapping of header names
    (in any case) to values, such as ``http.server``'s ``self.headers``, a Flask or Starlette
    request's headers or a plain dict; ``body`` the exact bytes received, before any JSON parsing.
    The signature must match one ``v1,`` entry of ``webhook-signature`` (during a secret rotation
    there are two, separated by a space), and ``webhook-timestamp`` must be within ``tolerance``
    seconds of the clock (``now``, Unix seconds, defaults to ``time.time()``). Raises
    ``WebhookVerificationError`` otherwise.
    """
    encoded = secret.removeprefix("whsec_")
    try:
        key = base64.b64decode(encoded, validate=True)
    except (binascii.Error, ValueError):
        raise WebhookVerificationError("the secret is not base64") from None
    if not key:
        raise WebhookVerificationError("the secret is empty")

    msg_id = _header(headers, "webhook-id")
    timestamp = _header(headers, "webhook-timestamp")
    signatures = _header(headers, "webhook-signature")
    if not (msg_id and timestamp and signatures):
        raise WebhookVerificationError("missing webhook-id, webhook-timestamp or webhook-signature")
    if not _TIMESTAMP.fullmatch(timestamp):
        raise WebhookVerificationError("webhook-timestamp is not a number")
    clock = time.time() if now is None else now
    if abs(clock - int(timestamp)) > tolerance:
        raise WebhookVerificationError("webhook-timestamp is outside the tolerance")

    if isinstance(body, str):
        body = body.encode()
    signed = f"{msg_id}.{timestamp}.".encode() + bytes(body)
    expected = hmac.new(key, signed, hashlib.sha256).digest()
    matched = False
    for entry in signatures.split(" "):
        version, _, signature = entry.partition(",")
        if version != "v1":
            continue
        try:
            given = base64.b64decode(signature, validate=True)
        except (binascii.Error, ValueError):
            continue
        # Every entry is compared, so the time taken does not tell which one matched.
        if hmac.compare_digest(given, expected):
            matched = True
    if not matched:
        raise WebhookVerificationError("no signature matches")

    try:
        event = json.loads(body)
    except ValueError:
        raise WebhookVerificationError("the body is not JSON") from None
    if not isinstance(event, dict) or event.get("id") != msg_id:
        raise WebhookVerificationError("the body is not the event webhook-id names")
    return event


def _header(headers: Any, name: str) -> str | None:
    for key, value in headers.items():
        if key.lower() == name:
            return value
    return None
