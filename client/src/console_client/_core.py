"""What the sync and async clients share: every request as a `Call`, response decoding,
backoff, and the polling of `wait` as a program of steps (`resolve` builds on it).

Nothing here does I/O. A program is a generator that yields a `Call` (and is sent back what
the call's `parse` made of the response) or a `Sleep` (and is sent back None), and returns its
result. `Console` runs the steps with `httpx.Client` and its sleep, `AsyncConsole` awaits them
with `httpx.AsyncClient` and its async sleep, so the logic of each operation is written once.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Generator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar
from urllib.parse import quote, urlencode

import httpx

from console_client.digest import verify_bindings
from console_client.errors import InstanceExpired, ReceiptRedeemed, WaitTimeout, error_for
from console_client.models import (
    EXPIRED,
    REDEEM_AGENT,
    WAITING,
    Confirmation,
    PlanBody,
    Resolution,
    check_redeem,
)
from console_client.receipts import JWKS_PATH, Receipt, Redemption, key_id, verify_receipt

DEFAULT_URL = "http://127.0.0.1:8000"
USER_AGENT = "confirmation-console-client/0.1"

T = TypeVar("T")


def decode(response: httpx.Response) -> Any:
    """The JSON of a success; a typed `ApiError` carrying the console's JSON otherwise."""
    if response.is_success:
        return response.json() if response.content else {}
    try:
        body = response.json()
    except ValueError:
        body = None
    if not isinstance(body, dict):
        body = {
            "error": f"http_{response.status_code}",
            "detail": response.text[:500],
            "fields": {},
        }
    raise error_for(response.status_code, body)


@dataclass(frozen=True)
class Call:
    """One request to the API, and what to make of its response (by default its JSON)."""

    method: str
    path: str
    json: Any = None
    headers: dict[str, str] = field(default_factory=dict)
    parse: Callable[[httpx.Response], Any] = decode
    # Seconds to wait for the answer, where the client's own timeout would be too short (a
    # long-poll); None: the client's.
    timeout: float | None = None
    # A read that may simply be asked again: when the connection drops before an answer (a
    # server restarting, a proxy closing an idle long-poll), the program is handed a `Dropped`
    # instead of the error.
    retryable: bool = False


@dataclass(frozen=True)
class Dropped:
    """The connection of a retryable read dropped before its answer."""

    error: Exception


@dataclass(frozen=True)
class Sleep:
    """A pause between polls; the sync client sleeps, the async one awaits its sleep."""

    seconds: float


Program = Generator[Call | Sleep, Any, T]


class Run(Generic[T]):
    """A program in progress: `step` is what it waits on, None once it returned `result`.

    The clients' loops only differ in whether they await the step, so the generator protocol
    (send, StopIteration) stays here."""

    result: T

    def __init__(self, program: Program[T]) -> None:
        self._program = program
        self.step: Call | Sleep | None = None
        self.send(None)

    def send(self, reply: Any) -> None:
        """Hand the program the outcome of its step and move it to the next one."""
        try:
            self.step = self._program.send(reply)
        except StopIteration as done:
            self.step = None
            self.result = done.value


def settings(base_url: str | None, api_key: str | None) -> tuple[str, str]:
    """The console's URL and the runtime key, from the arguments or the environment."""
    url = base_url or os.environ.get("CONSOLE_URL") or DEFAULT_URL
    key = api_key or os.environ.get("CONSOLE_API_KEY")
    if not key:
        raise ValueError("no runtime key: pass api_key= or set CONSOLE_API_KEY")
    return url.rstrip("/"), key


def client_options(base_url: str, api_key: str) -> dict[str, Any]:
    return {
        "base_url": f"{base_url}/api/v1/",
        "headers": {
            "Authorization": f"Api-Key {api_key}",
            "Accept": "application/json",
            "User-Agent": USER_AGENT,
        },
    }


def _key(value: str) -> str:
    return quote(value, safe="")


