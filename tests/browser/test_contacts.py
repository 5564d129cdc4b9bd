"""Contacts and opt-outs: a STOP shows on the contact, an owner clears it, a name is edited."""

from playwright.sync_api import expect

from conftest import shot, sign_in

NUMBER = "+12015550188"


def test_a_stopped_number_shows_opted_out_until_its_opt_out_is_cleared(app, page):
    app.control("/inbound", {"from": NUMBER, "body": "STOP"})
    sign_in(page, app)
    page.get_by_role("link", name="Contacts").click()
    page.get_by_label("Search by name or number").fill("2015550188")
    page.get_by_role("button", name="Search").click()
    row = page.get_by_role("row", name=NUMBER)
    expect(row).to_contain_text("since")
    row.get_by_role("link").click()
    expect(page.get_by_text("This number texted STOP")).to_be_visible()

    page.get_by_label("Name").fill("Rosa <b>Diaz</b>")
    page.get_by_role("button", name="Save").click()
    expect(page.get_by_role("status")).to_have_text("Saved.")
    expect(page.get_by_role("heading", name="Rosa <b>Diaz</b>")).to_be_visible()
    shot(page, "contact")

    page.goto(f"{app.base}/console/opt-outs")
    shot(page, "opt-outs")
    page.get_by_role("button", name=f"Clear the opt-out of {NUMBER}").click()
    expect(page.get_by_text("No number has opted out.")).to_be_visible()
    page.goto(f"{app.base}/console/contacts?q=2015550188")
    expect(page.get_by_role("row", name=NUMBER)).to_contain_text("no")
