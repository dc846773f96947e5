"""A software WebAuthn authenticator for tests: an ES256 key, made-up authenticator data, the
browser's clientDataJSON. It produces exactly the JSON a browser's `credential.toJSON()` does,
so the server verifies it with py_webauthn as it verifies a real device's."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import struct
from dataclasses import dataclass, field
from typing import Any

import cbor2
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec

UP, UV, AT = 0x01, 0x04, 0x40


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def b64url_decode(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


@dataclass
class SoftAuthenticator:
    rp_id: str = "testserver"
    origin: str = "http://testserver"
    user_verified: bool = True
    key: ec.EllipticCurvePrivateKey = field(
        default_factory=lambda: ec.generate_private_key(ec.SECP256R1())
    )
    credential_id: bytes = field(default_factory=lambda: os.urandom(16))
    counter: int = 0
    user_handle: bytes = b""
    # What a browser adds to clientDataJSON in special cases (a cross-origin frame's
    # `crossOrigin: true` and `topOrigin`), or what a forger writes there.
    client_data_extra: dict[str, Any] = field(default_factory=dict)
    sends_user_handle: bool = True  # a non-discoverable credential's assertion gives none

    def _cose(self) -> bytes:
        numbers = self.key.public_key().public_numbers()
        return cbor2.dumps(
            {
                1: 2,
                3: -7,
                -1: 1,
                -2: numbers.x.to_bytes(32, "big"),
                -3: numbers.y.to_bytes(32, "big"),
            }
        )

    def _flags(self) -> int:
        return UP | (UV if self.user_verified else 0)

    def _client_data(self, kind: str, challenge: str) -> bytes:
        return json.dumps(
            {
                "type": kind,
                "challenge": challenge,
                "origin": self.origin,
                "crossOrigin": False,
                **self.client_data_extra,
            }
        ).encode()

    def create(self, options: dict[str, Any]) -> dict[str, Any]:
        """`navigator.credentials.create(options).toJSON()`."""
        self.user_handle = b64url_decode(options["user"]["id"])
        rp_hash = hashlib.sha256(self.rp_id.encode()).digest()
        auth_data = (
            rp_hash
            + bytes([self._flags() | AT])
            + struct.pack(">I", self.counter)
            + bytes(16)
            + struct.pack(">H", len(self.credential_id))
            + self.credential_id
            + self._cose()
        )
        attestation = cbor2.dumps({"fmt": "none", "attStmt": {}, "authData": auth_data})
        client_data = self._client_data("webauthn.create", options["challenge"])
        return {
            "id": b64url(self.credential_id),
            "rawId": b64url(self.credential_id),
            "type": "public-key",
            "response": {
                "clientDataJSON": b64url(client_data),
                "attestationObject": b64url(attestation),
                "transports": ["internal"],
            },
            "clientExtensionResults": {},
            "authenticatorAttachment": "platform",
        }

    def get(self, options: dict[str, Any]) -> dict[str, Any]:
        """`navigator.credentials.get(options).toJSON()`."""
        self.counter += 1
        rp_hash = hashlib.sha256(self.rp_id.encode()).digest()
        auth_data = rp_hash + bytes([self._flags()]) + struct.pack(">I", self.counter)
        client_data = self._client_data("webauthn.get", options["challenge"])
        signed = auth_data + hashlib.sha256(client_data).digest()
        signature = self.key.sign(signed, ec.ECDSA(hashes.SHA256()))
        handle = {"userHandle": b64url(self.user_handle)} if self.sends_user_handle else {}
        return {
            "id": b64url(self.credential_id),
            "rawId": b64url(self.credential_id),
            "type": "public-key",
            "response": {
                "clientDataJSON": b64url(client_data),
                "authenticatorData": b64url(auth_data),
                "signature": b64url(signature),
                **handle,
            },
            "clientExtensionResults": {},
            "authenticatorAttachment": "platform",
        }
