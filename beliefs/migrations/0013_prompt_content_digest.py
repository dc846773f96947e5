import hashlib
import json

from django.db import migrations, models

# `services.planning.DESIRED_FIELDS` as of this migration: what planning writes into a prompt.
CONTENT_FIELDS = [
    "route",
    "rule",
    "reason",
    "effective_risk",
    "risk_reason",
    "blocking",
    "belief_id",
    "prefill",
    "context_value",
    "world_ref",
    "world_now",
    "world_diff",
]


def digest_stored_prompts(apps, schema_editor):
    """Each prompt's content digested once (as `services.planning.content_digest` writes it
    then: the SHA-256 of the canonical JSON of its content fields' values, in order); planning
    keeps it from now on."""
    Prompt = apps.get_model("beliefs", "Prompt")
    batch = []
    for prompt in Prompt.objects.only("pk", *CONTENT_FIELDS).iterator(chunk_size=500):
        values = [getattr(prompt, field) for field in CONTENT_FIELDS]
        text = json.dumps(values, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        prompt.content_digest = hashlib.sha256(text.encode("utf-8")).hexdigest()
        batch.append(prompt)
        if len(batch) == 500:
            Prompt.objects.bulk_update(batch, ["content_digest"])
            batch = []
    Prompt.objects.bulk_update(batch, ["content_digest"])


class Migration(migrations.Migration):
    dependencies = [
        ("beliefs", "0012_instance_plan_digest"),
    ]

    operations = [
        migrations.AddField(
            model_name="prompt",
            name="content_digest",
            field=models.CharField(blank=True, db_default="", default="", max_length=64),
        ),
        migrations.RunPython(digest_stored_prompts, migrations.RunPython.noop),
    ]
