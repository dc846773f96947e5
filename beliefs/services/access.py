"""Fetching an instance for whoever asks, with the permission check and lazy expiry.

An outsider gets 404, never 403: the existence of someone else's instance is not leaked. Reading
an instance settles its expiry first, so nobody ever sees a stale `awaiting_user`.
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import User
from django.db.models import QuerySet

from beliefs.errors import NotFound
from beliefs.models import RuntimeAPIKey, TaskInstance
from beliefs.services.expiry import instance_expire_if_due


def _instances() -> QuerySet[TaskInstance]:
    return TaskInstance.objects.select_related("task_class", "principal")


def _fetch(**lookup: Any) -> TaskInstance:
    instance = _instances().filter(**lookup).first()
    if instance is None:
        raise NotFound("No such instance.")
    instance_expire_if_due(instance=instance)
    return instance


def instance_for_principal(instance_id: Any, user: User) -> TaskInstance:
    """The instance if `user` is its principal; 404 for everyone else (existence not leaked)."""
    return _fetch(pk=instance_id, principal=user)


def instance_for_runtime(instance_id: Any, key: RuntimeAPIKey) -> TaskInstance:
    """The instance if the key's runtime opened it (through any of its keys); 404 otherwise."""
    return _fetch(pk=instance_id, runtime_id=key.runtime_id)
