# The admin says "Task classes", not Django's "Task classs" (options only: no SQL).
from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [
        ("beliefs", "0025_signature_and_approval_choices"),
    ]

    operations = [
        migrations.AlterModelOptions(
            name="taskclass",
            options={
                "ordering": ["key"],
                "permissions": [("classify", "Can classify slot and decision risk")],
                "verbose_name_plural": "task classes",
            },
        ),
    ]
