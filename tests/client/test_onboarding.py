"""First use with no setup: the adapters register the task class they are given, and a runtime
lists what it has, against a live console."""

from __future__ import annotations

import asyncio
import logging
from typing import Annotated, Any

import pytest
from agents import Runner
from console_client import AsyncConsole, Console, Risk
from console_client.langgraph import confirm
from console_client.openai_agents import console_tool, resolve_interruptions
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph
from langgraph.types import Command

from beliefs.models import Decision, Slot, TaskClass
from tests.client.conftest import LiveConsole, Person
from tests.client.scripted_model import RUN_CONFIG, SAID, agent

ORDER = {"item": "standing desk", "quantity": 2}


def _class(console: LiveConsole, key: str) -> TaskClass | None:
    with console.exclusive():
        return TaskClass.objects.filter(key=key).first()


def test_a_console_tool_registers_its_class_from_the_signature_on_first_use(
    console: LiveConsole, person: Person, caplog: pytest.LogCaptureFixture
) -> None:
    placed: list[dict[str, Any]] = []

    def place_order(item: Annotated[str, Risk("irreversible")], quantity: int) -> str:
        """Place an order.

        Args:
            item: What to order.
            quantity: How many.
        """
        placed.append({"item": item, "quantity": quantity})
        return f"ordered {quantity} x {item}"

    assert _class(console, "shop.order") is None
    tool = console_tool(
        place_order,
        task_class="shop.order",
        principal="alice",
        console=lambda: AsyncConsole(console.url, console.key, poll_interval=0.05),
        risks={"quantity": "reversible"},
    )

    async def run(input_or_state: Any) -> Any:
        return await Runner.run(agent(tool, ORDER), input_or_state, run_config=RUN_CONFIG)

    with caplog.at_level(logging.WARNING, logger="console_client"):
        first = asyncio.run(run("order two standing desks"))
    # Registered: a slot per parameter, typed, with its suggestion; one decision, the tool.
    registered = _class(console, "shop.order")
    assert registered is not None
    with console.exclusive():
        slots = {
            s.key: (s.value_type, s.suggested_risk, s.risk_class)
            for s in Slot.objects.filter(task_class=registered)
        }
        (decision,) = Decision.objects.filter(task_class=registered)
        fed = sorted(decision.slots.values_list("key", flat=True))
    assert slots == {
        "item": ("string", "irreversible", "unclassified"),
        "quantity": ("number", "reversible", "unclassified"),
    }
    assert (decision.key, fed) == ("place_order", ["item", "quantity"])
    assert f"{console.url}/classify/shop.order/" in caplog.text
    # Unclassified, so irreversible: the call waits for the person, and runs once confirmed.
    assert len(first.interruptions) == 1 and placed == []
    person.answer("confirm")
    assert person.wait_for_prompt()  # the second slot's prompt
    person.answer("confirm")

    async def resume() -> Any:
        return await run(await resolve_interruptions(first, timeout=30))

    result = asyncio.run(resume())
    assert placed == [ORDER]
    assert result.final_output == SAID + "ordered 2 x standing desk"


def test_a_langgraph_confirm_registers_its_class_from_the_values(
    console: LiveConsole, person: Person
) -> None:
    done: list[dict[str, Any]] = []

    def order(state: dict[str, Any]) -> dict[str, Any]:
        with Console(console.url, console.key, poll_interval=0.05) as client:
            confirmation = confirm("shop.reorder", "alice", ORDER, console=client, timeout=30)
        if not confirmation.replayed:
            done.append(dict(confirmation))
        return {}

    builder = StateGraph(dict)
    builder.add_node("order", order)
    builder.add_edge(START, "order")
    builder.add_edge("order", END)
    graph = builder.compile(checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "onboarding-1"}}
    paused = graph.invoke({}, config)
    assert paused["__interrupt__"][0].value["task_class"] == "shop.reorder"
    registered = _class(console, "shop.reorder")
    assert registered is not None
    with console.exclusive():
        types = dict(Slot.objects.filter(task_class=registered).values_list("key", "value_type"))
        assert list(Decision.objects.filter(task_class=registered).values_list("key", flat=True))
        assert types == {"item": "string", "quantity": "number"}
    for _ in range(2):
        person.answer("confirm")
    graph.invoke(Command(resume=True), config)
    assert done == [ORDER]


def test_register_false_leaves_an_unknown_class_an_error(console: LiveConsole) -> None:
    from console_client import NotFound

    def order(state: dict[str, Any]) -> dict[str, Any]:
        with Console(console.url, console.key) as client:
            confirm("shop.nothing", "alice", ORDER, console=client, register=False)
        return {}

    graph = StateGraph(dict).add_node("order", order).add_edge(START, "order")
    compiled = graph.add_edge("order", END).compile(checkpointer=InMemorySaver())
    with pytest.raises(NotFound, match="unknown_task_class"):
        compiled.invoke({}, {"configurable": {"thread_id": "onboarding-2"}})
    assert _class(console, "shop.nothing") is None


def test_the_client_lists_the_runtimes_instances_and_classes(console: LiveConsole) -> None:
    with Console(console.url, console.key) as client:
        waiting = client.resolve(
            "payments.transfer",
            "alice",
            {"recipient_account": "DE89 3704 0044 0532 0130 00"},
            wait=False,
        )
        sandbox = client.resolve("payments.sandbox", "alice", {"memo": "x"}, slots=["memo"])
        everything = client.list_instances()
        asked = client.list_instances(status="awaiting_user")
        page = client.list_instances(limit=1, offset=1)
        classes = client.list_task_classes()
    assert sandbox.status == "ready" and everything["count"] == 2
    assert [i["id"] for i in asked["results"]] == [waiting.instance_id]
    assert len(page["results"]) == 1 and page["previous"] is not None
    assert {c["key"] for c in classes["results"]} == {"payments.transfer", "payments.sandbox"}
