"""Pydantic AI adapter: a tool whose call the console confirms, through Pydantic AI's deferred
tool approvals.

    agent = Agent(model, tools=[console_tool(send_transfer, task_class="payments.transfer",
                                             principal="alice")],
                  output_type=[str, DeferredToolRequests])
    result = await agent.run("pay Bob his rent")
    while isinstance(result.output, DeferredToolRequests):    # only when the plan blocks
        approvals = await resolve_approvals(result.output)     # waits for the person
        result = await agent.run(message_history=result.all_messages(),
                                 deferred_tool_results=approvals)

Each call opens an instance with the model's arguments as beliefs and exactly the call's keys as
its slots, keyed by the tool, the call id and the digest of the arguments, and plans it. When
nothing blocks, the tool runs at once; otherwise it asks for approval (`ApprovalRequired`, with
the instance and its page in the request's metadata). `resolve_approvals` waits for the person:
a confirmation approves the call with the person's values (`ToolApproved(override_args=...)`),
a rejection denies it with their reason (`ToolDenied`). Before the function runs, the tool
verifies the receipt against exactly the arguments it passes and redeems it (or, with
`redeem="tool"`, hands it to the function's `receipt` parameter for the service it calls): a
confirmation runs the function once; an approval replayed, or one that did not come from the
console, never runs it. When the person changed a value, the tool's output says so.
"""

from __future__ import annotations

import functools
import inspect
import typing
from collections.abc import Callable, Mapping
from typing import Any

from pydantic_ai import RunContext, Tool
from pydantic_ai.exceptions import ApprovalRequired
from pydantic_ai.tools import DeferredToolRequests, DeferredToolResults, ToolApproved, ToolDenied

