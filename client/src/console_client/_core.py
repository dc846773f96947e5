"""What the sync and async clients share: request shapes, response decoding, backoff."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

import httpx

from console_client.errors import InstanceExpired, error_for
from console_client.models import EXPIRED, Resolution

DEFAULT_URL = "http://127.0.0.1:8000"
USER_AGENT = "confirmation-console-client/0.1"


@dataclass(frozen=True)
class Call:
    method: str
    path: str
    json: Any = None
    headers: dict[str, str] = field(default_factory=dict)


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


def _key(value: str) -> str:
    return quote(value, safe="")


def register_task_class(
    key: str,
    name: str | None,
    slots: Sequence[Mapping[str, Any]],
    decisions: Sequence[Mapping[str, Any]],
) -> Call:
    data: dict[str, Any] = {
        "slots": [dict(s) for s in slots],
        "decisions": [dict(d) for d in decisions],
    }
    if name is not None:
        data["name"] = name
    return Call("PUT", f"task-classes/{_key(key)}/", data)


def open_instance(
    task_class: str,
    principal: str,
    world: Mapping[str, Any] | None,
    beliefs: Sequence[Mapping[str, Any]] | None,
    idempotency_key: str | None,
) -> Call:
    data: dict[str, Any] = {"task_class": task_class, "principal": principal}
    if world is not None:
        data["world"] = dict(world)
    if beliefs is not None:
        data["beliefs"] = [dict(b) for b in beliefs]
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
