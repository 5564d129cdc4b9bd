#!/usr/bin/env python3
"""A fake SMS Gateway for Android (its local server on the phone) for msgline's tests.

Written from the app's source (capcom6/android-sms-gateway, app/src/main/java/me/capcom/smsgateway/):
  modules/localserver/WebService.kt              basic auth on every route but /health; 400/404/500
                                                 answers are {"message": ...}
  modules/localserver/routes/MessagesRoutes.kt   POST /message (202 with the message, 409 for an id
                                                 it has, ?skipPhoneValidation), GET /message/{id} (404)
  modules/localserver/domain/messages/{PostMessageRequest,Message,TextMessage}.kt  the bodies
  domain/ProcessingState.kt                      Pending, Processed, Sent, Delivered, Failed, ...
  modules/localserver/routes/WebhooksRoutes.kt + modules/webhooks/WebHooksService.kt  GET/POST
                                                 (upsert by id; https or http://127.0.0.1 only)/DELETE
  modules/localserver/routes/SettingsRoutes.kt + modules/webhooks/WebhooksSettings.kt  PATCH
                                                 /settings {"webhooks": {"signing_key": ...}}
  modules/webhooks/domain/{WebHookEvent,WebHookEventDTO}.kt, payload/{MessageEventPayload,
  SmsEventPayload,MmsDownloadedPayload}.kt       {id, webhookId, event, deviceId, payload}
  modules/receiver/MmsContentReader.kt: mms:downloaded once an MMS is downloaded, text parts joined
  as body, every other part an attachment {partId, contentType, name, size, data (base64)}
  modules/webhooks/plugins/PayloadSingingPlugin.kt  X-Signature = hex HMAC-SHA256(key, body +
                                                 X-Timestamp), X-Timestamp in seconds

What it cannot reproduce: the carrier (its delivery reports come after a fixed step), multipart
SMS, several SIM cards, MMS, and the phone's battery and network.

    fake_android_gateway.py --listen 127.0.0.1:PORT --username U --password P --signing-key K [--step-ms 50]

Control routes (no auth): POST /control/inbound {from, body}, POST /control/mms {from, body?,
attachments: [{base64, name?, content_type?}]} (an MMS downloaded: mms:downloaded), POST /control/mode
{mode: accept|slow|fail, delay_ms, reason}, POST /control/repeat-webhooks {times},
POST /control/signing-key {key}, POST /control/clock-skew {seconds}, GET /control/sent,
GET /control/stats, GET /control/webhooks.
"""

import argparse
import base64
import hashlib
import hmac
import itertools
import json
import re
import secrets
import time
from datetime import datetime, timezone

from fake_common import App, Reply, deliver, later, now_ms

app = App()
state = {
    "username": "",
    "password": "",
    "signing_key": "",
    "device_id": "fakephone" + secrets.token_hex(4),
    "step": 0.05,
    "mode": "accept",
    "delay": 0.0,
    "reason": "RESULT_ERROR_GENERIC_FAILURE",
    "skew": 0,
    "messages": {},
    "webhooks": {},
    "sent": [],
    "seen_ids": set(),
    "repeated": 0,
    "sends": 0,
}
rowids_mms = itertools.count(1)
EVENTS = ["sms:received", "sms:sent", "sms:delivered", "sms:failed", "system:ping", "sms:data-received",
          "mms:received", "mms:downloaded", "app:started", "sms:cancelled"]


def iso(ms=None):
    at = datetime.fromtimestamp((ms or now_ms()) / 1000, tz=timezone.utc)
    return at.isoformat(timespec="milliseconds")


def nanoid():
    return secrets.token_urlsafe(15)[:21]


def message_view(message):
    return {
        "id": message["id"],
        "deviceId": state["device_id"],
        "state": message["state"],
        "isHashed": False,
        "isEncrypted": False,
        "scheduleAt": None,
        "textMessage": {"text": message["text"]},
        "dataMessage": None,
        "hashedMessage": None,
        "recipients": [{"phoneNumber": p, "state": message["state"], "error": message.get("error")}
                       for p in message["phoneNumbers"]],
        "states": message["states"],
    }


