"""Webhook and email fixtures: loopback receivers allowed and fast retries for every test here."""

from tests.support.api import api, transfer  # noqa: F401 - fixtures
from tests.support.outbound import (  # noqa: F401 - fixtures
    _fast_private_webhooks,
    alice_with_email,
    endpoint,
    rt,
)
