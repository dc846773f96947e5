"""What a database cannot store, found before anything else reads a request: pure Python.

PostgreSQL refuses the NUL character in text and in jsonb; an unpaired surrogate is not Unicode
text at all (it cannot even be encoded as UTF-8); a number out of range (1e400 reads as infinity)
cannot be written back out as JSON; and nesting deeper than any of our documents needs would only
feed recursion further down (flattening, canonical JSON, the database's JSON functions). One walk,
iterative so that a hostile body cannot recurse it, finds the first such problem and names where
it is.

Paths: a field is named the way the API's errors name fields (`beliefs[0].world_ref.zip`). A
top-level field listed in `documents` holds a free-form document (a proposal's `graph`), and
inside it the path is a JSON pointer (`/graph/nodes/0/value`), as the proposal findings use.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Iterable
from dataclasses import dataclass
from typing import Any

from beliefs.domain.vocabulary import MAX_JSON_DEPTH

NUL_MESSAGE = "contains a NUL character (U+0000), which cannot be stored"
SURROGATE_MESSAGE = "contains an unpaired surrogate, which is not valid Unicode text"
OUT_OF_RANGE_MESSAGE = "number out of range"


# Integers up to here are doubles exactly; beyond, one may be past a double's range.
_SAFE_INT = 2**53


def _out_of_range(value: float) -> bool:
    """Infinite (1e400 reads so), or an integer past a double's range: digests (RFC 8785
    writes every number as a double) cannot write either."""
    if isinstance(value, float):
        return not math.isfinite(value)
    if -_SAFE_INT <= value <= _SAFE_INT:
        return False
    try:
        float(value)
    except OverflowError:
        return True
    return False


@dataclass(frozen=True)
class Problem:
    field: str
    message: str
    code: str  # "invalid_text", "number_out_of_range" or "too_deep"


def text_problem(text: str) -> str | None:
    """Why this text cannot be stored, or None."""
    if "\x00" in text:
        return NUL_MESSAGE
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return SURROGATE_MESSAGE
    return None


def too_deep_message(limit: int = MAX_JSON_DEPTH) -> str:
    return f"nested more than {limit} levels deep"


def _child(path: str, key: Any, *, pointer: bool, in_list: bool) -> str:
    if pointer:
        return f"{path}/{str(key).replace('~', '~0').replace('/', '~1')}"
    if in_list:
        return f"{path}[{key}]"
    return f"{path}.{key}" if path else str(key)


def find_problem(
    data: Any, *, documents: Collection[str] = (), limit: int = MAX_JSON_DEPTH
) -> Problem | None:
    """The first value in a parsed JSON body that cannot be stored, or None.

    The body itself is level 0 and its fields level 1; a value deeper than `limit` is refused,
    named by the top-level field that holds it.
    """
    # (path, value, depth, pointer paths?, top-level field)
    stack: list[tuple[str, Any, int, bool, str]] = [("", data, 0, False, "")]
    while stack:
        path, value, depth, pointer, top = stack.pop()
        if depth > limit:
            return Problem(top or "body", too_deep_message(limit), "too_deep")
        if isinstance(value, str):
            problem = text_problem(value)
            if problem:
                return Problem(path or "body", problem, "invalid_text")
        elif isinstance(value, float | int) and _out_of_range(value):
            return Problem(path or "body", OUT_OF_RANGE_MESSAGE, "number_out_of_range")
        elif isinstance(value, dict):
            for key, child in value.items():
                key_text = str(key)
                problem = text_problem(key_text)
                if problem:
                    return Problem(path or "body", f"a field name {problem}", "invalid_text")
                child_pointer = pointer or (depth == 0 and key_text in documents)
                child_path = (
                    f"/{key_text}"
                    if child_pointer and not pointer
                    else _child(path, key_text, pointer=pointer, in_list=False)
                )
                stack.append((child_path, child, depth + 1, child_pointer, top or key_text))
        elif isinstance(value, list):
            stack.extend(
                (_child(path, i, pointer=pointer, in_list=True), child, depth + 1, pointer, top)
                for i, child in enumerate(value)
            )
    return None


def find_text_problem(pairs: Iterable[tuple[str, str]]) -> Problem | None:
    """The first (name, text) pair, from a form or a query string, that cannot be stored."""
    for name, text in pairs:
        problem = text_problem(name)
        if problem:
            return Problem("body", f"a field name {problem}", "invalid_text")
        problem = text_problem(text)
        if problem:
            return Problem(name, problem, "invalid_text")
    return None


def field_too_deep(text: str, limit: int = MAX_JSON_DEPTH) -> str:
    """The top-level field of a JSON object text under which nesting first exceeds `limit`,
    found without parsing (for text too deep for the parser itself); "body" if there is none."""
    depth = 0
    in_string = escaped = False
    start = 0
    last_string = ""
    key = ""
    for index, char in enumerate(text):
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
                if depth == 1:
                    last_string = text[start:index]
            continue
        if char == '"':
            in_string, start = True, index + 1
        elif char == ":" and depth == 1:
            key = last_string
        elif char in "[{":
            depth += 1
            if depth > limit + 1:
                return key or "body"
        elif char in "]}":
            depth -= 1
    return key or "body"
