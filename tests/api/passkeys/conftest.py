"""Passkey fixtures: a class whose transfer needs a signature, a soft authenticator."""

from tests.support.passkeys import alice_pages, api, device, signed_class  # noqa: F401 - fixtures
