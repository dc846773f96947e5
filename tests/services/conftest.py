"""The services tests' fixtures: the API driver and a transfer, for tests that set the scene as
a runtime and its person do, over HTTP."""

from tests.support.api import api, transfer  # noqa: F401 - fixtures
