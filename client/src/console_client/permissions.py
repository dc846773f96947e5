"""A tool call's permission, asked of the person in the console: what the MCP server's
`request_permission` and the Claude Agent SDK's `can_use_tool` both answer.

A call of tool `T` is planned as task class `{prefix}T` for the principal. The class is
registered on first use with `open_slots`, and each call names exactly its own keys as the
action's slots, so a call is asked about its keys only; a key seen for the first time is
unclassified, so irreversible until a classifier decides. The answer allows the input the person
confirmed (their edits included, each value in its original JSON type) once the receipt is
verified against that input and redeemed (the same call again is denied, never allowed twice),
or denies with the person's reason. Whatever fails, the answer is a deny that says why.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from console_client.client import AsyncConsole
from console_client.digest import bindings_digest
from console_client.errors import BadRequest, ConsoleError, NotFound, WaitEnded, WaitTimeout
from console_client.models import Resolution
from console_client.registration import log_registered, value_type_of

logger = logging.getLogger("console_client")

DEFAULT_PROGRESS_INTERVAL = 5.0
MAX_KEY_LENGTH = 200
# Called while the person has not answered yet: (seconds waited, the timeout, a message).
Progress = Callable[[float, float | None, str], Awaitable[None]]


# JSON Schema types for the console's value types, in a form-mode elicitation.
FORM_TYPES = {"string": "string", "number": "number", "boolean": "boolean", "date": "string"}


class SessionElicitation:
    """MCP elicitation through a server session, in the modes the client declared.

    URL mode sends the person to the instance's page (`ask`), and says when it was answered
    (`complete`). Form mode asks in the client's own form, and only for what the console asks
    without a value to show (a blank ASK) of a slot that is not irreversible (`fill`): an
    irreversible value is confirmed on the console's page, where the person is signed in."""

    def __init__(self, session: Any, request_id: Any, url: bool, form: bool) -> None:
        self.session = session
        self.request_id = request_id
        self.url = url
        self.form = form

    @classmethod
    def of(cls, session: Any, request_id: Any) -> SessionElicitation | None:
        """One for the client of `session`, if it declared elicitation; else None (the tools
        then send progress messages naming the page)."""
        capabilities = session.client_capabilities if session is not None else None
        declared = capabilities.elicitation if capabilities is not None else None
        if declared is None or (declared.url is None and declared.form is None):
            return None
        if not getattr(session, "can_send_request", True):
            # A channel that cannot carry a request mid-call (the 2026-07-28 protocol's
            # input_required rounds, not used here): progress messages name the page instead.
            return None
        return cls(session, request_id, declared.url is not None, declared.form is not None)

    async def ask(self, resolution: Resolution) -> str:
        answer = await self.session.elicit_url(
            message=(
                f"A person must answer in the confirmation console before this runs "
                f"({resolution.blocking} question{'s' if resolution.blocking != 1 else ''})."
            ),
            url=resolution.url,
            elicitation_id=resolution.instance_id,
            related_request_id=self.request_id,
        )
        return str(answer.action)

    async def complete(self, resolution: Resolution) -> None:
        await self.session.send_elicit_complete(resolution.instance_id, self.request_id)

    async def fill(self, message: str, schema: dict[str, Any]) -> tuple[str, dict[str, Any] | None]:
        answer = await self.session.elicit_form(
            message=message, requested_schema=schema, related_request_id=self.request_id
        )
        return str(answer.action), answer.content


def form_prompts(resolution: Resolution) -> list[dict[str, Any]]:
    """The open blocking prompts a form may ask: every one a blank ASK of a slot that is not
    irreversible. Empty when any open blocking prompt is not (the page answers them all)."""
    prompts = [
        p
        for p in resolution.instance.get("prompts") or []
        if isinstance(p, Mapping) and p.get("blocking") and p.get("state") == "open"
    ]
    fits = all(
        p.get("route") == "ASK" and p.get("effective_risk") != "irreversible" for p in prompts
    )
    return [dict(p) for p in prompts] if fits else []


