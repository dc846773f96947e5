"""End-to-end fixtures: a live console over real HTTP, a runtime key, and a person who signs in
and answers prompts through the API with a session and CSRF, as the browser does.

The live server shares the test database with the test itself, so requests are served one at a
time here, and the test's own ORM writes take the same lock: the runtime polling, the person
answering and a subprocess adapter may then run concurrently without two requests ever
interleaving inside one connection. A long-poll takes the lock for each of its answers only,
never while it waits.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

import httpx
import pytest
from asgiref.sync import sync_to_async
from django.contrib.auth.models import User
from django.utils import timezone
from rest_framework_api_key.crypto import concatenate

from beliefs.models import Prompt, PromptState, Runtime, RuntimeAPIKey
from beliefs.services.audit import Actor
from tests.builders import register
from tests.client.transfer_tool import SANDBOX, TRANSFER
from tests.conftest import PASSWORD


@contextmanager
def _sync_orm_allowed() -> Iterator[None]:
    before = os.environ.get("DJANGO_ALLOW_ASYNC_UNSAFE")
    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
    try:
        yield
    finally:
        if before is None:
            del os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"]
        else:
            os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = before


def subprocess_environment(**extra: str) -> dict[str, str]:
    """A child process's environment: a bare PATH, and this process's PYTHONPATH when it has
    one, so the child imports the same console_client as the test (a worktree's, not the
    installed one)."""
    environment = {"PATH": "/usr/bin:/bin"}
    if os.environ.get("PYTHONPATH"):
        environment["PYTHONPATH"] = os.environ["PYTHONPATH"]
    return {**environment, **extra}


@dataclass
class LiveConsole:
    url: str
    key: str
    lock: threading.Lock = field(default_factory=threading.Lock)

    @contextmanager
    def exclusive(self) -> Iterator[None]:
        """Hold the server still while the test writes to the database itself."""
        with self.lock:
            yield

    def expire(self, instance_id: str) -> None:
        """Move the instance's blocking prompts past their time to live (the next read of the
        instance expires it, as the server does lazily). Callable from a test's event loop: it
        runs in this thread, under the server's lock."""
        with self.exclusive(), _sync_orm_allowed():
            updated = Prompt.objects.filter(
                instance_id=instance_id, state=PromptState.OPEN, blocking=True
            ).update(expires_at=timezone.now() - timedelta(minutes=1))
        assert updated, f"instance {instance_id} has no open blocking prompt to expire"


RUNTIME = "agent-runtime"


@pytest.fixture(scope="session")
def agent_key() -> tuple[str, str, str]:
    """The key of the runtime of every test here, made once: (the key, its prefix, its hash).
    Each test stores it again in its emptied database, so a process started once for several
    tests (test_mcp's stdio server, as an agent host keeps it) holds a key that stays valid."""
    generated: tuple[str, str, str] = RuntimeAPIKey.objects.key_generator.generate()
    return generated


def _store_key(generated: tuple[str, str, str]) -> RuntimeAPIKey:
    """The runtime's key row for `generated`, made directly (as `tests.conftest.runtime_key_of`
    makes one), so that tests counting audit events count only what they do."""
    _, prefix, hashed_key = generated
    runtime = Runtime.objects.create(name=RUNTIME)
    return RuntimeAPIKey.objects.create(
        id=concatenate(prefix, hashed_key),
        prefix=prefix,
        hashed_key=hashed_key,
        name=RUNTIME,
        runtime=runtime,
    )


@pytest.fixture
def console(
    live_server: Any,
    transactional_db: None,
    monkeypatch: pytest.MonkeyPatch,
    agent_key: tuple[str, str, str],
) -> Iterator[LiveConsole]:
    live = LiveConsole(url=live_server.url, key=agent_key[0])
    handler = live_server.handler
    answer_here = handler._answer_here

    def serialized(*args: Any) -> Any:  # noqa: ANN401 - the handler's response
        with live.lock:
            return answer_here(*args)

    # Each answer (a long-poll's too, but not its wait between answers) holds the lock.
    monkeypatch.setattr(
        handler,
        "_answer",
        sync_to_async(serialized, thread_sensitive=False, executor=handler.threads),
    )
    with live.exclusive():
        User.objects.create_user(username="alice", password=PASSWORD)
        actor = Actor(key=_store_key(agent_key))
        for key, recipient_risk in ((TRANSFER, "reversible"), (SANDBOX, "reversible")):
            register(
                key,
                actor=actor,
                slots=[
                    {"key": "recipient_account", "label": "Recipient account"},
                    {"key": "memo", "label": "Memo"},
                ],
                decisions=(
                    [{"key": "send_transfer", "slots": ["recipient_account"]}]
                    if key == TRANSFER
                    else []
                ),
                risks={"recipient_account": recipient_risk, "memo": "cosmetic"},
                decision_risks={"send_transfer": "irreversible"} if key == TRANSFER else None,
            )
    yield live


class Person:
    """alice, signed in over HTTP with her password; answers with her session and CSRF token."""

    def __init__(self, url: str) -> None:
        self.http = httpx.Client(base_url=url, follow_redirects=False, timeout=30)
        self.http.get("/accounts/login/")
        signed_in = self.http.post(
            "/accounts/login/",
            data={
                "username": "alice",
                "password": PASSWORD,
                "csrfmiddlewaretoken": self.http.cookies["csrftoken"],
            },
        )
        assert signed_in.status_code == 302, signed_in.text

    def _csrf(self) -> dict[str, str]:
        return {"X-CSRFToken": self.http.cookies["csrftoken"]}

    def open_prompts(self) -> list[dict[str, Any]]:
        response = self.http.get("/api/v1/prompts/", params={"state": "open"})
        assert response.status_code == 200, response.text
        return [p for p in response.json()["results"] if p["blocking"]]

    def respond(self, prompt: dict[str, Any], action: str, **data: Any) -> dict[str, Any]:
        """Respond as the console's person does: a typed value is entered twice (a change of an
        irreversible value needs its second entry)."""
        if "value" in data:
            data.setdefault("value_confirmation", data["value"])
        response = self.http.post(
            f"/api/v1/prompts/{prompt['id']}/respond/",
            json={"action": action, "version": prompt["version"], **data},
            headers=self._csrf(),
        )
        assert response.status_code == 200, response.text
        return response.json()

    def wait_for_prompt(self, timeout: float = 30) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            prompts = self.open_prompts()
            if prompts:
                return prompts[0]
            time.sleep(0.05)
        raise AssertionError("no blocking prompt reached the person")

    def answer(self, action: str, **data: Any) -> dict[str, Any]:
        """Answer the (one) open blocking prompt: confirm, edit (value=), reject (reason=)."""
        return self.respond(self.wait_for_prompt(), action, **data)

    def answer_when_asked(self, action: str, **data: Any) -> Future[dict[str, Any]]:
        """Answer from another thread as soon as a prompt appears, while the runtime waits;
        `.result()` re-raises whatever went wrong there."""
        executor = ThreadPoolExecutor(max_workers=1)
        future = executor.submit(self.answer, action, **data)
        executor.shutdown(wait=False)
        return future


@pytest.fixture
def person(console: LiveConsole) -> Iterator[Person]:
    alice = Person(console.url)
    yield alice
    alice.http.close()
