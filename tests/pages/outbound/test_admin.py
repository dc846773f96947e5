"""The admin checks what the API checks (with the same validators, as form messages, never a
500), deletes endpoints through the service, audits every change of endpoints, keys and
runtimes in the change's own transaction, and shows untrusted text as read."""

from __future__ import annotations

import ipaddress
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client, override_settings

from beliefs.models import (
    AuditEvent,
    Runtime,
    RuntimeAPIKey,
    TaskClass,
    WebhookDelivery,
    WebhookEndpoint,
)
from beliefs.services.audit import Actor, audit
from beliefs.services.webhooks import endpoints
from beliefs.services.webhooks.endpoints import endpoint_delete
from tests.conftest import runtime_key_of
from tests.pages.test_hidden_characters import HIDDEN, TextAndLinks
from tests.support.outbound import open_transfer

ADD = "/admin/beliefs/webhookendpoint/add/"
PUBLIC = "93.184.215.14"
GOOD_SECRET = "whsec_" + "QUFB" * 11  # base64 of 33 bytes


@pytest.fixture
def root(db: None) -> User:
    return User.objects.create_superuser("root", "root@example.org", "pw-for-tests-only")


@pytest.fixture
def staff(root: User) -> Client:
    client = Client()
    client.force_login(root)
    return client


@pytest.fixture
def public_dns(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every host name resolves to one public address, an address to itself: no DNS query
    leaves the machine."""

    def resolve(host: str, port: int) -> list[str]:
        try:
            return [str(ipaddress.ip_address(host))]
        except ValueError:
            return [PUBLIC]

    monkeypatch.setattr(endpoints, "resolve", resolve)


def form(runtime: Runtime, **fields: Any) -> dict[str, Any]:
    data = {
        "runtime": runtime.pk,
        "url": "https://hooks.example/in",
        "event_types": "[]",
        "active": "on",
        "description": "",
        "new_secret": "",
    }
    data.update(fields)
    return data


def errors_of(html: str) -> str:
    """The text of the form's error lists."""
    start = html.find('class="errorlist')
    assert start != -1, "the form shows no error"
    return html[start : html.find("</ul>", start)]


@override_settings(CONSOLE_WEBHOOK_ALLOW_PRIVATE=False)
@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"url": "https://127.0.0.1/x"}, "non-public address (127.0.0.1: loopback)"),
        ({"url": "https://[64:ff9b::a9fe:a9fe]/x"}, "NAT64 form of 169.254.169.254"),
        ({"url": "http://hooks.example/x"}, "must be an https URL"),
        ({"url": "https://user:pw@hooks.example/"}, "must not carry a user name"),
        ({"event_types": "5"}, "must be a list of event types"),
        ({"event_types": '"instance.ready"'}, "must be a list of event types"),
        ({"event_types": '["instance.nope"]'}, "unknown event type &#x27;instance.nope&#x27;"),
        ({"event_types": "[1]"}, "must be a list of event types"),
        ({"event_types": "{not json"}, "Enter a valid JSON"),
        ({"description": "x" * 201}, "at most 200 characters"),
        ({"new_secret": "hunter2"}, "must be a Standard Webhooks secret"),
        ({"new_secret": "whsec_AAAA"}, "must be a Standard Webhooks secret"),
        ({"new_secret": "whsec_" + "!" * 44}, "must be a Standard Webhooks secret"),
    ],
)
def test_the_admin_refuses_what_the_api_refuses_with_a_form_message(
    staff: Client, public_dns: None, fields: dict[str, Any], message: str
) -> None:
    runtime, _ = runtime_key_of("test-runtime")
    response = staff.post(ADD, form(runtime.runtime, **fields))
    assert response.status_code == 200  # the form again, not a 500
    assert message in errors_of(response.content.decode())
    assert not WebhookEndpoint.objects.exists()
    assert not AuditEvent.objects.filter(kind__startswith="webhook_endpoint.").exists()


def test_an_endpoint_added_in_the_admin_gets_a_generated_secret_and_an_audit_event(
    staff: Client, public_dns: None
) -> None:
    key, _ = runtime_key_of("test-runtime")
    response = staff.post(
        ADD, form(key.runtime, event_types='["instance.ready", "instance.ready"]'), follow=True
    )
    assert response.status_code == 200
    endpoint = WebhookEndpoint.objects.get()
    assert endpoint.event_types == ["instance.ready"]  # as the API stores them
    assert endpoint.secret.startswith("whsec_") and endpoint.secret in response.content.decode()
    [event] = AuditEvent.objects.filter(kind="webhook_endpoint.created")
    assert (event.actor, event.data["via"], event.data["runtime"]) == (
        "root",
        "admin",
        "test-runtime",
    )


