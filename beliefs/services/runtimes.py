"""Runtimes and their keys, and who owns a task class."""

from __future__ import annotations

from django.db import transaction
from django.utils import timezone

from beliefs.domain.vocabulary import MAX_LABEL_LENGTH, AuditKind
from beliefs.errors import InvalidInput, field_error
from beliefs.models import Runtime, RuntimeAPIKey, TaskClass
from beliefs.services.audit import Actor, audit, audit_replaced

MAX_RUNTIME_NAME = 50


def check_runtime_name(name: object) -> str:
    """A runtime's name as given, checked: the admin and the key command take the same names."""
    if not isinstance(name, str) or not name.strip():
        raise field_error("name", "must be a non-empty name, e.g. billing-agent")
    name = name.strip()
    if len(name) > MAX_RUNTIME_NAME or not name.isprintable():
        raise field_error("name", f"must be at most {MAX_RUNTIME_NAME} printable characters")
    return name


def check_audience_names(text: str) -> list[str]:
    """The audiences a runtime may name for its receipts, from the admin's box (one a line):
    each printable, at most as long as an instance's `audience`; blank lines and repeats
    dropped."""
    names = list(dict.fromkeys(line.strip() for line in text.splitlines() if line.strip()))
    for name in names:
        if len(name) > MAX_LABEL_LENGTH or not name.isprintable():
            raise field_error(
                "audiences", f"each must be at most {MAX_LABEL_LENGTH} printable characters"
            )
    return names


def require_own_audience(audience: str, runtime: Runtime | None) -> None:
    """A receipt is for its runtime (no `audience`, or the runtime's name) or for a name staff
    registered for that runtime; 400 `unknown_audience` for any other, so that one runtime's
    key cannot mint receipts that a tool server trusting another runtime accepts."""
    if not audience:
        return
    own = [runtime.name, *runtime.audiences] if runtime is not None else []
    if audience in own:
        return
    message = (
        "must be your runtime's name or an audience registered for it in the console's admin"
        + (f" ({', '.join(repr(name) for name in own)})" if own else "")
    )
    raise InvalidInput(
        f"audience: {audience!r} {message}",
        code="unknown_audience",
        fields={"audience": [message]},
    )


@transaction.atomic
def runtime_key_create(
    *, runtime_name: str, actor: Actor, key_name: str = ""
) -> tuple[RuntimeAPIKey, str]:
    """A new key for the named runtime (created if needed). The key is returned once, here;
    only its hash is stored."""
    name = check_runtime_name(runtime_name)
    runtime, created = Runtime.objects.get_or_create(name=name)
    if created:
        audit(AuditKind.RUNTIME_CREATED, actor=actor, subject=name)
    api_key, key = RuntimeAPIKey.objects.create_key(name=key_name or name, runtime=runtime)
    assert isinstance(api_key, RuntimeAPIKey)
    audit(
        AuditKind.RUNTIME_KEY_CREATED,
        actor=actor,
        subject=name,
        data={"runtime": name, "prefix": api_key.prefix, "key_name": api_key.name},
    )
    return api_key, key


@transaction.atomic
def runtime_key_revoke(*, key: RuntimeAPIKey, actor: Actor) -> RuntimeAPIKey:
    """Revoke a key for good; the runtime keeps everything the key did."""
    key = RuntimeAPIKey.objects.select_for_update().get(pk=key.pk)
    if key.revoked:
        return key
    key.revoked = True
    key.save(update_fields=["revoked"])
    audit(
        AuditKind.RUNTIME_KEY_REVOKED,
        actor=actor,
        subject=key.runtime.name,
        data={"runtime": key.runtime.name, "prefix": key.prefix, "at": timezone.now().isoformat()},
    )
    return key


@transaction.atomic
def task_class_transfer(*, task_class: TaskClass, owner: Runtime | None, actor: Actor) -> TaskClass:
    """Give a task class to another runtime (staff only, from the admin)."""
    task_class = TaskClass.objects.select_for_update().get(pk=task_class.pk)
    before = task_class.owner.name if task_class.owner is not None else None
    after = owner.name if owner is not None else None
    if before == after:
        return task_class
    task_class.owner = owner
    task_class.save(update_fields=["owner", "updated_at"])
    audit_replaced(
        AuditKind.TASK_CLASS_OWNER_CHANGED,
        before,
        after,
        actor=actor,
        task_class=task_class,
        subject=task_class.key,
    )
    return task_class
