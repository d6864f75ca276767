"""The count of items still open to an annotator (the review page's progress, "next item"'s
candidates) is the queue's rule, item by item, and reads the annotator's own rows without
walking the study: it must not grow with the study (issue 34)."""

from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from annotation.models import (
    Adjudication,
    Assignment,
    AssignmentHistory,
    AssignmentStatus,
    HistoryKind,
)
from annotation.services import queue
from tests.annotation.conftest import new_study

pytestmark = pytest.mark.django_db


def rule_by_hand(study, annotator, now) -> set[int]:
    """The queue's rule spelled out over every item, one at a time."""
    handed = {
        h.assignment.item_id
        for h in AssignmentHistory.objects.filter(kind=HistoryKind.REASSIGN)
        if h.old.get("annotator_id") == annotator.pk
    }
    open_items = set()
    for item in study.items.all():
        mine = item.assignments.filter(annotator=annotator).exists()
        judged = item.adjudications.filter(adjudicator=annotator).exists()
        seats = [
            a
            for a in item.assignments.filter(track=annotator.track, slot__isnull=False)
            if not (a.status == AssignmentStatus.RESERVED and _before(a.reserved_until, now))
        ]
        free = len(seats) < study.overlap_for(annotator.track)
        if not (mine or judged or item.pk in handed) and free:
            open_items.add(item.pk)
    return open_items


def _before(moment, now) -> bool:
    return moment is not None and moment < now


def test_the_open_items_follow_the_rule_for_every_kind_of_exclusion(scored_job, clinicians):
    study = new_study(scored_job, size=8, overlap=2)
    elsewhere = new_study(scored_job, name="Another study", size=8)
    first, second, third = clinicians
    items = list(study.items.order_by("position"))
    seat = lambda item, who, slot, **extra: Assignment.objects.create(  # noqa: E731
        item=item, annotator=who, track=who.track, slot=slot, queue_key=f"{item.pk}-{who.pk}",
        **extra,
    )  # fmt: skip
    seat(items[0], first, 0, status=AssignmentStatus.SUBMITTED)  # first's own
    seat(items[1], second, 0), seat(items[1], third, 1)  # full
    gone = timezone.now() - timedelta(minutes=1)
    seat(items[2], second, 0, status=AssignmentStatus.RESERVED, reserved_until=gone)
    seat(items[2], third, 1)  # one seat held, one expired: open
    moved = seat(items[3], second, 0)
    AssignmentHistory.objects.create(
        assignment=moved, kind=HistoryKind.REASSIGN, old={"annotator_id": first.pk}
    )
    Adjudication.objects.create(item=items[4], rubric_id="clinical_safety", reason="gap", gap=2,
                                adjudicator=first)  # fmt: skip
    for item in elsewhere.items.all()[:3]:  # the same people's work in another study
        seat(item, first, 0)
    now = timezone.now()
    for person in clinicians:
        expected = rule_by_hand(study, person, now)
        found = queue._open_items(study, person, now, practice=False)
        assert set(found.values_list("pk", flat=True)) == expected
        assert found.count() == len(expected)
    assert items[0].pk in expected  # third may take the seat first left free
    assert items[2].pk in rule_by_hand(study, first, now)
    assert {items[0].pk, items[3].pk, items[4].pk}.isdisjoint(rule_by_hand(study, first, now))


def test_the_annotators_own_rows_are_read_without_walking_the_study(clinicians):
    someone = clinicians[0]
    for rows in (queue._held(someone), queue._adjudicated(someone), queue._handed_away(someone)):
        assert "annotation_studyitem" not in str(rows.query)


def test_the_review_page_makes_no_more_queries_for_a_bigger_study(
    client, scored_job, clinicians, django_assert_max_num_queries
):
    me = clinicians[0]
    client.force_login(me)

    def review_url(study) -> str:
        held = Assignment.objects.create(
            item=study.items.first(), annotator=me, track=me.track, queue_key=study.name
        )
        url = reverse("annotation:review", args=[held.public_id])
        client.get(url)  # per-process warm-up (parsed rubrics)
        return url

    small_url = review_url(new_study(scored_job, name="Small", size=2))
    with CaptureQueriesContext(connection) as queries:
        assert client.get(small_url).status_code == 200
    small = len(queries.captured_queries)
    assert small > 5, "the page was not served"
    big_url = review_url(new_study(scored_job, name="Big", size=8))
    with django_assert_max_num_queries(small):
        assert client.get(big_url).status_code == 200


@pytest.mark.skipif(connection.vendor != "sqlite", reason="SQLite's plan; PostgreSQL picks its own")
def test_each_items_taken_seats_are_counted_from_an_index_alone(scored_job, clinicians):
    # Once per item of the study on every review page: a row read per seat doubled its time.
    study = new_study(scored_job, size=4, overlap=2)
    sql, params = queue._open_items(
        study, clinicians[0], timezone.now(), False
    ).query.sql_with_params()
    with connection.cursor() as cursor:
        cursor.execute(f"EXPLAIN QUERY PLAN {sql}", params)
        plan = [row[-1] for row in cursor.fetchall()]
    seats = [step for step in plan if "annotation_assignment" in step or " U0 " in step]
    assert any("COVERING INDEX" in step and "item_id=? AND track=?" in step for step in seats), plan
