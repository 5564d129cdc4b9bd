#!/usr/bin/env python3
"""A fake BlueBubbles Server (a Mac signed in to iMessage) for msgline's tests.

Written from the server's source (BlueBubblesApp/bluebubbles-server, packages/server/src/server/):
  api/http/api/v1/httpRoutes.ts            the routes under /api/v1 and which need the Private API
  api/http/api/v1/middleware/authMiddleware.ts      the password as ?password= (or guid/token)
  api/http/api/v1/middleware/privateApiMiddleware.ts  500 iMessage Error without the helper
  api/http/api/v1/responses/{errors,success,types}.ts the {status, message, data, error} envelope
  api/http/api/v1/routers/messageRouter.ts  text, attachment, query, find; a send is synchronous
  api/http/api/v1/validators/messageValidator.ts     tempGuid rules and "already queued"
  api/http/api/v1/routers/chatRouter.ts + api/interfaces/chatInterface.ts  chat/new, a chat and its
    participants (GET chat/:guid?with=participants), rename (PUT chat/:guid {displayName}, at least
    one character, a group only), participant add/remove ({address}), leave (answered at once, even
    for an unknown chat); all of these need the Private API
  databases/imessage/pollers/MessagePoller.ts (handleGroupChanges): a group change is a message row
    with no text, itemType 1 (groupActionType 0 added, 1 removed), 2 (renamed, groupTitle) or 3
    (groupActionType 0 left), posted as participant-added, participant-removed, group-name-change
    and participant-left with the chat's participants (none for a rename)
  api/http/api/v1/routers/handleRouter.ts  availability/imessage
  api/http/api/v1/routers/serverRouter.ts + api/interfaces/generalInterface.ts  server/info
  api/http/api/v1/routers/webhookRouter.ts + validators/webhookValidator.ts  webhooks
  api/http/api/v1/routers/messageRouter.ts (react) + validators/messageValidator.ts (sendReactionRules)
    + api/interfaces/messageInterface.ts (possibleReactions) + api/apple/mappings.ts (the text a Mac
    stores for a tapback): POST message/react, Private API, answered with the new reaction message
  databases/transformers/MessageTypeTransformer.ts: associatedMessageType as a string ("love",
    "-love"); the target in associatedMessageGuid as Apple writes it, "p:0/<guid>"
  api/http/api/v1/routers/chatRouter.ts (startTyping, stopTyping, markRead) + httpRoutes.ts: POST and
    DELETE chat/:guid/typing, POST chat/:guid/read, all Private API, no body; markRead emits
    chat-read-status-changed {chatGuid, read}
  api/privateApi/eventHandlers/PrivateApiTypingEventHandler.ts: typing-indicator {display, guid},
    1:1 chats only
  databases/server/index.ts (addWebhook: one webhook per URL), services/webhookService/index.ts
  (unsigned {type, data} POSTs), api/serializers/{Message,Chat,Handle}Serializer.ts (fields).
Message actions (msgline issue 68), from the same tree:
  validators/messageValidator.ts (sendTextRules, validateText: effectId, subject, selectedMessageGuid,
    ddScan or attributedBody imply method private-api; editParamRules, unsendParamRules) + index.ts
    (validatorjs' first error); routers/messageRouter.ts (sendText, editMessage, unsendMessage: an
    unknown guid is 400 "Selected message does not exist!", any other failure 500 iMessage Error
    "Message Edit Error" / "Unsend Message Error" with the reason); api/interfaces/messageInterface.ts
    (checkPrivateApiStatus in helpers/utils.ts, then isMinVentura from env.ts; then a wait for
    dateEdited to move whose result (resultAwaiter) is the message even when it never moved, so
    Apple refusing answers 200 with the unchanged message after ~43 s); api/privateApi/apis/
    PrivateApiMessage.ts + PrivateApiService.ts (a helper "error" rejects the call with its text);
    BlueBubblesApp/bluebubbles-helper Messages/MacOS-11+/BlueBubblesHelper.m (edit-message and
    unsend-message acknowledge at once, the only error being "Chat does not exist in
    IMChatRegistry!"; a reply joins the selected message's thread if it has one);
  api/serializers/MessageSerializer.ts: webhooks get isForNotification (no threadOriginatorPart and
    the other "non-essentials"), attributedBody, messageSummaryInfo, payloadData null; dateEdited,
    dateRetracted, partCount on Ventura and newer; index.ts handleUpdatedMessage: the updated-message
    webhook without chats; pollers/MessagePoller.ts: an edit and an unsend both move dateEdited,
    Apple leaves dateRetracted unset (an unsent row is is_empty, which is not serialized).

What it cannot reproduce: Apple's delivery timing, the real iMessage error codes beyond the one
it is told to use, attachments other than what msgline sends, and the Mac's database races. Nor
Apple's rules for edits and unsends (15 minutes, 5 edits, 2 minutes: the server checks none of them;
mode refuse stands in), a message's edit history (messageSummaryInfo and attributedBody are null
here), a reply to a guid the Mac does not know, threadOriginatorPart's exact form ("part:0:length"
here) or the backwardsCompatibilityMessage older devices see; an unsent message's text is null here.

    fake_bluebubbles.py --listen 127.0.0.1:PORT --password PW [--step-ms 50] [--no-helper]
        [--no-private-api] [--macos 14.5]   (server/info private_api and os_version; below 13 refuses
        edit and unsend with the server's words)

Control routes (no password): POST /control/inbound {from, body, chat?, service?, attachments?
[{base64, name?, mime?}], threadOriginatorGuid?, threadOriginatorPart?, expressiveSendStyleId?,
subject?} (files served at GET /api/v1/attachment/:guid/download; a reply as the Mac stores it),
POST /control/edit {message_guid, body} and POST /control/unsend {message_guid} (an edit or unsend
made on a phone: the updated-message webhook),
POST /control/reaction {from, target (a message guid), reaction (love, -love, ...)} (a tapback),
POST /control/typing {from, display} (a typing-indicator), GET /control/signals (typing and read calls),
POST /control/group {chat, action: rename|add|remove|leave, name?, address?} (a change made on a phone),
POST /control/helper {connected, private_api?},
POST /control/mode {mode: accept|slow|error|late|hook-first|refuse, delay_ms, code}
(for group changes: error answers 500 and changes nothing; late answers 500 at once, as the server
does when its 30 s wait runs out, and makes the change after delay_ms; hook-first delivers the
change's webhook, and waits for its answer, before answering the call, as when the server's poller
sees the change before the call's own wait does; for edit and unsend: slow applies the change
after delay_ms, then answers; error answers the helper's error and changes nothing; refuse answers
200 with the message unchanged after delay_ms, as when Apple refuses; other modes act as accept),
POST /control/repeat-webhooks {times}, GET /control/sent, GET /control/stats, GET /control/webhooks.
"""

