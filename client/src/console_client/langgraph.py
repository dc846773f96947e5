"""LangGraph adapter: confirm an action from inside a node, pausing the graph with `interrupt()`.

    def send(state):
        transfer = confirm("payments.transfer", "alice", {"recipient_account": state["iban"]})
        if not transfer.replayed:                       # (a re-run of the node: done before)
            bank.transfer(**transfer)                   # the values the person confirmed
        return {"sent": True}

    async def send(state):                              # an async node: aconfirm
        bindings = await aconfirm("payments.transfer", "alice", {...})

    graph = builder.compile(checkpointer=SqliteSaver(conn))
    graph.invoke(inputs, config)                 # pauses: result["__interrupt__"][0].value["url"]
    graph.invoke(Command(resume=True), config)   # after the person answered in the console

The instance is opened with the values as beliefs and exactly their keys as the action's slots
(`slots=` names others, which the person is then asked for). Its Idempotency-Key is the thread,
the step, the node's task and the digest of the values, so the node's re-run after a resume
finds the same instance, and a re-run with other values (after `update_state`) is a new
instance: the one it supersedes is cancelled then, so the person's inbox never keeps a request
nobody waits for. Before returning the bindings, `confirm` verifies the instance's signed
receipt against them and redeems it (or, with `redeem="tool"`, hands it on in the
`Confirmation`): the confirmation is used once, and a later run of the node (LangGraph runs a
node from its top on every resume, so a second confirm() in it makes the first run again; or a
replay from an older checkpoint) gets it back marked `replayed`, so the action it guards is
skipped, never run twice. The resume value is not trusted for anything: the bindings always
come from the console, digest checked.
"""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from langgraph.checkpoint.base import BaseCheckpointSaver, CheckpointTuple
from langgraph.config import get_config
from langgraph.types import interrupt

from console_client.client import AsyncConsole, Console
from console_client.digest import bindings_digest
from console_client.errors import ApiError, NotReady, Rejected
from console_client.models import (
    AWAITING_USER,
    CANCELLED,
    REDEEM_AGENT,
    REDEEM_TOOL,
    WAITING,
    Confirmation,
    Resolution,
    check_redeem,
)
from console_client.registration import (
    log_registered,
    needs_registration,
    registration,
    slots_from_values,
)

INTERRUPT_TYPE = "console_confirmation"
MAX_KEY_LENGTH = 200
DEFAULT_TIMEOUT = 300.0  # seconds a resumed node waits for the person before WaitTimeout
# How far back a node looks for the instance of an earlier run that its new values supersede.
SUPERSEDED_LOOKBACK = 20

try:  # The key LangGraph hands a node its checkpointer under, exported for compatibility only.
    from langgraph.constants import CONFIG_KEY_CHECKPOINTER

    _CHECKPOINTER: str | None = CONFIG_KEY_CHECKPOINTER
except ImportError:  # (LangGraph 2 may drop it: pass checkpointer= to keep the clean-up)
    _CHECKPOINTER = None


def _node_identity(name: str) -> tuple[str, str, str, str]:
    config = get_config()
    configurable = config.get("configurable", {})
    metadata = config.get("metadata", {})
    thread = configurable.get("thread_id")
    if thread is None:
        raise ValueError("confirm() needs a thread_id in the config (and a checkpointer)")
    step = str(metadata.get("langgraph_step", ""))
    task = configurable.get("checkpoint_ns") or metadata.get("langgraph_node", "")
    return str(thread), step, str(task), str(metadata.get("langgraph_node", ""))


def idempotency_key(
    name: str = "",
    values: Mapping[str, Any] | None = None,
    world: Mapping[str, Any] | None = None,
    slots: Sequence[str] | None = None,
) -> str:
    """The key of this node run and these values: thread, step, task (stable across the re-run
    on resume) and the digest of what is asked, so other values are another instance."""
    thread, step, task, _ = _node_identity(name)
    asked = bindings_digest({"values": dict(values or {}), "world": world, "slots": slots})
    key = f"langgraph:{thread}:{step}:{task}" + (f":{name}" if name else "") + f":{asked}"
    if len(key) > MAX_KEY_LENGTH:
        key = "langgraph:" + hashlib.sha256(key.encode("utf-8")).hexdigest()
    return key


def interrupt_payload(
    resolution: Resolution, task_class: str, principal: str, node: str = "", name: str = ""
) -> dict[str, Any]:
    """What the graph's caller sees in `__interrupt__`: where to send the person (`node` and
    `name` let a later run of the node find, and cancel, the instance it supersedes)."""
    return {
        "type": INTERRUPT_TYPE,
        "instance_id": resolution.instance_id,
        "url": resolution.url,
        "blocking": resolution.blocking,
        "task_class": task_class,
        "principal": principal,
        "node": node,
        "name": name,
    }


