"""Instances and task classes belong to runtimes; keys are runtime keys; the audit log keeps
the key's prefix.

Schema changes come in a migration of their own, after the keys were copied (0005): on
PostgreSQL a table cannot be altered in the transaction that left row events pending on it.
"""

import django.db.models.deletion
from django.db import migrations, models


def assign_owners(apps, schema_editor):
    TaskInstance = apps.get_model("beliefs", "TaskInstance")
    TaskClass = apps.get_model("beliefs", "TaskClass")
    Runtime = apps.get_model("beliefs", "Runtime")
    RuntimeAPIKey = apps.get_model("beliefs", "RuntimeAPIKey")
    AuditEvent = apps.get_model("beliefs", "AuditEvent")
    for key in RuntimeAPIKey.objects.all():
        TaskInstance.objects.filter(opened_by_id=key.id).update(runtime_id=key.runtime_id)
    runtimes = {r.name: r.pk for r in Runtime.objects.all()}
    # A class belongs to the runtime whose key registered it, as the audit log recorded.
    for event in AuditEvent.objects.filter(kind="task_class.registered").order_by("id"):
        owner = runtimes.get(event.actor_key_name)
        if owner is not None and event.task_class_id is not None:
            TaskClass.objects.filter(pk=event.task_class_id, owner__isnull=True).update(
                owner_id=owner
            )


class Migration(migrations.Migration):

    dependencies = [
        ('beliefs', '0005_runtimes'),
    ]

    operations = [
        migrations.AddField(
            model_name='auditevent',
            name='actor_key_prefix',
            field=models.CharField(blank=True, max_length=8, null=True),
        ),
        migrations.AddField(
            model_name='taskclass',
            name='owner',
            field=models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.PROTECT, related_name='task_classes', to='beliefs.runtime'),
        ),
        migrations.AddField(
            model_name='taskinstance',
            name='runtime',
            field=models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.PROTECT, related_name='instances', to='beliefs.runtime'),
        ),
        migrations.AlterField(
            model_name='proposalvalidation',
            name='submitted_by_key',
            field=models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to='beliefs.runtimeapikey'),
        ),
        migrations.AlterField(
            model_name='taskinstance',
            name='opened_by',
            field=models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='instances', to='beliefs.runtimeapikey'),
        ),
        migrations.RunPython(assign_owners, migrations.RunPython.noop),
    ]
