"""The re-score form and the jury comparison page: staff only, one-click launch, progress
while the jobs run, ranking and CSV."""

import csv
import io

import pytest
from django.core.cache import cache
from django.urls import reverse

from alignment.forms.rescoring import version_field
from alignment.services import rescoring as loop
from annotation.models import Project, Study
from jury.models import Jury, ScoringJob
from jury.services import juries, rubrics, scoring
from tests.alignment.loop_support import (
    constructed_study,
    judged_versions,
    lenient_jury,
    rescored,
)
from tests.jury.services.builders import score_now

LOOP_PAGES = (
    "alignment:loop_rescore",
    "alignment:loop_comparison",
    "alignment:loop_comparison_csv",
)


@pytest.fixture(autouse=True)
def empty_cache():
    cache.clear()
    yield
    cache.clear()


def rescore_form(study, **fields) -> dict:
    """The form as the page fills it in: the study's versions, the shipped prompt, cache on."""
    data = {
        "jury": str(juries.jury_demo_ensure().pk),
        "judge_template": scoring.shipped_judge_template_text(),
        "use_cache": "on",
    }
    for version in study.rubric_versions.filter(kind="dimension"):
        data[version_field(version.rubric_id)] = str(version.pk)
    return data | fields


def new_jury_fields(name: str, judges: str) -> dict:
    weights = {f"new-weight_{rubric}": "1" for rubric in rubrics.current_weights()}
    return {
        "jury": "new", "new-name": name, "new-judges": judges,
        "new-pass_threshold": "3", "new-merge_mode": "mean", **weights,
    }  # fmt: skip


@pytest.mark.django_db
@pytest.mark.parametrize("name", LOOP_PAGES)
def test_annotators_are_refused_and_visitors_sent_to_login(client, annotator, scored_job, name):
    study = constructed_study(scored_job, annotated_items=1)
    url = reverse(name, args=[study.pk])
    assert client.get(url).status_code == 302
    client.force_login(annotator)
    assert client.get(url).status_code == 403
    assert client.post(url, rescore_form(study)).status_code == 403
    assert not loop.rescore_jobs(study)


@pytest.mark.django_db
def test_one_click_rescore_launches_the_jobs_and_opens_the_comparison(
    researcher_client, scored_job, django_capture_on_commit_callbacks
):
    study = constructed_study(scored_job, annotated_items=3)
    url = reverse("alignment:loop_rescore", args=[study.pk])
    page = researcher_client.get(url).content.decode()
    assert "3 conversations of this study have at least one" in page
    assert "v1 (the study&#x27;s, current)" in page and "&lt;!-- system --&gt;" in page

    with django_capture_on_commit_callbacks() as callbacks:
        response = researcher_client.post(url, rescore_form(study))

    assert response.status_code == 302
    assert response["Location"] == reverse("alignment:loop_comparison", args=[study.pk])
    (job,) = loop.rescore_jobs(study)
    assert job.conversations.count() == 3 and job.created_by.username == "rita"
    assert len(callbacks) == 2  # the first window of judge calls and the job's watch


@pytest.mark.django_db
def test_the_form_creates_a_new_jury_with_its_judges_and_weights(researcher_client, scored_job):
    study = constructed_study(scored_job, annotated_items=2)
    url = reverse("alignment:loop_rescore", args=[study.pk])
    form = rescore_form(study, **new_jury_fields("Two scripted", "offline/lenient\noffline/strict"))

    assert researcher_client.post(url, form).status_code == 302

    jury = Jury.objects.get(name="Two scripted")
    assert jury.judges == ["offline/lenient", "offline/strict"]
    assert set(jury.weights.values()) == {1.0}
    (job,) = loop.rescore_jobs(study)
    assert job.jury == jury and job.scores.count() == 2 * 6 * 2


@pytest.mark.django_db
def test_a_refused_rescore_keeps_neither_the_new_jury_nor_a_job(researcher_client, scored_job):
    unannotated = constructed_study(scored_job, annotated_items=0)
    url = reverse("alignment:loop_rescore", args=[unannotated.pk])
    form = rescore_form(unannotated, **new_jury_fields("Never kept", "offline/lenient"))

    refused = researcher_client.post(url, form).content.decode()

    assert "No conversation of this study has a submitted annotation yet" in refused
    assert not Jury.objects.filter(name="Never kept").exists()
    assert not ScoringJob.objects.filter(judge_template__gt="").exists()
    broken = rescore_form(unannotated, judge_template="<!-- system -->\n$nonsense\n<!-- user -->")
    page = researcher_client.post(url, broken).content.decode()
    assert "unknown placeholder(s): nonsense" in page
    left_out = {**rescore_form(unannotated)}
    for key in [k for k in left_out if k.startswith("version_")]:
        left_out[key] = ""
    assert (
        "Pick a version of at least one rubric"
        in researcher_client.post(url, left_out).content.decode()
    )


@pytest.mark.django_db
def test_the_page_polls_progress_while_a_rescore_runs_then_reloads(researcher_client, scored_job):
    study = constructed_study(scored_job, annotated_items=2)
    (job,) = loop.study_rescore(study, jury=lenient_jury(), rubric_versions=judged_versions(study))
    url = reverse("alignment:loop_comparison", args=[study.pk])

    page = researcher_client.get(url).content.decode()
    assert f'hx-get="{url}?fragment=progress"' in page and "Scoring: Lenient single judge" in page
    fragment = researcher_client.get(url, {"fragment": "progress"}, HTTP_HX_REQUEST="true")
    text = fragment.content.decode().strip()
    assert text.startswith('<section id="loop-progress"') and "12 pending" in text

    score_now(job)
    done = researcher_client.get(url, {"fragment": "progress"}, HTTP_HX_REQUEST="true")
    assert done["HX-Refresh"] == "true"
    assert "fragment=progress" not in researcher_client.get(url).content.decode()


@pytest.mark.django_db
def test_the_comparison_page_ranks_configurations_and_exports_csv(researcher_client, scored_job):
    study = constructed_study(scored_job)
    rescored(study, lenient_jury())
    url = reverse("alignment:loop_comparison", args=[study.pk])

    page = researcher_client.get(url).content.decode()

    assert 'id="ranking-clinical_safety"' in page
    assert page.count("Lenient single judge") >= 7  # the configurations table and each rubric
    assert "Original: Offline scripted jury" in page and "baseline" in page
    export = researcher_client.get(
        reverse("alignment:loop_comparison_csv", args=[study.pk]), {"baseline": loop.ORIGINAL}
    )
    assert export["Content-Type"].startswith("text/csv")
    assert export.content.decode().startswith("rubric,rank,configuration")
    rows = list(csv.DictReader(io.StringIO(export.content.decode())))
    assert [row["jury"] for row in rows].count("Lenient single judge") == 6


@pytest.mark.django_db
def test_a_study_without_scoring_jobs_says_there_is_nothing_to_compare(researcher_client):
    project = Project.objects.create(name="Empty")
    study = Study.objects.create(project=project, name="Bare", kind="target", sample_size=1)

    page = researcher_client.get(reverse("alignment:loop_comparison", args=[study.pk]))

    assert page.status_code == 200 and 'id="no-configurations"' in page.content.decode()
    rescore = researcher_client.get(reverse("alignment:loop_rescore", args=[study.pk]))
    assert (
        rescore.status_code == 200 and "0 conversations of this study" in rescore.content.decode()
    )