import argparse
import email.parser
import email.policy
import base64
import hashlib
import itertools
import json
import time
import uuid
from urllib.parse import unquote

from fake_common import App, Reply, deliver, later, now_ms, post_json

app = App()
state = {
    "password": "",
    "helper": True,
    "private_api": True,  # the server's enable_private_api setting
    "macos": "14.5",
    "step": 0.05,
    "mode": "accept",
    "delay": 0.0,
    "code": 22,
    "messages": {},  # guid -> serialized message
    "order": [],  # guids in creation order
    "chats": {},  # guid -> serialized chat
    "webhooks": [],
    "sent": [],
    "send_cache": set(),
    "temp_guids": set(),
    "repeated": 0,
    "sends": 0,
    "signals": [],  # typing and read calls, oldest first
    "files": {},  # attachment guid -> (mime type, bytes)
}

# api/apple/mappings.ts: what the Mac stores as the text of a tapback.
REACTION_TEXT = {"love": "Loved", "like": "Liked", "dislike": "Disliked", "laugh": "Laughed at",
                 "emphasize": "Emphasized", "question": "Questioned", "-love": "Removed a heart",
                 "-like": "Removed a like", "-dislike": "Removed a dislike", "-laugh": "Removed a laugh",
                 "-emphasize": "Removed an exclamation", "-question": "Removed a question mark"}


def tapback(chat_guid, target_guid, reaction, from_me, sender=None):
    """A tapback is a message row of its own pointing at its target."""
    with app.lock:
        target_text = state["messages"][target_guid]["text"] or ""
    message = new_message(chat_guid, f"{REACTION_TEXT[reaction]} \u201c{target_text}\u201d", from_me, sender=sender)
    with app.lock:
        message["associatedMessageGuid"] = f"p:0/{target_guid}"
        message["associatedMessageType"] = reaction
    return message
rowids = itertools.count(1)

EVENTS = ["*", "new-message", "updated-message", "message-send-error", "group-name-change", "participant-removed",
          "participant-added", "participant-left", "chat-read-status-changed", "typing-indicator"]


def envelope(status, message, data=None, error=None):
    body = {"status": status, "message": message}
    if data is not None:
        body["data"] = data
    if error is not None:
        body["error"] = error
    return Reply(status, body)


def success(data, message="Success"):
    return envelope(200, message, data)


def bad_request(error):
    return envelope(400, "You've made a bad request! Please check your request params & body", None,
                    {"type": "Validation Error", "message": error})


def imessage_error(message, error, data=None):
    return envelope(500, message, data, {"type": "iMessage Error", "message": error})


def not_found(error):
    return envelope(404, "The requested resource was not found", None, {"type": "Database Error", "message": error})


SOCKET_ONLY = {"threadOriginatorPart"}  # serialized for the API and the socket, left out of webhooks


def ventura():
    """env.ts isMinVentura: edit and unsend, and dateEdited, dateRetracted and partCount in a message."""
    return int(state["macos"].split(".")[0]) >= 13


def private_api_refusal():
    """helpers/utils.ts checkPrivateApiStatus: why the Private API cannot be used, or None."""
    if not state["private_api"]:
        return "iMessage Private API is not enabled!"
    return None if state["helper"] else "iMessage Private API Helper is not connected!"


def invalid(body, rules):
    """validators/index.ts ValidateInput (validatorjs): the first rule broken, or None."""
    for field, rule in rules:
        value = body.get(field)
        if value is None or value == "":
            if rule == "required":
                return f"The {field} field is required."
            continue
        if rule in ("string", "required") and not isinstance(value, str):
            return f"The {field} must be a string."
        if rule == "index":
            try:
                if float(value) < 0:
                    return f"The {field} must be at least 0."
            except (TypeError, ValueError):
                return f"The {field} must be a number."
    return None


