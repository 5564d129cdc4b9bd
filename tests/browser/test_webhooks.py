"""Webhooks: register an endpoint with the event picker, read a failed delivery's answer in the
log, and replay it once the receiver is fixed."""

import http.server
import threading

from playwright.sync_api import expect

from conftest import free_port, shot, sign_in


class Receiver(http.server.BaseHTTPRequestHandler):
    answer = 500

    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        self.send_response(Receiver.answer)
        self.end_headers()
        self.wfile.write(b"receiver says no" if Receiver.answer >= 400 else b"ok")

    def log_message(self, *args):
        pass


def test_a_failed_delivery_is_shown_with_its_answer_and_replayed_once_fixed(app, page):
    port = free_port()
    server = http.server.HTTPServer(("127.0.0.1", port), Receiver)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        sign_in(page, app)
        page.get_by_role("link", name="Webhooks").click()
        page.get_by_text("New endpoint").click()
        page.get_by_label("URL").fill(f"http://127.0.0.1:{port}/hook")
        page.get_by_label("messaging.message.received").check()
        page.get_by_role("button", name="Register endpoint").click()
        expect(page.locator("#new-secret")).to_contain_text("whsec_")
        page.get_by_role("link", name="Its deliveries").click()

        app.control("/inbound", {"from": "+12015550144", "body": "hello hooks"})
        for _ in range(40):
            page.reload()
            if page.get_by_text("receiver says no").count():
                break
            page.wait_for_timeout(500)
        expect(page.get_by_text("receiver says no").first).to_be_visible()

        Receiver.answer = 200
        page.get_by_label("Events of the last").select_option("1")
        page.get_by_role("button", name="Replay").click()
        expect(page.get_by_role("status")).to_contain_text("queued again")
        for _ in range(40):
            page.reload()
            if page.locator("td span.status-delivered", has_text="200").count():
                break
            page.wait_for_timeout(500)
        expect(page.locator("td span.status-delivered", has_text="200").first).to_be_visible()
        shot(page, "webhook")
    finally:
        server.shutdown()