def emit(event, payload):
    with app.lock:
        hooks = [h for h in state["webhooks"].values() if h["event"] == event]
        times = app.repeat
    for hook in hooks:
        body = json.dumps({"id": nanoid(), "webhookId": hook["id"], "event": event, "deviceId": state["device_id"],
                           "payload": payload}).encode()

        def signed(body=body):
            timestamp = str(int(time.time()) + state["skew"])
            signature = hmac.new(state["signing_key"].encode(), body + timestamp.encode(), hashlib.sha256).hexdigest()
            return {"X-Signature": signature, "X-Timestamp": timestamp}

        deliver(hook["url"], body, signed, times)


def move(message_id, to):
    """One step of a sent message's life on the phone, with its webhook."""
    with app.lock:
        message = state["messages"][message_id]
        message["state"] = to
        message["states"][to] = iso()
        if to == "Failed":
            message["error"] = state["reason"]
        recipients = list(message["phoneNumbers"])
    for recipient in recipients:
        base = {"messageId": message_id, "sender": None, "recipient": recipient, "simNumber": 1,
                "phoneNumber": recipient}
        if to == "Sent":
            emit("sms:sent", dict(base, partsCount=1, sentAt=iso()))
        elif to == "Delivered":
            emit("sms:delivered", dict(base, deliveredAt=iso()))
        elif to == "Failed":
            emit("sms:failed", dict(base, failedAt=iso(), reason=state["reason"]))


def authorized(request):
    header = request.headers.get("Authorization", "")
    if header.startswith("Basic "):
        try:
            user, _, password = base64.b64decode(header[6:]).decode().partition(":")
        except ValueError:
            user, password = "", ""
        if user == state["username"] and password == state["password"]:
            return None
    return Reply(401, b"", {"WWW-Authenticate": 'Basic realm="Access to SMS Gateway", charset=UTF-8'})


def protected(function):
    def check(request):
        refused = authorized(request)
        return refused if refused else function(request)

    return check


def bad_request(text):
    return Reply(400, {"message": text})


@app.route("GET", "/health")
def health(request):
    return Reply(200, {"status": "pass", "version": "1.0.0-fake", "releaseId": 1, "checks": {}})


@app.route("GET", "/")
@protected
def device(request):
    return Reply(200, {"model": "Fake Phone", "buildId": 1})


@app.route("POST", "/message")
@protected
def post_message(request):
    try:
        body = request.json()
    except ValueError as error:
        return bad_request(f"Failed to convert request body: {error}")
    kinds = [k for k in ("textMessage", "dataMessage", "message") if body.get(k) is not None]
    if not kinds:
        return bad_request("Must specify exactly one of: textMessage, dataMessage, or message")
    if len(kinds) > 1:
        return bad_request("Cannot specify multiple message types simultaneously")
    if "dataMessage" in kinds:
        return bad_request("the fake sends text messages only")
    text = body["message"] if "message" in kinds else (body["textMessage"] or {}).get("text")
    if not text:
        return bad_request("Text message is empty")
    numbers = body.get("phoneNumbers") or []
    if not numbers:
        return bad_request("phoneNumbers is empty")
    skip = request.query.get("skipPhoneValidation") == "true"
    if not skip and not all(re.fullmatch(r"\+[1-9][0-9]{6,14}", n) for n in numbers):
        return bad_request("Invalid phone number")
    message_id = body.get("id") or nanoid()
    with app.lock:
        state["sends"] += 1
        if message_id in state["seen_ids"]:
            state["repeated"] += 1
        state["seen_ids"].add(message_id)
        if message_id in state["messages"]:
            return Reply(409, {"message": f"Message with id {message_id} already exists"})
        message = {"id": message_id, "text": text, "phoneNumbers": numbers, "state": "Pending",
                   "states": {"Pending": iso()}, "report": body.get("withDeliveryReport", True)}
        state["messages"][message_id] = message
        state["sent"].append({"id": message_id, "phoneNumbers": numbers, "text": text, "at": now_ms()})
        mode, delay = state["mode"], state["delay"]
        view = message_view(message)
    step = state["step"]
    later(step, move, message_id, "Processed")
    if mode == "fail":
        later(step * 2, move, message_id, "Failed")
    else:
        later(step * 2, move, message_id, "Sent")
        if message["report"]:
            later(step * 3, move, message_id, "Delivered")
    if mode == "slow":
        time.sleep(delay)
    return Reply(202, view)


