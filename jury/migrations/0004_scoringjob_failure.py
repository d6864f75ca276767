from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("jury", "0003_judge_score_lease"),
    ]

    operations = [
        migrations.AddField(
            model_name="scoringjob",
            name="failure_reason",
            field=models.TextField(blank=True),
        ),
    ]
