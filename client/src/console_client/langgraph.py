"""LangGraph adapter: confirm an action from inside a node, pausing the graph with `interrupt()`.

    def send(state):
        bindings = confirm("payments.transfer", "alice", {"recipient_account": state["iban"]})
        return {"receipt": bank.transfer(**bindings)}   # the values the person confirmed

    graph = builder.compile(checkpointer=SqliteSaver(conn))
    graph.invoke(inputs, config)                 # pauses: result["__interrupt__"][0].value["url"]
    graph.invoke(Command(resume=True), config)   # after the person answered in the console

The instance is opened with an Idempotency-Key made of the thread id and the node's task, so the
node's re-run after a resume finds the same instance instead of opening a new one. Take the values
and world from the graph state: a re-run that computes different ones is refused (409) rather
than confirmed silently. The resume value is not trusted for anything: the bindings always come
from the console, digest checked.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any

from langgraph.config import get_config
from langgraph.types import interrupt

from console_client.client import Console
from console_client.errors import NotReady, Rejected
from console_client.models import AWAITING_USER, CANCELLED, Resolution

INTERRUPT_TYPE = "console_confirmation"
MAX_KEY_LENGTH = 200


def idempotency_key(name: str = "") -> str:
    """The key of this node run: thread, step and task (stable across the re-run on resume)."""
    config = get_config()
    configurable = config.get("configurable", {})
    metadata = config.get("metadata", {})
    thread = configurable.get("thread_id")
    if thread is None:
        raise ValueError("confirm() needs a thread_id in the config (and a checkpointer)")
    step = metadata.get("langgraph_step", "")
    task = configurable.get("checkpoint_ns") or metadata.get("langgraph_node", "")
    key = f"langgraph:{thread}:{step}:{task}" + (f":{name}" if name else "")
    if len(key) > MAX_KEY_LENGTH:
        key = "langgraph:" + hashlib.sha256(key.encode("utf-8")).hexdigest()
    return key


def interrupt_payload(resolution: Resolution, task_class: str, principal: str) -> dict[str, Any]:
    """What the graph's caller sees in `__interrupt__`: where to send the person."""
    return {
        "type": INTERRUPT_TYPE,
        "instance_id": resolution.instance_id,
        "url": resolution.url,
        "blocking": resolution.blocking,
        "task_class": task_class,
        "principal": principal,
    }


def _bindings(resolution: Resolution) -> dict[str, Any]:
    if resolution.status == CANCELLED:
        reason = resolution.reason
        raise Rejected(
            f"the person rejected instance {resolution.instance_id}"
            + (f": {reason}" if reason else ""),
            resolution.instance,
            reason,
        )
    if not resolution.ready:
        raise NotReady(f"instance {resolution.instance_id} is {resolution.status}")
    return resolution.verified_bindings()


def confirm(
    task_class: str,
    principal: str,
    values: Mapping[str, Any],
    *,
    world: Mapping[str, Any] | None = None,
    console: Console | None = None,
    name: str = "",
    timeout: float | None = None,
) -> dict[str, Any]:
    """Inside a node: the bindings the console confirms for `values` (beliefs of source
    `inference`, with `world`). Returns at once when nothing blocks; else pauses the graph with
    `interrupt()` and, once resumed, waits for the console (at most `timeout` seconds).

    Raises `Rejected` (with the person's `reason`) when the person rejected it, and
    `InstanceExpired` when they did not answer in time. `name` tells apart several confirm()
    calls in one node.
    """
    own = console is None
    console = console or Console()
    try:
        resolution = console.resolve(
            task_class,
            principal,
            values,
            world=world,
            idempotency_key=idempotency_key(name),
            wait=False,
        )
        if resolution.status == AWAITING_USER:
            interrupt(interrupt_payload(resolution, task_class, principal))
            resolution = console.wait(resolution.instance_id, timeout)
        return _bindings(resolution)
    finally:
        if own:
            console.close()
