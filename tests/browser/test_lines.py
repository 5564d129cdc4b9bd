"""Lines: health, today's sends against the budget, pause and resume, the sending policy; the
overview lists a line that stopped by itself."""

import time

from playwright.sync_api import expect

from conftest import LINE, shot, sign_in


def line_view(app):
    return app.api("GET", f"/lines/{app.line_id}")


def test_an_owner_pauses_a_line_sends_wait_and_resuming_sends_them(app, page):
    sign_in(page, app)
    page.get_by_role("link", name="Lines").click()
    expect(page.get_by_role("heading", name=LINE)).to_be_visible()
    expect(page.get_by_text("active", exact=True)).to_be_visible()
    page.get_by_role("button", name=f"Pause {LINE}").click()
    expect(page.get_by_text("paused", exact=True)).to_be_visible()
    assert line_view(app)["health"] == "paused"

    sent_before = len(app.sent())
    queued = app.api("POST", "/messages", {"to": "+12015550177", "body": "held while paused"})
    time.sleep(1.0)
    assert len(app.sent()) == sent_before
    page.reload()
    expect(page.get_by_text("Waiting: 1")).to_be_visible()
    shot(page, "lines-paused")

    page.get_by_role("button", name=f"Resume {LINE}").click()
    expect(page.get_by_text("active", exact=True)).to_be_visible()
    deadline = time.time() + 15
    while time.time() < deadline and not any(s["id"] == queued["message"]["id"] for s in app.sent()):
        time.sleep(0.2)
    assert any(s["id"] == queued["message"]["id"] for s in app.sent())


def test_an_owner_sets_the_policy_and_a_bad_value_is_named(app, page):
    sign_in(page, app)
    page.goto(f"{app.base}/console/lines")
    page.get_by_text("Sending policy").click()
    page.get_by_label("max_per_day").fill("500")
    page.get_by_role("button", name=f"Save the policy of {LINE}").click()
    expect(page.get_by_role("meter")).to_be_visible()
    expect(page.get_by_text("of 500")).to_be_visible()
    assert line_view(app)["policy"]["max_per_day"] == 500
    shot(page, "lines-policy")

    page.get_by_text("Sending policy").click()
    page.get_by_label("max_per_hour").fill("lots")
    page.get_by_role("button", name=f"Save the policy of {LINE}").click()
    expect(page.get_by_role("alert")).to_contain_text("policy.max_per_hour")
    assert line_view(app)["policy"]["max_per_hour"] is None

    # Back to no limit, for the other tests.
    page.goto(f"{app.base}/console/lines")
    page.get_by_text("Sending policy").click()
    page.get_by_label("max_per_day").fill("")
    page.get_by_label("max_per_hour").fill("")
    page.get_by_role("button", name=f"Save the policy of {LINE}").click()
    assert line_view(app)["policy"]["max_per_day"] is None


def test_a_flagged_line_is_listed_on_the_overview_until_it_is_resumed(app, page):
    app.control("/mode", {"blocked": True})
    try:
        app.api("POST", "/messages", {"to": "+12015550178", "body": "refused by a blocked account"})
        deadline = time.time() + 15
        while time.time() < deadline and line_view(app)["health"] != "flagged":
            time.sleep(0.2)
        assert line_view(app)["health"] == "flagged"
    finally:
        app.control("/mode", {"blocked": False})
    sign_in(page, app)
    attention = page.get_by_role("region", name="Needs attention")
    expect(attention).to_contain_text("flagged")
    shot(page, "overview-flagged")
    page.get_by_role("link", name="Lines").click()
    page.get_by_role("button", name=f"Resume {LINE}").click()
    expect(page.get_by_text("active", exact=True)).to_be_visible()
    page.get_by_role("link", name="Overview").click()
    expect(page.get_by_role("region", name="Needs attention")).not_to_contain_text("flagged")


def test_a_member_sees_the_lines_but_cannot_change_them(app, page):
    app.cli("admin", "staff", "create", "--org", app.org_id, "--email", "lines-member@example.com", "--role", "member",
            "--password-stdin", stdin="member's long password")
    sign_in(page, app, "lines-member@example.com", "member's long password")
    page.get_by_role("link", name="Lines").click()
    expect(page.get_by_role("heading", name=LINE)).to_be_visible()
    expect(page.get_by_role("button", name=f"Pause {LINE}")).to_have_count(0)