async def fill_by_form(
    console: AsyncConsole, elicitation: SessionElicitation, resolution: Resolution
) -> Resolution | None:
    """Ask the values the console asks for in the client's form, where it may (see
    `form_prompts`): record each as what the person said (source `user`) and plan again.
    Returns the instance as it then stands, the same resolution when a form may not ask, and
    None when the person declined or cancelled the form."""
    prompts = form_prompts(resolution)
    if not elicitation.form or not prompts:
        return resolution
    task_class = await console.get_task_class(str(resolution.instance.get("task_class")))
    kinds = {s["key"]: s.get("value_type") for s in task_class.get("slots") or []}
    properties = {
        p["slot"]: {
            "type": FORM_TYPES.get(str(kinds.get(p["slot"])), "string"),
            "title": p.get("label") or p["slot"],
            "description": p.get("reason") or "",
        }
        for p in prompts
    }
    schema = {"type": "object", "properties": properties, "required": sorted(properties)}
    action, content = await elicitation.fill("The console needs these values.", schema)
    if action != "accept" or content is None:
        return None
    for slot in properties:
        await console.record_belief(resolution.instance_id, slot, content.get(slot), source="user")
    await console.plan(resolution.instance_id)
    payload = await console.get(resolution.instance_id)
    return Resolution.from_payload(payload, console.base_url)


@dataclass(frozen=True)
class PermissionSettings:
    """Whom a tool call is asked of and how: `principal` answers in the console; the class is
    `task_class_prefix` + the tool's name; a wait of more than `timeout` seconds cancels the
    instance and denies; `audience` names whom the receipts are for."""

    principal: str
    task_class_prefix: str = "claude-code."
    timeout: float | None = None
    audience: str | None = None
    console: Callable[[], AsyncConsole] = AsyncConsole
    progress_interval: float = DEFAULT_PROGRESS_INTERVAL
    # Tools that are never asked about (reading a file, say): allowed as they are.
    passthrough: frozenset[str] = field(default_factory=frozenset)


def allow(updated_input: Mapping[str, Any]) -> dict[str, Any]:
    return {"behavior": "allow", "updatedInput": dict(updated_input)}


def deny(message: str) -> dict[str, Any]:
    return {"behavior": "deny", "message": message}


def deny_message(resolution: Resolution) -> str:
    reason = resolution.reason or "no reason given"
    return f"The person rejected this in the confirmation console: {reason}"


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


def permission_key(tool_use_id: str | None, tool_input: Mapping[str, Any]) -> str | None:
    """The call's Idempotency-Key: its tool use and the digest of its input, so the same call
    finds its instance again and another input under a reused id is a new one."""
    if not tool_use_id:
        return None
    key = f"claude-code:{tool_use_id}:{bindings_digest(tool_input)}"
    return key if len(key) <= MAX_KEY_LENGTH else "claude-code:" + bindings_digest({"k": key})


async def waiting(
    console: AsyncConsole,
    resolution: Resolution,
    timeout: float | None,
    progress: Progress | None,
    interval: float = DEFAULT_PROGRESS_INTERVAL,
) -> Resolution:
    """Wait for the person, calling `progress` every `interval` seconds meanwhile: an agent
    host that shows progress, or resets its own timeout on it, sees the wait is alive."""
    if not resolution.awaiting_user:
        return resolution
    wait = asyncio.ensure_future(console.wait(resolution.instance_id, timeout))
    waited = 0.0
    try:
        while True:
            done, _ = await asyncio.wait({wait}, timeout=interval)
            if done:
                return wait.result()
            waited += interval
            if progress is not None:
                await progress(
                    waited,
                    timeout,
                    f"waiting for the person to answer in the console: {resolution.url}",
                )
    finally:
        wait.cancel()


