"""What the fakes of real device servers (fake_bluebubbles.py, fake_android_gateway.py) share:
a threaded HTTP server on a loopback port, JSON in and out, a small router, timers for a
message's lifecycle, and webhook deliveries posted from their own threads with retries and
optional deliberate repeats (a real device repeats a delivery when its answer is lost).
"""

import json
import re
import sys
import threading
import time
import urllib.error
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlparse


class Request:
    def __init__(self, handler, method):
        self.method = method
        url = urlparse(handler.path)
        self.path = url.path
        self.query = {k: v[0] for k, v in parse_qs(url.query, keep_blank_values=True).items()}
        self.headers = handler.headers
        length = int(handler.headers.get("Content-Length") or 0)
        self.raw = handler.rfile.read(length) if length else b""
        self.params = {}

    def json(self):
        if not self.raw:
            return {}
        return json.loads(self.raw)


class Reply:
    def __init__(self, status, body=None, headers=None):
        self.status = status
        self.body = body
        self.headers = headers or {}


class App:
    """Routes are (method, regex) -> function(request) -> Reply."""

    def __init__(self):
        self.routes = []
        self.lock = threading.RLock()
        self.repeat = 1

    def route(self, method, pattern):
        def register(function):
            self.routes.append((method, re.compile(f"^{pattern}$"), function))
            return function

        return register

    def dispatch(self, request):
        for method, pattern, function in self.routes:
            found = pattern.match(request.path)
            if found and method == request.method:
                request.params = found.groupdict()
                return function(request)
        return self.not_found(request)

    def control_routes(self, state, repeated, webhooks):
        """The control routes every fake has: repeat each webhook delivery, and what was sent
        (`state["sent"]`), counted (`state["sends"]`, and `state["repeated"]` reported as
        `repeated`) and registered (`webhooks()`)."""

        @self.route("POST", "/control/repeat-webhooks")
        def control_repeat(request):
            self.repeat = max(1, int(request.json().get("times", 1)))
            return Reply(200, {"times": self.repeat})

        @self.route("GET", "/control/sent")
        def control_sent(request):
            with self.lock:
                return Reply(200, list(state["sent"]))

        @self.route("GET", "/control/stats")
        def control_stats(request):
            with self.lock:
                return Reply(200, {"sends": state["sends"], repeated: state["repeated"]})

        @self.route("GET", "/control/webhooks")
        def control_webhooks(request):
            with self.lock:
                return Reply(200, webhooks())

    def not_found(self, request):
        return Reply(404, {"message": f"no route {request.method} {request.path}"})

    def serve(self, listen):
        host, port = listen.rsplit(":", 1)
        app = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def handle_any(self, method):
                request = Request(self, method)
                try:
                    reply = app.dispatch(request)
                except Exception as error:  # a bug in the fake shows as a 500 with its text
                    reply = Reply(500, {"message": f"fake error: {error!r}"})
                body = b""
                if reply.body is not None:
                    body = reply.body if isinstance(reply.body, bytes) else json.dumps(reply.body).encode()
                self.send_response(reply.status)
                if reply.body is not None and not isinstance(reply.body, bytes):
                    self.send_header("Content-Type", "application/json")
                for name, value in reply.headers.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_GET(self):
                self.handle_any("GET")

            def do_POST(self):
                self.handle_any("POST")

            def do_PUT(self):
                self.handle_any("PUT")

            def do_PATCH(self):
                self.handle_any("PATCH")

            def do_DELETE(self):
                self.handle_any("DELETE")

            def log_message(self, *args):
                pass

        server = ThreadingHTTPServer((host, int(port)), Handler)
        server.daemon_threads = True
        print(f"listening on http://{host}:{port}", flush=True)
        server.serve_forever()


def later(seconds, function, *args):
    timer = threading.Timer(seconds, function, args)
    timer.daemon = True
    timer.start()


def post_json(url, body_bytes, headers, attempts=3):
    """Posts a delivery; retries a refused or failed one a few times, as the device does."""
    for attempt in range(attempts):
        request = urllib.request.Request(url, data=body_bytes, method="POST")
        request.add_header("Content-Type", "application/json")
        for name, value in headers().items():
            request.add_header(name, value)
        try:
            with urllib.request.urlopen(request, timeout=10) as answer:
                if 200 <= answer.status < 300:
                    return True
        except urllib.error.HTTPError as error:
            log(f"delivery to {url.split('?')[0]} answered {error.code}: {error.read()[:300]!r}")
            if 400 <= error.code < 500 and error.code not in (408, 429):
                return False
        except OSError as error:
            log(f"delivery to {url.split('?')[0]} failed: {error}")
        time.sleep(0.2 * (attempt + 1))
    return False


def deliver(url, body_bytes, headers, times):
    """Posts the same delivery `times` times, one after the other, in a thread of its own."""

    def run():
        for _ in range(times):
            post_json(url, body_bytes, headers)

    threading.Thread(target=run, daemon=True).start()


def now_ms():
    return int(time.time() * 1000)


def log(text):
    print(text, file=sys.stderr, flush=True)
