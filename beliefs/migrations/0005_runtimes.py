"""Runtimes own their API keys: each existing key becomes a key of a runtime of the same name.

The key rows are copied with their hashes, so every key that worked before still works.
"""

import django.db.models.deletion
from django.db import migrations, models


def copy_keys(apps, schema_editor):
    APIKey = apps.get_model("rest_framework_api_key", "APIKey")
    Runtime = apps.get_model("beliefs", "Runtime")
    RuntimeAPIKey = apps.get_model("beliefs", "RuntimeAPIKey")
    for old in APIKey.objects.order_by("created"):
        runtime, _ = Runtime.objects.get_or_create(name=old.name)
        RuntimeAPIKey.objects.create(
            id=old.id,
            prefix=old.prefix,
            hashed_key=old.hashed_key,
            name=old.name,
            revoked=old.revoked,
            expiry_date=old.expiry_date,
            runtime=runtime,
        )
        # auto_now_add stamped the copy with today: keep the key's real age.
        RuntimeAPIKey.objects.filter(id=old.id).update(created=old.created)


class Migration(migrations.Migration):

    dependencies = [
        ('beliefs', '0004_instance_idempotency'),
        ('rest_framework_api_key', '0005_auto_20220110_1102'),
    ]

    operations = [
        migrations.CreateModel(
            name='Runtime',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('name', models.CharField(max_length=50, unique=True)),
                ('created_at', models.DateTimeField(auto_now_add=True)),
            ],
            options={
                'ordering': ['name'],
            },
        ),
        migrations.CreateModel(
            name='RuntimeAPIKey',
            fields=[
                ('id', models.CharField(editable=False, max_length=150, primary_key=True, serialize=False, unique=True)),
                ('prefix', models.CharField(editable=False, max_length=8, unique=True)),
                ('hashed_key', models.CharField(editable=False, max_length=150)),
                ('created', models.DateTimeField(auto_now_add=True, db_index=True)),
                ('name', models.CharField(default=None, help_text='A free-form name for the API key. Need not be unique. 50 characters max.', max_length=50)),
                ('revoked', models.BooleanField(blank=True, default=False, help_text='If the API key is revoked, clients cannot use it anymore. (This cannot be undone.)')),
                ('expiry_date', models.DateTimeField(blank=True, help_text='Once API key expires, clients cannot use it anymore.', null=True, verbose_name='Expires')),
                ('runtime', models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='keys', to='beliefs.runtime')),
            ],
            options={
                'verbose_name': 'runtime API key',
                'verbose_name_plural': 'runtime API keys',
                'ordering': ('-created',),
                'abstract': False,
            },
        ),
        migrations.RunPython(copy_keys, migrations.RunPython.noop),
    ]
