"""Retention and erasure (services/erasure.py): a class's retention period, when an instance's
values were removed, a belief status for a removed value; and the audit keeps digests.

The audit used to keep a person's values, world references and typed reasons in its events'
data. It now keeps their SHA-256 digests (`services.audit.digest_of`), so that retention and
erasure never have to touch the append-only log. This migration rewrites the events written
before in the same way, lifting the append-only trigger for that UPDATE alone and putting it
back in the same transaction (the one time the log's rows change, by its own schema change).
It cannot be reversed: the values are gone from the log, which is the point.
"""

from __future__ import annotations

import json
from typing import Any

import django.core.validators
from django.conf import settings
from django.db import migrations, models

from beliefs.domain.canonical import json_digest, text_digest

RESPONSES = ("prompt.confirm", "prompt.edit", "prompt.answer", "prompt.reject", "prompt.veto")
KINDS = ("belief.recorded", "prompt.reasked", "instance.opened", "instance.world_set", *RESPONSES)
TRIGGERS = {
    "sqlite": (
        ["DROP TRIGGER IF EXISTS beliefs_auditevent_no_update;"],
        [
            """
            CREATE TRIGGER beliefs_auditevent_no_update BEFORE UPDATE ON beliefs_auditevent
            BEGIN SELECT RAISE(ABORT, 'beliefs_auditevent is append-only'); END;
            """
        ],
    ),
    "postgresql": (
        ["DROP TRIGGER IF EXISTS beliefs_auditevent_no_update_delete ON beliefs_auditevent;"],
        [
            """
            CREATE TRIGGER beliefs_auditevent_no_update_delete
            BEFORE UPDATE OR DELETE ON beliefs_auditevent
            FOR EACH ROW EXECUTE FUNCTION beliefs_auditevent_append_only();
            """
        ],
    ),
}


def digest_of(value: Any) -> str:
    try:
        return "sha256:" + json_digest(value)
    except (TypeError, ValueError):  # not I-JSON: still never kept as it was
        return "sha256:" + text_digest(json.dumps(value, sort_keys=True, default=str))


def _digested(value: Any) -> bool:
    return isinstance(value, str) and value.startswith("sha256:")


def digested(kind: str, data: Any) -> dict[str, Any] | None:
    """The event's data as the audit now keeps it, or None when it holds no value."""
    if not isinstance(data, dict):
        return None
    out = dict(data)
    if kind == "instance.world_set":
        for key in ("before", "after"):
            if key in out and not _digested(out[key]):
                out[key] = digest_of(out[key])
    elif kind == "prompt.reasked":
        if "before" in out and not _digested(out["before"]):
            out["before"] = digest_of(out["before"])
        if "value" in out:
            out["after"] = digest_of(out.pop("value"))
    elif kind == "instance.opened":
        if "world" in out:
            out["world_digest"] = digest_of(out.pop("world"))
    else:  # a belief recorded, a person's response
        for key in ("value", "world_ref"):
            if key in out:
                out[f"{key}_digest"] = digest_of(out.pop(key))
        if "reason" in out and kind in RESPONSES:
            reason = out.pop("reason")
            if reason:
                out["reason_digest"] = digest_of(reason)
        if isinstance(out.get("acknowledged"), list):
            out["acknowledged"] = [
                {
                    "key": detail.get("key"),
                    "change": detail.get("change"),
                    "old_digest": digest_of(detail.get("old")),
                    "new_digest": digest_of(detail.get("new")),
                }
                if isinstance(detail, dict) and ("old" in detail or "new" in detail)
                else detail
                for detail in out["acknowledged"]
            ]
    return out if out != data else None


def digest_the_log(apps: Any, schema_editor: Any) -> None:
    AuditEvent = apps.get_model("beliefs", "AuditEvent")
    lift, restore = TRIGGERS.get(schema_editor.connection.vendor, ([], []))
    events = AuditEvent.objects.filter(kind__in=KINDS).only("pk", "kind", "data")
    changed = []
    for statement in lift:
        schema_editor.execute(statement)
    for event in events.iterator(chunk_size=2000):
        data = digested(event.kind, event.data)
        if data is not None:
            event.data = data
            changed.append(event)
        if len(changed) >= 2000:
            AuditEvent.objects.bulk_update(changed, ["data"])
            changed = []
    if changed:
        AuditEvent.objects.bulk_update(changed, ["data"])
    for statement in restore:
        schema_editor.execute(statement)


class Migration(migrations.Migration):
    dependencies = [
        ("beliefs", "0034_webhook_event_traceparent"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.AddField(
            model_name="taskclass",
            name="retention_days",
            field=models.PositiveIntegerField(
                validators=[django.core.validators.MinValueValidator(1)],
                blank=True,
                help_text="Days after a finished instance's last change when its values and world "
                "references are removed (the audit keeps their digests). Empty: kept.",
                null=True,
            ),
        ),
        migrations.AddField(
            model_name="taskinstance",
            name="erased_at",
            field=models.DateTimeField(blank=True, null=True),
        ),
        migrations.AlterField(
            model_name="belief",
            name="status",
            field=models.CharField(
                choices=[
                    ("active", "Active"),
                    ("vetoed", "Vetoed"),
                    ("superseded", "Superseded"),
                    ("erased", "Erased"),
                ],
                default="active",
                max_length=20,
            ),
        ),
        migrations.AddIndex(
            model_name="taskinstance",
            index=models.Index(
                condition=models.Q(("erased_at__isnull", True)),
                fields=["task_class", "updated_at"],
                name="instance_values_held",
            ),
        ),
        migrations.RunPython(digest_the_log, migrations.RunPython.noop, elidable=True),
    ]
