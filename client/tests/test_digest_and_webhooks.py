"""Bindings digests as the console computes them; Standard Webhooks signatures."""

from __future__ import annotations

import base64
import hashlib
import json
import math
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from console_client import (
    DigestMismatch,
    WebhookVerificationError,
    bindings_digest,
    canonical_json,
    verify_bindings,
    verify_webhook,
    worlds_digest,
)
from console_client.digest import canonical_form, legacy_canonical_json
from standardwebhooks.webhooks import Webhook

SECRET = "whsec_" + base64.b64encode(b"a-secret-of-the-endpoint-32bytes").decode()
OTHER_SECRET = "whsec_" + base64.b64encode(b"another-endpoints-secret-32bytes").decode()


# The repository's test vectors, shared with the console's suite and any other client's.
VECTORS_FILE = Path(__file__).resolve().parents[2] / "tests" / "vectors" / "canonical.json"
VECTORS: list[dict[str, Any]] = json.loads(VECTORS_FILE.read_text(encoding="utf-8"))


@pytest.mark.parametrize("vector", VECTORS, ids=[v["name"] for v in VECTORS])
def test_the_client_computes_every_vector_as_the_console_does(vector: dict[str, Any]) -> None:
    assert canonical_json(vector["input"]) == vector["canonical"]
    digest = hashlib.sha256(vector["canonical"].encode("utf-8")).hexdigest()
    assert digest == vector["sha256"]
    if isinstance(vector["input"], dict):
        assert bindings_digest(vector["input"]) == vector["sha256"]
        assert worlds_digest(vector["input"]) == vector["sha256"]


def test_there_are_vectors_of_every_kind() -> None:
    names = " ".join(v["name"] for v in VECTORS)
    for kind in ("integer", "float", "string", "keys", "nested", "RFC 8785", "worlds_digest"):
        assert kind in names


def test_the_digest_is_sha256_of_the_rfc_8785_form() -> None:
    bindings = {"b": [1, 2.0, 1e-7], "a": "Zürich", "c": {"y": None, "x": True}}
    canonical = '{"a":"Zürich","b":[1,2,1e-7],"c":{"x":true,"y":null}}'
    assert canonical_json(bindings) == canonical
    assert bindings_digest(bindings) == hashlib.sha256(canonical.encode("utf-8")).hexdigest()
    legacy = '{"a":"Zürich","b":[1,2.0,1e-07],"c":{"x":true,"y":null}}'
    assert legacy_canonical_json(bindings) == legacy
    assert bindings_digest(bindings, None) == hashlib.sha256(legacy.encode("utf-8")).hexdigest()


@pytest.mark.parametrize("data", [math.nan, {"a": math.inf}, [10**400]], ids=repr)
def test_numbers_json_cannot_carry_are_refused(data: Any) -> None:
    with pytest.raises(ValueError):
        canonical_json(data)


def test_keys_must_be_strings_and_forms_must_be_known() -> None:
    with pytest.raises(TypeError):
        canonical_json({1: "a"})
    with pytest.raises(ValueError, match="RFC8785"):
        canonical_form("JCS-v2")
    with pytest.raises(ValueError):
        bindings_digest({"a": 1}, "JCS-v2")


def test_verify_bindings_returns_matching_bindings_and_refuses_others() -> None:
    bindings = {"iban": "NL91", "amount": 10.5, "fee": 1.0}
    digest = bindings_digest(bindings)
    assert verify_bindings(bindings, digest) == bindings
    # An instance made ready before RFC 8785 keeps its digest in the legacy form.
    assert verify_bindings(bindings, bindings_digest(bindings, None)) == bindings
    for other in ({**bindings, "amount": 11}, {**bindings, "fee": "1"}):
        with pytest.raises(DigestMismatch):
            verify_bindings(other, digest)
        with pytest.raises(DigestMismatch):
            verify_bindings(other, bindings_digest(bindings, None))
    with pytest.raises(DigestMismatch):
        verify_bindings(bindings, None)


def _signed(body: bytes, secret: str = SECRET, when: datetime | None = None) -> dict[str, str]:
    when = when or datetime.now(tz=UTC)
    signature = Webhook(secret).sign("msg_1", when, body.decode())
    return {
        "webhook-id": "msg_1",
        "webhook-timestamp": str(int(when.timestamp())),
        "webhook-signature": signature,
    }


EVENT = {
    "type": "instance.ready",
    "timestamp": "2026-01-02T03:04:05+00:00",
    "data": {"instance": "abc", "status": "ready", "bindings": {"iban": "NL91"}},
}


def test_a_good_signature_yields_the_typed_event() -> None:
    body = json.dumps(EVENT).encode()
    event = verify_webhook(body, _signed(body), SECRET)
    assert event.id == "msg_1"
    assert event.type == "instance.ready"
    assert event.timestamp == datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
    assert event.data == EVENT["data"]


def test_headers_are_case_insensitive_and_a_str_body_works() -> None:
    body = json.dumps(EVENT)
    headers = {k.title(): v for k, v in _signed(body.encode()).items()}
    assert verify_webhook(body, headers, SECRET).type == "instance.ready"


def test_any_one_of_several_signatures_may_match() -> None:
    body = json.dumps(EVENT).encode()
    headers = _signed(body)
    headers["webhook-signature"] = "v1,bm90LWl0 " + headers["webhook-signature"]
    assert verify_webhook(body, headers, SECRET).type == "instance.ready"


def test_a_tampered_body_is_refused() -> None:
    body = json.dumps(EVENT).encode()
    headers = _signed(body)
    tampered = body.replace(b"NL91", b"EVIL")
    with pytest.raises(WebhookVerificationError, match="no signature matches"):
        verify_webhook(tampered, headers, SECRET)


def test_a_tampered_id_is_refused() -> None:
    body = json.dumps(EVENT).encode()
    headers = _signed(body) | {"webhook-id": "msg_2"}
    with pytest.raises(WebhookVerificationError):
        verify_webhook(body, headers, SECRET)


def test_the_wrong_secret_is_refused() -> None:
    body = json.dumps(EVENT).encode()
    with pytest.raises(WebhookVerificationError, match="no signature matches"):
        verify_webhook(body, _signed(body, OTHER_SECRET), SECRET)


@pytest.mark.parametrize("offset", [-301, 301])
def test_a_stale_or_future_timestamp_is_refused(offset: int) -> None:
    body = json.dumps(EVENT).encode()
    when = datetime.fromtimestamp(time.time() + offset, tz=UTC)
    with pytest.raises(WebhookVerificationError, match="from now"):
        verify_webhook(body, _signed(body, when=when), SECRET)


def test_a_timestamp_inside_the_tolerance_passes() -> None:
    body = json.dumps(EVENT).encode()
    when = datetime.fromtimestamp(time.time() - 240, tz=UTC)
    assert verify_webhook(body, _signed(body, when=when), SECRET).type == "instance.ready"


@pytest.mark.parametrize("missing", ["webhook-id", "webhook-timestamp", "webhook-signature"])
def test_a_missing_header_is_refused(missing: str) -> None:
    body = json.dumps(EVENT).encode()
    headers = _signed(body)
    del headers[missing]
    with pytest.raises(WebhookVerificationError, match=f"missing header {missing}"):
        verify_webhook(body, headers, SECRET)


def test_a_signed_body_that_is_not_an_event_is_refused() -> None:
    body = b'["not", "an", "event"]'
    with pytest.raises(WebhookVerificationError, match="not a"):
        verify_webhook(body, _signed(body), SECRET)
