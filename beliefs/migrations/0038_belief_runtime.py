"""A belief keeps its instance's runtime, and planning's indexes seek by it.

Planning picks the newest value a run may carry: its own runtime's, or its class's history
pool's. The index had no runtime, so a person's long history with another runtime (a class shared
without its history) was walked, row by row, by every plan. The column is filled from each
belief's instance (an instance's runtime never changes). The instance's values get an index of
their own by slot, which also serves what the instance's foreign key index served. The new
indexes are built before the old ones go, so planning always has one.
"""

import django.db.models.deletion
from django.db import migrations, models

FILL = (
    "UPDATE beliefs_belief SET runtime_id = (SELECT i.runtime_id FROM beliefs_taskinstance i"
    " WHERE i.id = beliefs_belief.instance_id)"
)


class Migration(migrations.Migration):
    dependencies = [("beliefs", "0037_sign_in_identity")]

    operations = [
        migrations.AddField(
            model_name="belief",
            name="runtime",
            field=models.ForeignKey(
                blank=True,
                db_index=False,
                null=True,
                on_delete=django.db.models.deletion.DO_NOTHING,
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
        migrations.AddIndex(
            model_name="belief",
            index=models.Index(
                fields=["instance", "slot", "status", "-acquired_at", "-id"],
                name="belief_newest_of_instance",
            ),
        ),
        migrations.RemoveIndex(model_name="belief", name="belief_newest_per_slot"),
        migrations.AlterField(
            model_name="belief",
            name="instance",
            field=models.ForeignKey(
                db_index=False,
                on_delete=django.db.models.deletion.CASCADE,
                related_name="beliefs",
                to="beliefs.taskinstance",
            ),
        ),
    ]