def chat_for(guid, participants=None, name=None):
    with app.lock:
        if guid not in state["chats"]:
            state["chats"][guid] = {
                "originalROWID": next(rowids),
                "guid": guid,
                "style": 43 if ";+;" in guid else 45,
                "chatIdentifier": guid.split(";")[-1],
                "isArchived": False,
                "displayName": name or "",
                "participants": [{"address": a, "service": guid.split(";")[0]} for a in (participants or [])],
            }
        return state["chats"][guid]


def brief_chat(chat):
    return {k: v for k, v in chat.items() if k != "participants"}


def new_message(chat_guid, text, from_me, sender=None, attachment=None):
    guid = str(uuid.uuid4()).upper()
    chat = chat_for(chat_guid)
    service = chat_guid.split(";")[0]
    other = sender or (None if ";+;" in chat_guid else chat_guid.split(";")[-1])
    message = {
        "originalROWID": next(rowids),
        "guid": guid,
        "text": text,
        "attributedBody": None,
        "handle": {"originalROWID": 1, "address": other, "service": service} if other else None,
        "handleId": 1 if other else 0,
        "otherHandle": 0,
        "attachments": [attachment] if attachment else [],
        "subject": None,
        "error": 0,
        "dateCreated": now_ms(),
        "dateRead": None,
        "dateDelivered": None,
        "isDelivered": False,
        "isFromMe": from_me,
        "hasDdResults": False,
        "isArchived": False,
        "itemType": 0,
        "groupTitle": None,
        "groupActionType": 0,
        "balloonBundleId": None,
        "associatedMessageGuid": None,
        "associatedMessageType": None,
        "expressiveSendStyleId": None,
        "threadOriginatorGuid": None,
        "hasPayloadData": False,
        "chats": [brief_chat(chat)],
        "messageSummaryInfo": None,  # High Sierra and newer; null unless parsed (never in a webhook)
        "payloadData": None,
    }
    if ventura():
        message.update(dateEdited=None, dateRetracted=None, partCount=1)
    with app.lock:
        state["messages"][guid] = message
        state["order"].append(guid)
    return message


def emit(kind, data, wait=False):
    """Posts a webhook from a thread of its own, or (`wait`) here, returning once it is answered."""
    if isinstance(data, dict):  # MessageSerializer isForNotification: no threadOriginatorPart
        data = {k: v for k, v in data.items() if k not in SOCKET_ONLY}
    body = json.dumps({"type": kind, "data": data}).encode()
    with app.lock:
        hooks = [h for h in state["webhooks"] if "*" in h["events"] or kind in h["events"]]
        times = app.repeat
    for hook in hooks:
        if wait:
            for _ in range(times):
                post_json(hook["url"], body, lambda: {})
        else:
            deliver(hook["url"], body, lambda: {}, times)


def advance(guid, field):
    with app.lock:
        message = state["messages"][guid]
        message[field] = now_ms()
        if field == "dateDelivered":
            message["isDelivered"] = True
        snapshot = dict(message)
    emit("updated-message", snapshot)


def go_out(message):
    """The Mac's receipts after a sent message: delivered, then read (iMessage 1:1 only)."""
    emit("new-message", dict(message))
    chat = message["chats"][0]["guid"]
    later(state["step"], advance, message["guid"], "dateDelivered")
    if chat.startswith("iMessage;-;"):
        later(state["step"] * 2, advance, message["guid"], "dateRead")


def authorized(request):
    token = request.query.get("guid") or request.query.get("password") or request.query.get("token")
    if not token:
        return envelope(401, "You are not authorized to access this resource", None,
                        {"type": "Authentication Error", "message": "Missing server password!"})
    if token.strip() != state["password"].strip():
        return envelope(401, "You are not authorized to access this resource", None,
                        {"type": "Authentication Error", "message": "Unauthorized"})
    return None


def protected(function):
    def check(request):
        refused = authorized(request)
        return refused if refused else function(request)

    return check


def private_api(function):
    def check(request):
        if not state["private_api"]:
            return imessage_error("Please make sure you have completed the setup for the Private API, and your "
                                  "helper is connected!", private_api_refusal())
        if not state["helper"]:
            return imessage_error(
                "Please make sure you have completed the setup for the Private API, and your helper is connected!",
                "Private API Helper is not connected!")
        return function(request)

    return check


def note_temp_guid(temp_guid):
    """Counts sends and any call that repeats a temp guid seen before (msgline must never)."""
    with app.lock:
        state["sends"] += 1
        if temp_guid:
            if temp_guid in state["temp_guids"]:
                state["repeated"] += 1
            state["temp_guids"].add(temp_guid)


