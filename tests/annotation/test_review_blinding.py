"""Blinding of the annotator pages built here: an annotator with items in every state follows
every link from home (queue, review pages of open, submitted and skipped items) and sees no
model, configuration or judge explanation; after a calibration submit the same crawl does find
the judges' words, so the check can fail."""

import pytest
from django.urls import reverse

from annotation.services import queue
from annotation.services.annotations import Draft, annotation_submit
from annotation.services.studies import panel_versions
from tests.annotation.conftest import new_study
from tests.foundation.test_blinding_crawl import crawl, forbidden_strings, leaks_in

pytestmark = pytest.mark.django_db


def submit(assignment):
    scores = {v.rubric_id: 3 for v in panel_versions(assignment.item.study, assignment.track)}
    return annotation_submit(
        assignment, draft=Draft(scores=scores), version=0, actor=assignment.annotator
    )


def test_an_annotator_crawling_their_studies_meets_no_model_or_judge(client, study, clinicians):
    me = clinicians[0]
    done = submit(queue.next_assignment(study=study, annotator=me))
    skipped = queue.next_assignment(study=study, annotator=me)
    queue.assignment_skip(skipped, reason="unsure", actor=me)
    current = queue.next_assignment(study=study, annotator=me)
    client.force_login(me)
    pages = crawl(client)
    for assignment in (done, skipped, current):
        assert reverse("annotation:review", args=[assignment.public_id]) in pages
    assert reverse("annotation:queue", args=[study.pk]) in pages
    assert leaks_in(pages) == []


def test_the_same_crawl_finds_the_judges_after_a_calibration_submit(client, scored_job, clinicians):
    calibration = new_study(scored_job, name="Round 1", kind="calibration", size=2)
    me = clinicians[0]
    done = submit(queue.next_assignment(study=calibration, annotator=me))
    client.force_login(me)
    pages = crawl(client)
    review_page = pages[reverse("annotation:review", args=[done.public_id])]
    assert any(secret in review_page for secret in forbidden_strings())
