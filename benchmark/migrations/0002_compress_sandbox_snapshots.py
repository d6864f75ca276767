"""Store sandbox snapshots zlib-compressed (see benchmark/fields.py), keeping existing data."""

from django.db import migrations

import benchmark.fields

SNAPSHOTS = ("sandbox_initial", "sandbox_final")
BATCH = 200


def copy_snapshots(apps, schema_editor, source: str, target: str) -> None:
    Conversation = apps.get_model("benchmark", "Conversation")
    rows = Conversation.objects.only("pk", *(f"{s}{source}" for s in SNAPSHOTS))
    batch = []
    for conversation in rows.iterator(chunk_size=BATCH):
        for snapshot in SNAPSHOTS:
            value = getattr(conversation, f"{snapshot}{source}")
            setattr(conversation, f"{snapshot}{target}", value)
        batch.append(conversation)
        if len(batch) == BATCH:
            _save(Conversation, batch, target)
    _save(Conversation, batch, target)


def _save(Conversation, batch: list, target: str) -> None:
    if batch:
        Conversation.objects.bulk_update(batch, [f"{s}{target}" for s in SNAPSHOTS])
        batch.clear()


def compress(apps, schema_editor):
    copy_snapshots(apps, schema_editor, "", "_packed")


def decompress(apps, schema_editor):
    copy_snapshots(apps, schema_editor, "_packed", "")


class Migration(migrations.Migration):
    dependencies = [("benchmark", "0001_initial")]

    operations = [
        *(
            migrations.AddField(
                model_name="conversation",
                name=f"{snapshot}_packed",
                field=benchmark.fields.CompressedJSONField(blank=True, null=True),
            )
            for snapshot in SNAPSHOTS
        ),
        migrations.RunPython(compress, decompress),
        *(migrations.RemoveField(model_name="conversation", name=s) for s in SNAPSHOTS),
        *(
            migrations.RenameField(
                model_name="conversation", old_name=f"{snapshot}_packed", new_name=snapshot
            )
            for snapshot in SNAPSHOTS
        ),
    ]
