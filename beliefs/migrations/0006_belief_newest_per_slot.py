# The index that finds a principal's newest active belief per slot without reading the history.
# It extends the earlier (principal, slot, status) index, which it replaces.

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("beliefs", "0003_proposal_meaningful_change_nullable"),
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
    ]
