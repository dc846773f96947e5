"""Digests are over RFC 8785 (JSON Canonicalization Scheme), the same in every language: the
shared test vectors (tests/vectors/canonical.json, which the client's and any other client's
suites check too), the fast path equal to the exact one, what is refused, and the legacy form
that receipts issued before still verify with."""

from __future__ import annotations

import hashlib
import itertools
import json
import math
import random
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from beliefs.domain import canonical
from beliefs.domain.canonical import (
    CANONICALIZATION,
    bindings_digest,
    canonical_json,
    json_digest,
    legacy_bindings_digest,
    legacy_canonical_json,
    number_text,
    text_digest,
    worlds_digest,
)

VECTORS_FILE = Path(__file__).resolve().parents[1] / "vectors" / "canonical.json"
VECTORS: list[dict[str, Any]] = json.loads(VECTORS_FILE.read_text(encoding="utf-8"))


def _exact(data: Any) -> str:
    """The exact (slow) path alone, whatever the fast path would do."""
    out: list[str] = []
    canonical._exact(data, out)
    return "".join(out)


@pytest.mark.parametrize("vector", VECTORS, ids=[v["name"] for v in VECTORS])
def test_it_gives_every_vectors_canonical_text_and_digest(vector: dict[str, Any]) -> None:
    assert canonical_json(vector["input"]) == vector["canonical"]
    assert _exact(vector["input"]) == vector["canonical"]
    assert json_digest(vector["input"]) == vector["sha256"]
    assert text_digest(vector["canonical"]) == vector["sha256"]
    if vector["name"].startswith("worlds_digest"):
        assert worlds_digest(vector["input"]) == vector["sha256"]
    if vector["name"].startswith("bindings_digest"):
        assert bindings_digest(vector["input"]) == vector["sha256"]


def test_the_vectors_cover_what_every_client_must_agree_on() -> None:
    names = [v["name"] for v in VECTORS]
    assert len(names) == len(set(names))
    texts = {v["canonical"] for v in VECTORS}
    for must in ("120", "1e+21", "1e-7", "0.1", "9007199254740992", '"\\u001f"'[1:-1]):
        assert any(must in text for text in texts), must
    assert any(name.startswith("RFC 8785 example") for name in names)
    assert sum(name.startswith("worlds_digest") for name in names) >= 2
    # Every input is JSON that JavaScript's JSON.parse reads as the same value: a float
    # written as Python writes it reads back as the same double.
    for vector in VECTORS:
        assert json.loads(json.dumps(vector["input"])) == vector["input"]


@pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")
def test_javascript_computes_the_same_text_and_digest_for_every_vector() -> None:
    """An independent implementation: JSON.stringify writes JCS's numbers and strings, and
    JavaScript sorts keys by UTF-16 code units."""
    script = """
    const crypto = require("crypto"), fs = require("fs");
    const jcs = (v) => v === null || typeof v !== "object" ? JSON.stringify(v)
      : Array.isArray(v) ? "[" + v.map(jcs).join(",") + "]"
      : "{" + Object.keys(v).sort().map((k) => JSON.stringify(k) + ":" + jcs(v[k])).join(",") + "}";
    const out = JSON.parse(fs.readFileSync(process.argv[1], "utf8")).map((e) => {
      const text = jcs(e.input);
      return [e.name, text, crypto.createHash("sha256").update(text, "utf8").digest("hex")];
    });
    process.stdout.write(JSON.stringify(out));
    """
    done = subprocess.run(
        ["node", "-e", script, str(VECTORS_FILE)], capture_output=True, check=True, timeout=60
    )
    computed = json.loads(done.stdout)
    assert [(v["name"], v["canonical"], v["sha256"]) for v in VECTORS] == [
        tuple(row) for row in computed
    ]


NUMBERS = [
    0,
    -0.0,
    0.0,
    7,
    -7,
    120.0,
    120.5,
    1e-4,
    9.99e-5,
    1e-7,
    1e15 + 0.5,
    9999999999999998.0,
    1e16,
    1e21,
    2**53,
    -(2**53),
    2**53 + 1,
    -(2**53) - 1,
    2**70,
    5e-324,
    1.7976931348623157e308,
]
STRINGS = ["", "plain", "Zoë €", "\U0001f600", "\x00\x1f\x7f\u2028", "\ufb33"]
KEYS = ["", "a", "A", "é", "\ufb33", "\U0001f602"]


