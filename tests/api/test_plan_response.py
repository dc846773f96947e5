"""The plan's answer writes the plan's canonical JSON, encoded once for its digest, as it is:
the same JSON, whether planning wrote or only read, and as JavaScript-safe as every answer."""

from __future__ import annotations

import json

import pytest

from beliefs.domain.canonical import canonical_json
from tests.support.api import API, Driver, by_slot

pytestmark = pytest.mark.django_db

# Each can end a line in JavaScript: every answer writes them escaped.
HOSTILE = "DE89\u2028</script>\u2029é"


@pytest.fixture
def instance_id(api: Driver, transfer: str) -> str:
    """Unplanned: each test makes the first plan (the locked path) itself."""
    return api.open(
        transfer,
        beliefs=[
            {"slot": "recipient_account", "value": HOSTILE, "source": "tool"},
            {"slot": "memo", "value": {"z": 1, "a": [1.0, None, "x"]}, "source": "user"},
        ],
    )


def _plan(api: Driver, instance_id: str, **headers: str) -> bytes:
    response = api.runtime.post(f"{API}/instances/{instance_id}/plan/", **headers)
    assert response.status_code == 200, response.content
    assert response["Content-Type"] == "application/json"
    return response.content


def test_a_first_plan_and_a_replan_answer_the_stored_plan(api: Driver, instance_id: str) -> None:
    first = _plan(api, instance_id)  # planning writes: the locked path
    again = _plan(api, instance_id)  # nothing changed: answered from reads alone
    stored = api.instance(instance_id)
    for body in (first, again):
        plan = json.loads(body)
        assert plan["items"] == stored["plan"]
        assert "instance" not in plan  # its id is `id`, as in the instance's own body
        assert (plan["id"], plan["status"], plan["blocking"]) == (
            instance_id,
            "awaiting_user",
            1,
        )
        assert by_slot(plan)["memo"]["value"] == {"z": 1, "a": [1.0, None, "x"]}
        # The items are the canonical text planning digested, written as it is.
        items = canonical_json(plan["items"]).replace("\u2028", "\\u2028")
        assert body.endswith(b',"items":' + items.replace("\u2029", "\\u2029").encode() + b"}")
    assert first == again


def test_line_separators_in_a_value_are_escaped_as_in_every_answer(
    api: Driver, instance_id: str
) -> None:
    for body in (_plan(api, instance_id), _plan(api, instance_id)):
        assert "\u2028".encode() not in body and "\u2029".encode() not in body
        assert b"\\u2028</script>\\u2029" in body
        assert by_slot(json.loads(body))["recipient_account"]["value"] == HOSTILE


def test_an_indent_asked_for_is_honoured(api: Driver, instance_id: str) -> None:
    compact = json.loads(_plan(api, instance_id))
    indented = _plan(api, instance_id, HTTP_ACCEPT="application/json; indent=2")
    assert indented.startswith(b'{\n  "id": ')
    assert json.loads(indented) == compact
