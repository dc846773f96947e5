"""Runtime keys can never change a risk class, only suggest one."""

from __future__ import annotations

import pytest

from beliefs.models import AuditEvent, RuntimeAPIKey, Slot
from tests.builders import shop
from tests.conftest import JsonClient

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("field", ["risk_class", "risk", "effective_risk"])
def test_it_refuses_risk_classes_in_a_runtime_registration(runtime: JsonClient, field: str) -> None:
    shop()
    response = runtime.put_json(
        "/api/v1/task-classes/commerce.ship_order/",
        {"slots": [{"key": "shipping_address", field: "cosmetic"}]},
    )
    assert response.status_code == 400
    assert response.json()["error"] == "invalid"
    assert f"slots[0].{field}" in response.json()["fields"]
    assert Slot.objects.get(key="shipping_address").risk_class == "unclassified"


def test_it_refuses_a_risk_class_on_a_decision(runtime: JsonClient) -> None:
    shop()
    response = runtime.put_json(
        "/api/v1/task-classes/commerce.ship_order/",
        {"decisions": [{"key": "ship", "slots": [], "risk_class": "cosmetic"}]},
    )
    assert response.status_code == 400
    assert "decisions[0].risk_class" in response.json()["fields"]


def test_it_keeps_a_runtime_suggestion_a_suggestion(runtime: JsonClient) -> None:
    shop()
    response = runtime.put_json(
        "/api/v1/task-classes/commerce.ship_order/",
        {"slots": [{"key": "shipping_address", "suggested_risk": "cosmetic"}]},
    )
    assert response.status_code == 200
    slot = Slot.objects.get(key="shipping_address")
    assert (slot.risk_class, slot.suggested_risk) == ("unclassified", "cosmetic")


def test_it_gives_a_runtime_key_no_way_into_the_classifier_pages(
    runtime_key: tuple[RuntimeAPIKey, str],
) -> None:
    shop()
    slot = Slot.objects.get(key="shipping_address")
    client = JsonClient()
    client.credentials(HTTP_AUTHORIZATION=f"Api-Key {runtime_key[1]}")
    response = client.post(
        f"/classify/commerce.ship_order/slots/{slot.pk}/",
        {"risk_class": "cosmetic", "reason": "trust me"},
        format="multipart",
    )
    assert response.status_code == 302  # not a person: sent to sign in
    slot.refresh_from_db()
    assert slot.risk_class == "unclassified"
    assert not AuditEvent.objects.filter(kind__startswith="classification.").exists()
