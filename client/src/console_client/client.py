"""`Console` (sync) and `AsyncConsole` (async): the console's runtime API, method for method.

Each method is written once, in `_Api`: it builds its request as a `_core.Call` (or, for
`wait` and `resolve`, a program of calls and sleeps) and hands it to `_send` or `_run`. The two
classes only supply those: `Console` sends with `httpx.Client` and returns the result,
`AsyncConsole` sends with `httpx.AsyncClient` and returns a coroutine of it. `_Api` is generic
in those two return types, so type checkers and IDEs see `Console.get(...) -> Json` and
`AsyncConsole.get(...) -> Coroutine[Any, Any, Json]`, that is, awaitable.
"""

from __future__ import annotations

import asyncio
import time
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable, Coroutine, Mapping, Sequence
from types import TracebackType
from typing import Any, Generic, TypeVar

import httpx

from console_client import _core
from console_client._core import Call, Program, Sleep
from console_client.errors import ConsoleError, ConsoleTimeout, ConsoleUnavailable
from console_client.models import (
    AWAITING_USER,
    OPEN,
    READY,
    REDEEM_AGENT,
    Confirmation,
    Resolution,
    page_url,
)
from console_client.receipts import Receipt, Redemption

DEFAULT_POLL_INTERVAL = 0.5
DEFAULT_MAX_POLL_INTERVAL = 10.0
DEFAULT_HTTP_TIMEOUT = 30.0
# The default sleeps, taken when the module is imported (as a default argument would be).
_time_sleep: Callable[[float], None] = time.sleep
_async_sleep: Callable[[float], Awaitable[None]] = asyncio.sleep

Json = dict[str, Any]

# What a method returns: the value itself for `Console`, a coroutine of it for `AsyncConsole`.
JsonResult = TypeVar("JsonResult")
ResolutionResult = TypeVar("ResolutionResult")
RedemptionResult = TypeVar("RedemptionResult")
ReceiptResult = TypeVar("ReceiptResult")
ConfirmationResult = TypeVar("ConfirmationResult")
# What the constructor takes as `transport` and `sleep`: httpx's sync or async transport, and a
# sleep that returns or one that is awaited.
Transport = TypeVar("Transport", httpx.BaseTransport, httpx.AsyncBaseTransport)
Sleeper = TypeVar("Sleeper")


