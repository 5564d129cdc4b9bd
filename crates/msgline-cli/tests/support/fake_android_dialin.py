#!/usr/bin/env python3
"""A fake SMS Gateway for Android in private-server mode (the phone dials msgline) for msgline's tests.

Written from the app's source (capcom6/android-sms-gateway, app/src/main/java/me/capcom/smsgateway/):
  modules/gateway/GatewayApi.kt       POST/PATCH {base}/device, GET {base}/message?order=lifo|fifo, PATCH {base}/message,
                                      GET {base}/webhooks, GET {base}/settings, "Authorization: Bearer" (the private
                                      token to register, the device token after), the JSON bodies and answers
  modules/gateway/GatewayService.kt   PATCH /device when a token is held, POST /device again only on its 401; a pulled
                                      message in Pending (or no state) is sent, Cancelling cancelled, an id it already
                                      has (its local DB is keyed by id) only reported again
  modules/gateway/workers/*.kt        registration retried (10 s, doubling); pull at start, every 15 min, on
                                      MessageEnqueued and on ping; a state report (PATCH) tried 11 times (10 s, doubling)
  helpers/SSEManager.kt, gateway/services/SSEForegroundService.kt, gateway/EventsReceiver.kt  GET {base}/events once
                                      registered without an FCM token; a pull on every open; after a close or failure a
                                      new try in 5 s (tries 1-5), 30 s (6-10), 60 s (later), reset by an open
  modules/events/ExternalEventType.kt, orchestrator/EventsRouter.kt, okhttp-sse's ServerSentEventReader
                                      MessageEnqueued (or no event line), WebhooksUpdated, SettingsUpdated,
                                      MessageCancelled {messageId}, MessagesExportRequested; no data line, no event
  modules/messages/MessagesService.kt, data/entities/MessageWithRecipients.kt, data/dao/MessagesDao.kt  per-recipient
                                      states (Failed is final), the message state derived from them, `states` = first
                                      time of each, "TTL expired" when validUntil has passed at sending time
  modules/webhooks/{EventsReceiver,WebHooksService,WebhooksSettings}.kt, webhooks/payload/*.kt,
  webhooks/workers/WebhookQueueProcessorWorker.kt, webhooks/plugins/PayloadSingingPlugin.kt  {id, webhookId, event,
                                      deviceId, payload} to each webhook of the event, tried retry_count times (5 s,
                                      doubling); X-Signature = hex HMAC-SHA256(key, body + X-Timestamp), the key from
                                      GET /settings webhooks.signing_key, else a random one of the phone's own
  extensions/GsonBuilder.kt           dates "yyyy-MM-dd'T'HH:mm:ss.SSSXXX"; nulls left out; < > & = ' as \\u003c...
  res/xml/network_security_config.xml plain http only to 127.0.0.1 (msgline and webhook URLs alike)

What it cannot reproduce: FCM (it is the "SSE only" phone: no pushToken); WorkManager's timing and concurrency (a
message's reports go one after another, and one that keeps failing holds back that message's later steps); the stale
token the real SSE service keeps after a re-registration; restarts other than POST /control/restart; SIM choice, data
SMS, MMS, real part counts; messages export (every inbound SMS here was processed already, so it sends nothing).

    fake_android_dialin.py --server URL --token REGISTRATION_TOKEN --listen 127.0.0.1:PORT
        [--reconnect-scale F] [--poll-seconds N] [--step-ms 20] [--name NAME]

Control routes (no auth): GET /control/state (sse_events: each event's name, null when it had no event line), POST /control/register {token}, POST /control/disconnect, POST
/control/connect, POST /control/restart (the app restarted: PATCH /device, GET /webhooks, GET /settings, pull, SSE),
POST /control/mode {mode: report|silent|fail, reason} (silent: no PATCH, no sms:* webhooks), POST
/control/recipient-states {"+1555...": "Failed"|"Sent"|"Delivered"}, POST /control/repeat-reports {times}, POST
/control/inbound {from, body}, POST /control/ping, GET /control/sent, GET /control/stats, GET /control/calls,
GET /control/webhooks (what it learned: webhooks, signing_key, retry_count).
"""