def _resolve_arguments(
    task_class: str,
    principal: str,
    values: Mapping[str, Any],
    world: Mapping[str, Any] | None,
    name: str,
    slots: Sequence[str] | None,
    audience: str | None = None,
) -> dict[str, Any]:
    """What confirm and aconfirm ask the console to resolve: `values` for the action's `slots`
    (default: the keys of `values`), under this node run's idempotency key, without waiting
    (the graph pauses instead)."""
    slots = list(values) if slots is None else list(slots)
    return {
        "task_class": task_class,
        "principal": principal,
        "values": values,
        "world": world,
        "idempotency_key": idempotency_key(name, values, world, slots),
        "wait": False,
        "slots": slots,
        "audience": audience,
    }


def _confirmed_bindings(resolution: Resolution) -> dict[str, Any]:
    """The verified bindings of a ready resolution: `Rejected` when the person rejected it,
    `NotReady` while it is not ready."""
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


def _earlier_instances(
    tuples: Iterable[CheckpointTuple], node: str, name: str, current: str
) -> set[str]:
    """Instances that earlier runs of this node (same node, same name) paused on."""
    found: set[str] = set()
    for checkpoint in tuples:
        for _task, channel, value in checkpoint.pending_writes or []:
            if channel != "__interrupt__":
                continue
            for pause in value if isinstance(value, list | tuple) else [value]:
                payload = getattr(pause, "value", None)
                if (
                    isinstance(payload, dict)
                    and payload.get("type") == INTERRUPT_TYPE
                    and payload.get("node") == node
                    and payload.get("name") == name
                    and payload.get("instance_id") != current
                ):
                    found.add(str(payload["instance_id"]))
    return found


def _history_config(
    given: BaseCheckpointSaver[Any] | None,
) -> tuple[BaseCheckpointSaver[Any] | None, dict[str, Any]]:
    """The checkpointer to read the node's earlier runs from (`given`, else the one the config
    hands the node) and the config of the thread's history."""
    config = get_config()
    configurable = config.get("configurable", {})
    checkpointer = given or (configurable.get(_CHECKPOINTER) if _CHECKPOINTER else None)
    namespace = str(configurable.get("checkpoint_ns") or "")
    parent = namespace.rsplit("|", 1)[0] if "|" in namespace else ""
    history = {
        "configurable": {"thread_id": configurable.get("thread_id"), "checkpoint_ns": parent}
    }
    return (checkpointer if isinstance(checkpointer, BaseCheckpointSaver) else None), history


def _superseded(
    node: str, name: str, current: str, given: BaseCheckpointSaver[Any] | None = None
) -> set[str]:
    checkpointer, history = _history_config(given)
    if checkpointer is None:
        return set()
    tuples = checkpointer.list(history, limit=SUPERSEDED_LOOKBACK)  # type: ignore[arg-type]
    return _earlier_instances(tuples, node, name, current)


async def _asuperseded(
    node: str, name: str, current: str, given: BaseCheckpointSaver[Any] | None = None
) -> set[str]:
    checkpointer, history = _history_config(given)
    if checkpointer is None:
        return set()
    try:
        tuples = [t async for t in checkpointer.alist(history, limit=SUPERSEDED_LOOKBACK)]  # type: ignore[arg-type]
    except NotImplementedError:  # a sync-only checkpointer (SqliteSaver) in an async graph
        return await asyncio.to_thread(_superseded, node, name, current, checkpointer)
    return _earlier_instances(tuples, node, name, current)


def _cancel_reason(current: str) -> str:
    return f"superseded: the graph asked again with other values (instance {current})"


def _asked_the_person(resolution: Resolution) -> bool:
    """Whether this instance needs, or needed, the person: it waits for people, or it had a
    blocking prompt (answered since, or rejected). Its confirm() paused the graph on the first
    run, so it calls `interrupt()` on every later run of the node too: LangGraph matches resume
    values to a node's `interrupt()` calls by their order, and a confirm() that skipped its
    call once answered would hand the next confirm() its resume value."""
    if resolution.status in WAITING:
        return True
    prompts = resolution.instance.get("prompts") or []
    return any(isinstance(p, Mapping) and p.get("blocking") for p in prompts)


def _checked(redeem: str, audience: str | None) -> None:
    check_redeem(redeem)
    if redeem == REDEEM_TOOL and not audience:
        raise ValueError('redeem="tool" needs the audience= the tool server verifies')


