"""/readyz: 503 while the database is out of reach or migrations are pending (an orchestrator
routes around the process); /healthz stays the liveness check."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from django.db import InterfaceError, OperationalError
from django.db.migrations.recorder import MigrationRecorder
from django.test import Client

from beliefs.selectors import health

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _read_the_schema_afresh(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(health, "_migrated", False)


def test_a_process_on_a_migrated_database_is_ready() -> None:
    response = Client().get("/readyz")
    assert response.status_code == 200
    assert response.json() == {"status": "ready", "checks": {"database": "ok", "migrations": "ok"}}
    assert response["Cache-Control"] == "no-store"


def test_pending_migrations_make_it_not_ready_until_they_are_applied() -> None:
    recorder = MigrationRecorder.Migration.objects
    last = recorder.filter(app="beliefs").order_by("-name").first()
    assert last is not None
    last.delete()  # as if the code were newer than the database
    try:
        response = Client().get("/readyz")
        assert response.status_code == 503 and response["Retry-After"] == "5"
        body = response.json()
        assert body["status"] == "not_ready"
        assert body["checks"]["migrations"] == f"pending: beliefs.{last.name}"
        assert Client().get("/healthz").status_code == 200  # alive, only not ready
    finally:
        recorder.create(app=last.app, name=last.name, applied=last.applied)
    assert Client().get("/readyz").status_code == 200


@pytest.mark.parametrize(
    "lost",
    [
        lambda: OperationalError("server closed the connection unexpectedly"),
        lambda: InterfaceError("connection already closed"),
    ],
)
def test_a_database_out_of_reach_makes_it_not_ready(
    monkeypatch: pytest.MonkeyPatch, lost: Callable[[], Exception]
) -> None:
    from django.db.backends.utils import CursorWrapper

    def fail(*args: Any, **kwargs: Any) -> Any:
        raise lost()

    monkeypatch.setattr(CursorWrapper, "execute", fail)
    response = Client(raise_request_exception=False).get("/readyz")
    assert response.status_code == 503
    body = response.json()
    assert body["status"] == "not_ready"
    assert body["checks"]["database"].startswith("unreachable: ")
    assert "migrations" not in body["checks"]


def test_once_migrated_the_schema_is_not_read_again(monkeypatch: pytest.MonkeyPatch) -> None:
    assert Client().get("/readyz").status_code == 200
    monkeypatch.setattr(health, "MigrationExecutor", None)  # any further read would fail
    assert Client().get("/readyz").status_code == 200