import argparse
import hashlib
import hmac
import http.client
import json
import re
import secrets
import socket
import sys
import threading
import time
import urllib.error
import urllib.request
import zlib
from datetime import datetime, timezone
from urllib.parse import urlparse

from fake_common import App, Reply, log, now_ms

VERSION = "1.0.0-fake"
AGENT = f"me.capcom.smsgateway/{VERSION}"
SEND_FAILURE = "Send result: RESULT_ERROR_GENERIC_FAILURE (Generic failure cause)"
SIMS = [{"slotIndex": 0, "simNumber": 1, "phoneNumber": "********0100", "carrierName": "*******rier"}]  # redacted
app = App()
state = {"server": "", "private_token": "", "name": "", "scale": 1.0, "poll": 900.0, "step": 0.02,
         "registration": None, "register_status": None, "connected": False, "connects": 0, "pulls": 0,
         "sse_events": [], "last_error": None, "mode": "report", "reason": SEND_FAILURE, "overrides": {},
         "repeat": 1, "messages": {}, "sent": [], "duplicate_pulls": 0, "patches": 0, "webhooks_posted": 0,
         "calls": [], "webhooks": [], "signing_key": None, "retry_count": 15, "order": "lifo", "stream": None}
online = threading.Event()  # the phone has a network (POST /control/disconnect clears it)
sse_on = threading.Event()  # the SSE service runs: set by a registration, cleared by a restart
kick = threading.Event()  # wakes the SSE loop out of its reconnect wait
pull_now = threading.Event()  # PullMessagesWorker.start
announced = threading.Event()
online.set()

def nanoid(size=21):
    return secrets.token_urlsafe(size)[:size]

def iso(ms=None):
    return datetime.fromtimestamp((ms or now_ms()) / 1000, tz=timezone.utc).isoformat(
        timespec="milliseconds").replace("+00:00", "Z")

def parse_date(text):
    """Gson's reading of a date (the app's pattern, else ISO 8601 with a zone): seconds, or ValueError."""
    if text is None:
        return None
    found = re.fullmatch(r"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(\.\d+)?(Z|[+-]\d\d:?\d\d)", str(text).strip())
    if not found:
        raise ValueError(f"Failed parsing '{text}' as Date")
    zone = "+00:00" if found[3] == "Z" else found[3][:3] + ":" + found[3][-2:]
    return datetime.fromisoformat(f"{found[1]}.{(found[2] or '.0')[1:7].ljust(6, '0')}{zone}").timestamp()

def gson(value):
    """The bytes the app's Gson writes: compact, UTF-8, HTML-safe escapes (nulls are left out before)."""
    text = json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    for char in "<>&='\u2028\u2029":
        text = text.replace(char, "\\u%04x" % ord(char))
    return text.encode()

def nonnull(fields):
    return {k: v for k, v in fields.items() if v is not None}

def wait(seconds):
    time.sleep(seconds * state["scale"])

def fail(text):
    with app.lock:
        state["last_error"] = text
    log(text)

def registration():
    with app.lock:
        return state["registration"]

def called(method, path, status):
    with app.lock:
        state["calls"].append({"method": method, "path": path, "status": status, "at": now_ms()})

def call(method, url, body=None, token=None, headers=None, need_network=True):
    """One HTTP call as the app's clients make it: (ok, status or None, raw answer)."""
    if need_network:
        online.wait()  # WorkManager's NetworkType.CONNECTED
    parts, status, raw, error = urlparse(url), None, b"", None
    if parts.scheme == "http" and parts.hostname != "127.0.0.1":
        error = f"CLEARTEXT communication to {parts.hostname} not permitted by network security policy"
    else:
        data = None if body is None else body if isinstance(body, bytes) else gson(body)
        request = urllib.request.Request(url, data=data, method=method)
        extra = {"Content-Type": "application/json"} if data is not None else {}
        extra |= {"Authorization": f"Bearer {token}"} if token else {}
        for name, value in ({"User-Agent": AGENT, "Accept": "application/json"} | extra | (headers or {})).items():
            request.add_header(name, value)
        try:
            with urllib.request.urlopen(request, timeout=30) as answer:
                status, raw = answer.status, answer.read()
        except urllib.error.HTTPError as refused:
            status, raw = refused.code, refused.read()
            error = f"{method} {parts.path} answered {status}: {raw[:200]!r}"
        except OSError as broken:
            error = f"{method} {parts.path} failed: {broken}"
    called(method, parts.path, status)
    if error:
        fail(error)
    return error is None, status, raw