async def decide(
    tool_name: str,
    tool_input: Mapping[str, Any],
    tool_use_id: str | None,
    settings: PermissionSettings,
    progress: Progress | None = None,
    elicitation: SessionElicitation | None = None,
    *,
    task_class: str | None = None,
    principal: str | None = None,
    slots: list[dict[str, Any]] | None = None,
    pause: bool = False,
    resume: str | None = None,
) -> dict[str, Any]:
    """`{"behavior": "allow", "updatedInput": {...}}` with the input the person confirmed, or
    `{"behavior": "deny", "message": "..."}` with their reason or what went wrong.

    With `elicitation`, a call that waits for the person sends them to its page through the
    agent host first; declining to go there cancels the instance and denies. `task_class` and
    `principal` replace the settings' for this call; `slots` are the class's slots to register
    on first use (default: one per key of the input, typed from its value).

    In rounds (the 2026-07-28 protocol's `input_required`): with `pause`, a call that must wait
    for the person answers `{"behavior": "pending", "instance_id", "url"}` at once instead of
    waiting; the next round passes that instance as `resume` (the caller vouches it is this
    call's) and waits for it."""
    if tool_name in settings.passthrough:
        return allow(tool_input)
    task_class = task_class or settings.task_class_prefix + tool_name
    principal = principal or settings.principal
    values = dict(tool_input)
    registered = slots or [{"key": k, "value_type": value_type_of(v)} for k, v in values.items()]

    async def open_and_plan(console: AsyncConsole) -> Resolution:
        return await console.resolve(
            task_class,
            principal,
            values,
            idempotency_key=permission_key(tool_use_id, values),
            wait=False,
            slots=list(values),  # exactly this call's keys: asked, and returned
            audience=settings.audience,
        )

    async def register(console: AsyncConsole) -> None:
        # A passthrough class: any key the tool takes may come, each unclassified (so
        # irreversible) until a classifier says otherwise, and typed as the call's value.
        body = await console.register_task_class(
            task_class, name=f"{tool_name} (tool)", slots=registered, open_slots=True
        )
        log_registered(console.base_url, task_class, body)

    pending: Resolution | None = None
    try:
        async with settings.console() as console:
            if resume is not None:
                pending = Resolution.from_payload(await console.get(resume), console.base_url)
            else:
                try:
                    pending = await open_and_plan(console)
                except (NotFound, BadRequest) as refused:
                    # A tool seen for the first time, or a class registered before open_slots.
                    if refused.error not in {"unknown_task_class", "unknown_slot"}:
                        raise
                    await register(console)
                    pending = await open_and_plan(console)
                if pause and pending.awaiting_user:
                    return {
                        "behavior": "pending",
                        "instance_id": pending.instance_id,
                        "url": pending.url,
                    }
            if elicitation is not None and pending.awaiting_user:
                filled = await fill_by_form(console, elicitation, pending)
                if filled is None:
                    await console.cancel(pending.instance_id, "the person declined the form")
                    return deny("The person declined the form: nothing was confirmed.")
                pending = filled
            asked = elicitation is not None and elicitation.url and pending.awaiting_user
            if elicitation is not None and asked:
                action = await elicitation.ask(pending)
                if action != "accept":
                    await console.cancel(pending.instance_id, f"the person chose {action}")
                    return deny(
                        f"The person did not open the confirmation page ({action}): "
                        "nothing was confirmed, and the request is cancelled."
                    )
            resolution = await waiting(
                console, pending, settings.timeout, progress, settings.progress_interval
            )
            if elicitation is not None and asked:
                await elicitation.complete(pending)
            if not resolution.ready:
                return deny(deny_message(resolution))
            bindings = resolution.verified_bindings()
            if set(bindings) != set(values):
                return deny(f"The console confirmed {sorted(bindings)}, not {sorted(values)}")
            try:
                updated = {k: as_original_type(v, bindings[k]) for k, v in values.items()}
            except ValueError as wrong:
                return deny(f"The console returned a value of the wrong type: {wrong}")
            # Allow exactly what the person approved, once: the receipt must approve these
            # bindings, and redeeming it refuses any second use of the same confirmation.
            confirmation = await console.confirmation(resolution, audience=settings.audience)
            if confirmation.replayed:
                return deny(
                    "This call was already allowed once with this confirmation "
                    f"(instance {resolution.instance_id}); it is not allowed twice."
                )
    except WaitTimeout as timed_out:
        await _cancel(settings, pending, f"no answer within {settings.timeout} s")
        return deny(f"{timed_out} (cancelled; nothing of it will run)")
    except WaitEnded as ended:
        return deny(str(ended))
    except ConsoleError as error:
        return deny(f"Nothing was confirmed: {error}")
    except Exception as error:  # fail closed, and say why: never an allow, never a bare error
        logger.exception("the permission of a %s call failed", tool_name)
        return deny(f"Nothing was confirmed: the permission tool failed ({error!r})")
    return allow(updated)


async def _cancel(settings: PermissionSettings, pending: Resolution | None, reason: str) -> None:
    """Cancel the instance a timed-out wait leaves behind, so no one answers a dead request."""
    if pending is None:
        return
    async with settings.console() as console:
        await console.cancel(pending.instance_id, reason)
