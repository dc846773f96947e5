"""The MCP permission tool keeps each value's JSON type through the person's edit."""

from __future__ import annotations

from typing import Any

import pytest
from console_client.mcp import as_original_type, value_type


@pytest.mark.parametrize(
    ("value", "expected"),
    [(True, "boolean"), (False, "boolean"), (3, "number"), (2.5, "number"), ("x", "string"),
     ({"a": 1}, "json"), ([1], "json"), (None, "json")],
)  # fmt: skip
def test_value_type(value: Any, expected: str) -> None:
    assert value_type(value) == expected


@pytest.mark.parametrize(
    ("original", "edited", "expected"),
    [
        (True, False, False),
        (True, "false", False),
        (False, "True", True),
        (False, " true ", True),
        (60000, "120000", 120000),
        (60000, 120000.0, 120000),
        (60000, "2.5", 2.5),
        (1.5, "2", 2.0),
        (1.5, 3, 3.0),
        ("ls", "ls -la", "ls -la"),
        ("60", 60, "60"),
        ({"a": 1}, '{"a": 2}', {"a": 2}),
        ([1], "[1, 2]", [1, 2]),
        (None, "anything", "anything"),
    ],
)
def test_an_edit_comes_back_in_the_original_type(original: Any, edited: Any, expected: Any) -> None:
    result = as_original_type(original, edited)
    assert result == expected and type(result) is type(expected)


@pytest.mark.parametrize(
    ("original", "edited"),
    [(True, "maybe"), (True, 1), (True, "1"), (5, "five"), (5, True), ({"a": 1}, "[1]"),
     ([1], '{"a": 1}'), ({"a": 1}, "not json")],
)  # fmt: skip
def test_an_edit_that_is_not_the_original_type_is_refused(original: Any, edited: Any) -> None:
    with pytest.raises(ValueError):
        as_original_type(original, edited)


# --- failures are denies that say why ---------------------------------------------------------


def _closed_port() -> int:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_an_unreachable_console_is_a_deny_that_names_the_cause(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import asyncio
    import json

    from console_client.mcp import permission

    url = f"http://127.0.0.1:{_closed_port()}"
    monkeypatch.setenv("CONSOLE_URL", url)
    monkeypatch.setenv("CONSOLE_API_KEY", "key")
    monkeypatch.setenv("CONSOLE_PRINCIPAL", "alice")
    answer = json.loads(asyncio.run(permission("Bash", {"command": "ls"}, "toolu_1")))
    assert answer["behavior"] == "deny"
    assert answer["message"].startswith("Nothing was confirmed: ")
    assert url in answer["message"] and "could not be reached" in answer["message"]


def test_an_unexpected_failure_is_a_deny_too(monkeypatch: pytest.MonkeyPatch) -> None:
    import asyncio
    import json

    import console_client.mcp as mcp

    monkeypatch.setenv("CONSOLE_API_KEY", "key")
    monkeypatch.setenv("CONSOLE_PRINCIPAL", "alice")

    def broken() -> Any:
        raise RuntimeError("disk full")

    monkeypatch.setattr(mcp, "_console", broken)
    answer = json.loads(asyncio.run(mcp.permission("Bash", {"command": "ls"})))
    assert answer == {
        "behavior": "deny",
        "message": "Nothing was confirmed: the permission tool failed (RuntimeError('disk full'))",
    }
