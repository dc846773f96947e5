"""Canonical JSON and the digests over it: pure, shared by the server and its tests.

The canonical form is RFC 8785, the JSON Canonicalization Scheme (JCS), so that any language
computes the same digest of the same JSON value: object keys sorted by their UTF-16 code units,
no whitespace, numbers written as ECMAScript writes the IEEE double (`120.0` is `120`, `1e21`
is `1e+21`, `1e-7` is `1e-7`), strings escaped only where JSON must (`"`, `\\`, and the
control characters U+0000 to U+001F), everything else as itself, hashed as UTF-8.

Receipts issued before the switch digested Python's own form (`json.dumps` with sorted keys,
no spaces, non-ASCII as itself); `legacy_canonical_json` keeps it so that they still verify.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Callable, Mapping
from typing import Any, Final

# The `canonicalization` claim of a receipt whose digests are over this form.
CANONICALIZATION: Final = "RFC8785"

# Integers in this range are doubles exactly, and JCS writes them as their digits.
_EXACT_INT: Final = 2**53

# One encoder for every call: `json.dumps` with options builds a new one each time. For data
# without floats, large integers or keys whose UTF-16 order differs from their code point order,
# its output is exactly JCS (its escaping is JCS's, `encode_basestring`).
_FAST = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
_LEGACY = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False)
_string: Callable[[str], str] = json.encoder.encode_basestring


def _fast_encoder() -> Callable[[Any], str]:
    """`_FAST.encode` of a dict or list, calling the C encoder `encode` builds on every call
    directly (made once): planning encodes a few hundred small values a request. Without the
    circular check (`_scan` has walked the data first, and a cycle never reaches here)."""
    make = getattr(json.encoder, "c_make_encoder", None)  # not in the type stubs
    if make is None:  # an interpreter without the C accelerator
        return _FAST.encode
    chunks = make(None, _FAST.default, _string, None, ":", ",", True, False, False)
    return lambda data: "".join(chunks(data, 0))


_encode = _fast_encoder()


def canonical_json(data: Any) -> str:
    """The RFC 8785 (JCS) text of `data` (dicts with str keys, lists or tuples, str, int,
    float, bool, None). Raises ValueError for NaN, infinities and integers beyond a double's
    range, TypeError for anything else (a non-str key included)."""
    kind = type(data)
    found = _scan(data) if kind is dict or kind is list or kind is tuple else _SLOW
    if found != _SLOW:
        text = _encode(data if found == _AS_IT_IS else _replaced(data))
        # Sorting by code point and by UTF-16 code unit differ only around characters above
        # U+FFFF; where the text has one (rare), the exact path sorts the keys.
        if not _astral(text):
            return text
    out: list[str] = []
    _exact(data, out)
    return "".join(out)


def legacy_canonical_json(data: Any) -> str:
    """The form digests had before RFC 8785: `json.dumps(data, sort_keys=True,
    separators=(",", ":"), ensure_ascii=False)` (kept to verify receipts issued then)."""
    return _LEGACY.encode(data)


def json_digest(data: Any) -> str:
    """SHA-256 (hex) of the canonical JSON of `data`, as UTF-8."""
    return text_digest(canonical_json(data))


def text_digest(text: str) -> str:
    """SHA-256 of a text's UTF-8, in hex: `json_digest` of data whose canonical JSON it is."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def bindings_digest(bindings: Mapping[str, Any]) -> str:
    """SHA-256 (hex) of the canonical JSON of the bindings `{slot: value}`."""
    return json_digest(bindings)


def worlds_digest(worlds: Mapping[str, Any]) -> str:
    """SHA-256 (hex) of the canonical JSON of `{slot: world_ref}` (a slot without a world
    reference is there with null)."""
    return json_digest(worlds)


def legacy_bindings_digest(bindings: Mapping[str, Any]) -> str:
    """`bindings_digest` as receipts without a `canonicalization` claim computed it."""
    return text_digest(legacy_canonical_json(bindings))


def number_text(value: float) -> str:
    """ECMAScript's Number.prototype.toString of a finite double, as JCS writes numbers.

    Python's `repr` already gives the shortest digits that read back as the same double (the
    ones ECMAScript picks, ties to even); only where the decimal point goes differs."""
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


