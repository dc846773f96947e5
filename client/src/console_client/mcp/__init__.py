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

Where the client supports MCP's URL-mode elicitation, a tool that waits for the person first
sends them to the instance's page through the client (`elicitation/create` with the page's URL,
the instance's id as the elicitation's), and says when the page is answered
(`notifications/elicitation/complete`); a person who declines to go there is denied, and
request_permission cancels the instance. Where the client supports form mode, a value the
console asks for with nothing to show (a blank ASK) of a slot that is not irreversible is asked
in the client's own form and recorded as what the person said (source `user`); an irreversible
value is only ever confirmed on the console's page, where the person is signed in. A client that
speaks the 2026-07-28 protocol's rounds gets the page as an `input_required` result (a URL-mode
input request, and a state sealed to the call) and the answer when it asks again. While a tool
waits for the person it sends MCP progress notifications (when the caller asked for them with a
progress token) every CONSOLE_PROGRESS_INTERVAL seconds.

Environment: CONSOLE_URL (default http://127.0.0.1:8000), CONSOLE_API_KEY (required),
CONSOLE_PRINCIPAL (the person request_permission asks), CONSOLE_TASK_CLASS_PREFIX (default
"claude-code."), CONSOLE_WAIT_TIMEOUT (seconds; default: until the console expires it),
CONSOLE_POLL_INTERVAL (seconds, default 0.5), CONSOLE_PROGRESS_INTERVAL (seconds, default 5),
CONSOLE_AUDIENCE (who receipts are for; registered for the runtime in the console's admin).
A failure of any kind is a deny that says what went wrong ("Nothing was confirmed: ..."),
never an allow.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import os
from collections.abc import Mapping
from typing import Any

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import ElicitRequest, ElicitRequestURLParams, InputRequiredResult

from console_client.client import DEFAULT_POLL_INTERVAL, AsyncConsole
from console_client.digest import bindings_digest
from console_client.errors import ApiError, ConsoleError
from console_client.models import AWAITING_USER, CANCELLED, Resolution
from console_client.permissions import (
    DEFAULT_PROGRESS_INTERVAL,
    PermissionSettings,
    SessionElicitation,
    as_original_type,
    decide,
    deny,
    fill_by_form,
    waiting,
)
from console_client.registration import value_type_of as value_type

__all__ = ["as_original_type", "build_server", "main", "permission", "value_type"]


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
    ) -> dict[str, Any] | InputRequiredResult:
        """Wait until the person has answered: the confirmed bindings and their receipt
        ("ready"), or the rejection and its reason ("cancelled"). Fails when the instance
        expired, when timeout_seconds pass first, or when the person would not open the page
        the client showed them (the instance stays open: call again)."""
        try:
            async with _console() as console:
                timeout = timeout_seconds or _float("CONSOLE_WAIT_TIMEOUT")
                pending = Resolution.from_payload(await console.get(instance_id), console.base_url)
                if pending.status != AWAITING_USER:  # answered already: the same as a wait
                    return _summary(await console.wait(instance_id, 0))
                if in_rounds(ctx):  # 2026-07-28: the page is handed over as an input request
                    if ctx.request_state is None:
                        return page_request(pending.instance_id, pending.url, "asked")
                    action = page_action(ctx)
                    if action != "accept":
                        raise ToolError(
                            f"The person did not open the confirmation page ({action}); "
                            f"instance {instance_id} stays open."
                        )
                elicitation = SessionElicitation.of(ctx.session, ctx.request_id)
                if elicitation is not None:
                    filled = await fill_by_form(console, elicitation, pending)
                    if filled is None:
                        raise ToolError(
                            f"The person declined the form; instance {instance_id} stays open."
                        )
                    pending = filled
                asked = elicitation is not None and elicitation.url and pending.awaiting_user
                if elicitation is not None and asked:
                    action = await elicitation.ask(pending)
                    if action != "accept":
                        raise ToolError(
                            f"The person did not open the confirmation page ({action}); "
                            f"instance {instance_id} stays open."
                        )
                progress = _progress_interval()
                answered = await waiting(console, pending, timeout, ctx.report_progress, progress)
                if elicitation is not None and asked:
                    await elicitation.complete(pending)
                return _summary(answered)
        except ConsoleError as error:
            raise _tool_error(error) from None

    @server.tool()
    async def request_permission(
        tool_name: str, input: dict[str, Any], ctx: Context, tool_use_id: str | None = None
    ) -> str | InputRequiredResult:
        """Claude Code's permission prompt: ask the person in the console whether this tool call
        may run, and with which input."""
        return await permission(tool_name, input, tool_use_id, ctx)

    return server


def _progress_interval() -> float:
    return _float("CONSOLE_PROGRESS_INTERVAL") or DEFAULT_PROGRESS_INTERVAL


def settings_from_environment() -> PermissionSettings | None:
    """The permission tool's settings, from the environment; None without CONSOLE_PRINCIPAL."""
    principal = os.environ.get("CONSOLE_PRINCIPAL")
    if not principal:
        return None
    return PermissionSettings(
        principal=principal,
        task_class_prefix=os.environ.get("CONSOLE_TASK_CLASS_PREFIX", "claude-code."),
        timeout=_float("CONSOLE_WAIT_TIMEOUT"),
        audience=os.environ.get("CONSOLE_AUDIENCE") or None,
        console=_console,
        progress_interval=_progress_interval(),
    )


# The input request that hands the person the instance's page, in rounds.
PAGE = "console_page"


def in_rounds(ctx: Context | None) -> bool:
    """The client speaks the 2026-07-28 protocol's rounds (no request can reach it mid-call)
    and takes URL-mode elicitation: the page is handed over as an `input_required` result."""
    if ctx is None or ctx.session.can_send_request:
        return False
    capabilities = ctx.session.client_capabilities
    declared = capabilities.elicitation if capabilities is not None else None
    return declared is not None and declared.url is not None


def page_request(instance_id: str, url: str, state: str) -> InputRequiredResult:
    return InputRequiredResult(
        input_requests={
            PAGE: ElicitRequest(
                params=ElicitRequestURLParams(
                    message="A person must answer in the confirmation console before this runs.",
                    url=url,
                    elicitation_id=instance_id,
                )
            )
        },
        request_state=state,
    )


def page_action(ctx: Context) -> str:
    """What the person did with the page the last round handed over (accept, decline...)."""
    response = (ctx.input_responses or {}).get(PAGE)
    return str(getattr(response, "action", None) or "no answer")


def _state_secret() -> bytes:
    return ("console_client.mcp:" + os.environ.get("CONSOLE_API_KEY", "")).encode("utf-8")


def round_state(instance_id: str, tool_name: str, tool_input: Mapping[str, Any]) -> str:
    """The state a round hands the client to echo: this call's instance, sealed to this call
    (its tool and input) with the server's own secret, so an echo cannot swap in another."""
    call = bindings_digest({"tool": tool_name, "input": dict(tool_input)})
    body = f"{instance_id}.{call}"
    seal = hmac.new(_state_secret(), body.encode("utf-8"), hashlib.sha256).hexdigest()
    return f"{body}.{seal}"


def instance_of_state(state: str, tool_name: str, tool_input: Mapping[str, Any]) -> str | None:
    """The instance a state names, if the server sealed it for this very call; else None."""
    instance_id = state.split(".", 1)[0]
    expected = round_state(instance_id, tool_name, tool_input)
    return instance_id if hmac.compare_digest(state, expected) else None


async def permission(
    tool_name: str,
    tool_input: Mapping[str, Any],
    tool_use_id: str | None = None,
    ctx: Context | None = None,
) -> str | InputRequiredResult:
    """The permission-prompt answer, as JSON text (or, in rounds, the page to open first)."""
    settings = settings_from_environment()
    if settings is None:
        return json.dumps(deny("CONSOLE_PRINCIPAL is not set"))
    progress = ctx.report_progress if ctx is not None else None
    if ctx is not None and in_rounds(ctx):
        return await permission_in_rounds(tool_name, tool_input, tool_use_id, ctx, settings)
    elicitation = SessionElicitation.of(ctx.session, ctx.request_id) if ctx else None
    answer = await decide(tool_name, tool_input, tool_use_id, settings, progress, elicitation)
    return json.dumps(answer)


async def permission_in_rounds(
    tool_name: str,
    tool_input: Mapping[str, Any],
    tool_use_id: str | None,
    ctx: Context,
    settings: PermissionSettings,
) -> str | InputRequiredResult:
    """The first round opens and plans the call; one that must wait for the person hands the
    client the page and a sealed state. The next round, with the person's answer to the page,
    waits for the console (or cancels and denies if they would not open it)."""
    if ctx.request_state is None:
        answer = await decide(tool_name, tool_input, tool_use_id, settings, pause=True)
        if answer["behavior"] != "pending":
            return json.dumps(answer)
        state = round_state(answer["instance_id"], tool_name, tool_input)
        return page_request(answer["instance_id"], answer["url"], state)
    instance_id = instance_of_state(ctx.request_state, tool_name, tool_input)
    if instance_id is None:
        return json.dumps(deny("Nothing was confirmed: the request's state is not this call's."))
    action = page_action(ctx)
    if action != "accept":
        async with settings.console() as console:
            await console.cancel(instance_id, f"the person chose {action}")
        return json.dumps(
            deny(
                f"The person did not open the confirmation page ({action}): nothing was "
                "confirmed, and the request is cancelled."
            )
        )
    answer = await decide(
        tool_name, tool_input, tool_use_id, settings, ctx.report_progress, resume=instance_id
    )
    return json.dumps(answer)


def main() -> None:
    logging.getLogger("httpx").setLevel(logging.WARNING)  # one line per poll is noise on stderr
    build_server().run("stdio")