def retrying(job):
    """A WorkManager job answering Result.retry(): tried again after 10 s, doubling, at most 5 h."""
    def run():
        attempt = 0
        while not job():
            wait(min(10 * 2 ** attempt, 18000))
            attempt += 1
    threading.Thread(target=run, daemon=True).start()

# Registration (GatewayService.registerDevice/updateDevice, RegistrationWorker)

def register(private_token, need_network=True):
    with app.lock:
        state["private_token"] = private_token
    body = {"name": state["name"], "simCards": SIMS}  # pushToken: null, so left out
    ok, status, raw = call("POST", state["server"] + "/device", body, private_token, need_network=need_network)
    with app.lock:
        state["register_status"] = status
    try:
        answer = json.loads(raw) if ok else {}
        fresh = {k: answer.get(k) for k in ("id", "token", "login", "password")}
        if ok and not (isinstance(fresh["id"], str) and isinstance(fresh["token"], str)):
            raise ValueError("no id or token")
    except (ValueError, AttributeError) as error:
        fail(f"POST /device answer not understood: {error}")
        ok = False
    if ok:
        with app.lock:
            state["registration"] = fresh
        device_registered()
    return ok, status

def device_registered():
    """DeviceRegisteredEvent.Success with no FCM token: the SSE service (re)starts."""
    sse_on.set()
    abort()
    kick.set()

def start_app():
    """GatewayService.start: the registration worker, and the pull, webhooks and settings workers,
    which do nothing while no registration is held (so a first registration fetches neither list)."""
    held = registration()

    def job():
        if registration() is not held:
            return True  # registered meanwhile by POST /control/register
        if held is not None:
            ok, status, _ = call("PATCH", state["server"] + "/device", {"id": held["id"], "simCards": SIMS},
                                 held["token"])
            if ok:
                device_registered()
            if ok or status != 401:
                return ok
        return register(state["private_token"])[0]
    retrying(job)
    if held is not None:
        pull_now.set()
        retrying(fetch_webhooks)
        retrying(fetch_settings)

# Server-sent events (SSEManager, SSEForegroundService, EventsRouter)

def abort():
    with app.lock:
        stream = state["stream"]
    try:
        if stream is not None and stream.sock is not None:
            stream.sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass

def sse_loop():
    attempts = 0
    while True:
        online.wait()
        sse_on.wait()
        kick.clear()
        reg = registration()
        if reg is None or not online.is_set():
            continue
        if sse_once(reg["token"]):
            attempts = 0  # onOpen
        with app.lock:
            state["connected"] = False
        if kick.is_set() or not online.is_set() or not sse_on.is_set():
            attempts = 0  # re-registered, offline or restarted: no reconnect schedule
            continue
        attempts += 1
        kick.wait((60 if attempts > 10 else 30 if attempts > 5 else 5) * state["scale"])

def sse_once(token):
    """One GET /events; True when it opened (a 2xx text/event-stream answer)."""
    url = urlparse(state["server"] + "/events")
    if url.scheme == "http" and url.hostname != "127.0.0.1":
        fail(f"CLEARTEXT communication to {url.hostname} not permitted by network security policy")
        return False
    kind = http.client.HTTPSConnection if url.scheme == "https" else http.client.HTTPConnection
    stream, opened = kind(url.hostname, url.port, timeout=3600), False  # okhttp readTimeout: 1 h
    with app.lock:
        state["stream"] = stream
    try:
        stream.connect()
        stream.request("GET", url.path, headers={"Authorization": f"Bearer {token}", "User-Agent": AGENT,
                                                 "Accept": "text/event-stream"})
        answer = stream.getresponse()
        called("GET", url.path, answer.status)
        content_type = (answer.getheader("Content-Type") or "").split(";")[0].strip().lower()
        if not 200 <= answer.status < 300:
            fail(f"GET {url.path} answered {answer.status}")
        elif content_type != "text/event-stream":
            fail(f"GET {url.path}: Invalid content-type: {content_type}")
        elif online.is_set() and sse_on.is_set():  # not dropped while it was connecting
            opened = True
            with app.lock:
                state["connected"] = True
                state["connects"] += 1
            pull_now.set()  # onConnected: PullMessagesWorker.start
            read_events(answer)
            log("SSE connection closed")
    except (OSError, http.client.HTTPException) as error:
        fail(f"SSE error: {error!r}")
    finally:
        with app.lock:
            state["stream"] = None
        stream.close()
    return opened

