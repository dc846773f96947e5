"""An API driver for the acceptance and error tests: what a runtime and a person do over HTTP."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import pytest
from django.contrib.auth.models import User

from beliefs.models import TaskClass
from tests.builders import classify
from tests.conftest import JsonClient

API = "/api/v1"


class Driver:
    def __init__(self, runtime: JsonClient, person: JsonClient) -> None:
        self.runtime = runtime
        self.person = person

    # --- runtime ---------------------------------------------------------------------------

    def register(
        self,
        key: str,
        slots: list[dict[str, Any]],
        decisions: list[dict[str, Any]] | None = None,
        *,
        risks: Mapping[str, str] | None = None,
        decision_risks: Mapping[str, str] | None = None,
        monotonic: tuple[str, ...] = (),
    ) -> dict[str, Any]:
        response = self.runtime.put_json(
            f"{API}/task-classes/{key}/",
            {"name": key, "slots": slots, "decisions": decisions or []},
        )
        assert response.status_code == 200, response.json()
        classify(
            TaskClass.objects.get(key=key),
            slots=risks,
            decisions=decision_risks,
            monotonic=monotonic,
        )
        return self.runtime.get(f"{API}/task-classes/{key}/").json()

    def open(
        self,
        task_class: str,
        *,
        world: dict[str, Any] | None = None,
        beliefs: list[dict[str, Any]] | None = None,
        principal: str = "alice",
    ) -> str:
        data: dict[str, Any] = {"task_class": task_class, "principal": principal}
        if world is not None:
            data["world"] = world
        if beliefs is not None:
            data["beliefs"] = beliefs
        response = self.runtime.post_json(f"{API}/instances/", data)
        assert response.status_code == 201, response.json()
        return response.json()["id"]

    def plan(self, instance_id: str) -> dict[str, Any]:
        response = self.runtime.post_json(f"{API}/instances/{instance_id}/plan/")
        assert response.status_code == 200, response.json()
        return response.json()

    def instance(self, instance_id: str) -> dict[str, Any]:
        response = self.runtime.get(f"{API}/instances/{instance_id}/")
        assert response.status_code == 200, response.json()
        return response.json()

    # --- person ----------------------------------------------------------------------------

    def prompt(self, instance_id: str, slot: str) -> dict[str, Any]:
        prompts = self.person.get(f"{API}/instances/{instance_id}/").json()["prompts"]
        (found,) = [p for p in prompts if p["slot"] == slot and p["state"] == "open"]
        return found

    def respond(self, prompt: Mapping[str, Any], action: str, **data: Any) -> Any:
        return self.person.post_json(
            f"{API}/prompts/{prompt['id']}/respond/",
            {"action": action, "version": prompt["version"], **data},
        )

    def answer_all(self, instance_id: str, values: Mapping[str, Any]) -> dict[str, Any]:
        """Answer every open blocking prompt with the value given for its slot."""
        prompts = self.person.get(f"{API}/instances/{instance_id}/").json()["prompts"]
        for prompt in prompts:
            if prompt["state"] != "open" or not prompt["blocking"]:
                continue
            value = values[prompt["slot"]]
            action = "answer" if prompt["route"] == "ASK" else "edit"
            response = self.respond(prompt, action, value=value, value_confirmation=value)
            assert response.status_code == 200, response.json()
        return self.instance(instance_id)


@pytest.fixture
def api(runtime: JsonClient, person_client: Callable[[User], JsonClient], alice: User) -> Driver:
    return Driver(runtime, person_client(alice))


def by_slot(plan: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    return {item["slot"]: item for item in plan["items"]}


# A transfer whose recipient feeds an irreversible decision, and a planned instance of it with
# a tool's belief for the recipient: what the error and edge-guard tests send their bodies to.


@pytest.fixture
def transfer(api: Driver) -> str:
    api.register(
        "payments.transfer",
        slots=[{"key": "recipient_account"}, {"key": "memo"}],
        decisions=[{"key": "send_transfer", "slots": ["recipient_account"]}],
        risks={"recipient_account": "reversible", "memo": "reversible"},
        decision_risks={"send_transfer": "irreversible"},
    )
    return "payments.transfer"


@pytest.fixture
def instance_id(api: Driver, transfer: str) -> str:
    instance_id = api.open(
        transfer,
        beliefs=[{"slot": "recipient_account", "value": "DE89", "source": "tool", "turn": 1}],
    )
    api.plan(instance_id)
    return instance_id
