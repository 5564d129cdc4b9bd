"""The Python client against a live msgline (scripts/clients test starts it).

Needs MSGLINE_URL (the server's root) and MSGLINE_KEY (a key of every scope), and the client
installed (pip install clients/python). Exits 1 on the first check that fails.
"""

import json
import os
import queue
import secrets
import sys
import threading
import time
from collections.abc import Callable
from http import HTTPStatus
from http.client import HTTPMessage
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from msgline_client import AuthenticatedClient, WebhookVerificationError, verify_webhook
from msgline_client.api.messages import get_message, list_messages, send_message
from msgline_client.api.webhooks import create_webhook
from msgline_client.models import CreateWebhook, Error, ListMessage, Message, SendMessage, Sent, Webhook
from msgline_client.types import UNSET

TO = "+12015550123"  # this program's recipient; the TypeScript test uses another
RUN = secrets.token_hex(4)


class Failed(Exception):
    pass


def check(condition: bool, what: str) -> None:
    if not condition:
        raise Failed(what)
    passed(what)


def passed(what: str) -> None:
    print(f"  ok: {what}", flush=True)


def send(client: AuthenticatedClient, body: str, key: str):
    return send_message.sync_detailed(client=client, body=SendMessage(to=TO, body=body), idempotency_key=key)


def idempotent_send(client: AuthenticatedClient) -> Sent:
    key = f"py-order-{RUN}"
    first = send(client, "Your order has shipped", key)
    check(
        first.status_code == HTTPStatus.ACCEPTED,
        f"POST /messages with Idempotency-Key answers 202 ({first.status_code})",
    )
    sent = first.parsed
    check(isinstance(sent, Sent) and not sent.duplicate, "the first send is not a duplicate")
    again = send(client, "Your order has shipped", key)
    check(again.status_code == HTTPStatus.OK, f"the same request with the same key answers 200 ({again.status_code})")
    check(isinstance(again.parsed, Sent) and again.parsed.duplicate, "the replay says duplicate: true")
    check(again.parsed.message.id == sent.message.id, f"the replay is the same message ({sent.message.id})")
    check(again.headers.get("Idempotent-Replayed") == "true", "the replay carries Idempotent-Replayed: true")
    other = send(client, "Another text", key)
    check(
        other.status_code == HTTPStatus.CONFLICT
        and isinstance(other.parsed, Error)
        and other.parsed.error == "idempotency_key_reused",
        "the same key with another request is 409 idempotency_key_reused",
    )
    return sent


def read_back(client: AuthenticatedClient, sent: Sent) -> None:
    message = get_message.sync(client=client, id=sent.message.id)
    check(isinstance(message, Message), "GET /messages/{id} answers the message")
    check(
        message.id == sent.message.id and message.body == "Your order has shipped" and message.to == TO,
        "it has the id, text and recipient that were sent",
    )


def list_with_cursor(client: AuthenticatedClient, sent: Sent) -> None:
    expected = {sent.message.id}
    for n in range(4):
        more = send(client, f"Update {n + 1}", f"py-update-{RUN}-{n}")
        check(more.status_code == HTTPStatus.ACCEPTED and isinstance(more.parsed, Sent), f"send {n + 2} of 5 accepted")
        expected.add(more.parsed.message.id)
    contact_id = sent.message.contact_id
    check(isinstance(contact_id, str), "the message names its contact")
    seen: list[str] = []
    cursor = UNSET
    pages = 0
    while True:
        page = list_messages.sync(client=client, contact_id=contact_id, limit=2, cursor=cursor)
        check(isinstance(page, ListMessage), f"GET /messages?limit=2 page {pages + 1}")
        pages += 1
        check(len(page.data) <= 2, f"page {pages} has at most 2 messages ({len(page.data)})")
        seen.extend(item.id for item in page.data)
        if not isinstance(page.next_cursor, str):
            break
        if pages >= 10:
            raise Failed("the cursor does not end")
        cursor = page.next_cursor
    check(len(seen) == len(set(seen)), f"no message twice across {pages} pages")
    check(set(seen) == expected, f"all {len(expected)} messages seen, following next_cursor")


class Receiver(BaseHTTPRequestHandler):
    deliveries: "queue.Queue[tuple[HTTPMessage, bytes]]" = queue.Queue()

    def do_POST(self) -> None:  # noqa: N802 (http.server's name)
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))  # the raw bytes
        self.deliveries.put((self.headers, body))
        self.send_response(204)
        self.end_headers()

    def log_message(self, format: str, *args: object) -> None:
        pass


def webhook(client: AuthenticatedClient) -> None:
    server = ThreadingHTTPServer(("127.0.0.1", 0), Receiver)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}/msgline"
    try:
        created = create_webhook.sync(client=client, body=CreateWebhook(url=url, events=["messaging.message.*"]))
        check(isinstance(created, Webhook) and isinstance(created.secret, str), "POST /webhooks answers its secret")
        secret = created.secret
        sent = send(client, "Webhook, please", f"py-webhook-{RUN}")
        check(sent.status_code == HTTPStatus.ACCEPTED and isinstance(sent.parsed, Sent), "a send after registering")
        message_id = sent.parsed.message.id
        deadline = time.monotonic() + 30
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise Failed("no event about the send arrived within 30 s")
            try:
                headers, body = Receiver.deliveries.get(timeout=remaining)
            except queue.Empty:
                continue
            # Every delivery must verify, this send's or not.
            event = verify_webhook(secret, headers, body)
            if event["data"].get("message", {}).get("id") == message_id:
                break
        passed(f"{event['type']} of {message_id} arrived; verify_webhook accepts its signature")
        check(event["id"] == headers["webhook-id"], "the event's id is its webhook-id")

        tampered = body.replace(message_id.encode(), b"msg_forged")
        check(tampered != body, "a tampered copy of the body")
        rejected(lambda: verify_webhook(secret, headers, tampered), "the tampered body")
        rejected(lambda: verify_webhook("whsec_" + "A" * 32, headers, body), "another secret")
        timestamp = int(headers["webhook-timestamp"])
        rejected(lambda: verify_webhook(secret, headers, body, now=timestamp + 301), "a timestamp 301 s old")
        rotation = {
            "Webhook-Id": headers["webhook-id"],
            "Webhook-Timestamp": headers["webhook-timestamp"],
            "Webhook-Signature": f"v1,{'A' * 43}= {headers['webhook-signature']}",
        }
        verify_webhook(secret, rotation, body)
        passed("two signatures (a rotation), one of them right, in a dict of other-case names: accepted")
    finally:
        server.shutdown()


def rejected(verify: Callable[[], object], what: str) -> None:
    try:
        verify()
    except WebhookVerificationError as error:
        passed(f"verify_webhook refuses {what} ({error})")
        return
    raise Failed(f"verify_webhook accepted {what}")


def main() -> int:
    client = AuthenticatedClient(base_url=os.environ["MSGLINE_URL"], token=os.environ["MSGLINE_KEY"])
    try:
        with client:
            sent = idempotent_send(client)
            read_back(client, sent)
            list_with_cursor(client, sent)
            webhook(client)
    except Failed as failure:
        print(f"FAILED: {failure}", file=sys.stderr)
        return 1
    except Exception as error:  # anything unexpected fails the run too, with its cause
        print(f"FAILED: {type(error).__name__}: {error}", file=sys.stderr)
        return 1
    print(json.dumps({"python_client": "passed", "run": RUN}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