def synchronous_send(temp_guid, chat_guid, text, record, attachment=None, extra=None):
    """Sends as the server does: the message is in the Mac's database at once, the answer comes when
    the server has seen it (after `delay` in slow mode); an error code fails it."""
    if chat_guid not in state["chats"] and ";+;" in chat_guid:
        return imessage_error("Message Send Error", "Chat does not exist!")
    with app.lock:
        state["send_cache"].add(temp_guid)
        mode, delay, code = state["mode"], state["delay"], state["code"]
    try:
        message = new_message(chat_guid, text, True, attachment=attachment)
        message.update(extra or {})
        record["guid"] = message["guid"]
        with app.lock:
            state["sent"].append(record)
        if mode == "slow":
            time.sleep(delay)
        if mode == "error":
            message["error"] = code
            emit("message-send-error", dict(message))
            data = dict(message, tempGuid=temp_guid)
            return imessage_error("Message Send Error", "Failed to send message! See attached message error code.",
                                  data)
        go_out(message)
        return success(dict(message, tempGuid=temp_guid), "Message sent!")
    finally:
        with app.lock:
            state["send_cache"].discard(temp_guid)


@app.route("GET", "/api/v1/ping")
@protected
def ping(request):
    return success("pong", "Ping received!")


@app.route("GET", "/api/v1/server/info")
@protected
def server_info(request):
    return success({
        "computer_id": "fake-mac",
        "os_version": state["macos"],
        "server_version": "1.9.9",
        "private_api": state["private_api"],
        "proxy_service": "lan-url",
        "helper_connected": state["helper"],
        "detected_icloud": "line@example.com",
        "detected_imessage": "line@example.com",
        "macos_time_sync": 0,
        "local_ipv4s": ["127.0.0.1"],
        "local_ipv6s": [],
    })


@app.route("GET", "/api/v1/handle/availability/imessage")
@protected
@private_api
def availability(request):
    address = request.query.get("address")
    if not address:
        return bad_request("The address field is required.")
    # The fake's rule: a number ending in an odd digit has iMessage.
    return success({"available": address[-1].isdigit() and int(address[-1]) % 2 == 1})


@app.route("POST", "/api/v1/message/text")
@protected
def send_text(request):
    body = request.json()
    temp_guid, chat_guid, text = body.get("tempGuid"), body.get("chatGuid"), body.get("message")
    method = body.get("method") or "apple-script"
    if not chat_guid:
        return bad_request("The chatGuid field is required.")
    broken = invalid(body, [("effectId", "string"), ("subject", "string"), ("selectedMessageGuid", "string"),
                            ("partIndex", "index")])
    if broken:
        return bad_request(broken)
    # validateText: an effect, a subject, a reply (or ddScan, attributedBody) means the Private API.
    implied = any(body.get(k) for k in ("effectId", "subject", "selectedMessageGuid", "ddScan", "attributedBody"))
    method = "private-api" if implied else method
    if method == "apple-script" and not temp_guid:
        return bad_request("A 'tempGuid' is required when sending via AppleScript")
    if method == "apple-script" and not text:
        return bad_request("A 'message' is required when sending via AppleScript")
    if method == "private-api" and not (text or "").strip() and not (body.get("subject") or "").strip():
        return bad_request("A 'message' or 'subject' is required when sending via the Private API")
    refusal = private_api_refusal() if method == "private-api" else None
    if refusal and (implied or not state["private_api"]):  # sendMessagePrivateApi's check, caught by sendText
        return imessage_error("Message Send Error", refusal)
    if method == "private-api" and not state["helper"]:
        return imessage_error("Message Send Error", "Private API Helper is not connected!")
    with app.lock:
        if temp_guid and temp_guid in state["send_cache"]:
            note_temp_guid(temp_guid)
            return bad_request(f"Message is already queued to be sent! (Temp GUID: {temp_guid})")
    note_temp_guid(temp_guid)
    record = {"tempGuid": temp_guid, "chatGuid": chat_guid, "text": text, "method": method, "at": now_ms()}
    record.update({k: body[k] for k in ("selectedMessageGuid", "partIndex", "effectId", "subject")
                   if body.get(k) is not None})
    return synchronous_send(temp_guid, chat_guid, text, record, extra=private_api_fields(body))


def private_api_fields(body):
    """What the Mac stores for an effect, a subject and a reply (the helper's sendMessage: a reply
    to a message already in a thread joins that thread)."""
    extra = {}
    if body.get("effectId"):
        extra["expressiveSendStyleId"] = body["effectId"]
    if body.get("subject"):
        extra["subject"] = body["subject"]
    target = body.get("selectedMessageGuid")
    if target:
        with app.lock:
            original = dict(state["messages"].get(target) or {})
        part = int(float(body.get("partIndex") or 0))
        extra["threadOriginatorGuid"] = original.get("threadOriginatorGuid") or target
        extra["threadOriginatorPart"] = (original.get("threadOriginatorPart") if original.get("threadOriginatorGuid")
                                         else f"{part}:0:{len(original.get('text') or '')}")
    return extra


def multipart_fields(request):
    content_type = request.headers.get("Content-Type", "")
    parser = email.parser.BytesParser(policy=email.policy.HTTP)
    message = parser.parsebytes(f"Content-Type: {content_type}\r\n\r\n".encode() + request.raw)
    fields, files = {}, {}
    for part in message.iter_parts():
        name = part.get_param("name", header="content-disposition")
        payload = part.get_payload(decode=True) or b""
        filename = part.get_filename()
        if filename is not None:
            files[name] = (filename, part.get_content_type(), payload)
        else:
            fields[name] = payload.decode()
    return fields, files


