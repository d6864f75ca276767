"""The demo's synthetic clinician no longer says how its scores are made: feedback it wrote
before (which told clinicians on the adjudication page that its score came from the jury mean
plus a bias and noise) now says "synthetic" only, like the text it writes now."""

from django.db import migrations

FORMER = (
    "Scripted simulated clinician (synthetic): score derived from the jury mean plus a fixed "
    "bias and noise."
)
NOW = "Synthetic score, not from a clinician."


def reword(apps, schema_editor):
    Assignment = apps.get_model("annotation", "Assignment")
    for assignment in Assignment.objects.filter(synthetic=True).only("pk", "feedback"):
        feedback = {k: NOW if v == FORMER else v for k, v in assignment.feedback.items()}
        if feedback != assignment.feedback:
            Assignment.objects.filter(pk=assignment.pk).update(feedback=feedback)


class Migration(migrations.Migration):
    dependencies = [("annotation", "0008_enrol_annotators_in_flight")]

    operations = [migrations.RunPython(reword, migrations.RunPython.noop)]