from console_client import _core
from console_client.client import AsyncConsole
from console_client.errors import ApiError, NotReady
from console_client.models import (
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

ConsoleFactory = Callable[[], AsyncConsole]
# Where a console tool's approval request and its resolution name the instance.
INSTANCE = "console_instance"
URL = "console_url"
ASKED = "console_asked"


def console_tool(
    func: Callable[..., Any],
    *,
    task_class: str,
    principal: str,
    world: Mapping[str, Mapping[str, Any]] | None = None,
    console: ConsoleFactory = AsyncConsole,
    name: str | None = None,
    description: str | None = None,
    audience: str | None = None,
    redeem: str = REDEEM_AGENT,
    register: bool = True,
    risks: Mapping[str, str] | None = None,
) -> Tool[Any]:
    """A Pydantic AI `Tool` for `func` (sync or async; its parameters are slots of the task
    class) that runs only on the console's confirmation, once, with the confirmed values.

    `world` is the runtime's statement of the world per slot. `console` makes a client
    (default: `AsyncConsole()` from CONSOLE_URL and CONSOLE_API_KEY). A `receipt` parameter of
    `func` is not shown to the model: it receives the receipt. `redeem="tool"` leaves the
    redemption to the service `func` passes the receipt to (`audience` required). An unknown
    class is registered on first use (`register=True`), as `openai_agents.console_tool` does.
    """
    takes_receipt = hands_receipt(func, redeem, audience)
    tool_name = name or func.__name__
    slots = slots_from_signature(func, risks) if register else None
    world_of = {slot: dict(ref) for slot, ref in (world or {}).items()}

    async def open_(client: AsyncConsole, call_id: str, arguments: Mapping[str, Any]) -> Any:
        async def once() -> Any:
            return await client.open_instance(
                task_class,
                principal,
                world=world_of or None,
                beliefs=_core.beliefs_from_values(arguments, world_of, "inference", None),
                idempotency_key=call_key("pydantic-ai", tool_name, call_id, arguments),
                slots=list(arguments),
                audience=audience,
            )

        try:
            return await once()
        except ApiError as refused:
            if slots is None or not needs_registration(refused):
                raise
        body = await client.register_task_class(**registration(task_class, slots, tool_name))
        log_registered(client.base_url, task_class, body)
        return await once()

    async def run(
        client: AsyncConsole, resolution: Resolution, arguments: dict[str, Any]
    ) -> tuple[bool, str | None]:
        """Verify (and redeem) the receipt for exactly `arguments`: (replayed, the token)."""
        confirmation = await client.confirmation(
            resolution, bindings=arguments, audience=audience, redeem=redeem
        )
        return confirmation.replayed, confirmation.receipt

    async def gated(ctx: RunContext[Any], **arguments: Any) -> Any:
        call_id = ctx.tool_call_id or ""
        metadata = ctx.tool_call_metadata if isinstance(ctx.tool_call_metadata, dict) else {}
        asked: Mapping[str, Any] = arguments
        async with console() as client:
            if ctx.tool_call_approved:
                instance_id = metadata.get(INSTANCE)
                if not instance_id:
                    raise NotReady(
                        f"{tool_name} was approved without the console: resolve its approval "
                        "with resolve_approvals(), which asks the person"
                    )
                payload = await client.get(str(instance_id))
                asked = metadata.get(ASKED) or arguments
            else:
                payload = await open_(client, call_id, arguments)
                if payload["status"] == OPEN:
                    payload = await client.plan(payload["id"])
                if payload["status"] == READY:
                    payload = await client.get(payload["id"])  # the read carries the receipt
                else:
                    resolution = Resolution.from_payload(payload, client.base_url)
                    raise ApprovalRequired(
                        metadata={INSTANCE: resolution.instance_id, URL: resolution.url}
                    )
            resolution = Resolution.from_payload(payload, client.base_url)
            if payload.get("task_class") != task_class or not resolution.ready:
                raise NotReady(
                    f"{tool_name} was not confirmed in the console: instance "
                    f"{resolution.instance_id} is {resolution.status}"
                )
            replayed, token = await run(client, resolution, dict(arguments))
        if replayed:
            return ALREADY_DONE
        call = dict(arguments)
        if takes_receipt:
            call[RECEIPT_PARAMETER] = token
        output = func(**call)
        if inspect.isawaitable(output):
            output = await output
        changes = changes_message(asked, arguments)
        if changes is None:
            return output
        if isinstance(output, str):
            return f"{output}\n\n{changes}"
        return {"result": output, "console": changes}

    _as_tool_function(gated, func)
    return Tool(gated, takes_ctx=True, name=tool_name, description=description)


def _as_tool_function(gated: Callable[..., Any], func: Callable[..., Any]) -> None:
    """Give `gated` the signature, annotations and docstring Pydantic AI reads for the tool's
    schema: a run context, then `func`'s parameters but its `receipt`."""
    signature = inspect.signature(func)
    hints = typing.get_type_hints(func, include_extras=True)
    context = inspect.Parameter("ctx", inspect.Parameter.POSITIONAL_OR_KEYWORD)
    parameters = [
        p.replace(kind=inspect.Parameter.KEYWORD_ONLY)
        for n, p in signature.parameters.items()
        if n != RECEIPT_PARAMETER
    ]
    functools.update_wrapper(gated, func, assigned=("__module__", "__name__", "__qualname__"))
    gated.__doc__ = func.__doc__
    gated.__signature__ = signature.replace(  # type: ignore[attr-defined]
        parameters=[context.replace(annotation=RunContext[Any]), *parameters],
        return_annotation=hints.get("return", Any),
    )
    gated.__annotations__ = {
        "ctx": RunContext[Any],
        **{n: h for n, h in hints.items() if n not in (RECEIPT_PARAMETER, "return")},
        "return": hints.get("return", Any),
    }
    del gated.__wrapped__  # type: ignore[attr-defined]


async def resolve_approvals(
    requests: DeferredToolRequests,
    *,
    console: ConsoleFactory = AsyncConsole,
    timeout: float | None = None,
) -> DeferredToolResults:
    """Wait for the console on every approval a console tool asked for; approve each
    confirmed call with the person's values, deny each rejected one with their reason. Returns
    the results to run the agent on with (`deferred_tool_results=`). Approvals of other tools
    are left out, for the caller to decide.

    Raises `InstanceExpired` when the person did not answer in time, `WaitTimeout` after
    `timeout` seconds."""
    results = DeferredToolResults()
    async with console() as client:
        for call in requests.approvals:
            asked = requests.metadata.get(call.tool_call_id) or {}
            instance_id = asked.get(INSTANCE)
            if not instance_id:
                continue
            resolution = await client.wait(str(instance_id), timeout)
            if resolution.ready:
                results.approvals[call.tool_call_id] = ToolApproved(
                    override_args=resolution.verified_bindings()
                )
                results.metadata[call.tool_call_id] = {
                    INSTANCE: resolution.instance_id,
                    ASKED: call.args_as_dict(),
                }
            elif resolution.status == CANCELLED:
                results.approvals[call.tool_call_id] = ToolDenied(rejection_message(resolution))
            else:
                raise NotReady(f"instance {resolution.instance_id} is {resolution.status}")
    return results