def confirm(
    task_class: str,
    principal: str,
    values: Mapping[str, Any],
    *,
    world: Mapping[str, Any] | None = None,
    console: Console | None = None,
    name: str = "",
    timeout: float | None = DEFAULT_TIMEOUT,
    slots: Sequence[str] | None = None,
    audience: str | None = None,
    redeem: str = REDEEM_AGENT,
    register: bool = True,
    risks: Mapping[str, str] | None = None,
    checkpointer: BaseCheckpointSaver[Any] | None = None,
) -> Confirmation:
    """Inside a node: the `Confirmation` (a dict of the bindings) the console gives for
    `values` (beliefs of source `inference`, with `world`), its receipt verified against them.
    Returns at once when nothing blocks; else pauses the graph with `interrupt()` and, once
    resumed, waits for the console (at most `timeout` seconds, then `WaitTimeout`; the
    instance stays open and a later resume waits again).

    The receipt is redeemed here (`redeem="agent"`), or handed on in `Confirmation.receipt`
    for the tool server to verify and redeem (`redeem="tool"`, with the `audience` it checks).
    When the confirmation was already used by an earlier run of this node (LangGraph runs a
    node from its top again on every resume, so a node with two confirm() calls passes the
    first one again), it is returned with `replayed=True`: skip the action it guards, which
    was handed over then. So each action runs at most once.

    Raises `Rejected` (with the person's `reason`) when the person rejected it, and
    `InstanceExpired` when they did not answer in time. `name` tells apart several confirm()
    calls in one node. `slots` are the action's slots (default: the keys of `values`).

    A class the console does not know is registered on first use (`register=True`): a slot
    per key of `values`, typed from its value, suggesting the risk `risks` names, and one
    decision named after the node; unclassified (so irreversible) until a classifier decides.
    `checkpointer` is the graph's, where the node finds the instances of its earlier runs to
    cancel (default: the one LangGraph hands the node).
    """
    _checked(redeem, audience)
    _, _, _, node = _node_identity(name)
    own = console is None
    console = console or Console()
    try:
        arguments = _resolve_arguments(task_class, principal, values, world, name, slots, audience)
        try:
            resolution = console.resolve(**arguments)
        except ApiError as refused:
            if not (register and needs_registration(refused)):
                raise
            form = registration(task_class, slots_from_values(values, risks), node)
            log_registered(console.base_url, task_class, console.register_task_class(**form))
            resolution = console.resolve(**arguments)
        for earlier in _superseded(node, name, resolution.instance_id, checkpointer):
            _cancel_if_waiting(console, earlier, _cancel_reason(resolution.instance_id))
        if _asked_the_person(resolution):
            interrupt(interrupt_payload(resolution, task_class, principal, node, name))
            if resolution.status in WAITING:
                resolution = console.wait(resolution.instance_id, timeout)
        _confirmed_bindings(resolution)
        return console.confirmation(resolution, audience=audience, redeem=redeem)
    finally:
        if own:
            console.close()


def _cancel_if_waiting(console: Console, instance_id: str, reason: str) -> None:
    try:
        if console.get(instance_id).get("status") == AWAITING_USER:
            console.cancel(instance_id, reason)
    except ApiError:  # gone, answered or cancelled meanwhile: nothing left to clean up
        pass


async def _acancel_if_waiting(console: AsyncConsole, instance_id: str, reason: str) -> None:
    try:
        if (await console.get(instance_id)).get("status") == AWAITING_USER:
            await console.cancel(instance_id, reason)
    except ApiError:
        pass


async def aconfirm(
    task_class: str,
    principal: str,
    values: Mapping[str, Any],
    *,
    world: Mapping[str, Any] | None = None,
    console: AsyncConsole | None = None,
    name: str = "",
    timeout: float | None = DEFAULT_TIMEOUT,
    slots: Sequence[str] | None = None,
    audience: str | None = None,
    redeem: str = REDEEM_AGENT,
    register: bool = True,
    risks: Mapping[str, str] | None = None,
    checkpointer: BaseCheckpointSaver[Any] | None = None,
) -> Confirmation:
    """`confirm` for async nodes: the same, with `AsyncConsole`, never blocking the loop."""
    _checked(redeem, audience)
    _, _, _, node = _node_identity(name)
    own = console is None
    console = console or AsyncConsole()
    try:
        arguments = _resolve_arguments(task_class, principal, values, world, name, slots, audience)
        try:
            resolution = await console.resolve(**arguments)
        except ApiError as refused:
            if not (register and needs_registration(refused)):
                raise
            form = registration(task_class, slots_from_values(values, risks), node)
            body = await console.register_task_class(**form)
            log_registered(console.base_url, task_class, body)
            resolution = await console.resolve(**arguments)
        for earlier in await _asuperseded(node, name, resolution.instance_id, checkpointer):
            await _acancel_if_waiting(console, earlier, _cancel_reason(resolution.instance_id))
        if _asked_the_person(resolution):
            interrupt(interrupt_payload(resolution, task_class, principal, node, name))
            if resolution.status in WAITING:
                resolution = await console.wait(resolution.instance_id, timeout)
        _confirmed_bindings(resolution)
        return await console.confirmation(resolution, audience=audience, redeem=redeem)
    finally:
        if own:
            await console.close()
