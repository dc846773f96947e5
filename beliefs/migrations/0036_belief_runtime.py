"""A belief keeps its instance's runtime, and planning's index seeks by it.

Planning picks the newest value a run may carry: its own runtime's, or its class's history
pool's. The index had no runtime, so a person's long history with another runtime (a class shared
without its history) was walked, row by row, by every plan. The column is filled from each
belief's instance (an instance's runtime never changes); the new index is built before the old
one goes, so planning always has one.
"""

import django.db.models.deletion
from django.db import migrations, models

FILL = (
    "UPDATE beliefs_belief SET runtime_id = (SELECT i.runtime_id FROM beliefs_taskinstance i"
    " WHERE i.id = beliefs_belief.instance_id)"
)


class Migration(migrations.Migration):
    dependencies = [("beliefs", "0035_erasure_and_retention")]

    operations = [
        migrations.AddField(
            model_name="belief",
            name="runtime",
            field=models.ForeignKey(
                blank=True,
                null=True,
                on_delete=django.db.models.deletion.PROTECT,
                related_name="+",
                to="beliefs.runtime",
            ),
        ),
        migrations.RunSQL(FILL, migrations.RunSQL.noop, elidable=True),
        migrations.AddIndex(
            model_name="belief",
            index=models.Index(
                fields=["principal", "slot", "status", "runtime", "-acquired_at", "-id"],
                name="belief_newest_per_runtime",
            ),
        ),
        migrations.RemoveIndex(model_name="belief", name="belief_newest_per_slot"),
    ]
