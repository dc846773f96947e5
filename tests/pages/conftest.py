"""The page tests' fixtures: signed-in clients, a vendor instance, stored proposals."""

from tests.support.api import api, instance_id, transfer  # noqa: F401 - fixtures
from tests.support.pages import alice_client, mallory_client, vendor  # noqa: F401 - fixtures
from tests.support.proposals import many, stored  # noqa: F401 - fixtures
