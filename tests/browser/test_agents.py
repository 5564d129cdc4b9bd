"""The no-code agent builder: build an agent, see it answer an inbound message through a fake
model, and read its run."""

import time

from playwright.sync_api import expect

from conftest import shot, sign_in


def test_an_agent_built_in_the_console_answers_an_inbound_message(app, page):
    sign_in(page, app)
    page.get_by_role("link", name="Agents").click()
    page.get_by_role("button", name="New agent").click()
    page.get_by_label("Name").fill("Ava")
    page.get_by_label("Instructions").fill("You answer questions about opening hours, briefly.")
    page.get_by_label("Line").select_option(label="+12015550100")
    expect(page.get_by_label("messaging_send")).to_be_checked()
    page.get_by_label("send_poll").uncheck()
    page.get_by_label("Enabled").check()
    page.get_by_role("button", name="Save").click()
    expect(page.get_by_role("heading", name="Ava")).to_be_visible()
    expect(page.get_by_label("send_poll")).not_to_be_checked()

    app.control("/inbound", {"from": "+12015550166", "body": "When do you open?"})
    deadline = time.time() + 20
    while time.time() < deadline:
        if any("we open at 9" in s.get("body", "") for s in app.sent()):
            break
        time.sleep(0.2)
    else:
        raise AssertionError("the agent did not answer")
    for _ in range(40):
        page.reload()
        if page.locator("article.run").count():
            break
        page.wait_for_timeout(250)
    expect(page.locator("article.run").first).to_contain_text("conversation")
    shot(page, "agent")
