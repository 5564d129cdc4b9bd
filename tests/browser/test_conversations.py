"""Conversations: start one by number, watch a send reach delivered and an inbound message arrive
without a reload, and see hostile text shown as text."""

import struct
import time
import zlib

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


def png_chunk(kind, data):
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))


# A 1x1 red PNG.
PNG = (b"\x89PNG\r\n\x1a\n" + png_chunk(b"IHDR", struct.pack(">IIBBBBB", 1, 1, 8, 6, 0, 0, 0))
       + png_chunk(b"IDAT", zlib.compress(b"\x00\xff\x00\x00\xff")) + png_chunk(b"IEND", b""))


def start_conversation(page, app, number, text):
    sign_in(page, app)
    page.get_by_role("link", name="Conversations").click()
    page.get_by_text("New conversation").click()
    page.get_by_label("To").fill(number)
    page.get_by_label("Message").fill(text)
    page.get_by_role("button", name="Send").click()
    expect(page.get_by_role("heading", name=number)).to_be_visible()


def test_a_file_attached_in_a_thread_reaches_the_line_and_shows_in_the_thread(app, page):
    number = "+12015550125"
    start_conversation(page, app, number, "Tonight's menu follows")
    page.get_by_label("Attach files").set_input_files(
        files=[{"name": "menu.png", "mimeType": "image/png", "buffer": PNG}])
    page.get_by_label("Message").fill("The menu")
    page.get_by_role("button", name="Send").click()
    sent = page.locator("article.message.out", has_text="menu.png")
    expect(sent).to_contain_text("The menu")
    expect(sent.locator("[data-status]")).to_have_text("delivered", timeout=20_000)
    # The picture is drawn from the console's own URL (the page's policy allows nothing else).
    image = sent.locator("img")
    expect(image).to_have_attribute("alt", "menu.png")
    page.wait_for_function("img => img.complete && img.naturalWidth === 1", arg=image.element_handle())
    media = [s for s in app.sent() if s.get("to") == [number] and s.get("attachments")]
    assert len(media) == 1, media
    assert media[0]["attachments"][0]["content_type"] == "image/png"
    assert media[0]["attachments"][0]["size"] == len(PNG)


def test_typing_shows_both_ways(app, page):
    number = "+12015550126"
    start_conversation(page, app, number, "Are you free tonight?")
    expect(page.locator("article.message.out [data-status]")).to_have_text("delivered", timeout=20_000)

    # Someone typing in the console shows the line typing on the other phone.
    page.get_by_label("Message").press_sequentially("Let me check", delay=20)
    deadline = time.time() + 10
    while time.time() < deadline:
        if {"to": [number]} in app.typing_shown():
            break
        time.sleep(0.1)
    else:
        raise AssertionError("the line did not show typing")

    # The other side typing shows in the thread without a reload, and ends with their message.
    app.control("/typing", {"from": number})
    expect(page.locator(".typing")).to_have_text(f"{number} is typing…", timeout=10_000)
    app.control("/typing", {"from": number, "typing": False})
    expect(page.locator(".typing")).to_have_count(0, timeout=10_000)
    app.control("/typing", {"from": number})
    expect(page.locator(".typing")).to_have_count(1, timeout=10_000)
    app.control("/inbound", {"from": number, "body": "Yes!"})
    expect(page.locator("article.message.in", has_text="Yes!")).to_be_visible(timeout=10_000)
    expect(page.locator(".typing")).to_have_count(0)
