"""The console's browser suite: real `msgline serve` and `msgline sim` processes on a fresh
database (MSGLINE_BROWSER_DATABASE: sqlite or postgres), driven by Playwright in Debian's
Chromium. scripts/browser installs what it needs and runs it; screenshots go to
target/console-screenshots/<engine>/."""

import http.server
import json
import os
import random
import secrets
import shutil
import socket
import sqlite3
import subprocess
import tempfile
import threading
import time
import urllib.request

import pytest
from playwright.sync_api import sync_playwright

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TARGET = os.environ.get("CARGO_TARGET_DIR", os.path.join(ROOT, "target"))
BIN = os.environ.get("MSGLINE_BIN", os.path.join(TARGET, "debug", "msgline"))
ENGINE = os.environ.get("MSGLINE_BROWSER_DATABASE", "sqlite")
PG_URL = os.environ.get("MSGLINE_TEST_PG_URL", "postgres://postgres@127.0.0.1:5432/postgres")
CHROMIUM = os.environ.get("MSGLINE_CHROMIUM", "/usr/bin/chromium")
SHOTS = os.path.join(TARGET, "console-screenshots", ENGINE)
LINE = "+12015550100"


def free_port():
    """A free loopback port below the kernel's ephemeral range (32768 and up), so that no
    outgoing connection takes it before the server it is meant for binds it."""
    for _ in range(1000):
        port = random.randrange(20000, 32000)
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise RuntimeError("no free loopback port between 20000 and 32000")


def wait_for(url, seconds=30):
    deadline = time.time() + seconds
    while time.time() < deadline:
        try:
            urllib.request.urlopen(url, timeout=1)
            return
        except Exception:
            time.sleep(0.1)
    raise RuntimeError(f"{url} did not answer within {seconds} s")


class FakeModel(http.server.BaseHTTPRequestHandler):
    """An OpenAI-compatible chat-completions endpoint that always answers with one text, as a
    language model outside the project would; it records what it was asked."""

    answer = "Hi! This is Ava: we open at 9 every day."
    asked = []

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
        FakeModel.asked.append(body)
        reply = {"id": "chatcmpl-browser", "object": "chat.completion", "model": "fake",
                 "choices": [{"index": 0, "finish_reason": "stop",
                              "message": {"role": "assistant", "content": FakeModel.answer}}]}
        data = json.dumps(reply).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):
        pass


