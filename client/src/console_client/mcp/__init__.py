"""An MCP server (stdio) that sends actions to the confirmation console.

    CONSOLE_URL=http://127.0.0.1:8000 CONSOLE_API_KEY=... CONSOLE_PRINCIPAL=alice \\
        python -m console_client.mcp

Tools:
- `request_confirmation(task_class, principal, values, world?, idempotency_key?)`: open and
  plan; returns at once with the status, and the page URL when a person must answer.
- `wait_for_confirmation(instance_id, timeout_seconds?)`: wait for the person; the confirmed
  bindings (digest checked), or the rejection and its reason.
- `request_permission(tool_name, input, tool_use_id?)`: Claude Code's permission-prompt tool
  (`claude --permission-prompt-tool mcp__console__request_permission`). The tool's input is
  planned as task class `{CONSOLE_TASK_CLASS_PREFIX}{tool_name}` (registered on first use, its
  slots unclassified, so irreversible until a classifier decides) for CONSOLE_PRINCIPAL; it answers
  `{"behavior": "allow", "updatedInput": {...}}` with the input the person confirmed (their
  edits included) or `{"behavior": "deny", "message": "..."}` with the person's reason.

Environment: CONSOLE_URL (default http://127.0.0.1:8000), CONSOLE_API_KEY (required),
CONSOLE_PRINCIPAL (the person request_permission asks), CONSOLE_TASK_CLASS_PREFIX (default
"claude-code."), CONSOLE_WAIT_TIMEOUT (seconds; default: until the console expires it),
CONSOLE_POLL_INTERVAL (seconds, default 0.5).
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Mapping
from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

from console_client.client import DEFAULT_POLL_INTERVAL, AsyncConsole
from console_client.errors import ApiError, ConsoleError, NotFound, WaitEnded
from console_client.models import CANCELLED, Resolution


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
    ) -> dict[str, Any]:
        """Open a console instance with these values (slot → value, source inference) and the
        world as you see it, plan it, and say whether a person must confirm. When the status is
        "awaiting_user", send the person to `url` and call wait_for_confirmation."""
        try:
            async with _console() as console:
                resolution = await console.resolve(
                    task_class,
                    principal,
                    values,
                    world=world,
                    idempotency_key=idempotency_key,
                    wait=False,
                )
                return _summary(resolution)
        except ConsoleError as error:
            raise _tool_error(error) from None

    @server.tool()
    async def wait_for_confirmation(
        instance_id: str, timeout_seconds: float | None = None
    ) -> dict[str, Any]:
        """Wait until the person has answered: the confirmed bindings ("ready"), or the
        rejection and its reason ("cancelled"). Fails when the instance expired."""
        try:
            async with _console() as console:
                timeout = timeout_seconds or _float("CONSOLE_WAIT_TIMEOUT")
                return _summary(await console.wait(instance_id, timeout))
        except ConsoleError as error:
            raise _tool_error(error) from None

    @server.tool()
    async def request_permission(
        tool_name: str, input: dict[str, Any], tool_use_id: str | None = None
    ) -> str:
        """Claude Code's permission prompt: ask the person in the console whether this tool call
        may run, and with which input."""
        return await permission(tool_name, input, tool_use_id)

    return server


async def permission(
    tool_name: str, tool_input: Mapping[str, Any], tool_use_id: str | None = None
) -> str:
    """The permission-prompt answer, as JSON text."""
    principal = os.environ.get("CONSOLE_PRINCIPAL")
    if not principal:
        return json.dumps({"behavior": "deny", "message": "CONSOLE_PRINCIPAL is not set"})
    task_class = os.environ.get("CONSOLE_TASK_CLASS_PREFIX", "claude-code.") + tool_name

    async def resolve(console: AsyncConsole) -> Resolution:
        return await console.resolve(
            task_class,
            principal,
            dict(tool_input),
            idempotency_key=f"claude-code:{tool_use_id}" if tool_use_id else None,
            timeout=_float("CONSOLE_WAIT_TIMEOUT"),
        )

    try:
        async with _console() as console:
            try:
                resolution = await resolve(console)
            except NotFound as missing:
                if missing.error != "unknown_task_class":
                    raise
                # A tool seen for the first time: its input keys become unclassified slots,
                # which count as irreversible until a classifier says otherwise.
                await console.register_task_class(
                    task_class,
                    name=f"Claude Code: {tool_name}",
                    slots=[{"key": key} for key in tool_input],
                )
                resolution = await resolve(console)
            if not resolution.ready:
                return json.dumps({"behavior": "deny", "message": deny_message(resolution)})
            bindings = resolution.verified_bindings()
    except WaitEnded as ended:
        return json.dumps({"behavior": "deny", "message": str(ended)})
    except ConsoleError as error:
        return json.dumps({"behavior": "deny", "message": f"The console refused: {error}"})
    updated = {key: bindings.get(key, value) for key, value in tool_input.items()}
    return json.dumps({"behavior": "allow", "updatedInput": updated})


def main() -> None:
    logging.getLogger("httpx").setLevel(logging.WARNING)  # one line per poll is noise on stderr
    build_server().run("stdio")
