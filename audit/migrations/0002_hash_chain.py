"""Chain the audit trail: every record gets the hash of the one before it, the records written
before the chain included (hashed in the order they were written)."""

import django.utils.timezone
from django.db import migrations, models

from audit.chain import GENESIS, HASHED_FIELDS, record_hash


def chain_existing_records(apps, schema_editor):
    AuditEvent = apps.get_model("audit", "AuditEvent")
    AuditChainHead = apps.get_model("audit", "AuditChainHead")
    previous = GENESIS
    length = 0
    for event in AuditEvent.objects.order_by("pk").iterator(chunk_size=2000):
        fields = {name: getattr(event, name) for name in HASHED_FIELDS}
        event.previous_hash = previous
        event.hash = previous = record_hash(previous, fields)
        event.save(update_fields=["previous_hash", "hash"])
        length += 1
    AuditChainHead.objects.create(pk=1, last_hash=previous, length=length)


class Migration(migrations.Migration):
    dependencies = [("audit", "0001_audit_events")]

    operations = [
        migrations.AlterField(
            model_name="auditevent",
            name="at",
            field=models.DateTimeField(
                db_index=True, default=django.utils.timezone.now, editable=False
            ),
        ),
        migrations.AddField(
            model_name="auditevent",
            name="previous_hash",
            field=models.CharField(default="", editable=False, max_length=64),
            preserve_default=False,
        ),
        migrations.AddField(
            model_name="auditevent",
            name="hash",
            field=models.CharField(default="", editable=False, max_length=64),
            preserve_default=False,
        ),
        migrations.CreateModel(
            name="AuditChainHead",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("last_hash", models.CharField(max_length=64)),
                ("length", models.PositiveBigIntegerField(default=0)),
            ],
        ),
        migrations.RunPython(chain_existing_records, migrations.RunPython.noop),
    ]
