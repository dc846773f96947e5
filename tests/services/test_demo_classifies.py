"""The demo classifies through the classifier services, and carol can finish the job."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from django.test import Client

from beliefs.models import AuditEvent, RiskChangeRequest, Slot
from demo.data import seed_demo

pytestmark = pytest.mark.django_db


def test_it_classifies_the_demo_through_the_services_with_four_eyes(demo: str) -> None:
    # Every class below irreversible of a slot or decision that started unclassified waited for
    # cathy; nothing is left pending.
    requests = RiskChangeRequest.objects.all()
    assert requests.exists()
    assert {(r.state, r.requested_by.username, r.decided_by.username) for r in requests} == {
        ("approved", "carol", "cathy")
    }
    assert AuditEvent.objects.filter(kind="classification.slot_risk", actor="cathy").exists()
    assert AuditEvent.objects.filter(kind="classification.slot_monotonic", actor="carol").exists()
    assert Slot.objects.get(task_class__key="iam.grant_access", key="justification").risk_class == (
        "reversible"
    )


def test_it_writes_no_classification_twice(demo: str) -> None:
    count = AuditEvent.objects.filter(kind__startswith="classification.").count()
    seed_demo()
    assert AuditEvent.objects.filter(kind__startswith="classification.").count() == count


def test_it_lets_carol_classify_the_demos_last_unclassified_slot(demo: str, client: Client) -> None:
    carol = User.objects.get(username="carol")
    client.force_login(carol)
    assert list(Slot.objects.filter(risk_class="unclassified").values_list("key", flat=True)) == [
        "shipping_address"
    ]
    slot = Slot.objects.get(key="shipping_address")
    response = client.post(
        f"/classify/commerce.ship_order/slots/{slot.pk}/",
        {"risk_class": "irreversible", "reason": "A3: a stale address must not ship"},
    )
    assert response.status_code == 302
    assert not Slot.objects.filter(risk_class="unclassified").exists()
    html = client.get("/activity/?actor=carol&kind=classification.slot_risk").content.decode()
    assert "A3: a stale address must not ship" in html
