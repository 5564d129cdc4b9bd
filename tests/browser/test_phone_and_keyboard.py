"""The console at phone width, driven by the keyboard alone."""

from playwright.sync_api import expect

from conftest import shot


def test_signing_in_and_moving_between_pages_by_keyboard_at_phone_width(app, browser):
    context = browser.new_context(viewport={"width": 390, "height": 844}, is_mobile=True, has_touch=True)
    page = context.new_page()
    try:
        page.goto(f"{app.base}/console/sign-in")
        page.keyboard.press("Tab")
        expect(page.get_by_label("Email")).to_be_focused()
        page.keyboard.type(app.owner[0])
        page.keyboard.press("Tab")
        expect(page.get_by_label("Password")).to_be_focused()
        page.keyboard.type(app.owner[1])
        page.keyboard.press("Enter")
        expect(page.get_by_role("heading", name="Overview")).to_be_visible()
        # Nothing is wider than the screen.
        assert page.evaluate("document.documentElement.scrollWidth") <= 390
        conversations = page.get_by_role("link", name="Conversations")
        conversations.focus()
        page.keyboard.press("Enter")
        expect(page.get_by_role("heading", name="Conversations")).to_be_visible()
        assert page.evaluate("document.documentElement.scrollWidth") <= 390
        shot(page, "phone-conversations")
    finally:
        context.close()