@app.route("POST", "/api/v1/message/attachment")
@protected
def send_attachment(request):
    fields, files = multipart_fields(request)
    if "attachment" not in files:
        return bad_request("An attachment is required!")
    if not fields.get("chatGuid"):
        return bad_request("The chatGuid field is required.")
    if not fields.get("name"):
        return bad_request("The name field is required.")
    temp_guid, chat_guid, name = fields.get("tempGuid"), fields["chatGuid"], fields["name"]
    with app.lock:
        if temp_guid and temp_guid in state["send_cache"]:
            note_temp_guid(temp_guid)
            return bad_request("Attachment is already queued to be sent!")
    note_temp_guid(temp_guid)
    _, mime, payload = files["attachment"]
    attachment = {"originalROWID": next(rowids), "guid": str(uuid.uuid4()).upper(), "uti": "public.data",
                  "mimeType": mime, "transferName": name, "totalBytes": len(payload)}
    record = {"tempGuid": temp_guid, "chatGuid": chat_guid, "text": "\ufffc", "method": fields.get("method"),
              "attachment_name": name, "attachment_text": payload.decode(errors="replace"),
              "attachment_mime": mime, "attachment_sha256": hashlib.sha256(payload).hexdigest(), "at": now_ms()}
    return synchronous_send(temp_guid, chat_guid, "\ufffc", record, attachment)


@app.route("POST", "/api/v1/chat/new")
@protected
def chat_new(request):
    body = request.json()
    addresses, text = body.get("addresses") or [], body.get("message")
    method, service = body.get("method") or "apple-script", body.get("service") or "iMessage"
    if not addresses:
        return imessage_error("The server has encountered an error", "No addresses provided!")
    if method == "apple-script" and len(addresses) > 1:
        return imessage_error("Failed to create chat!", "Cannot create group chats on macOS Big Sur or newer!")
    if method == "private-api" and not text:
        return imessage_error("Failed to create chat!", "A message is required when creating chats with the Private API!")
    if method == "private-api" and not state["helper"]:
        return imessage_error("Failed to create chat!", "Private API Helper is not connected!")
    note_temp_guid(body.get("tempGuid"))
    if state["mode"] == "slow":
        time.sleep(state["delay"])
    guid = f"{service};+;chat{uuid.uuid4().int % 10**18:018d}" if len(addresses) > 1 else f"{service};-;{addresses[0]}"
    chat = chat_for(guid, addresses)
    message = new_message(guid, text, True)
    with app.lock:
        state["sent"].append({"guid": message["guid"], "tempGuid": body.get("tempGuid"), "chatGuid": guid,
                              "text": text, "method": method, "addresses": addresses, "at": now_ms()})
    go_out(message)
    data = dict(chat, messages=[dict(message, tempGuid=body.get("tempGuid"))])
    return success(data, "Successfully created chat!")


def group_event(chat, item_type, action_type, from_me, actor=None, title=None, with_participants=True):
    """The message row the Mac writes for a group change, as the webhook carries it."""
    message = new_message(chat["guid"], "", from_me, sender=actor)
    message["itemType"], message["groupActionType"], message["groupTitle"] = item_type, action_type, title
    brief = brief_chat(chat)
    if with_participants:
        brief["participants"] = [dict(p) for p in chat["participants"]]
    message["chats"] = [brief]
    return message


def change_chat(guid, action, name=None, address=None, from_me=True, actor=None, wait=False):
    """Applies a change to a chat and posts its webhook (`wait`: see emit)."""
    with app.lock:
        chat = state["chats"][guid]
        members = chat["participants"]
        if action == "rename":
            chat["displayName"] = name
        elif action == "add" and all(p["address"] != address for p in members):
            members.append({"address": address, "service": guid.split(";")[0]})
        elif action in ("remove", "leave"):
            chat["participants"] = [p for p in members if p["address"] != address]
    kind, item, group_action = {"rename": ("group-name-change", 2, 0), "add": ("participant-added", 1, 0),
                                "remove": ("participant-removed", 1, 1), "leave": ("participant-left", 3, 0)}[action]
    message = group_event(chat, item, group_action, from_me, actor=actor, title=name if action == "rename" else None,
                          with_participants=action != "rename")
    emit(kind, dict(message), wait=wait)


def group_change(guid, action, name=None, address=None):
    """A rename or a participant change asked over the API: the Private API action, then the
    server's wait for the Mac's database to show it."""
    with app.lock:
        state["sends"] += 1
        state["sent"].append({"chatGuid": guid, "action": action, "name": name, "address": address, "at": now_ms()})
        mode, delay = state["mode"], state["delay"]
    if mode == "error":
        return imessage_error("Chat update executed with errors!", "Chat update executed with errors!")
    if mode == "late":
        later(delay, lambda: change_chat(guid, action, name=name, address=address))
        return envelope(500, "The server has encountered an error", None,
                        {"type": "Server Error", "message": "An unhandled error has occurred!"})
    if mode == "slow":
        time.sleep(delay)
    change_chat(guid, action, name=name, address=address, wait=mode == "hook-first")
    return None


