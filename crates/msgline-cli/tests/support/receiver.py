#!/usr/bin/env python3
"""A webhook receiver for msgline's tests: a real HTTP server in its own process.

It records every delivery (path, headers, raw body, arrival time), answers as it is told, and
checks Standard Webhooks signatures with code that has nothing to do with msgline's own: the
`standardwebhooks` package when it is installed, and always Python's hmac/hashlib/base64.

    python3 receiver.py [PORT]      prints {"listening": "127.0.0.1:PORT", "verifiers": [...]}

Control API, under /_control:
    POST /_control/script    {"responses": [{"status": 500}, {"status": 429, "headers": {"Retry-After": "2"}}],
                              "default": {"status": 200, "body": "ok", "delay_ms": 0}}
                             answers to give, in order, then the default for every later delivery
    GET  /_control/received  every delivery so far, oldest first
    GET  /_control/at_once   {"most": N}: the most deliveries it was answering at the same time
    POST /_control/verify    {"index": 0, "secret": "whsec_...", "tamper": false}
                             verifies delivery `index` (with one body byte changed when tampering)
Every other POST is a delivery.
"""

import base64
import hashlib
import hmac
import json
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

try:
    from standardwebhooks.webhooks import Webhook as StandardWebhook
except ImportError:  # the stdlib check below still runs
    StandardWebhook = None

TOLERANCE_SECONDS = 300

lock = threading.Lock()
received = []
script = {"responses": [], "default": {"status": 200, "body": "ok"}}
at_once = {"now": 0, "most": 0}


def verify_stdlib(secret, headers, body):
    """Standard Webhooks verification written from the specification."""
    msg_id, timestamp, signatures = (headers.get(h) for h in ("webhook-id", "webhook-timestamp", "webhook-signature"))
    if not (msg_id and timestamp and signatures):
        raise ValueError("missing webhook headers")
    if abs(time.time() - int(timestamp)) > TOLERANCE_SECONDS:
        raise ValueError("timestamp outside the tolerance")
    key = base64.b64decode(secret.removeprefix("whsec_"))
    expected = hmac.new(key, f"{msg_id}.{timestamp}.".encode() + body, hashlib.sha256).digest()
    for signature in signatures.split(" "):
        version, _, value = signature.partition(",")
        if version == "v1" and hmac.compare_digest(base64.b64decode(value), expected):
            return
    raise ValueError("no matching signature")


def verify_package(secret, headers, body):
    StandardWebhook(secret).verify(body, headers)


VERIFIERS = {"stdlib": verify_stdlib}
if StandardWebhook is not None:
    VERIFIERS["standardwebhooks"] = verify_package


class Handler(BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def reply(self, status, body=b"", headers=None, content_type="application/json"):
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(body)

    def read_body(self):
        return self.rfile.read(int(self.headers.get("Content-Length") or 0))

    def do_GET(self):
        if self.path == "/_control/received":
            with lock:
                self.reply(200, json.dumps(received).encode())
        elif self.path == "/_control/at_once":
            with lock:
                self.reply(200, json.dumps({"most": at_once["most"]}).encode())
        else:
            self.reply(404)

    def do_POST(self):
        body = self.read_body()
        if self.path == "/_control/script":
            with lock:
                script.update(json.loads(body))
            return self.reply(200, b"{}")
        if self.path == "/_control/verify":
            return self.reply(200, json.dumps(self.verify(json.loads(body))).encode())
        with lock:
            received.append({
                "path": self.path,
                "headers": {k.lower(): v for k, v in self.headers.items()},
                "body": body.decode("utf-8"),
                "at": time.time(),
            })
            answer = script["responses"].pop(0) if script["responses"] else script["default"]
            at_once["now"] += 1
            at_once["most"] = max(at_once["most"], at_once["now"])
        time.sleep(answer.get("delay_ms", 0) / 1000)
        # A post stops counting before its answer is written: once the sender has read the
        # answer it may start its next post, and that one can arrive here before this thread
        # would get the lock back, which would count one post more than the sender has open.
        with lock:
            at_once["now"] -= 1
        try:
            self.reply(answer.get("status", 200), answer.get("body", "").encode(), answer.get("headers"), "text/plain")
        except (BrokenPipeError, ConnectionResetError):
            pass  # the sender stopped listening (it was killed, or read all it wanted)

    def verify(self, request):
        with lock:
            delivery = received[request["index"]]
        body = bytearray(delivery["body"].encode("utf-8"))
        if request.get("tamper"):
            body[len(body) // 2] ^= 0x01
        results = {}
        for name, check in VERIFIERS.items():
            try:
                check(request["secret"], delivery["headers"], bytes(body))
                results[name] = {"valid": True}
            except Exception as error:  # every verifier failure is a refusal
                results[name] = {"valid": False, "error": str(error)}
        return {"results": results}


class Server(ThreadingHTTPServer):
    # socketserver listens with a backlog of 5: connections beyond it wait for the client's SYN
    # to be sent again (1 s, 3 s, 7 s, ...), and on a loaded machine a post could then run past
    # msgline's 15 s timeout after the request had arrived here, and be delivered again. A web
    # server's backlog is in the hundreds (nginx 511, Linux's default somaxconn 4096).
    request_queue_size = 512


def main():
    port = int(sys.argv[1]) if len(sys.argv) > 1 else 0
    server = Server(("127.0.0.1", port), Handler)
    print(json.dumps({"listening": f"127.0.0.1:{server.server_address[1]}", "verifiers": sorted(VERIFIERS)}), flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
