"""`Console` (sync) and `AsyncConsole` (async): the console's runtime API, method for method."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from types import TracebackType
from typing import Any

import httpx

from console_client import _core
from console_client._core import Call
from console_client.errors import WaitTimeout
from console_client.models import AWAITING_USER, OPEN, Resolution, page_url

DEFAULT_POLL_INTERVAL = 0.5
DEFAULT_MAX_POLL_INTERVAL = 10.0
DEFAULT_HTTP_TIMEOUT = 30.0

Json = dict[str, Any]


class _Common:
    base_url: str

    def page_url(self, instance_id: str) -> str:
        """The instance's page for its principal: send the person there."""
        return page_url(self.base_url, instance_id)

    def _setup(
        self,
        base_url: str | None,
        api_key: str | None,
        poll_interval: float,
        max_poll_interval: float,
    ) -> dict[str, Any]:
        self.base_url, key = _core.settings(base_url, api_key)
        self.poll_interval = poll_interval
        self.max_poll_interval = max_poll_interval
        return _core.client_options(self.base_url, key)


class Console(_Common):
    """A runtime's client. `Console()` reads CONSOLE_URL and CONSOLE_API_KEY from the environment.

    Every method raises a typed `ApiError` (BadRequest, Unauthorized, Forbidden, NotFound,
    Conflict, PayloadTooLarge, ServerError) carrying the console's JSON error.
    """

    def __init__(
        self,
        base_url: str | None = None,
        api_key: str | None = None,
        *,
        timeout: float = DEFAULT_HTTP_TIMEOUT,
        poll_interval: float = DEFAULT_POLL_INTERVAL,
        max_poll_interval: float = DEFAULT_MAX_POLL_INTERVAL,
        transport: httpx.BaseTransport | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        options = self._setup(base_url, api_key, poll_interval, max_poll_interval)
        self._http = httpx.Client(timeout=timeout, transport=transport, **options)
        self._sleep = sleep

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

    def _send(self, call: Call) -> Any:
        response = self._http.request(call.method, call.path, json=call.json, headers=call.headers)
        return _core.decode(response)

    # --- the API, one method per endpoint ------------------------------------------------

    def register_task_class(
        self,
        key: str,
        *,
        name: str | None = None,
        slots: Sequence[Mapping[str, Any]] = (),
        decisions: Sequence[Mapping[str, Any]] = (),
    ) -> Json:
        """Register or update a task class; returns it with each slot's effective risk."""
        return self._send(_core.register_task_class(key, name, slots, decisions))

    def open_instance(
        self,
        task_class: str,
        principal: str,
        *,
        world: Mapping[str, Any] | None = None,
        beliefs: Sequence[Mapping[str, Any]] | None = None,
        idempotency_key: str | None = None,
    ) -> Json:
        """Open an instance; with `idempotency_key`, a repeat returns the first instance."""
        call = _core.open_instance(task_class, principal, world, beliefs, idempotency_key)
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
    ) -> Json:
        data = _core.belief(slot, value, source, turn, world_ref)
        return self._send(Call("POST", _core.instance_path(instance_id) + "beliefs/", data))

    def set_world(self, instance_id: str, world: Mapping[str, Any]) -> Json:
        return self._send(
            Call("PUT", _core.instance_path(instance_id) + "world/", {"world": dict(world)})
        )

    def plan(self, instance_id: str) -> Json:
        return self._send(Call("POST", _core.instance_path(instance_id) + "plan/"))

    def get(self, instance_id: str) -> Json:
        return self._send(Call("GET", _core.instance_path(instance_id)))

    def cancel(self, instance_id: str, reason: str | None = None) -> Json:
        data = {"reason": reason} if reason else {}
        return self._send(Call("POST", _core.instance_path(instance_id) + "cancel/", data))

    # --- waiting and the common case -----------------------------------------------------

    def wait(self, instance_id: str, timeout: float | None = None) -> Resolution:
        """Poll (with If-None-Match, backing off) until the instance leaves awaiting_user.

        Returns the Resolution (ready; cancelled, with `rejected` and `reason`; or open).
        Raises `InstanceExpired` when the person did not answer in time and `WaitTimeout`
        when `timeout` seconds pass first.
        """
        deadline = None if timeout is None else time.monotonic() + timeout
        backoff = _core.Backoff(self.poll_interval, self.max_poll_interval)
        etag: str | None = None
        payload: Json = {}
        while True:
            headers = {"If-None-Match": etag} if etag else {}
            response = self._http.get(_core.instance_path(instance_id), headers=headers)
            if response.status_code != 304:
                payload = _core.decode(response)
                etag = response.headers.get("ETag")
            if payload.get("status") != AWAITING_USER:
                return _core.settle(payload, self.base_url)
            remaining = None if deadline is None else deadline - time.monotonic()
            if remaining is not None and remaining <= 0:
                raise WaitTimeout(
                    f"instance {instance_id} still awaits the person after {timeout} s",
                    payload,
                )
            self._sleep(backoff(remaining))

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
    ) -> Resolution:
        """The common case: open with one belief per value and the world, plan, and return at
        once when nothing blocks; else wait for the person (or, with `wait=False`, return the
        awaiting Resolution with the page URL to send them to)."""
        beliefs = _core.beliefs_from_values(values, world, source, turn)
        payload = self.open_instance(
            task_class, principal, world=world, beliefs=beliefs, idempotency_key=idempotency_key
        )
        if payload["status"] == OPEN:
            payload = self.plan(payload["id"])
        if payload["status"] == AWAITING_USER:
            if not wait:
                return Resolution.from_payload(payload, self.base_url)
            return self.wait(payload.get("id") or payload["instance"], timeout)
        return _core.settle(payload, self.base_url)


