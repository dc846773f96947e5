"""OpenAI Agents SDK adapter: a function tool whose call the console confirms.

    tool = console_tool(send_transfer, task_class="payments.transfer", principal="alice")
    agent = Agent(name="payments", tools=[tool])
    result = await Runner.run(agent, "pay Bob")       # or Runner.run_streamed(...)
    while result.interruptions:                       # only when something blocks
        state = await resolve_interruptions(result)   # waits for the person in the console
        result = await Runner.run(agent, state)

Each call opens an instance with the model's arguments as beliefs (source `inference`, each
with the world the runtime states for its slot) and exactly the call's keys as its slots, and
plans it; `needs_approval` is true exactly when the plan blocks. The instance's Idempotency-Key
is the tool, the call id **and the digest of the arguments**: the same call finds its instance
again (a RunState stored with `state.to_string()` resumes in another process), while a call id
reused with other arguments is another instance, asked again.

Before the wrapped function runs, the tool checks the instance's signed receipt against the
exact arguments it passes (the confirmed bindings, an edit made in the console included) and
redeems it: a confirmation runs the function once; running it again raises `ReceiptRedeemed`
and never calls the function. When the person changed a value, the tool's output says so, so
the model does not go on believing its own. `instance_of(interruption)` names the instance and
its page, to send the person there.
"""

from __future__ import annotations

import asyncio
import hashlib
import inspect
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from agents import FunctionTool, RunContextWrapper, RunState
from agents.function_schema import function_schema
from agents.items import ToolApprovalItem
from agents.result import RunResult, RunResultStreaming
from agents.tool_context import ToolContext

from console_client import _core
from console_client.client import AsyncConsole
from console_client.digest import bindings_digest
from console_client.errors import NotReady
from console_client.models import AWAITING_USER, CANCELLED, OPEN, READY, Resolution

World = Mapping[str, Mapping[str, Any]]
WorldSource = World | Callable[[Mapping[str, Any]], World] | None
ConsoleFactory = Callable[[], AsyncConsole]

_SPEC_ATTRIBUTE = "_console_spec"
MAX_KEY_LENGTH = 200


@dataclass(frozen=True)
class ConsoleInstance:
    """The console instance of one tool call: where the person answers it."""

    instance_id: str
    url: str
    status: str


@dataclass(frozen=True)
class _Spec:
    task_class: str
    principal: str
    world: WorldSource
    console: ConsoleFactory

    def key(self, tool_name: str, call_id: str, arguments: Mapping[str, Any]) -> str:
        """The call's Idempotency-Key: its arguments' digest is part of it, so another set of
        arguments under the same call id can never find (and replay) this confirmation."""
        key = f"openai-agents:{tool_name}:{call_id}:{bindings_digest(arguments)}"
        if len(key) > MAX_KEY_LENGTH:
            key = "openai-agents:" + hashlib.sha256(key.encode("utf-8")).hexdigest()
        return key

    def world_for(self, arguments: Mapping[str, Any]) -> dict[str, Any]:
        world = self.world(arguments) if callable(self.world) else self.world
        return {slot: dict(value) for slot, value in (world or {}).items()}

    async def open(
        self, console: AsyncConsole, tool_name: str, call_id: str, arguments: Mapping[str, Any]
    ) -> dict[str, Any]:
        """The call's instance: opened the first time with its arguments, world and slots; the
        same request finds it again after that."""
        world = self.world_for(arguments)
        return await console.open_instance(
            self.task_class,
            self.principal,
            world=world or None,
            beliefs=_core.beliefs_from_values(arguments, world, "inference", None),
            idempotency_key=self.key(tool_name, call_id, arguments),
            slots=list(arguments),
        )

    async def plan(self, tool_name: str, call_id: str, arguments: Mapping[str, Any]) -> str:
        async with self.console() as console:
            instance = await self.open(console, tool_name, call_id, arguments)
            if instance["status"] != OPEN:
                return str(instance["status"])
            return str((await console.plan(instance["id"]))["status"])

    async def instance(
        self, tool_name: str, call_id: str, arguments: Mapping[str, Any]
    ) -> ConsoleInstance:
        async with self.console() as console:
            instance = await self.open(console, tool_name, call_id, arguments)
            resolution = Resolution.from_payload(instance, console.base_url)
            return ConsoleInstance(resolution.instance_id, resolution.url, resolution.status)

    async def wait(
        self, tool_name: str, call_id: str, arguments: Mapping[str, Any], timeout: float | None
    ) -> Resolution:
        async with self.console() as console:
            instance = await self.open(console, tool_name, call_id, arguments)
            return await console.wait(instance["id"], timeout)


def changes_message(arguments: Mapping[str, Any], bindings: Mapping[str, Any]) -> str | None:
    """What the model reads when the person changed its values; None when they did not."""
    changed = [
        f"{slot}: {json.dumps(arguments.get(slot), ensure_ascii=False)} → "
        f"{json.dumps(value, ensure_ascii=False)}"
        for slot, value in bindings.items()
        if slot not in arguments or arguments[slot] != value
    ]
    if not changed:
        return None
    return (
        "The person changed values in the confirmation console; the tool ran with theirs, "
        "not yours: " + "; ".join(changed)
    )