def test_a_typed_secret_is_kept_and_never_shown_or_audited(staff: Client, public_dns: None) -> None:
    key, _ = runtime_key_of("test-runtime")
    response = staff.post(ADD, form(key.runtime, new_secret=GOOD_SECRET), follow=True)
    assert GOOD_SECRET not in response.content.decode()
    assert WebhookEndpoint.objects.get().secret == GOOD_SECRET
    assert not [e for e in AuditEvent.objects.all() if GOOD_SECRET in str(e.data)]


def endpoint_of(runtime: Runtime, **fields: Any) -> WebhookEndpoint:
    return WebhookEndpoint.objects.create(
        runtime=runtime, url="https://hooks.example/in", secret=GOOD_SECRET, **fields
    )


def test_changing_an_endpoint_audits_before_and_after_and_a_new_secret_rotates(
    staff: Client, public_dns: None
) -> None:
    key, _ = runtime_key_of("test-runtime")
    endpoint = endpoint_of(key.runtime)
    new = "whsec_" + "QkJC" * 11
    response = staff.post(
        f"/admin/beliefs/webhookendpoint/{endpoint.pk}/change/",
        form(
            key.runtime,
            url="https://hooks.example/v2",
            event_types='["belief.vetoed"]',
            description="v2",
            new_secret=new,
        ),
    )
    assert response.status_code == 302, errors_of(response.content.decode())
    endpoint.refresh_from_db()
    assert (endpoint.secret, endpoint.previous_secret) == (new, GOOD_SECRET)
    assert endpoint.previous_secret_until is not None
    [changed] = AuditEvent.objects.filter(kind="webhook_endpoint.changed")
    assert changed.data["before"] == {
        "url": "https://hooks.example/in",
        "event_types": [],
        "description": "",
    }
    assert changed.data["after"] == {
        "url": "https://hooks.example/v2",
        "event_types": ["belief.vetoed"],
        "description": "v2",
    }
    assert changed.actor == "root"
    [rotated] = AuditEvent.objects.filter(kind="webhook_endpoint.secret_rotated")
    assert rotated.data["via"] == "admin"
    assert not [
        e for e in AuditEvent.objects.all() if new in str(e.data) or GOOD_SECRET in str(e.data)
    ]


def test_an_unchanged_save_writes_no_audit_event(staff: Client, public_dns: None) -> None:
    key, _ = runtime_key_of("test-runtime")
    endpoint = endpoint_of(key.runtime)
    response = staff.post(
        f"/admin/beliefs/webhookendpoint/{endpoint.pk}/change/", form(key.runtime)
    )
    assert response.status_code == 302
    assert not AuditEvent.objects.filter(kind__startswith="webhook_endpoint.").exists()
    endpoint.refresh_from_db()
    assert endpoint.secret == GOOD_SECRET


