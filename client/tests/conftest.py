"""A scripted console behind httpx.MockTransport: records every request, answers as told."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from typing import Any

import httpx
import pytest
from console_client import AsyncConsole, Console
from console_client.digest import bindings_digest

BASE = "http://console.test"
KEY = "rt.secret-key"
INSTANCE_ID = "7d1c2c5e-2a7b-4bd4-9a57-0f0b5d7f7a11"


def instance(status: str, **extra: Any) -> dict[str, Any]:
    payload: dict[str, Any] = {
        "id": INSTANCE_ID,
        "task_class": "payments.refund",
        "principal": "alice",
        "status": status,
        "status_reason": None,
        "blocking": 1 if status == "awaiting_user" else 0,
        "bindings": None,
        "bindings_digest": None,
        "prompts": [],
        "receipt": None,
        "receipt_state": None,
        "slots": [],
    }
    payload.update(extra)
    return payload


def ready(bindings: dict[str, Any]) -> dict[str, Any]:
    return instance("ready", bindings=bindings, bindings_digest=bindings_digest(bindings))


class FakeConsole:
    """Routes: a dict of (method, path) → handler or list of payloads served in turn (the last
    repeats). GETs of an instance send an ETag and honour If-None-Match like the console."""

    def __init__(self) -> None:
        self.requests: list[httpx.Request] = []
        self.routes: dict[tuple[str, str], Any] = {}

    def on(self, method: str, path: str, *responses: Any) -> None:
        self.routes[(method, "/api/v1/" + path)] = list(responses)

    def bodies(self) -> list[Any]:
        return [json.loads(r.content) if r.content else None for r in self.requests]

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        route = self.routes.get((request.method, request.url.path))
        if route is None:
            return httpx.Response(
                404, json={"error": "not_found", "detail": "No such thing.", "fields": {}}
            )
        answer = route.pop(0) if len(route) > 1 else route[0]
        if callable(answer):
            return answer(request)
        if isinstance(answer, httpx.Response):
            return answer
        status, payload = answer if isinstance(answer, tuple) else (200, answer)
        if request.method == "GET":
            canonical = json.dumps(payload, sort_keys=True, separators=(",", ":"))
            tag = '"' + hashlib.sha256(canonical.encode()).hexdigest() + '"'
            if request.headers.get("If-None-Match") == tag:
                return httpx.Response(304, headers={"ETag": tag})
            return httpx.Response(status, json=payload, headers={"ETag": tag})
        return httpx.Response(status, json=payload)


@pytest.fixture
def fake() -> FakeConsole:
    return FakeConsole()


@pytest.fixture
def sleeps() -> list[float]:
    return []


@pytest.fixture
def console(fake: FakeConsole, sleeps: list[float]) -> Console:
    return Console(
        BASE,
        KEY,
        transport=httpx.MockTransport(fake),
        poll_interval=0.5,
        max_poll_interval=2.0,
        sleep=sleeps.append,
    )


@pytest.fixture
def async_console(fake: FakeConsole, sleeps: list[float]) -> AsyncConsole:
    async def sleep(seconds: float) -> None:
        sleeps.append(seconds)

    return AsyncConsole(
        BASE,
        KEY,
        transport=httpx.MockTransport(fake),
        poll_interval=0.5,
        max_poll_interval=2.0,
        sleep=sleep,
    )


Handler = Callable[[httpx.Request], httpx.Response]