def known_chat(request):
    guid = unquote(request.params["guid"])
    with app.lock:
        chat = state["chats"].get(guid)
    return guid, chat


@app.route("GET", "/api/v1/chat/(?P<guid>[^/]+)")
@protected
def get_chat(request):
    guid, chat = known_chat(request)
    if chat is None:
        return not_found("Chat does not exist!")
    wanted = [w.strip().lower() for w in request.query.get("with", "").split(",")]
    with app.lock:
        data = dict(chat, participants=[dict(p) for p in chat["participants"]] if "participants" in wanted else [])
    return success(data)


@app.route("PUT", "/api/v1/chat/(?P<guid>[^/]+)")
@protected
@private_api
def update_chat(request):
    name = request.json().get("displayName")
    if name is not None and (not isinstance(name, str) or len(name) < 1):
        return bad_request("The displayName must be at least 1 characters.")
    guid, chat = known_chat(request)
    if chat is None:
        return not_found("Chat does not exist!")
    if name is None:
        return success(brief_chat(chat), "Chat not updated! No update information provided!")
    if len(chat["participants"]) <= 1:
        return imessage_error("Failed to update chat!", "Cannot rename a non-group chat!")
    if chat["displayName"] == name:
        return success(dict(chat, participants=[]), "Successfully updated the following fields: displayName")
    refused = group_change(guid, "rename", name=name)
    if refused:
        return refused
    with app.lock:
        data = dict(state["chats"][guid], participants=[])
    return success(data, "Successfully updated the following fields: displayName")


def participant(request, action):
    address = request.json().get("address")
    if not isinstance(address, str) or not address:
        return bad_request("The address field is required.")
    guid, chat = known_chat(request)
    if chat is None:
        return not_found("Chat does not exist!")
    if len(chat["participants"]) == 1:
        return envelope(500, "The server has encountered an error", None,
                        {"type": "Server Error", "message": "Chat is not a group chat!"})
    refused = group_change(guid, action, address=address)
    if refused:
        return refused
    with app.lock:
        data = dict(state["chats"][guid], participants=[dict(p) for p in state["chats"][guid]["participants"]])
    return success(data)


@app.route("POST", "/api/v1/chat/(?P<guid>[^/]+)/participant/add")
@protected
@private_api
def add_participant(request):
    return participant(request, "add")


@app.route("POST", "/api/v1/chat/(?P<guid>[^/]+)/participant/remove")
@protected
@private_api
def remove_participant(request):
    return participant(request, "remove")


@app.route("POST", "/api/v1/chat/(?P<guid>[^/]+)/leave")
@protected
@private_api
def leave_chat(request):
    guid = unquote(request.params["guid"])
    with app.lock:
        state["sends"] += 1
        state["sent"].append({"chatGuid": guid, "action": "leave", "name": None, "address": None, "at": now_ms()})
    # The server sends the Private API action and answers at once, known chat or not.
    return envelope(200, "Successfully left chat!")


@app.route("POST", "/api/v1/message/react")
@protected
@private_api
def react(request):
    body = request.json()
    chat_guid, target, reaction = body.get("chatGuid"), body.get("selectedMessageGuid"), body.get("reaction")
    if not isinstance(chat_guid, str) or not chat_guid:
        return bad_request("The chatGuid field is required.")
    if not isinstance(target, str) or not target:
        return bad_request("The selectedMessageGuid field is required.")
    if reaction not in REACTION_TEXT:
        return bad_request("The selected reaction is invalid.")
    with app.lock:
        known = target in state["messages"]
    if not known:
        return bad_request("Selected message does not exist!")
    message = tapback(chat_guid, target, reaction, True)
    with app.lock:
        state["sends"] += 1
        state["sent"].append({"chatGuid": chat_guid, "reaction": reaction, "selectedMessageGuid": target,
                              "guid": message["guid"], "at": now_ms()})
    go_out(message)
    return success(dict(message), "Reaction sent!")


def signal(request, kind, answer):
    guid = unquote(request.params["guid"])
    with app.lock:
        state["signals"].append({"chatGuid": guid, "kind": kind, "at": now_ms()})
    return envelope(200, answer)


@app.route("POST", "/api/v1/chat/(?P<guid>[^/]+)/typing")
@protected
@private_api
def start_typing(request):
    return signal(request, "typing", "Successfully started typing!")


@app.route("DELETE", "/api/v1/chat/(?P<guid>[^/]+)/typing")
@protected
@private_api
def stop_typing(request):
    # The server's route answers "stopped" (its controller calls start-typing again, which a fake
    # cannot show); the call is recorded as what was asked.
    return signal(request, "stop-typing", "Successfully stopped typing!")


@app.route("POST", "/api/v1/chat/(?P<guid>[^/]+)/read")
@protected
@private_api
def mark_read(request):
    answer = signal(request, "read", "Successfully marked chat as read!")
    emit("chat-read-status-changed", {"chatGuid": unquote(request.params["guid"]), "read": True})
    return answer