def _int_text(value: int) -> str:
    if -_EXACT_INT <= value <= _EXACT_INT:
        return int.__repr__(value)
    try:
        return number_text(float(value))  # the double it rounds to, as JavaScript reads it
    except OverflowError:
        raise ValueError(f"{value} is out of a JSON number's range") from None


def _utf16_order(key: str) -> bytes:
    return key.encode("utf-16-be", "surrogatepass")


# What `_scan` finds: data the C encoder writes as JCS as it is; data it does once some floats
# are replaced (`_replaced`); data only the exact path writes.
_AS_IT_IS: Final = 0
_REPLACE: Final = 1
_SLOW: Final = 2
# The types `_scan` passes without a look: JSON's scalars but numbers, and each str subclass it
# has met (a str enum is its value, to the C encoder too), added on first sight.
_PLAIN: set[type] = {str, type(None), bool}


def _scan(node: Any) -> int:
    """Can the C encoder write `node` (a dict, list or tuple) as JCS, and does it need floats
    replaced first? `_SLOW` for a float that `repr` writes otherwise than ECMAScript and no
    int can stand for, an integer beyond 2**53, a key that is not a str, or a type that is not
    JSON's. (Keys whose UTF-16 order differs from their code point order are found in the text:
    see `canonical_json`.) Scalars are checked in the loop, without a call each: this walk is on
    planning's hot path, and costs a fraction of the encoding it saves."""
    found = _AS_IT_IS
    if type(node) is dict:
        for key in node:
            if type(key) is not str:
                return _SLOW
        values: Any = node.values()
    else:
        values = node
    for value in values:
        kind = type(value)
        if kind in _PLAIN:
            continue
        if kind is int:
            if -_EXACT_INT <= value <= _EXACT_INT:
                continue
            return _SLOW
        if kind is dict or kind is list or kind is tuple:
            inner = _scan(value)
            if inner == _SLOW:
                return _SLOW
            found |= inner
        elif kind is float:
            magnitude = abs(value)
            # Where `repr` writes it without an exponent (1e-4 <= |x| < 1e16), it writes what
            # ECMAScript does, but for a whole number's ".0"; a whole number below 1e16 is an
            # int exactly (below 2**54 every whole double is its own shortest form).
            if 1e-4 <= magnitude < 1e16:
                if value.is_integer():
                    found = _REPLACE
            elif magnitude == 0:
                found = _REPLACE  # -0.0 too
            else:
                return _SLOW
        elif issubclass(kind, str):
            _PLAIN.add(kind)
        else:
            return _SLOW
    return found


def _replaced(node: Any) -> Any:
    """`node` (a dict, list or tuple `_scan` found could be so) with each whole-number float an
    int; only the containers on the way to one are copied, shallowly."""
    pairs: Any = node.items() if type(node) is dict else enumerate(node)
    copy: Any = None
    for key, value in pairs:
        kind = type(value)
        if kind is float:
            new = int(value) if value.is_integer() else value
        elif kind is dict or kind is list or kind is tuple:
            new = _replaced(value)
        else:
            continue
        if new is not value:
            if copy is None:
                copy = dict(node) if type(node) is dict else list(node)
            copy[key] = new
    return node if copy is None else copy


def _astral(text: str) -> bool:
    """Does the text hold a character above U+FFFF (two UTF-16 code units)?"""
    return not text.isascii() and len(text.encode("utf-16-le", "surrogatepass")) != 2 * len(text)


def _exact(node: Any, out: list[str]) -> None:
    """Append the JCS text of `node` to `out`."""
    if isinstance(node, str):
        out.append(_string(node))
    elif node is None:
        out.append("null")
    elif node is True:
        out.append("true")
    elif node is False:
        out.append("false")
    elif isinstance(node, int):
        out.append(_int_text(node))
    elif isinstance(node, float):
        out.append(number_text(node))
    elif isinstance(node, Mapping):
        for key in node:
            if not isinstance(key, str):
                raise TypeError(f"JSON object keys must be str, not {type(key).__name__}")
        separator = "{"
        for key in sorted(node, key=_utf16_order):
            out.append(separator + _string(key) + ":")
            _exact(node[key], out)
            separator = ","
        out.append("}" if separator == "," else "{}")
    elif isinstance(node, list | tuple):
        separator = "["
        for value in node:
            out.append(separator)
            _exact(value, out)
            separator = ","
        out.append("]" if separator == "," else "[]")
    else:
        raise TypeError(f"{type(node).__name__} is not JSON data")