class Msgline:
    """A running server, its simulated line and an organisation with an owner."""

    def __init__(self):
        self.work = tempfile.mkdtemp(prefix="msgline-browser-")
        self.procs = []
        self.pg_db = None
        self.port = free_port()
        self.sim_port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.sim = f"http://127.0.0.1:{self.sim_port}"
        env = dict(os.environ)
        if ENGINE == "postgres":
            self.pg_db = f"msgline_browser_{os.getpid()}"
            subprocess.run(["psql", PG_URL, "-qc", f"CREATE DATABASE {self.pg_db}"], check=True)
            env["MSGLINE_DATABASE_URL"] = PG_URL.rsplit("/", 1)[0] + "/" + self.pg_db
        else:
            env["MSGLINE_DATABASE_URL"] = f"sqlite://{self.work}/msgline.db"
        env["MSGLINE_LISTEN"] = f"127.0.0.1:{self.port}"
        # Every test signs in as the same owner, and each console request counts against that
        # staff member's rate limit (100 a minute by default): tests that poll a page until the
        # line reports ran later tests into 429 pages. The limit itself is tested in Rust.
        env["MSGLINE_RATE_LIMIT_PER_MINUTE"] = "100000"
        env["MSGLINE_MEDIA_STORE"] = f"file://{self.work}/media"
        env.setdefault("MSGLINE_LOG", "warn")
        self.model = http.server.HTTPServer(("127.0.0.1", free_port()), FakeModel)
        threading.Thread(target=self.model.serve_forever, daemon=True).start()
        env["MSGLINE_AGENT_MODEL_URL"] = f"http://127.0.0.1:{self.model.server_address[1]}/v1"
        # The webhook tests register a receiver on this machine.
        env["MSGLINE_ALLOW_PRIVATE_TARGETS"] = "true"
        self.env = env
        self.cli("migrate", raw=True)
        org = self.cli("admin", "org", "create", "--name", "Browser Org")
        self.org_id, self.api_key = org["org_id"], org["api_key"]
        token = "sim_" + secrets.token_hex(16)
        line = self.cli("admin", "line", "create", "--e164", LINE, "--kind", "dedicated", "--org", self.org_id,
                        "--bridge-url", self.sim, "--bridge-token", token)
        self.line_id = line["line_id"]
        self.start([BIN, "sim", "--listen", f"127.0.0.1:{self.sim_port}", "--e164", LINE, "--token", token,
                    "--callback-url", f"{self.base}/api/v1/messaging/bridge/events",
                    "--callback-secret", line["bridge_secret"]], "sim.log")
        self.start([BIN, "serve"], "serve.log")
        wait_for(f"{self.base}/healthz")
        self.owner = ("owner@example.com", "owner's long password")
        self.cli("admin", "staff", "create", "--org", self.org_id, "--email", self.owner[0], "--role", "owner",
                 "--password-stdin", stdin=self.owner[1])

    def cli(self, *args, raw=False, stdin=None):
        out = subprocess.run([BIN, *args], env=self.env, input=stdin, capture_output=True, text=True)
        if out.returncode != 0:
            raise RuntimeError(f"msgline {' '.join(args)}: {out.stderr}")
        return out.stdout if raw else json.loads(out.stdout)

    def start(self, argv, log):
        with open(os.path.join(self.work, log), "w") as out:
            self.procs.append(subprocess.Popen(argv, env=self.env, stdout=out, stderr=subprocess.STDOUT))

    def api(self, method, path, body=None):
        request = urllib.request.Request(f"{self.base}/api/v1/messaging{path}", method=method,
                                         data=None if body is None else json.dumps(body).encode(),
                                         headers={"Authorization": f"Bearer {self.api_key}",
                                                  "Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=30) as response:
            return json.loads(response.read() or b"null")

    def control(self, path, body):
        request = urllib.request.Request(f"{self.sim}/control{path}", method="POST", data=json.dumps(body).encode(),
                                         headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.read()

    def sent(self):
        with urllib.request.urlopen(f"{self.sim}/control/sent", timeout=30) as response:
            return json.loads(response.read())

    def sql(self, statement):
        """Runs one statement on the server's database, as an operator would by hand (a test
        that moves a message's time back)."""
        if ENGINE == "postgres":
            subprocess.run(["psql", self.env["MSGLINE_DATABASE_URL"], "-qc", statement], check=True)
            return
        db = sqlite3.connect(os.path.join(self.work, "msgline.db"), timeout=10)
        try:
            with db:
                db.execute(statement)
        finally:
            db.close()

    def model_asked(self):
        return list(FakeModel.asked)

    def typing_shown(self):
        with urllib.request.urlopen(f"{self.sim}/control/typing", timeout=30) as response:
            return json.loads(response.read())["typing"]

    def close(self):
        self.model.shutdown()
        for proc in self.procs:
            proc.kill()
            proc.wait()
        if self.pg_db:
            subprocess.run(["psql", PG_URL, "-qc", f"DROP DATABASE IF EXISTS {self.pg_db} WITH (FORCE)"])
        shutil.rmtree(self.work, ignore_errors=True)


@pytest.fixture(scope="session")
def app():
    running = Msgline()
    yield running
    running.close()


@pytest.fixture(scope="session")
def browser():
    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        yield chromium
        chromium.close()


@pytest.fixture
def page(browser):
    context = browser.new_context(viewport={"width": 1200, "height": 900})
    page = context.new_page()
    page.set_default_timeout(15_000)
    yield page
    context.close()


def shot(page, name):
    os.makedirs(SHOTS, exist_ok=True)
    page.screenshot(path=os.path.join(SHOTS, f"{name}.png"), full_page=True)


def sign_in(page, app, email=None, password=None):
    email, password = email or app.owner[0], password or app.owner[1]
    page.goto(f"{app.base}/console/sign-in")
    page.get_by_label("Email").fill(email)
    page.get_by_label("Password").fill(password)
    page.get_by_role("button", name="Sign in").click()