@app.route("POST", "/api/v1/message/query")
@protected
def query(request):
    body = request.json()
    chat_guid, after, before = body.get("chatGuid"), body.get("after"), body.get("before")
    offset, limit = int(body.get("offset") or 0), int(body.get("limit") or 100)
    with_chats = any(w in ("chat", "chats", "chat.participants", "chats.participants") for w in body.get("with") or [])
    if chat_guid and chat_guid not in state["chats"]:
        return success([], f"No chat found with GUID: {chat_guid}")
    with app.lock:
        found = [dict(state["messages"][g]) for g in state["order"]]
    found = [m for m in found if (after is None or m["dateCreated"] > int(after))
             and (before is None or m["dateCreated"] < int(before))
             and (not chat_guid or m["chats"][0]["guid"] == chat_guid)]
    if str(body.get("sort") or "DESC").upper() != "ASC":
        found.reverse()
    total = len(found)
    found = found[offset:offset + limit]
    if not with_chats:
        for message in found:
            message.pop("chats", None)
    reply = success(found)
    reply.body["metadata"] = {"offset": offset, "limit": limit, "total": total, "count": len(found)}
    return reply


@app.route("GET", "/api/v1/message/(?P<guid>[^/]+)")
@protected
def find(request):
    with app.lock:
        message = state["messages"].get(request.params["guid"])
        message = dict(message) if message else None
    if message is None:
        return not_found("Message does not exist!")
    return success(message)


def change_message(guid, kind, text=None, wait=False):
    """An edit or an unsend as the Mac's database shows it: both move dateEdited (Apple leaves
    dateRetracted unset, MessagePoller.ts); an edit carries the new text, an unsent message none.
    Posted as updated-message without chats (index.ts handleUpdatedMessage; `wait`: see emit)."""
    with app.lock:
        message = state["messages"][guid]
        message["dateEdited"] = now_ms()
        if kind == "edit":
            message["text"] = text
        else:
            message["text"], message["partCount"] = None, 0
        snapshot = {k: v for k, v in message.items() if k != "chats"}
    emit("updated-message", snapshot, wait=wait)


def message_action(request, kind):
    """messageRouter.ts editMessage / unsendMessage and messageInterface.ts: the server asks the
    helper, which acknowledges at once whatever Apple does, then waits for dateEdited to move and
    answers with the message as it then is (changed or not)."""
    guid, body = unquote(request.params["guid"]), request.json()
    rules = [("editedMessage", "required"), ("backwardsCompatibilityMessage", "required")] if kind == "edit" else []
    broken = invalid(body, rules + [("partIndex", "index")])
    if broken:
        return bad_request(broken)
    with app.lock:
        message = state["messages"].get(guid)
        chat = message["chats"][0]["guid"] if message else None
    if message is None:
        return bad_request("Selected message does not exist!")
    failure, done = ("Message Edit Error", "Message edited!") if kind == "edit" else ("Unsend Message Error",
                                                                                      "Message unsent!")
    refusal = private_api_refusal() or (None if ventura() else "Unsend message is only supported on macOS Ventura "
                                        "and newer!")  # the server's words for edit too
    if refusal:
        return imessage_error(failure, refusal)
    record = {"kind": kind, "guid": guid, "chatGuid": chat, "partIndex": body.get("partIndex"), "at": now_ms()}
    if kind == "edit":
        record.update(editedMessage=body["editedMessage"],
                      backwardsCompatibilityMessage=body["backwardsCompatibilityMessage"])
    with app.lock:
        state["sends"] += 1
        state["sent"].append(record)
        mode, delay = state["mode"], state["delay"]
    if mode == "error":  # the helper's one error for these actions
        return imessage_error(failure, "Chat does not exist in IMChatRegistry!")
    if mode in ("slow", "refuse"):
        time.sleep(delay)
    if mode != "refuse":
        change_message(guid, kind, body.get("editedMessage"), wait=mode == "hook-first")
    with app.lock:
        return success(dict(state["messages"][guid]), done)


@app.route("POST", "/api/v1/message/(?P<guid>[^/]+)/edit")
@protected
def edit_message(request):
    return message_action(request, "edit")


@app.route("POST", "/api/v1/message/(?P<guid>[^/]+)/unsend")
@protected
def unsend_message(request):
    return message_action(request, "unsend")


@app.route("GET", "/api/v1/webhook")
@protected
def webhooks(request):
    url, hook_id = request.query.get("url"), request.query.get("id")
    with app.lock:
        hooks = [h for h in state["webhooks"] if (not url or h["url"] == url) and (not hook_id or str(h["id"]) == hook_id)]
    return success(hooks, "Successfully fetched webhooks!")


@app.route("POST", "/api/v1/webhook")
@protected
def create_webhook(request):
    body = request.json()
    url, events = body.get("url"), body.get("events")
    if not isinstance(url, str) or not isinstance(events, list):
        return bad_request("The url and events fields are required.")
    if not url.startswith("http"):
        return bad_request("Webhook URL must include an HTTP scheme!")
    for event in events:
        if not isinstance(event, str):
            return bad_request("Webhook events must be strings!")
        if event not in EVENTS:
            return bad_request(f"Invalid webhook event: {event}! Webhook must be one of: {','.join(EVENTS)}")
    with app.lock:
        existing = next((h for h in state["webhooks"] if h["url"] == url), None)
        if existing:  # the server keeps one webhook per URL and returns it unchanged
            return success(existing, "Successfully created webhook!")
        hook = {"id": len(state["webhooks"]) + 1, "url": url, "events": events, "created": now_ms()}
        state["webhooks"].append(hook)
    return success(hook, "Successfully created webhook!")