def console_tool(
    func: Callable[..., Any],
    *,
    task_class: str,
    principal: str,
    world: WorldSource = None,
    console: ConsoleFactory = AsyncConsole,
    name: str | None = None,
    description: str | None = None,
) -> FunctionTool:
    """A FunctionTool for `func` (sync or async; its parameters are slots of the task class)
    whose every call the console plans, and which runs once, with the confirmed bindings, on a
    verified and redeemed receipt.

    `world` is the runtime's statement of the world per slot, or a function of the call's
    arguments that returns it. `console` makes a client (default: `AsyncConsole()` from
    CONSOLE_URL and CONSOLE_API_KEY).
    """
    schema = function_schema(func, name_override=name, description_override=description)
    spec = _Spec(task_class=task_class, principal=principal, world=world, console=console)

    async def needs_approval(
        ctx: RunContextWrapper[Any], arguments: dict[str, Any], call_id: str
    ) -> bool:
        status = await spec.plan(schema.name, call_id, arguments)
        return status != READY

    async def invoke(ctx: ToolContext[Any], arguments_json: str) -> Any:
        arguments = json.loads(arguments_json or "{}")
        async with spec.console() as client:
            instance = await spec.open(client, ctx.tool_name, ctx.tool_call_id, arguments)
            if instance["status"] == READY and "receipt" not in instance:
                instance = await client.get(instance["id"])  # the read names the receipt
            resolution = Resolution.from_payload(instance, client.base_url)
            if not resolution.ready:
                why = f" ({resolution.reason})" if resolution.reason else ""
                raise NotReady(
                    f"{ctx.tool_name} was not confirmed in the console: the instance is "
                    f"{resolution.status}{why}. Approve it with resolve_interruptions()."
                )
            bindings = resolution.verified_bindings()
            accepted = {k: v for k, v in bindings.items() if k in schema.signature.parameters}
            # The receipt must approve exactly what the function is given, and only once.
            token = resolution.usable_receipt()
            receipt = await client.verify_receipt(token, bindings=accepted)
            await client.redeem(receipt.token, bindings_digest=receipt.bindings_digest)
        args, kwargs = schema.to_call_args(schema.params_pydantic_model(**accepted))
        if inspect.iscoroutinefunction(func):
            output = await func(*args, **kwargs)
        else:
            output = await asyncio.to_thread(func, *args, **kwargs)
        changes = changes_message(arguments, accepted)
        if changes is None:
            return output
        if isinstance(output, str):
            return f"{output}\n\n{changes}"
        return {"result": output, "console": changes}

    tool = FunctionTool(
        name=schema.name,
        description=schema.description or "",
        params_json_schema=schema.params_json_schema,
        on_invoke_tool=invoke,
        strict_json_schema=schema.strict_json_schema,
        needs_approval=needs_approval,
    )
    setattr(tool, _SPEC_ATTRIBUTE, spec)
    return tool


def _spec_of(item: ToolApprovalItem) -> _Spec | None:
    for tool in getattr(item.agent, "tools", []):
        if getattr(tool, "name", None) == item.tool_name:
            spec = getattr(tool, _SPEC_ATTRIBUTE, None)
            return spec if isinstance(spec, _Spec) else None
    return None


def _call_id(item: ToolApprovalItem) -> str:
    raw = item.raw_item
    call_id = raw.get("call_id") if isinstance(raw, dict) else getattr(raw, "call_id", None)
    if not call_id:
        raise ValueError(f"interruption for {item.tool_name} has no call id")
    return str(call_id)


def rejection_message(resolution: Resolution) -> str:
    """What the model reads when the person rejected the call."""
    reason = resolution.reason or "no reason given"
    return f"The person rejected this call in the confirmation console. Their reason: {reason}"


async def instance_of(item: ToolApprovalItem) -> ConsoleInstance:
    """The console instance of an interruption of a console tool: its id, page URL and status.
    Raises ValueError for an interruption of another tool."""
    spec = _spec_of(item)
    if spec is None or item.tool_name is None:
        raise ValueError(f"{item.tool_name} is not a console tool")
    return await spec.instance(item.tool_name, _call_id(item), arguments_of(item))


async def resolve_interruptions(
    run: RunResult | RunResultStreaming | RunState[Any, Any], *, timeout: float | None = None
) -> RunState[Any, Any]:
    """Wait for the console on every interruption of a console tool; approve the confirmed
    ones, reject the rejected ones with the person's reason. Returns the state to resume with
    `Runner.run(agent, state)`. Interruptions of other tools are left as they are. Takes the
    result of `Runner.run` or of `Runner.run_streamed` (once its events are consumed), or a
    RunState.

    Raises `InstanceExpired` when the person did not answer in time, `WaitTimeout` after
    `timeout` seconds.
    """
    state = run if isinstance(run, RunState) else run.to_state()
    for item in state.get_interruptions():
        spec = _spec_of(item)
        if spec is None or item.tool_name is None:
            continue
        resolution = await spec.wait(item.tool_name, _call_id(item), arguments_of(item), timeout)
        if resolution.ready:
            resolution.verified_bindings()
            state.approve(item)
        elif resolution.status == CANCELLED:
            state.reject(item, rejection_message=rejection_message(resolution))
        elif resolution.status != AWAITING_USER:
            raise NotReady(f"instance {resolution.instance_id} is {resolution.status}")
    return state


def arguments_of(item: ToolApprovalItem) -> dict[str, Any]:
    """The model's arguments of an interruption (what the console was asked to confirm)."""
    raw = item.raw_item
    arguments = raw.get("arguments") if isinstance(raw, dict) else getattr(raw, "arguments", None)
    parsed = json.loads(arguments) if isinstance(arguments, str) and arguments else {}
    return parsed if isinstance(parsed, dict) else {}
