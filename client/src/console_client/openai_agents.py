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
`audience=`, and redeems it: a confirmation runs the function once; a run resumed again from
the same state finds it used, does not call the function, and tells the model so. A function
with a `receipt` parameter is handed the receipt (the model never sees that parameter); with
`redeem="tool"` the tool leaves the redemption to the tool server the function passes it to.
When the person changed a value, the tool's output says so, so the model does not go on
believing its own. `instance_of(interruption)` names the instance and its page, to send the
person there.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import json
import typing
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
from console_client.errors import ApiError, NotReady
from console_client.models import (
    AWAITING_USER,
    CANCELLED,
    OPEN,
    READY,
    REDEEM_AGENT,
    Resolution,
)
from console_client.registration import (
    log_registered,
    needs_registration,
    registration,
    slots_from_signature,
)
from console_client.tools import (
    ALREADY_DONE,
    RECEIPT_PARAMETER,
    call_key,
    changes_message,
    hands_receipt,
    rejection_message,
)

World = Mapping[str, Mapping[str, Any]]
WorldSource = World | Callable[[Mapping[str, Any]], World] | None
ConsoleFactory = Callable[[], AsyncConsole]

_SPEC_ATTRIBUTE = "_console_spec"


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
    audience: str | None = None
    # What registers the class on first use (None: never): its slots, and the decision.
    slots: tuple[dict[str, Any], ...] | None = None
    decision: str = ""

    def key(self, tool_name: str, call_id: str, arguments: Mapping[str, Any]) -> str:
        """The call's Idempotency-Key: its arguments' digest is part of it, so another set of
        arguments under the same call id can never find (and replay) this confirmation."""
        return call_key("openai-agents", tool_name, call_id, arguments)

    def world_for(self, arguments: Mapping[str, Any]) -> dict[str, Any]:
        world = self.world(arguments) if callable(self.world) else self.world
        return {slot: dict(value) for slot, value in (world or {}).items()}

    async def open(
        self, console: AsyncConsole, tool_name: str, call_id: str, arguments: Mapping[str, Any]
    ) -> dict[str, Any]:
        """The call's instance: opened the first time with its arguments, world and slots; the
        same request finds it again after that."""
        world = self.world_for(arguments)

        async def open_() -> dict[str, Any]:
            return await console.open_instance(
                self.task_class,
                self.principal,
                world=world or None,
                beliefs=_core.beliefs_from_values(arguments, world, "inference", None),
                idempotency_key=self.key(tool_name, call_id, arguments),
                slots=list(arguments),
                audience=self.audience,
            )

        try:
            return await open_()
        except ApiError as refused:
            if self.slots is None or not needs_registration(refused):
                raise
        form = registration(self.task_class, self.slots, self.decision)
        log_registered(console.base_url, self.task_class, await console.register_task_class(**form))
        return await open_()

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


def _shown_to_the_model(func: Callable[..., Any]) -> Callable[..., Any]:
    """`func` as the model sees it: without its `receipt` parameter (the tool hands the
    receipt over itself). The signature and annotations are `func`'s own, resolved."""
    signature = inspect.signature(func)
    if RECEIPT_PARAMETER not in signature.parameters:
        return func
    hints = typing.get_type_hints(func, include_extras=True)

    @functools.wraps(func)
    def shown(*args: Any, **kwargs: Any) -> Any:  # pragma: no cover - never called
        raise NotImplementedError

    del shown.__wrapped__  # the schema reads this signature, not func's
    parameters = [p for n, p in signature.parameters.items() if n != RECEIPT_PARAMETER]
    shown.__signature__ = signature.replace(parameters=parameters)  # type: ignore[attr-defined]
    shown.__annotations__ = {n: h for n, h in hints.items() if n != RECEIPT_PARAMETER}
    return shown


def console_tool(
    func: Callable[..., Any],
    *,
    task_class: str,
    principal: str,
    world: WorldSource = None,
    console: ConsoleFactory = AsyncConsole,
    name: str | None = None,
    description: str | None = None,
    audience: str | None = None,
    redeem: str = REDEEM_AGENT,
    register: bool = True,
    risks: Mapping[str, str] | None = None,
) -> FunctionTool:
    """A FunctionTool for `func` (sync or async; its parameters are slots of the task class)
    whose every call the console plans, and which runs once, with the confirmed bindings, on a
    verified receipt.

    `world` is the runtime's statement of the world per slot, or a function of the call's
    arguments that returns it. `console` makes a client (default: `AsyncConsole()` from
    CONSOLE_URL and CONSOLE_API_KEY). `audience` names who the receipt is for (the tool server
    that checks it). A `receipt` parameter of `func` is not shown to the model: it receives the
    receipt, for the service `func` calls to verify. The tool redeems the receipt before `func`
    runs (`redeem="agent"`), or leaves that to the service (`redeem="tool"`: `func` must take
    `receipt`, and `audience` is required).

    On first use (`register=True`), a class the console does not know is registered: a slot
    per parameter, typed from its annotation, suggesting the risk of its
    `Annotated[..., Risk("...")]` or of `risks`, and one decision named after the tool. Its
    slots are unclassified (so irreversible) until a classifier decides; the tool logs where.
    """
    takes_receipt = hands_receipt(func, redeem, audience)
    schema = function_schema(
        _shown_to_the_model(func), name_override=name, description_override=description
    )
    spec = _Spec(
        task_class=task_class,
        principal=principal,
        world=world,
        console=console,
        audience=audience,
        slots=tuple(slots_from_signature(func, risks)) if register else None,
        decision=schema.name,
    )

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
            confirmation = await client.confirmation(
                resolution, bindings=accepted, audience=audience, redeem=redeem
            )
        if confirmation.replayed:
            return ALREADY_DONE
        args, kwargs = schema.to_call_args(schema.params_pydantic_model(**accepted))
        if takes_receipt:
            kwargs[RECEIPT_PARAMETER] = confirmation.receipt
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
