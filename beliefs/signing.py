"""The receipts' signing keys: loading them, signing a receipt, verifying one, the JWKS.

Receipts are compact JWS (RFC 7515) signed with Ed25519 (`alg: EdDSA`), each key named by its
RFC 7638 thumbprint (`kid`). The keys are PEM files named by `CONSOLE_RECEIPT_SIGNING_KEYS`
(comma-separated): the first signs, all are published at `/.well-known/jwks.json`, so a key is
rotated by putting a new one first and keeping the old one listed while its receipts are in
flight. In development (DEBUG on) with none configured, one is generated into the data
directory (`CONSOLE_DATA_DIR`), never into the repository.

Signing goes through joserfc; nothing here builds a signature by hand.
"""

from __future__ import annotations

import contextlib
import json
import os
import warnings
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core import checks
from django.core.exceptions import ImproperlyConfigured
from joserfc import jws
from joserfc.errors import JoseError
from joserfc.jwk import KeySet, OKPKey

ALGORITHM = "EdDSA"
TYPE = "approval-receipt+jwt"
DEVELOPMENT_KEY_NAME = "receipt-signing-key.pem"


class ReceiptTokenInvalid(ValueError):
    """The token is not a receipt this console signed (malformed, or a bad signature)."""


@dataclass(frozen=True)
class SigningKeys:
    keys: tuple[OKPKey, ...]  # the first signs

    @property
    def signer(self) -> OKPKey:
        return self.keys[0]


def new_key() -> OKPKey:
    return OKPKey.generate_key("Ed25519")


def key_pem(key: OKPKey) -> bytes:
    return key.as_pem(private=True)


def write_key(path: Path, key: OKPKey) -> None:
    """Write a private key readable by its owner only."""
    path.parent.mkdir(parents=True, exist_ok=True)
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(descriptor, "wb") as out:
        out.write(key_pem(key))


def _load(path: Path) -> OKPKey:
    try:
        key = OKPKey.import_key(path.read_bytes())
    except (OSError, ValueError, JoseError) as exc:
        message = f"CONSOLE_RECEIPT_SIGNING_KEYS: cannot read {path}: {exc}"
        raise ImproperlyConfigured(message) from None
    if not key.is_private or key.as_dict(private=False).get("crv") != "Ed25519":
        raise ImproperlyConfigured(f"CONSOLE_RECEIPT_SIGNING_KEYS: {path} is not an Ed25519 key")
    return key


def _development_key() -> Path:
    path = Path(settings.CONSOLE_DATA_DIR) / DEVELOPMENT_KEY_NAME
    if not path.exists():
        with contextlib.suppress(FileExistsError):  # another process made it first
            write_key(path, new_key())
    return path


@cache
def _keys_for(paths: tuple[str, ...], debug: bool) -> SigningKeys:
    if not paths:
        if not debug:
            raise ImproperlyConfigured(
                "CONSOLE_RECEIPT_SIGNING_KEYS must name the receipts' signing key(s) when DEBUG "
                "is off (python manage.py receipt_key makes one)"
            )
        paths = (str(_development_key()),)
    return SigningKeys(tuple(_load(Path(p)) for p in paths))


def signing_keys() -> SigningKeys:
    return _keys_for(tuple(settings.CONSOLE_RECEIPT_SIGNING_KEYS), settings.DEBUG)


def kid(key: OKPKey) -> str:
    return key.thumbprint()


def jwks() -> dict[str, Any]:
    """The public keys, as RFC 7517 JSON: what a tool server verifies receipts with."""
    return {
        "keys": [
            {**key.as_dict(private=False), "kid": kid(key), "alg": ALGORITHM, "use": "sig"}
            for key in signing_keys().keys
        ]
    }


def sign(claims: Mapping[str, Any]) -> str:
    key = signing_keys().signer
    header = {"alg": ALGORITHM, "kid": kid(key), "typ": TYPE}
    payload = json.dumps(claims, separators=(",", ":"), sort_keys=True).encode()
    with warnings.catch_warnings():
        # RFC 9864 names the curve in the algorithm ("Ed25519"); "EdDSA" is what every JOSE
        # library verifies today, so receipts keep it.
        warnings.simplefilter("ignore")
        return jws.serialize_compact(header, payload, key, algorithms=[ALGORITHM])


def verify(token: str) -> dict[str, Any]:
    """The claims of a receipt whose signature is one of the published keys'. Checks the
    signature only: the claims (expiry, audience, digest) are the caller's to judge."""
    keys = KeySet([*signing_keys().keys])
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            found = jws.deserialize_compact(token, keys, algorithms=[ALGORITHM])
        claims = json.loads(found.payload)
    except (JoseError, ValueError, TypeError) as exc:
        raise ReceiptTokenInvalid(str(exc) or type(exc).__name__) from None
    if found.headers().get("typ") != TYPE or not isinstance(claims, dict):
        raise ReceiptTokenInvalid("not an approval receipt")
    return claims


def check_signing_keys(**kwargs: Any) -> list[checks.CheckMessage]:
    """`check --deploy`: production signs receipts with keys it was given, and can read them."""
    if not settings.CONSOLE_RECEIPT_SIGNING_KEYS:
        return [
            checks.Error(
                "CONSOLE_RECEIPT_SIGNING_KEYS is not set: receipts would be signed with a "
                "development key from the data directory.",
                hint="python manage.py receipt_key /etc/console/receipt-1.pem, then "
                "CONSOLE_RECEIPT_SIGNING_KEYS=/etc/console/receipt-1.pem",
                id="beliefs.E101",
            )
        ]
    try:
        _keys_for(tuple(settings.CONSOLE_RECEIPT_SIGNING_KEYS), settings.DEBUG)
    except ImproperlyConfigured as exc:
        return [checks.Error(str(exc), id="beliefs.E102")]
    return []