@app.route("DELETE", "/api/v1/webhook/(?P<id>[0-9]+)")
@protected
def delete_webhook(request):
    with app.lock:
        before = len(state["webhooks"])
        state["webhooks"] = [h for h in state["webhooks"] if str(h["id"]) != request.params["id"]]
        if len(state["webhooks"]) == before:
            return not_found("Webhook does not exist!")
    return success(None, "Successfully deleted webhook!")


@app.route("POST", "/control/inbound")
def control_inbound(request):
    body = request.json()
    sender, service = body["from"], body.get("service") or "iMessage"
    chat = body.get("chat") or f"{service};-;{sender}"
    files = []
    for file in body.get("attachments") or []:
        payload = base64.b64decode(file["base64"])
        guid = str(uuid.uuid4()).upper()
        mime = file.get("mime") or "application/octet-stream"
        with app.lock:
            state["files"][guid] = (mime, payload)
        files.append({"originalROWID": next(rowids), "guid": guid, "uti": "public.data", "mimeType": mime,
                      "transferName": file.get("name") or "file", "totalBytes": len(payload), "height": 0,
                      "width": 0, "metadata": None})
    text = body.get("body") or ("\ufffc" * len(files))
    message = new_message(chat, text, False, sender=sender)
    message["attachments"] = files
    message["handle"] = {"originalROWID": 2, "address": sender, "service": service}
    message.update({k: body[k] for k in ("threadOriginatorGuid", "threadOriginatorPart", "expressiveSendStyleId",
                                          "subject") if body.get(k) is not None})
    emit("new-message", dict(message))
    return Reply(200, {"guid": message["guid"]})


@app.route("GET", "/api/v1/attachment/(?P<guid>[^/]+)/download")
@protected
def download_attachment(request):
    """api/http/api/v1/routers/attachmentRouter.ts: the raw file with its type, no envelope."""
    guid = unquote(request.params["guid"])
    with app.lock:
        found = state["files"].get(guid)
    if found is None:
        return not_found("Attachment does not exist!")
    mime, payload = found
    return Reply(200, payload, {"Content-Type": mime})


@app.route("POST", "/control/reaction")
def control_reaction(request):
    body = request.json()
    sender = body["from"]
    chat = body.get("chat") or f"iMessage;-;{sender}"
    message = tapback(chat, body["target"], body["reaction"], False, sender=sender)
    message["handle"] = {"originalROWID": 2, "address": sender, "service": "iMessage"}
    emit("new-message", dict(message))
    return Reply(200, {"guid": message["guid"]})


@app.route("POST", "/control/typing")
def control_typing(request):
    body = request.json()
    emit("typing-indicator", {"display": bool(body.get("display", True)), "guid": f"iMessage;-;{body['from']}"})
    return Reply(200, {})


@app.route("GET", "/control/signals")
def control_signals(request):
    with app.lock:
        return Reply(200, list(state["signals"]))


@app.route("POST", "/control/group")
def control_group(request):
    body = request.json()
    action, address = body["action"], body.get("address")
    actor = address if action == "leave" else body.get("by", "+12015550199")
    change_chat(body["chat"], action, name=body.get("name"), address=address, from_me=False, actor=actor)
    return Reply(200, {"chat": body["chat"]})


@app.route("POST", "/control/helper")
def control_helper(request):
    body = request.json()
    state["helper"] = bool(body.get("connected"))
    if "private_api" in body:
        state["private_api"] = bool(body["private_api"])
    return Reply(200, {"helper": state["helper"], "private_api": state["private_api"]})


@app.route("POST", "/control/edit")
def control_edit(request):
    body = request.json()
    change_message(body["message_guid"], "edit", body["body"])
    return Reply(200, {"guid": body["message_guid"]})


@app.route("POST", "/control/unsend")
def control_unsend(request):
    change_message(request.json()["message_guid"], "unsend")
    return Reply(200, {"guid": request.json()["message_guid"]})


@app.route("POST", "/control/mode")
def control_mode(request):
    body = request.json()
    with app.lock:
        state["mode"] = body.get("mode", "accept")
        state["delay"] = float(body.get("delay_ms", 0)) / 1000
        state["code"] = int(body.get("code", 22))
    return Reply(200, {"mode": state["mode"]})


app.control_routes(state, "repeated_temp_guids", lambda: list(state["webhooks"]))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--listen", required=True)
    parser.add_argument("--password", required=True)
    parser.add_argument("--step-ms", type=float, default=50)
    parser.add_argument("--no-helper", action="store_true")
    parser.add_argument("--no-private-api", action="store_true", help="the server's Private API setting off")
    parser.add_argument("--macos", default="14.5", help="os_version; below 13 refuses edit and unsend")
    args = parser.parse_args()
    state["password"] = args.password
    state["step"] = args.step_ms / 1000
    state["helper"] = not args.no_helper
    state["private_api"], state["macos"] = not args.no_private_api, args.macos
    app.serve(args.listen)


if __name__ == "__main__":
    main()