def register_task_class(
    key: str,
    name: str | None,
    slots: Sequence[Mapping[str, Any]],
    decisions: Sequence[Mapping[str, Any]],
    open_slots: bool | None = None,
    subject_key: str | None = None,
) -> Call:
    data: dict[str, Any] = {
        "slots": [dict(s) for s in slots],
        "decisions": [dict(d) for d in decisions],
    }
    if name is not None:
        data["name"] = name
    if open_slots is not None:
        data["open_slots"] = open_slots
    if subject_key is not None:
        data["subject_key"] = subject_key
    return Call("PUT", f"task-classes/{_key(key)}/", data)


def get_task_class(key: str) -> Call:
    return Call("GET", f"task-classes/{_key(key)}/")


def _page(path: str, **query: Any) -> Call:
    given = {k: str(v) for k, v in query.items() if v is not None}
    return Call("GET", path + ("?" + urlencode(given) if given else ""))


def list_instances(
    status: str | None, principal: str | None, limit: int | None, offset: int | None
) -> Call:
    return _page("instances/", status=status, principal=principal, limit=limit, offset=offset)


def list_task_classes(limit: int | None, offset: int | None) -> Call:
    return _page("task-classes/", limit=limit, offset=offset)


def open_instance(
    task_class: str,
    principal: str,
    world: Mapping[str, Any] | None,
    beliefs: Sequence[Mapping[str, Any]] | None,
    idempotency_key: str | None,
    slots: Sequence[str] | None = None,
    audience: str | None = None,
) -> Call:
    data: dict[str, Any] = {"task_class": task_class, "principal": principal}
    if world is not None:
        data["world"] = dict(world)
    if beliefs is not None:
        data["beliefs"] = [dict(b) for b in beliefs]
    if slots is not None:
        data["slots"] = list(slots)
    if audience is not None:
        data["audience"] = audience
    headers = {"Idempotency-Key": idempotency_key} if idempotency_key is not None else {}
    return Call("POST", "instances/", data, headers)