def read_events(answer):
    data, kind = None, None
    while raw := answer.readline():
        line = raw.decode("utf-8", "replace").rstrip("\r\n")
        if not line:
            if data is not None:
                dispatch(kind, data)
            data, kind = None, None
        elif not line.startswith(":"):
            field, _, value = line.partition(":")
            value = value[1:] if value.startswith(" ") else value
            if field == "data":
                data = value if data is None else data + "\n" + value
            elif field == "event":
                kind = value or None

def dispatch(kind, data):
    with app.lock:
        state["sse_events"].append(kind)  # null: no event line (the app takes it as MessageEnqueued)
    name = kind or "MessageEnqueued"
    try:
        if name == "MessageEnqueued":
            pull_now.set()
        elif name in ("WebhooksUpdated", "SettingsUpdated"):
            retrying(fetch_webhooks if name == "WebhooksUpdated" else fetch_settings)
        elif name == "MessageCancelled":
            cancel(json.loads(data)["messageId"])
        elif name == "MessagesExportRequested":
            [parse_date(json.loads(data)[k]) for k in ("since", "until")]
        else:
            fail(f"Unknown event type: {name}")
    except (ValueError, TypeError, KeyError) as error:
        fail(f"Failed to process event {name}: {error!r}")

# What the server lists (WebhooksUpdateWorker, SettingsUpdateWorker)

def fetch_webhooks():
    reg, hooks = registration(), []
    if reg is not None:
        ok, _, raw = call("GET", state["server"] + "/webhooks", token=reg["token"])
        try:
            hooks = [{"id": str(h["id"]), "url": h["url"], "event": h["event"]} for h in json.loads(raw)] if ok else []
        except (ValueError, TypeError, KeyError) as error:
            fail(f"GET /webhooks answer not understood: {error!r}")
            ok = False
        if not ok:
            return False
    with app.lock:
        state["webhooks"] = hooks  # WebHooksService.sync: replaces every webhook from the server
    return True

def fetch_settings():
    reg = registration()
    if reg is None:
        return True
    ok, _, raw = call("GET", state["server"] + "/settings", token=reg["token"])
    try:
        found = json.loads(raw) if ok else {}
        sections = {k: v for k, v in found.items() if k in ("encryption", "gateway", "messages", "ping", "logs",
                                                                 "webhooks")}
        if not all(isinstance(v, dict) for v in sections.values()):
            raise TypeError("a settings section is not an object")
        hooks, order = sections.get("webhooks", {}), sections.get("messages", {}).get("processing_order", "")
        if order not in ("", None, "LIFO", "FIFO"):
            raise ValueError(f"No enum constant ProcessingOrder.{order}")
        with app.lock:
            if "signing_key" in hooks:  # null: the phone makes up a new random key
                state["signing_key"] = None if hooks["signing_key"] is None else str(hooks["signing_key"])
            if "retry_count" in hooks:
                state["retry_count"] = 15 if hooks["retry_count"] is None else int(float(str(hooks["retry_count"])))
            if order != "":
                state["order"] = (order or "LIFO").lower()
    except (ValueError, TypeError, AttributeError) as error:
        fail(f"GET /settings answer not understood: {error!r}")
        ok = False
    return ok

# Messages (GatewayService.getNewMessages/processMessage, MessagesService, SendStateWorker)

