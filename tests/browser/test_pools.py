"""Pools: an owner makes a pool of the organisation's lines, a send through it goes from its line,
a wrong form names the field at fault, the pool changes and is deleted; a member has no Pools page."""

import time

from playwright.sync_api import expect

from conftest import LINE, shot, sign_in


def pools(app):
    return app.api("GET", "/pools")["data"]


def test_an_owner_makes_a_pool_sends_through_it_changes_and_deletes_it(app, page):
    sign_in(page, app)
    page.get_by_role("link", name="Pools").click()
    expect(page.get_by_role("heading", name="Pools", exact=True)).to_be_visible()

    # No line ticked: the form says which field is wrong, and nothing is made.
    page.get_by_label("Name").fill("Support numbers")
    page.get_by_role("button", name="Create pool").click()
    expect(page.get_by_role("alert")).to_contain_text("line_ids")
    assert pools(app) == []

    page.get_by_label("Name").fill("Support numbers")
    page.get_by_label(LINE).check()
    page.get_by_label("Failover after (seconds)").fill("120")
    page.get_by_role("button", name="Create pool").click()
    expect(page.get_by_role("heading", name="Support numbers")).to_be_visible()
    section = page.get_by_role("region", name="Support numbers")
    expect(section).to_contain_text(LINE)
    expect(section).to_contain_text("active")
    expect(section).to_contain_text("Failover after 120 seconds")
    shot(page, "pools")
    [pool] = pools(app)
    assert pool["name"] == "Support numbers" and pool["line_ids"] == [app.line_id]
    assert pool["failover_after_seconds"] == 120

    sent = app.api("POST", "/messages", {"to": "+12015550181", "body": "through the pool", "pool_id": pool["id"]})
    assert sent["message"]["line_id"] == app.line_id
    deadline = time.time() + 15
    while time.time() < deadline and not any(s["id"] == sent["message"]["id"] for s in app.sent()):
        time.sleep(0.2)
    assert any(s["id"] == sent["message"]["id"] for s in app.sent())

    # A delay out of range is named and changes nothing.
    page.get_by_text("Change Support numbers").click()
    section.get_by_label("Failover after (seconds)").fill("2")
    page.get_by_role("button", name="Save Support numbers").click()
    expect(page.get_by_role("alert")).to_contain_text("failover_after_seconds")
    assert pools(app)[0]["failover_after_seconds"] == 120

    page.get_by_text("Change Support numbers").click()
    section.get_by_label("Name").fill("Front desk")
    section.get_by_label("Failover after (seconds)").fill("600")
    page.get_by_role("button", name="Save Support numbers").click()
    expect(page.get_by_role("heading", name="Front desk")).to_be_visible()
    assert pools(app)[0]["name"] == "Front desk" and pools(app)[0]["failover_after_seconds"] == 600

    page.get_by_role("button", name="Delete Front desk").click()
    expect(page.get_by_role("heading", name="Front desk")).to_have_count(0)
    assert pools(app) == []


def test_a_member_has_no_pools_page(app, page):
    app.cli("admin", "staff", "create", "--org", app.org_id, "--email", "pools-member@example.com", "--role", "member",
            "--password-stdin", stdin="member's long password")
    sign_in(page, app, "pools-member@example.com", "member's long password")
    expect(page.get_by_role("link", name="Lines")).to_be_visible()
    expect(page.get_by_role("link", name="Pools")).to_have_count(0)
    response = page.goto(f"{app.base}/console/pools")
    assert response.status == 403