class AsyncConsole(_Common):
    """The async twin of `Console`: the same methods, awaited."""

    def __init__(
        self,
        base_url: str | None = None,
        api_key: str | None = None,
        *,
        timeout: float = DEFAULT_HTTP_TIMEOUT,
        poll_interval: float = DEFAULT_POLL_INTERVAL,
        max_poll_interval: float = DEFAULT_MAX_POLL_INTERVAL,
        transport: httpx.AsyncBaseTransport | None = None,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        options = self._setup(base_url, api_key, poll_interval, max_poll_interval)
        self._http = httpx.AsyncClient(timeout=timeout, transport=transport, **options)
        self._sleep = sleep

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

    async def _send(self, call: Call) -> Any:
        response = await self._http.request(
            call.method, call.path, json=call.json, headers=call.headers
        )
        return _core.decode(response)

    async def register_task_class(
        self,
        key: str,
        *,
        name: str | None = None,
        slots: Sequence[Mapping[str, Any]] = (),
        decisions: Sequence[Mapping[str, Any]] = (),
    ) -> Json:
        return await self._send(_core.register_task_class(key, name, slots, decisions))

    async def open_instance(
        self,
        task_class: str,
        principal: str,
        *,
        world: Mapping[str, Any] | None = None,
        beliefs: Sequence[Mapping[str, Any]] | None = None,
        idempotency_key: str | None = None,
    ) -> Json:
        call = _core.open_instance(task_class, principal, world, beliefs, idempotency_key)
        return await self._send(call)

    async def record_belief(
        self,
        instance_id: str,
        slot: str,
        value: Any,
        *,
        source: str,
        turn: int | None = None,
        world_ref: Mapping[str, Any] | None = None,
    ) -> Json:
        data = _core.belief(slot, value, source, turn, world_ref)
        return await self._send(Call("POST", _core.instance_path(instance_id) + "beliefs/", data))

    async def set_world(self, instance_id: str, world: Mapping[str, Any]) -> Json:
        path = _core.instance_path(instance_id) + "world/"
        return await self._send(Call("PUT", path, {"world": dict(world)}))

    async def plan(self, instance_id: str) -> Json:
        return await self._send(Call("POST", _core.instance_path(instance_id) + "plan/"))

    async def get(self, instance_id: str) -> Json:
        return await self._send(Call("GET", _core.instance_path(instance_id)))

    async def cancel(self, instance_id: str, reason: str | None = None) -> Json:
        data = {"reason": reason} if reason else {}
        return await self._send(Call("POST", _core.instance_path(instance_id) + "cancel/", data))

    async def wait(self, instance_id: str, timeout: float | None = None) -> Resolution:
        """See `Console.wait`."""
        deadline = None if timeout is None else time.monotonic() + timeout
        backoff = _core.Backoff(self.poll_interval, self.max_poll_interval)
        etag: str | None = None
        payload: Json = {}
        while True:
            headers = {"If-None-Match": etag} if etag else {}
            response = await self._http.get(_core.instance_path(instance_id), headers=headers)
            if response.status_code != 304:
                payload = _core.decode(response)
                etag = response.headers.get("ETag")
            if payload.get("status") != AWAITING_USER:
                return _core.settle(payload, self.base_url)
            remaining = None if deadline is None else deadline - time.monotonic()
            if remaining is not None and remaining <= 0:
                raise WaitTimeout(
                    f"instance {instance_id} still awaits the person after {timeout} s",
                    payload,
                )
            await self._sleep(backoff(remaining))

    async def resolve(
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
    ) -> Resolution:
        """See `Console.resolve`."""
        beliefs = _core.beliefs_from_values(values, world, source, turn)
        payload = await self.open_instance(
            task_class, principal, world=world, beliefs=beliefs, idempotency_key=idempotency_key
        )
        if payload["status"] == OPEN:
            payload = await self.plan(payload["id"])
        if payload["status"] == AWAITING_USER:
            if not wait:
                return Resolution.from_payload(payload, self.base_url)
            return await self.wait(payload.get("id") or payload["instance"], timeout)
        return _core.settle(payload, self.base_url)
