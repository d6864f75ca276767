"""The control of the blinding crawl (tests/foundation/test_blinding_crawl.py): after a
calibration submit the same crawl does find the judges' words on the review page, so the check
there can fail."""

import pytest
from django.urls import reverse

from annotation.services import queue
from annotation.services.annotations import Draft, annotation_submit
from annotation.services.studies import panel_versions
from tests.annotation.conftest import new_study
from tests.foundation.test_blinding_crawl import crawl, forbidden_strings

pytestmark = pytest.mark.django_db


def submit(assignment):
    scores = {v.rubric_id: 3 for v in panel_versions(assignment.item.study, assignment.track)}
    return annotation_submit(
        assignment, draft=Draft(scores=scores), version=0, actor=assignment.annotator
    )


def test_the_same_crawl_finds_the_judges_after_a_calibration_submit(client, scored_job, clinicians):
    calibration = new_study(scored_job, name="Round 1", kind="calibration", size=2)
    me = clinicians[0]
    done = submit(queue.next_assignment(study=calibration, annotator=me))
    client.force_login(me)
    pages = crawl(client)
    review_page = pages[reverse("annotation:review", args=[done.public_id])]
    assert any(secret in review_page for secret in forbidden_strings())
