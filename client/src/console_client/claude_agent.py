"""Claude Agent SDK adapter: the person decides every tool call in the console.

    from claude_agent_sdk import ClaudeAgentOptions, ClaudeSDKClient
    from console_client.claude_agent import can_use_tool

    options = ClaudeAgentOptions(
        can_use_tool=can_use_tool("alice", passthrough={"Read", "Grep", "Glob"}),
    )
    async with ClaudeSDKClient(options) as client:
        await client.query("deploy the release")
        ...

Each call the SDK asks about is planned as task class `claude-code.<tool>` for the principal
(registered on first use, its keys unclassified so irreversible until a classifier decides).
The person answers on the console's page; the tool runs with the input they confirmed (their
edits included, each value of its original JSON type) once its receipt is verified against that
input and redeemed, or is denied with their reason. The same tool use is never allowed twice,
and whatever fails (the console out of reach, a timeout) is a deny that says why. Tools in
`passthrough` are allowed as they are, never asked about.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from typing import Any

from claude_agent_sdk import (
    PermissionResultAllow,
    PermissionResultDeny,
    ToolPermissionContext,
)
from claude_agent_sdk.types import CanUseTool, PermissionResult

from console_client.client import AsyncConsole
from console_client.permissions import PermissionSettings, decide


def can_use_tool(
    principal: str,
    *,
    task_class_prefix: str = "claude-code.",
    timeout: float | None = None,
    audience: str | None = None,
    passthrough: Collection[str] = (),
    console: Callable[[], AsyncConsole] = AsyncConsole,
) -> CanUseTool:
    """A `can_use_tool` callback for `ClaudeAgentOptions` that asks `principal` in the console
    (CONSOLE_URL and CONSOLE_API_KEY, unless `console` makes the client). A wait of more than
    `timeout` seconds cancels the instance and denies."""
    settings = PermissionSettings(
        principal=principal,
        task_class_prefix=task_class_prefix,
        timeout=timeout,
        audience=audience,
        console=console,
        passthrough=frozenset(passthrough),
    )

    async def decide_call(
        tool_name: str, tool_input: dict[str, Any], context: ToolPermissionContext
    ) -> PermissionResult:
        answer = await decide(tool_name, tool_input, context.tool_use_id, settings)
        if answer["behavior"] == "allow":
            return PermissionResultAllow(updated_input=answer["updatedInput"])
        return PermissionResultDeny(message=answer["message"])

    return decide_call
