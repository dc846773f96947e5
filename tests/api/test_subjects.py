"""Runs that are not retries: a task class may name the world key of the thing a run acts on
(a refund's `order`); people then see runs with different subjects as separate tasks
("Refund a customer — order 1043"), not as attempts of one, while carrying and routing stay
as they were."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client

from beliefs.models import AuditEvent, TaskClass
from tests.builders import classify
from tests.conftest import JsonClient
from tests.support.api import API, Driver

CLASS = "payments.refund"


def _register(api: Driver, **extra: Any) -> Any:
    return api.runtime.put_json(
        f"{API}/task-classes/{CLASS}/",
        {
            "name": "Refund a customer",
            "slots": [{"key": "order", "label": "Order"}, {"key": "iban", "label": "IBAN"}],
            "decisions": [{"key": "refund", "label": "Send the refund", "slots": ["iban"]}],
            **extra,
        },
    )


def test_registration_takes_the_subject_key_and_keeps_it_when_left_out(
    api: Driver, runtime: JsonClient
) -> None:
    first = _register(api, subject_key="order")
    assert first.status_code == 200, first.json()
    assert first.json()["subject_key"] == "order"
    again = _register(api)
    assert again.json()["subject_key"] == "order"
    assert runtime.get(f"{API}/task-classes/{CLASS}/").json()["subject_key"] == "order"
    event = AuditEvent.objects.filter(kind="task_class.registered").get()
    assert event.data["subject_key"] == "order"


@pytest.mark.parametrize("bad", [5, "", None, ["order"], "x" * 300])
def test_a_subject_key_that_is_no_key_is_refused_and_changes_nothing(api: Driver, bad: Any) -> None:
    assert _register(api, subject_key="order").status_code == 200
    refused = _register(api, subject_key=bad)
    assert refused.status_code == 400
    assert refused.json()["error"] and "subject_key" in refused.json()["fields"]
    assert TaskClass.objects.get(key=CLASS).subject_key == "order"


def test_a_class_without_a_subject_reads_null(api: Driver) -> None:
    assert _register(api).json()["subject_key"] is None


def test_runs_with_different_subjects_read_as_separate_tasks_and_still_carry(
    api: Driver, alice: User, signed_in: Callable[[User], Client]
) -> None:
    _register(api, subject_key="order")
    classify(
        TaskClass.objects.get(key=CLASS), slots={"order": "reversible", "iban": "irreversible"}
    )
    ids = []
    for order in (1043, 1044):
        instance_id = api.open(
            CLASS,
            world={"iban": {"holder": "Bob"}},
            beliefs=[
                {"slot": "order", "value": order, "source": "tool"},
                {
                    "slot": "iban",
                    "value": "NL91ABNA0417164300",
                    "source": "tool",
                    "world_ref": {"holder": "Bob"},
                },
            ],
        )
        api.plan(instance_id)
        ids.append(instance_id)
    pages = signed_in(alice)
    inbox = re.sub(r"\s+", " ", pages.get("/").content.decode())
    for instance_id, order in zip(ids, (1043, 1044), strict=True):
        link = re.search(rf'id="inbox-link-{instance_id}"[^>]*>(.*?)</a>', inbox)
        assert link is not None
        title = re.sub(r"<[^>]+>", "", link.group(1))
        assert title == f"Refund a customer — order {order}"
        page = pages.get(f"/instances/{instance_id}/").content.decode()
        assert f"<title>Refund a customer — order {order}" in page
        assert "attempt" not in re.sub(r"<[^>]+>", "", page.split("<h1>")[1].split("</h1>")[0])
    # Routing is as the seed says: the second run's IBAN is the runtime's (R4), as the first's.
    second = api.instance(ids[1])
    routes = {p["slot"]: p["route"] for p in second["prompts"]}
    assert routes["iban"] == "CONFIRM"
