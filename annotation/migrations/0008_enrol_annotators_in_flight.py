"""Studies are now seen only by the annotators enrolled in their project. So that no work in
flight disappears from anyone's queue, every annotator of this site who already has an
assignment in a project (in progress, skipped, submitted, of any study) is enrolled in it, with
no quota, as enrolled by nobody on the day of the migration. Accounts that imports created
(records of who did imported work, inactive) are not enrolled. An open study nobody had started
is seen by nobody until a researcher enrols its annotators."""

from django.db import migrations
from django.utils import timezone


def enrol_annotators_in_flight(apps, schema_editor):
    Assignment = apps.get_model("annotation", "Assignment")
    ProjectMember = apps.get_model("annotation", "ProjectMember")
    pairs = (
        Assignment.objects.filter(annotator__origin="site", annotator__role="annotator")
        .values_list("item__study__project_id", "annotator_id")
        .distinct()
    )
    now = timezone.now()
    ProjectMember.objects.bulk_create(
        [
            ProjectMember(project_id=project, annotator_id=annotator, enrolled_at=now)
            for project, annotator in sorted(set(pairs))
        ],
        ignore_conflicts=True,
    )


class Migration(migrations.Migration):
    dependencies = [
        ("annotation", "0007_members_moves_adjudication_outbox"),
        ("accounts", "0004_senior_and_notification_settings"),
    ]

    operations = [
        migrations.RunPython(enrol_annotators_in_flight, migrations.RunPython.noop),
    ]
