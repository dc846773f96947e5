"""Staff in Chromium: the runtimes page sends a test event; the admin creates a key (shown
once, and it works), revokes it, and shows the audit log with no way to change it."""

from __future__ import annotations

import re
import urllib.error
import urllib.request
from collections.abc import Callable

from django.contrib.auth.models import User
from django.test import override_settings
from playwright.sync_api import Page, expect

from beliefs.models import Runtime, RuntimeAPIKey, WebhookEndpoint, WebhookEvent
from demo.receiver import Receiver
from tests.conftest import PASSWORD, runtime_key_of


def _status(url: str, key: str) -> int:
    request = urllib.request.Request(url, headers={"Authorization": f"Api-Key {key}"})
    try:
        with urllib.request.urlopen(request, timeout=10) as response:  # noqa: S310 - loopback
            return response.status
    except urllib.error.HTTPError as exc:
        return exc.code


@override_settings(CONSOLE_WEBHOOK_ALLOW_PRIVATE=True)
def test_staff_use_the_runtimes_page_and_the_admin(
    page: Page,
    sign_in: Callable[[str, str], None],
    screenshot: Callable[[str], object],
    live_server: object,
) -> None:
    User.objects.create_superuser("root", "root@example.org", PASSWORD)
    key, _ = runtime_key_of("billing-agent")
    with Receiver("whsec_" + "A" * 44) as receiver:
        endpoint = WebhookEndpoint.objects.create(
            runtime=key.runtime, url=receiver.url, secret="whsec_" + "A" * 44
        )

    sign_in("root", PASSWORD)
    page.get_by_role("navigation", name="Main").get_by_role("link", name="Runtimes").click()
    expect(page.get_by_role("heading", name="billing-agent")).to_be_visible()
    expect(page.get_by_text(key.prefix)).to_be_visible()
    expect(page.get_by_text(endpoint.url)).to_be_visible()
    page.get_by_role("button", name="Send test event").click()
    expect(page.get_by_role("status")).to_contain_text("queued for")
    assert WebhookEvent.objects.filter(type="webhook.test").count() == 1
    screenshot("staff-runtimes")

    # The admin: create a key for the runtime; it is shown once, and it works.
    page.get_by_role("navigation", name="Main").get_by_role("link", name="Admin").click()
    page.get_by_role("link", name="Runtime API keys").first.click()
    page.get_by_role("link", name=re.compile("Add runtime API key")).click()
    page.get_by_label("Runtime").select_option(label="billing-agent")
    page.get_by_label("Name").fill("rotation-2")
    page.get_by_role("button", name="Save", exact=True).click()
    message = page.locator(".messagelist").inner_text()
    new_key = re.search(r"is: (\S+)\. ", message).group(1)
    created = RuntimeAPIKey.objects.get(name="rotation-2")
    assert created.runtime == key.runtime and new_key.startswith(created.prefix)
    api = f"{live_server.url}/api/v1/webhook-endpoints/"
    assert _status(api, new_key) == 200

    # Revoke it with the list action: the key stops working.
    page.goto("/admin/beliefs/runtimeapikey/")
    page.get_by_role("row").filter(has_text=created.prefix).get_by_role("checkbox").check()
    page.locator("select[name=action]").select_option(
        label="Revoke the selected keys (cannot be undone)"
    )
    page.get_by_role("button", name="Go").click()
    expect(page.locator(".messagelist")).to_contain_text("Revoked")
    assert RuntimeAPIKey.objects.get(pk=created.pk).revoked
    assert _status(api, new_key) == 401

    # The audit log: listed, read-only, no delete action.
    page.goto("/admin/beliefs/auditevent/")
    expect(page.get_by_role("cell", name="runtime_key.revoked")).to_be_visible()
    expect(page.locator("select[name=action]")).to_have_count(0)
    page.get_by_role("link", name=re.compile(r"\d{4}")).first.click()
    expect(page.get_by_role("button", name="Save")).to_have_count(0)
    expect(page.get_by_role("link", name="Delete")).to_have_count(0)
    screenshot("staff-admin-audit")
    assert Runtime.objects.filter(name="billing-agent").exists()
