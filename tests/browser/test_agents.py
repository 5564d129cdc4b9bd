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


def test_the_try_it_panel_talks_to_the_agent_without_sending_anything(app, page):
    sign_in(page, app)
    page.get_by_role("link", name="Agents").click()
    page.get_by_role("button", name="New agent").click()
    page.get_by_label("Name").fill("Rehearsal")
    page.get_by_label("Instructions").fill("You are being tried out before going live.")
    page.get_by_label("Line").select_option(label="+12015550100")
    # Not enabled: it is tried before it answers anyone.
    page.get_by_label("Enabled").uncheck()
    page.get_by_role("button", name="Save").click()
    expect(page.get_by_role("heading", name="Rehearsal")).to_be_visible()

    sent_before = len(app.sent())
    asked_before = len(app.model_asked())
    page.get_by_label("Say to the agent").fill("When do you open?")
    page.get_by_role("button", name="Try").click()
    panel = page.get_by_label("Try it", exact=True)
    expect(panel.get_by_label("You", exact=True)).to_have_text("When do you open?")
    expect(panel.get_by_label("Agent", exact=True)).to_have_text("Hi! This is Ava: we open at 9 every day.")

    # A second turn carries the first: the model reads the whole test conversation.
    page.get_by_label("Say to the agent").fill("And on Sunday?")
    page.get_by_role("button", name="Try").click()
    expect(panel.get_by_label("You", exact=True)).to_have_count(2)
    expect(panel.get_by_label("Agent", exact=True)).to_have_count(2)
    asked = app.model_asked()[asked_before:]
    assert len(asked) == 2
    said = [(m["role"], m["content"]) for m in asked[1]["messages"]]
    assert said[0][0] == "system" and "being tried out" in said[0][1]
    assert said[1:] == [("user", "When do you open?"), ("assistant", "Hi! This is Ava: we open at 9 every day."),
                        ("user", "And on Sunday?")]
    shot(page, "agent-try-it")

    # Nothing went out on the line and no run was recorded.
    time.sleep(0.5)
    assert len(app.sent()) == sent_before
    expect(page.get_by_text("No run yet")).to_be_visible()
