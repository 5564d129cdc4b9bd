"""Settings (the automatic replies) and Staff (invite, role, remove), as an owner."""

import time

from playwright.sync_api import expect

from conftest import shot, sign_in


def test_an_owner_sets_the_stop_reply_and_a_stop_gets_it(app, page):
    sign_in(page, app)
    page.get_by_role("link", name="Settings").click()
    page.get_by_label("STOP reply").fill("Browser Org: no more texts. Reply START to come back.")
    page.get_by_role("button", name="Save").click()
    expect(page.get_by_role("status")).to_have_text("Saved.")
    shot(page, "settings")
    app.control("/inbound", {"from": "+12015550133", "body": "STOP"})
    deadline = time.time() + 15
    while time.time() < deadline:
        if any(s.get("body", "").startswith("Browser Org: no more texts") for s in app.sent()):
            break
        time.sleep(0.2)
    else:
        raise AssertionError("the STOP reply set in the console was not sent")


def test_an_owner_invites_a_member_who_signs_in_and_is_signed_out_when_removed(app, page, browser):
    sign_in(page, app)
    page.get_by_role("link", name="Staff").click()
    page.get_by_text("Invite").first.click()
    page.get_by_label("Email").fill("new.member@example.com")
    page.get_by_label("Role").select_option("member")
    page.get_by_role("button", name="Invite", exact=True).click()
    link = page.locator("#invite-link").text_content()
    shot(page, "staff")

    other = browser.new_context()
    member = other.new_page()
    member.goto(link.replace(link.split("/console")[0], app.base))
    member.get_by_label("Password", exact=True).fill("the member's password")
    member.get_by_label("Password again").fill("the member's password")
    member.get_by_role("button", name="Set password and sign in").click()
    expect(member.get_by_role("heading", name="Overview")).to_be_visible()
    expect(member.get_by_role("link", name="Staff")).to_have_count(0)

    page.reload()
    page.get_by_role("button", name="Remove new.member@example.com").click()
    expect(page.get_by_role("cell", name="new.member@example.com")).to_have_count(0)
    member.reload()
    expect(member).to_have_url(f"{app.base}/console/sign-in")
    other.close()