class _Api(
    ABC,
    Generic[
        JsonResult,
        ResolutionResult,
        RedemptionResult,
        ReceiptResult,
        ConfirmationResult,
        Transport,
        Sleeper,
    ],
):
    """The API, one method per endpoint, plus `wait` and `resolve`; sync or async by subclass.

    Every method raises a typed `ApiError` (BadRequest, Unauthorized, Forbidden, NotFound,
    Conflict, PayloadTooLarge, ServerError) carrying the console's JSON error.
    """

    base_url: str

    def __init__(
        self,
        base_url: str | None = None,
        api_key: str | None = None,
        *,
        timeout: float = DEFAULT_HTTP_TIMEOUT,
        poll_interval: float = DEFAULT_POLL_INTERVAL,
        max_poll_interval: float = DEFAULT_MAX_POLL_INTERVAL,
        transport: Transport | None = None,
        sleep: Sleeper | None = None,
    ) -> None:
        """`sleep` waits between polls; without it, `time.sleep` (`asyncio.sleep` when async)."""
        self.base_url, key = _core.settings(base_url, api_key)
        self.poll_interval = poll_interval
        self.max_poll_interval = max_poll_interval
        self._keys = _core.KeyCache()
        self._open(timeout, transport, _core.client_options(self.base_url, key), sleep)

    @abstractmethod
    def _open(
        self,
        timeout: float,
        transport: Transport | None,
        options: dict[str, Any],
        sleep: Sleeper | None,
    ) -> None:
        """Make the HTTP client (sync or async) and keep the sleep, or the default one."""

    @abstractmethod
    def _send(self, call: Call) -> JsonResult:
        """Send one request; its parsed response (awaitable in the async client)."""

    @abstractmethod
    def _run(self, program: Program[Any]) -> Any:
        """Run a program of requests and sleeps; its result (awaitable in the async client).
        Typed by the public methods, whose result types the subclass fixes."""

    def page_url(self, instance_id: str) -> str:
        """The instance's page for its principal: send the person there."""
        return page_url(self.base_url, instance_id)

    # --- the API, one method per endpoint ------------------------------------------------

    def register_task_class(
        self,
        key: str,
        *,
        name: str | None = None,
        slots: Sequence[Mapping[str, Any]] = (),
        decisions: Sequence[Mapping[str, Any]] = (),
        open_slots: bool | None = None,
        subject_key: str | None = None,
    ) -> JsonResult:
        """Register or update a task class; returns it with each slot's effective risk.

        `open_slots=True` is for tool passthroughs (a permission prompt for any tool): a key
        the class does not have is registered as an unclassified slot, in play only for the
        instances that name it in `slots`. `subject_key` names the world key of the thing a
        run acts on (a refund's `order`), so that people see separate tasks, not retries."""
        call = _core.register_task_class(key, name, slots, decisions, open_slots, subject_key)
        return self._send(call)

    def get_task_class(self, key: str) -> JsonResult:
        """A task class this runtime may use, with its slots' value types and risks."""
        return self._send(_core.get_task_class(key))

    def list_instances(
        self,
        *,
        status: str | None = None,
        principal: str | None = None,
        limit: int | None = None,
        offset: int | None = None,
    ) -> JsonResult:
        """A page of this runtime's instances, newest first (`count`, `next`, `previous`,
        `results` of summaries); `status` and `principal` narrow it."""
        return self._send(_core.list_instances(status, principal, limit, offset))

    def list_task_classes(
        self, *, limit: int | None = None, offset: int | None = None
    ) -> JsonResult:
        """A page of the task classes this runtime may use, each with its slots and those that
        wait for a classifier (`unclassified`)."""
        return self._send(_core.list_task_classes(limit, offset))

    def open_instance(
        self,
        task_class: str,
        principal: str,
        *,
        world: Mapping[str, Any] | None = None,
        beliefs: Sequence[Mapping[str, Any]] | None = None,
        idempotency_key: str | None = None,
        slots: Sequence[str] | None = None,
        audience: str | None = None,
    ) -> JsonResult:
        """Open an instance; with `idempotency_key`, a repeat returns the first instance.

        `slots` are the slots this action uses (default: every slot of the class); `audience`
        is the `aud` of its receipt (default: this runtime's name; any other must be registered
        for this runtime in the console's admin, else `BadRequest` `unknown_audience`)."""
        call = _core.open_instance(
            task_class, principal, world, beliefs, idempotency_key, slots, audience
        )
        return self._send(call)

    def record_belief(
        self,
        instance_id: str,
        slot: str,
        value: Any,
        *,
        source: str,
        turn: int | None = None,
        world_ref: Mapping[str, Any] | None = None,
    ) -> JsonResult:
        """Record what the runtime believes a slot's value is (`source`: where it came from)."""
        return self._send(_core.record_belief(instance_id, slot, value, source, turn, world_ref))

    def set_world(self, instance_id: str, world: Mapping[str, Any]) -> JsonResult:
        """Replace the world of an open instance: what the runtime states, per slot."""
        return self._send(_core.set_world(instance_id, world))

    def plan(self, instance_id: str) -> JsonResult:
        """Plan the instance (idempotent): route each slot, prompt the person where needed."""
        return self._send(_core.plan(instance_id))

    def get(self, instance_id: str) -> JsonResult:
        """The instance as it stands."""
        return self._send(_core.get(instance_id))

    def cancel(self, instance_id: str, reason: str | None = None) -> JsonResult:
        """Cancel the instance, with an optional reason; a cancelled one stays so."""
        return self._send(_core.cancel(instance_id, reason))

    def redeem(self, token: str, bindings_digest: str | None = None) -> RedemptionResult:
        """Use a receipt, once: the first call returns the `Redemption`; any later one raises
        `ReceiptRedeemed` (409), a vetoed or cancelled one `ReceiptRevoked` (409). With
        `bindings_digest`, the console also checks it is the receipt's (400 digest_mismatch)."""
        result: RedemptionResult = self._run(_core.one(_core.redeem(token, bindings_digest)))
        return result

    def jwks(self) -> JsonResult:
        """The console's public receipt keys (`/.well-known/jwks.json`), fetched now."""
        return self._send(_core.jwks(self.base_url))

    def person_passkeys(self, username: str) -> JsonResult:
        """The public keys of a person's passkeys (for a person this runtime opened an
        instance for): what `verify_signature` checks a receipt's `passkey` claim with."""
        return self._send(_core.person_passkeys(username))

    def verify_receipt(
        self,
        token: str,
        *,
        bindings: Mapping[str, Any] | None = None,
        worlds: Mapping[str, Any] | None = None,
        audience: str | None = None,
        issuer: str | None = None,
        person_required: bool = True,
    ) -> ReceiptResult:
        """`verify_receipt` with this console's keys (fetched once and cached; fetched again
        when a receipt names a key not seen yet, as after a rotation). Raises a `ReceiptError`
        (`ReceiptNotApprovedByPerson` for values a runtime vouched for, unless
        `person_required=False`)."""
        checks = _core.ReceiptChecks(bindings, worlds, audience, issuer, person_required)
        program = _core.verified(token, self._keys, self.base_url, checks)
        result: ReceiptResult = self._run(program)
        return result

    def confirmation(
        self,
        resolution: Resolution,
        *,
        bindings: Mapping[str, Any] | None = None,
        audience: str | None = None,
        redeem: str = REDEEM_AGENT,
    ) -> ConfirmationResult:
        """A ready resolution as a `Confirmation`: its bindings (or `bindings`, a subset the
        action takes) with the receipt verified against them and `audience`, then redeemed
        here (`redeem="agent"`) or left for the tool server it is handed to (`redeem="tool"`,
        the token in `Confirmation.receipt`). A receipt already redeemed gives a confirmation
        marked `replayed` instead of an error: the action it guards was handed over before,
        so do not run it again. Raises `NotReady` unless ready, `ReceiptRevoked` once the
        person vetoed it, and a `ReceiptError` when the receipt does not vouch for them."""
        program = _core.confirmation(
            resolution,
            self._keys,
            self.base_url,
            bindings=bindings,
            audience=audience,
            redeem=redeem,
        )
        result: ConfirmationResult = self._run(program)
        return result

    # --- waiting and the common case -----------------------------------------------------

    def wait(self, instance_id: str, timeout: float | None = None) -> ResolutionResult:
        """Wait until the instance leaves awaiting_user: long-polls (If-None-Match with
        `Prefer: wait=25`, answered the moment the person acts), or, from a console that does
        not apply the preference, polls with If-None-Match, backing off.

        Returns the Resolution (ready; cancelled, with `rejected` and `reason`; or open).
        Raises `InstanceExpired` when the person did not answer in time and `WaitTimeout`
        when `timeout` seconds pass first.
        """
        result: ResolutionResult = self._run(self._waiting(instance_id, timeout))
        return result

    def _waiting(self, instance_id: str, timeout: float | None) -> Program[Resolution]:
        backoff = _core.Backoff(self.poll_interval, self.max_poll_interval)
        return _core.wait(instance_id, timeout, self.base_url, backoff)

    def resolve(
        self,
        task_class: str,
        principal: str,
        values: Mapping[str, Any],
        *,
        world: Mapping[str, Any] | None = None,
        source: str = "inference",
        turn: int | None = None,
        idempotency_key: str | None = None,
        wait: bool = True,
        timeout: float | None = None,
        slots: Sequence[str] | None = None,
        audience: str | None = None,
    ) -> ResolutionResult:
        """The common case: open with one belief per value and the world, plan, and return at
        once when nothing blocks; else wait for the person (or, with `wait=False`, return the
        awaiting Resolution with the page URL to send them to). A ready Resolution carries
        its `receipt`.

        `slots` are the slots the action uses. By default none are named, so the action uses
        every slot of its class: a slot the values leave out is asked of the person rather
        than dropped from the action. Pass `slots=list(values)` when the values are the whole
        action (a tool call passed through as it is). A value for a slot the class does not
        have raises `BadRequest` (unknown_slot), and nothing is stored."""

        def steps() -> Program[Resolution]:
            beliefs = _core.beliefs_from_values(values, world, source, turn)
            call = _core.open_instance(
                task_class, principal, world, beliefs, idempotency_key, slots, audience
            )
            payload = yield call
            if payload["status"] == OPEN:
                payload = yield _core.plan(payload["id"])
            instance_id = payload["id"]  # an instance's body and a plan's both name it `id`
            if payload["status"] == AWAITING_USER:
                if not wait:
                    return Resolution.from_payload(payload, self.base_url)
                return (yield from self._waiting(instance_id, timeout))
            if payload["status"] == READY and "receipt" not in payload:
                payload = yield _core.get(instance_id)  # the plan's answer carries no receipt
            return _core.settle(payload, self.base_url)

        result: ResolutionResult = self._run(steps())
        return result


