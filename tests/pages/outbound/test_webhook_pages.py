"""Staff pages: the runtimes page and its test event; the admin cannot change the audit log;
the account page turns email off."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client

from beliefs.models import AuditEvent, PersonSettings, TaskClass, WebhookEvent
from beliefs.services.audit import Actor
from tests.conftest import runtime_key_of
from tests.support.outbound import all_delivered, open_transfer, registered_receiver, work_until


@pytest.fixture
def staff(db: None) -> Client:
    user = User.objects.create_superuser("root", "root@example.org", "pw-for-tests-only")
    client = Client()
    client.force_login(user)
    return client


def test_the_admin_cannot_change_or_delete_audit_rows(staff: Client, rt: Actor) -> None:
    open_transfer(rt)
    event = AuditEvent.objects.first()
    url = f"/admin/beliefs/auditevent/{event.pk}/"
    page = staff.get(f"{url}change/")
    assert page.status_code == 200  # viewable
    assert b'name="_save"' not in page.content
    assert staff.post(f"{url}change/", {"kind": "forged", "actor": "x"}).status_code == 403
    assert staff.post(f"{url}delete/", {"post": "yes"}).status_code == 403
    changelist = staff.post(
        "/admin/beliefs/auditevent/",
        {"action": "delete_selected", "_selected_action": [event.pk], "post": "yes"},
    )
    assert changelist.status_code in (200, 302)
    assert AuditEvent.objects.filter(pk=event.pk, kind=event.kind).exists()
    assert staff.get("/admin/beliefs/auditevent/add/").status_code == 403


def test_staff_transfer_a_task_class_in_the_admin(staff: Client, rt: Actor) -> None:
    open_transfer(rt)
    other, _ = runtime_key_of("billing-agent")
    task_class = TaskClass.objects.get(key="payments.transfer")
    # As the browser posts the form: the owner, and the (read-only) shares inline's counts.
    inline = {"shares-TOTAL_FORMS": "0", "shares-INITIAL_FORMS": "0"}
    response = staff.post(
        f"/admin/beliefs/taskclass/{task_class.pk}/change/", {"owner": other.runtime.pk, **inline}
    )
    assert response.status_code == 302, response.content[:500]
    assert TaskClass.objects.get(pk=task_class.pk).owner == other.runtime
    assert AuditEvent.objects.filter(kind="task_class.owner_changed").exists()


def test_staff_set_a_task_class_s_retention_in_the_admin(staff: Client, rt: Actor) -> None:
    open_transfer(rt)
    task_class = TaskClass.objects.get(key="payments.transfer")
    url = f"/admin/beliefs/taskclass/{task_class.pk}/change/"
    inline = {"shares-TOTAL_FORMS": "0", "shares-INITIAL_FORMS": "0"}
    form = {"owner": task_class.owner_id, "retention_days": "90", **inline}
    assert staff.post(url, form).status_code == 302
    assert TaskClass.objects.get(pk=task_class.pk).retention_days == 90
    (event,) = AuditEvent.objects.filter(kind="task_class.retention_changed")
    assert (event.data["before"], event.data["after"], event.subject) == (None, 90, task_class.key)
    # A period of no days would erase what was just answered: the form says so.
    refused = staff.post(url, {**form, "retention_days": "0"})
    assert refused.status_code == 200 and b"greater than or equal to 1" in refused.content
    assert staff.post(url, {**form, "retention_days": ""}).status_code == 302  # kept again
    assert TaskClass.objects.get(pk=task_class.pk).retention_days is None


def test_the_runtimes_page_is_for_staff_and_sends_a_test_event(
    staff: Client, rt: Actor, runtime: Any, alice: User
) -> None:
    created, receiver = registered_receiver(runtime)
    port = receiver.port
    page = staff.get("/runtimes/")
    assert page.status_code == 200
    assert b"test-runtime" in page.content and f"127.0.0.1:{port}".encode() in page.content
    sent = staff.post(f"/runtimes/endpoints/{created['id']}/test/")
    assert sent.status_code == 302
    with receiver:
        work_until(all_delivered)
    assert [e["type"] for e in receiver.events()] == ["webhook.test"]
    page = staff.get("/runtimes/")
    assert b"webhook.test" in page.content and b"204" in page.content

    person = Client()
    person.force_login(alice)
    assert person.get("/runtimes/").status_code == 302  # to the admin sign-in
    assert person.post(f"/runtimes/endpoints/{created['id']}/test/").status_code == 302
    assert WebhookEvent.objects.filter(type="webhook.test").count() == 1


def test_the_account_page_turns_email_off(alice: User) -> None:
    client = Client()
    client.force_login(alice)
    page = client.get("/account/")
    assert page.status_code == 200 and b"email_notifications" in page.content
    assert client.post("/account/", {}).status_code == 302
    assert PersonSettings.objects.get(user=alice).email_notifications is False
    client.post("/account/", {"email_notifications": "on"})
    assert PersonSettings.objects.get(user=alice).email_notifications is True
    assert b'href="/account/"' in client.get("/").content
