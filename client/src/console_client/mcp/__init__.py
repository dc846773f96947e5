"""An MCP server (stdio) that sends actions to the confirmation console.

    CONSOLE_URL=http://127.0.0.1:8000 CONSOLE_API_KEY=... CONSOLE_PRINCIPAL=alice \\
        python -m console_client.mcp

Tools:
- `request_confirmation(task_class, principal, values, world?, idempotency_key?, slots?)`:
  open and plan; returns at once with the status, and the page URL when a person must answer.
- `wait_for_confirmation(instance_id, timeout_seconds?)`: wait for the person; the confirmed
  bindings (digest checked) and their signed receipt, or the rejection and its reason.
- `request_permission(tool_name, input, tool_use_id?)`: Claude Code's permission-prompt tool
  (`claude --permission-prompt-tool mcp__console__request_permission`). The tool's input is
  planned as task class `{CONSOLE_TASK_CLASS_PREFIX}{tool_name}` for CONSOLE_PRINCIPAL. The
  class is registered with `open_slots`, and each call names exactly its own keys as the
  action's slots, so a call is asked about its keys only, never about keys of earlier calls;
  a key seen for the first time is unclassified, so irreversible until a classifier decides.
  It answers `{"behavior": "allow", "updatedInput": {...}}` with the input the person
  confirmed (their edits included, each value of its original JSON type) once the receipt is
  verified against that input and redeemed (a repeated call with the same tool_use_id is
  denied, never allowed twice), or `{"behavior": "deny", "message": "..."}` with the person's
  reason. A wait that times out cancels the instance first, so nothing is left to answer.

While a tool waits for the person it sends MCP progress notifications (when the caller asked
for them with a progress token) every CONSOLE_PROGRESS_INTERVAL seconds.

Environment: CONSOLE_URL (default http://127.0.0.1:8000), CONSOLE_API_KEY (required),
CONSOLE_PRINCIPAL (the person request_permission asks), CONSOLE_TASK_CLASS_PREFIX (default
"claude-code."), CONSOLE_WAIT_TIMEOUT (seconds; default: until the console expires it),
CONSOLE_POLL_INTERVAL (seconds, default 0.5), CONSOLE_PROGRESS_INTERVAL (seconds, default 5),
CONSOLE_AUDIENCE (who receipts are for; registered for the runtime in the console's admin).
A failure of any kind is a deny that says what went wrong ("Nothing was confirmed: ..."),
never an allow.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
from collections.abc import Mapping
from typing import Any

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError

from console_client.client import DEFAULT_POLL_INTERVAL, AsyncConsole
from console_client.digest import bindings_digest
from console_client.errors import (
    ApiError,
    BadRequest,
    ConsoleError,
    NotFound,
    WaitEnded,
    WaitTimeout,
)
from console_client.models import AWAITING_USER, CANCELLED, Resolution

logger = logging.getLogger(__name__)

DEFAULT_PROGRESS_INTERVAL = 5.0
MAX_KEY_LENGTH = 200


def _float(name: str) -> float | None:
    value = os.environ.get(name)
    return float(value) if value else None


def _console() -> AsyncConsole:
    return AsyncConsole(poll_interval=_float("CONSOLE_POLL_INTERVAL") or DEFAULT_POLL_INTERVAL)


def _summary(resolution: Resolution) -> dict[str, Any]:
    summary: dict[str, Any] = {
        "status": resolution.status,
        "instance_id": resolution.instance_id,
        "url": resolution.url,
        "blocking": resolution.blocking,
    }
    if resolution.ready:
        summary["bindings"] = resolution.verified_bindings()
        summary["bindings_digest"] = resolution.digest
        summary["receipt"] = resolution.receipt  # for the party that executes: verify, redeem
    if resolution.status == CANCELLED:
        summary["rejected"] = resolution.rejected
        summary["reason"] = resolution.reason
    return summary


def _tool_error(error: ConsoleError) -> ToolError:
    if isinstance(error, ApiError):
        return ToolError(f"The console refused: {error.detail or error.error} ({error.status})")
    return ToolError(str(error))


def deny_message(resolution: Resolution) -> str:
    reason = resolution.reason or "no reason given"
    return f"The person rejected this in the confirmation console: {reason}"


async def waiting(
    console: AsyncConsole,
    resolution: Resolution,
    timeout: float | None,
    ctx: Context | None,
) -> Resolution:
    """Wait for the person, sending a progress notification every CONSOLE_PROGRESS_INTERVAL
    seconds meanwhile (a no-op when the caller sent no progress token): an agent host that
    shows progress, or resets its own timeout on it, sees the wait is alive."""
    if not resolution.awaiting_user:
        return resolution
    interval = _float("CONSOLE_PROGRESS_INTERVAL") or DEFAULT_PROGRESS_INTERVAL
    wait = asyncio.ensure_future(console.wait(resolution.instance_id, timeout))
    waited = 0.0
    try:
        while True:
            done, _ = await asyncio.wait({wait}, timeout=interval)
            if done:
                return wait.result()
            waited += interval
            if ctx is not None:
                await ctx.report_progress(
                    waited,
                    timeout,
                    f"waiting for the person to answer in the console: {resolution.url}",
                )
    finally:
        wait.cancel()


def build_server() -> MCPServer:
    server = MCPServer(
        name="confirmation-console",
        instructions=(
            "Ask a person to confirm the values of an irreversible action before taking it. "
            "Act only on the bindings the console returns, never on your own values."
        ),
    )

    @server.tool()
    async def request_confirmation(
        task_class: str,
        principal: str,
        values: dict[str, Any],
        world: dict[str, Any] | None = None,
        idempotency_key: str | None = None,
        slots: list[str] | None = None,
        audience: str | None = None,
    ) -> dict[str, Any]:
        """Open a console instance with these values (slot → value, source inference) and the
        world as you see it, plan it, and say whether a person must confirm. When the status is
        "awaiting_user", send the person to `url` and call wait_for_confirmation. `slots` names
        the slots the action uses (default: every slot of the task class); `audience` names
        the service that will verify the receipt (default: CONSOLE_AUDIENCE, else the
        runtime)."""
        try:
            async with _console() as console:
                resolution = await console.resolve(
                    task_class,
                    principal,
                    values,
                    world=world,
                    idempotency_key=idempotency_key,
                    wait=False,
                    slots=slots,
                    audience=audience or os.environ.get("CONSOLE_AUDIENCE") or None,
                )
                return _summary(resolution)
        except ConsoleError as error:
            raise _tool_error(error) from None

    @server.tool()
    async def wait_for_confirmation(
        instance_id: str, ctx: Context, timeout_seconds: float | None = None
    ) -> dict[str, Any]:
        """Wait until the person has answered: the confirmed bindings and their receipt
        ("ready"), or the rejection and its reason ("cancelled"). Fails when the instance
        expired, or when timeout_seconds pass first (the instance stays open: call again)."""
        try:
            async with _console() as console:
                timeout = timeout_seconds or _float("CONSOLE_WAIT_TIMEOUT")
                pending = Resolution.from_payload(await console.get(instance_id), console.base_url)
                if pending.status != AWAITING_USER:  # answered already: the same as a wait
                    return _summary(await console.wait(instance_id, 0))
                return _summary(await waiting(console, pending, timeout, ctx))
        except ConsoleError as error:
            raise _tool_error(error) from None

    @server.tool()
    async def request_permission(
        tool_name: str, input: dict[str, Any], ctx: Context, tool_use_id: str | None = None
    ) -> str:
        """Claude Code's permission prompt: ask the person in the console whether this tool call
        may run, and with which input."""
        return await permission(tool_name, input, tool_use_id, ctx)

    return server


def value_type(value: Any) -> str:
    """The console's value type for a JSON value, so that the person's edit is stored as one."""
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    return "json"


def as_original_type(original: Any, value: Any) -> Any:
    """The person's value in the JSON type of the tool's original value (a boolean stays a
    boolean, a number a number): the tool gets the type it asked with. ValueError when the
    value cannot be read as that type."""
    if original is None or type(value) is type(original):
        return value
    if isinstance(original, bool):
        if isinstance(value, str) and value.strip().lower() in {"true", "false"}:
            return value.strip().lower() == "true"
    elif isinstance(original, int | float) and not isinstance(value, bool):
        if isinstance(value, str):
            value = json.loads(value.strip())
        if isinstance(value, int | float) and not isinstance(value, bool):
            if isinstance(original, int) and float(value).is_integer():
                return int(value)
            return float(value)
    elif isinstance(original, str):
        return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    elif isinstance(original, dict | list):
        parsed = json.loads(value) if isinstance(value, str) else value
        if isinstance(parsed, type(original)):
            return parsed
    raise ValueError(f"{value!r} is not a {type(original).__name__}")


def _permission_key(tool_use_id: str | None, tool_input: Mapping[str, Any]) -> str | None:
    """The call's Idempotency-Key: its tool use and the digest of its input, so the same call
    finds its instance again and another input under a reused id is a new one."""
    if not tool_use_id:
        return None
    key = f"claude-code:{tool_use_id}:{bindings_digest(tool_input)}"
    return key if len(key) <= MAX_KEY_LENGTH else "claude-code:" + bindings_digest({"k": key})


def _deny(message: str) -> str:
    return json.dumps({"behavior": "deny", "message": message})


async def permission(
    tool_name: str,
    tool_input: Mapping[str, Any],
    tool_use_id: str | None = None,
    ctx: Context | None = None,
) -> str:
    """The permission-prompt answer, as JSON text."""
    principal = os.environ.get("CONSOLE_PRINCIPAL")
    if not principal:
        return _deny("CONSOLE_PRINCIPAL is not set")
    task_class = os.environ.get("CONSOLE_TASK_CLASS_PREFIX", "claude-code.") + tool_name
    values = dict(tool_input)
    timeout = _float("CONSOLE_WAIT_TIMEOUT")

    audience = os.environ.get("CONSOLE_AUDIENCE") or None

    async def open_and_plan(console: AsyncConsole) -> Resolution:
        return await console.resolve(
            task_class,
            principal,
            values,
            idempotency_key=_permission_key(tool_use_id, values),
            wait=False,
            slots=list(values),  # exactly this call's keys: asked, and returned
            audience=audience,
        )

    async def register(console: AsyncConsole) -> None:
        # A passthrough class: any key the tool takes may come, each unclassified (so
        # irreversible) until a classifier says otherwise, and typed as the call's value.
        await console.register_task_class(
            task_class,
            name=f"Claude Code: {tool_name}",
            slots=[{"key": key, "value_type": value_type(v)} for key, v in values.items()],
            open_slots=True,
        )

    pending: Resolution | None = None
    try:
        async with _console() as console:
            try:
                pending = await open_and_plan(console)
            except (NotFound, BadRequest) as refused:
                # A tool seen for the first time, or a class registered before open_slots.
                if refused.error not in {"unknown_task_class", "unknown_slot"}:
                    raise
                await register(console)
                pending = await open_and_plan(console)
            resolution = await waiting(console, pending, timeout, ctx)
            if not resolution.ready:
                return _deny(deny_message(resolution))
            bindings = resolution.verified_bindings()
            if set(bindings) != set(values):
                return _deny(f"The console confirmed {sorted(bindings)}, not {sorted(values)}")
            try:
                updated = {k: as_original_type(v, bindings[k]) for k, v in values.items()}
            except ValueError as wrong:
                return _deny(f"The console returned a value of the wrong type: {wrong}")
            # Allow exactly what the person approved, once: the receipt must approve these
            # bindings, and redeeming it refuses any second use of the same confirmation.
            confirmation = await console.confirmation(resolution, audience=audience)
            if confirmation.replayed:
                return _deny(
                    "This call was already allowed once with this confirmation "
                    f"(instance {resolution.instance_id}); it is not allowed twice."
                )
    except WaitTimeout as timed_out:
        await _cancel(pending, f"no answer within {timeout} s")
        return _deny(f"{timed_out} (cancelled; nothing of it will run)")
    except WaitEnded as ended:
        return _deny(str(ended))
    except ConsoleError as error:
        return _deny(f"Nothing was confirmed: {error}")
    except Exception as error:  # fail closed, and say why: never an allow, never a bare error
        logger.exception("request_permission failed")
        return _deny(f"Nothing was confirmed: the permission tool failed ({error!r})")
    return json.dumps({"behavior": "allow", "updatedInput": updated})


async def _cancel(pending: Resolution | None, reason: str) -> None:
    """Cancel the instance a timed-out wait leaves behind, so no one answers a dead request."""
    if pending is None:
        return
    async with _console() as console:
        await console.cancel(pending.instance_id, reason)


def main() -> None:
    logging.getLogger("httpx").setLevel(logging.WARNING)  # one line per poll is noise on stderr
    build_server().run("stdio")