@pytest.mark.parametrize(
    ("number", "string", "key"),
    list(itertools.product(NUMBERS, STRINGS, KEYS)),
)
def test_the_fast_path_writes_exactly_what_the_exact_path_does(
    number: Any, string: str, key: str
) -> None:
    data = {key: [number, {"s": string, key: number}], "z": string, "n": None, "b": True}
    assert canonical_json(data) == _exact(data)
    assert canonical_json([data, (number, string)]) == _exact([data, [number, string]])


def test_the_fast_path_agrees_on_random_documents() -> None:
    rng = random.Random(8785)
    scalars: list[Any] = [*NUMBERS, *STRINGS, None, True, False, 1.5, -2.25]

    def document(depth: int) -> Any:
        roll = rng.random()
        if depth > 3 or roll < 0.4:
            return rng.choice(scalars)
        if roll < 0.7:
            return [document(depth + 1) for _ in range(rng.randint(0, 4))]
        return {rng.choice(KEYS): document(depth + 1) for _ in range(rng.randint(0, 4))}

    for _ in range(3000):
        data = document(0)
        assert canonical_json(data) == _exact(data)


def test_numbers_are_written_as_ecmascript_writes_them() -> None:
    assert [number_text(x) for x in (120.0, 1e21, 1e-7, -0.0, 0.1, 1e20, 1e-6)] == [
        "120",
        "1e+21",
        "1e-7",
        "0",
        "0.1",
        "100000000000000000000",
        "0.000001",
    ]
    assert canonical_json({"amount": 120.0}) == canonical_json({"amount": 120})


@pytest.mark.parametrize(
    "data",
    [
        math.nan,
        math.inf,
        -math.inf,
        [math.nan],
        {"a": math.inf},
        [1e-7, {"b": -math.inf}],  # beside a value only the exact path writes
        10**400,
        [10**400],
    ],
    ids=repr,
)
def test_nan_infinity_and_numbers_beyond_a_double_are_refused(data: Any) -> None:
    with pytest.raises(ValueError):
        canonical_json(data)


@pytest.mark.parametrize(
    "data",
    [{1: "a"}, [{"a": 1, 2: "b"}], {None: 1}, {"a": {1.5: 2}}, {"a": object()}, [b"bytes"], {1, 2}],
    # Without its address, an object's repr is the same in every test process (pytest-xdist
    # refuses to start when two processes collect different test ids).
    ids=lambda data: re.sub(r" at 0x[0-9a-f]+", "", repr(data)),
)
def test_non_json_data_and_keys_that_are_not_strings_are_refused(data: Any) -> None:
    with pytest.raises(TypeError):
        canonical_json(data)


def test_str_enums_are_their_values_and_tuples_are_arrays() -> None:
    from beliefs.domain.policy import Route

    data = {"route": Route.CONFIRM, "pair": ("a", 1.0)}
    assert canonical_json(data) == '{"pair":["a",1],"route":"CONFIRM"}'
    assert canonical_json([data, 1e-7]) == '[{"pair":["a",1],"route":"CONFIRM"},1e-7]'


def test_worlds_digest_tells_equal_values_in_other_worlds_apart() -> None:
    bindings = {"iban": "NL91ABNA0417164300", "amount": 120}
    here = {"iban": {"account": "acc_42"}, "amount": None}
    there = {"iban": {"account": "acc_43"}, "amount": None}
    assert bindings_digest(bindings) == bindings_digest(dict(bindings))
    assert worlds_digest(here) != worlds_digest(there)
    assert worlds_digest(here) == hashlib.sha256(canonical_json(here).encode()).hexdigest()
    assert worlds_digest({"amount": None}) != worlds_digest({})  # a null reference counts


def test_the_legacy_form_is_pythons_json_dumps_for_receipts_issued_before() -> None:
    bindings = {"amount": 120.0, "iban": "NL91", "note": "Zoë"}
    legacy = json.dumps(bindings, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    assert (
        legacy_canonical_json(bindings) == legacy == '{"amount":120.0,"iban":"NL91","note":"Zoë"}'
    )
    assert legacy_bindings_digest(bindings) == hashlib.sha256(legacy.encode()).hexdigest()
    assert legacy_bindings_digest(bindings) != bindings_digest(bindings)
    # Without floats, large integers or astral keys the two forms are the same text.
    same = {"iban": "NL91", "amount": 120, "note": "Zoë"}
    assert legacy_bindings_digest(same) == bindings_digest(same)
    assert CANONICALIZATION == "RFC8785"
