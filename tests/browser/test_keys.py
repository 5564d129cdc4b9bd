"""API keys: create one with scopes and a line, use it from outside the browser, revoke it."""

import subprocess

from playwright.sync_api import expect

from conftest import shot, sign_in


def curl_status(app, key):
    out = subprocess.run(["curl", "-s", "-o", "/dev/null", "-w", "%{http_code}",
                          f"{app.base}/api/v1/messaging/lines", "-H", f"Authorization: Bearer {key}"],
                         capture_output=True, text=True, check=True)
    return out.stdout


def test_a_key_made_in_the_console_works_with_curl_until_it_is_revoked(app, page):
    sign_in(page, app)
    page.get_by_role("link", name="API keys").click()
    page.get_by_text("New key").click()
    page.get_by_label("Name", exact=True).fill("reporting")
    page.get_by_label("messaging_read").check()
    page.get_by_label("Line", exact=True).select_option(label="+12015550100 only")
    page.get_by_role("button", name="Create key").click()
    secret = page.locator("#new-secret").text_content()
    assert secret.startswith("mlk_")
    expect(page.get_by_text("it is shown only this once")).to_be_visible()
    shot(page, "keys")
    assert curl_status(app, secret) == "200"

    # Shown once: the list shows only its last characters.
    page.goto(f"{app.base}/console/keys")
    assert secret not in page.content()
    expect(page.get_by_role("row", name="reporting")).to_contain_text("messaging_read")
    page.get_by_role("button", name="Revoke reporting").click()
    expect(page.get_by_role("row", name="reporting")).to_have_count(0)
    assert curl_status(app, secret) == "401"


def test_a_member_has_no_keys_page(app, page):
    app.cli("admin", "staff", "create", "--org", app.org_id, "--email", "member@example.com", "--role", "member",
            "--password-stdin", stdin="member's long password")
    sign_in(page, app, "member@example.com", "member's long password")
    expect(page.get_by_role("link", name="Conversations")).to_be_visible()
    expect(page.get_by_role("link", name="API keys")).to_have_count(0)
    response = page.goto(f"{app.base}/console/keys")
    assert response.status == 403
