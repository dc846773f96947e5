"""A person's own settings, and an export of what the console holds about them."""

from __future__ import annotations

import json
from typing import Any

from django.apps import apps
from django.contrib.auth.models import User
from django.core import serializers
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from beliefs.domain.vocabulary import AuditKind
from beliefs.errors import field_error
from beliefs.models import AuditEvent, PersonSettings, Prompt, Receipt, TaskInstance
from beliefs.services.audit import Actor, audit


@transaction.atomic
def person_email_notifications_set(*, user: User, enabled: object) -> PersonSettings:
    if not isinstance(enabled, bool):
        raise field_error("email_notifications", "must be true or false")
    settings, _ = PersonSettings.objects.select_for_update().get_or_create(user=user)
    if settings.email_notifications != enabled:
        settings.email_notifications = enabled
        settings.save(update_fields=["email_notifications"])
        audit(
            AuditKind.PERSON_EMAIL_NOTIFICATIONS_SET,
            actor=Actor(user=user),
            subject=user.get_username(),
            data={"enabled": enabled},
        )
    return settings


# What an export gives of the person's account: never the password's hash.
ACCOUNT_FIELDS = ("username", "first_name", "last_name", "email", "date_joined", "last_login")
# Bearer credentials stay out of an export (a receipt's token works for whoever holds it): the
# column, and its copies (an `instance.ready` webhook's payload carries it to the runtime).
WITHHELD_FIELDS = {"beliefs.receipt": {"token"}}
WITHHELD = "(withheld: a credential)"


def _withheld(value: Any, secrets: frozenset[str]) -> Any:
    """`value` (JSON data) with every string that is one of `secrets` replaced."""
    if isinstance(value, str):
        return WITHHELD if value in secrets else value
    if isinstance(value, list):
        return [_withheld(item, secrets) for item in value]
    if isinstance(value, dict):
        return {key: _withheld(item, secrets) for key, item in value.items()}
    return value


def _rows_of(user: User) -> dict[str, Q]:
    """For each model of this app, the rows about `user`: those that point at them (as
    principal, actor, approver, signer, recipient...), those of their instances, and those of
    their instances' prompts."""
    about: dict[str, Q] = {}
    for model in apps.get_app_config("beliefs").get_models():
        found = Q(pk__in=[])
        for field in model._meta.get_fields():
            if not (field.many_to_one or field.one_to_one) or not field.concrete:
                continue
            if field.related_model is User:
                found |= Q(**{field.name: user})
            elif field.related_model is TaskInstance:
                found |= Q(**{f"{field.name}__principal": user})
            elif field.related_model is Prompt:
                found |= Q(**{f"{field.name}__instance__principal": user})
        if model is AuditEvent:  # its instance is a plain column (the log outlives rows)
            mine = TaskInstance.objects.filter(principal=user).values("pk")
            found |= Q(instance_id__in=mine)
        if found != Q(pk__in=[]):
            about[model._meta.label_lower] = found
    return about


@transaction.atomic
def person_export(*, user: User, actor: Actor) -> dict[str, Any]:
    """Everything the console holds about one person, as JSON: their account and, per table,
    every row about them (Django's serialization: model, pk, fields). Audited."""
    export: dict[str, Any] = {
        "person": {name: getattr(user, name) for name in ACCOUNT_FIELDS},
        "roles": sorted(user.groups.values_list("name", flat=True)),
        "exported_at": timezone.now(),
        "tables": {},
    }
    tokens = Receipt.objects.filter(instance__principal=user).values_list("token", flat=True)
    secrets = frozenset(tokens)
    for label, about in sorted(_rows_of(user).items()):
        model = apps.get_model(label)
        rows = json.loads(serializers.serialize("json", model.objects.filter(about).distinct()))
        for row in rows:
            for name in WITHHELD_FIELDS.get(label, ()):
                row["fields"].pop(name, None)
        export["tables"][label] = _withheld(rows, secrets)
    audit(
        AuditKind.PERSON_EXPORTED,
        actor=actor,
        subject=user.get_username(),
        data={"rows": sum(len(rows) for rows in export["tables"].values())},
    )
    return export