class Console(
    _Api[
        Json,
        Resolution,
        Redemption,
        Receipt,
        Confirmation,
        httpx.BaseTransport,
        Callable[[float], None],
    ]
):
    """A runtime's client. `Console()` reads CONSOLE_URL and CONSOLE_API_KEY from the environment.

    Every method raises a typed `ApiError` (BadRequest, Unauthorized, Forbidden, NotFound,
    Conflict, PayloadTooLarge, ServerError) carrying the console's JSON error.
    """

    def _open(
        self,
        timeout: float,
        transport: httpx.BaseTransport | None,
        options: dict[str, Any],
        sleep: Callable[[float], None] | None,
    ) -> None:
        self._http = httpx.Client(timeout=timeout, transport=transport, **options)
        self._sleep = _time_sleep if sleep is None else sleep

    def __enter__(self) -> Console:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def close(self) -> None:
        self._http.close()

    def _send(self, call: Call) -> Json:
        payload: Json = self._do(call)
        return payload

    def _run(self, program: Program[Any]) -> Any:
        run = _core.Run(program)
        while run.step is not None:
            run.send(self._do(run.step))
        return run.result

    def _do(self, step: Call | Sleep) -> Any:
        if isinstance(step, Sleep):
            return self._sleep(step.seconds)
        try:
            response = self._http.request(**_request(step))
        except _DROPS as exc:
            return _dropped(step, _unreachable(exc, self._http.base_url, step))
        return step.parse(response)


