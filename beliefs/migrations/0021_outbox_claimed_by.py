from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("beliefs", "0018_action_slots_and_receipts"),
    ]

    operations = [
        migrations.AddField(
            model_name="outgoingemail",
            name="claimed_by",
            field=models.CharField(blank=True, max_length=200),
        ),
        migrations.AddField(
            model_name="webhookdelivery",
            name="claimed_by",
            field=models.CharField(blank=True, max_length=200),
        ),
    ]