@app.route("GET", "/message/(?P<id>[^/]+)")
@protected
def get_message(request):
    with app.lock:
        message = state["messages"].get(request.params["id"])
        if message is None:
            return Reply(404, b"")
        return Reply(200, message_view(message))


@app.route("GET", "/webhooks")
@protected
def list_webhooks(request):
    with app.lock:
        return Reply(200, [dict(h, deviceId=None, source="Local") for h in state["webhooks"].values()])


@app.route("POST", "/webhooks")
@protected
def create_webhook(request):
    body = request.json()
    url, event = body.get("url") or "", body.get("event")
    if not (url.startswith("https://") or url.startswith("http://127.0.0.1")):
        return bad_request("url must start with https:// or http://127.0.0.1")
    if event not in EVENTS:
        return bad_request("Unsupported event")
    hook = {"id": body.get("id") or nanoid(), "url": url, "event": event}
    with app.lock:
        state["webhooks"][hook["id"]] = hook
    return Reply(201, dict(hook, deviceId=None, source="Local"))


@app.route("DELETE", "/webhooks/(?P<id>[^/]+)")
@protected
def delete_webhook(request):
    with app.lock:
        state["webhooks"].pop(request.params["id"], None)
    return Reply(204)


def settings_view():
    return {"webhooks": {"internet_required": False, "retry_count": 3, "signing_key": state["signing_key"]}}


@app.route("GET", "/settings")
@protected
def get_settings(request):
    return Reply(200, settings_view())


@app.route("PATCH", "/settings")
@protected
def patch_settings(request):
    try:
        body = request.json()
    except ValueError as error:
        return bad_request(f"Invalid request: {error}")
    key = (body.get("webhooks") or {}).get("signing_key")
    if key is not None:
        if not isinstance(key, str) or not key:
            return bad_request("Invalid request: signing_key must be a non-empty string")
        state["signing_key"] = key
    return Reply(200, settings_view())


@app.route("POST", "/control/inbound")
def control_inbound(request):
    body = request.json()
    payload = {"messageId": nanoid(), "sender": body["from"], "recipient": None, "simNumber": 1,
               "phoneNumber": body["from"], "message": body["body"], "receivedAt": iso()}
    emit("sms:received", payload)
    return Reply(200, payload)


@app.route("POST", "/control/mms")
def control_mms(request):
    """An MMS the phone has downloaded (MmsDownloadedPayload): text parts as `body`, the rest as
    `attachments[]` with the whole part inline in base64."""
    body = request.json()
    parts = [{"partId": n + 1, "contentType": part.get("content_type") or "application/octet-stream",
              "name": part.get("name"), "size": len(part["base64"]) * 3 // 4, "data": part["base64"]}
             for n, part in enumerate(body.get("attachments") or [])]
    payload = {"messageId": str(next(rowids_mms)), "sender": body["from"], "recipient": None, "simNumber": 1,
               "phoneNumber": body["from"], "body": body.get("body"), "subject": None, "attachments": parts,
               "receivedAt": iso()}
    emit("mms:downloaded", payload)
    return Reply(200, payload)


@app.route("POST", "/control/mode")
def control_mode(request):
    body = request.json()
    with app.lock:
        state["mode"] = body.get("mode", "accept")
        state["delay"] = float(body.get("delay_ms", 0)) / 1000
        state["reason"] = body.get("reason") or state["reason"]
    return Reply(200, {"mode": state["mode"]})


@app.route("POST", "/control/signing-key")
def control_signing_key(request):
    state["signing_key"] = request.json()["key"]
    return Reply(200, {})


@app.route("POST", "/control/clock-skew")
def control_clock_skew(request):
    state["skew"] = int(request.json().get("seconds", 0))
    return Reply(200, {})


app.control_routes(state, "repeated_ids", lambda: list(state["webhooks"].values()))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--listen", required=True)
    parser.add_argument("--username", required=True)
    parser.add_argument("--password", required=True)
    parser.add_argument("--signing-key", required=True)
    parser.add_argument("--step-ms", type=float, default=50)
    args = parser.parse_args()
    state.update(username=args.username, password=args.password, signing_key=args.signing_key,
                 step=args.step_ms / 1000)
    app.serve(args.listen)


if __name__ == "__main__":
    main()
