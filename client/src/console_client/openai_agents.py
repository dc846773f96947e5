"""OpenAI Agents SDK adapter: a function tool whose call the console confirms.

    tool = console_tool(send_transfer, task_class="payments.transfer", principal="alice")
    agent = Agent(name="payments", tools=[tool])
    result = await Runner.run(agent, "pay Bob")
    while result.interruptions:                       # only when something blocks
        state = await resolve_interruptions(result)   # waits for the person in the console
        result = await Runner.run(agent, state)

The model's arguments are recorded as beliefs (source `inference`, each with the world the
runtime states for its slot) on an instance keyed by the tool call, and planned. `needs_approval`
is true exactly when the plan blocks. `resolve_interruptions` waits for the console and approves
or rejects (the person's reason goes back to the model). The tool then runs with the **confirmed
bindings** (an edit made in the console included) after their digest is checked. The RunState
can be stored with `state.to_string()` and resumed in another process: the instance is found
again by its Idempotency-Key.
"""

from __future__ import annotations

import asyncio
import inspect
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from agents import FunctionTool, RunContextWrapper, RunResult, RunState
from agents.function_schema import function_schema
from agents.items import ToolApprovalItem
from agents.tool_context import ToolContext

from console_client.client import AsyncConsole
from console_client.errors import NotReady
from console_client.models import AWAITING_USER, CANCELLED, OPEN, READY, Resolution

World = Mapping[str, Mapping[str, Any]]
WorldSource = World | Callable[[Mapping[str, Any]], World] | None
ConsoleFactory = Callable[[], AsyncConsole]

_SPEC_ATTRIBUTE = "_console_spec"


@dataclass(frozen=True)
class _Spec:
    task_class: str
    principal: str
    world: WorldSource
    console: ConsoleFactory

    def key(self, tool_name: str, call_id: str) -> str:
        return f"openai-agents:{tool_name}:{call_id}"

    def world_for(self, arguments: Mapping[str, Any]) -> dict[str, Any]:
        world = self.world(arguments) if callable(self.world) else self.world
        return {slot: dict(value) for slot, value in (world or {}).items()}

    async def open(self, console: AsyncConsole, tool_name: str, call_id: str) -> dict[str, Any]:
        """The call's instance: opened the first time, found again by its key after that."""
        return await console.open_instance(
            self.task_class, self.principal, idempotency_key=self.key(tool_name, call_id)
        )

    async def plan(self, tool_name: str, call_id: str, arguments: Mapping[str, Any]) -> str:
        async with self.console() as console:
            instance = await self.open(console, tool_name, call_id)
            if instance["status"] != OPEN:
                return str(instance["status"])
            world = self.world_for(arguments)
            if world:
                await console.set_world(instance["id"], world)
            for slot, value in arguments.items():
                await console.record_belief(
                    instance["id"], slot, value, source="inference", world_ref=world.get(slot)
                )
            return str((await console.plan(instance["id"]))["status"])

    async def resolution(self, tool_name: str, call_id: str) -> Resolution:
        async with self.console() as console:
            instance = await self.open(console, tool_name, call_id)
            return Resolution.from_payload(instance, console.base_url)

    async def wait(self, tool_name: str, call_id: str, timeout: float | None) -> Resolution:
        async with self.console() as console:
            instance = await self.open(console, tool_name, call_id)
            return await console.wait(instance["id"], timeout)


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
    """A FunctionTool for `func` (sync or async; its parameters are the task class's slots)
    whose every call the console plans, and which runs with the confirmed bindings.

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
        resolution = await spec.resolution(ctx.tool_name, ctx.tool_call_id)
        if not resolution.ready:
            why = f" ({resolution.reason})" if resolution.reason else ""
            raise NotReady(
                f"{ctx.tool_name} was not confirmed in the console: the instance is "
                f"{resolution.status}{why}. Approve it with resolve_interruptions()."
            )
        bindings = resolution.verified_bindings()
        accepted = {k: v for k, v in bindings.items() if k in schema.signature.parameters}
        args, kwargs = schema.to_call_args(schema.params_pydantic_model(**accepted))
        if inspect.iscoroutinefunction(func):
            return await func(*args, **kwargs)
        return await asyncio.to_thread(func, *args, **kwargs)

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


async def resolve_interruptions(
    run: RunResult | RunState[Any, Any], *, timeout: float | None = None
) -> RunState[Any, Any]:
    """Wait for the console on every interruption of a console tool; approve the confirmed
    ones, reject the rejected ones with the person's reason. Returns the state to resume with
    `Runner.run(agent, state)`. Interruptions of other tools are left as they are.

    Raises `InstanceExpired` when the person did not answer in time, `WaitTimeout` after
    `timeout` seconds.
    """
    state = run.to_state() if isinstance(run, RunResult) else run
    for item in state.get_interruptions():
        spec = _spec_of(item)
        if spec is None or item.tool_name is None:
            continue
        resolution = await spec.wait(item.tool_name, _call_id(item), timeout)
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
    return json.loads(arguments) if isinstance(arguments, str) else {}
