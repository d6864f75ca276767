"""The migration that brought the imported marks marks what imports did before it:
assignments with an IMPORT history entry, and the accounts imports created (never able to log
in, and working only in an imported study or only on imported rows)."""

from importlib import import_module

import pytest
from django.apps import apps
from django.utils import timezone

from accounts.models import AccountOrigin, Role, Track, User
from annotation.models import Assignment, AssignmentHistory, HistoryKind, Project, Study
from tests.conftest import make_user
from tests.foundation.test_people_page import record

pytestmark = pytest.mark.django_db


def test_the_migration_marks_accounts_imports_made_before(researcher, scored_job):
    migration = import_module("annotation.migrations.0003_assignment_imported")
    archived = Study.objects.create(project=Project.objects.create(name="Old import"),
                                    name="Old", kind="target", sample_size=1,
                                    imported_from="paper.zip")  # fmt: skip
    served_study = Study.objects.create(project=Project.objects.create(name="Here"),
                                        name="Here", kind="target", sample_size=1)  # fmt: skip
    conversations = list(scored_job.run.conversations.order_by("pk")[:2])
    from_archive, from_file = record("A1"), record("paper-doc")
    retired = record("retired-doc")  # deactivated on this site, never imported anything
    real = make_user("carla", Role.ANNOTATOR, Track.CLINICAL)
    for study, conversation, people in ((archived, conversations[0], [from_archive]),
                                        (served_study, conversations[1],
                                         [from_file, real, retired])):  # fmt: skip
        item = study.items.create(conversation=conversation, position=0)
        for person in people:
            done = Assignment.objects.create(item=item, annotator=person, track=person.track,
                                             status="submitted", queue_key="k")  # fmt: skip
            if person in (from_file, real):
                AssignmentHistory.objects.create(assignment=done, kind=HistoryKind.IMPORT,
                                                 actor=researcher, at=timezone.now())  # fmt: skip
    migration.mark_imported(apps, None)
    origins = dict(User.objects.values_list("username", "origin"))
    assert origins["A1"] == AccountOrigin.STUDY_ARCHIVE
    assert origins["paper-doc"] == AccountOrigin.ANNOTATION_FILE
    assert origins["carla"] == origins["retired-doc"] == AccountOrigin.SITE
    imported = Assignment.objects.filter(imported=True).values_list(
        "annotator__username", flat=True
    )
    assert sorted(imported) == ["carla", "paper-doc"]