def pull_loop():
    failures = 0
    while True:
        pull_now.wait(min(state["poll"], 10 * 2 ** (failures - 1) * state["scale"]) if failures else state["poll"])
        pull_now.clear()
        if online.is_set() and registration() is not None:
            failures = 0 if pull() else failures + 1

def pull():
    with app.lock:
        state["pulls"] += 1
        order, reg = state["order"], state["registration"]
    ok, _, raw = call("GET", f"{state['server']}/message?order={order}", token=reg["token"])
    try:
        dated = [(m, parse_date(m.get("validUntil")), parse_date(m.get("scheduleAt"))) for m in json.loads(raw)] \
            if ok else []
    except (ValueError, TypeError, AttributeError) as error:
        fail(f"GET /message answer not understood: {error!r}")
        return False
    for message, valid_until, schedule_at in dated:
        try:
            take(message, valid_until, schedule_at)
        except (KeyError, TypeError, ValueError, AttributeError) as error:
            fail(f"Failed to process message {message.get('id')}: {error!r}")
    return ok

def take(message, valid_until, schedule_at):
    message_id, server_state = message["id"], message.get("state")
    with app.lock:
        known, silent = state["messages"].get(message_id), state["mode"] == "silent"
    if server_state == "Cancelling":
        if known is not None:
            cancel(message_id)
        elif not silent:  # not here: reported Cancelled at once, no webhook
            item = {"id": message_id, "state": "Cancelled", "states": {"Cancelled": iso()},
                    "recipients": [{"phoneNumber": p, "state": "Cancelled"} for p in message["phoneNumbers"]]}
            threading.Thread(target=send_state, args=(lambda: item,), daemon=True).start()
        return
    if server_state not in (None, "Pending"):
        return
    if known is not None:
        with app.lock:
            state["duplicate_pulls"] += 1
        threading.Thread(target=report, args=(message_id,), daemon=True).start()
        return
    content = message.get("dataMessage") or message.get("textMessage")
    text = (content.get("data") or content.get("text")) if content else message.get("message")
    if not text:
        raise ValueError("Invalid message content")
    numbers = [str(n) for n in message["phoneNumbers"]]
    with app.lock:
        state["messages"][message_id] = {
            "id": message_id, "text": text, "phoneNumbers": numbers, "state": "Pending", "states": {"Pending": now_ms()},
            "recipients": {n: {"state": "Pending", "error": None} for n in numbers},
            "simNumber": message.get("simNumber"), "report": message.get("withDeliveryReport") is not False,
            "valid_until": valid_until, "parts": 1 if len(text) <= 160 else -(-len(text) // 153),
            "priority": message.get("priority"), "data": bool(message.get("dataMessage"))}
    threading.Thread(target=life, args=(message_id, schedule_at), daemon=True).start()

def life(message_id, schedule_at):
    """SendMessagesWorker and the carrier: Processed, then Sent (or Failed), then Delivered."""
    time.sleep(max(0.0, (schedule_at or 0) - time.time()) + state["step"])
    with app.lock:
        local = state["messages"][message_id]
        if local["state"] != "Pending":
            return  # cancelled meanwhile
        expired = local["valid_until"] is not None and local["valid_until"] < time.time()
        if not expired:
            state["sent"].append({k: local[k] for k in ("id", "phoneNumbers", "text", "simNumber", "priority", "data")}
                                 | {"at": now_ms(), "withDeliveryReport": local["report"]})
    if expired:
        return update(message_id, None, "Failed", "TTL expired")
    numbers = local["phoneNumbers"]
    for number in numbers:
        update(message_id, number, "Processed")
    time.sleep(state["step"])
    with app.lock:
        ends = {n: "Failed" if state["mode"] == "fail" else state["overrides"].get(n, "Delivered") for n in numbers}
        reason = state["reason"]
    for number in numbers:
        update(message_id, number, "Failed" if ends[number] == "Failed" else "Sent", reason)
    if local["report"]:
        time.sleep(state["step"])
        for number in [n for n in numbers if ends[n] == "Delivered"]:
            update(message_id, number, "Delivered")

def derive(local):
    """MessageWithRecipients.state."""
    states = [r["state"] for r in local["recipients"].values()]
    for name in ("Pending", "Cancelling", "Cancelled", "Processed"):
        if name in states:
            return name
    return "Failed" if set(states) == {"Failed"} else "Delivered" if set(states) == {"Delivered"} else "Sent"

EVENTS = {"Sent": "sms:sent", "Delivered": "sms:delivered", "Failed": "sms:failed", "Cancelled": "sms:cancelled"}

def update(message_id, number, to, error=None):
    """MessagesService.updateState: one recipient (or all), then a state report and the webhooks."""
    with app.lock:
        local = state["messages"][message_id]
        numbers = [number] if number else list(local["recipients"])
        for n in numbers:
            if local["recipients"][n]["state"] != "Failed":
                local["recipients"][n] = {"state": to, "error": error if to == "Failed" else None}
        local["state"] = derive(local)
        local["states"].setdefault(local["state"], now_ms())
        silent = state["mode"] == "silent"
    if silent:
        return
    report(message_id)
    for n in numbers if to in EVENTS else []:
        head = {"Sent": {"partsCount": local["parts"], "sentAt": iso()}, "Delivered": {"deliveredAt": iso()},
                "Failed": {"failedAt": iso(), "reason": error or "Unknown"}, "Cancelled": {"cancelledAt": iso()}}[to]
        emit(EVENTS[to], nonnull(head | {"messageId": message_id, "sender": None, "recipient": n,
                                         "simNumber": local["simNumber"], "phoneNumber": n}))

def cancel(message_id):
    """MessagesService.cancelMessage: only a message still Pending here is cancelled."""
    with app.lock:
        local = state["messages"].get(message_id)
    if local is not None and local["state"] == "Pending":
        update(message_id, None, "Cancelled")

def report(message_id):
    def item():
        local = state["messages"][message_id]
        return {"id": message_id, "state": local["state"],
                "recipients": [nonnull({"phoneNumber": n, "state": r["state"], "error": r["error"]})
                               for n, r in local["recipients"].items()],
                "states": {name: iso(at) for name, at in local["states"].items()}}
    with app.lock:
        times = 0 if state["mode"] == "silent" else state["repeat"]
    for _ in range(times):
        send_state(item)

def send_state(item):
    """SendStateWorker: PATCH /message [{...}] with the message as it is at that moment; 11 tries."""
    for attempt in range(11):
        with app.lock:
            reg, body = state["registration"], [item()]
            state["patches"] += 1
        if reg is None or call("PATCH", state["server"] + "/message", body, reg["token"])[0]:
            return
        wait(10 * 2 ** attempt)

# Webhooks (WebHooksService.emit, WebhookQueueProcessorWorker, PayloadSingingPlugin)

def emit(event, payload):
    with app.lock:
        reg, times = state["registration"], state["repeat"]
        hooks = [h for h in state["webhooks"] if h["event"] == event] if reg else []
    for hook in hooks:
        body = gson({"id": nanoid(), "webhookId": hook["id"], "event": event, "deviceId": reg["id"], "payload": payload})
        for _ in range(times):
            threading.Thread(target=post_webhook, args=(hook["url"], body), daemon=True).start()

def post_webhook(url, body):
    for attempt in range(max(1, state["retry_count"])):
        online.wait()
        timestamp = str(int(time.time()))
        with app.lock:
            state["signing_key"] = state["signing_key"] or nanoid(8)  # WebhooksSettings.signingKey
            key = state["signing_key"]
            state["webhooks_posted"] += 1
        signature = hmac.new(key.encode(), body + timestamp.encode(), hashlib.sha256).hexdigest()
        if call("POST", url, body, headers={"X-Signature": signature, "X-Timestamp": timestamp})[0]:
            return
        wait(5 * 2 ** attempt)

# Control routes

@app.route("GET", "/control/state")
def control_state(request):
    with app.lock:
        reg = state["registration"] or {}
        return Reply(200, {"registered": bool(reg), "device_id": reg.get("id"), "login": reg.get("login"),
                           "password": reg.get("password"), "online": online.is_set()}
                     | {k: state[k] for k in ("register_status", "connected", "connects", "pulls", "sse_events",
                                              "last_error", "order")})

@app.route("POST", "/control/register")
def control_register(request):
    ok, status = register(request.json().get("token") or state["private_token"], need_network=False)
    return Reply(200, {"status": status, "registered": ok, "device_id": (registration() or {}).get("id")})

@app.route("POST", "/control/(?P<what>disconnect|connect|restart)")
def control_network(request):
    """Offline (no SSE, no polls, calls wait), online again, or the app stopped and started again."""
    what = request.params["what"]
    if what == "connect":
        online.set()
        kick.set()
    else:
        (online if what == "disconnect" else sse_on).clear()
        abort()
        if what == "restart":
            start_app()
    return Reply(200, {"online": online.is_set()})

@app.route("POST", "/control/(?P<what>mode|recipient-states|repeat-reports)")
def control_behaviour(request):
    body, what = request.json(), request.params["what"]
    if what == "mode" and body.get("mode") not in ("report", "silent", "fail"):
        return Reply(400, {"message": "mode must be report, silent or fail"})
    with app.lock:
        if what == "mode":
            state.update(mode=body["mode"], reason=body.get("reason") or SEND_FAILURE)
        elif what == "recipient-states":
            state["overrides"] = dict(body)
        else:
            state["repeat"] = max(1, int(body.get("times", 1)))
        return Reply(200, {k: state[k] for k in ("mode", "reason", "overrides", "repeat")})

@app.route("POST", "/control/inbound")
def control_inbound(request):
    body = request.json()
    message_id = format(zlib.crc32(f"{body['from']}|{body['body']}|{now_ms()}".encode()), "x")
    payload = {"message": body["body"], "receivedAt": iso(), "messageId": message_id, "sender": body["from"],
               "simNumber": 1, "phoneNumber": body["from"]}  # recipient (the SIM's own number) unknown: null
    emit("sms:received", payload)
    return Reply(200, payload)

@app.route("POST", "/control/ping")
def control_ping(request):
    """PingForegroundService: a PingEvent is a system:ping webhook and a pull."""
    checks = {"messages:failed": {"status": "pass", "observedValue": 0, "observedUnit": "messages",
                                  "description": "Failed messages for last hour"}}
    payload = {"health": {"version": VERSION, "releaseId": 1, "status": "pass", "checks": checks}}
    emit("system:ping", payload)
    pull_now.set()
    return Reply(200, payload)

@app.route("GET", "/control/(?P<what>sent|stats|calls|webhooks)")
def control_lists(request):
    keys = {"stats": ("pulls", "duplicate_pulls", "patches", "webhooks_posted"),
            "webhooks": ("webhooks", "signing_key", "retry_count")}.get(request.params["what"])
    with app.lock:
        return Reply(200, {k: state[k] for k in keys} if keys else list(state[request.params["what"]]))

class Announcing:
    """stdout: its first flush is App.serve's "listening on" line, and only then does the dialing start."""

    def __init__(self, out):
        self.out = out

    def flush(self):
        self.out.flush()
        announced.set()

    def __getattr__(self, name):
        return getattr(self.out, name)

def boot():
    announced.wait()
    for loop in (sse_loop, pull_loop):
        threading.Thread(target=loop, daemon=True).start()
    start_app()

def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--server", required=True, help="the base, e.g. http://127.0.0.1:8080/api/mobile/v1")
    parser.add_argument("--token", required=True, help="the server's private registration token")
    parser.add_argument("--listen", required=True)
    parser.add_argument("--reconnect-scale", type=float, default=1.0)
    parser.add_argument("--poll-seconds", type=float, default=900)
    parser.add_argument("--step-ms", type=float, default=20)
    parser.add_argument("--name", default="FakeManufacturer/fakephone")
    args = parser.parse_args()
    state.update(server=args.server.rstrip("/"), private_token=args.token, name=args.name,
                 scale=args.reconnect_scale, poll=args.poll_seconds, step=args.step_ms / 1000)
    sys.stdout = Announcing(sys.stdout)
    threading.Thread(target=boot, daemon=True).start()
    app.serve(args.listen)

if __name__ == "__main__":
    main()
