"""The API tests' fixtures: a driver of the API as a runtime and its person, and a transfer."""

from tests.support.api import api, instance_id, transfer  # noqa: F401 - fixtures
from tests.support.proposals import many, stored  # noqa: F401 - fixtures
