"""Replies, edits and unsends in a thread: a reply shows what it answers and reaches the line as
one; the organisation's own iMessages are edited and unsent from the thread, within Apple's
windows, and their buttons go once the windows close."""

import re
import time

from playwright.sync_api import expect

from conftest import shot, sign_in


def start_thread(page, app, number, text):
    """Signs in, sends `text` to `number` and waits for it to be delivered: its article."""
    sign_in(page, app)
    page.get_by_role("link", name="Conversations").click()
    page.get_by_text("New conversation").click()
    page.get_by_label("To").fill(number)
    page.get_by_label("Message").fill(text)
    page.get_by_role("button", name="Send").click()
    expect(page.get_by_role("heading", name=number)).to_be_visible()
    sent = page.locator("article.message.out", has_text=text)
    expect(sent.locator("[data-status]")).to_have_text("delivered", timeout=20_000)
    return sent


def message_id(article):
    id = article.get_attribute("id")
    assert re.fullmatch(r"msg_[0-9A-Za-z]+", id), id
    return id


def line_got(app, matches, seconds=10):
    """The first entry of the line's sent log that `matches`, waiting for it."""
    deadline = time.time() + seconds
    while time.time() < deadline:
        found = [s for s in app.sent() if matches(s)]
        if found:
            return found[0]
        time.sleep(0.1)
    raise AssertionError(f"the line got nothing like that: {app.sent()[-5:]}")


def test_a_reply_from_the_thread_shows_what_it_answers_and_reaches_the_line_as_a_reply(app, page):
    number = "+12015550140"
    start_thread(page, app, number, "Your table is booked for 7")
    app.control("/inbound", {"from": number, "body": "Can we make it 8 instead?"})
    asked = page.locator("article.message.in", has_text="Can we make it 8 instead?")
    expect(asked).to_be_visible(timeout=10_000)

    # Reply sets the compose box to answer it; the × takes that back.
    asked.get_by_role("link", name="Reply").click()
    chip = page.locator("#compose .chip")
    expect(chip).to_have_text(re.compile("Replying to “Can we make it 8 instead\\?”"))
    page.get_by_role("link", name="Stop replying").click()
    expect(page.locator("#compose .chip")).to_have_count(0)

    page.locator("article.message.in", has_text="Can we make it 8 instead?").get_by_role("link", name="Reply").click()
    expect(chip).to_be_visible()
    page.get_by_label("Message").fill("Yes, 8 works")
    page.get_by_role("button", name="Send").click()
    reply = page.locator("article.message.out", has_text="Yes, 8 works")
    expect(reply.locator(".quote")).to_have_text("Reply to “Can we make it 8 instead?”")
    expect(page.locator("#compose .chip")).to_have_count(0)
    shot(page, "thread-reply")

    got = line_got(app, lambda s: s.get("to") == [number] and s.get("body") == "Yes, 8 works")
    assert got.get("reply_to"), got


def test_an_own_message_is_edited_from_the_thread(app, page):
    number = "+12015550141"
    sent = start_thread(page, app, number, "See you at 7")
    id = message_id(sent)

    sent.get_by_role("link", name="Edit").click()
    expect(page.locator("#compose .chip")).to_have_text(re.compile("Editing “See you at 7”"))
    field = page.get_by_label("New text")
    expect(field).to_have_value("See you at 7")
    field.fill("See you at 8")
    page.get_by_role("button", name="Save edit").click()

    edited = page.locator(f"article[id='{id}']")
    expect(edited.locator("p.body")).to_have_text("See you at 8")
    expect(edited.locator(".changed")).to_have_text("Edited")
    edited.get_by_text("show earlier").click()
    expect(edited.locator(".earlier li")).to_contain_text("See you at 7")
    # The compose box is the ordinary one again.
    expect(page.get_by_label("Message")).to_be_visible()
    shot(page, "thread-edited")

    got = line_got(app, lambda s: s.get("kind") == "edit" and s.get("target") == id)
    assert got["body"] == "See you at 8", got


def test_an_own_message_is_unsent_from_the_thread_and_kept_marked_unsent(app, page):
    number = "+12015550142"
    sent = start_thread(page, app, number, "Wrong number, sorry")
    id = message_id(sent)

    sent.get_by_text("Unsend", exact=True).click()
    page.locator(f"article[id='{id}']").get_by_role("button", name="Unsend message").click()

    unsent = page.locator(f"article[id='{id}']")
    expect(unsent).to_have_class(re.compile(r"\bunsent\b"))
    expect(unsent.locator(".changed")).to_have_text("Unsent")
    # The organisation keeps its record: the text stays, struck through.
    expect(unsent.locator("p.body")).to_have_text("Wrong number, sorry")
    expect(unsent.get_by_role("link", name="Edit")).to_have_count(0)
    expect(unsent.get_by_text("Unsend", exact=True)).to_have_count(0)
    shot(page, "thread-unsent")

    line_got(app, lambda s: s.get("kind") == "unsend" and s.get("target") == id)


