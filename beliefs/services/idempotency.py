"""Opening an instance with an `Idempotency-Key`: a runtime's retried open finds its instance.

The key is stored on the instance with the SHA-256 of the canonical request body; a unique
constraint on (runtime, idempotency_key) is the rule, so two racing repeats cannot both
create. A repeat with the same body returns the first instance (a replay); the same key with a
different body is refused, since it names a different open.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from django.db import IntegrityError, transaction

from beliefs.domain.canonical import canonical_json, legacy_canonical_json
from beliefs.domain.vocabulary import MAX_IDEMPOTENCY_KEY_LENGTH
from beliefs.errors import Conflict, InvalidInput
from beliefs.models import TaskInstance
from beliefs.services.audit import Actor

HEADER = "Idempotency-Key"


@dataclass(frozen=True)
class Opened:
    instance: TaskInstance
    replayed: bool  # True when an earlier open with this key and body was returned


def body_hash(data: Mapping[str, Any]) -> str:
    return hashlib.sha256(canonical_json(data).encode("utf-8")).hexdigest()


def _same_body(stored: str, digest: str, body: Mapping[str, Any]) -> bool:
    """Is `body` (hashing to `digest`) the one whose hash was stored? A key stored before
    hashes moved to RFC 8785 holds the hash of Python's JSON form: a retry across the upgrade
    is still the same body."""
    if stored == digest:
        return True
    legacy = hashlib.sha256(legacy_canonical_json(body).encode("utf-8")).hexdigest()
    return stored == legacy


def check_key(key: str | None) -> str | None:
    """The header's value, or None when absent; refuses an empty or over-long key."""
    if key is None:
        return None
    if not key.strip():
        raise InvalidInput(f"{HEADER}: must not be empty", fields={HEADER: ["must not be empty"]})
    if len(key) > MAX_IDEMPOTENCY_KEY_LENGTH:
        message = f"at most {MAX_IDEMPOTENCY_KEY_LENGTH} characters"
        raise InvalidInput(f"{HEADER}: {message}", fields={HEADER: [message]})
    return key


def _earlier(actor: Actor, key: str) -> TaskInstance | None:
    return (
        TaskInstance.objects.select_related("task_class", "principal")
        .filter(runtime=actor.runtime, idempotency_key=key)
        .first()
    )


def _replay(instance: TaskInstance, digest: str, key: str, body: Mapping[str, Any]) -> Opened:
    if not _same_body(instance.idempotency_hash, digest, body):
        raise Conflict(
            f"{HEADER} {key!r} was already used to open instance {instance.pk} with a different "
            "body; send a new key for a new open.",
            code="idempotency_key_reused",
            fields={HEADER: ["already used with a different body"]},
        )
    return Opened(instance, replayed=True)


def instance_open_idempotent(
    *, body: Mapping[str, Any], open_: Callable[[], TaskInstance], key: str | None, actor: Actor
) -> Opened:
    """Open an instance (`open_`, from the validated body); with a key, at most once per runtime
    (any of its keys: a retry after a key rotation finds the same instance). `body` is the
    request as sent: its hash tells a retry from another open under the same key."""
    key = check_key(key)
    if key is None or actor.runtime is None:
        return Opened(open_(), replayed=False)
    digest = body_hash(body)
    earlier = _earlier(actor, key)
    if earlier is not None:
        return _replay(earlier, digest, key, body)
    try:
        with transaction.atomic():
            instance = open_()
            instance.idempotency_key = key
            instance.idempotency_hash = digest
            instance.save(update_fields=["idempotency_key", "idempotency_hash", "updated_at"])
    except IntegrityError:
        # A racing repeat committed first: its instance is the answer, this open is undone.
        earlier = _earlier(actor, key)
        if earlier is None:
            raise
        return _replay(earlier, digest, key, body)
    return Opened(instance, replayed=False)
