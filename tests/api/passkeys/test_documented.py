"""An instance's signature, waiting and signed, is what the OpenAPI document says of it: every
key declared, every required one there (see tests/api/test_shapes.py)."""

from __future__ import annotations

import pytest
from django.test import Client

from tests.api.documented import assert_documented
from tests.support.api import API, Driver
from tests.support.authenticator import SoftAuthenticator
from tests.support.passkeys import confirm_recipient, open_transfer, register_passkey, sign

pytestmark = pytest.mark.usefixtures("signed_class")


def test_a_signature_waited_for_and_given_is_as_documented(
    api: Driver, alice_pages: Client, device: SoftAuthenticator
) -> None:
    instance_id = open_transfer(api)
    confirm_recipient(api, instance_id)
    url = f"{API}/instances/{instance_id}/"
    waiting = assert_documented(api.runtime.get(url))
    assert waiting["signature"] == {"required": True, "signed": False, "assertion": None}
    assert register_passkey(alice_pages, device).status_code == 201
    assert sign(alice_pages, instance_id, device).status_code == 200
    signed = assert_documented(api.runtime.get(url))
    assert signed["signature"]["assertion"]["worlds_digest"] == signed["worlds_digest"]
