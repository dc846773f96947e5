"""Fetching an instance for whoever asks, with the permission check and lazy expiry.

An outsider gets 404, never 403: the existence of someone else's instance is not leaked. Reading
an instance settles its expiry first, so nobody ever sees a stale `awaiting_user`. Who may see
an instance is `selectors.access.Owner`'s rule.
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import User

from beliefs.errors import NotFound
from beliefs.models import RuntimeAPIKey, TaskInstance
from beliefs.selectors.access import Owner, owned_instance
from beliefs.services.expiry import instance_expire_if_due


def _fetch(instance_id: Any, owner: Owner) -> TaskInstance:
    instance = owned_instance(instance_id, owner)
    if instance is None:
        raise NotFound("No such instance.")
    instance_expire_if_due(instance=instance)
    return instance


def instance_for_principal(instance_id: Any, user: User) -> TaskInstance:
    """The instance if `user` is its principal; 404 for everyone else (existence not leaked)."""
    return _fetch(instance_id, Owner.of(principal_id=user.pk))


def instance_for_runtime(instance_id: Any, key: RuntimeAPIKey) -> TaskInstance:
    """The instance if the key's runtime opened it (through any of its keys); 404 otherwise."""
    return _fetch(instance_id, Owner.of(runtime_id=key.runtime_id))