def test_an_audit_failure_rolls_the_admin_change_back(
    staff: Client, public_dns: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The audit event is written in the change's own transaction: no event, no change."""
    import beliefs.admin

    def broken(*args: Any, **kwargs: Any) -> None:
        raise RuntimeError("the audit log is down")

    monkeypatch.setattr(beliefs.admin, "audit", broken)
    key, _ = runtime_key_of("test-runtime")
    staff.raise_request_exception = True
    with pytest.raises(RuntimeError, match="audit log is down"):
        staff.post(ADD, form(key.runtime))
    assert not WebhookEndpoint.objects.exists()
    with pytest.raises(RuntimeError, match="audit log is down"):
        staff.post("/admin/beliefs/runtime/add/", {"name": "fresh", **_inline_management()})
    assert not Runtime.objects.filter(name="fresh").exists()


class Spy:
    def __init__(self) -> None:
        self.calls: list[tuple[int, str]] = []

    def __call__(self, *, endpoint: WebhookEndpoint, actor: Actor) -> None:
        assert actor.user is not None
        self.calls.append((endpoint.pk, actor.user.get_username()))
        endpoint_delete(endpoint=endpoint, actor=actor)


def test_deleting_in_the_admin_goes_through_the_service(
    staff: Client, rt: Actor, monkeypatch: pytest.MonkeyPatch
) -> None:
    import beliefs.admin

    spy = Spy()
    monkeypatch.setattr(beliefs.admin, "endpoint_delete", spy)
    runtime = rt.runtime
    assert runtime is not None
    one, two, three = (endpoint_of(runtime) for _ in range(3))
    open_transfer(rt)  # deliveries for every endpoint: the service decides what becomes of them
    page = staff.get(f"/admin/beliefs/webhookendpoint/{one.pk}/delete/")
    assert page.status_code == 200 and b"Are you sure" in page.content
    response = staff.post(f"/admin/beliefs/webhookendpoint/{one.pk}/delete/", {"post": "yes"})
    assert response.status_code == 302
    assert spy.calls == [(one.pk, "root")]
    response = staff.post(
        "/admin/beliefs/webhookendpoint/",
        {"action": "delete_selected", "_selected_action": [two.pk, three.pk], "post": "yes"},
    )
    assert response.status_code == 302
    assert sorted(spy.calls) == [(one.pk, "root"), (two.pk, "root"), (three.pk, "root")]
    assert (
        AuditEvent.objects.filter(actor="root", kind__startswith="webhook_endpoint.").count() == 3
    )


def _inline_management() -> dict[str, str]:
    """The management forms of the runtime page's two read-only inlines."""
    data = {}
    for prefix in ("keys", "webhook_endpoints"):
        data.update(
            {
                f"{prefix}-TOTAL_FORMS": "0",
                f"{prefix}-INITIAL_FORMS": "0",
                f"{prefix}-MIN_NUM_FORMS": "0",
                f"{prefix}-MAX_NUM_FORMS": "1000",
            }
        )
    return data


def test_runtimes_added_and_renamed_in_the_admin_are_audited_and_checked(staff: Client) -> None:
    response = staff.post(
        "/admin/beliefs/runtime/add/", {"name": " billing ", **_inline_management()}
    )
    assert response.status_code == 302, response.content[:2000]
    runtime = Runtime.objects.get(name="billing")
    [created] = AuditEvent.objects.filter(kind="runtime.created")
    assert (created.actor, created.subject, created.data) == ("root", "billing", {"via": "admin"})
    url = f"/admin/beliefs/runtime/{runtime.pk}/change/"
    refused = staff.post(url, {"name": "bill\u202eing", **_inline_management()})
    assert refused.status_code == 200
    assert "printable characters" in errors_of(refused.content.decode())
    assert staff.post(url, {"name": "payments", **_inline_management()}).status_code == 302
    [renamed] = AuditEvent.objects.filter(kind="runtime.renamed")
    assert (renamed.data["before"], renamed.data["after"]) == ("billing", "payments")


def test_a_runtimes_audiences_are_kept_in_the_admin_checked_and_audited(
    staff: Client,
) -> None:
    runtime = Runtime.objects.create(name="billing")
    url = f"/admin/beliefs/runtime/{runtime.pk}/change/"
    form = staff.get(url).content.decode()
    assert 'name="audiences"' in form and "audience of its receipts" in form
    saved = staff.post(
        url,
        {
            "name": "billing",
            "audiences": " payments-service \r\n\r\nledger\r\npayments-service\r\n",
            **_inline_management(),
        },
    )
    assert saved.status_code == 302, saved.content[:2000]
    runtime.refresh_from_db()
    assert runtime.audiences == ["payments-service", "ledger"]
    [changed] = AuditEvent.objects.filter(kind="runtime.audiences_changed")
    assert changed.subject == "billing" and changed.actor == "root"
    assert changed.data == {"before": [], "after": ["payments-service", "ledger"], "via": "admin"}
    assert "payments-service\nledger" in staff.get(url).content.decode()
    refused = staff.post(
        url, {"name": "billing", "audiences": "ledger\u202e", **_inline_management()}
    )
    assert refused.status_code == 200
    assert "printable characters" in errors_of(refused.content.decode())
    runtime.refresh_from_db()
    assert runtime.audiences == ["payments-service", "ledger"]
    # Saved unchanged: no second event.
    again = {"name": "billing", "audiences": "payments-service\nledger", **_inline_management()}
    assert staff.post(url, again).status_code == 302
    assert AuditEvent.objects.filter(kind="runtime.audiences_changed").count() == 1


def test_keys_created_and_changed_in_the_admin_are_audited(staff: Client) -> None:
    key, _ = runtime_key_of("test-runtime")
    url = f"/admin/beliefs/runtimeapikey/{key.pk}/change/"
    response = staff.post(url, {"name": "renamed", "expiry_date_0": "", "expiry_date_1": ""})
    assert response.status_code == 302, response.content[:2000]
    [changed] = AuditEvent.objects.filter(kind="runtime_key.changed")
    assert changed.data["before"] == {"name": "test-runtime"}
    assert changed.data["after"] == {"name": "renamed"}
    assert changed.actor == "root"
    response = staff.post(
        url, {"name": "renamed", "revoked": "on", "expiry_date_0": "", "expiry_date_1": ""}
    )
    assert response.status_code == 302
    assert RuntimeAPIKey.objects.get(pk=key.pk).revoked
    assert AuditEvent.objects.filter(kind="runtime_key.revoked").count() == 1
    assert AuditEvent.objects.filter(kind="runtime_key.changed").count() == 1
    added = staff.post(
        "/admin/beliefs/runtimeapikey/add/",
        {"runtime": key.runtime.pk, "name": "second", "expiry_date_0": "", "expiry_date_1": ""},
    )
    assert added.status_code == 302
    [created] = AuditEvent.objects.filter(kind="runtime_key.created")
    assert (created.data["key_name"], created.data["via"]) == ("second", "admin")


# --- untrusted text, as read ------------------------------------------------------------------

HOSTILE = "<script>alert(1)</script>\u202e\u200b"


@pytest.fixture
def hostile_rows(rt: Actor, root: User) -> None:
    """A runtime, key, endpoint, task class, delivery and audit event, each named with markup,
    hidden characters and look-alike letters."""
    runtime = rt.runtime
    assert runtime is not None
    Runtime.objects.filter(pk=runtime.pk).update(name=f"\u0440ay{HOSTILE}"[:50])
    RuntimeAPIKey.objects.filter(runtime=runtime).update(name=f"k\u0435y{HOSTILE}")
    endpoint_of(
        runtime,
        description=f"for p\u0430ypal {HOSTILE}",
    )
    open_transfer(rt)  # its events make deliveries (the URL is made hostile after them: an
    # endpoint whose stored URL is not a URL is skipped and flagged by every later event)
    WebhookEndpoint.objects.filter(runtime=runtime).update(url=f"https://hooks.example/{HOSTILE}")
    TaskClass.objects.update(name=f"\u0440ayments {HOSTILE}")
    # A delivery whose error names the URL (no attempt is made: nothing leaves the machine).
    WebhookDelivery.objects.update(last_error=f"refused: url https://hooks.example/{HOSTILE}")
    audit(
        "test.hostile",
        actor=Actor(user=root),
        subject=f"\u0440ay {HOSTILE}",
        data={"before": HOSTILE, "note": {"deep": f"p\u0430ypal {HOSTILE}"}},
    )


def admin_pages() -> list[str]:
    pages = []
    for model in (
        "runtime",
        "runtimeapikey",
        "webhookendpoint",
        "webhookdelivery",
        "webhookevent",
        "taskclass",
        "auditevent",
    ):
        pages.append(f"/admin/beliefs/{model}/")
    for model, cls in (
        ("runtime", Runtime),
        ("runtimeapikey", RuntimeAPIKey),
        ("webhookendpoint", WebhookEndpoint),
        ("taskclass", TaskClass),
    ):
        pages += [f"/admin/beliefs/{model}/{o.pk}/change/" for o in cls.objects.all()]
    pages += [
        f"/admin/beliefs/webhookdelivery/{d.pk}/change/" for d in WebhookDelivery.objects.all()
    ]
    pages += [
        f"/admin/beliefs/auditevent/{e.pk}/change/"
        for e in AuditEvent.objects.filter(kind="test.hostile")
    ]
    return pages


def test_the_admin_shows_untrusted_text_escaped_revealed_and_flagged(
    staff: Client, hostile_rows: None
) -> None:
    pages = admin_pages()
    assert len(pages) > 12
    flagged = 0
    for url in pages:
        response = staff.get(url)
        assert response.status_code == 200, url
        html = response.content.decode()
        assert "<script>alert(1)" not in html, url
        text = TextAndLinks()
        text.feed(html)
        shown = "".join(text.text)
        raw = sorted({f"U+{ord(c):04X}" for c in shown if c in HIDDEN})
        assert raw == [], (url, raw)
        flagged += "look-alike letters" in html
    assert flagged >= 6  # every list and change page that shows a look-alike name
    endpoints = staff.get("/admin/beliefs/webhookendpoint/").content.decode()
    endpoint = WebhookEndpoint.objects.get()
    assert f'href="/admin/beliefs/webhookendpoint/{endpoint.pk}/change/"' in endpoints  # linked
    assert "\u201cp\u0430ypal\u201d mixes Cyrillic and Latin letters" in endpoints
    assert "⟨U+202E⟩" in endpoints and "&lt;script&gt;" in endpoints


def test_the_admin_says_task_classes(staff: Client) -> None:
    html = staff.get("/admin/").content.decode()
    assert "Task classes" in html and "Task classs" not in html


def test_the_key_list_says_each_keys_state_in_words(staff: Client) -> None:
    active, _ = runtime_key_of("billing-agent")
    revoked, _ = runtime_key_of("billing-agent")
    RuntimeAPIKey.objects.filter(pk=revoked.pk).update(revoked=True)
    html = staff.get("/admin/beliefs/runtimeapikey/").content.decode()
    assert "icon-no" not in html and "icon-yes" not in html  # no red ✕ for a working key
    rows = {
        key.prefix: html[html.index(key.prefix) :].split("</tr>")[0] for key in (active, revoked)
    }
    assert '<td class="field-state">active</td>' in rows[active.prefix]
    assert '<td class="field-state">revoked</td>' in rows[revoked.prefix]
