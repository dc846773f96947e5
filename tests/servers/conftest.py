"""Fixtures of the tests that start real server processes (see `tests.support.servers`)."""

from tests.support.api import api, instance_id, transfer  # noqa: F401 - fixtures
