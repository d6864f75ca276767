"""Mark imported work and the accounts imports created.

Assignment.imported: every assignment with an IMPORT history entry (the annotation import
writes one for each). User.origin, for accounts made before the field existed: an import's
accounts can never log in (inactive, no usable password, never logged in); those that did work
in a study re-created from an archive came with the archive (the archive import never reuses
an account), those whose work came only from an annotation file came with that file.
"""

from django.db import migrations, models
from django.db.models import Q

RECORDS = Q(is_active=False, last_login__isnull=True, password__startswith="!")


def mark_imported(apps, schema_editor) -> None:
    Assignment = apps.get_model("annotation", "Assignment")
    History = apps.get_model("annotation", "AssignmentHistory")
    Study = apps.get_model("annotation", "Study")
    User = apps.get_model("accounts", "User")
    imported = History.objects.filter(kind="import").values("assignment_id")
    Assignment.objects.filter(pk__in=imported).update(imported=True)

    archived = Study.objects.exclude(imported_from="")
    in_archives = set(
        Assignment.objects.filter(item__study__in=archived).values_list("annotator_id", flat=True)
    )
    in_archives |= set(
        History.objects.filter(assignment__item__study__in=archived).values_list(
            "actor_id", flat=True
        )
    )
    in_archives |= set(archived.values_list("created_by_id", flat=True))
    records = User.objects.filter(RECORDS, origin="site")
    records.filter(pk__in=in_archives - {None}).update(origin="study_archive")
    from_files = Assignment.objects.filter(imported=True).values("annotator_id")
    served = Assignment.objects.filter(imported=False).values("annotator_id")
    records.filter(pk__in=from_files).exclude(pk__in=served).update(origin="annotation_file")


class Migration(migrations.Migration):
    dependencies = [
        ("accounts", "0002_user_origin"),
        ("annotation", "0002_study_imported_from"),
    ]

    operations = [
        migrations.AddField(
            model_name="assignment",
            name="imported",
            field=models.BooleanField(default=False),
        ),
        migrations.RunPython(mark_imported, migrations.RunPython.noop),
    ]
