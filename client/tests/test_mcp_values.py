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
