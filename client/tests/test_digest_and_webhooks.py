"""Bindings digests as the console computes them; Standard Webhooks signatures."""

from __future__ import annotations

import base64
import hashlib
import json
import time
from datetime import UTC, datetime

import pytest
from console_client import (
    DigestMismatch,
    WebhookVerificationError,
    bindings_digest,
    canonical_json,
    verify_bindings,
    verify_webhook,
)
from standardwebhooks.webhooks import Webhook

SECRET = "whsec_" + base64.b64encode(b"a-secret-of-the-endpoint-32bytes").decode()
OTHER_SECRET = "whsec_" + base64.b64encode(b"another-endpoints-secret-32bytes").decode()


def test_the_digest_is_sha256_of_sorted_compact_utf8_json() -> None:
    bindings = {"b": [1, 2], "a": "Zürich", "c": {"y": None, "x": True}}
    canonical = '{"a":"Zürich","b":[1,2],"c":{"x":true,"y":null}}'
    assert canonical_json(bindings) == canonical
    assert bindings_digest(bindings) == hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def test_verify_bindings_returns_matching_bindings_and_refuses_others() -> None:
    bindings = {"iban": "NL91", "amount": 10}
    digest = bindings_digest(bindings)
    assert verify_bindings(bindings, digest) == bindings
    with pytest.raises(DigestMismatch):
        verify_bindings({**bindings, "amount": 11}, digest)
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
