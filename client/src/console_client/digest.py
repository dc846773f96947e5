"""The digests the console signs, computed exactly as the console does.

Digests are SHA-256 of the RFC 8785 form (the JSON Canonicalization Scheme, JCS) of the data,
as UTF-8, so that any language computes the same one: object keys sorted by their UTF-16 code
units, no whitespace, numbers written as ECMAScript writes the IEEE double (`120.0` is `120`,
`1e21` is `1e+21`, `1e-7` is `1e-7`), strings escaped only where JSON must (`"`, `\\`, and the
control characters U+0000 to U+001F), everything else as itself. The repository's
tests/vectors/canonical.json holds the cases every implementation must agree on.

Receipts name their form in a `canonicalization` claim ("RFC8785"); receipts issued before it
existed have none and digested Python's `json.dumps(data, sort_keys=True, separators=(",",
":"), ensure_ascii=False)`: pass `canonicalization=None` to compute that legacy form.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import math
from collections.abc import Callable, Mapping
from typing import Any, Final

from console_client.errors import DigestMismatch

# The `canonicalization` claim of receipts whose digests are over RFC 8785.
CANONICALIZATION: Final = "RFC8785"

_EXACT_INT: Final = 2**53
_string: Callable[[str], str] = json.encoder.encode_basestring


def canonical_json(data: Any) -> str:
    """The RFC 8785 (JCS) text of `data` (dicts with str keys, lists or tuples, str, int,
    float, bool, None). Raises ValueError for NaN, infinities and integers beyond a double's
    range, TypeError for anything else (a key that is not a str included)."""
    out: list[str] = []
    _write(data, out)
    return "".join(out)


def legacy_canonical_json(data: Any) -> str:
    """The form of receipts without a `canonicalization` claim (issued before RFC 8785)."""
    return json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def canonical_form(canonicalization: str | None = CANONICALIZATION) -> Callable[[Any], str]:
    """The canonical JSON function a `canonicalization` claim names: "RFC8785", or None (no
    claim) for the legacy form. Raises ValueError for any other."""
    if canonicalization == CANONICALIZATION:
        return canonical_json
    if canonicalization is None:
        return legacy_canonical_json
    raise ValueError(f"unknown canonicalization {canonicalization!r} (this client knows RFC8785)")


def bindings_digest(
    bindings: Mapping[str, Any], canonicalization: str | None = CANONICALIZATION
) -> str:
    """SHA-256 (hex) of the canonical JSON of the bindings `{slot: value}`."""
    return _digest(canonical_form(canonicalization)(bindings))


def worlds_digest(
    worlds: Mapping[str, Any], canonicalization: str | None = CANONICALIZATION
) -> str:
    """SHA-256 (hex) of the canonical JSON of `{slot: world_ref}` over the bound irreversible
    slots, a slot without a world reference there with null (a receipt's `worlds_digest`)."""
    return _digest(canonical_form(canonicalization)(worlds))


def verify_bindings(bindings: Mapping[str, Any], digest: str | None) -> dict[str, Any]:
    """Return the bindings if they hash to `digest`; raise `DigestMismatch` otherwise.

    The digest may be in either form: an instance that became ready before the console moved
    to RFC 8785 keeps its legacy digest (equal texts are equal JSON values, so accepting both
    forms accepts no other bindings)."""
    if not digest:
        raise DigestMismatch("no digest to check the bindings against")
    actual = bindings_digest(bindings)
    if hmac.compare_digest(actual, digest):
        return dict(bindings)
    if hmac.compare_digest(bindings_digest(bindings, None), digest):
        return dict(bindings)
    raise DigestMismatch(f"bindings hash to {actual}, the console sent {digest}")


def number_text(value: float) -> str:
    """ECMAScript's Number.prototype.toString of a finite double, as JCS writes numbers.
    Python's `repr` gives the same shortest digits; only where the point goes differs."""
    if not math.isfinite(value):
        raise ValueError(f"{value!r} is not a JSON number (RFC 8785 refuses NaN and infinity)")
    if value == 0:
        return "0"  # -0.0 too
    text = float.__repr__(value)
    sign = ""
    if text[0] == "-":
        sign, text = "-", text[1:]
    mantissa, _, exponent = text.partition("e")
    whole, _, fraction = mantissa.partition(".")
    digits = (whole + fraction).lstrip("0")
    # value = 0.<digits> × 10**point
    point = len(whole) + int(exponent or 0) - (len(whole + fraction) - len(digits))
    digits = digits.rstrip("0")
    count = len(digits)
    if count <= point <= 21:
        return sign + digits + "0" * (point - count)
    if 0 < point <= 21:
        return sign + digits[:point] + "." + digits[point:]
    if -6 < point <= 0:
        return sign + "0." + "0" * -point + digits
    power = point - 1
    exp = f"e{'+' if power > 0 else '-'}{abs(power)}"
    if count == 1:
        return sign + digits + exp
    return sign + digits[0] + "." + digits[1:] + exp


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _utf16_order(key: str) -> bytes:
    return key.encode("utf-16-be", "surrogatepass")


def _write(node: Any, out: list[str]) -> None:
    if isinstance(node, str):
        out.append(_string(node))
    elif node is None:
        out.append("null")
    elif node is True:
        out.append("true")
    elif node is False:
        out.append("false")
    elif isinstance(node, int):
        if -_EXACT_INT <= node <= _EXACT_INT:
            out.append(int.__repr__(node))
        else:
            try:
                out.append(number_text(float(node)))  # the double it rounds to, as in JS
            except OverflowError:
                raise ValueError(f"{node} is out of a JSON number's range") from None
    elif isinstance(node, float):
        out.append(number_text(node))
    elif isinstance(node, Mapping):
        for key in node:
            if not isinstance(key, str):
                raise TypeError(f"JSON object keys must be str, not {type(key).__name__}")
        separator = "{"
        for key in sorted(node, key=_utf16_order):
            out.append(separator + _string(key) + ":")
            _write(node[key], out)
            separator = ","
        out.append("}" if separator == "," else "{}")
    elif isinstance(node, list | tuple):
        separator = "["
        for value in node:
            out.append(separator)
            _write(value, out)
            separator = ","
        out.append("]" if separator == "," else "[]")
    else:
        raise TypeError(f"{type(node).__name__} is not JSON data")
