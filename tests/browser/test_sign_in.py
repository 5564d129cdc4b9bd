"""Signing in and out, and what a browser refuses or is refused."""

import http.server
import threading

from playwright.sync_api import expect

from conftest import free_port, shot, sign_in


def test_an_owner_signs_in_sees_the_overview_and_signs_out(app, page):
    page.goto(f"{app.base}/")
    expect(page).to_have_url(f"{app.base}/console/sign-in")
    shot(page, "sign-in")
    sign_in(page, app)
    expect(page.get_by_role("heading", name="Overview")).to_be_visible()
    expect(page.get_by_role("link", name="Overview")).to_be_visible()
    expect(page.get_by_text("+12015550100")).to_be_visible()
    shot(page, "overview")
    page.get_by_role("button", name="Sign out").click()
    expect(page).to_have_url(f"{app.base}/console/sign-in")
    page.goto(f"{app.base}/console")
    expect(page).to_have_url(f"{app.base}/console/sign-in")


def test_a_wrong_password_is_refused_without_saying_whether_the_email_exists(app, page):
    sign_in(page, app, password="not the owner's password")
    alert = page.get_by_role("alert")
    expect(alert).to_have_text("The email or the password is not right.")
    sign_in(page, app, email="nobody@example.com", password="not the owner's password")
    expect(page.get_by_role("alert")).to_have_text("The email or the password is not right.")


def test_a_form_posted_from_another_site_is_refused_and_the_session_lives_on(app, page):
    sign_in(page, app)
    expect(page.get_by_role("heading", name="Overview")).to_be_visible()
    # A page on another site (localhost is another site than 127.0.0.1) that posts a sign-out.
    attack = (f'<form id="f" method="post" action="{app.base}/console/sign-out">'
              '<input name="csrf" value="guess"></form><button id="go" form="f">go</button>').encode()

    class Attacker(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.end_headers()
            self.wfile.write(attack)

        def log_message(self, *args):
            pass

    port = free_port()
    server = http.server.HTTPServer(("127.0.0.1", port), Attacker)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        page.goto(f"http://localhost:{port}/")
        with page.expect_navigation():
            page.click("#go")
        assert "/console/sign-out" in page.url
        expect(page.get_by_role("heading", name="Refused")).to_be_visible()
    finally:
        server.shutdown()
    page.goto(f"{app.base}/console")
    expect(page.get_by_role("heading", name="Overview")).to_be_visible()
