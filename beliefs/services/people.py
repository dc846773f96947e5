"""A person's own settings."""

from __future__ import annotations

from django.contrib.auth.models import User
from django.db import transaction

from beliefs.domain.vocabulary import AuditKind
from beliefs.errors import field_error
from beliefs.models import PersonSettings
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
