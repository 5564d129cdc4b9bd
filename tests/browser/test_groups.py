"""Groups: create one with participants, a name and an opening message; rename it, add and
remove a participant."""

from playwright.sync_api import expect

from conftest import shot, sign_in


def test_a_group_is_created_renamed_and_changed_from_the_console(app, page):
    sign_in(page, app)
    page.get_by_role("link", name="Groups").click()
    page.get_by_text("New group").click()
    page.get_by_label("Participants (one number per line)").fill("+12015550191\n+12015550192")
    page.get_by_label("Group name").fill("Launch team")
    page.get_by_label("Opening message").fill("Welcome to the launch team")
    page.get_by_role("button", name="Create group").click()
    expect(page.get_by_role("heading", name="Launch team")).to_be_visible()
    expect(page.get_by_text("created", exact=True)).to_be_visible()

    page.get_by_label("New name").fill("Launch crew")
    page.get_by_role("button", name="Rename").click()
    expect(page.get_by_role("status")).to_have_text("Done.")
    expect(page.get_by_role("heading", name="Launch crew")).to_be_visible()

    page.get_by_label("Add participant").fill("+12015550193")
    page.get_by_role("button", name="Add", exact=True).click()
    expect(page.get_by_role("status")).to_have_text("Done.")
    page.get_by_role("button", name="Remove +12015550191").click()
    expect(page.get_by_role("status")).to_have_text("Done.")
    expect(page.get_by_role("button", name="Remove +12015550193")).to_be_visible()
    expect(page.get_by_role("button", name="Remove +12015550191")).to_have_count(0)
    shot(page, "group")
    kinds = [s.get("kind") for s in app.sent()]
    assert kinds.count("group_change") >= 3, kinds