def belief(
    slot: str,
    value: Any,
    source: str,
    turn: int | None = None,
    world_ref: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    data: dict[str, Any] = {"slot": slot, "value": value, "source": source}
    if turn is not None:
        data["turn"] = turn
    if world_ref is not None:
        data["world_ref"] = dict(world_ref)
    return data


def beliefs_from_values(
    values: Mapping[str, Any],
    world: Mapping[str, Any] | None,
    source: str,
    turn: int | None,
) -> list[dict[str, Any]]:
    """One belief per value; each refers to the world the runtime states for its slot."""
    world = world or {}
    return [
        belief(
            slot,
            value,
            source,
            turn,
            world.get(slot) if isinstance(world.get(slot), Mapping) else None,
        )
        for slot, value in values.items()
    ]


def instance_path(instance_id: str) -> str:
    return f"instances/{_key(str(instance_id))}/"


def record_belief(
    instance_id: str,
    slot: str,
    value: Any,
    source: str,
    turn: int | None,
    world_ref: Mapping[str, Any] | None,
) -> Call:
    data = belief(slot, value, source, turn, world_ref)
    return Call("POST", instance_path(instance_id) + "beliefs/", data)


def set_world(instance_id: str, world: Mapping[str, Any]) -> Call:
    return Call("PUT", instance_path(instance_id) + "world/", {"world": dict(world)})


def plan(instance_id: str) -> Call:
    return Call("POST", instance_path(instance_id) + "plan/", parse=decode_plan)


def decode_plan(response: httpx.Response) -> PlanBody:
    """A plan's answer, where `instance` still reads (deprecated) as its `id`."""
    return PlanBody(decode(response))


def get(instance_id: str) -> Call:
    return Call("GET", instance_path(instance_id))


def cancel(instance_id: str, reason: str | None) -> Call:
    data = {"reason": reason} if reason else {}
    return Call("POST", instance_path(instance_id) + "cancel/", data)


def redeem(token: str, digest: str | None) -> Call:
    data = {"receipt": token}
    if digest is not None:
        data["bindings_digest"] = digest
    return Call("POST", "receipts/redeem/", data, parse=_redemption)


def _redemption(response: httpx.Response) -> Redemption:
    return Redemption.from_payload(decode(response))


def _redemption_or_none(response: httpx.Response) -> Redemption | None:
    """The redemption; None when the receipt was already redeemed (a replay)."""
    try:
        return _redemption(response)
    except ReceiptRedeemed:
        return None


def person_passkeys(username: str) -> Call:
    return Call("GET", f"people/{quote(username, safe='')}/passkeys/")


def jwks(base_url: str) -> Call:
    """The console's public keys; outside /api/v1/, so by its absolute URL."""
    return Call("GET", base_url + JWKS_PATH)


def _changed(response: httpx.Response) -> tuple[Any, str | None] | None:
    """None for a 304 (the instance is as it was); else its JSON and its new ETag."""
    if response.status_code == 304:
        return None
    return decode(response), response.headers.get("ETag")


def poll(instance_id: str, etag: str | None, wait: int | None = None) -> Call:
    """A conditional GET: with the last ETag seen, an unchanged instance costs a 304.

    With `wait`, a long-poll (`Prefer: wait=N`): the console answers when the instance changes
    or after N seconds. The answer's parse is then (what `_changed` gives, whether the console
    applied the preference)."""
    headers = {"If-None-Match": etag} if etag else {}
    if wait is None:
        return Call(
            "GET", instance_path(instance_id), headers=headers, parse=_changed, retryable=True
        )
    headers["Prefer"] = f"wait={wait}"
    return Call(
        "GET",
        instance_path(instance_id),
        headers=headers,
        parse=_long_polled,
        timeout=wait + LONG_POLL_GRACE,
        retryable=True,
    )


# How long a long-poll asks the console to wait (it holds at most 60 s; under the 30 s that
# proxies commonly allow an idle answer), and how much longer the client waits for the answer.
LONG_POLL_SECONDS = 25
LONG_POLL_GRACE = 15.0
# How many drops in a row `wait` rides out (backing off between them) before it raises the last.
MAX_DROPS = 5


def _long_polled(response: httpx.Response) -> tuple[tuple[Any, str | None] | None, bool]:
    return _changed(response), "Preference-Applied" in response.headers


def wait(
    instance_id: str, timeout: float | None, base_url: str, backoff: Backoff
) -> Program[Resolution]:
    """Wait until the instance leaves awaiting_user; see `Console.wait`.

    Long-polls while the console applies `Prefer: wait` (each answer comes when the instance
    changes, so it is asked again at once); polls backing off, as before, once a console
    answers without `Preference-Applied` (one that does not know the preference). A poll whose
    connection drops is asked again after a pause, up to `MAX_DROPS` times in a row."""
    deadline = None if timeout is None else time.monotonic() + timeout
    etag: str | None = None
    payload: dict[str, Any] = {}
    long_poll = True
    drops = 0
    while True:
        remaining = None if deadline is None else deadline - time.monotonic()
        asked = None
        if long_poll and (remaining is None or remaining >= 1):
            asked = (
                LONG_POLL_SECONDS if remaining is None else min(LONG_POLL_SECONDS, int(remaining))
            )
        answer = yield poll(instance_id, etag, asked)
        if isinstance(answer, Dropped):
            drops += 1
            if drops > MAX_DROPS:
                raise answer.error
            yield Sleep(backoff(remaining))
            continue
        drops = 0
        changed, long_poll = (answer, long_poll) if asked is None else answer
        if changed is not None:
            payload, etag = changed
        if payload.get("status") not in WAITING:
            return settle(payload, base_url)
        remaining = None if deadline is None else deadline - time.monotonic()
        if remaining is not None and remaining <= 0:
            raise WaitTimeout(
                f"instance {instance_id} still awaits the person after {timeout} s",
                payload,
            )
        if asked is None or not long_poll:
            yield Sleep(backoff(remaining))


def settle(payload: Mapping[str, Any], base_url: str) -> Resolution:
    """A payload that left awaiting_user, as a Resolution; an expired one raises."""
    resolution = Resolution.from_payload(payload, base_url)
    if resolution.status == EXPIRED:
        raise InstanceExpired(
            f"instance {resolution.instance_id} expired before the person answered "
            f"({resolution.reason or 'a blocking prompt passed its time to live'}); nothing of "
            "it binds. Open a new instance to ask again.",
            dict(payload),
        )
    return resolution


class Backoff:
    """Poll intervals: `first`, growing by `factor` up to `most`."""

    def __init__(self, first: float, most: float, factor: float = 1.5) -> None:
        self.next = first
        self.most = most
        self.factor = factor

    def __call__(self, remaining: float | None) -> float:
        delay = self.next if remaining is None else max(0.0, min(self.next, remaining))
        self.next = min(self.next * self.factor, self.most)
        return delay


class KeyCache:
    """The console's JWKS as last fetched: fetched when first needed, and again when a receipt
    names a key it does not list (the console rotated its keys) or it is older than `max_age`.
    A refetch for an unknown key waits `min_interval` seconds after the last one, so tokens with
    made-up key ids cannot turn every check into a request."""

    def __init__(self, max_age: float = 3600.0, min_interval: float = 5.0) -> None:
        self.max_age = max_age
        self.min_interval = min_interval
        self.jwks: dict[str, Any] | None = None
        self.fetched_at = 0.0

    def lists(self, kid: str) -> bool:
        keys = (self.jwks or {}).get("keys")
        return isinstance(keys, list) and any(
            isinstance(k, Mapping) and k.get("kid") == kid for k in keys
        )

    def stale_for(self, kid: str) -> bool:
        age = time.monotonic() - self.fetched_at
        if self.jwks is None or age > self.max_age:
            return True
        return not self.lists(kid) and age > self.min_interval

    def store(self, jwks: Any) -> None:
        self.jwks = jwks if isinstance(jwks, dict) else {"keys": []}
        self.fetched_at = time.monotonic()


@dataclass(frozen=True)
class ReceiptChecks:
    """What `verify_receipt` checks beyond the signature (its keyword arguments)."""

    bindings: Mapping[str, Any] | None = None
    worlds: Mapping[str, Any] | None = None
    audience: str | None = None
    issuer: str | None = None
    person_required: bool = True


def verified(token: str, keys: KeyCache, base_url: str, checks: ReceiptChecks) -> Program[Receipt]:
    """Verify a receipt with the console's keys, fetching them first when needed."""
    if keys.stale_for(key_id(token)):
        keys.store((yield jwks(base_url)))
    return verify_receipt(
        token,
        keys.jwks or {},
        bindings=checks.bindings,
        worlds=checks.worlds,
        audience=checks.audience,
        issuer=checks.issuer,
        person_required=checks.person_required,
    )


def confirmation(
    resolution: Resolution,
    keys: KeyCache,
    base_url: str,
    *,
    bindings: Mapping[str, Any] | None = None,
    audience: str | None = None,
    redeem: str = REDEEM_AGENT,
) -> Program[Confirmation]:
    """A ready resolution as a `Confirmation` of `bindings` (default: its own, digest checked).

    A receipt already redeemed makes a replayed confirmation (the action it guards was handed
    over before: do not run it again). Otherwise the receipt is verified against the bindings
    and `audience`, and redeemed here (`redeem="agent"`) or handed on with the confirmation for
    the tool server to redeem (`redeem="tool"`). Two runs racing: one redeems, the other is
    the replay."""
    check_redeem(redeem)
    confirmed = resolution.verified_bindings()
    if bindings is not None:  # what the action is given must be what the person confirmed
        confirmed = verify_bindings(bindings, resolution.digest)
    if resolution.receipt_state == "redeemed":
        return Confirmation(confirmed, instance_id=resolution.instance_id, replayed=True)
    checks = ReceiptChecks(bindings=confirmed, audience=audience)
    receipt = yield from verified(resolution.usable_receipt(), keys, base_url, checks)
    if redeem != REDEEM_AGENT:
        return Confirmation(confirmed, instance_id=resolution.instance_id, receipt=receipt.token)
    used = yield Call(
        "POST",
        "receipts/redeem/",
        {"receipt": receipt.token, "bindings_digest": receipt.bindings_digest},
        parse=_redemption_or_none,
    )
    if used is None:  # redeemed meanwhile by another run of the same code
        return Confirmation(confirmed, instance_id=resolution.instance_id, replayed=True)
    return Confirmation(
        confirmed, instance_id=resolution.instance_id, receipt=receipt.token, redeemed=True
    )


def one(call: Call) -> Program[Any]:
    """A program of one request: its parsed response."""
    return (yield call)
