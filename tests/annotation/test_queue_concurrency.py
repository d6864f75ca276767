"""Eight annotators pressing "next" at the same moment, in threads with their own database
connections: the seats of an item are a unique constraint, so no item passes its overlap on
SQLite or PostgreSQL (CI runs this module on both)."""

import threading

import pytest
from django.db import connection

from accounts.models import Track
from annotation.models import Assignment, AssignmentStatus
from annotation.services import queue
from tests.annotation.conftest import annotators, new_study

PEOPLE = 8


def press_next_together(study, people) -> list:
    barrier = threading.Barrier(len(people))
    results, errors = [None] * len(people), []

    def press(index, annotator):
        try:
            barrier.wait()
            results[index] = queue.next_assignment(study=study, annotator=annotator)
        except Exception as error:  # reported below, never swallowed
            errors.append(error)
        finally:
            connection.close()

    threads = [threading.Thread(target=press, args=(i, p)) for i, p in enumerate(people)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert errors == []
    return results


@pytest.mark.django_db(transaction=True)
def test_simultaneous_next_never_pushes_an_item_past_its_overlap(world_job):
    from jury.models import ScoringJob

    study = new_study(ScoringJob.objects.get(pk=world_job), size=8, overlap=3)
    people = annotators(Track.CLINICAL, PEOPLE, prefix="racer")
    for _round in range(6):
        for assignment in press_next_together(study, people):
            if assignment is not None:  # submit, so the next press asks for a new item
                Assignment.objects.filter(pk=assignment.pk).update(
                    status=AssignmentStatus.SUBMITTED
                )
    seats = {}
    for item_id, annotator_id in Assignment.objects.filter(item__study=study).values_list(
        "item_id", "annotator_id"
    ):
        seats.setdefault(item_id, []).append(annotator_id)
    assert max(len(p) for p in seats.values()) == 3
    assert all(len(p) == len(set(p)) for p in seats.values())
    # every item filled: at most 8 items x overlap 3 = 24 seats over 8 people x 6 presses
    assert sorted(len(p) for p in seats.values()) == [3] * study.items.count()