def test_edit_and_unsend_go_once_their_windows_close_and_a_late_edit_is_refused(app, page):
    number = "+12015550143"
    sent = start_thread(page, app, number, "Doors open at 6")
    id = message_id(sent)
    article = page.locator(f"article[id='{id}']")
    expect(article.get_by_role("link", name="Edit")).to_be_visible()
    expect(article.get_by_text("Unsend", exact=True)).to_be_visible()

    # Sent three minutes ago: past unsend's two minutes, within edit's fifteen. The open page
    # follows without a reload.
    app.sql(f"UPDATE messages SET sent_at = sent_at - 180000 WHERE id = '{id}'")
    expect(article.get_by_text("Unsend", exact=True)).to_have_count(0, timeout=10_000)
    expect(article.get_by_role("link", name="Edit")).to_be_visible()

    # The edit form is open when the edit window closes (sixteen minutes ago).
    article.get_by_role("link", name="Edit").click()
    expect(page.get_by_label("New text")).to_have_value("Doors open at 6")
    app.sql(f"UPDATE messages SET sent_at = sent_at - 780000 WHERE id = '{id}'")
    expect(article.get_by_role("link", name="Edit")).to_have_count(0, timeout=10_000)
    page.get_by_label("New text").fill("Doors open at 7")
    page.get_by_role("button", name="Save edit").click()
    expect(page.get_by_role("alert")).to_contain_text("within 15 minutes of being sent")
    expect(page.get_by_label("New text")).to_have_value("Doors open at 7")
    expect(article.locator("p.body")).to_have_text("Doors open at 6")
    shot(page, "thread-edit-refused")

    assert not [s for s in app.sent() if s.get("target") == id]


def test_an_edit_the_line_refuses_shows_its_reason_and_keeps_the_text(app, page):
    number = "+12015550144"
    sent = start_thread(page, app, number, "Pick-up at noon")
    id = message_id(sent)
    sent.get_by_role("link", name="Edit").click()
    page.get_by_label("New text").fill("Pick-up at one")
    app.control("/mode", {"mode": "reject"})
    try:
        page.get_by_role("button", name="Save edit").click()
        expect(page.get_by_role("alert")).to_contain_text("the simulated line refused the edit")
    finally:
        app.control("/mode", {"mode": "accept"})
    expect(page.get_by_label("New text")).to_have_value("Pick-up at one")
    article = page.locator(f"article[id='{id}']")
    expect(article.locator("[data-action]")).to_have_text("Edit failed: the simulated line refused the edit: “Pick-up at one”")
    expect(article.locator("p.body")).to_have_text("Pick-up at noon")
    # A failed edit settles nothing: the message can be edited again.
    expect(article.get_by_role("link", name="Edit")).to_be_visible()


def test_a_late_unsend_from_a_page_that_does_not_update_is_refused_above_the_thread(app, browser):
    # Without JavaScript the page keeps the Unsend it was drawn with.
    context = browser.new_context(java_script_enabled=False)
    page = context.new_page()
    page.set_default_timeout(15_000)
    try:
        number = "+12015550145"
        sign_in(page, app)
        app.api("POST", "/messages", {"to": number, "body": "Table 4 is ready"})
        page.goto(f"{app.base}/console/conversations?q=2015550145")
        page.get_by_role("link", name=number).click()
        sent = page.locator("article.message.out", has_text="Table 4 is ready")
        deadline = time.time() + 20
        while sent.locator("[data-status]").text_content() != "delivered":
            assert time.time() < deadline, "the message was not delivered"
            time.sleep(0.2)
            page.reload()
        id = message_id(sent)
        sent.get_by_text("Unsend", exact=True).click()
        app.sql(f"UPDATE messages SET sent_at = sent_at - 180000 WHERE id = '{id}'")
        sent.get_by_role("button", name="Unsend message").click()
        expect(page.locator(".flash")).to_contain_text("within 2 minutes of being sent")
        article = page.locator(f"article[id='{id}']")
        expect(article).not_to_have_class(re.compile(r"\bunsent\b"))
        expect(article.get_by_text("Unsend", exact=True)).to_have_count(0)
        assert not [s for s in app.sent() if s.get("target") == id]
    finally:
        context.close()
