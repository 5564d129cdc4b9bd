"""Conversations: start one by number, watch a send reach delivered and an inbound message arrive
without a reload, and see hostile text shown as text."""

from playwright.sync_api import expect

from conftest import shot, sign_in

NUMBER = "+12015550123"


def test_a_send_reaches_delivered_and_a_reply_arrives_without_a_reload(app, page):
    sign_in(page, app)
    page.get_by_role("link", name="Conversations").click()
    page.get_by_text("New conversation").click()
    page.get_by_label("To").fill(NUMBER)
    page.get_by_label("Message").fill("Your table is ready")
    page.get_by_role("button", name="Send").click()
    expect(page.get_by_role("heading", name=NUMBER)).to_be_visible()
    sent = page.locator("article.message.out", has_text="Your table is ready")
    # The simulated line reports submitted, sent and delivered; the page follows on its own.
    expect(sent.locator("[data-status]")).to_have_text("delivered", timeout=20_000)
    app.control("/inbound", {"from": NUMBER, "body": "On my way!"})
    expect(page.locator("article.message.in", has_text="On my way!")).to_be_visible(timeout=10_000)
    shot(page, "thread")

    page.get_by_label("Message").fill("See you soon")
    page.get_by_role("button", name="Send").click()
    expect(page.locator("article.message.out", has_text="See you soon")).to_be_visible()


def test_text_from_a_message_is_shown_as_text_and_runs_nothing(app, page):
    hostile = '<img src=x onerror="window.pwned=1"><script>window.pwned=2</script>'
    app.control("/inbound", {"from": "+12015550177", "body": hostile})
    sign_in(page, app)
    page.goto(f"{app.base}/console/conversations?q=2015550177")
    page.get_by_role("link", name="+12015550177").click()
    expect(page.locator("article.message.in .body")).to_have_text(hostile)
    assert page.evaluate("window.pwned") is None
    assert page.locator("article img").count() == 0


def test_a_card_a_poll_and_a_tapback_are_sent_from_the_thread(app, page):
    sign_in(page, app)
    page.get_by_role("link", name="Conversations").click()
    page.get_by_text("New conversation").click()
    page.get_by_label("To").fill("+12015550124")
    page.get_by_label("Message").fill("Plans for Friday")
    page.get_by_role("button", name="Send").click()
    expect(page.get_by_role("heading", name="+12015550124")).to_be_visible()

    page.get_by_text("Send a contact card").click()
    page.get_by_label("Card name").fill("Front desk")
    page.get_by_label("Card number").fill("+12015550100")
    page.get_by_role("button", name="Send card").click()
    expect(page.locator("article.message.out", has_text="Front desk")).to_be_visible()

    page.get_by_text("Ask a poll").click()
    page.get_by_label("Question").fill("Lunch?")
    page.get_by_label("Options (one per line)").fill("Pizza\nTacos")
    page.get_by_role("button", name="Send poll").click()
    expect(page.locator("article.message.out", has_text="Lunch?")).to_be_visible()

    page.get_by_text("React to a message").click()
    page.get_by_label("Reacting to").select_option(label="Plans for Friday")
    page.get_by_label("Tapback").select_option("love")
    page.get_by_role("button", name="React").click()
    expect(page.locator("article.message.out", has_text="Loved")).to_be_visible()

    kinds = [s["kind"] for s in app.sent() if s.get("to") == ["+12015550124"]]
    for kind in ["text", "contact_card", "poll", "reaction"]:
        assert kind in kinds, kinds
