"""What an attacker tries on the console: a member deleting what only an owner may, a session
cookie tossed in from another port of the same host, and a post whose Origin has another scheme."""

import json
import urllib.error
import urllib.request

import pytest
from playwright.sync_api import expect

from conftest import free_port, shot, sign_in

COOKIE = "msgline_session"
MEMBER = ("red.team.member@example.com", "the red team member's password")
ATTACKER = ("attacker.owner@example.com", "the attacker's long password")
# Each organisation writes to a customer of its own, so that its conversations page is its own.
VICTIM_CUSTOMER = ("+12015550152", "Victim Org customer")
ATTACKER_CUSTOMER = ("+12015550151", "Attacker Org customer")
ATTACKER_LINE = "+12015550159"


def call(app, key, method, path, body=None):
    """The API as `app.api`, with another organisation's key."""
    request = urllib.request.Request(f"{app.base}/api/v1/messaging{path}", method=method,
                                     data=None if body is None else json.dumps(body).encode(),
                                     headers={"Authorization": f"Bearer {key}", "Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=30) as response:
        return json.loads(response.read() or b"null")


def webhook_status(app, webhook_id):
    """The API's status for one endpoint of the suite's organisation: 200 while it exists."""
    try:
        found = app.api("GET", f"/webhooks/{webhook_id}")
    except urllib.error.HTTPError as error:
        return error.code
    assert found["id"] == webhook_id
    return 200


def csrf_of(page):
    """The session's CSRF token, from the sign-out form every signed-in page has."""
    return page.locator('form[action="/console/sign-out"] input[name="csrf"]').get_attribute("value")


def post_from_page(page, path, csrf):
    """A same-origin form post made by script in the page, its redirect not followed (an
    answer of 3xx comes back as `opaqueredirect` with status 0)."""
    return page.evaluate(
        """async ([path, csrf]) => {
            const response = await fetch(path, {
                method: "POST", redirect: "manual", credentials: "same-origin",
                headers: {"Content-Type": "application/x-www-form-urlencoded"},
                body: "csrf=" + encodeURIComponent(csrf)});
            return {status: response.status, type: response.type};
        }""",
        [path, csrf],
    )


@pytest.fixture(scope="module")
def member(app):
    app.cli("admin", "staff", "create", "--org", app.org_id, "--email", MEMBER[0], "--role", "member",
            "--password-stdin", stdin=MEMBER[1])
    return MEMBER


@pytest.fixture(scope="module")
def attacker(app):
    """Another organisation with its own owner and a conversation of its own (on a line whose
    bridge answers nothing: its message stays queued, and nothing reaches the suite's sim), and a
    conversation of the suite's organisation to tell the two apart."""
    org = app.cli("admin", "org", "create", "--name", "Attacker Org")
    app.cli("admin", "staff", "create", "--org", org["org_id"], "--email", ATTACKER[0], "--role", "owner",
            "--password-stdin", stdin=ATTACKER[1])
    app.cli("admin", "line", "create", "--e164", ATTACKER_LINE, "--kind", "dedicated", "--org", org["org_id"],
            "--bridge-url", f"http://127.0.0.1:{free_port()}", "--bridge-token", "sim_attacker")
    call(app, org["api_key"], "POST", "/contacts", {"phone": ATTACKER_CUSTOMER[0], "name": ATTACKER_CUSTOMER[1]})
    call(app, org["api_key"], "POST", "/messages",
         {"to": ATTACKER_CUSTOMER[0], "body": "Attacker Org's message", "channel": "sms"})
    app.api("POST", "/contacts", {"phone": VICTIM_CUSTOMER[0], "name": VICTIM_CUSTOMER[1]})
    app.api("POST", "/messages", {"to": VICTIM_CUSTOMER[0], "body": "Browser Org's message"})
    return {"org_id": org["org_id"], "email": ATTACKER[0], "password": ATTACKER[1]}


def attacker_token(browser, app, attacker):
    """A live session of the attacker's own, signed in in a browser context of theirs."""
    context = browser.new_context()
    try:
        page = context.new_page()
        sign_in(page, app, attacker["email"], attacker["password"])
        expect(page.get_by_role("heading", name="Overview")).to_be_visible()
        page.goto(f"{app.base}/console/conversations")
        # The setup is right: the attacker's session shows the attacker's organisation.
        expect(page.get_by_role("link", name=ATTACKER_CUSTOMER[1], exact=False)).to_be_visible()
        expect(page.get_by_role("link", name=VICTIM_CUSTOMER[1], exact=False)).to_have_count(0)
        tokens = [c["value"] for c in context.cookies() if c["name"] == COOKIE]
        assert len(tokens) == 1, context.cookies()
        return tokens[0]
    finally:
        context.close()


def toss(page, token):
    """What a page on another port of 127.0.0.1 can do: set a cookie for the host (cookies do
    not keep ports apart) at a path deeper than the console's own cookie, which the browser then
    sends first."""
    page.context.add_cookies([{"name": COOKIE, "value": token, "domain": "127.0.0.1",
                               "path": "/console/conversations"}])
    planted = [c for c in page.context.cookies() if c["name"] == COOKIE and c["value"] == token]
    assert [c["path"] for c in planted] == ["/console/conversations"], page.context.cookies()


def test_a_member_is_refused_the_deletion_of_a_webhook_endpoint(app, page, member):
    webhook = app.api("POST", "/webhooks", {"url": "https://example.com/hook", "events": ["*"]})
    try:
        sign_in(page, app, *member)
        expect(page.get_by_role("heading", name="Overview")).to_be_visible()
        expect(page.get_by_role("link", name="Webhooks")).to_have_count(0)
        answer = post_from_page(page, f"/console/webhooks/{webhook['id']}/delete", csrf_of(page))
        after = webhook_status(app, webhook["id"])
        assert answer["status"] == 403, f"the member's delete was answered {answer}; the endpoint's GET then: {after}"
        assert after == 200, "the endpoint was deleted by a member"
    finally:
        if webhook_status(app, webhook["id"]) == 200:
            app.api("DELETE", f"/webhooks/{webhook['id']}")


def test_an_owner_deletes_a_webhook_endpoint_the_same_way(app, page):
    webhook = app.api("POST", "/webhooks", {"url": "https://example.com/hook", "events": ["*"]})
    try:
        sign_in(page, app)
        expect(page.get_by_role("heading", name="Overview")).to_be_visible()
        answer = post_from_page(page, f"/console/webhooks/{webhook['id']}/delete", csrf_of(page))
        assert answer["type"] == "opaqueredirect" or answer["status"] < 400, answer
        assert webhook_status(app, webhook["id"]) == 404
    finally:
        if webhook_status(app, webhook["id"]) == 200:
            app.api("DELETE", f"/webhooks/{webhook['id']}")


def test_a_session_cookie_tossed_in_before_sign_in_is_expired_and_never_shows_its_organisation(
        app, page, browser, attacker):
    token = attacker_token(browser, app, attacker)
    toss(page, token)
    sign_in(page, app)
    expect(page.get_by_role("heading", name="Overview")).to_be_visible()
    left = [c for c in page.context.cookies() if c["value"] == token]
    page.goto(f"{app.base}/console/conversations")
    shot(page, "tossed-cookie-conversations")
    who = page.locator("header.top form.who span").text_content()
    assert not left, (f"after the victim's sign-in the browser still holds the attacker's session cookie {left}; "
                      f"/console/conversations then shows the session of {who!r}")
    assert who.startswith(app.owner[0]), who
    expect(page.get_by_role("link", name=VICTIM_CUSTOMER[1], exact=False)).to_be_visible()
    expect(page.get_by_role("link", name=ATTACKER_CUSTOMER[1], exact=False)).to_have_count(0)
    expect(page.get_by_text(attacker["email"])).to_have_count(0)


def test_a_session_cookie_tossed_in_after_sign_in_makes_two_sessions_which_are_refused_and_expired(
        app, page, browser, attacker):
    token = attacker_token(browser, app, attacker)
    sign_in(page, app)
    expect(page.get_by_role("heading", name="Overview")).to_be_visible()
    toss(page, token)
    response = page.goto(f"{app.base}/console/conversations")
    shot(page, "two-sessions")
    who = page.locator("header.top form.who span")
    who = who.text_content() if who.count() else None
    assert response.status == 400, f"two session cookies were answered {response.status}, as the session of {who!r}"
    expect(page.get_by_role("heading", name="Two sessions")).to_be_visible()
    expect(page.get_by_role("link", name=ATTACKER_CUSTOMER[1], exact=False)).to_have_count(0)
    expect(page.get_by_text(attacker["email"])).to_have_count(0)
    page.goto(f"{app.base}/console")
    expect(page).to_have_url(f"{app.base}/console/sign-in")


def test_a_post_whose_origin_has_another_scheme_is_refused_and_the_session_lives_on(app, page):
    sign_in(page, app)
    expect(page.get_by_role("heading", name="Overview")).to_be_visible()
    response = page.request.post(f"{app.base}/console/sign-out", headers={"Origin": f"https://127.0.0.1:{app.port}"},
                                 form={"csrf": csrf_of(page)}, max_redirects=0)
    assert response.status == 403, (f"a sign-out with Origin https://127.0.0.1:{app.port} was answered "
                                    f"{response.status} {response.headers.get('location', '')}")
    assert "<h1>Refused</h1>" in response.text()
    page.goto(f"{app.base}/console")
    expect(page.get_by_role("heading", name="Overview")).to_be_visible()


def test_a_post_whose_origin_is_the_consoles_own_signs_out(app, page):
    sign_in(page, app)
    expect(page.get_by_role("heading", name="Overview")).to_be_visible()
    response = page.request.post(f"{app.base}/console/sign-out", headers={"Origin": f"http://127.0.0.1:{app.port}"},
                                 form={"csrf": csrf_of(page)}, max_redirects=0)
    assert response.status in (302, 303), response.status
    assert response.headers["location"] == "/console/sign-in"
    page.goto(f"{app.base}/console")
    expect(page).to_have_url(f"{app.base}/console/sign-in")
