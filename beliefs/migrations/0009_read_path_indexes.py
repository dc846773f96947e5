# Indexes for reads whose cost must not grow with history: a principal's newest active belief
# per slot (it extends the earlier (principal, slot, status) index, which it replaces), and the
# latest planned instances and answered prompts that /insights/ summarises, and the audit log
# newest first for /activity/.

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("beliefs", "0008_instance_idempotency_per_runtime"),
    ]

    operations = [
        migrations.RemoveIndex(
            model_name="belief",
            name="beliefs_bel_princip_1dc4ac_idx",
        ),
        migrations.AddIndex(
            model_name="belief",
            index=models.Index(
                fields=["principal", "slot", "status", "-acquired_at", "-id"],
                name="belief_newest_per_slot",
            ),
        ),
        migrations.AddIndex(
            model_name="taskinstance",
            index=models.Index(fields=["-planned_at"], name="instance_latest_planned"),
        ),
        migrations.AddIndex(
            model_name="prompt",
            index=models.Index(fields=["-responded_at"], name="prompt_latest_responded"),
        ),
        migrations.AddIndex(
            model_name="auditevent",
            index=models.Index(fields=["-created_at", "-id"], name="audit_newest_first"),
        ),
    ]