class AsyncConsole(
    _Api[
        Coroutine[Any, Any, Json],
        Coroutine[Any, Any, Resolution],
        Coroutine[Any, Any, Redemption],
        Coroutine[Any, Any, Receipt],
        Coroutine[Any, Any, Confirmation],
        httpx.AsyncBaseTransport,
        Callable[[float], Awaitable[None]],
    ]
):
    """The async twin of `Console`: the same methods, awaited."""

    def _open(
        self,
        timeout: float,
        transport: httpx.AsyncBaseTransport | None,
        options: dict[str, Any],
        sleep: Callable[[float], Awaitable[None]] | None,
    ) -> None:
        self._http = httpx.AsyncClient(timeout=timeout, transport=transport, **options)
        self._sleep = _async_sleep if sleep is None else sleep

    async def __aenter__(self) -> AsyncConsole:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

    async def close(self) -> None:
        await self._http.aclose()

    async def _send(self, call: Call) -> Json:
        payload: Json = await self._do(call)
        return payload

    async def _run(self, program: Program[Any]) -> Any:
        run = _core.Run(program)
        while run.step is not None:
            run.send(await self._do(run.step))
        return run.result

    async def _do(self, step: Call | Sleep) -> Any:
        if isinstance(step, Sleep):
            return await self._sleep(step.seconds)
        try:
            response = await self._http.request(**_request(step))
        except _DROPS as exc:
            return _dropped(step, _unreachable(exc, self._http.base_url, step))
        return step.parse(response)


# A connection that closed, reset, could not be made, or brought no answer in its time (a
# server too busy to answer a long-poll when it said it would); a retryable read is simply
# asked again. A request this client could not make (LocalProtocolError, a bad URL) is not.
_DROPS = (httpx.RemoteProtocolError, httpx.NetworkError, httpx.TimeoutException)


def _request(call: Call) -> dict[str, Any]:
    """The arguments of httpx's `request` for `call`, with the call's own timeout where it has
    one (a long-poll outlasts the client's)."""
    timeout = {} if call.timeout is None else {"timeout": call.timeout}
    return {
        "method": call.method,
        "url": call.path,
        "json": call.json,
        "headers": call.headers,
        **timeout,
    }


def _unreachable(error: Exception, base_url: httpx.URL, call: Call) -> ConsoleError:
    """The client's own error for a request that brought no answer, saying what to do, with
    httpx's error as its cause."""
    url = str(base_url.join(call.path))
    what = f"{type(error).__name__}: {error}" if str(error) else type(error).__name__
    write = call.method not in ("GET", "HEAD")
    after = (
        " A write is never sent again on its own: read the instance to see whether it took"
        " effect, or send it again with the same Idempotency-Key."
        if write
        else ""
    )
    found: ConsoleError
    if isinstance(error, httpx.TimeoutException):
        found = ConsoleTimeout(
            f"The console at {url} did not answer in time ({what}). It may be busy or"
            f" unreachable; raise timeout= if it is slow.{after}",
            url,
        )
    else:
        found = ConsoleUnavailable(
            f"The console at {url} could not be reached ({what}). Is it running, and is"
            f" CONSOLE_URL (or base_url=) right?{after}",
            url,
        )
    found.__cause__ = error
    return found


def _dropped(call: Call, error: ConsoleError) -> _core.Dropped:
    """What a dropped connection answers: a `Dropped` for a read that may be asked again (its
    program decides), else the error itself (a write is never sent twice on its own)."""
    if call.retryable:
        return _core.Dropped(error)
    raise error
